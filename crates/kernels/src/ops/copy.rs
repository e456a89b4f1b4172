//! Copies through the engine, and the dtype-reinterpreting views of complex tensors: `copy_`, `_copy_from` and `_copy_from_and_resize` of any layout
//! and between any two dtypes, typed and split over PyTorch's threads like every elementwise op
//! (regen-runtime's default bootstrap converts element by element through a generic value).
//! PyTorch's lazy conjugate and negative bits are resolved as ATen's `copy_impl` does.

use regen_runtime::bootstrap::{copy_into, copy_needed, copy_with, with_size};
use regen_runtime::{Error, Result, Tensor, TensorRef};

use crate::engine::dtype::DType;
use crate::engine::iter::{GRAIN, Iter, Operand};
use crate::engine::loops::copy_cast;
use crate::ops::unary::{self, ops};

/// `dst.copy_(src)`.
pub fn copy_(dst: TensorRef<'_>, src: TensorRef<'_>) -> Result<()> {
    if !copy_needed(&dst, &src)? {
        return Ok(());
    }
    match (Operand::of(&src), Operand::of(&dst)) {
        // SAFETY: both describe live tensors for the call; `dst` is writable.
        (Ok(s), Ok(d)) if s.dtype == d.dtype => unsafe { copy_same(&s, &d) },
        // SAFETY: as above.
        (Ok(s), Ok(d)) => unsafe { copy_cast(&s, &d) },
        // Dtypes the engine does not compute in (float8, ...) still move bytewise.
        _ => copy_into(&src, &dst)?,
    }
    // The memory of `dst` now holds `src`'s memory: conjugate or negate where the bits differ.
    let complex = DType::from_scalar_type(dst.dtype()).is_ok_and(DType::is_complex);
    if dst.is_conj() != src.is_conj() && complex {
        unary::run::<ops::ConjPhysical>(dst, dst)?;
    }
    if dst.is_neg() != src.is_neg() {
        unary::run::<ops::Neg>(dst, dst)?;
    }
    Ok(())
}

/// [`copy_`] between memories: directly when the host addresses device memory, else through the
/// device layer's copies, which run [`copy_`] on one side (`regen_runtime::bootstrap::copy_with`).
pub fn copy_across(dst: TensorRef<'_>, src: TensorRef<'_>, non_blocking: bool) -> Result<()> {
    copy_with(dst, src, non_blocking, &|d, s| copy_(*d, *s))
}

/// `self._copy_from(dst)`: copies `self` into `dst` and returns `dst`.
pub fn copy_from(src: TensorRef<'_>, dst: TensorRef<'_>, non_blocking: bool) -> Result<Tensor> {
    copy_across(dst, src, non_blocking)?;
    dst.retain()
}

/// `self._copy_from_and_resize(dst)`: `dst` resized to `self`'s shape first.
pub fn copy_from_and_resize(src: TensorRef<'_>, dst: TensorRef<'_>) -> Result<Tensor> {
    with_size(&dst, src.sizes(), |d| copy_across(*d, src, false))?;
    dst.retain()
}

/// `torch.view_as_real`: a complex tensor's memory as real pairs (a last dimension of 2).
pub fn view_as_real(t: TensorRef<'_>) -> Result<Tensor> {
    let dtype = DType::from_scalar_type(t.dtype())?;
    if !dtype.is_complex() {
        return Err(Error::runtime("view_as_real is only supported for complex tensors"));
    }
    if t.is_conj() {
        return Err(Error::runtime(
            "view_as_real doesn't work on unresolved conjugated tensors.  To resolve the conjugate tensor so you can view it as real, use self.resolve_conj()",
        ));
    }
    let mut sizes = t.sizes().to_vec();
    sizes.push(2);
    let mut strides: Vec<i64> = t.strides().iter().map(|s| s * 2).collect();
    strides.push(1);
    regen_runtime::host::view_dtype(&t, dtype.to_real().code(), &sizes, &strides, t.storage_offset() * 2)
}

/// `torch.view_as_complex`: real pairs (a last dimension of 2, stride 1) as complex numbers.
pub fn view_as_complex(t: TensorRef<'_>) -> Result<Tensor> {
    let dtype = DType::from_scalar_type(t.dtype())?;
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Err(Error::runtime(format!(
            "view_as_complex is only supported for float and double tensors, but got a tensor of scalar type: {}",
            dtype.name()
        )));
    }
    let (sizes, strides) = (t.sizes(), t.strides());
    if sizes.last() != Some(&2) {
        return Err(Error::runtime("Tensor must have a last dimension of size 2"));
    }
    if strides.last() != Some(&1) {
        return Err(Error::runtime("Tensor must have a last dimension with stride 1"));
    }
    let n = sizes.len() - 1;
    if strides[..n].iter().any(|s| s % 2 != 0) {
        return Err(Error::runtime("Tensor must have a stride divisible by 2 for all but last dimension"));
    }
    if t.storage_offset() % 2 != 0 {
        return Err(Error::runtime("Tensor must have a storage_offset divisible by 2"));
    }
    let halved: Vec<i64> = strides[..n].iter().map(|s| s / 2).collect();
    regen_runtime::host::view_dtype(&t, dtype.to_complex().code(), &sizes[..n], &halved, t.storage_offset() / 2)
}

/// A new contiguous tensor of `dtype` and `sizes` holding `t`'s values broadcast to `sizes`, with
/// its lazy conjugate / negative bits applied: the copy kernels' way to hand a kernel dense
/// operands of one dtype.
pub fn dense_as(t: TensorRef<'_>, sizes: &[i64], dtype: DType) -> Result<Tensor> {
    let out = crate::engine::iter::new_tensor(sizes, dtype)?;
    copy_(out.as_ref(), t)?;
    Ok(out)
}

/// [`dense_as`] at `t`'s own shape.
pub fn dense(t: TensorRef<'_>, dtype: DType) -> Result<Tensor> {
    dense_as(t, t.sizes(), dtype)
}

/// `t` with its lazy conjugate / negative bits applied, as a new contiguous tensor, or `None`
/// when it has none (for kernels PyTorch hands such tensors: the matrix products).
pub fn resolved(t: TensorRef<'_>) -> Result<Option<Tensor>> {
    if !t.is_conj() && !t.is_neg() {
        return Ok(None);
    }
    dense(t, DType::from_scalar_type(t.dtype())?).map(Some)
}

/// Element bits of one size, for copies that do not look at the values. Each has the smallest
/// alignment of the dtypes of its size (complex64 is 4-aligned, complex128 8-aligned).
#[derive(Clone, Copy)]
#[repr(transparent)]
struct Bits8([u32; 2]);
#[derive(Clone, Copy)]
#[repr(transparent)]
struct Bits16([u64; 2]);

/// Copies `src` (broadcast to `dst`'s shape) into `dst` of the same dtype, moving bits at memory
/// speed: one (threaded) `memmove` when both walk memory the same way, a cache-blocked transpose
/// when one is the other's permutation in its two fastest dimensions, a strided loop otherwise.
/// Shape ops (cat, flip, roll, narrow_copy, ...) describe their work as such copies.
///
/// # Safety
/// Both operands describe live memory; `dst` is writable and does not partially overlap `src`.
pub unsafe fn copy_same(src: &Operand, dst: &Operand) {
    debug_assert_eq!(src.dtype.size(), dst.dtype.size());
    let it = Iter::new(std::slice::from_ref(dst), std::slice::from_ref(src), &dst.sizes);
    if it.numel() == 0 {
        return;
    }
    let (d, s) = (dst.data as usize, src.data as usize);
    // SAFETY: per the contract.
    unsafe {
        match dst.dtype.size() {
            1 => move_bits::<u8>(&it, d, s),
            2 => move_bits::<u16>(&it, d, s),
            4 => move_bits::<u32>(&it, d, s),
            8 => move_bits::<Bits8>(&it, d, s),
            _ => move_bits::<Bits16>(&it, d, s),
        }
    }
}

/// Bytes below which a contiguous copy stays on one thread (memory bandwidth, not arithmetic,
/// bounds it: more threads only pay off for copies well beyond the caches).
const COPY_GRAIN_BYTES: usize = 1 << 18;

/// Elements per side of a transpose tile: two tiles of 64 bytes x this many rows stay in L1.
const fn tile<T>() -> usize {
    let n = 64 / std::mem::size_of::<T>();
    if n < 8 { 8 } else { n }
}

/// # Safety
/// As for [`copy_same`]; `T` has the operands' element size.
unsafe fn move_bits<T: Copy + Send + Sync>(it: &Iter, dst: usize, src: usize) {
    let e = std::mem::size_of::<T>() as isize;
    let shape = it.shape();
    let (sd, ss) = (it.strides(0), it.strides(1));
    // One run, both dense: a memmove (split across threads when large).
    if shape.len() == 1 && sd[0] == e && ss[0] == e {
        let bytes = shape[0] * e as usize;
        let run = |a: usize, b: usize| {
            // SAFETY: `a..b` lies inside both operands; `ptr::copy` tolerates exact aliasing.
            unsafe { std::ptr::copy((src + a) as *const u8, (dst + a) as *mut u8, b - a) }
        };
        if bytes < 2 * COPY_GRAIN_BYTES || regen_runtime::host::num_threads() < 2 {
            return run(0, bytes);
        }
        return regen_runtime::host::parallel_for(bytes, COPY_GRAIN_BYTES, run);
    }
    // A transpose: the destination is dense along dimension 0, the source along dimension 1.
    if shape.len() >= 2 && sd[0] == e && ss[1] == e && ss[0] != e {
        // SAFETY: per the contract.
        return unsafe { transpose::<T>(it, dst, src) };
    }
    // Anything else: the iterator's runs, each a plain strided loop.
    crate::engine::loops::unary::<T, T>(it, |x| x);
}

/// The tiled transpose of [`move_bits`]: for every index of the outer dimensions (2..), the
/// `n0 x n1` plane is copied in square tiles, reading the source along its rows and writing the
/// destination along its rows, each tile staying in cache. Strips of tiles go to threads.
///
/// # Safety
/// As for [`move_bits`].
unsafe fn transpose<T: Copy + Send + Sync>(it: &Iter, dst: usize, src: usize) {
    let b = tile::<T>();
    let shape = it.shape();
    let (n0, n1) = (shape[0], shape[1]);
    let (sd, ss) = (it.strides(0), it.strides(1));
    let (d1, s0) = (sd[1], ss[0]);
    let outer: usize = shape[2..].iter().product();
    let strips = n1.div_ceil(b);
    let tasks = outer * strips;
    let offsets = |mut o: usize| -> (isize, isize) {
        let (mut od, mut os) = (0isize, 0isize);
        for d in 2..shape.len() {
            let i = (o % shape[d]) as isize;
            o /= shape[d];
            od += i * sd[d];
            os += i * ss[d];
        }
        (od, os)
    };
    let work = |t0: usize, t1: usize| {
        for t in t0..t1 {
            let (od, os) = offsets(t / strips);
            let j0 = (t % strips) * b;
            let j1 = (j0 + b).min(n1);
            let mut i0 = 0;
            while i0 < n0 {
                let i1 = (i0 + b).min(n0);
                for j in j0..j1 {
                    let drow = (dst as isize + od + j as isize * d1) as *mut T;
                    let scol = (src as isize + os + j as isize * e_of::<T>()) as *const u8;
                    for i in i0..i1 {
                        // SAFETY: (i, j, outer) is inside the shape, so both addresses are inside
                        // their operands.
                        unsafe {
                            drow.add(i).write_unaligned(scol.offset(i as isize * s0).cast::<T>().read_unaligned())
                        };
                    }
                }
                i0 = i1;
            }
        }
    };
    let per_task = n0 * b;
    if tasks * per_task < 2 * GRAIN || regen_runtime::host::num_threads() < 2 {
        return work(0, tasks);
    }
    regen_runtime::host::parallel_for(tasks, (GRAIN / per_task).max(1), work);
}

const fn e_of<T>() -> isize {
    std::mem::size_of::<T>() as isize
}

/// Group `bootstrap` of regen.toml's `[implement]`: tensors on the device, views, copies and
/// scalars; regen-runtime's host-memory defaults, the copies through the engine above.
impl crate::BootstrapKernels for crate::Reference {
    // Views, allocation and fill_ from regen-runtime; the copies through the engine below.
    regen_runtime::host_memory_bootstrap!(own_copies);

    fn copy_inplace(&self, self_: TensorRef<'_>, src: TensorRef<'_>, non_blocking: bool) -> Result<()> {
        copy_across(self_, src, non_blocking)
    }

    fn _copy_from(&self, self_: TensorRef<'_>, dst: TensorRef<'_>, non_blocking: bool) -> Result<Tensor> {
        copy_from(self_, dst, non_blocking)
    }

    fn _copy_from_and_resize(&self, self_: TensorRef<'_>, dst: TensorRef<'_>) -> Result<Tensor> {
        copy_from_and_resize(self_, dst)
    }

    fn record_stream(&self, self_: TensorRef<'_>, s: regen_runtime::Stream) -> Result<()> {
        // A stream of this device (PrivateUse1, 20) only: CUDA's kernel rejects other devices' too.
        if s.device.device_type != 20 {
            return Err(Error::runtime(format!(
                "record_stream: expected a stream of this device, got one of device type {}",
                s.device.device_type
            )));
        }
        // The caching allocator keeps the storage's block from reuse until the stream passes it.
        regen_runtime::host::record_stream(&self_, s.id)
    }

    fn view_as_real(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        view_as_real(self_)
    }

    fn view_as_complex(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        view_as_complex(self_)
    }
}
