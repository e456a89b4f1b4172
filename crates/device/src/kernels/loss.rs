//! Loss functions: `nll_loss` and `nll_loss2d` (forward and backward), in the order of operations
//! of ATen's CPU kernels (`LossNLL.cpp`, `LossNLL2d.cpp`), and the elementwise losses (mse,
//! smooth L1, Huber, binary cross-entropy) as `Loss.cpp` composes them: a pointwise row of
//! [`super::pointwise`] for the unreduced loss or its gradient, then the reduction engine's mean or
//! sum.
//!
//! Both losses are one engine over `batch × classes × map` (`map` the spatial positions of
//! nll_loss2d, 1 for nll_loss): the unreduced loss per target in parallel, the reduced loss in
//! CPU's cascade of partial sums kept in the element type (so float16 and bfloat16 round where
//! CPU's do and every dtype equals CPU bit for bit).

use regen_runtime::{Error, Result, Scalar, Tensor, TensorRef};

use super::binary;
use super::dtype::DType;
use super::iter::{Input, fmt_sizes, new_tensor};
use super::norm::{Elem, dense, float_dtype, into_out, read_f64};
use super::pointwise::{self, Pointwise, ops as pw};
use super::reduce as r;

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
fn rd<T: Elem>(a: T::A) -> T::A {
    T::st(a).ld()
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
            let mut loss = vec![T::st(Default::default()); tgt.len()];
            unreduced_loss::<T>(&shape, x.ptr, &tgt, w.as_deref(), ignore_index, &mut loss)?;
            (loss, T::st(Default::default()))
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
    }, else Err(crate::kernels::shape::not_implemented(name, dtype)))
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
            *l = T::st(Default::default());
            continue;
        }
        if t < 0 || t as usize >= s.classes {
            return Err(out_of_bounds(t));
        }
        let (b, m) = (i / s.map, i % s.map);
        // SAFETY: b < batch, t < classes, m < map index the dense input.
        let v = unsafe { *x.add((b * s.classes + t as usize) * s.map + m) };
        let wt = w.map_or(T::st(num_traits::One::one()), |w| w[t as usize]);
        *l = T::st(-v.ld() * wt.ld());
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
    let zero = T::A::zero();
    if tgt.is_empty() {
        let l = if reduction == MEAN { <T::A as num_traits::Float>::nan() } else { zero };
        return Ok((T::st(l), T::st(zero)));
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
        let v = unsafe { *x.add((b * s.classes + t as usize) * s.map + m) }.ld();
        match w {
            Some(w) => {
                let wt = w[t as usize].ld();
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
        None => rd::<T>(<T::A as super::scalar::Real>::from_f64((tgt.len() - ignored) as f64)),
        Some(_) => wsum.iter().fold(zero, |a, &b| rd::<T>(a + b)),
    };
    let mut out = lsum.iter().fold(zero, |a, &b| rd::<T>(a + b));
    if reduction == MEAN {
        out = rd::<T>(out / total);
    }
    Ok((T::st(out), T::st(total)))
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
            // SAFETY (all writes below): the contiguous grad_input holds n elements, and the
            // target's bounds are checked before its class is written.
            unsafe { std::slice::from_raw_parts_mut(gi, n) }.fill(T::st(Default::default()));
            let one = T::st(num_traits::One::one());
            let scalar = if unreduced {
                None
            } else {
                // SAFETY: single-element tensors.
                let (g, total) = unsafe { ((*(go.ptr as *const T)).ld(), (*(tw.ptr as *const T)).ld()) };
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
                    None => T::st(rd::<T>(-wt.ld()) * unsafe { *(go.ptr as *const T).add(i) }.ld()),
                    Some(s) => {
                        if w.is_some() {
                            T::st(wt.ld() * s)
                        } else {
                            T::st(s)
                        }
                    }
                };
                let (b, m) = (i / shape.map, i % shape.map);
                // SAFETY: see above.
                unsafe { *gi.add((b * shape.classes + t as usize) * shape.map + m) = v };
            }
            Ok(())
        })
    }, else Err(crate::kernels::shape::not_implemented(name, dtype)))
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
    let dtype = r::dtype_of(&out)?;
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

/// The `Kernels` methods of the losses, invoked once in `backend.rs`.
#[macro_export]
macro_rules! loss_methods {
    () => {
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
            use $crate::kernels::loss::{Nll, forward};
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
            use $crate::kernels::loss::{Nll, backward};
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
            use $crate::kernels::loss::{Nll, forward};
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
            use $crate::kernels::loss::{Nll, forward_new};
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
            use $crate::kernels::loss::{Nll, backward};
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
            use $crate::kernels::loss::{Nll, backward_new};
            backward_new(Nll::D2, grad_output, self_, target, weight, reduction, ignore_index, total_weight)
        }
        fn mse_loss_out(
            &self,
            self_: TensorRef<'_>,
            target: TensorRef<'_>,
            reduction: i64,
            out: TensorRef<'_>,
        ) -> Result<()> {
            use $crate::kernels::{loss, pointwise::ops as pw};
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
            use $crate::kernels::{loss, pointwise::ops as pw};
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
            use $crate::kernels::{loss, pointwise::ops as pw};
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
            use $crate::kernels::loss;
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
            use $crate::kernels::{loss, pointwise::ops as pw};
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
            use $crate::kernels::loss;
            loss::loss_out(&loss::huber(delta)?, self_, target, reduction, out)
        }
        fn huber_loss(
            &self,
            self_: TensorRef<'_>,
            target: TensorRef<'_>,
            reduction: i64,
            delta: f64,
        ) -> Result<Tensor> {
            use $crate::kernels::loss;
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
            use $crate::kernels::{loss, pointwise::ops as pw};
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
            $crate::kernels::loss::bce(self_, target, weight, reduction)
        }
        fn binary_cross_entropy_out(
            &self,
            self_: TensorRef<'_>,
            target: TensorRef<'_>,
            weight: Option<TensorRef<'_>>,
            reduction: i64,
            out: TensorRef<'_>,
        ) -> Result<()> {
            $crate::kernels::loss::bce_out(self_, target, weight, reduction, out)
        }
        fn binary_cross_entropy_backward(
            &self,
            grad_output: TensorRef<'_>,
            self_: TensorRef<'_>,
            target: TensorRef<'_>,
            weight: Option<TensorRef<'_>>,
            reduction: i64,
        ) -> Result<Tensor> {
            $crate::kernels::loss::bce_backward(grad_output, self_, target, weight, reduction)
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
            $crate::kernels::loss::bce_backward_out(grad_output, self_, target, weight, reduction, grad_input)
        }
    };
}
