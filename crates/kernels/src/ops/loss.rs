//! Loss functions: `nll_loss` and `nll_loss2d` (forward and backward), in the order of operations
//! of ATen's CPU kernels (`LossNLL.cpp`, `LossNLL2d.cpp`), and the elementwise losses (mse,
//! smooth L1, Huber, binary cross-entropy) as `Loss.cpp` composes them: a pointwise row of
//! [`crate::ops::pointwise`] for the unreduced loss or its gradient, then the reduction
//! engine's mean or sum.
//!
//! Both losses are one engine over `batch × classes × map` (`map` the spatial positions of
//! nll_loss2d, 1 for nll_loss): the unreduced loss per target in parallel, the reduced loss in
//! CPU's cascade of partial sums kept in the element type (so float16 and bfloat16 round where
//! CPU's do and every dtype equals CPU bit for bit).

use regen_runtime::{Error, Result, Scalar, Tensor, TensorRef};

use crate::engine::dtype::{self, DType};
use crate::engine::dtype::{dtype_of, float_dtype};
use crate::engine::iter::{fmt_sizes, new_tensor};
use crate::engine::operands::Input;
use crate::engine::scalar::Real;
use crate::ops::binary;
use crate::ops::norm::{Elem, dense, into_out, read_f64};
use crate::ops::pointwise::{self, Pointwise, ops as pw};
use crate::ops::reduce as r;

use num_traits::{One, Zero};

/// `at::Reduction`.
const NONE: i64 = 0;
const MEAN: i64 = 1;

/// Which of the two ops: their checks and output shapes differ, their arithmetic does not.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Nll {
    /// `nll_loss`: input `[C]` or `[N, C]`, target `[]` or `[N]`.
    D1,
    /// `nll_loss2d`: input `[N, C, H, W]`, target `[N, H, W]`.
    D2,
}

/// The problem's extents and the unreduced output's sizes.
struct Shape {
    batch: usize,
    classes: usize,
    map: usize,
    /// Sizes of the unreduced loss (`reduction=none`); `None` when the loss is always a scalar.
    unreduced: Option<Vec<i64>>,
}

fn check(kind: Nll, input: &TensorRef<'_>, target: &TensorRef<'_>, weight: Option<&TensorRef<'_>>) -> Result<Shape> {
    let (x, t) = (input.sizes(), target.sizes());
    match kind {
        Nll::D1 => {
            if x.is_empty() || x.len() > 2 {
                return Err(Error::runtime("input tensor should be 1D or 2D"));
            }
            if t.len() > 1 {
                return Err(Error::runtime("0D or 1D target tensor expected, multi-target not supported"));
            }
            let no_batch = x.len() == 1 && t.is_empty();
            if !no_batch && t.is_empty() {
                return Err(Error::index("Dimension specified as 0 but tensor has no dimensions"));
            }
            if !no_batch && x[0] != t[0] {
                return Err(Error::runtime(format!(
                    "size mismatch (got input: {}, target: {})",
                    fmt_sizes(x),
                    fmt_sizes(t)
                )));
            }
            if x.len() == 1 && t.len() == 1 {
                return Err(Error::runtime(format!(
                    "Expected target to be 0D when input is 1D, but got target.dim ={}",
                    t.len()
                )));
            }
            let classes = x[x.len() - 1];
            if let Some(w) = weight
                && (w.dim() != 1 || w.numel() != classes)
            {
                return Err(Error::runtime(format!(
                    "weight tensor should be defined either for all {classes} classes or no classes but got weight tensor of shape: {}",
                    fmt_sizes(w.sizes())
                )));
            }
            let batch = if x.len() == 2 { x[0] } else { 1 };
            Ok(Shape {
                batch: batch as usize,
                classes: classes as usize,
                map: 1,
                unreduced: (x.len() == 2).then(|| vec![batch]),
            })
        }
        Nll::D2 => {
            if t.len() != 3 {
                return Err(Error::runtime(format!(
                    "only batches of spatial targets supported (3D tensors) but got targets of dimension: {}",
                    t.len()
                )));
            }
            if x.len() != 4 {
                return Err(Error::runtime(format!(
                    "only batches of spatial inputs supported (4D tensors), but got input of dimension: {}",
                    x.len()
                )));
            }
            if let Some(w) = weight
                && w.numel() != x[1]
            {
                return Err(Error::runtime("weight tensor should be defined either for all or no classes"));
            }
            if x[0] != t[0] || x[2] != t[1] || x[3] != t[2] {
                return Err(Error::runtime(format!(
                    "size mismatch (got input: {} , target: {}",
                    fmt_sizes(x),
                    fmt_sizes(t)
                )));
            }
            Ok(Shape {
                batch: x[0] as usize,
                classes: x[1] as usize,
                map: (x[2] * x[3]) as usize,
                unreduced: Some(vec![x[0], x[2], x[3]]),
            })
        }
    }
}

fn dtype_mismatch(want: DType, got: DType) -> Error {
    Error::runtime(format!("expected scalar type {} but found {}", want.name(), got.name()))
}

/// The targets in row-major order: int64, or uint8 where CPU's nll_loss reads bytes.
fn targets(kind: Nll, target: &TensorRef<'_>) -> Result<Vec<i64>> {
    let dtype = DType::from_scalar_type(target.dtype())?;
    let n = target.numel().max(0) as usize;
    let d = dense(target)?;
    match dtype {
        // SAFETY: the dense data holds the target's n elements.
        DType::I64 => Ok(unsafe { std::slice::from_raw_parts(d.ptr as *const i64, n) }.to_vec()),
        DType::U8 if kind == Nll::D1 => {
            // SAFETY: as above.
            Ok(unsafe { std::slice::from_raw_parts(d.ptr as *const u8, n) }.iter().map(|&b| b as i64).collect())
        }
        _ => Err(dtype_mismatch(DType::I64, dtype)),
    }
}

/// The class weights as the element type, contiguous.
fn weights<T: Elem>(weight: Option<&TensorRef<'_>>, dtype: DType, classes: usize) -> Result<Option<Vec<T>>> {
    let Some(w) = weight else { return Ok(None) };
    let wd = DType::from_scalar_type(w.dtype())?;
    if wd != dtype {
        return Err(dtype_mismatch(dtype, wd));
    }
    let d = dense(w)?;
    // SAFETY: the dense weight holds `classes` elements (checked against the input).
    Ok(Some(unsafe { std::slice::from_raw_parts(d.ptr as *const T, classes) }.to_vec()))
}

fn out_of_bounds(t: i64) -> Error {
    Error::index(format!("Target {t} is out of bounds."))
}

/// `utils::CeilLog2`.
fn ceil_log2(x: usize) -> u32 {
    if x <= 2 { 1 } else { usize::BITS - (x - 1).leading_zeros() }
}

/// `a op b` in the element type, rounded as CPU's `scalar_t` arithmetic rounds.
#[inline(always)]
fn rd<T: Elem>(a: T::Acc) -> T::Acc {
    T::from_acc(a).to_acc()
}

/// `nll_loss_forward.output` / `nll_loss2d_forward.output`.
#[allow(clippy::too_many_arguments)]
pub fn forward(
    kind: Nll,
    input: TensorRef<'_>,
    target: TensorRef<'_>,
    weight: Option<TensorRef<'_>>,
    reduction: i64,
    ignore_index: i64,
    output: TensorRef<'_>,
    total_weight: TensorRef<'_>,
) -> Result<()> {
    let name = if kind == Nll::D1 { "nll_loss_out_frame" } else { "nll_loss2d_forward_out_frame" };
    let dtype = float_dtype(&input, name)?;
    let shape = check(kind, &input, &target, weight.as_ref())?;
    let unreduced = if reduction == NONE { shape.unreduced.clone() } else { None };
    let out_sizes = unreduced.clone().unwrap_or_default();
    let tgt = targets(kind, &target)?;
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        let w = weights::<T>(weight.as_ref(), dtype, shape.classes)?;
        let x = dense(&input)?;
        let (loss, total) = if unreduced.is_some() {
            let mut loss = vec![<T as dtype::Element>::from_acc(Default::default()); tgt.len()];
            unreduced_loss::<T>(&shape, x.ptr, &tgt, w.as_deref(), ignore_index, &mut loss)?;
            (loss, <T as dtype::Element>::from_acc(Default::default()))
        } else {
            let (l, t) = reduced_loss::<T>(&shape, x.ptr, &tgt, w.as_deref(), reduction, ignore_index)?;
            (vec![l], t)
        };
        into_out(&total_weight, &[], dtype, |p| {
            // SAFETY: the scalar total weight.
            unsafe { (p as *mut T).write(total) };
            Ok(())
        })?;
        into_out(&output, &out_sizes, dtype, |p| {
            // SAFETY: the output holds `loss.len()` contiguous elements.
            unsafe { std::ptr::copy_nonoverlapping(loss.as_ptr(), p as *mut T, loss.len()) };
            Ok(())
        })
    }, else Err(crate::engine::dtype::not_implemented(name, dtype)))
}

/// `-x[b, t, m] · w[t]` per target, 0 where ignored.
fn unreduced_loss<T: Elem>(
    s: &Shape,
    xp: usize,
    tgt: &[i64],
    w: Option<&[T]>,
    ignore_index: i64,
    loss: &mut [T],
) -> Result<()> {
    let x = xp as *const T;
    for (i, (l, &t)) in loss.iter_mut().zip(tgt).enumerate() {
        if t == ignore_index {
            *l = T::from_acc(Default::default());
            continue;
        }
        if t < 0 || t as usize >= s.classes {
            return Err(out_of_bounds(t));
        }
        let (b, m) = (i / s.map, i % s.map);
        // SAFETY: b < batch, t < classes, m < map index the dense input.
        let v = unsafe { *x.add((b * s.classes + t as usize) * s.map + m) };
        let wt = w.map_or(T::from_acc(num_traits::One::one()), |w| w[t as usize]);
        *l = T::from_acc(-v.to_acc() * wt.to_acc());
    }
    Ok(())
}

/// The summed (or averaged) loss and the total weight, in CPU's cascade of 8 partial sums.
fn reduced_loss<T: Elem>(
    s: &Shape,
    xp: usize,
    tgt: &[i64],
    w: Option<&[T]>,
    reduction: i64,
    ignore_index: i64,
) -> Result<(T, T)> {
    use num_traits::Zero;
    let zero = T::Acc::zero();
    if tgt.is_empty() {
        let l = if reduction == MEAN { <T::Acc as num_traits::Float>::nan() } else { zero };
        return Ok((T::from_acc(l), T::from_acc(zero)));
    }
    const LEVELS: usize = 8;
    let power = 4.max(ceil_log2(tgt.len()) / LEVELS as u32);
    let mask = (1usize << power) - 1;
    let mut wsum = [zero; LEVELS];
    let mut lsum = [zero; LEVELS];
    let mut ignored = 0usize;
    let x = xp as *const T;
    for (i, &t) in tgt.iter().enumerate() {
        if t == ignore_index {
            ignored += 1;
            continue;
        }
        if t < 0 || t as usize >= s.classes {
            return Err(out_of_bounds(t));
        }
        let (b, m) = (i / s.map, i % s.map);
        // SAFETY: as in `unreduced_loss`.
        let v = unsafe { *x.add((b * s.classes + t as usize) * s.map + m) }.to_acc();
        match w {
            Some(w) => {
                let wt = w[t as usize].to_acc();
                lsum[0] = rd::<T>(lsum[0] - rd::<T>(v * wt));
                wsum[0] = rd::<T>(wsum[0] + wt);
            }
            None => lsum[0] = rd::<T>(lsum[0] - v),
        }
        for j in 0..LEVELS - 1 {
            if i & (mask << (j as u32 * power)) != 0 {
                break;
            }
            wsum[j + 1] = rd::<T>(wsum[j + 1] + wsum[j]);
            lsum[j + 1] = rd::<T>(lsum[j + 1] + lsum[j]);
            wsum[j] = zero;
            lsum[j] = zero;
        }
    }
    let total = match w {
        None => rd::<T>(<T::Acc as crate::engine::scalar::Real>::from_f64((tgt.len() - ignored) as f64)),
        Some(_) => wsum.iter().fold(zero, |a, &b| rd::<T>(a + b)),
    };
    let mut out = lsum.iter().fold(zero, |a, &b| rd::<T>(a + b));
    if reduction == MEAN {
        out = rd::<T>(out / total);
    }
    Ok((T::from_acc(out), T::from_acc(total)))
}

/// `nll_loss2d_forward`: new outputs, then the `.output` form.
pub fn forward_new(
    kind: Nll,
    input: TensorRef<'_>,
    target: TensorRef<'_>,
    weight: Option<TensorRef<'_>>,
    reduction: i64,
    ignore_index: i64,
) -> Result<(Tensor, Tensor)> {
    let dtype = DType::from_scalar_type(input.dtype())?;
    let (out, total) = (new_tensor(&[0], dtype)?, new_tensor(&[], dtype)?);
    forward(kind, input, target, weight, reduction, ignore_index, out.as_ref(), total.as_ref())?;
    Ok((out, total))
}

/// `nll_loss_backward.grad_input` / `nll_loss2d_backward.grad_input`: zeros, and at each
/// target's class `-w[t]·g` (`g` the unreduced gradient, or the single one divided by the
/// total weight for `mean`).
#[allow(clippy::too_many_arguments)]
pub fn backward(
    kind: Nll,
    grad_output: TensorRef<'_>,
    input: TensorRef<'_>,
    target: TensorRef<'_>,
    weight: Option<TensorRef<'_>>,
    reduction: i64,
    ignore_index: i64,
    total_weight: TensorRef<'_>,
    grad_input: TensorRef<'_>,
) -> Result<()> {
    let name = if kind == Nll::D1 { "nll_loss_backward_out_frame" } else { "nll_loss2d_backward_out_frame" };
    let dtype = float_dtype(&input, name)?;
    let shape = check(kind, &input, &target, weight.as_ref())?;
    if total_weight.numel() != 1 {
        return Err(Error::runtime(format!(
            "expected total_weight to be a{} single element tensor, got: {} ({} elements)",
            if kind == Nll::D1 { " " } else { "" },
            fmt_sizes(total_weight.sizes()),
            total_weight.numel()
        )));
    }
    let unreduced = reduction == NONE && shape.unreduced.is_some();
    let g = grad_output.sizes();
    if unreduced {
        let want = shape.unreduced.as_deref().unwrap_or_default();
        if g != want {
            return Err(match kind {
                Nll::D1 => Error::runtime(format!(
                    "Expected a tensor of dimension 1 and tensor.size[0] == {} but got: dimension {} and tensor.size[0] == {}",
                    want[0],
                    g.len(),
                    g.first().copied().unwrap_or(1)
                )),
                Nll::D2 if g.len() != 3 => Error::runtime(format!(
                    "grad_output must have same dimension as target (3) but got dimension: {}",
                    fmt_sizes(g)
                )),
                Nll::D2 => Error::runtime(format!(
                    "size mismatch (got grad_output: {} target: {}",
                    fmt_sizes(g),
                    fmt_sizes(target.sizes())
                )),
            });
        }
    } else if g.len() > 1 || grad_output.numel() != 1 {
        return Err(Error::runtime(format!("Expected a single element grad_output tensor, but got: {}", fmt_sizes(g))));
    }
    for t in [&grad_output, &total_weight] {
        let d = DType::from_scalar_type(t.dtype())?;
        if d != dtype {
            return Err(dtype_mismatch(dtype, d));
        }
    }
    let tgt = targets(kind, &target)?;
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        let w = weights::<T>(weight.as_ref(), dtype, shape.classes)?;
        let go = dense(&grad_output)?;
        let tw = dense(&total_weight)?;
        into_out(&grad_input, input.sizes(), dtype, |p| {
            let gi = p as *mut T;
            let n = shape.batch * shape.classes * shape.map;
            // SAFETY: into_out hands a contiguous buffer of T with input's sizes, whose element
            // count is batch · classes · map = n (the later writes stay inside it too: the
            // target's bounds are checked before its class is written).
            unsafe { std::slice::from_raw_parts_mut(gi, n) }.fill(<T as dtype::Element>::from_acc(Default::default()));
            let one = <T as dtype::Element>::from_acc(num_traits::One::one());
            let scalar = if unreduced {
                None
            } else {
                // SAFETY: single-element tensors.
                let (g, total) = unsafe { (dtype::Element::to_acc(*(go.ptr as *const T)), dtype::Element::to_acc(*(tw.ptr as *const T))) };
                Some(-(if reduction == MEAN { rd::<T>(g / total) } else { g }))
            };
            for (i, &t) in tgt.iter().enumerate() {
                if t == ignore_index {
                    continue;
                }
                if t < 0 || t as usize >= shape.classes {
                    return Err(out_of_bounds(t));
                }
                let wt = w.as_ref().map_or(one, |w| w[t as usize]);
                let v = match scalar {
                    // SAFETY: element i of the dense unreduced gradient.
                    None => <T as dtype::Element>::from_acc(rd::<T>(-dtype::Element::to_acc(wt)) * dtype::Element::to_acc(unsafe { *(go.ptr as *const T).add(i) })),
                    Some(s) => {
                        if w.is_some() {
                            <T as dtype::Element>::from_acc(dtype::Element::to_acc(wt) * s)
                        } else {
                            <T as dtype::Element>::from_acc(s)
                        }
                    }
                };
                let (b, m) = (i / shape.map, i % shape.map);
                // SAFETY: see above.
                unsafe { *gi.add((b * shape.classes + t as usize) * shape.map + m) = v };
            }
            Ok(())
        })
    }, else Err(crate::engine::dtype::not_implemented(name, dtype)))
}

/// `nll_loss2d_backward`: a new gradient, then the `.grad_input` form.
#[allow(clippy::too_many_arguments)]
pub fn backward_new(
    kind: Nll,
    grad_output: TensorRef<'_>,
    input: TensorRef<'_>,
    target: TensorRef<'_>,
    weight: Option<TensorRef<'_>>,
    reduction: i64,
    ignore_index: i64,
    total_weight: TensorRef<'_>,
) -> Result<Tensor> {
    let gi = new_tensor(input.sizes(), DType::from_scalar_type(input.dtype())?)?;
    backward(kind, grad_output, input, target, weight, reduction, ignore_index, total_weight, gi.as_ref())?;
    Ok(gi)
}

// ---------------------------------------------------------------------------------------------
// Elementwise losses
// ---------------------------------------------------------------------------------------------

/// The mean or sum of every element of `loss` into `out` (`Loss.cpp`'s `apply_loss_reduction`
/// and the structured kernels' `mean_out` / `sum_out`).
fn reduce_all(loss: TensorRef<'_>, reduction: i64, out: TensorRef<'_>) -> Result<()> {
    let mask = vec![true; loss.dim()];
    let dtype = dtype_of(&out)?;
    if reduction == MEAN {
        r::reduce_into(&r::Sum::<false, true>, loss, dtype, &mask, false, &[out])
    } else {
        r::reduce_into(&r::Sum::<false, false>, loss, dtype, &mask, false, &[out])
    }
}

/// A two-input loss row into `out`: directly when unreduced, else through a temporary.
pub fn loss_out<Op: Pointwise<2>>(
    op: &Op,
    x: TensorRef<'_>,
    y: TensorRef<'_>,
    reduction: i64,
    out: TensorRef<'_>,
) -> Result<()> {
    let inputs = [Input::Tensor(x), Input::Tensor(y)];
    if reduction == NONE {
        return pointwise::run(op, inputs, out);
    }
    let loss = pointwise::functional(op, inputs)?;
    reduce_all(loss.as_ref(), reduction, out)
}

/// A loss's functional form (`huber_loss`): the result has the input's dtype.
pub fn loss_new<Op: Pointwise<2>>(op: &Op, x: TensorRef<'_>, y: TensorRef<'_>, reduction: i64) -> Result<Tensor> {
    let loss = pointwise::functional(op, [Input::Tensor(x), Input::Tensor(y)])?;
    if reduction == NONE {
        return Ok(loss);
    }
    let out = new_tensor(&[], DType::from_scalar_type(loss.as_ref().dtype())?)?;
    reduce_all(loss.as_ref(), reduction, out.as_ref())?;
    Ok(out)
}

/// `1/numel` (times `scale`) under reduction=mean, else `scale`: the gradient rows' `norm`.
pub fn norm(x: &TensorRef<'_>, reduction: i64, scale: f64) -> f64 {
    if reduction == MEAN { scale / x.numel() as f64 } else { scale }
}

/// A gradient row `[x, y, g]` into `grad_input`.
pub fn grad_out<Op: Pointwise<3>>(
    op: &Op,
    g: TensorRef<'_>,
    x: TensorRef<'_>,
    y: TensorRef<'_>,
    grad_input: TensorRef<'_>,
) -> Result<()> {
    pointwise::run(op, [Input::Tensor(x), Input::Tensor(y), Input::Tensor(g)], grad_input)
}

/// A gradient row into a new tensor of the input's sizes.
pub fn grad_new<Op: Pointwise<3>>(op: &Op, g: TensorRef<'_>, x: TensorRef<'_>, y: TensorRef<'_>) -> Result<Tensor> {
    let gi = new_tensor(x.sizes(), DType::from_scalar_type(x.dtype())?)?;
    grad_out(op, g, x, y, gi.as_ref())?;
    Ok(gi)
}

fn check_positive(v: f64, what: &str, op: &str, strict: bool) -> Result<()> {
    if (strict && v <= 0.0) || v < 0.0 {
        let which = if strict { "non-positive" } else { "negative" };
        return Err(Error::runtime(format!("{op} does not support {which} values for {what}.")));
    }
    Ok(())
}

pub fn smooth_l1(beta: f64) -> Result<pw::SmoothL1Loss> {
    check_positive(beta, "beta", "smooth_l1_loss", false)?;
    Ok(pw::SmoothL1Loss { beta })
}

pub fn huber(delta: f64) -> Result<pw::HuberLoss> {
    check_positive(delta, "delta", "huber_loss", true)?;
    Ok(pw::HuberLoss { delta })
}

/// Every element of `t` in [0, 1], as CPU's kernel checks each one.
fn check_unit(t: &TensorRef<'_>, what: &str) -> Result<()> {
    let n = t.numel().max(0) as usize;
    if read_f64(t, n)?.iter().any(|v| !(*v >= 0.0 && *v <= 1.0)) {
        return Err(Error::runtime(format!("all elements of {what} should be between 0 and 1")));
    }
    Ok(())
}

/// `binary_cross_entropy.out`: the clamped log terms, times the weight, then reduced.
pub fn bce_out(
    x: TensorRef<'_>,
    y: TensorRef<'_>,
    weight: Option<TensorRef<'_>>,
    reduction: i64,
    out: TensorRef<'_>,
) -> Result<()> {
    float_dtype(&x, "binary_cross_entropy")?;
    check_unit(&x, "input")?;
    check_unit(&y, "target")?;
    let op = pw::BinaryCrossEntropy {};
    let inputs = [Input::Tensor(x), Input::Tensor(y)];
    let tmp = if reduction == NONE { None } else { Some(pointwise::functional(&op, inputs)?) };
    let loss = tmp.as_ref().map_or(out, |t| t.as_ref());
    if reduction == NONE {
        pointwise::run(&op, inputs, out)?;
    }
    if let Some(w) = weight {
        binary::run::<binary::ops::Mul>(Input::Tensor(loss), Input::Tensor(w), None, loss)?;
    }
    if reduction == NONE { Ok(()) } else { reduce_all(loss, reduction, out) }
}

pub fn bce(x: TensorRef<'_>, y: TensorRef<'_>, weight: Option<TensorRef<'_>>, reduction: i64) -> Result<Tensor> {
    let dtype = DType::from_scalar_type(x.dtype())?;
    let out = new_tensor(if reduction == NONE { x.sizes() } else { &[] }, dtype)?;
    bce_out(x, y, weight, reduction, out.as_ref())?;
    Ok(out)
}

/// `binary_cross_entropy_backward.grad_input`: `g·(x - y) / max((1 - x)·x, 1e-12)`, times the
/// weight, divided by numel under reduction=mean.
pub fn bce_backward_out(
    g: TensorRef<'_>,
    x: TensorRef<'_>,
    y: TensorRef<'_>,
    weight: Option<TensorRef<'_>>,
    reduction: i64,
    grad_input: TensorRef<'_>,
) -> Result<()> {
    float_dtype(&x, "binary_cross_entropy_backward")?;
    pointwise::run(
        &pw::BinaryCrossEntropyBackward {},
        [Input::Tensor(g), Input::Tensor(x), Input::Tensor(y)],
        grad_input,
    )?;
    if let Some(w) = weight {
        binary::run::<binary::ops::Mul>(Input::Tensor(grad_input), Input::Tensor(w), None, grad_input)?;
    }
    if reduction == MEAN {
        let n = Scalar::Int(x.numel());
        binary::run::<binary::ops::Div>(Input::Tensor(grad_input), Input::Scalar(n), None, grad_input)?;
    }
    Ok(())
}

pub fn bce_backward(
    g: TensorRef<'_>,
    x: TensorRef<'_>,
    y: TensorRef<'_>,
    weight: Option<TensorRef<'_>>,
    reduction: i64,
) -> Result<Tensor> {
    let gi = new_tensor(x.sizes(), DType::from_scalar_type(x.dtype())?)?;
    bce_backward_out(g, x, y, weight, reduction, gi.as_ref())?;
    Ok(gi)
}

// ---------------------------------------------------------------------------------------------
// Margin losses
// ---------------------------------------------------------------------------------------------

/// `frames × dim` of a margin loss's input (`[dim]` or `[]` is one frame), with CPU's check.
fn margin_shape(input: &TensorRef<'_>) -> Result<(usize, usize)> {
    let x = input.sizes();
    let valid = (x.len() == 2 && x[1] != 0) || (x.len() == 1 && x[0] != 0) || x.is_empty();
    if !valid {
        return Err(Error::runtime(format!(
            "Expected non-empty vector or matrix with optional 0-dim batch size, but got: {}",
            fmt_sizes(x)
        )));
    }
    Ok(match x.len() {
        0 => (1, 1),
        1 => (1, x[0] as usize),
        _ => (x[0] as usize, x[1] as usize),
    })
}

/// A float (f32/f64) tensor's elements in row-major order, of the input's dtype.
fn margin_data<T: Real>(t: &TensorRef<'_>, dtype: DType, n: usize) -> Result<Vec<T>> {
    let have = DType::from_scalar_type(t.dtype())?;
    if have != dtype {
        return Err(dtype_mismatch(dtype, have));
    }
    let d = dense(t)?;
    // SAFETY: the dense data holds the tensor's n elements of type T (its dtype was checked).
    Ok(unsafe { std::slice::from_raw_parts(d.ptr as *const T, n) }.to_vec())
}

/// The int64 targets in row-major order.
fn long_targets(target: &TensorRef<'_>) -> Result<Vec<i64>> {
    let dtype = DType::from_scalar_type(target.dtype())?;
    if dtype != DType::I64 {
        return Err(dtype_mismatch(DType::I64, dtype));
    }
    let n = target.numel().max(0) as usize;
    let d = dense(target)?;
    // SAFETY: the dense data holds the target's n int64 elements.
    Ok(unsafe { std::slice::from_raw_parts(d.ptr as *const i64, n) }.to_vec())
}

/// The float dtypes CPU's margin losses dispatch (`AT_DISPATCH_FLOATING_TYPES`).
fn f32_or_f64(t: &TensorRef<'_>, op: &str) -> Result<DType> {
    let d = DType::from_scalar_type(t.dtype())?;
    match d {
        DType::F32 | DType::F64 => Ok(d),
        _ => Err(crate::engine::dtype::not_implemented(op, d)),
    }
}

/// The checked arguments of `multi_margin_loss` and its backward.
struct MultiMargin<T> {
    frames: usize,
    dim: usize,
    x: Vec<T>,
    tgt: Vec<usize>,
    w: Option<Vec<T>>,
    p: i64,
    margin: T,
}

fn multi_margin_args<T: Real>(
    input: &TensorRef<'_>,
    target: &TensorRef<'_>,
    p: Scalar,
    margin: Scalar,
    weight: Option<&TensorRef<'_>>,
    dtype: DType,
) -> Result<MultiMargin<T>> {
    let p = match p {
        Scalar::Float(f) => f as i64,
        other => other.to_f64() as i64,
    };
    if p != 1 && p != 2 {
        return Err(Error::runtime("only p == 1 and p == 2 supported"));
    }
    let (frames, dim) = margin_shape(input)?;
    if target.dim() > 1 || target.numel() as usize != frames {
        return Err(Error::runtime(format!(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of input samples (batch size). Expected target size [{frames}], but got {}. Input has shape {}.",
            fmt_sizes(target.sizes()),
            fmt_sizes(input.sizes())
        )));
    }
    let w = match weight {
        Some(w) if w.is_defined() => {
            if w.dim() > 1 || w.numel() as usize != dim {
                return Err(Error::runtime(format!(
                    "inconsistent weight size, expected {dim} but got {}",
                    fmt_sizes(w.sizes())
                )));
            }
            Some(margin_data::<T>(w, dtype, dim)?)
        }
        _ => None,
    };
    let x = margin_data::<T>(input, dtype, frames * dim)?;
    let raw = long_targets(target)?;
    let mut tgt = Vec::with_capacity(frames);
    for &t in &raw {
        if t < 0 || t as usize >= dim {
            return Err(Error::runtime("target out of range"));
        }
        tgt.push(t as usize);
    }
    Ok(MultiMargin { frames, dim, x, tgt, w, p, margin: T::from_f64(margin.to_f64()) })
}

/// One frame's loss as `multi_margin_inner_sum_cpu`: `Σ_{d≠t} max(0, margin - x[t] + x[d])^p ·
/// w[t]` in the element type, then divided by `dim`.
fn multi_margin_row<T: Real>(a: &MultiMargin<T>, f: usize) -> T {
    let row = &a.x[f * a.dim..(f + 1) * a.dim];
    let t = a.tgt[f];
    let xt = row[t];
    let mut sum = T::zero();
    for (d, &xd) in row.iter().enumerate() {
        if d == t {
            continue;
        }
        let z = a.margin - xt + xd;
        if z > T::zero() {
            let mut h = if a.p == 1 { z } else { z * z };
            if let Some(w) = &a.w {
                h = h * w[t];
            }
            sum = sum + h;
        }
    }
    sum / T::from_f64(a.dim as f64)
}

/// `multi_margin_loss.out`.
#[allow(clippy::too_many_arguments)]
pub fn multi_margin_out(
    input: TensorRef<'_>,
    target: TensorRef<'_>,
    p: Scalar,
    margin: Scalar,
    weight: Option<TensorRef<'_>>,
    reduction: i64,
    out: TensorRef<'_>,
) -> Result<()> {
    let dtype = f32_or_f64(&input, "multi_margin_loss_cpu_kernel")?;
    let sizes = if reduction == NONE && target.dim() > 0 { vec![margin_shape(&input)?.0 as i64] } else { vec![] };
    crate::dispatch!(dtype, [F32, F64], |T| {
        let a = multi_margin_args::<T>(&input, &target, p, margin, weight.as_ref(), dtype)?;
        let loss: Vec<T> = if input.numel() == 0 {
            vec![T::zero(); sizes.iter().product::<i64>() as usize]
        } else if !sizes.is_empty() {
            (0..a.frames).map(|f| multi_margin_row(&a, f)).collect()
        } else {
            // CPU's accumulator is double for both dtypes.
            let mut sum = 0f64;
            for f in 0..a.frames {
                sum += Real::to_f64(multi_margin_row(&a, f));
            }
            if reduction == MEAN {
                sum /= a.frames as f64;
            }
            vec![T::from_f64(sum)]
        };
        into_out(&out, &sizes, dtype, |o| {
            // SAFETY: the output holds `loss.len()` contiguous elements.
            unsafe { std::ptr::copy_nonoverlapping(loss.as_ptr(), o as *mut T, loss.len()) };
            Ok(())
        })
    }, else Err(crate::engine::dtype::not_implemented("multi_margin_loss_cpu_kernel", dtype)))
}

pub fn multi_margin(
    input: TensorRef<'_>,
    target: TensorRef<'_>,
    p: Scalar,
    margin: Scalar,
    weight: Option<TensorRef<'_>>,
    reduction: i64,
) -> Result<Tensor> {
    let out = new_tensor(&[0], DType::from_scalar_type(input.dtype())?)?;
    multi_margin_out(input, target, p, margin, weight, reduction, out.as_ref())?;
    Ok(out)
}

/// The per-frame gradient factors of a margin loss's backward: one scalar (reduced, or a 0-dim
/// gradient) or one per frame.
fn frame_scales<T: Real>(grad_output: &TensorRef<'_>, reduction: i64, frames: usize, dtype: DType) -> Result<Vec<T>> {
    if reduction != NONE || grad_output.dim() == 0 {
        if grad_output.numel() < 1 {
            return Err(Error::runtime("grad_output must hold one element"));
        }
        return Ok(vec![margin_data::<T>(grad_output, dtype, 1)?[0]; frames]);
    }
    if grad_output.dim() != 1 || grad_output.sizes()[0] as usize != frames {
        return Err(Error::runtime(format!(
            "Expected a tensor of dimension 1 and tensor.size[0] == {frames} but got: dimension {} and tensor.size[0] = {}",
            grad_output.dim(),
            grad_output.sizes()[0]
        )));
    }
    margin_data::<T>(grad_output, dtype, frames)
}

/// `multi_margin_loss_backward.grad_input`, as `multi_margin_loss_backward_cpu_kernel`.
#[allow(clippy::too_many_arguments)]
pub fn multi_margin_backward_out(
    grad_output: TensorRef<'_>,
    input: TensorRef<'_>,
    target: TensorRef<'_>,
    p: Scalar,
    margin: Scalar,
    weight: Option<TensorRef<'_>>,
    reduction: i64,
    grad_input: TensorRef<'_>,
) -> Result<()> {
    let dtype = f32_or_f64(&input, "multi_margin_loss_backward_cpu_kernel")?;
    crate::dispatch!(dtype, [F32, F64], |T| {
        let a = multi_margin_args::<T>(&input, &target, p, margin, weight.as_ref(), dtype)?;
        let mut gi = vec![T::zero(); a.frames * a.dim];
        if input.numel() > 0 {
            let scale = frame_scales::<T>(&grad_output, reduction, a.frames, dtype)?;
            let n = if reduction == MEAN { a.frames * a.dim } else { a.dim };
            let g = T::from_f64(1.0 / n as f64);
            for (f, grow) in gi.chunks_mut(a.dim).enumerate() {
                let row = &a.x[f * a.dim..(f + 1) * a.dim];
                let t = a.tgt[f];
                let xt = row[t];
                let mut gt = T::zero();
                for (d, &xd) in row.iter().enumerate() {
                    let z = a.margin - xt + xd;
                    if d == t {
                        continue;
                    }
                    if z > T::zero() {
                        let mut h = if a.p == 1 { g } else { T::from_f64(2.0) * g * z };
                        if let Some(w) = &a.w {
                            h *= w[t];
                        }
                        gt -= h;
                        grow[d] = h;
                    } else {
                        grow[d] = T::zero();
                    }
                }
                grow[t] = gt;
                for v in grow.iter_mut() {
                    *v *= scale[f];
                }
            }
        }
        into_out(&grad_input, input.sizes(), dtype, |o| {
            // SAFETY: the gradient holds `gi.len()` contiguous elements.
            unsafe { std::ptr::copy_nonoverlapping(gi.as_ptr(), o as *mut T, gi.len()) };
            Ok(())
        })
    }, else Err(crate::engine::dtype::not_implemented("multi_margin_loss_backward_cpu_kernel", dtype)))
}

#[allow(clippy::too_many_arguments)]
pub fn multi_margin_backward(
    grad_output: TensorRef<'_>,
    input: TensorRef<'_>,
    target: TensorRef<'_>,
    p: Scalar,
    margin: Scalar,
    weight: Option<TensorRef<'_>>,
    reduction: i64,
) -> Result<Tensor> {
    let gi = new_tensor(input.sizes(), DType::from_scalar_type(input.dtype())?)?;
    multi_margin_backward_out(grad_output, input, target, p, margin, weight, reduction, gi.as_ref())?;
    Ok(gi)
}

/// The checked targets of `multilabel_margin_loss`: per frame the labels before the first
/// negative one, and the frame's `is_target` row.
struct MultiLabel {
    frames: usize,
    dim: usize,
    labels: Vec<Vec<usize>>,
}

fn multilabel_args(input: &TensorRef<'_>, target: &TensorRef<'_>, arg: usize) -> Result<MultiLabel> {
    let (frames, dim) = margin_shape(input)?;
    let t = target.sizes();
    let ok = if input.dim() <= 1 {
        t.len() <= 1 && target.numel() as usize == dim
    } else {
        t.len() == 2 && t[0] as usize == frames && t[1] as usize == dim
    };
    if !ok {
        return Err(Error::runtime(format!(
            "inconsistent target size: {} for input of size: {}",
            fmt_sizes(t),
            fmt_sizes(input.sizes())
        )));
    }
    if input.numel() == 0 {
        return Ok(MultiLabel { frames, dim, labels: vec![] });
    }
    let raw = long_targets(target)?;
    if raw.iter().any(|&v| v < -1 || v >= dim as i64) {
        return Err(Error::runtime(format!("argument #{arg} 'target' is out of range")));
    }
    let labels =
        raw.chunks(dim.max(1)).map(|row| row.iter().take_while(|&&v| v >= 0).map(|&v| v as usize).collect()).collect();
    Ok(MultiLabel { frames, dim, labels })
}

/// `multilabel_margin_loss_forward.output`, as `multilabel_margin_loss_forward_out_frame`.
pub fn multilabel_forward_out(
    input: TensorRef<'_>,
    target: TensorRef<'_>,
    reduction: i64,
    output: TensorRef<'_>,
    is_target: TensorRef<'_>,
) -> Result<()> {
    let dtype = f32_or_f64(&input, "multilabel_margin_loss_forward_out_frame")?;
    let a = multilabel_args(&input, &target, 2)?;
    let sizes = if reduction != NONE || target.dim() <= 1 { vec![] } else { vec![a.frames as i64] };
    crate::dispatch!(dtype, [F32, F64], |T| {
        let mut ist = vec![T::zero(); target.numel().max(0) as usize];
        let mut loss: Vec<T> = vec![T::zero(); if sizes.is_empty() { 1 } else { a.frames }];
        if input.numel() > 0 {
            let x = margin_data::<T>(&input, dtype, a.frames * a.dim)?;
            // Each frame's sum is double (CPU's accumulator) returned in the element type.
            let inner: Vec<T> = (0..a.frames)
                .map(|f| {
                    let row = &x[f * a.dim..(f + 1) * a.dim];
                    let is = &mut ist[f * a.dim..(f + 1) * a.dim];
                    for &l in &a.labels[f] {
                        is[l] = T::one();
                    }
                    let mut sum = 0f64;
                    for &l in &a.labels[f] {
                        let xt = row[l];
                        for (d, &xd) in row.iter().enumerate() {
                            if is[d] == T::zero() {
                                let z = T::one() - xt + xd;
                                if z > T::zero() {
                                    sum += Real::to_f64(z);
                                }
                            }
                        }
                    }
                    T::from_f64(sum)
                })
                .collect();
            if sizes.is_empty() {
                let mut sum = 0f64;
                for v in &inner {
                    sum += Real::to_f64(*v);
                }
                sum /= a.dim as f64;
                if reduction == MEAN {
                    sum /= a.frames as f64;
                }
                loss[0] = T::from_f64(sum);
            } else {
                for (l, v) in loss.iter_mut().zip(&inner) {
                    *l = *v / T::from_f64(a.dim as f64);
                }
            }
        }
        into_out(&is_target, target.sizes(), dtype, |o| {
            // SAFETY: is_target holds `ist.len()` contiguous elements.
            unsafe { std::ptr::copy_nonoverlapping(ist.as_ptr(), o as *mut T, ist.len()) };
            Ok(())
        })?;
        into_out(&output, &sizes, dtype, |o| {
            // SAFETY: the output holds `loss.len()` contiguous elements.
            unsafe { std::ptr::copy_nonoverlapping(loss.as_ptr(), o as *mut T, loss.len()) };
            Ok(())
        })
    }, else Err(crate::engine::dtype::not_implemented("multilabel_margin_loss_forward_out_frame", dtype)))
}

pub fn multilabel_forward(input: TensorRef<'_>, target: TensorRef<'_>, reduction: i64) -> Result<(Tensor, Tensor)> {
    let dtype = DType::from_scalar_type(input.dtype())?;
    let (out, ist) = (new_tensor(&[0], dtype)?, new_tensor(&[0], dtype)?);
    multilabel_forward_out(input, target, reduction, out.as_ref(), ist.as_ref())?;
    Ok((out, ist))
}

/// `multilabel_margin_loss_backward.grad_input`, as `multilabel_margin_loss_backward_out_frame`.
pub fn multilabel_backward_out(
    grad_output: TensorRef<'_>,
    input: TensorRef<'_>,
    target: TensorRef<'_>,
    reduction: i64,
    is_target: TensorRef<'_>,
    grad_input: TensorRef<'_>,
) -> Result<()> {
    let dtype = f32_or_f64(&input, "multilabel_margin_loss_backward_out_frame")?;
    let a = multilabel_args(&input, &target, 3)?;
    if target.sizes() != is_target.sizes() {
        return Err(Error::runtime(format!(
            "Expected tensor for argument #3 'target' to have same size as tensor for argument #5 'is_target'; but {} does not equal {} (while checking arguments for multilabel_margin_loss_backward_cpu_template)",
            fmt_sizes(target.sizes()),
            fmt_sizes(is_target.sizes())
        )));
    }
    crate::dispatch!(dtype, [F32, F64], |T| {
        let mut gi = vec![T::zero(); a.frames * a.dim];
        if input.numel() > 0 {
            let ist = margin_data::<T>(&is_target, dtype, a.frames * a.dim)?;
            if ist.iter().any(|&v| !(v >= T::zero() && v <= T::one())) {
                return Err(Error::runtime("argument #5 'is_target' is out of range"));
            }
            let x = margin_data::<T>(&input, dtype, a.frames * a.dim)?;
            let n = if reduction == MEAN { a.frames * a.dim } else { a.dim };
            let g = T::from_f64(1.0 / n as f64);
            for (f, grow) in gi.chunks_mut(a.dim).enumerate() {
                let row = &x[f * a.dim..(f + 1) * a.dim];
                let is = &ist[f * a.dim..(f + 1) * a.dim];
                for &l in &a.labels[f] {
                    let xt = row[l];
                    for (d, &xd) in row.iter().enumerate() {
                        if is[d] == T::zero() {
                            let z = T::one() - xt + xd;
                            if z > T::zero() {
                                grow[l] -= g;
                                grow[d] += g;
                            }
                        }
                    }
                }
            }
            let scale = frame_scales::<T>(&grad_output, reduction, a.frames, dtype)?;
            for (grow, &s) in gi.chunks_mut(a.dim).zip(&scale) {
                for v in grow.iter_mut() {
                    *v *= s;
                }
            }
        }
        into_out(&grad_input, input.sizes(), dtype, |o| {
            // SAFETY: the gradient holds `gi.len()` contiguous elements.
            unsafe { std::ptr::copy_nonoverlapping(gi.as_ptr(), o as *mut T, gi.len()) };
            Ok(())
        })
    }, else Err(crate::engine::dtype::not_implemented("multilabel_margin_loss_backward_out_frame", dtype)))
}

pub fn multilabel_backward(
    grad_output: TensorRef<'_>,
    input: TensorRef<'_>,
    target: TensorRef<'_>,
    reduction: i64,
    is_target: TensorRef<'_>,
) -> Result<Tensor> {
    let gi = new_tensor(input.sizes(), DType::from_scalar_type(input.dtype())?)?;
    multilabel_backward_out(grad_output, input, target, reduction, is_target, gi.as_ref())?;
    Ok(gi)
}

/// This family's kernels: group `loss` of regen.toml's `[implement]`.
impl crate::LossKernels for crate::Reference {
    fn nll_loss_forward_output(
        &self,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        reduction: i64,
        ignore_index: i64,
        output: TensorRef<'_>,
        total_weight: TensorRef<'_>,
    ) -> Result<()> {
        use {Nll, forward};
        forward(Nll::D1, self_, target, weight, reduction, ignore_index, output, total_weight)
    }
    fn nll_loss_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        reduction: i64,
        ignore_index: i64,
        total_weight: TensorRef<'_>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use {Nll, backward};
        backward(Nll::D1, grad_output, self_, target, weight, reduction, ignore_index, total_weight, grad_input)
    }
    fn nll_loss2d_forward_output(
        &self,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        reduction: i64,
        ignore_index: i64,
        output: TensorRef<'_>,
        total_weight: TensorRef<'_>,
    ) -> Result<()> {
        use {Nll, forward};
        forward(Nll::D2, self_, target, weight, reduction, ignore_index, output, total_weight)
    }
    fn nll_loss2d_forward(
        &self,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        reduction: i64,
        ignore_index: i64,
    ) -> Result<(Tensor, Tensor)> {
        use {Nll, forward_new};
        forward_new(Nll::D2, self_, target, weight, reduction, ignore_index)
    }
    fn nll_loss2d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        reduction: i64,
        ignore_index: i64,
        total_weight: TensorRef<'_>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use {Nll, backward};
        backward(Nll::D2, grad_output, self_, target, weight, reduction, ignore_index, total_weight, grad_input)
    }
    fn nll_loss2d_backward(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        reduction: i64,
        ignore_index: i64,
        total_weight: TensorRef<'_>,
    ) -> Result<Tensor> {
        use {Nll, backward_new};
        backward_new(Nll::D2, grad_output, self_, target, weight, reduction, ignore_index, total_weight)
    }
    fn mse_loss_out(
        &self,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        reduction: i64,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::{ops::loss, ops::pointwise::ops as pw};
        loss::loss_out(&pw::MseLoss {}, self_, target, reduction, out)
    }
    fn mse_loss_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        reduction: i64,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use crate::{ops::loss, ops::pointwise::ops as pw};
        let op = pw::MseLossBackward { norm: loss::norm(&self_, reduction, 2.0) };
        loss::grad_out(&op, grad_output, self_, target, grad_input)
    }
    fn mse_loss_backward(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        reduction: i64,
    ) -> Result<Tensor> {
        use crate::{ops::loss, ops::pointwise::ops as pw};
        let op = pw::MseLossBackward { norm: loss::norm(&self_, reduction, 2.0) };
        loss::grad_new(&op, grad_output, self_, target)
    }
    fn smooth_l1_loss_out(
        &self,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        reduction: i64,
        beta: f64,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::ops::loss;
        loss::loss_out(&loss::smooth_l1(beta)?, self_, target, reduction, out)
    }
    fn smooth_l1_loss_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        reduction: i64,
        beta: f64,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use crate::{ops::loss, ops::pointwise::ops as pw};
        let op = pw::SmoothL1LossBackward { norm: loss::norm(&self_, reduction, 1.0), beta };
        loss::grad_out(&op, grad_output, self_, target, grad_input)
    }
    fn huber_loss_out(
        &self,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        reduction: i64,
        delta: f64,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::ops::loss;
        loss::loss_out(&loss::huber(delta)?, self_, target, reduction, out)
    }
    fn huber_loss(&self, self_: TensorRef<'_>, target: TensorRef<'_>, reduction: i64, delta: f64) -> Result<Tensor> {
        use crate::ops::loss;
        loss::loss_new(&loss::huber(delta)?, self_, target, reduction)
    }
    fn huber_loss_backward_out(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        reduction: i64,
        delta: f64,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use crate::{ops::loss, ops::pointwise::ops as pw};
        let op = pw::HuberLossBackward { norm: loss::norm(&self_, reduction, 1.0), delta };
        loss::grad_out(&op, grad_output, self_, target, grad_input)
    }
    fn binary_cross_entropy(
        &self,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        reduction: i64,
    ) -> Result<Tensor> {
        bce(self_, target, weight, reduction)
    }
    fn binary_cross_entropy_out(
        &self,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        reduction: i64,
        out: TensorRef<'_>,
    ) -> Result<()> {
        bce_out(self_, target, weight, reduction, out)
    }
    fn binary_cross_entropy_backward(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        reduction: i64,
    ) -> Result<Tensor> {
        bce_backward(grad_output, self_, target, weight, reduction)
    }
    fn binary_cross_entropy_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        reduction: i64,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        bce_backward_out(grad_output, self_, target, weight, reduction, grad_input)
    }
    fn multi_margin_loss_out(
        &self,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        p: Scalar,
        margin: Scalar,
        weight: Option<TensorRef<'_>>,
        reduction: i64,
        out: TensorRef<'_>,
    ) -> Result<()> {
        multi_margin_out(self_, target, p, margin, weight, reduction, out)
    }
    fn multi_margin_loss(
        &self,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        p: Scalar,
        margin: Scalar,
        weight: Option<TensorRef<'_>>,
        reduction: i64,
    ) -> Result<Tensor> {
        multi_margin(self_, target, p, margin, weight, reduction)
    }
    fn multi_margin_loss_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        p: Scalar,
        margin: Scalar,
        weight: Option<TensorRef<'_>>,
        reduction: i64,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use multi_margin_backward_out;
        multi_margin_backward_out(grad_output, self_, target, p, margin, weight, reduction, grad_input)
    }
    fn multi_margin_loss_backward(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        p: Scalar,
        margin: Scalar,
        weight: Option<TensorRef<'_>>,
        reduction: i64,
    ) -> Result<Tensor> {
        multi_margin_backward(grad_output, self_, target, p, margin, weight, reduction)
    }
    fn multilabel_margin_loss_forward_output(
        &self,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        reduction: i64,
        output: TensorRef<'_>,
        is_target: TensorRef<'_>,
    ) -> Result<()> {
        multilabel_forward_out(self_, target, reduction, output, is_target)
    }
    fn multilabel_margin_loss_forward(
        &self,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        reduction: i64,
    ) -> Result<(Tensor, Tensor)> {
        multilabel_forward(self_, target, reduction)
    }
    fn multilabel_margin_loss_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        reduction: i64,
        is_target: TensorRef<'_>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use multilabel_backward_out;
        multilabel_backward_out(grad_output, self_, target, reduction, is_target, grad_input)
    }
    fn multilabel_margin_loss_backward(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        target: TensorRef<'_>,
        reduction: i64,
        is_target: TensorRef<'_>,
    ) -> Result<Tensor> {
        multilabel_backward(grad_output, self_, target, reduction, is_target)
    }
}
