//! The TensorIterator: built from a kernel's output and input tensors, it checks devices, applies
//! PyTorch's type promotion, broadcasts, resizes outputs (`resize_output` semantics, silently),
//! converts inputs of another dtype into temporaries of the common dtype (as ATen does on CPU),
//! computes into a temporary when the output's dtype differs and casts back, sorts dimensions by
//! stride and coalesces them, and runs a loop over (pointers, strides, length) runs — one run for
//! contiguous tensors — split across threads for large work. `aten/src/ATen/TensorIterator.cpp`
//! is the model; the loops themselves are in [`super::loops`].

use regen_runtime::bootstrap::with_size;
// Broadcasting and contiguous strides are regen-runtime's (the bootstrap kernels use them too).
pub use regen_runtime::view::{broadcast_shapes, contiguous_strides, is_contiguous};
use regen_runtime::{Error, Result, Scalar, TensorRef};
use smallvec::SmallVec;

use super::dtype::{DType, Element, PromotionOperand, cast, check_can_cast, result_type};
use crate::dispatch_all;

/// Work smaller than this many elements runs on one thread: ATen's `GRAIN_SIZE`. The work is
/// split on PyTorch's own intra-op pool (`regen_runtime::host::parallel_for`), whose OpenMP
/// workers are warm; a rayon pool of its own (tried first) needed 256K elements to pay for waking
/// its sleeping workers, and competed for the cores with OpenMP's spinning ones.
pub const GRAIN: usize = 32768;

/// Per-dimension values, inline up to 6 dimensions (no allocation per kernel call).
pub type Dims<T> = SmallVec<[T; 6]>;
/// Per-operand values, inline up to 4 operands.
pub type PerOperand<T> = SmallVec<[T; 4]>;

/// A tensor as the iterator sees it: where element 0 is, its geometry in elements, its dtype.
#[derive(Debug, Clone)]
pub struct Operand {
    pub data: *mut u8,
    pub dtype: DType,
    pub sizes: Dims<i64>,
    pub strides: Dims<i64>,
}

// SAFETY: an operand describes tensor memory kept alive by the kernel call that built it; the
// loops write disjoint output elements from different threads.
unsafe impl Send for Operand {}
unsafe impl Sync for Operand {}

impl Operand {
    pub fn of(t: &TensorRef<'_>) -> Result<Operand> {
        Ok(Operand {
            data: t.data_ptr().cast(),
            dtype: DType::from_scalar_type(t.dtype())?,
            sizes: Dims::from_slice(t.sizes()),
            strides: Dims::from_slice(t.strides()),
        })
    }
    pub fn numel(&self) -> usize {
        self.sizes.iter().product::<i64>().max(0) as usize
    }
}

/// 64-byte-aligned scratch memory for converted operands.
struct Scratch {
    words: Vec<u64>,
}

impl Scratch {
    fn new(bytes: usize) -> Scratch {
        Scratch { words: vec![0u64; bytes.div_ceil(8).max(1)] }
    }
    fn ptr(&mut self) -> *mut u8 {
        self.words.as_mut_ptr().cast()
    }
}

/// Copies `src` (any strides, broadcast to `dst`'s shape) into `dst`, converting the dtype.
///
/// # Safety
/// Both operands describe live memory; `dst` is writable and does not partially overlap `src`.
pub unsafe fn copy_cast(src: &Operand, dst: &Operand) {
    let it = Iter::new(std::slice::from_ref(dst), std::slice::from_ref(src), &dst.sizes);
    dispatch_all!(src.dtype, |S| dispatch_all!(dst.dtype, |D| super::loops::unary::<S, D>(&it, cast::<S, D>)))
}

/// The loop nest of one kernel call, after broadcasting, reordering and coalescing: dimension 0
/// is the fastest. Operand 0.. are the outputs, then the inputs.
pub struct Iter {
    shape: Dims<usize>,
    /// Per operand, per dimension, in bytes.
    strides: PerOperand<Dims<isize>>,
    ptrs: PerOperand<*mut u8>,
    numel: usize,
}

// SAFETY: as for Operand.
unsafe impl Send for Iter {}
unsafe impl Sync for Iter {}

impl Iter {
    /// Builds the loop nest of `outputs` and `inputs` broadcast to `shape` (every operand's
    /// dtype is taken as it is: conversions are the caller's, see [`prepare`]).
    pub fn new(outputs: &[Operand], inputs: &[Operand], shape: &[i64]) -> Iter {
        let operands: PerOperand<&Operand> = outputs.iter().chain(inputs).collect();
        // The common case first: every operand contiguous in the full shape, or a single element
        // broadcast (`x + 1`), is one run, with nothing to reorder or coalesce.
        let numel = shape.iter().product::<i64>().max(0) as usize;
        let scalar = |o: &Operand| o.sizes.iter().all(|&s| s == 1) && o.sizes.len() <= shape.len();
        let full = |o: &Operand| o.sizes.as_slice() == shape && is_contiguous(&o.sizes, &o.strides);
        if operands.iter().all(|o| full(o) || scalar(o)) && full(operands[0]) {
            return Iter {
                shape: smallvec::smallvec![numel.max(1)],
                strides: operands
                    .iter()
                    .map(|o| smallvec::smallvec![if full(o) { o.dtype.size() as isize } else { 0 }])
                    .collect(),
                ptrs: operands.iter().map(|o| o.data).collect(),
                numel,
            };
        }
        let ndim = shape.len();
        // Byte strides in the broadcast shape, innermost dimension first.
        let mut strides: PerOperand<Dims<isize>> = operands
            .iter()
            .map(|o| {
                let elem = o.dtype.size() as isize;
                (0..ndim)
                    .rev()
                    .map(|d| {
                        let k = d as isize - (ndim - o.sizes.len()) as isize;
                        if k < 0 || o.sizes[k as usize] == 1 && shape[d] != 1 {
                            0
                        } else {
                            o.strides[k as usize] as isize * elem
                        }
                    })
                    .collect()
            })
            .collect();
        let mut sizes: Dims<usize> = shape.iter().rev().map(|&s| s.max(0) as usize).collect();
        // Reorder: sort dimensions so that the first operand with a non-zero stride walks memory
        // forwards fastest (ATen's reorder_dimensions: an insertion sort, stable for ties).
        let mut perm: Dims<usize> = (0..ndim).collect();
        for i in 1..ndim {
            let mut j = i;
            while j > 0 && should_swap(&strides, perm[j - 1], perm[j]) {
                perm.swap(j - 1, j);
                j -= 1;
            }
        }
        sizes = perm.iter().map(|&d| sizes[d]).collect();
        for s in &mut strides {
            *s = perm.iter().map(|&d| s[d]).collect();
        }
        // Coalesce: merge dimension d+1 into d where every operand steps through both as one.
        let mut shape_out: Dims<usize> = Dims::new();
        let mut strides_out: PerOperand<Dims<isize>> = (0..strides.len()).map(|_| Dims::new()).collect();
        for d in 0..ndim {
            if sizes[d] == 1 {
                continue;
            }
            if let Some(last) = shape_out.len().checked_sub(1) {
                let mergeable =
                    strides.iter().zip(&strides_out).all(|(s, so)| so[last] * shape_out[last] as isize == s[d]);
                if mergeable {
                    shape_out[last] *= sizes[d];
                    continue;
                }
            }
            shape_out.push(sizes[d]);
            for (so, s) in strides_out.iter_mut().zip(&strides) {
                so.push(s[d]);
            }
        }
        let numel = if sizes.contains(&0) { 0 } else { shape_out.iter().product() };
        if shape_out.is_empty() {
            shape_out.push(1);
            for so in &mut strides_out {
                so.push(0);
            }
        }
        Iter { shape: shape_out, strides: strides_out, ptrs: operands.iter().map(|o| o.data).collect(), numel }
    }

    pub fn numel(&self) -> usize {
        self.numel
    }
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    /// The coalesced shape, fastest dimension first (for tests and loops that need it).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// The byte strides of operand `k`, fastest dimension first.
    pub fn strides(&self, k: usize) -> &[isize] {
        &self.strides[k]
    }

    /// Calls `f(pointers, inner byte strides, n)` for runs of `n` elements along dimension 0
    /// covering every element once; runs go to several threads when the work is large.
    pub fn for_each<F>(&self, f: F)
    where
        F: Fn(&[*mut u8], &[isize], usize) + Sync,
    {
        if self.numel == 0 {
            return;
        }
        if self.numel < GRAIN || regen_runtime::host::num_threads() < 2 {
            return self.run(0, self.numel, &f);
        }
        regen_runtime::host::parallel_for(self.numel, GRAIN, |start, end| self.run(start, end, &f));
    }

    /// Runs elements `start..end` in linear (dimension 0 fastest) order.
    fn run<F>(&self, start: usize, end: usize, f: &F)
    where
        F: Fn(&[*mut u8], &[isize], usize),
    {
        let ndim = self.shape.len();
        if ndim == 1 {
            let ptrs: PerOperand<*mut u8> = self
                .ptrs
                .iter()
                .zip(&self.strides)
                // SAFETY: `start` is inside the one dimension.
                .map(|(&p, s)| unsafe { p.offset(start as isize * s[0]) })
                .collect();
            let inner: PerOperand<isize> = self.strides.iter().map(|s| s[0]).collect();
            return f(&ptrs, &inner, end - start);
        }
        let nops = self.ptrs.len();
        let mut rest = start;
        let mut index: Dims<usize> = self
            .shape
            .iter()
            .map(|&size| {
                let i = rest % size;
                rest /= size;
                i
            })
            .collect();
        let inner: PerOperand<isize> = self.strides.iter().map(|s| s[0]).collect();
        let mut ptrs: PerOperand<*mut u8> = smallvec::smallvec![std::ptr::null_mut::<u8>(); nops];
        let mut pos = start;
        while pos < end {
            for (k, p) in ptrs.iter_mut().enumerate() {
                let offset: isize = (0..ndim).map(|d| index[d] as isize * self.strides[k][d]).sum();
                // SAFETY: the index is inside the shape, so the offset is inside the operand.
                *p = unsafe { self.ptrs[k].offset(offset) };
            }
            let n = (self.shape[0] - index[0]).min(end - pos);
            f(&ptrs, &inner, n);
            pos += n;
            index[0] += n;
            // Carry into the outer dimensions.
            let mut d = 0;
            while d + 1 < ndim && index[d] == self.shape[d] {
                index[d] = 0;
                index[d + 1] += 1;
                d += 1;
            }
        }
    }
}

fn should_swap(strides: &[Dims<isize>], a: usize, b: usize) -> bool {
    // Is dimension `a` (currently inner) to go outside `b`? Decided by the first operand whose
    // strides in the two differ and are both non-zero (ATen also skips zero strides).
    for s in strides {
        let (sa, sb) = (s[a], s[b]);
        if sa == 0 || sb == 0 {
            continue;
        }
        if sa != sb {
            return sa.abs() > sb.abs();
        }
    }
    false
}

/// How a kernel's operands are typed (ATen's TensorIteratorConfig flags, as data).
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Compute in `result_type` of the inputs (else every input must have the output's dtype).
    pub promote_inputs: bool,
    /// Integral and bool inputs compute in the default float dtype (`torch.exp(int)` is float).
    pub int_to_float: bool,
    /// The result must be castable to the output's dtype (`can_cast`).
    pub safe_cast_to_output: bool,
    /// The output has this dtype whatever the inputs are (comparisons: Bool), and the loop
    /// writes it directly.
    pub output_dtype: Option<DType>,
}

impl Config {
    /// Elementwise arithmetic: promote, check the cast to `out`.
    pub const ARITHMETIC: Config =
        Config { promote_inputs: true, int_to_float: false, safe_cast_to_output: true, output_dtype: None };
    /// Floating functions: integral inputs become float.
    pub const FLOATING: Config =
        Config { promote_inputs: true, int_to_float: true, safe_cast_to_output: true, output_dtype: None };
    /// Predicates and comparisons: the result is Bool.
    pub const PREDICATE: Config = Config {
        promote_inputs: true,
        int_to_float: false,
        safe_cast_to_output: false,
        output_dtype: Some(DType::Bool),
    };
}

/// What [`prepare`] decided: the dtype the kernel computes in, and the loop nest whose inputs
/// (and output, unless the config fixes its dtype) all have that dtype.
pub struct Prepared {
    pub common: DType,
    pub iter: Iter,
    /// The kernel's output operand as the loop sees it.
    pub output: Operand,
    _scratch: Vec<Scratch>,
    writeback: Option<(Operand, Operand)>,
}

impl Prepared {
    /// Casts a temporary output back into the real one (no-op when none was needed).
    pub fn finish(self) -> Result<()> {
        if let Some((tmp, out)) = &self.writeback {
            // SAFETY: both live for this call; the temporary is ours.
            unsafe { copy_cast(tmp, out) };
        }
        Ok(())
    }
}

fn check_device(t: &TensorRef<'_>, op: &str) -> Result<()> {
    // CPU (0) zero-dimensional tensors are scalars (`x + 1`, `torch.tensor(2.0)`); PrivateUse1 is 20.
    const CPU: i32 = 0;
    const PRIVATE_USE1: i32 = 20;
    let device = t.device();
    if device.device_type == PRIVATE_USE1 || (device.device_type == CPU && t.dim() == 0) {
        Ok(())
    } else {
        Err(Error::runtime(format!(
            "{op}: Expected all tensors to be on the same device, but found a tensor of device type {} (cpu is 0)",
            device.device_type
        )))
    }
}

/// Builds the loop of an elementwise kernel `out = f(inputs...)`, then runs `body` on it and
/// writes the result back. `op` names the op in errors.
/// An input of an elementwise kernel: a tensor, or a Scalar argument (which promotes as a
/// wrapped Python number, as ATen wraps it).
#[derive(Clone, Copy)]
pub enum Input<'a> {
    Tensor(TensorRef<'a>),
    Scalar(Scalar),
    /// A condition or mask (`torch.where`, `masked_fill_`): it takes no part in type promotion
    /// and the loop reads it as Bool (a uint8 mask is converted, as ATen accepts both).
    Mask(TensorRef<'a>),
}

impl Input<'_> {
    fn promotion(&self, operand: &Operand) -> Option<PromotionOperand> {
        match self {
            Input::Tensor(t) => {
                Some(PromotionOperand { dtype: operand.dtype, dim: t.dim(), wrapped_number: t.is_wrapped_number() })
            }
            Input::Scalar(_) => Some(PromotionOperand { dtype: operand.dtype, dim: 0, wrapped_number: true }),
            Input::Mask(_) => None,
        }
    }
}

/// The dtype a Scalar argument has as a wrapped number.
fn scalar_dtype(s: Scalar) -> DType {
    match s {
        Scalar::Bool(_) => DType::Bool,
        Scalar::Int(_) => DType::I64,
        Scalar::Float(_) => DType::F64,
        Scalar::Complex(..) => DType::C128,
    }
}

/// The dtype a kernel computes in: `result_type` of the inputs (or the first input's dtype
/// without promotion), float for integers where the config says so. `None` without inputs.
fn common_dtype(config: Config, inputs: &[Input<'_>], operands: &[Operand]) -> Option<DType> {
    let promotion: PerOperand<PromotionOperand> =
        inputs.iter().zip(operands).filter_map(|(i, o)| i.promotion(o)).collect();
    let common = if config.promote_inputs {
        result_type(&promotion)?
    } else {
        inputs.iter().zip(operands).find(|(i, _)| !matches!(i, Input::Mask(_)))?.1.dtype
    };
    Some(if config.int_to_float && !common.is_floating() && !common.is_complex() {
        DType::DEFAULT_FLOAT
    } else {
        common
    })
}

/// The dtype of a functional op's result (`torch.floor_divide(a, b)`): what [`elementwise`]
/// would compute in, or the config's fixed output dtype.
pub fn result_dtype(config: Config, inputs: &[Input<'_>]) -> Result<DType> {
    let operands: PerOperand<Operand> = inputs
        .iter()
        .map(|i| match i {
            Input::Tensor(t) | Input::Mask(t) => Operand::of(t),
            Input::Scalar(s) => Ok(Operand {
                data: std::ptr::null_mut(),
                dtype: scalar_dtype(*s),
                sizes: Dims::new(),
                strides: Dims::new(),
            }),
        })
        .collect::<Result<_>>()?;
    let common = common_dtype(config, inputs, &operands).unwrap_or(DType::DEFAULT_FLOAT);
    Ok(config.output_dtype.unwrap_or(common))
}

/// A new output for a functional form (`torch.where(c, a, b)`): the broadcast shape of the
/// inputs, laid out in memory like the first input of that shape when it is dense (ATen's
/// TensorIterator gives a new output its inputs' permutation), so a transposed input is not
/// walked across its rows to fill a row-major output. Contiguous otherwise.
pub fn new_output(dtype: DType, inputs: &[Input<'_>]) -> Result<regen_runtime::Tensor> {
    let tensors: Vec<&TensorRef<'_>> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::Tensor(t) | Input::Mask(t) => Some(t),
            Input::Scalar(_) => None,
        })
        .collect();
    let shapes: Vec<&[i64]> = tensors.iter().map(|t| t.sizes()).collect();
    let shape = broadcast_shapes(&shapes)?;
    let strides = tensors
        .iter()
        .find(|t| t.sizes() == shape.as_slice())
        .and_then(|t| dense_strides_like(t.sizes(), t.strides()))
        .unwrap_or_else(|| contiguous_strides(&shape));
    regen_runtime::host::empty_strided(&shape, &strides, dtype.code())
}

/// Strides of a dense tensor of `sizes` with the dimension order of `strides`, if `strides`
/// themselves describe a dense (non-overlapping, gap-free) tensor; `None` otherwise.
fn dense_strides_like(sizes: &[i64], strides: &[i64]) -> Option<Vec<i64>> {
    let mut perm: Vec<usize> = (0..sizes.len()).collect();
    // Fastest dimension first; ties (size-1 dimensions) keep the row-major order.
    perm.sort_by(|&a, &b| strides[a].cmp(&strides[b]).then(b.cmp(&a)));
    let mut expected = 1i64;
    let mut out = vec![0i64; sizes.len()];
    for &d in &perm {
        if sizes[d] != 1 && strides[d] != expected {
            return None;
        }
        out[d] = expected;
        expected *= sizes[d].max(1);
    }
    Some(out)
}

pub fn elementwise(
    op: &str,
    config: Config,
    out: &TensorRef<'_>,
    inputs: &[Input<'_>],
    body: impl FnOnce(&Prepared) -> Result<()>,
) -> Result<()> {
    check_device(out, op)?;
    // Scalars live in slots of this frame, in their own dtype, until the common dtype is known
    // (16 aligned bytes hold any element; the slots never move while the loop runs).
    let mut scalar_slots: PerOperand<[u64; 2]> = smallvec::smallvec![[0u64; 2]; inputs.len()];
    let mut ins: PerOperand<Operand> = PerOperand::new();
    for (k, input) in inputs.iter().enumerate() {
        ins.push(match input {
            Input::Tensor(t) => {
                check_device(t, op)?;
                Operand::of(t)?
            }
            Input::Mask(t) => {
                check_device(t, op)?;
                let o = Operand::of(t)?;
                if !matches!(o.dtype, DType::Bool | DType::U8) {
                    return Err(Error::runtime(format!(
                        "{op} expected a boolean condition or mask, but got a tensor with dtype {}",
                        o.dtype.name()
                    )));
                }
                o
            }
            Input::Scalar(s) => {
                let dtype = scalar_dtype(*s);
                let data: *mut u8 = scalar_slots[k].as_mut_ptr().cast();
                // SAFETY: 16 bytes, 8-aligned, hold any element.
                dispatch_all!(dtype, |T| unsafe { data.cast::<T>().write(scalar_as::<T>(*s)) });
                Operand { data, dtype, sizes: Dims::new(), strides: Dims::new() }
            }
        });
    }
    let out_dtype = DType::from_scalar_type(out.dtype())?;
    let common = common_dtype(config, inputs, &ins).unwrap_or(out_dtype);
    let result_dtype = config.output_dtype.unwrap_or(common);
    if config.safe_cast_to_output {
        check_can_cast(result_dtype, out_dtype)?;
    }
    let shape = {
        let shapes: PerOperand<&[i64]> = ins.iter().map(|o| o.sizes.as_slice()).collect();
        broadcast_shapes(&shapes)?
    };
    with_size(out, &shape, |out| {
        let real_out = Operand::of(out)?;
        let mut scratch = Vec::new();
        let mut converted: PerOperand<Operand> = PerOperand::new();
        for (o, input) in ins.into_iter().zip(inputs) {
            let want = if matches!(input, Input::Mask(_)) { DType::Bool } else { common };
            if o.dtype == want {
                converted.push(o);
                continue;
            }
            let mut buf = Scratch::new(o.numel() * want.size());
            let tmp = Operand {
                data: buf.ptr(),
                dtype: want,
                strides: contiguous_strides(&o.sizes).into(),
                sizes: o.sizes.clone(),
            };
            // SAFETY: `o` is live for the call; `tmp` is fresh scratch of its size.
            unsafe { copy_cast(&o, &tmp) };
            scratch.push(buf);
            converted.push(tmp);
        }
        let (output, writeback) = if real_out.dtype == result_dtype {
            (real_out, None)
        } else {
            let mut buf = Scratch::new(real_out.numel() * result_dtype.size());
            let tmp = Operand {
                data: buf.ptr(),
                dtype: result_dtype,
                strides: Dims::from_vec(contiguous_strides(&real_out.sizes)),
                sizes: real_out.sizes.clone(),
            };
            scratch.push(buf);
            (tmp.clone(), Some((tmp, real_out)))
        };
        let iter = Iter::new(std::slice::from_ref(&output), &converted, &shape);
        let prepared = Prepared { common, iter, output, _scratch: scratch, writeback };
        body(&prepared)?;
        prepared.finish()
    })
}

/// A new contiguous tensor on the device.
pub fn new_tensor(sizes: &[i64], dtype: DType) -> Result<regen_runtime::Tensor> {
    regen_runtime::host::empty_strided(sizes, &contiguous_strides(sizes), dtype.code())
}

/// PyTorch's `maybe_wrap_dim`: a 0-dim tensor is taken as 1-dim (accepts dims -1 and 0).
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = (ndim as i64).max(1);
    let wrapped = if dim < 0 { dim + n } else { dim };
    if !(0..n).contains(&wrapped) {
        return Err(regen_runtime::Error::index(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
            -n,
            n - 1
        )));
    }
    Ok(wrapped as usize)
}

/// Sizes as ATen prints them in messages: `[2, 3]`.
pub fn fmt_sizes(s: &[i64]) -> String {
    format!("[{}]", s.iter().map(i64::to_string).collect::<Vec<_>>().join(", "))
}

/// A scalar of `dtype` from a kernel's Scalar argument.
pub fn scalar_as<T: Element>(s: Scalar) -> T {
    T::from_num(super::dtype::Num::from_scalar(s))
}

/// Test operands over a slice.
#[cfg(test)]
impl Operand {
    pub fn over<T>(data: &mut [T], sizes: &[i64], strides: &[i64], dtype: DType) -> Operand {
        Operand {
            data: data.as_mut_ptr().cast(),
            dtype,
            sizes: Dims::from_slice(sizes),
            strides: Dims::from_slice(strides),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_operands_coalesce_into_one_run() {
        let (mut a, mut b, mut o) = (vec![0f32; 24], vec![0f32; 24], vec![0f32; 24]);
        let s = [2, 3, 4];
        let st = contiguous_strides(&s);
        let it = Iter::new(
            &[Operand::over(&mut o, &s, &st, DType::F32)],
            &[Operand::over(&mut a, &s, &st, DType::F32), Operand::over(&mut b, &s, &st, DType::F32)],
            &s,
        );
        assert_eq!(it.shape(), &[24]);
        assert_eq!(it.strides(1), &[4]);
    }

    #[test]
    fn broadcast_rows_keep_a_contiguous_inner_dimension() {
        // [3, 4] * [4]: the row vector steps with the matrix inside, stays put outside.
        let (mut a, mut b, mut o) = (vec![0f32; 12], vec![0f32; 4], vec![0f32; 12]);
        let it = Iter::new(
            &[Operand::over(&mut o, &[3, 4], &[4, 1], DType::F32)],
            &[Operand::over(&mut a, &[3, 4], &[4, 1], DType::F32), Operand::over(&mut b, &[4], &[1], DType::F32)],
            &[3, 4],
        );
        assert_eq!(it.shape(), &[4, 3]);
        assert_eq!(it.strides(2), &[4, 0]);
    }

    #[test]
    fn transposed_inputs_are_walked_in_memory_order() {
        // Output transposed in memory: the loop follows the output's fastest dimension.
        let (mut a, mut o) = (vec![0f64; 6], vec![0f64; 6]);
        let it = Iter::new(
            &[Operand::over(&mut o, &[2, 3], &[1, 2], DType::F64)],
            &[Operand::over(&mut a, &[2, 3], &[1, 2], DType::F64)],
            &[2, 3],
        );
        assert_eq!(it.shape(), &[6]);
        assert_eq!(it.strides(0), &[8]);
    }

    #[test]
    fn runs_cover_every_element_once_in_parallel_too() {
        let n = 3 * GRAIN + 17;
        let mut src: Vec<i64> = (0..n as i64).collect();
        let mut dst = vec![0i64; n];
        // A strided view of every element of a [n/17*?] shape: use [n] reversed order via negative? keep simple.
        let s = [n as i64];
        let it = Iter::new(
            &[Operand::over(&mut dst, &s, &[1], DType::I64)],
            &[Operand::over(&mut src, &s, &[1], DType::I64)],
            &s,
        );
        super::super::loops::unary::<i64, i64>(&it, |x| x * 2);
        assert!(dst.iter().enumerate().all(|(k, &v)| v == 2 * k as i64));
        // A non-coalescible strided shape: every other column of a [7, 10] matrix.
        let mut m: Vec<f32> = (0..70).map(|x| x as f32).collect();
        let mut out = vec![0f32; 35];
        let it = Iter::new(
            &[Operand::over(&mut out, &[7, 5], &[5, 1], DType::F32)],
            &[Operand::over(&mut m, &[7, 5], &[10, 2], DType::F32)],
            &[7, 5],
        );
        super::super::loops::unary::<f32, f32>(&it, |x| x + 0.5);
        for r in 0..7 {
            for c in 0..5 {
                assert_eq!(out[r * 5 + c], (r * 10 + c * 2) as f32 + 0.5);
            }
        }
    }

    #[test]
    fn new_outputs_follow_a_dense_input_layout() {
        assert_eq!(dense_strides_like(&[3, 4], &[1, 3]), Some(vec![1, 3]));
        assert_eq!(dense_strides_like(&[2, 3, 4], &[12, 4, 1]), Some(vec![12, 4, 1]));
        assert_eq!(dense_strides_like(&[2, 1, 4], &[1, 1, 2]), Some(vec![1, 1, 2]));
        // Every other column: not dense, so the output is contiguous instead.
        assert_eq!(dense_strides_like(&[3, 4], &[8, 2]), None);
    }

    #[test]
    fn copy_cast_converts_and_broadcasts() {
        let mut src = vec![1.5f32, -2.5, 3.0];
        let mut dst = vec![0i32; 6];
        // SAFETY: both live for the call.
        unsafe {
            copy_cast(
                &Operand::over(&mut src, &[3], &[1], DType::F32),
                &Operand::over(&mut dst, &[2, 3], &[3, 1], DType::I32),
            )
        };
        assert_eq!(dst, [1, -2, 3, 1, -2, 3]);
        assert!(broadcast_shapes(&[&[2, 1, 4], &[3, 1]]).unwrap() == [2, 3, 4]);
        assert!(broadcast_shapes(&[&[2], &[3]]).is_err());
    }
}
