//! Default bootstrap kernels for a device whose memory is host memory: the ops PyTorch needs
//! before any compute runs (creating tensors, views, copies to and from CPU, resizing, `set_`,
//! `fill_`, reading a scalar). A host-memory backend uses them as they are, through
//! [`host_memory_bootstrap!`](crate::host_memory_bootstrap) inside its `impl Kernels`; a real
//! accelerator writes its own (the copies and `fill_` touch memory; the rest is metadata and
//! works for any device).

use crate::args::{Device, Layout, MemoryFormat, Scalar, ScalarType, Storage, Tensor, TensorRef};
use crate::dtype::{DType, Num};
use crate::error::{Error, Result};
use crate::host;
use crate::view::{View, broadcast_shapes, contiguous_strides, for_each_offset, is_contiguous, load, store};

/// Resizes `out` to `shape` when it differs (as `resize_output` does) and runs `f` on it after.
pub fn with_size<T>(out: &TensorRef<'_>, shape: &[i64], f: impl FnOnce(&TensorRef<'_>) -> Result<T>) -> Result<T> {
    if out.sizes() == shape {
        return f(out);
    }
    let desc = host::resize(out, shape)?;
    // SAFETY: the host describes the live, resized tensor, unchanged while `f` runs.
    f(&unsafe { TensorRef::from_raw(&desc) })
}

/// Strides for `memory_format` (channels-last for 4-d and 5-d; contiguous otherwise).
pub fn strides_for(size: &[i64], memory_format: Option<MemoryFormat>) -> Vec<i64> {
    let order: Option<Vec<usize>> = match (memory_format, size.len()) {
        (Some(MemoryFormat::CHANNELS_LAST), 4) => Some(vec![1, 3, 2, 0]),
        (Some(MemoryFormat::CHANNELS_LAST_3D), 5) => Some(vec![1, 4, 3, 2, 0]),
        _ => None,
    };
    let Some(order) = order else { return contiguous_strides(size) };
    let mut strides = vec![0; size.len()];
    let mut next = 1;
    for d in order {
        strides[d] = next;
        next *= size[d].max(1);
    }
    strides
}

/// PyTorch's `computeStride`: strides for viewing `t` as `size`, if the view is possible.
pub fn view_strides(old_sizes: &[i64], old_strides: &[i64], size: &[i64]) -> Option<Vec<i64>> {
    let numel: i64 = old_sizes.iter().product();
    if numel == 0 {
        return Some(contiguous_strides(size));
    }
    // A 0-dim tensor has one element: any all-ones shape views it (computeStride's first case).
    if old_sizes.is_empty() {
        return Some(vec![1; size.len()]);
    }
    let mut new_strides = vec![0i64; size.len()];
    let mut view_d = size.len() as isize - 1;
    let mut chunk_base_stride = *old_strides.last().unwrap_or(&1);
    let mut tensor_numel = 1i64;
    let mut view_numel = 1i64;
    for tensor_d in (0..old_sizes.len()).rev() {
        tensor_numel *= old_sizes[tensor_d];
        if tensor_d == 0
            || (old_sizes[tensor_d - 1] != 1 && old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)
        {
            while view_d >= 0 && (view_numel < tensor_numel || size[view_d as usize] == 1) {
                new_strides[view_d as usize] = view_numel * chunk_base_stride;
                view_numel *= size[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base_stride = old_strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    (view_d == -1).then_some(new_strides)
}

/// Resolves a `-1` in a view's size from the number of elements.
pub fn infer_size(size: &[i64], numel: i64) -> Result<Vec<i64>> {
    let mut out = size.to_vec();
    let known: i64 = size.iter().filter(|&&s| s != -1).product();
    match size.iter().filter(|&&s| s == -1).count() {
        0 if known == numel => Ok(out),
        1 if known != 0 && numel % known == 0 => {
            let k = size.iter().position(|&s| s == -1).expect("one -1");
            out[k] = numel / known;
            Ok(out)
        }
        _ => Err(Error::runtime(format!("shape '{size:?}' is invalid for input of size {numel}"))),
    }
}

/// Copies `src` (broadcast to `dst`'s shape) into `dst`, converting the dtype.
///
/// # Safety
/// Both views describe live memory under their sizes and strides; `dst` is writable.
pub unsafe fn copy(src: &View, dst: &View) {
    if src.dtype == dst.dtype && src.is_contiguous() && dst.is_contiguous() && src.sizes == dst.sizes {
        // SAFETY: both hold numel elements of the same size.
        unsafe { std::ptr::copy(src.data, dst.data, src.numel() as usize * src.dtype.size()) };
        return;
    }
    let ss = src.broadcast_strides(&dst.sizes);
    let (es, ed) = (src.dtype.size() as isize, dst.dtype.size() as isize);
    for_each_offset(&dst.sizes, [&ss, &dst.strides], |[is, id]| {
        // SAFETY: as above.
        unsafe { store(dst.dtype, dst.data.offset(id * ed), load(src.dtype, src.data.offset(is * es))) }
    });
}

/// Copies `src` (broadcast to `dst`'s shape) into `dst` element by element as raw bytes, for
/// two tensors of the same dtype, whatever it is.
///
/// # Safety
/// Both describe live memory of `elem`-byte elements under their sizes and strides.
pub unsafe fn copy_bytes(src: &View, dst: &View, elem: usize) {
    let ss = src.broadcast_strides(&dst.sizes);
    let e = elem as isize;
    for_each_offset(&dst.sizes, [&ss, &dst.strides], |[is, id]| {
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(src.data.offset(is * e), dst.data.offset(id * e), elem) }
    });
}

/// Contiguous work of at least this many bytes is split over PyTorch's intra-op threads.
const PARALLEL_BYTES: usize = 1 << 20;

/// Sets every element of `dst` to `value`: the element's bytes are formed once, then written
/// as fixed-size words (memset speed for contiguous tensors, split over PyTorch's threads when
/// large).
///
/// # Safety
/// `dst` is a writable live view.
pub unsafe fn fill(dst: &View, value: Num) {
    let e = dst.dtype.size();
    let mut pattern = [0u64; 2];
    // SAFETY: 16 aligned bytes hold any element.
    unsafe { store(dst.dtype, pattern.as_mut_ptr().cast(), value) };
    let bytes: [u8; 16] = bytemuck_bytes(pattern);
    // A permutation of a contiguous tensor (transposed, channels-last) is one span of memory,
    // filled as if contiguous: element by element in index order it was a cache miss per element
    // (a transposed 1024x1024 float32: 12.6 ms, CPU's fill 0.05 ms).
    if dst.is_contiguous() || is_dense_span(&dst.sizes, &dst.strides) {
        let n = dst.numel().max(0) as usize;
        let base = dst.data as usize;
        let fill_range = |begin: usize, end: usize| {
            let p = (base + begin * e) as *mut u8;
            let len = end - begin;
            // SAFETY: elements begin..end of a contiguous live tensor, aligned to their size.
            unsafe {
                match e {
                    1 => std::slice::from_raw_parts_mut(p, len).fill(bytes[0]),
                    2 => std::slice::from_raw_parts_mut(p.cast::<u16>(), len)
                        .fill(u16::from_ne_bytes([bytes[0], bytes[1]])),
                    4 => std::slice::from_raw_parts_mut(p.cast::<u32>(), len)
                        .fill(u32::from_ne_bytes(bytes[..4].try_into().expect("4 bytes"))),
                    8 => std::slice::from_raw_parts_mut(p.cast::<u64>(), len).fill(pattern[0]),
                    _ => std::slice::from_raw_parts_mut(p.cast::<[u64; 2]>(), len).fill(pattern),
                }
            }
        };
        if n * e >= PARALLEL_BYTES {
            crate::host::parallel_for(n, PARALLEL_BYTES / e, fill_range);
        } else {
            fill_range(0, n);
        }
        return;
    }
    // Otherwise in memory order: the dimensions by decreasing stride, so the innermost loop
    // takes the smallest.
    let mut dims: Vec<usize> = (0..dst.sizes.len()).collect();
    dims.sort_by_key(|&d| std::cmp::Reverse(dst.strides[d].unsigned_abs()));
    let sizes: Vec<i64> = dims.iter().map(|&d| dst.sizes[d]).collect();
    let strides: Vec<i64> = dims.iter().map(|&d| dst.strides[d]).collect();
    let es = e as isize;
    for_each_offset(&sizes, [&strides], |[i]| {
        // SAFETY: as above.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.data.offset(i * es), e) }
    });
}

/// Whether a tensor's elements fill one contiguous span of memory in some order of its
/// dimensions (ATen's `is_non_overlapping_and_dense`, for positive strides): sorted by stride,
/// each dimension's stride is the product of the sizes inside it.
fn is_dense_span(sizes: &[i64], strides: &[i64]) -> bool {
    let mut dims: Vec<(i64, i64)> =
        sizes.iter().zip(strides).filter(|&(&n, _)| n != 1).map(|(&n, &s)| (s, n)).collect();
    dims.sort_unstable();
    let mut expected = 1;
    for (stride, size) in dims {
        if stride != expected {
            return false;
        }
        expected *= size;
    }
    true
}

fn bytemuck_bytes(words: [u64; 2]) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&words[0].to_ne_bytes());
    out[8..].copy_from_slice(&words[1].to_ne_bytes());
    out
}

/// Copies `src` into `dst` (same shape, or broadcastable): raw bytes when the dtypes match,
/// so any dtype moves between CPU and the device; converting otherwise.
pub fn copy_into(src: &TensorRef<'_>, dst: &TensorRef<'_>) -> Result<()> {
    // Device memory is host memory: CPU and device tensors copy the same way.
    if src.dtype() == dst.dtype()
        && let Some(elem) = crate::view::element_size(src.dtype())
    {
        if src.sizes() == dst.sizes()
            && is_contiguous(src.sizes(), src.strides())
            && is_contiguous(dst.sizes(), dst.strides())
        {
            // One memcpy, split over PyTorch's threads when large.
            let n = src.numel().max(0) as usize * elem;
            let (s, d) = (src.data_ptr() as usize, dst.data_ptr() as usize);
            let copy_range = |begin: usize, end: usize| {
                // SAFETY: bytes begin..end of two live contiguous tensors of n bytes; a full
                // overlap (s == d) is a copy onto itself.
                unsafe { std::ptr::copy((s + begin) as *const u8, (d + begin) as *mut u8, end - begin) }
            };
            if n >= PARALLEL_BYTES && s.abs_diff(d) >= n {
                crate::host::parallel_for(n, PARALLEL_BYTES, copy_range);
            } else {
                copy_range(0, n);
            }
            return Ok(());
        }
        let geometry = |t: &TensorRef<'_>| View {
            data: t.data_ptr().cast(),
            sizes: t.sizes().to_vec(),
            strides: t.strides().to_vec(),
            dtype: DType::U8,
            wrapped_number: false,
        };
        // SAFETY: both describe live tensors of `elem`-byte elements.
        unsafe { copy_bytes(&geometry(src), &geometry(dst), elem) };
        return Ok(());
    }
    let (s, d) = (View::of(src)?, View::of(dst)?);
    // SAFETY: both views describe live tensors.
    unsafe { copy(&s, &d) };
    Ok(())
}

// The kernels, one per op in `OPS`, with the generated trait's parameters.

/// A factory's `device=` names one of this backend's devices ([`crate::device::count`]; -1 is
/// the current device). Another index is an error, as CUDA's for an ordinal it lacks, instead of
/// a tensor silently made on another device. (The generated wrapper has already made the device
/// current, so the tensor is allocated there.)
pub fn check_device(device: Option<Device>) -> Result<()> {
    match device {
        Some(Device { index, .. }) if index >= 0 && index as usize >= crate::device::count() => {
            Err(crate::device::invalid(i64::from(index)))
        }
        _ => Ok(()),
    }
}

pub fn empty_memory_format(
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    memory_format: Option<MemoryFormat>,
) -> Result<Tensor> {
    if layout.is_some_and(|l| l != Layout::STRIDED) {
        return Err(Error::not_implemented("this device's tensors are strided only"));
    }
    if let Some(s) = size.iter().find(|&&s| s < 0) {
        return Err(Error::runtime(format!("Trying to create tensor with negative dimension {s}: {size:?}")));
    }
    host::empty_strided(size, &strides_for(size, memory_format), dtype.unwrap_or(ScalarType::FLOAT).0)
}

pub fn empty_strided(size: &[i64], stride: &[i64], dtype: Option<ScalarType>) -> Result<Tensor> {
    host::empty_strided(size, stride, dtype.unwrap_or(ScalarType::FLOAT).0)
}

pub fn as_strided(self_: TensorRef<'_>, size: &[i64], stride: &[i64], storage_offset: Option<i64>) -> Result<Tensor> {
    host::as_strided(&self_, size, stride, storage_offset.unwrap_or(self_.storage_offset()))
}

pub fn view(self_: TensorRef<'_>, size: &[i64]) -> Result<Tensor> {
    let size = infer_size(size, self_.numel())?;
    let strides = view_strides(self_.sizes(), self_.strides(), &size).ok_or_else(|| {
        Error::runtime(
            "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
        )
    })?;
    host::as_strided(&self_, &size, &strides, self_.storage_offset())
}

pub fn _reshape_alias(self_: TensorRef<'_>, size: &[i64], stride: &[i64]) -> Result<Tensor> {
    host::as_strided(&self_, size, stride, self_.storage_offset())
}

pub fn resize_(self_: TensorRef<'_>, size: &[i64]) -> Result<()> {
    host::resize(&self_, size).map(|_| ())
}

/// `copy_` of any tensors the device is involved in (device or CPU memory, any dtypes), with
/// PyTorch's lazy conjugate and negative bits resolved as ATen's `copy_impl` does: the bytes
/// are copied, then `self` is conjugated or negated in place where the bits differ. Registering
/// it keeps such copies away from `_copy_from`, which PyTorch's Conjugate fallback would
/// intercept (it resolves the bit by a copy, which calls `_copy_from` again, without end).
pub fn copy_(self_: TensorRef<'_>, src: TensorRef<'_>) -> Result<()> {
    if !copy_needed(&self_, &src)? {
        return Ok(());
    }
    copy_into(&src, &self_)?;
    let conj = self_.is_conj() != src.is_conj();
    let neg = self_.is_neg() != src.is_neg();
    if conj || neg {
        let v = View::of(&self_)?;
        let e = v.dtype.size() as isize;
        for_each_offset(&v.sizes, [&v.strides], |[i]| {
            // SAFETY: `self` is a live writable tensor; each element is read, then written.
            unsafe {
                let p = v.data.offset(i * e);
                let value = match load(v.dtype, p) {
                    Num::Complex(re, im) if conj && neg => Num::Complex(-re, im),
                    Num::Complex(re, im) if conj => Num::Complex(re, -im),
                    _ if !neg => return,
                    Num::Complex(re, im) => Num::Complex(-re, -im),
                    Num::Float(f) => Num::Float(-f),
                    Num::Int(x) => Num::Int(x.wrapping_neg()),
                    Num::Bool(b) => Num::Bool(b),
                };
                store(v.dtype, p, value);
            }
        });
    }
    Ok(())
}

/// `dst.copy_(src)`'s checks, as ATen's `copy_impl` makes them: `src` must broadcast to `dst`'s
/// shape; `false` when the two are the same elements (nothing to copy).
pub fn copy_needed(dst: &TensorRef<'_>, src: &TensorRef<'_>) -> Result<bool> {
    let same_data = dst.data_ptr() == src.data_ptr()
        && dst.sizes() == src.sizes()
        && dst.strides() == src.strides()
        && dst.dtype() == src.dtype()
        && dst.is_conj() == src.is_conj()
        && dst.is_neg() == src.is_neg();
    if same_data {
        return Ok(false);
    }
    let shape = broadcast_shapes(&[dst.sizes(), src.sizes()])?;
    if shape != dst.sizes() {
        return Err(Error::runtime(format!(
            "output with shape {:?} doesn't match the broadcast shape {shape:?}",
            dst.sizes()
        )));
    }
    Ok(true)
}

/// The copy kernels' way between memories: `dst.copy_(src)` by `same_memory` (a copy between two
/// tensors of one memory, with `copy_`'s semantics) when the host addresses device memory; else
/// through the device layer's copies ([`crate::device::copies`], which runs `same_memory` on the
/// device or on the host as the case needs).
pub fn copy_with(
    dst: TensorRef<'_>,
    src: TensorRef<'_>,
    non_blocking: bool,
    same_memory: crate::device::copies::SameMemoryCopy<'_>,
) -> Result<()> {
    if crate::device::layer().host_addressable() {
        return same_memory(&dst, &src);
    }
    crate::device::copies::copy(&dst, &src, non_blocking, same_memory)
}

/// [`copy_`] as a [`copy_with`] callback.
pub fn copy_same(dst: &TensorRef<'_>, src: &TensorRef<'_>) -> Result<()> {
    copy_(*dst, *src)
}

pub fn _copy_from(self_: TensorRef<'_>, dst: TensorRef<'_>, non_blocking: bool) -> Result<Tensor> {
    broadcast_shapes(&[self_.sizes(), dst.sizes()])?;
    copy_with(dst, self_, non_blocking, &copy_same)?;
    dst.retain()
}

pub fn _copy_from_and_resize(self_: TensorRef<'_>, dst: TensorRef<'_>) -> Result<Tensor> {
    with_size(&dst, self_.sizes(), |d| copy_with(*d, self_, false, &copy_same))?;
    dst.retain()
}

/// The `_local_scalar_dense` kernel (`.item()`), which runs on the host: reads the element
/// directly, or with a device-to-host copy when the host cannot address device memory.
pub fn item(self_: TensorRef<'_>) -> Result<Scalar> {
    if crate::device::layer().host_addressable() {
        return _local_scalar_dense(self_);
    }
    crate::device::copies::read_scalar(&self_)
}

/// Reads a one-element tensor's value from memory the caller can read (a kernel's, on the device).
pub fn _local_scalar_dense(self_: TensorRef<'_>) -> Result<Scalar> {
    let v = View::of(&self_)?;
    if v.numel() != 1 {
        return Err(Error::runtime(format!("a Tensor with {} elements cannot be converted to Scalar", v.numel())));
    }
    // SAFETY: one live element at `data`.
    Ok(unsafe { load(v.dtype, v.data) }.to_scalar())
}

pub fn set_source_storage(self_: TensorRef<'_>, source: Storage) -> Result<()> {
    // A single size of -1 asks the host for the whole storage as one dimension.
    host::set_storage(&self_, Some(source), 0, &[-1], Some(&[1])).map(|_| ())
}

pub fn set_source_storage_offset(
    self_: TensorRef<'_>,
    source: Storage,
    storage_offset: i64,
    size: &[i64],
    stride: &[i64],
) -> Result<()> {
    // No strides (`set_(storage, offset, size)`): contiguous, as CPU's set_storage_cpu_.
    let stride = (!stride.is_empty() || size.is_empty()).then_some(stride);
    host::set_storage(&self_, Some(source), storage_offset, size, stride).map(|_| ())
}

pub fn set_source_tensor(self_: TensorRef<'_>, source: TensorRef<'_>) -> Result<()> {
    host::set_tensor(&self_, &source).map(|_| ())
}

pub fn set_(self_: TensorRef<'_>) -> Result<()> {
    host::set_storage(&self_, None, 0, &[0], Some(&[1])).map(|_| ())
}

pub fn fill_(self_: TensorRef<'_>, value: Scalar) -> Result<()> {
    let v = View::of(&self_)?;
    // SAFETY: a live, writable tensor.
    unsafe { fill(&v, Num::from_scalar(value)) };
    Ok(())
}

/// The trait methods of the bootstrap ops (the list is `regen_core::scaffold::BOOTSTRAP_OPS`,
/// which `regen new` writes into regen.toml; the compiler keeps the two equal, since a listed op
/// without a method here, or a method here for an op not listed, does not build), forwarding to
/// this module: write it inside your
/// `impl Kernels for ...` block. A factory's `device=` is
/// only checked ([`check_device`]).
#[macro_export]
macro_rules! host_memory_bootstrap {
    () => {
        $crate::host_memory_bootstrap!(own_copies);
        $crate::host_memory_copies!();
    };
    // Everything but the copies (`copy_`, `_copy_from`, `_copy_from_and_resize`), for a backend
    // that copies with its own kernels (the reference device converts dtypes with its engine).
    (own_copies) => {
        fn empty_memory_format(
            &self,
            size: &[i64],
            dtype: Option<$crate::ScalarType>,
            layout: Option<$crate::Layout>,
            device: Option<$crate::Device>,
            _pin_memory: Option<bool>,
            memory_format: Option<$crate::MemoryFormat>,
        ) -> $crate::Result<$crate::Tensor> {
            $crate::bootstrap::check_device(device)?;
            $crate::bootstrap::empty_memory_format(size, dtype, layout, memory_format)
        }
        fn empty_strided(
            &self,
            size: &[i64],
            stride: &[i64],
            dtype: Option<$crate::ScalarType>,
            _layout: Option<$crate::Layout>,
            device: Option<$crate::Device>,
            _pin_memory: Option<bool>,
        ) -> $crate::Result<$crate::Tensor> {
            $crate::bootstrap::check_device(device)?;
            $crate::bootstrap::empty_strided(size, stride, dtype)
        }
        fn as_strided(
            &self,
            self_: $crate::TensorRef<'_>,
            size: &[i64],
            stride: &[i64],
            storage_offset: Option<i64>,
        ) -> $crate::Result<$crate::Tensor> {
            $crate::bootstrap::as_strided(self_, size, stride, storage_offset)
        }
        fn view(&self, self_: $crate::TensorRef<'_>, size: &[i64]) -> $crate::Result<$crate::Tensor> {
            $crate::bootstrap::view(self_, size)
        }
        fn _reshape_alias(
            &self,
            self_: $crate::TensorRef<'_>,
            size: &[i64],
            stride: &[i64],
        ) -> $crate::Result<$crate::Tensor> {
            $crate::bootstrap::_reshape_alias(self_, size, stride)
        }
        fn resize_inplace(
            &self,
            self_: $crate::TensorRef<'_>,
            size: &[i64],
            _memory_format: Option<$crate::MemoryFormat>,
        ) -> $crate::Result<()> {
            $crate::bootstrap::resize_(self_, size)
        }
        fn _local_scalar_dense(&self, self_: $crate::TensorRef<'_>) -> $crate::Result<$crate::Scalar> {
            $crate::bootstrap::item(self_)
        }
        fn set_inplace_source_storage(
            &self,
            self_: $crate::TensorRef<'_>,
            source: $crate::Storage,
        ) -> $crate::Result<()> {
            $crate::bootstrap::set_source_storage(self_, source)
        }
        fn set_inplace_source_storage_storage_offset(
            &self,
            self_: $crate::TensorRef<'_>,
            source: $crate::Storage,
            storage_offset: i64,
            size: &[i64],
            stride: &[i64],
        ) -> $crate::Result<()> {
            $crate::bootstrap::set_source_storage_offset(self_, source, storage_offset, size, stride)
        }
        fn set_inplace_source_tensor(
            &self,
            self_: $crate::TensorRef<'_>,
            source: $crate::TensorRef<'_>,
        ) -> $crate::Result<()> {
            $crate::bootstrap::set_source_tensor(self_, source)
        }
        fn set_inplace(&self, self_: $crate::TensorRef<'_>) -> $crate::Result<()> {
            $crate::bootstrap::set_(self_)
        }
        fn fill_inplace_scalar(&self, self_: $crate::TensorRef<'_>, value: $crate::Scalar) -> $crate::Result<()> {
            $crate::bootstrap::fill_(self_, value)
        }
    };
}

/// The copies of the bootstrap ops (`copy_`, `_copy_from`, `_copy_from_and_resize`) as trait methods
/// forwarding to this module; part of [`host_memory_bootstrap!`](crate::host_memory_bootstrap).
#[macro_export]
macro_rules! host_memory_copies {
    () => {
        fn copy_inplace(
            &self,
            self_: $crate::TensorRef<'_>,
            src: $crate::TensorRef<'_>,
            non_blocking: bool,
        ) -> $crate::Result<()> {
            $crate::bootstrap::copy_with(self_, src, non_blocking, &$crate::bootstrap::copy_same)
        }
        fn _copy_from(
            &self,
            self_: $crate::TensorRef<'_>,
            dst: $crate::TensorRef<'_>,
            non_blocking: bool,
        ) -> $crate::Result<$crate::Tensor> {
            $crate::bootstrap::_copy_from(self_, dst, non_blocking)
        }
        fn _copy_from_and_resize(
            &self,
            self_: $crate::TensorRef<'_>,
            dst: $crate::TensorRef<'_>,
        ) -> $crate::Result<$crate::Tensor> {
            $crate::bootstrap::_copy_from_and_resize(self_, dst)
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_strides_follow_pytorch() {
        assert_eq!(view_strides(&[2, 3], &[3, 1], &[3, 2]), Some(vec![2, 1]));
        assert_eq!(view_strides(&[2, 3], &[3, 1], &[6]), Some(vec![1]));
        // A transposed matrix cannot be flattened without a copy.
        assert_eq!(view_strides(&[3, 2], &[1, 3], &[6]), None);
        assert_eq!(view_strides(&[3, 2], &[1, 3], &[3, 2, 1]), Some(vec![1, 3, 3]));
        assert_eq!(infer_size(&[-1, 3], 12).unwrap(), vec![4, 3]);
        assert!(infer_size(&[-1, 5], 12).is_err());
        assert_eq!(strides_for(&[2, 3, 4, 5], Some(MemoryFormat::CHANNELS_LAST)), vec![60, 1, 15, 3]);
        // A 0-dim tensor views as [1] and [1, 1] (torch.tensor(2.).view(1, 1)).
        assert_eq!(view_strides(&[], &[], &[1, 1]), Some(vec![1, 1]));
        assert_eq!(view_strides(&[], &[], &[]), Some(vec![]));
    }

    #[test]
    fn fill_writes_exactly_the_views_elements() {
        // Transposed (one dense span), a size-1 dimension with any stride, every other column
        // (not dense), and channels-last: each element of the view set, nothing else touched.
        let cases: [(&[i64], &[i64]); 4] =
            [(&[4, 6], &[1, 4]), (&[4, 1, 6], &[1, 99, 4]), (&[4, 3], &[6, 2]), (&[2, 3, 2, 2], &[12, 1, 6, 3])];
        for (sizes, strides) in cases {
            let mut memory = vec![0i32; 24];
            let view = View {
                data: memory.as_mut_ptr().cast(),
                sizes: sizes.to_vec(),
                strides: strides.to_vec(),
                dtype: DType::I32,
                wrapped_number: false,
            };
            // SAFETY: the view lies inside `memory`.
            unsafe { fill(&view, Num::Int(7)) };
            let mut want = vec![0i32; 24];
            for_each_offset(sizes, [strides], |[i]| want[i as usize] = 7);
            assert_eq!(memory, want, "{sizes:?} {strides:?}");
        }
        assert!(is_dense_span(&[4, 6], &[1, 4]) && !is_dense_span(&[4, 3], &[6, 2]));
    }
}
