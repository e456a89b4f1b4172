//! A kernel call's tensors and scalars as the operands of an [`Iter`]: devices checked, PyTorch's
//! type promotion, broadcasting, outputs resized (`resize_output` semantics, silently), inputs of
//! another dtype converted into temporaries of the common dtype (as ATen does on CPU), and a
//! temporary output cast back when the output's dtype differs.

use regen_runtime::bootstrap::with_size;
use regen_runtime::{Error, Result, Scalar, TensorRef};

use crate::dispatch_all;
use crate::engine::dtype::{DType, PromotionOperand, check_can_cast, result_type};
use crate::engine::iter::{Dims, Iter, Operand, PerOperand, broadcast_shapes, contiguous_strides, scalar_as};
use crate::engine::loops::copy_cast;

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

/// What [`elementwise`] decided: the dtype the kernel computes in, and the loop nest whose inputs
/// (and output, unless the config fixes its dtype) all have that dtype.
pub struct Prepared {
    pub common: DType,
    pub iter: Iter,
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

/// A tensor of a kernel call is on this backend (or is a CPU scalar: `x + 1`,
/// `torch.tensor(2.0)`), and on the same device as the first device tensor, `first`, as
/// TensorIterator's device check (CUDA's message).
fn check_device(t: &TensorRef<'_>, op: &str, first: &mut Option<i32>) -> Result<()> {
    // CPU is device type 0; PrivateUse1 is 20.
    const CPU: i32 = 0;
    const PRIVATE_USE1: i32 = 20;
    let device = t.device();
    if device.device_type == CPU && t.dim() == 0 {
        return Ok(());
    }
    if device.device_type != PRIVATE_USE1 {
        return Err(Error::runtime(format!(
            "{op}: Expected all tensors to be on the same device, but found a tensor of device type {} (cpu is 0)",
            device.device_type
        )));
    }
    match *first {
        None => *first = Some(device.index),
        Some(index) if index != device.index => {
            let name = regen_runtime::device::name();
            return Err(Error::runtime(format!(
                "{op}: Expected all tensors to be on the same device, but found at least two devices, {name}:{index} and {name}:{}!",
                device.index
            )));
        }
        Some(_) => {}
    }
    Ok(())
}

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
    /// How this input takes part in type promotion when its elements have `dtype`.
    fn promotion(&self, dtype: DType) -> Option<PromotionOperand> {
        match self {
            Input::Tensor(t) => Some(PromotionOperand { dtype, dim: t.dim(), wrapped_number: t.is_wrapped_number() }),
            Input::Scalar(_) => Some(PromotionOperand { dtype, dim: 0, wrapped_number: true }),
            Input::Mask(_) => None,
        }
    }

    /// The dtype of this input's elements (a Scalar's as a wrapped number).
    fn dtype(&self) -> Result<DType> {
        match self {
            Input::Tensor(t) | Input::Mask(t) => DType::from_scalar_type(t.dtype()),
            Input::Scalar(s) => Ok(scalar_dtype(*s)),
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
fn common_dtype(config: Config, inputs: &[Input<'_>], dtypes: &[DType]) -> Option<DType> {
    let common = if config.promote_inputs {
        let promotion: PerOperand<PromotionOperand> =
            inputs.iter().zip(dtypes).filter_map(|(i, &d)| i.promotion(d)).collect();
        result_type(&promotion)?
    } else {
        *inputs.iter().zip(dtypes).find(|(i, _)| !matches!(i, Input::Mask(_)))?.1
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
    let dtypes: PerOperand<DType> = inputs.iter().map(Input::dtype).collect::<Result<_>>()?;
    let common = common_dtype(config, inputs, &dtypes).unwrap_or(DType::DEFAULT_FLOAT);
    Ok(config.output_dtype.unwrap_or(common))
}

/// A new output for a functional form (`torch.where(c, a, b)`): the broadcast shape of the
/// inputs, laid out in memory like the first input of that shape when it is dense (ATen's
/// TensorIterator gives a new output its inputs' permutation), so a transposed input is not
/// walked across its rows to fill a row-major output. Contiguous otherwise.
pub fn new_output(dtype: DType, inputs: &[Input<'_>]) -> Result<regen_runtime::Tensor> {
    let shapes: PerOperand<&[i64]> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::Tensor(t) | Input::Mask(t) => Some(t.sizes()),
            Input::Scalar(_) => None,
        })
        .collect();
    let shape = broadcast_shapes(&shapes)?;
    let strides = layout_of_inputs(inputs, &shape).unwrap_or_else(|| Dims::from_vec(contiguous_strides(&shape)));
    regen_runtime::host::empty_strided(&shape, &strides, dtype.code())
}

/// The strides of a new output of `shape`: the dense layout of the first input of that shape
/// when it is dense (a transposed or channels-last input gives a transposed or channels-last
/// result, as TensorIterator's output follows its inputs' dimension order).
fn layout_of_inputs(inputs: &[Input<'_>], shape: &[i64]) -> Option<Dims<i64>> {
    inputs
        .iter()
        .filter_map(|i| match i {
            Input::Tensor(t) | Input::Mask(t) => Some(t),
            Input::Scalar(_) => None,
        })
        .find(|t| t.sizes() == shape)
        .and_then(|t| dense_strides_like(t.sizes(), t.strides()))
}

/// Runs `f` on `out` at `shape`: resized as `with_size` does, except that an empty output (ATen's
/// functional forms such as `abs` pass `at::empty({0})` to the `.out` kernel) takes the layout
/// of [`layout_of_inputs`], as TensorIterator restrides an output it resizes; otherwise `abs` of a
/// transposed tensor would write a contiguous result in transposed order (5x slower).
fn sized_like_inputs<T>(
    out: &TensorRef<'_>,
    shape: &[i64],
    inputs: &[Input<'_>],
    f: impl FnOnce(&TensorRef<'_>) -> Result<T>,
) -> Result<T> {
    if out.numel() == 0 && out.sizes() != shape && shape.iter().product::<i64>() > 0 {
        let contiguous = contiguous_strides(shape);
        if let Some(strides) = layout_of_inputs(inputs, shape).filter(|s| s[..] != contiguous[..]) {
            let dtype = DType::from_scalar_type(out.dtype())?;
            let fresh = regen_runtime::host::empty_strided(shape, &strides, dtype.code())?;
            let desc = regen_runtime::host::set_tensor(out, &fresh.as_ref())?;
            // SAFETY: the host describes the live, restrided tensor, unchanged while `f` runs.
            return f(&unsafe { TensorRef::from_raw(&desc) });
        }
    }
    with_size(out, shape, f)
}

/// TensorIterator's memory-overlap checks (`compute_mem_overlaps`), so that an in-place or `out=`
/// call CPU refuses is refused here too instead of computing from elements it already wrote: the
/// output may not hold one element at two positions (a stride 0 over more than one element), and
/// an input may not share some but not all of the output's memory (sharing exactly all of it is
/// an in-place op). As ATen, only what dense tensors make certain is refused.
fn check_overlaps(out: &TensorRef<'_>, inputs: &[Input<'_>]) -> Result<()> {
    const CLONE: &str = "Please clone() the tensor before performing the operation.";
    let dense = |t: &TensorRef<'_>| dense_strides_like(t.sizes(), t.strides()).is_some();
    let out_dense = dense(out);
    if !out_dense && out.sizes().iter().zip(out.strides()).any(|(&n, &s)| n > 1 && s == 0) {
        return Err(Error::runtime(format!(
            "unsupported operation: more than one element of the written-to tensor refers to a single memory location. {CLONE}"
        )));
    }
    // The bytes a dense (`is_dense`), non-empty tensor spans; None where ATen cannot tell (too
    // hard) or no.
    let span = |t: &TensorRef<'_>, is_dense: bool| -> Result<Option<(usize, usize)>> {
        if t.numel() == 0 || !is_dense {
            return Ok(None);
        }
        let start = t.data_ptr() as usize;
        Ok(Some((start, start + t.numel() as usize * DType::from_scalar_type(t.dtype())?.size())))
    };
    let Some((lo, hi)) = span(out, out_dense)? else { return Ok(()) };
    for input in inputs {
        let (Input::Tensor(t) | Input::Mask(t)) = input else { continue };
        let Some((a, b)) = span(t, dense(t))? else { continue };
        let same = a == lo && b == hi && t.strides() == out.strides();
        if !same && a < hi && lo < b {
            return Err(Error::runtime(format!(
                "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. {CLONE}"
            )));
        }
    }
    Ok(())
}

/// Strides of a dense tensor of `sizes` with the dimension order of `strides`, if `strides`
/// themselves describe a dense (non-overlapping, gap-free) tensor; `None` otherwise. Inline
/// vectors: every elementwise call asks it three times, and a 1-element `add` spent 3% of its
/// time in the allocator for it.
fn dense_strides_like(sizes: &[i64], strides: &[i64]) -> Option<Dims<i64>> {
    // Most tensors have exactly the row-major strides (size-1 dimensions included), which the
    // sort below would return unchanged: return them without it.
    let mut expected = 1i64;
    let mut row_major = true;
    for d in (0..sizes.len()).rev() {
        if strides[d] != expected {
            row_major = false;
            break;
        }
        expected *= sizes[d].max(1);
    }
    if row_major {
        return Some(Dims::from_slice(strides));
    }
    let mut perm: Dims<usize> = (0..sizes.len()).collect();
    // Fastest dimension first; ties (size-1 dimensions) keep the row-major order.
    perm.sort_by(|&a, &b| strides[a].cmp(&strides[b]).then(b.cmp(&a)));
    let mut expected = 1i64;
    let mut out: Dims<i64> = smallvec::smallvec![0i64; sizes.len()];
    for &d in &perm {
        if sizes[d] != 1 && strides[d] != expected {
            return None;
        }
        out[d] = expected;
        expected *= sizes[d].max(1);
    }
    Some(out)
}

/// Builds the loop of an elementwise kernel `out = f(inputs...)`, then runs `body` on it and
/// writes the result back. `op` names the op in errors.
pub fn elementwise(
    op: &str,
    config: Config,
    out: &TensorRef<'_>,
    inputs: &[Input<'_>],
    body: impl FnOnce(&Prepared) -> Result<()>,
) -> Result<()> {
    with_operands(op, Some(out), inputs, |ins, dtypes, shape| {
        check_overlaps(out, inputs)?;
        let out_dtype = DType::from_scalar_type(out.dtype())?;
        let common = common_dtype(config, inputs, dtypes).unwrap_or(out_dtype);
        let result_dtype = config.output_dtype.unwrap_or(common);
        if config.safe_cast_to_output {
            check_can_cast(result_dtype, out_dtype)?;
        }
        sized_like_inputs(out, shape, inputs, |out| {
            let real_out = Operand::of(out)?;
            if real_out.dtype == result_dtype {
                return converted_and_run(common, ins, inputs, &real_out, (Vec::new(), None), shape, body);
            }
            let mut buf = Scratch::new(real_out.numel() * result_dtype.size());
            let tmp = Operand {
                data: buf.ptr(),
                dtype: result_dtype,
                strides: Dims::from_vec(contiguous_strides(&real_out.sizes)),
                sizes: real_out.sizes.clone(),
            };
            converted_and_run(common, ins, inputs, &tmp.clone(), (vec![buf], Some((tmp, real_out))), shape, body)
        })
    })
}

/// [`elementwise`] into a new output, for functional forms (`torch.add(a, b)`): the result dtype
/// ([`result_dtype`]) and the inputs' broadcast shape, laid out as [`new_output`] lays it out.
/// One setup serves both the output and the loop (type promotion, broadcasting and the
/// operands' geometry once; no overlap or resize checks a new tensor cannot fail): a 1-element
/// op's cost is mostly this setup.
pub fn elementwise_new(
    op: &str,
    config: Config,
    inputs: &[Input<'_>],
    body: impl FnOnce(&Prepared) -> Result<()>,
) -> Result<regen_runtime::Tensor> {
    with_operands(op, None, inputs, |ins, dtypes, shape| {
        let common = common_dtype(config, inputs, dtypes).unwrap_or(DType::DEFAULT_FLOAT);
        let result_dtype = config.output_dtype.unwrap_or(common);
        let strides = layout_of_inputs(inputs, shape).unwrap_or_else(|| Dims::from_vec(contiguous_strides(shape)));
        let fresh = regen_runtime::host::empty_strided(shape, &strides, result_dtype.code())?;
        let output = Operand::of(&fresh.as_ref())?;
        converted_and_run(common, ins, inputs, &output, (Vec::new(), None), shape, body)?;
        Ok(fresh)
    })
}

/// The operands of an elementwise op's inputs (devices checked against each other and the
/// output's, masks checked Bool or UInt8), their dtypes and broadcast shape, passed to `k`.
/// Scalars live in slots of this frame, in their own dtype, until the common dtype is known, so
/// the operands pointing at them are lent to a continuation rather than returned.
fn with_operands<R>(
    op: &str,
    out: Option<&TensorRef<'_>>,
    inputs: &[Input<'_>],
    k: impl FnOnce(&[Operand], &[DType], &[i64]) -> Result<R>,
) -> Result<R> {
    let mut device = None;
    if let Some(out) = out {
        check_device(out, op, &mut device)?;
    }
    // 16 aligned bytes hold any element; the slots never move while the loop runs.
    let mut scalar_slots: PerOperand<[u64; 2]> = smallvec::smallvec![[0u64; 2]; inputs.len()];
    let mut ins: PerOperand<Operand> = PerOperand::new();
    for (k, input) in inputs.iter().enumerate() {
        ins.push(match input {
            Input::Tensor(t) => {
                check_device(t, op, &mut device)?;
                Operand::of(t)?
            }
            Input::Mask(t) => {
                check_device(t, op, &mut device)?;
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
    let dtypes: PerOperand<DType> = ins.iter().map(|o| o.dtype).collect();
    let shape = {
        let shapes: PerOperand<&[i64]> = ins.iter().map(|o| o.sizes.as_slice()).collect();
        broadcast_shapes(&shapes)?
    };
    k(&ins, &dtypes, &shape)
}

/// The rest of [`elementwise`]: the inputs converted to the dtype the loop computes in (masks to
/// Bool) where they differ, the loop nest over `output` and them, `body`, and the cast of a
/// temporary output back into the real one (`writeback`; `scratch` holds the temporary).
/// Operands are passed and gathered by reference: moving them (two inline 6-dimension arrays
/// each) was a 1-element op's largest cost after the dispatcher's (memmove, 7% of `x.add_(y)`).
fn converted_and_run(
    common: DType,
    ins: &[Operand],
    inputs: &[Input<'_>],
    output: &Operand,
    (mut scratch, writeback): (Vec<Scratch>, Option<(Operand, Operand)>),
    shape: &[i64],
    body: impl FnOnce(&Prepared) -> Result<()>,
) -> Result<()> {
    // One slot per input: the converted copy where its dtype is not the one the loop computes
    // in (masks: Bool), else None and the input itself is used.
    let temporaries: PerOperand<Option<Operand>> = ins
        .iter()
        .zip(inputs)
        .map(|(o, input)| {
            let want = if matches!(input, Input::Mask(_)) { DType::Bool } else { common };
            if o.dtype == want {
                return None;
            }
            let mut buf = Scratch::new(o.numel() * want.size());
            let tmp = Operand {
                data: buf.ptr(),
                dtype: want,
                strides: contiguous_strides(&o.sizes).into(),
                sizes: o.sizes.clone(),
            };
            // SAFETY: `o` is live for the call; `tmp` is fresh scratch of its size.
            unsafe { copy_cast(o, &tmp) };
            scratch.push(buf);
            Some(tmp)
        })
        .collect();
    let operands: PerOperand<&Operand> =
        std::iter::once(output).chain(ins.iter().zip(&temporaries).map(|(o, t)| t.as_ref().unwrap_or(o))).collect();
    let iter = Iter::of(&operands, shape);
    let prepared = Prepared { common, iter, _scratch: scratch, writeback };
    body(&prepared)?;
    prepared.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_outputs_follow_a_dense_input_layout() {
        let dense = |sizes: &[i64], strides: &[i64]| dense_strides_like(sizes, strides).map(|d| d.to_vec());
        assert_eq!(dense(&[3, 4], &[1, 3]), Some(vec![1, 3]));
        assert_eq!(dense(&[2, 3, 4], &[12, 4, 1]), Some(vec![12, 4, 1]));
        assert_eq!(dense(&[2, 1, 4], &[1, 1, 2]), Some(vec![1, 1, 2]));
        // Every other column: not dense, so the output is contiguous instead.
        assert_eq!(dense_strides_like(&[3, 4], &[8, 2]), None);
    }
}
