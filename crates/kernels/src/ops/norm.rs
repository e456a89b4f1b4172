//! Softmax, log-softmax, masked softmax, layer norm, batch norm and group norm, forward and
//! backward, in the order of operations of ATen's CPU kernels (`SoftMaxKernel.cpp`,
//! `layer_norm_kernel.cpp`, `batch_norm_kernel.cpp`, `Normalization.cpp`,
//! `group_norm_kernel.cpp`): float16 and bfloat16 compute in f32 as CPU's
//! do, exponentials go through [`crate::math::vmath`] (CPU's are Sleef's, so results agree
//! within a few ulps rather than bit for bit), and the row loops are compiled for AVX2 when the
//! machine has it (as ATen's own kernels are).
//!
//! Every op reduces to one of three shapes: `outer × dim × inner` (softmax along `dim`, rows
//! when `inner` is 1, vertical blocks of columns otherwise), `M × N` rows (layer norm) and
//! `batch × channel × spatial` (batch norm and group norm, any layout whose spatial dimensions
//! coalesce, so channels-last runs in place).

use regen_runtime::args::MemoryFormat;
use regen_runtime::bootstrap::{strides_for, with_size};
use regen_runtime::{Error, Result, ScalarType, Tensor, TensorRef};

use half::{bf16, f16};
use num_traits::{Float, One, Zero};

use crate::engine::dtype::{self, DType, check_out_dtype, float_dtype, not_implemented, torch_name};
use crate::engine::iter::{GRAIN, fmt_sizes, new_tensor, wrap_dim};
use crate::engine::scalar::Real;
use crate::engine::simd_fn;
use crate::math::vmath;
use crate::ops::copy;

// ---------------------------------------------------------------------------------------------
// Element domains
// ---------------------------------------------------------------------------------------------

/// The float type a kernel computes in (CPU's `opmath_type`).
pub trait Flt: Real + Default {
    /// `x[i] = exp(x[i])`, vectorised.
    fn exp_slice(x: &mut [Self]);
}

impl Flt for f32 {
    fn exp_slice(x: &mut [f32]) {
        // SAFETY: in place over the slice's elements.
        unsafe { vmath::exp_f32_raw(x.as_ptr(), x.as_mut_ptr(), x.len()) }
    }
}

impl Flt for f64 {
    fn exp_slice(x: &mut [f64]) {
        // SAFETY: in place over the slice's elements.
        unsafe { vmath::exp_f64_raw(x.as_ptr(), x.as_mut_ptr(), x.len()) }
    }
}

/// A floating element of norm's kernels: an [`Element`](dtype::Element) (loaded with `to_acc`,
/// stored with `from_acc`) whose op-math type `Acc` is a [`Flt`], which brings norm's own
/// operations (`exp_slice`, `Real`'s arithmetic). Every such element is one.
pub trait Elem: dtype::Element<Acc: Flt> {}

impl<T: dtype::Element<Acc: Flt>> Elem for T {}

#[inline(always)]
fn a_of<A: Flt>(x: f64) -> A {
    A::from_f64(x)
}

/// `Real::to_f64` by a name of its own (num-traits' `ToPrimitive::to_f64` shares the other).
trait ToF64 {
    fn to_f64_(self) -> f64;
}
impl<A: Flt> ToF64 for A {
    #[inline(always)]
    fn to_f64_(self) -> f64 {
        Real::to_f64(self)
    }
}

const LANES: usize = 16;
/// Elements of a softmax row exponentiated per step (1 KiB of float: L1-resident, and few enough
/// stores for the store buffer to drain while the next step computes).
const EXP_CHUNK: usize = 256;

/// Maximum of a row over 16 lanes (NaN is absorbed here but reappears through `exp(x - max)`,
/// as on CPU every row with a NaN becomes NaN).
#[inline(always)]
fn lane_max<E: Copy, A: Flt>(x: &[E], f: impl Fn(E) -> A) -> A {
    let mut acc = [A::neg_infinity(); LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for k in 0..LANES {
            acc[k] = acc[k].max(f(c[k]));
        }
    }
    let mut m = A::neg_infinity();
    for v in acc.into_iter().chain(chunks.remainder().iter().map(|&v| f(v))) {
        m = m.max(v);
    }
    m
}

/// The 16 lane accumulators combined pairwise, as a vector reduction.
#[inline(always)]
fn combine_lanes<A: Flt>(mut acc: [A; LANES]) -> A {
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for k in 0..w {
            acc[k] = acc[k] + acc[k + w];
        }
    }
    acc[0]
}

/// Sum of `f(x₀[i], …, x_{K-1}[i])` over the common length of the slices, in 16 lane
/// accumulators combined pairwise (as a vector reduction), then the tail in order.
#[inline(always)]
fn lane_sum<E: Copy, A: Flt, const K: usize>(xs: [&[E]; K], f: impl Fn([E; K]) -> A) -> A {
    let n = xs.iter().map(|x| x.len()).min().unwrap_or(0);
    // SAFETY: every index below is under the shortest slice's length.
    let at = |i: usize| f(std::array::from_fn(|j| unsafe { *xs[j].get_unchecked(i) }));
    let mut acc = [A::zero(); LANES];
    let full = n - n % LANES;
    let mut i = 0;
    while i < full {
        // Each input's block as an array, so the compiler sees sixteen lanes of one vector (read
        // element by element, it paired the accumulators into 2-lane vectors: 40% of a float32
        // layer_norm row's time).
        // SAFETY: i + LANES <= full <= every input's length.
        let block: [&[E; LANES]; K] = std::array::from_fn(|j| unsafe { &*xs[j].as_ptr().add(i).cast::<[E; LANES]>() });
        for (k, a) in acc.iter_mut().enumerate() {
            *a = *a + f(std::array::from_fn(|j| block[j][k]));
        }
        i += LANES;
    }
    let mut s = combine_lanes(acc);
    for j in full..n {
        s = s + at(j);
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Tensor plumbing
// ---------------------------------------------------------------------------------------------

/// ATen's `is_contiguous` (size-1 dimensions' strides do not matter, empty tensors are).
pub(crate) fn is_contiguous(t: &TensorRef<'_>) -> bool {
    regen_runtime::view::is_contiguous(t.sizes(), t.strides())
}

/// A tensor's elements in row-major order at `ptr`: the tensor itself when contiguous, else a
/// contiguous copy (CPU's kernels call `.contiguous()` the same way).
pub(crate) struct Dense {
    _copy: Option<Tensor>,
    pub(crate) ptr: usize,
}

pub(crate) fn dense(t: &TensorRef<'_>) -> Result<Dense> {
    if is_contiguous(t) && !t.is_neg() && !t.is_conj() {
        return Ok(Dense { _copy: None, ptr: t.data_ptr() as usize });
    }
    let c = new_tensor(t.sizes(), DType::from_scalar_type(t.dtype())?)?;
    copy::copy_(c.as_ref(), *t)?;
    let ptr = c.as_ref().data_ptr() as usize;
    Ok(Dense { _copy: Some(c), ptr })
}

/// Runs `f` on the data of a contiguous `out` of `sizes` (resized as `resize_output` does),
/// through a contiguous temporary copied back when `out` is strided.
pub(crate) fn into_out(
    out: &TensorRef<'_>,
    sizes: &[i64],
    dtype: DType,
    f: impl FnOnce(usize) -> Result<()>,
) -> Result<()> {
    check_out_dtype(out, dtype)?;
    with_size(out, sizes, |o| {
        if is_contiguous(o) {
            return f(o.data_ptr() as usize);
        }
        let tmp = new_tensor(sizes, dtype)?;
        f(tmp.as_ref().data_ptr() as usize)?;
        copy::copy_(*o, tmp.as_ref())
    })
}

/// The first `n` elements of a tensor in row-major order, as f64 (exact for every float dtype).
pub(crate) fn read_f64(t: &TensorRef<'_>, n: usize) -> Result<Vec<f64>> {
    let d = dense(t)?;
    let dtype = DType::from_scalar_type(t.dtype())?;
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        // SAFETY: the dense data holds at least n elements (checked by the callers).
        let s = unsafe { std::slice::from_raw_parts(d.ptr as *const T, n) };
        Ok(s.iter().map(|&x| dtype::Element::to_acc(x).to_f64_()).collect())
    }, else Err(not_implemented("batch_norm", dtype)))
}

/// Writes `v` into a 1-d float tensor (any stride) of `v.len()` elements.
fn write_f64(t: &TensorRef<'_>, v: &[f64]) -> Result<()> {
    let dtype = DType::from_scalar_type(t.dtype())?;
    let stride = if t.dim() == 0 { 1 } else { t.strides()[t.dim() - 1] as isize };
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        let p = t.data_ptr() as *mut T;
        for (i, &x) in v.iter().enumerate() {
            // SAFETY: element i of the tensor.
            unsafe { p.offset(i as isize * stride).write(<T as dtype::Element>::from_acc(a_of(x))) };
        }
        Ok(())
    }, else Err(not_implemented("batch_norm", dtype)))
}

/// `v` rounded to `dtype`'s precision.
fn round_to(dtype: DType, v: f64) -> f64 {
    crate::dispatch!(dtype, [F16, BF16, F32], |T| dtype::Element::to_acc(<T as dtype::Element>::from_acc(a_of(v))).to_f64_(), else v)
}

// ---------------------------------------------------------------------------------------------
// Softmax and log-softmax
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Softmax,
    LogSoftmax,
}

/// `outer × dim × inner` of a tensor along `d` (a 0-dim tensor is one row of one).
fn split(sizes: &[i64], d: usize) -> (usize, usize, usize) {
    if sizes.is_empty() {
        return (1, 1, 1);
    }
    let p = |s: &[i64]| s.iter().product::<i64>().max(0) as usize;
    (p(&sizes[..d]), sizes[d].max(0) as usize, p(&sizes[d + 1..]))
}

/// `_softmax` / `_log_softmax` into `out` (resized; functional forms pass a new tensor).
pub fn softmax_out(input: TensorRef<'_>, dim: i64, half_to_float: bool, kind: Kind, out: TensorRef<'_>) -> Result<()> {
    let d = wrap_dim(dim, input.dim())?;
    let dtype = DType::from_scalar_type(input.dtype())?;
    into_out(&out, input.sizes(), if half_to_float { DType::F32 } else { dtype }, |optr| {
        if half_to_float {
            return Err(Error::runtime("softmax with half to float conversion is not supported on CPU"));
        }
        if input.numel() == 0 {
            return Ok(());
        }
        let (outer, n, inner) = split(input.sizes(), d);
        let name = match (kind, inner == 1) {
            (Kind::Softmax, true) => "softmax_lastdim_kernel_impl",
            (Kind::Softmax, false) => "softmax_kernel_impl",
            (Kind::LogSoftmax, true) => "log_softmax_lastdim_kernel_impl",
            (Kind::LogSoftmax, false) => "log_softmax",
        };
        let x = dense(&input)?;
        crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
            softmax_run::<T>(kind, x.ptr, optr, outer, n, inner);
            Ok(())
        }, else Err(not_implemented(name, dtype)))
    })
}

pub fn softmax(input: TensorRef<'_>, dim: i64, half_to_float: bool, kind: Kind) -> Result<Tensor> {
    let dtype = DType::from_scalar_type(input.dtype())?;
    let out = new_tensor(input.sizes(), if half_to_float { DType::F32 } else { dtype })?;
    softmax_out(input, dim, half_to_float, kind, out.as_ref())?;
    Ok(out)
}

/// Columns per vertical block: a block of `dim × CHUNK` elements fills about 128 KiB (L2), as
/// CPU's `_vec_logsoftmax` blocks.
fn chunk_for(n: usize, elem: usize) -> usize {
    // At least 64 columns, so the per-row work is not all call overhead.
    ((128 * 1024 / n.max(1) / elem).max(4 * LANES) / LANES) * LANES
}

fn softmax_run<T: Elem>(kind: Kind, xp: usize, yp: usize, outer: usize, n: usize, inner: usize) {
    let esz = std::mem::size_of::<T>();
    if inner == 1 {
        let grain = (GRAIN / (16 * n.max(1))).max(1);
        regen_runtime::host::parallel_for(outer, grain, |a, b| {
            let mut buf = vec![T::Acc::default(); n];
            for r in a..b {
                // SAFETY: row r of the contiguous input and output.
                let (x, y) = unsafe {
                    (
                        std::slice::from_raw_parts((xp as *const T).add(r * n), n),
                        std::slice::from_raw_parts_mut((yp as *mut T).add(r * n), n),
                    )
                };
                match kind {
                    Kind::Softmax => softmax_row::<T>(x, y, &mut buf),
                    Kind::LogSoftmax => log_softmax_row::<T>(x, y, &mut buf),
                }
            }
        });
        return;
    }
    let chunk = chunk_for(n, esz);
    let chunks = inner.div_ceil(chunk);
    let grain = (GRAIN / (16 * n * chunk)).max(1);
    regen_runtime::host::parallel_for(outer * chunks, grain, |a, b| {
        let mut mx = vec![T::Acc::default(); chunk];
        let mut sum = vec![T::Acc::default(); chunk];
        let mut e = vec![T::Acc::default(); if kind == Kind::Softmax { n * chunk } else { chunk }];
        for u in a..b {
            let (o, k) = (u / chunks, u % chunks);
            let j0 = k * chunk;
            let len = chunk.min(inner - j0);
            let base = o * n * inner + j0;
            softmax_block::<T>(kind, xp, yp, base, n, inner, len, &mut mx, &mut sum, &mut e);
        }
    });
}

simd_fn! {
    /// One softmax row, as `_vec_softmax_lastdim`: max, exp(x - max) and its sum, times 1/sum.
    fn softmax_row<T: Elem>(x: &[T], y: &mut [T], buf: &mut [T::Acc]) {
        if std::mem::size_of::<T>() != std::mem::size_of::<T::Acc>() {
            // float16 and bfloat16: the exponentials stay in float until the scaling, as CPU's;
            // the row is widened once and narrowed once (float16 by the conversion instructions).
            T::widen_slice(x, buf);
            let m = lane_max(buf, |v| v);
            for b in buf.iter_mut() {
                *b = *b - m;
            }
            T::Acc::exp_slice(buf);
            let inv = T::Acc::one() / lane_sum([&*buf], |[v]| v);
            for b in buf.iter_mut() {
                *b = *b * inv;
            }
            T::narrow_slice(buf, y);
            return;
        }
        let m = lane_max(x, |v| v.to_acc());
        // Float and double: the exponentials go to the output a few hundred at a time, as CPU's
        // `vec::map` writes them, so the first (cold) stores to the output overlap the next
        // chunk's exponentials instead of making a store-only pass of their own; the sum and
        // the scaling then find the row in L1.
        // (T is T::Acc here, as equal sizes mean for the element types of `Elem`: the differences
        // go to the output and are exponentiated in place.)
        for (xc, yc) in x.chunks(EXP_CHUNK).zip(y.chunks_mut(EXP_CHUNK)) {
            for (o, &v) in yc.iter_mut().zip(xc) {
                *o = T::from_acc(v.to_acc() - m);
            }
            // SAFETY: T and T::Acc are the same type (equal sizes, checked above), so the chunk
            // is a slice of T::Acc.
            let yc = unsafe { std::slice::from_raw_parts_mut(yc.as_mut_ptr() as *mut T::Acc, yc.len()) };
            T::Acc::exp_slice(yc);
        }
        let inv = T::Acc::one() / lane_sum([&*y], |[v]| v.to_acc());
        for o in y.iter_mut() {
            *o = T::from_acc(o.to_acc() * inv);
        }
    }
}

simd_fn! {
    /// One log-softmax row, as `_vec_log_softmax_lastdim`: max, log of the sum of exp(x - max),
    /// then `x - max - logsum` in that order.
    fn log_softmax_row<T: Elem>(x: &[T], y: &mut [T], tmp: &mut [T::Acc]) {
        // float16 is widened a row at a time, by the conversion instructions (twice: once for
        // the exponentials, once for the output), and narrowed so.
        if T::BLOCK_CONVERT {
            T::widen_slice(x, tmp);
        }
        let m = if T::BLOCK_CONVERT { lane_max(tmp, |v| v) } else { lane_max(x, |v| v.to_acc()) };
        if T::BLOCK_CONVERT {
            for t in tmp.iter_mut() {
                *t = *t - m;
            }
        } else {
            for (t, &v) in tmp.iter_mut().zip(x) {
                *t = v.to_acc() - m;
            }
        }
        T::Acc::exp_slice(tmp);
        let s = lane_sum([&*tmp], |[v]| v);
        // CPU keeps a row's sum and its log in the element type (float16 and bfloat16 round).
        let ls = if std::mem::size_of::<T>() == 2 { T::from_acc(T::from_acc(s).to_acc().ln()).to_acc() } else { s.ln() };
        if T::BLOCK_CONVERT {
            T::widen_slice(x, tmp);
            for t in tmp.iter_mut() {
                *t = *t - m - ls;
            }
            T::narrow_slice(tmp, y);
            return;
        }
        for (o, &v) in y.iter_mut().zip(x) {
            *o = T::from_acc(v.to_acc() - m - ls);
        }
    }
}

simd_fn! {
    /// A block of `len` columns of one outer index along a non-last dim, as `_vec_softmax`:
    /// per column the max, the sum of exp(x - max) in the dim's order, then exp/sum (softmax)
    /// or x - max - log(sum) (log-softmax, as `host_softmax`).
    fn softmax_block<T: Elem>(
        kind: Kind, xp: usize, yp: usize, base: usize, n: usize, inner: usize, len: usize,
        mx: &mut [T::Acc], sum: &mut [T::Acc], e: &mut [T::Acc],
    ) {
        // SAFETY: for d < n, row d (len columns from base + d·inner) lies inside the contiguous
        // input (and, for the blocks below, output) of outer·n·inner elements: the caller passes
        // base = o·n·inner + j0 with o < outer and j0 + len <= inner.
        let row = |d: usize| unsafe { std::slice::from_raw_parts((xp as *const T).add(base + d * inner), len) };
        let (mx, sum) = (&mut mx[..len], &mut sum[..len]);
        for (m, &v) in mx.iter_mut().zip(row(0)) {
            *m = v.to_acc();
        }
        for d in 1..n {
            for (m, &v) in mx.iter_mut().zip(row(d)) {
                *m = m.max(v.to_acc());
            }
        }
        sum.fill(T::Acc::zero());
        for d in 0..n {
            let t = if kind == Kind::Softmax { &mut e[d * len..(d + 1) * len] } else { &mut e[..len] };
            for ((t, &v), &m) in t.iter_mut().zip(row(d)).zip(mx.iter()) {
                *t = v.to_acc() - m;
            }
            T::Acc::exp_slice(t);
            for (s, &t) in sum.iter_mut().zip(t.iter()) {
                *s = *s + t;
            }
        }
        if kind == Kind::LogSoftmax {
            for s in sum.iter_mut() {
                *s = s.ln();
            }
        }
        for d in 0..n {
            // SAFETY: as above, in the output.
            let y = unsafe { std::slice::from_raw_parts_mut((yp as *mut T).add(base + d * inner), len) };
            if kind == Kind::Softmax {
                for ((o, &t), &s) in y.iter_mut().zip(&e[d * len..(d + 1) * len]).zip(sum.iter()) {
                    *o = T::from_acc(t / s);
                }
            } else {
                for (((o, &v), &m), &s) in y.iter_mut().zip(row(d)).zip(mx.iter()).zip(sum.iter()) {
                    *o = T::from_acc(v.to_acc() - m - s);
                }
            }
        }
    }
}

/// `_softmax_backward_data` / `_log_softmax_backward_data` into `out`.
pub fn softmax_backward_out(
    grad: TensorRef<'_>,
    output: TensorRef<'_>,
    dim: i64,
    input_dtype: ScalarType,
    kind: Kind,
    out: TensorRef<'_>,
) -> Result<()> {
    let dtype = DType::from_scalar_type(grad.dtype())?;
    let input_dtype = DType::from_scalar_type(input_dtype)?;
    if grad.sizes() != output.sizes() {
        return Err(Error::runtime(format!(
            "Expected tensor for argument #1 'grad' to have same size as tensor for argument #2 'output'; but {} does not equal {} (while checking arguments for softmax_backward)",
            fmt_sizes(grad.sizes()),
            fmt_sizes(output.sizes())
        )));
    }
    let d = wrap_dim(dim, grad.dim())?;
    let out_dtype = if dtype == DType::F32 && input_dtype == DType::F16 { DType::F16 } else { dtype };
    into_out(&out, grad.sizes(), out_dtype, |gp| {
        let odt = DType::from_scalar_type(output.dtype())?;
        if out_dtype != dtype || odt != dtype {
            let other = if out_dtype != dtype { out_dtype } else { odt };
            return Err(Error::runtime(format!("expected scalar type {} but found {}", dtype.name(), other.name())));
        }
        if grad.numel() == 0 {
            return Ok(());
        }
        let (outer, n, inner) = split(grad.sizes(), d);
        let (g, y) = (dense(&grad)?, dense(&output)?);
        crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
            softmax_backward_run::<T>(kind, g.ptr, y.ptr, gp, outer, n, inner);
            Ok(())
        }, else Err(not_implemented(if kind == Kind::Softmax { "softmax_backward" } else { "log_softmax_backward" }, dtype)))
    })
}

pub fn softmax_backward(
    grad: TensorRef<'_>,
    output: TensorRef<'_>,
    dim: i64,
    input_dtype: ScalarType,
    kind: Kind,
) -> Result<Tensor> {
    let dtype = DType::from_scalar_type(grad.dtype())?;
    let idt = DType::from_scalar_type(input_dtype)?;
    let out_dtype = if dtype == DType::F32 && idt == DType::F16 { DType::F16 } else { dtype };
    let out = new_tensor(grad.sizes(), out_dtype)?;
    softmax_backward_out(grad, output, dim, input_dtype, kind, out.as_ref())?;
    Ok(out)
}

fn softmax_backward_run<T: Elem>(kind: Kind, gp: usize, yp: usize, op: usize, outer: usize, n: usize, inner: usize) {
    if inner == 1 {
        let grain = (GRAIN / (16 * n.max(1))).max(1);
        regen_runtime::host::parallel_for(outer, grain, |a, b| {
            let mut buf = vec![T::Acc::default(); n];
            for r in a..b {
                // SAFETY: row r of the contiguous tensors.
                let (g, y, o) = unsafe {
                    (
                        std::slice::from_raw_parts((gp as *const T).add(r * n), n),
                        std::slice::from_raw_parts((yp as *const T).add(r * n), n),
                        std::slice::from_raw_parts_mut((op as *mut T).add(r * n), n),
                    )
                };
                softmax_backward_row::<T>(kind, g, y, o, &mut buf);
            }
        });
        return;
    }
    let chunk = chunk_for(n, std::mem::size_of::<T>());
    let chunks = inner.div_ceil(chunk);
    let grain = (GRAIN / (16 * n * chunk)).max(1);
    regen_runtime::host::parallel_for(outer * chunks, grain, |a, b| {
        let mut sum = vec![T::Acc::default(); chunk];
        let mut tmp = vec![T::Acc::default(); chunk];
        for u in a..b {
            let (o, k) = (u / chunks, u % chunks);
            let j0 = k * chunk;
            let len = chunk.min(inner - j0);
            softmax_backward_block::<T>(kind, [gp, yp, op], o * n * inner + j0, n, inner, len, &mut sum, &mut tmp);
        }
    });
}

simd_fn! {
    /// One row of the backward ops, as `_vec_host_softmax_backward_lastdim`:
    /// softmax `(g - Σ g·y) · y`, log-softmax `g - exp(y) · Σ g`.
    fn softmax_backward_row<T: Elem>(kind: Kind, g: &[T], y: &[T], o: &mut [T], buf: &mut [T::Acc]) {
        match kind {
            Kind::Softmax => {
                let s = lane_sum([g, y], |[g, y]| g.to_acc() * y.to_acc());
                for ((o, &g), &y) in o.iter_mut().zip(g).zip(y) {
                    *o = T::from_acc((g.to_acc() - s) * y.to_acc());
                }
            }
            Kind::LogSoftmax => {
                let s = lane_sum([g], |[g]| g.to_acc());
                for (b, &y) in buf.iter_mut().zip(y) {
                    *b = y.to_acc();
                }
                T::Acc::exp_slice(buf);
                for ((o, &g), &e) in o.iter_mut().zip(g).zip(buf.iter()) {
                    *o = T::from_acc(g.to_acc() - e * s);
                }
            }
        }
    }
}

simd_fn! {
    /// A block of columns along a non-last dim, as `host_softmax_backward`: sums in the dim's
    /// order, then softmax `y · (g - sum)`, log-softmax `g - exp(y) · sum`.
    fn softmax_backward_block<T: Elem>(
        kind: Kind, ptrs: [usize; 3], base: usize, n: usize, inner: usize, len: usize,
        sum: &mut [T::Acc], tmp: &mut [T::Acc],
    ) {
        let [gp, yp, op] = ptrs;
        // SAFETY: for d < n, row d (len columns from base + d·inner) lies inside each of the
        // contiguous grad, output and grad_input of outer·n·inner elements (same sizes, checked):
        // the caller passes base = o·n·inner + j0 with o < outer and j0 + len <= inner.
        let row = |p: usize, d: usize| unsafe { std::slice::from_raw_parts((p as *const T).add(base + d * inner), len) };
        let (sum, tmp) = (&mut sum[..len], &mut tmp[..len]);
        sum.fill(T::Acc::zero());
        for d in 0..n {
            if kind == Kind::Softmax {
                for ((s, &g), &y) in sum.iter_mut().zip(row(gp, d)).zip(row(yp, d)) {
                    *s = *s + g.to_acc() * y.to_acc();
                }
            } else {
                for (s, &g) in sum.iter_mut().zip(row(gp, d)) {
                    *s = *s + g.to_acc();
                }
            }
        }
        for d in 0..n {
            // SAFETY: as above, in the output.
            let o = unsafe { std::slice::from_raw_parts_mut((op as *mut T).add(base + d * inner), len) };
            if kind == Kind::Softmax {
                for (((o, &g), &y), &s) in o.iter_mut().zip(row(gp, d)).zip(row(yp, d)).zip(sum.iter()) {
                    *o = T::from_acc(y.to_acc() * (g.to_acc() - s));
                }
            } else {
                for (t, &y) in tmp.iter_mut().zip(row(yp, d)) {
                    *t = y.to_acc();
                }
                T::Acc::exp_slice(tmp);
                for (((o, &g), &e), &s) in o.iter_mut().zip(row(gp, d)).zip(tmp.iter()).zip(sum.iter()) {
                    *o = T::from_acc(g.to_acc() - e * s);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Masked softmax
// ---------------------------------------------------------------------------------------------

/// An element of `_masked_softmax`, whose CPU kernel is `host_softmax`'s scalar loop rather
/// than the vectorised rows above: `exp` in the element type (C's `expf`/`exp`, which Rust's
/// `f32::exp`/`f64::exp` call too), sums in `acc_type` (double for float and double, float for
/// float16 and bfloat16), each operation rounded where CPU's rounds.
trait Masked: Copy + Send + Sync + 'static {
    fn f(self) -> f64;
    /// Rounds to the element type.
    fn r(x: f64) -> Self;
    /// Rounds to the accumulator type.
    fn acc(x: f64) -> f64;
    /// `exp(x - m)` as `std::exp` of the element type's difference, rounded to the element type.
    fn exp_diff(x: Self, m: Self) -> Self;
    /// `z *= inv`: float and double multiply in double; float16 and bfloat16 have only their own
    /// `*=`, so `inv` is rounded to the element type first.
    fn scale(z: Self, inv: f64) -> Self;
}

impl Masked for f32 {
    fn f(self) -> f64 {
        self as f64
    }
    fn r(x: f64) -> f32 {
        x as f32
    }
    fn acc(x: f64) -> f64 {
        x
    }
    fn exp_diff(x: f32, m: f32) -> f32 {
        (x - m).exp()
    }
    fn scale(z: f32, inv: f64) -> f32 {
        (z as f64 * inv) as f32
    }
}

impl Masked for f64 {
    fn f(self) -> f64 {
        self
    }
    fn r(x: f64) -> f64 {
        x
    }
    fn acc(x: f64) -> f64 {
        x
    }
    fn exp_diff(x: f64, m: f64) -> f64 {
        (x - m).exp()
    }
    fn scale(z: f64, inv: f64) -> f64 {
        z * inv
    }
}

macro_rules! masked_half {
    ($($t:ty),*) => {$(
        impl Masked for $t {
            fn f(self) -> f64 {
                self.to_f64()
            }
            fn r(x: f64) -> $t {
                <$t>::from_f64(x)
            }
            fn acc(x: f64) -> f64 {
                x as f32 as f64
            }
            fn exp_diff(x: $t, m: $t) -> $t {
                use dtype::Element as E;
                E::from_acc(<$t as E>::from_acc(E::to_acc(x) - E::to_acc(m)).to_acc().exp())
            }
            fn scale(z: $t, inv: f64) -> $t {
                use dtype::Element as E;
                E::from_acc(E::to_acc(z) * E::to_acc(<$t>::from_f64(inv)))
            }
        }
    )*};
}

masked_half!(f16, bf16);

/// The mask as bools of `sizes` (row-major), broadcast from `[L, L]` (mask_type 0) or `[B, L]`
/// (mask_type 1) over a `[B, H, L, L]` input, as CPU expands them.
fn full_mask(mask: &TensorRef<'_>, mask_type: i64, sizes: &[i64]) -> Result<Vec<bool>> {
    let m = dense(mask)?;
    let n = mask.numel().max(0) as usize;
    // SAFETY: the dense bool mask holds n elements.
    let mv = unsafe { std::slice::from_raw_parts(m.ptr as *const bool, n) };
    if mask_type == 2 {
        return Ok(mv.to_vec());
    }
    let [b, h, l, l2] = [sizes[0], sizes[1], sizes[2], sizes[3]].map(|v| v.max(0) as usize);
    let mut out = Vec::with_capacity(b * h * l * l2);
    for bi in 0..b {
        for _ in 0..h {
            for li in 0..l {
                for lj in 0..l2 {
                    out.push(if mask_type == 0 { mv[li * l + lj] } else { mv[bi * l2 + lj] });
                }
            }
        }
    }
    Ok(out)
}

/// `_masked_softmax` as `masked_softmax_cpu`: masked positions (true) are 0; a row with every
/// position masked sums to 0 and becomes NaN, as on CPU.
pub fn masked_softmax(
    input: TensorRef<'_>,
    mask: TensorRef<'_>,
    dim: Option<i64>,
    mask_type: Option<i64>,
) -> Result<Tensor> {
    if DType::from_scalar_type(mask.dtype())? != DType::Bool {
        return Err(Error::runtime("Mask should be a boolean tensor"));
    }
    let (xs, ms) = (input.sizes(), mask.sizes());
    let nd = input.dim();
    let mt = if mask.dim() != 2 || nd != 4 { Some(2) } else { mask_type };
    match mt {
        Some(2) => {
            if xs != ms {
                return Err(Error::runtime("For mask_type == 2 mask shape should match input shape"));
            }
        }
        Some(1) => {
            if xs[0] != ms[0] || xs[2] != ms[1] {
                return Err(Error::runtime("For mask_type == 1 mask shape should be (B, L)"));
            }
        }
        Some(0) => {
            if xs[2] != ms[0] || xs[2] != ms[1] {
                return Err(Error::runtime("For mask_type == 0 mask shape should be (L, L)"));
            }
        }
        None => return Err(Error::runtime("Mask Type should be defined")),
        Some(_) => {
            return Err(Error::runtime(
                "Mask Type should be 0 (src_mask) or 1 (src_key_padding_mask), or 2 (default_mask)",
            ));
        }
    }
    let dtype = DType::from_scalar_type(input.dtype())?;
    if !matches!(dtype, DType::F16 | DType::BF16 | DType::F32 | DType::F64) {
        return Err(not_implemented("masked_softmax", dtype));
    }
    let d = wrap_dim(dim.unwrap_or(nd as i64 - 1), nd)?;
    // CPU reads mask types 0 and 1 in place along the last dim and expands them otherwise; the
    // broadcast mask is the same either way.
    let full = full_mask(&mask, mt.unwrap_or(2), xs)?;
    let out = new_tensor(xs, dtype)?;
    if input.numel() == 0 {
        return Ok(out);
    }
    let (outer, n, inner) = split(xs, d);
    let x = dense(&input)?;
    let op = out.as_ref().data_ptr() as usize;
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        masked_softmax_run::<T>(x.ptr, op, &full, outer, n, inner);
        Ok(())
    }, else Err(not_implemented("masked_softmax", dtype)))?;
    Ok(out)
}

fn masked_softmax_run<T: Masked>(xp: usize, op: usize, mask: &[bool], outer: usize, n: usize, inner: usize) {
    regen_runtime::host::parallel_for(outer * inner, (GRAIN / n.max(1)).max(1), |a, b| {
        for i in a..b {
            let base = (i / inner) * n * inner + i % inner;
            // SAFETY: `base + k·inner` for k < n lies inside the contiguous input and output.
            let x = |k: usize| unsafe { *(xp as *const T).add(base + k * inner) };
            // SAFETY: for k < n, base + k·inner < outer·n·inner (i < outer·inner), an element of
            // the new contiguous output of the input's sizes; position i is this thread's only.
            let y = |k: usize| unsafe { (op as *mut T).add(base + k * inner) };
            let masked = |k: usize| mask[base + k * inner];
            let mut m = x(0);
            let mut seen = false;
            for k in 0..n {
                if !masked(k) {
                    // std::max(a, b) keeps `a` unless `a < b`.
                    m = if !seen || m.f() < x(k).f() { x(k) } else { m };
                    seen = true;
                }
            }
            let mut sum = 0.0f64;
            for k in 0..n {
                let z = if masked(k) { T::r(0.0) } else { T::exp_diff(x(k), m) };
                // SAFETY: see above.
                unsafe { *y(k) = z };
                sum = T::acc(sum + z.f());
            }
            let inv = if sum == 0.0 { f64::NAN } else { T::acc(1.0 / sum) };
            for k in 0..n {
                // SAFETY: see above.
                unsafe { *y(k) = T::scale(*y(k), inv) };
            }
        }
    });
}

/// `_masked_softmax_backward` as `masked_softmax_backward_cpu`: `y · (g - Σ g·y)` over the
/// unmasked positions, 0 where masked.
pub fn masked_softmax_backward(
    grad: TensorRef<'_>,
    output: TensorRef<'_>,
    mask: TensorRef<'_>,
    dim: Option<i64>,
) -> Result<Tensor> {
    if grad.sizes() != mask.sizes() {
        return Err(Error::runtime("Mask shape should match grad shape"));
    }
    if DType::from_scalar_type(mask.dtype())? != DType::Bool {
        return Err(Error::runtime("Mask should be a boolean tensor"));
    }
    if output.sizes() != grad.sizes() {
        return Err(Error::runtime("output shape should match grad shape"));
    }
    let dtype = DType::from_scalar_type(grad.dtype())?;
    if !matches!(dtype, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
        || DType::from_scalar_type(output.dtype())? != dtype
    {
        return Err(not_implemented("masked_softmax_backward", dtype));
    }
    let nd = grad.dim();
    let d = wrap_dim(dim.unwrap_or(nd as i64 - 1), nd)?;
    let full = full_mask(&mask, 2, grad.sizes())?;
    let out = new_tensor(grad.sizes(), dtype)?;
    if grad.numel() == 0 {
        return Ok(out);
    }
    let (outer, n, inner) = split(grad.sizes(), d);
    let (g, y) = (dense(&grad)?, dense(&output)?);
    let op = out.as_ref().data_ptr() as usize;
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        masked_softmax_backward_run::<T>([g.ptr, y.ptr, op], &full, outer, n, inner);
        Ok(())
    }, else Err(not_implemented("masked_softmax_backward", dtype)))?;
    Ok(out)
}

fn masked_softmax_backward_run<T: Masked>(ptrs: [usize; 3], mask: &[bool], outer: usize, n: usize, inner: usize) {
    let [gp, yp, op] = ptrs;
    regen_runtime::host::parallel_for(outer * inner, (GRAIN / n.max(1)).max(1), |a, b| {
        for i in a..b {
            let base = (i / inner) * n * inner + i % inner;
            // SAFETY: `base + k·inner` for k < n lies inside the contiguous tensors.
            let at = |p: usize, k: usize| unsafe { *(p as *const T).add(base + k * inner) };
            let mut sum = 0.0f64;
            for k in 0..n {
                if !mask[base + k * inner] {
                    sum = T::acc(sum + T::r(at(gp, k).f() * at(yp, k).f()).f());
                }
            }
            for k in 0..n {
                let v = if mask[base + k * inner] {
                    T::r(0.0)
                } else {
                    T::r(T::acc(at(yp, k).f() * T::acc(at(gp, k).f() - sum)))
                };
                // SAFETY: as above, in the output.
                unsafe { *(op as *mut T).add(base + k * inner) = v };
            }
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Parameters shared by layer norm and batch norm
// ---------------------------------------------------------------------------------------------

/// The dtype of the statistics and parameter gradients: the input's, or float when float16 or
/// bfloat16 input comes with float parameters (CPU's "mixed type").
fn param_dtype(input: DType, params: &[Option<&TensorRef<'_>>]) -> Result<DType> {
    let mut found: Option<DType> = None;
    for p in params.iter().flatten() {
        if !p.is_defined() {
            continue;
        }
        let d = DType::from_scalar_type(p.dtype())?;
        match found {
            None => found = Some(d),
            Some(f) if f != d => return Err(Error::runtime("mixed dtype (CPU): all inputs must share same datatype.")),
            _ => {}
        }
    }
    match found {
        None => Ok(input),
        Some(d) if d == input => Ok(input),
        Some(DType::F32) if matches!(input, DType::F16 | DType::BF16) => Ok(DType::F32),
        Some(_) => Err(Error::runtime(format!(
            "mixed dtype (CPU): expect parameter to have scalar type of {}",
            if matches!(input, DType::F16 | DType::BF16) { "Float" } else { input.name() }
        ))),
    }
}

fn defined<'a>(t: Option<TensorRef<'a>>) -> Option<TensorRef<'a>> {
    t.filter(TensorRef::is_defined)
}

// ---------------------------------------------------------------------------------------------
// Layer norm
// ---------------------------------------------------------------------------------------------

/// Checks as `_check_layer_norm_inputs`; returns (M, N).
fn layer_norm_shape(
    input: &TensorRef<'_>,
    shape: &[i64],
    weight: Option<&TensorRef<'_>>,
    bias: Option<&TensorRef<'_>>,
) -> Result<(usize, usize)> {
    if shape.is_empty() {
        return Err(Error::runtime(format!(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = {}",
            fmt_sizes(shape)
        )));
    }
    for (t, name) in [(weight, "weight"), (bias, "bias")] {
        if let Some(t) = t
            && t.sizes() != shape
        {
            return Err(Error::runtime(format!(
                "Expected {name} to be of same shape as normalized_shape, but got {name} of shape {} and normalized_shape = {}",
                fmt_sizes(t.sizes()),
                fmt_sizes(shape)
            )));
        }
    }
    let sizes = input.sizes();
    if sizes.len() < shape.len() || &sizes[sizes.len() - shape.len()..] != shape {
        let mut expected = String::from("[*");
        for s in shape {
            expected.push_str(&format!(", {s}"));
        }
        expected.push(']');
        return Err(Error::runtime(format!(
            "Given normalized_shape={}, expected input with shape {expected}, but got input of size{}",
            fmt_sizes(shape),
            fmt_sizes(sizes)
        )));
    }
    let axis = sizes.len() - shape.len();
    let m: i64 = sizes[..axis].iter().product();
    let n: i64 = shape.iter().product();
    Ok((m.max(0) as usize, n.max(0) as usize))
}

/// `native_layer_norm`: (y, mean, rstd), mean and rstd of shape `input[:axis] + [1] * k`.
pub fn layer_norm(
    input: TensorRef<'_>,
    shape: &[i64],
    weight: Option<TensorRef<'_>>,
    bias: Option<TensorRef<'_>>,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let (weight, bias) = (defined(weight), defined(bias));
    let (m, n) = layer_norm_shape(&input, shape, weight.as_ref(), bias.as_ref())?;
    let dtype = float_dtype(&input, "LayerNormKernelImpl")?;
    let pdt = param_dtype(dtype, &[weight.as_ref(), bias.as_ref()])?;
    let axis = input.dim() - shape.len();
    let mut stat_sizes = input.sizes()[..axis].to_vec();
    stat_sizes.extend(std::iter::repeat_n(1, shape.len()));
    let y = new_tensor(input.sizes(), dtype)?;
    let mean = new_tensor(&stat_sizes, pdt)?;
    let rstd = new_tensor(&stat_sizes, pdt)?;
    if m == 0 {
        return Ok((y, mean, rstd));
    }
    let x = dense(&input)?;
    let gamma = weight.map(|w| read_f64(&w, n)).transpose()?;
    let beta = bias.map(|b| read_f64(&b, n)).transpose()?;
    let mut stats = vec![0.0f64; 2 * m];
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        let conv = |v: &Option<Vec<f64>>| v.as_ref().map(|v| v.iter().map(|&x| a_of::<<T as dtype::Element>::Acc>(x)).collect::<Vec<_>>());
        let (g, b) = (conv(&gamma), conv(&beta));
        let (xp, yp, sp) = (x.ptr, y.as_ref().data_ptr() as usize, stats.as_mut_ptr() as usize);
        let eps_a = a_of::<<T as dtype::Element>::Acc>(eps);
        let grain = (GRAIN / n.max(1)).max(1);
        regen_runtime::host::parallel_for(m, grain, |lo, hi| {
            let mut buf = vec![<T as dtype::Element>::Acc::default(); n];
            for r in lo..hi {
                // SAFETY: row r of the contiguous input and output; stats slots 2r, 2r + 1.
                let (xr, yr) = unsafe {
                    (
                        std::slice::from_raw_parts((xp as *const T).add(r * n), n),
                        std::slice::from_raw_parts_mut((yp as *mut T).add(r * n), n),
                    )
                };
                let (mu, rs) = layer_norm_row::<T>(xr, yr, g.as_deref(), b.as_deref(), eps_a, &mut buf);
                // SAFETY: this row's two slots, written by one thread.
                unsafe {
                    (sp as *mut f64).add(2 * r).write(mu.to_f64_());
                    (sp as *mut f64).add(2 * r + 1).write(rs.to_f64_());
                }
            }
        });
    }, else unreachable!());
    write_stats(&mean.as_ref(), stats.iter().step_by(2).copied())?;
    write_stats(&rstd.as_ref(), stats.iter().skip(1).step_by(2).copied())?;
    Ok((y, mean, rstd))
}

fn write_stats(t: &TensorRef<'_>, v: impl Iterator<Item = f64>) -> Result<()> {
    let dtype = DType::from_scalar_type(t.dtype())?;
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        let p = t.data_ptr() as *mut T;
        for (i, x) in v.enumerate() {
            // SAFETY: element i of the new contiguous tensor.
            unsafe { p.add(i).write(<T as dtype::Element>::from_acc(a_of(x))) };
        }
        Ok(())
    }, else unreachable!())
}

/// One row: (mean, rstd) and `y = (x · rstd + (-rstd · mean)) · γ + β`, as
/// `LayerNormKernelImplInternal` (with γ = 1, β = 0 when absent).
#[inline(always)]
fn layer_norm_row<T: Elem>(
    x: &[T],
    y: &mut [T],
    g: Option<&[T::Acc]>,
    b: Option<&[T::Acc]>,
    eps: T::Acc,
    buf: &mut [T::Acc],
) -> (T::Acc, T::Acc) {
    let mut out = (T::Acc::zero(), T::Acc::zero());
    layer_norm_row_simd::<T>(x, y, g, b, eps, buf, &mut out);
    out
}

simd_fn! {
    fn layer_norm_row_simd<T: Elem>(
        x: &[T], y: &mut [T], g: Option<&[T::Acc]>, b: Option<&[T::Acc]>, eps: T::Acc, buf: &mut [T::Acc],
        out: &mut (T::Acc, T::Acc),
    ) {
        let n = x.len();
        let xs: &[T::Acc] = if std::mem::size_of::<T>() == std::mem::size_of::<T::Acc>() {
            // SAFETY: T is T::Acc (equal sizes mean so for the element types of `Elem`): float32
            // and float64 rows are read where they lie (copied into `buf`, the copy was a
            // quarter of a float32 row's time).
            unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<T::Acc>(), n) }
        } else {
            T::widen_slice(x, buf);
            &buf[..n]
        };
        let nf = a_of::<T::Acc>(n as f64);
        let mean = lane_sum([xs], |[v]| v) / nf;
        let var = lane_sum([xs], |[v]| (v - mean) * (v - mean)) / nf;
        // An empty row has mean 0 and variance NaN, as CPU's moments give.
        let mean = if n == 0 { T::Acc::zero() } else { mean };
        let rstd = T::Acc::one() / (var.max(T::Acc::zero()) + eps).sqrt();
        let rstd = if n == 0 { T::Acc::nan() } else { rstd };
        let (scale, bias) = (rstd, -rstd * mean);
        if T::BLOCK_CONVERT {
            // float16: a block at a time into a stack buffer, narrowed by the conversion
            // instructions (converted element by element, float16 layer_norm took 1.9x CPU's
            // time with γ and β, 20x without).
            let mut tmp = [T::Acc::zero(); NARROW_BLOCK];
            for (k, yc) in y.chunks_mut(NARROW_BLOCK).enumerate() {
                let r = k * NARROW_BLOCK..k * NARROW_BLOCK + yc.len();
                let t = &mut tmp[..yc.len()];
                affine_row(t, &xs[r.clone()], g.map(|g| &g[r.clone()]), b.map(|b| &b[r]), scale, bias, |v| v);
                T::narrow_slice(t, yc);
            }
        } else {
            affine_row(y, xs, g, b, scale, bias, T::from_acc);
        }
        *out = (mean, rstd);
    }
}

/// Elements per block of a float16 row's output narrowed at once (1 KiB of f32 on the stack).
const NARROW_BLOCK: usize = 256;

/// `y = (x · scale + bias) · γ + β` over a row (γ = 1, β = 0 when absent), each result through
/// `narrow`. Without γ and β, `x · scale + bias` alone, as CPU's kernel (with the Options looked
/// up per element that loop did not vectorise: float16 layer_norm without them took 20x CPU's
/// time, float32 2.3x).
#[inline(always)]
fn affine_row<E, A: Flt>(
    y: &mut [E],
    x: &[A],
    g: Option<&[A]>,
    b: Option<&[A]>,
    scale: A,
    bias: A,
    narrow: impl Fn(A) -> E,
) {
    match (g, b) {
        (Some(g), Some(b)) => {
            for (((o, &v), &g), &b) in y.iter_mut().zip(x).zip(g).zip(b) {
                *o = narrow((v * scale + bias) * g + b);
            }
        }
        (None, None) => {
            for (o, &v) in y.iter_mut().zip(x) {
                *o = narrow(v * scale + bias);
            }
        }
        _ => {
            for (j, (o, &v)) in y.iter_mut().zip(x).enumerate() {
                let gv = g.map_or(A::one(), |g| g[j]);
                let bv = b.map_or(A::zero(), |b| b[j]);
                *o = narrow((v * scale + bias) * gv + bv);
            }
        }
    }
}

/// `native_layer_norm_backward`: (dx, dγ, dβ) as `output_mask` asks.
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_backward(
    dy: TensorRef<'_>,
    input: TensorRef<'_>,
    shape: &[i64],
    mean: TensorRef<'_>,
    rstd: TensorRef<'_>,
    weight: Option<TensorRef<'_>>,
    bias: Option<TensorRef<'_>>,
    mask: &[bool],
) -> Result<(Tensor, Tensor, Tensor)> {
    let (weight, bias) = (defined(weight), defined(bias));
    let (m, n) = layer_norm_shape(&input, shape, weight.as_ref(), bias.as_ref())?;
    let dtype = float_dtype(&input, "LayerNormBackwardKernelImpl")?;
    param_dtype(dtype, &[weight.as_ref(), bias.as_ref()])?;
    let want = |i: usize| mask.get(i).copied().unwrap_or(false);
    if (want(1) && weight.is_none()) || (want(2) && bias.is_none()) {
        return Err(Error::runtime("tensor does not have a device"));
    }
    check_grad_out(&dy, &input, dtype)?;
    if mean.numel() as usize != m || rstd.numel() as usize != m {
        return Err(Error::runtime("native_layer_norm_backward: mean and rstd must have one element per row"));
    }
    let dx = if want(0) { new_tensor(input.sizes(), dtype)? } else { Tensor::undefined() };
    let new_like = |t: &Option<TensorRef<'_>>| -> Result<Tensor> {
        let t = t.as_ref().ok_or_else(|| Error::runtime("tensor does not have a device"))?;
        new_tensor(t.sizes(), DType::from_scalar_type(t.dtype())?)
    };
    let dg = if want(1) { new_like(&weight)? } else { Tensor::undefined() };
    let db = if want(2) { new_like(&bias)? } else { Tensor::undefined() };
    let (want_dg, want_db) = (want(1), want(2));
    let mut dgv = vec![0.0f64; if want_dg { n } else { 0 }];
    let mut dbv = vec![0.0f64; if want_db { n } else { 0 }];
    if m > 0 && n > 0 {
        let (x, g) = (dense(&input)?, dense(&dy)?);
        let mu = read_f64(&mean, m)?;
        let rs = read_f64(&rstd, m)?;
        let gamma = weight.map(|w| read_f64(&w, n)).transpose()?;
        crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
            type A = <T as dtype::Element>::Acc;
            let gamma: Option<Vec<A>> = gamma.as_ref().map(|v| v.iter().map(|&x| a_of::<A>(x)).collect());
            let mu: Vec<A> = mu.iter().map(|&x| a_of::<A>(x)).collect();
            let rs: Vec<A> = rs.iter().map(|&x| a_of::<A>(x)).collect();
            // Rows split into one part per thread, each with its own dγ/dβ buffer, merged in
            // part order (CPU's two-pass reduction).
            let parts = regen_runtime::host::num_threads().min(m).max(1);
            let mut acc = vec![A::zero(); if want_dg || want_db { 2 * parts * n } else { 0 }];
            let (xp, gp, ap) = (x.ptr, g.ptr, acc.as_mut_ptr() as usize);
            let dxp = if want(0) { dx.as_ref().data_ptr() as usize } else { 0 };
            regen_runtime::host::parallel_for(parts, 1, |lo, hi| {
                let ones = vec![A::one(); n];
                for p in lo..hi {
                    let (r0, r1) = (m * p / parts, m * (p + 1) / parts);
                    // SAFETY: part p's own accumulators.
                    let (dga, dba) = unsafe {
                        (
                            std::slice::from_raw_parts_mut((ap as *mut A).wrapping_add(p * n), if want_dg { n } else { 0 }),
                            std::slice::from_raw_parts_mut((ap as *mut A).wrapping_add((parts + p) * n), if want_db { n } else { 0 }),
                        )
                    };
                    for r in r0..r1 {
                        // SAFETY: row r of the contiguous tensors.
                        let (xr, gr) = unsafe {
                            (
                                std::slice::from_raw_parts((xp as *const T).add(r * n), n),
                                std::slice::from_raw_parts((gp as *const T).add(r * n), n),
                            )
                        };
                        let dxr: &mut [T] = if dxp == 0 {
                            &mut []
                        } else {
                            // SAFETY: row r of the new dx.
                            unsafe { std::slice::from_raw_parts_mut((dxp as *mut T).add(r * n), n) }
                        };
                        layer_norm_backward_row::<T>(gr, xr, mu[r], rs[r], gamma.as_deref(), dxr, dga, dba, &ones);
                    }
                }
            });
            for p in 0..parts {
                for j in 0..dgv.len() {
                    dgv[j] += acc[p * n + j].to_f64_();
                }
                for j in 0..dbv.len() {
                    dbv[j] += acc[(parts + p) * n + j].to_f64_();
                }
            }
        }, else unreachable!());
    }
    if want_dg {
        write_stats(&dg.as_ref(), dgv.into_iter())?;
    }
    if want_db {
        write_stats(&db.as_ref(), dbv.into_iter())?;
    }
    Ok((dx, dg, db))
}

simd_fn! {
    /// One row of `LayerNormBackwardKernelImplInternal`: dγ += dy · (a·x + b), dβ += dy, and
    /// dx = a·dy·γ + b·x + c with ds = Σ dy·x·γ, db = Σ dy·γ. Two passes over the row: the
    /// parameter gradients and the two sums in one (16 lane accumulators, combined pairwise), then
    /// dx; a missing γ is 1.
    fn layer_norm_backward_row<T: Elem>(
        dy: &[T], x: &[T], mean: T::Acc, a: T::Acc, gamma: Option<&[T::Acc]>, dx: &mut [T],
        dga: &mut [T::Acc], dba: &mut [T::Acc], ones: &[T::Acc],
    ) {
        let n = x.len();
        let one = T::Acc::one();
        let g: &[T::Acc] = gamma.unwrap_or(ones);
        let (want_dg, want_db, want_dx) = (!dga.is_empty(), !dba.is_empty(), !dx.is_empty());
        let b0 = -a * mean;
        let mut ds_acc = [T::Acc::zero(); LANES];
        let mut db_acc = [T::Acc::zero(); LANES];
        // dγ/dβ of element j, and its terms of the two sums.
        let mut step = |j: usize| -> (T::Acc, T::Acc) {
            // SAFETY: j < n, the length of every row slice (dga/dba when wanted).
            unsafe {
                let d = dy.get_unchecked(j).to_acc();
                let xv = x.get_unchecked(j).to_acc();
                if want_dg {
                    let o = dga.get_unchecked_mut(j);
                    *o = *o + d * (a * xv + b0);
                }
                if want_db {
                    let o = dba.get_unchecked_mut(j);
                    *o = *o + d;
                }
                let dg = d * *g.get_unchecked(j);
                (dg * xv, dg)
            }
        };
        let full = n - n % LANES;
        for i in (0..full).step_by(LANES) {
            for k in 0..LANES {
                let (s, t) = step(i + k);
                ds_acc[k] = ds_acc[k] + s;
                db_acc[k] = db_acc[k] + t;
            }
        }
        // The tail adds to the combined sums in order (as lane_sum).
        let (mut ds, mut db) = (combine_lanes(ds_acc), combine_lanes(db_acc));
        for j in full..n {
            let (s, t) = step(j);
            ds = ds + s;
            db = db + t;
        }
        if !want_dx {
            return;
        }
        let scale = one / a_of::<T::Acc>(n as f64);
        let b = (db * mean - ds) * a * a * a * scale;
        let c = -b * mean - db * a * scale;
        for (((o, &d), &g), &xv) in dx.iter_mut().zip(dy).zip(g).zip(x) {
            *o = T::from_acc(a * d.to_acc() * g + b * xv.to_acc() + c);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Batch norm
// ---------------------------------------------------------------------------------------------

/// `input` as `batch × channel × spatial`: its strides (batch, channel, spatial) when its
/// dimensions after the channel one coalesce into one.
fn bcs(sizes: &[i64], strides: &[i64]) -> Option<[isize; 3]> {
    let mut s_stride: Option<i64> = None;
    let mut expected: Option<i64> = None;
    for k in (2..sizes.len()).rev() {
        if sizes[k] == 1 {
            continue;
        }
        match expected {
            None => s_stride = Some(strides[k]),
            Some(e) if e != strides[k] => return None,
            _ => {}
        }
        expected = Some(strides[k] * sizes[k]);
    }
    Some([strides[0] as isize, strides[1] as isize, s_stride.unwrap_or(1) as isize])
}

/// ATen's `suggest_memory_format` strides for a new tensor like `t`.
fn like_strides(t: &TensorRef<'_>) -> Vec<i64> {
    strides_for(t.sizes(), suggest_format(t))
}

/// The channels-last format whose strides `t` has (size-1 dimensions' strides aside), if any.
pub(crate) fn suggest_format(t: &TensorRef<'_>) -> Option<MemoryFormat> {
    let sizes = t.sizes();
    for fmt in [MemoryFormat::CHANNELS_LAST, MemoryFormat::CHANNELS_LAST_3D] {
        let s = strides_for(sizes, Some(fmt));
        if (sizes.len() == 4 || sizes.len() == 5) && s != strides_for(sizes, None) {
            let matches = sizes.iter().zip(t.strides()).zip(&s).all(|((&n, &a), &b)| n == 1 || a == b);
            if matches && s.len() == sizes.len() {
                return Some(fmt);
            }
        }
    }
    None
}

/// A tensor seen as `batch × channel × spatial`, copied to contiguous first when its spatial
/// dimensions do not coalesce.
#[derive(Clone, Copy)]
struct Bcs {
    ptr: usize,
    st: [isize; 3],
}

/// The view, and the copy it points into when there is one (kept alive by the caller).
fn as_bcs(t: &TensorRef<'_>) -> Result<(Bcs, Option<Tensor>)> {
    if !t.is_neg()
        && let Some(st) = bcs(t.sizes(), t.strides())
    {
        return Ok((Bcs { ptr: t.data_ptr() as usize, st }, None));
    }
    let d = dense(t)?;
    let st = bcs(t.sizes(), &regen_runtime::view::contiguous_strides(t.sizes())).unwrap_or([0, 0, 1]);
    Ok((Bcs { ptr: d.ptr, st }, d._copy))
}

/// The per-channel vector of an optional parameter (`None` when absent), checked to have `c`
/// elements.
fn channel_vec(t: Option<&TensorRef<'_>>, c: usize, name: &str) -> Result<Option<Vec<f64>>> {
    let Some(t) = t else { return Ok(None) };
    if t.numel() as usize != c {
        return Err(Error::runtime(format!("{name} should contain {c} elements not {}", t.numel())));
    }
    read_f64(t, c).map(Some)
}

/// `native_batch_norm` (and the `_native_batch_norm_legit` forms): (out, save_mean,
/// save_invstd); training updates the running statistics in place as
/// `batch_norm_cpu_update_stats_template` does (in double: the mean, and the unbiased
/// variance, blended with `momentum`).
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    input: TensorRef<'_>,
    weight: Option<TensorRef<'_>>,
    bias: Option<TensorRef<'_>>,
    running_mean: Option<TensorRef<'_>>,
    running_var: Option<TensorRef<'_>>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let (weight, bias) = (defined(weight), defined(bias));
    let (rm, rv) = (defined(running_mean), defined(running_var));
    let dtype = float_dtype(&input, "batch_norm")?;
    wrap_dim(1, input.dim())?;
    let sdt = param_dtype(dtype, &[weight.as_ref(), bias.as_ref(), rm.as_ref(), rv.as_ref()])?;
    if !training {
        if rm.is_none() {
            return Err(Error::value("running_mean must be defined in evaluation mode"));
        }
        if rv.is_none() {
            return Err(Error::value("running_var must be defined in evaluation mode"));
        }
    }
    let sizes = input.sizes();
    if training && input.numel() == 0 {
        return Err(Error::runtime(format!(
            "input tensor must have at least one element, but got input_sizes = {}",
            fmt_sizes(sizes)
        )));
    }
    let c = sizes[1].max(0) as usize;
    let out = regen_runtime::host::empty_strided(sizes, &like_strides(&input), dtype.code())?;
    let (sm, si) = if training {
        (new_tensor(&[c as i64], sdt)?, new_tensor(&[c as i64], sdt)?)
    } else {
        (new_tensor(&[0], sdt)?, new_tensor(&[0], sdt)?)
    };
    if input.numel() == 0 {
        return Ok((out, sm, si));
    }
    let w = channel_vec(weight.as_ref(), c, "weight")?;
    let b = channel_vec(bias.as_ref(), c, "bias")?;
    let rmv = channel_vec(rm.as_ref(), c, "running_mean")?;
    let rvv = channel_vec(rv.as_ref(), c, "running_var")?;
    let (x, _xc) = as_bcs(&input)?;
    let (o, _oc) = as_bcs(&out.as_ref())?;
    let (nb, ns) = (sizes[0] as usize, (input.numel() as usize) / (sizes[0] as usize * c));
    let count = nb * ns;
    let mut mean = vec![0.0f64; c];
    let mut invstd = vec![0.0f64; c];
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        type A = <T as dtype::Element>::Acc;
        if training {
            let mut var_sum = vec![0.0f64; c];
            let (mp, vp) = (mean.as_mut_ptr() as usize, var_sum.as_mut_ptr() as usize);
            regen_runtime::host::parallel_for(c, 1, |lo, hi| {
                for ch in lo..hi {
                    let (m, v) = bn_stats::<T>(&x, ch, nb, ns);
                    // SAFETY: channel ch's slots.
                    unsafe {
                        (mp as *mut f64).add(ch).write(m);
                        (vp as *mut f64).add(ch).write(v);
                    }
                }
            });
            // CPU keeps the mean and the sum of squares in tensors of the statistics' dtype
            // before it derives invstd and the running statistics from them.
            for v in mean.iter_mut().chain(var_sum.iter_mut()) {
                *v = round_to(sdt, *v);
            }
            let n = count as f64;
            let mut new_rm = rmv.clone();
            let mut new_rv = rvv.clone();
            for ch in 0..c {
                let var = var_sum[ch] / n;
                invstd[ch] = if var == 0.0 && eps == 0.0 { 0.0 } else { 1.0 / (var + eps).sqrt() };
                if let Some(r) = new_rm.as_mut() {
                    r[ch] = momentum * mean[ch] + (1.0 - momentum) * r[ch];
                }
                if let Some(r) = new_rv.as_mut() {
                    r[ch] = momentum * (var_sum[ch] / (n - 1.0)) + (1.0 - momentum) * r[ch];
                }
            }
            write_stats(&sm.as_ref(), mean.iter().copied())?;
            write_stats(&si.as_ref(), invstd.iter().copied())?;
            // The saved statistics are what the transform reads, at their dtype's precision.
            mean = read_f64(&sm.as_ref(), c)?;
            invstd = read_f64(&si.as_ref(), c)?;
            if let (Some(t), Some(v)) = (rm.as_ref(), new_rm) {
                write_f64(t, &v)?;
            }
            if let (Some(t), Some(v)) = (rv.as_ref(), new_rv) {
                write_f64(t, &v)?;
            }
        } else {
            let (rmv, rvv) = (rmv.unwrap_or_default(), rvv.unwrap_or_default());
            for ch in 0..c {
                mean[ch] = rmv[ch];
                let var = a_of::<A>(rvv[ch]);
                invstd[ch] = (A::one() / (var + a_of::<A>(eps)).sqrt()).to_f64_();
            }
        }
        // alpha = invstd · w and beta = b - mean · alpha in the compute type, as
        // `batch_norm_cpu_collect_linear_and_constant_terms`.
        let mut ab = vec![(A::zero(), A::zero()); c];
        for ch in 0..c {
            let wv = w.as_ref().map_or(A::one(), |w| a_of::<A>(w[ch]));
            let bv = b.as_ref().map_or(A::zero(), |b| a_of::<A>(b[ch]));
            let alpha = a_of::<A>(invstd[ch]) * wv;
            ab[ch] = (alpha, bv - a_of::<A>(mean[ch]) * alpha);
        }
        regen_runtime::host::parallel_for(c, 1, |lo, hi| {
            for (ch, &ab) in ab.iter().enumerate().take(hi).skip(lo) {
                bn_transform::<T>(&x, &o, ch, nb, ns, ab);
            }
        });
    }, else unreachable!());
    Ok((out, sm, si))
}

/// A channel's mean and sum of squared deviations, as `batch_norm_cpu_collect_stats`: a
/// double sum in batch-then-spatial order, the mean rounded to the compute type, then
/// `(x - mean)²` in the compute type summed in double.
fn bn_stats<T: Elem>(x: &Bcs, ch: usize, nb: usize, ns: usize) -> (f64, f64) {
    let [sb, sc, ss] = x.st;
    let at = |b: usize, s: usize| -> T {
        // SAFETY: element (b, ch, s) of the input.
        unsafe { (x.ptr as *const T).offset(b as isize * sb + ch as isize * sc + s as isize * ss).read() }
    };
    let mut sum = 0.0f64;
    for b in 0..nb {
        for s in 0..ns {
            sum += at(b, s).to_acc().to_f64_();
        }
    }
    let mean = a_of::<T::Acc>(sum / (nb * ns) as f64);
    let mut var_sum = 0.0f64;
    for b in 0..nb {
        for s in 0..ns {
            let d = at(b, s).to_acc() - mean;
            var_sum += (d * d).to_f64_();
        }
    }
    (mean.to_f64_(), var_sum)
}

simd_fn! {
    /// `out = x · alpha + beta` over one channel.
    fn bn_transform<T: Elem>(x: &Bcs, o: &Bcs, ch: usize, nb: usize, ns: usize, ab: (T::Acc, T::Acc)) {
        let (alpha, beta) = ab;
        let ([xb, xc, xs], [ob, oc, os]) = (x.st, o.st);
        for b in 0..nb {
            let xr = (x.ptr as *const T).wrapping_offset(b as isize * xb + ch as isize * xc);
            let or = (o.ptr as *mut T).wrapping_offset(b as isize * ob + ch as isize * oc);
            if xs == 1 && os == 1 {
                // SAFETY: a contiguous spatial run of both tensors.
                let (xr, or) = unsafe { (std::slice::from_raw_parts(xr, ns), std::slice::from_raw_parts_mut(or, ns)) };
                for (o, &v) in or.iter_mut().zip(xr) {
                    *o = T::from_acc(v.to_acc() * alpha + beta);
                }
            } else {
                for s in 0..ns {
                    // SAFETY: element s of the run in both tensors.
                    unsafe {
                        let v = xr.offset(s as isize * xs).read();
                        or.offset(s as isize * os).write(T::from_acc(v.to_acc() * alpha + beta));
                    }
                }
            }
        }
    }
}

/// `native_batch_norm_backward` (and `batch_norm_backward`), as
/// `batch_norm_cpu_backward_template`: per channel Σ dy and Σ (x - mean)·dy, then
/// dx = (dy - Σdy/N - (x - mean)·k) · invstd · w with k = Σ(x - mean)dy · invstd² / N in
/// training, dx = dy · invstd · w otherwise; dw = Σ(x - mean)dy · invstd, db = Σ dy.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_backward(
    grad: TensorRef<'_>,
    input: TensorRef<'_>,
    weight: Option<TensorRef<'_>>,
    running_mean: Option<TensorRef<'_>>,
    running_var: Option<TensorRef<'_>>,
    save_mean: Option<TensorRef<'_>>,
    save_invstd: Option<TensorRef<'_>>,
    train: bool,
    eps: f64,
    mask: &[bool],
) -> Result<(Tensor, Tensor, Tensor)> {
    let weight = defined(weight);
    let (rm, rv) = (defined(running_mean), defined(running_var));
    let (sm, si) = (defined(save_mean), defined(save_invstd));
    let dtype = float_dtype(&input, "batch_norm_backward_cpu")?;
    wrap_dim(1, input.dim())?;
    let pdt = param_dtype(dtype, &[weight.as_ref()])?;
    if grad.sizes() != input.sizes() || DType::from_scalar_type(grad.dtype())? != dtype {
        return Err(Error::runtime(format!(
            "Expected grad_out of size {} and dtype {}, but got {} {}",
            fmt_sizes(input.sizes()),
            dtype.name(),
            fmt_sizes(grad.sizes()),
            DType::from_scalar_type(grad.dtype())?.name()
        )));
    }
    let want = |i: usize| mask.get(i).copied().unwrap_or(false);
    let sizes = input.sizes();
    let c = sizes[1].max(0) as usize;
    let dx = if want(0) {
        regen_runtime::host::empty_strided(sizes, &like_strides(&input), dtype.code())?
    } else {
        Tensor::undefined()
    };
    let dw = if want(1) { new_tensor(&[c as i64], pdt)? } else { Tensor::undefined() };
    let db = if want(2) { new_tensor(&[c as i64], pdt)? } else { Tensor::undefined() };
    let (mean, invstd) = if train {
        let missing =
            || Error::runtime("native_batch_norm_backward: save_mean and save_invstd are required in training");
        (
            channel_vec(sm.as_ref(), c, "save_mean")?.ok_or_else(missing)?,
            channel_vec(si.as_ref(), c, "save_invstd")?.ok_or_else(missing)?,
        )
    } else {
        let missing =
            || Error::runtime("native_batch_norm_backward: running_mean and running_var are required in evaluation");
        (
            channel_vec(rm.as_ref(), c, "running_mean")?.ok_or_else(missing)?,
            channel_vec(rv.as_ref(), c, "running_var")?.ok_or_else(missing)?,
        )
    };
    let w = channel_vec(weight.as_ref(), c, "weight")?;
    let mut sums = vec![(0.0f64, 0.0f64); c];
    if input.numel() > 0 {
        let (x, _xc) = as_bcs(&input)?;
        let (g, _gc) = as_bcs(&grad)?;
        let (o, _oc) = if want(0) { as_bcs(&dx.as_ref()).map(|(v, c)| (Some(v), c))? } else { (None, None) };
        let (nb, ns) = (sizes[0] as usize, (input.numel() as usize) / (sizes[0] as usize * c));
        let count = (nb * ns) as f64;
        crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
            type A = <T as dtype::Element>::Acc;
            let sp = sums.as_mut_ptr() as usize;
            regen_runtime::host::parallel_for(c, 1, |lo, hi| {
                for ch in lo..hi {
                    let m = a_of::<A>(mean[ch]);
                    let inv = if train {
                        a_of::<A>(invstd[ch])
                    } else {
                        A::one() / (a_of::<A>(invstd[ch]) + a_of::<A>(eps)).sqrt()
                    };
                    let (sum, dotp) = bn_backward_sums::<T>(&x, &g, ch, nb, ns, m);
                    // SAFETY: channel ch's slot.
                    unsafe { (sp as *mut (f64, f64)).add(ch).write((sum, dotp * inv.to_f64_())) };
                    if let Some(o) = o.as_ref() {
                        let wv = w.as_ref().map_or(A::one(), |w| a_of::<A>(w[ch]));
                        let (sum, dotp) = (a_of::<A>(sum), a_of::<A>(dotp));
                        let nf = a_of::<A>(count);
                        let coef = if train {
                            (dotp * inv * inv / nf, sum / nf)
                        } else {
                            (A::zero(), A::zero())
                        };
                        bn_backward_dx::<T>(&x, &g, o, ch, nb, ns, [m, inv, wv, coef.0, coef.1], train);
                    }
                }
            });
        }, else unreachable!());
    }
    if want(1) {
        write_stats(&dw.as_ref(), sums.iter().map(|s| s.1))?;
    }
    if want(2) {
        write_stats(&db.as_ref(), sums.iter().map(|s| s.0))?;
    }
    Ok((dx, dw, db))
}

/// Σ dy and Σ (x - mean)·dy over one channel (differences in the compute type, sums in double).
fn bn_backward_sums<T: Elem>(x: &Bcs, g: &Bcs, ch: usize, nb: usize, ns: usize, mean: T::Acc) -> (f64, f64) {
    let at = |t: &Bcs, b: usize, s: usize| -> T::Acc {
        let [sb, sc, ss] = t.st;
        // SAFETY: element (b, ch, s) of the tensor.
        unsafe { (t.ptr as *const T).offset(b as isize * sb + ch as isize * sc + s as isize * ss).read() }.to_acc()
    };
    let (mut sum, mut dotp) = (0.0f64, 0.0f64);
    for b in 0..nb {
        for s in 0..ns {
            let dy = at(g, b, s);
            sum += dy.to_f64_();
            dotp += ((at(x, b, s) - mean) * dy).to_f64_();
        }
    }
    (sum, dotp)
}

simd_fn! {
    /// dx over one channel.
    fn bn_backward_dx<T: Elem>(x: &Bcs, g: &Bcs, o: &Bcs, ch: usize, nb: usize, ns: usize, p: [T::Acc; 5], train: bool) {
        let [mean, inv, w, k, grad_mean] = p;
        let off = |t: &Bcs, b: usize, s: usize| -> isize {
            let [sb, sc, ss] = t.st;
            b as isize * sb + ch as isize * sc + s as isize * ss
        };
        for b in 0..nb {
            for s in 0..ns {
                // SAFETY: element (b, ch, s) of each tensor.
                unsafe {
                    let dy = (g.ptr as *const T).offset(off(g, b, s)).read().to_acc();
                    let v = if train {
                        let xv = (x.ptr as *const T).offset(off(x, b, s)).read().to_acc();
                        let dxv = (xv - mean) * k;
                        (dy - grad_mean - dxv) * inv * w
                    } else {
                        dy * inv * w
                    };
                    (o.ptr as *mut T).offset(off(o, b, s)).write(T::from_acc(v));
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Group norm
// ---------------------------------------------------------------------------------------------

/// `native_group_norm`: `(Y, mean, rstd)` as `GroupNormKernelImpl`, mean and rstd of shape
/// `N × group` in the parameters' dtype (float for float16/bfloat16 input with float
/// parameters). Registered directly because PrivateUse1 would otherwise run `math_group_norm`,
/// which rounds every step to float16/bfloat16; here each group's statistics are computed in
/// the compute type and each output rounded once, as CPU's kernel does.
pub fn group_norm(
    input: TensorRef<'_>,
    weight: Option<TensorRef<'_>>,
    bias: Option<TensorRef<'_>>,
    [n, c, hxw, group]: [i64; 4],
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let (weight, bias) = (defined(weight), defined(bias));
    // check_group_norm_inputs: an empty batch is answered, empty groups are refused.
    if c <= 0 {
        return Err(Error::runtime(format!("Expected number of channels to be greater than 0, got {c}")));
    }
    if hxw <= 0 {
        return Err(Error::runtime(format!("Expected HxW to be greater than 0, got {hxw}")));
    }
    if group <= 0 {
        return Err(Error::runtime(format!("Expected num groups to be greater than 0, got {group}")));
    }
    if c % group != 0 {
        return Err(Error::runtime(format!(
            "Expected number of channels in input to be divisible by num_groups, but got input of shape {} and num_groups={group}",
            fmt_sizes(input.sizes())
        )));
    }
    for (t, name) in [(&weight, "weight"), (&bias, "bias")] {
        if let Some(t) = t
            && (t.dim() != 1 || t.numel() != c)
        {
            return Err(Error::runtime(format!(
                "Expected {name} to be a vector of size equal to the number of channels in input, but got {name} of shape {} and input of shape {}",
                fmt_sizes(t.sizes()),
                fmt_sizes(input.sizes())
            )));
        }
    }
    let dtype = float_dtype(&input, "GroupNormKernelImpl")?;
    let pdt = param_dtype(dtype, &[weight.as_ref(), bias.as_ref()])?;
    if n < 0 || n.checked_mul(c).and_then(|v| v.checked_mul(hxw)) != Some(input.numel()) {
        return Err(Error::runtime(format!(
            "Expected input of N * C * HxW elements (N={n}, C={c}, HxW={hxw}), but got size {}",
            fmt_sizes(input.sizes())
        )));
    }
    // Y keeps the input's memory format (row-major for a direct call whose sizes are not
    // N × C × ...); the statistics are contiguous.
    let nchw = input.dim() >= 2 && input.sizes()[0] == n && input.sizes()[1] == c;
    let y = if nchw {
        regen_runtime::host::empty_strided(input.sizes(), &like_strides(&input), dtype.code())?
    } else {
        new_tensor(input.sizes(), dtype)?
    };
    let mean = new_tensor(&[n, group], pdt)?;
    let rstd = new_tensor(&[n, group], pdt)?;
    let (nn, cc, hw, g) = (n as usize, c as usize, hxw as usize, group as usize);
    if nn == 0 {
        return Ok((y, mean, rstd));
    }
    // CPU's kernel for a channels-last input sums x and x² along the channels; for any other it
    // takes the moments of each group's contiguous run. A tensor both layouts describe (size-1
    // spatial dimensions) is contiguous to ATen's suggest_memory_format.
    let channels_last = suggest_format(&input).is_some() && !is_contiguous(&input);
    // The input and output as N × C × HxW: their own strides when the sizes are that shape,
    // else (a direct call with other sizes) their row-major elements.
    let rows = [(cc * hw) as isize, hw as isize, 1];
    let ((x, _xc), (o, _oc)) = if nchw {
        (as_bcs(&input)?, as_bcs(&y.as_ref())?)
    } else {
        let d = dense(&input)?;
        let out = Bcs { ptr: y.as_ref().data_ptr() as usize, st: rows };
        ((Bcs { ptr: d.ptr, st: rows }, d._copy), (out, None))
    };
    let gamma = weight.as_ref().map(|w| read_f64(w, cc)).transpose()?;
    let beta = bias.as_ref().map(|b| read_f64(b, cc)).transpose()?;
    let mut stats = vec![0.0f64; 2 * nn * g];
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        type A = <T as dtype::Element>::Acc;
        let conv = |v: &Option<Vec<f64>>| v.as_ref().map(|v| v.iter().map(|&x| a_of::<A>(x)).collect::<Vec<A>>());
        let p = GroupParams { gamma: conv(&gamma), beta: conv(&beta), d: cc / g, g, hw, eps, channels_last };
        let sp = stats.as_mut_ptr() as usize;
        let grain = (GRAIN / (p.d * hw).max(1)).max(1);
        regen_runtime::host::parallel_for(nn * g, grain, |lo, hi| {
            let mut buf = vec![A::default(); p.d * hw];
            for i in lo..hi {
                let (mu, rs) = group_norm_group::<T>(&x, &o, i, &p, &mut buf);
                // SAFETY: this group's two slots, written by one thread.
                unsafe {
                    (sp as *mut f64).add(2 * i).write(mu.to_f64_());
                    (sp as *mut f64).add(2 * i + 1).write(rs.to_f64_());
                }
            }
        });
    }, else unreachable!());
    write_stats(&mean.as_ref(), stats.iter().step_by(2).copied())?;
    write_stats(&rstd.as_ref(), stats.iter().skip(1).step_by(2).copied())?;
    Ok((y, mean, rstd))
}

/// What every group of a `native_group_norm` call shares: γ and β in the compute type, the
/// channels per group `d`, the groups `g`, the spatial size `hw`, eps, and which of CPU's
/// kernels (contiguous or channels-last) the input's layout picks.
struct GroupParams<A> {
    gamma: Option<Vec<A>>,
    beta: Option<Vec<A>>,
    d: usize,
    g: usize,
    hw: usize,
    eps: f64,
    channels_last: bool,
}

/// Group `i` (sample `i / g`, group `i % g`): its (mean, rstd) in the compute type, and its
/// output. The moments: for the contiguous kernel the mean and the mean squared deviation of
/// the group's run (CPU's Welford moments, which are as accurate), for the channels-last one
/// `Σx·s` and `Σx²·s − mean²` with `s = 1/(D·HxW)`, as `ColumnwiseMoments` (16 lanes along
/// the channels, as AVX-512's float vectors). rstd is `1/√(max(var, 0) + eps)` in double (eps
/// is a double on CPU too), rounded to the compute type. The output: `(x − mean)·rstd` without γ and β in the contiguous kernel, else
/// `x·scale + bias` (a fused multiply-add, as GCC's -ffp-contract=fast makes it in CPU's
/// vectorised builds) with `scale = rstd·γ`, `bias = −scale·mean + β`.
#[inline(always)]
fn group_norm_group<T: Elem>(
    x: &Bcs,
    o: &Bcs,
    i: usize,
    p: &GroupParams<T::Acc>,
    buf: &mut [T::Acc],
) -> (T::Acc, T::Acc) {
    let mut out = (T::Acc::zero(), T::Acc::zero());
    group_norm_group_simd::<T>(x, o, i, p, buf, &mut out);
    out
}

simd_fn! {
    fn group_norm_group_simd<T: Elem>(
        x: &Bcs, o: &Bcs, i: usize, p: &GroupParams<T::Acc>, buf: &mut [T::Acc], out: &mut (T::Acc, T::Acc),
    ) {
        let (nb, gi, d, hw) = (i / p.g, i % p.g, p.d, p.hw);
        let ([xb, xc, xs], [ob, oc, os]) = (x.st, o.st);
        let c0 = gi * d;
        // SAFETY: for k < d and m < hw (as every call below passes), element (nb, c0 + k, m) of
        // the input viewed as N × C × HxW: nb < N (i < N·g) and c0 + k < (gi + 1)·d <= C.
        let at = |k: usize, m: usize| unsafe {
            (x.ptr as *const T).offset(nb as isize * xb + (c0 + k) as isize * xc + m as isize * xs).read()
        };
        // SAFETY: as for `at`, element (nb, c0 + k, m) of the output y (the input's sizes),
        // inside group i, which only this thread writes.
        let put = |k: usize, m: usize, v: T::Acc| unsafe {
            (o.ptr as *mut T).offset(nb as isize * ob + (c0 + k) as isize * oc + m as isize * os).write(T::from_acc(v))
        };
        let count = d * hw;
        let (mean, var) = if p.channels_last {
            // Lanes along the channels, spatial position after spatial position.
            let (mut acc0, mut acc1) = ([T::Acc::zero(); LANES], [T::Acc::zero(); LANES]);
            for m in 0..hw {
                for k in 0..d {
                    let v = at(k, m).to_acc();
                    acc0[k % LANES] = acc0[k % LANES] + v;
                    acc1[k % LANES] = acc1[k % LANES] + v * v;
                }
            }
            let s = T::Acc::one() / a_of::<T::Acc>(count as f64);
            let mean = combine_lanes(acc0) * s;
            // `Σx²·s − mean²` is one fused multiply-add in CPU's vectorised builds.
            (mean, combine_lanes(acc1).mul_add(s, -(mean * mean)))
        } else {
            for k in 0..d {
                for m in 0..hw {
                    buf[k * hw + m] = at(k, m).to_acc();
                }
            }
            let nf = a_of::<T::Acc>(count as f64);
            let mean = lane_sum([&*buf], |[v]| v) / nf;
            (mean, lane_sum([&*buf], |[v]| (v - mean) * (v - mean)) / nf)
        };
        // std::max(var, 0) keeps a NaN variance (f32::max would drop it).
        let var = if var < T::Acc::zero() { T::Acc::zero() } else { var };
        let rstd = a_of::<T::Acc>(1.0 / (var.to_f64_() + p.eps).sqrt());
        if !p.channels_last && p.gamma.is_none() && p.beta.is_none() {
            for k in 0..d {
                for m in 0..hw {
                    put(k, m, (buf[k * hw + m] - mean) * rstd);
                }
            }
        } else {
            for k in 0..d {
                let ch = c0 + k;
                let scale = rstd * p.gamma.as_ref().map_or(T::Acc::one(), |g| g[ch]);
                let beta = p.beta.as_ref().map_or(T::Acc::zero(), |b| b[ch]);
                // The contiguous kernel's bias is one fused multiply-add, the channels-last
                // kernel's (a loop of its own) two roundings, as CPU's AVX-512 build computes them.
                let bias = if p.channels_last { -scale * mean + beta } else { (-scale).mul_add(mean, beta) };
                for m in 0..hw {
                    put(k, m, at(k, m).to_acc().mul_add(scale, bias));
                }
            }
        }
        *out = (mean, rstd);
    }
}

// ---------------------------------------------------------------------------------------------
// Group norm backward
// ---------------------------------------------------------------------------------------------

/// `native_group_norm_backward`: `(dX, dγ, dβ)` as `GroupNormBackwardKernelImplInternal`: per
/// (sample, channel) sums `ds = Σ dy·x` and `db = Σ dy`, then per (sample, group)
/// `dX = rstd·γ·dy + c2·x + c3` with `c2 = (db·μ − ds)·rstd³/(D·HxW)` and
/// `c3 = −c2·μ − db·rstd/(D·HxW)`, and `dγ = Σₙ (ds − db·μ)·rstd`, `dβ = Σₙ db`.
#[allow(clippy::too_many_arguments)]
pub fn group_norm_backward(
    dy: TensorRef<'_>,
    input: TensorRef<'_>,
    mean: TensorRef<'_>,
    rstd: TensorRef<'_>,
    weight: Option<TensorRef<'_>>,
    [n, c, hxw, group]: [i64; 4],
    mask: &[bool],
) -> Result<(Tensor, Tensor, Tensor)> {
    let weight = defined(weight);
    let dtype = float_dtype(&input, "GroupNormBackwardKernelImpl")?;
    param_dtype(dtype, &[weight.as_ref()])?;
    let want = |i: usize| mask.get(i).copied().unwrap_or(false);
    check_group_norm_backward(&dy, &input, &mean, &rstd, weight.as_ref(), dtype, [n, c, hxw, group])?;
    let (nn, cc, hw, g) = (n as usize, c as usize, hxw as usize, group as usize);
    let d = cc / g;
    if (want(1) || want(2)) && weight.is_none() {
        return Err(Error::runtime("native_group_norm_backward: the weight's gradients need the weight"));
    }
    let dx = if want(0) { new_tensor(input.sizes(), dtype)? } else { Tensor::undefined() };
    let param_like = || -> Result<Tensor> {
        let w = weight.as_ref().expect("checked above");
        new_tensor(w.sizes(), DType::from_scalar_type(w.dtype())?)
    };
    let dg = if want(1) { param_like()? } else { Tensor::undefined() };
    let db = if want(2) { param_like()? } else { Tensor::undefined() };
    if input.numel() == 0 {
        for (k, t) in [(1, &dg), (2, &db)] {
            if want(k) {
                write_f64(&t.as_ref(), &vec![0.0; cc])?;
            }
        }
        return Ok((dx, dg, db));
    }
    let (x, gy) = (dense(&input)?, dense(&dy)?);
    let mu = read_f64(&mean, nn * g)?;
    let rs = read_f64(&rstd, nn * g)?;
    let gamma = weight.as_ref().map(|w| read_f64(w, cc)).transpose()?;
    let sums = channel_sums(dtype, &x, &gy, nn * cc, hw);
    let gam = |ch: usize| gamma.as_ref().map_or(1.0, |v| v[ch]);
    if want(0) {
        let scale = 1.0 / (d * hw) as f64;
        // (c1 per channel is rstd·γ; c2, c3 per group) for every sample.
        let mut coef = vec![0.0f64; 2 * nn * g];
        for s in 0..nn {
            for gi in 0..g {
                let (mut ds, mut db) = (0.0, 0.0);
                for ch in gi * d..(gi + 1) * d {
                    ds += sums[2 * (s * cc + ch)] * gam(ch);
                    db += sums[2 * (s * cc + ch) + 1] * gam(ch);
                }
                let (m, r) = (mu[s * g + gi], rs[s * g + gi]);
                let c2 = (db * m - ds) * r * r * r * scale;
                coef[2 * (s * g + gi)] = c2;
                coef[2 * (s * g + gi) + 1] = -c2 * m - db * r * scale;
            }
        }
        let dxp = dx.as_ref().data_ptr() as usize;
        crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
            let (xp, gp) = (x.ptr, gy.ptr);
            regen_runtime::host::parallel_for(nn * cc, (GRAIN / hw.max(1)).max(1), |lo, hi| {
                for row in lo..hi {
                    let (s, ch) = (row / cc, row % cc);
                    let k = s * g + ch / d;
                    let c1 = a_of::<<T as dtype::Element>::Acc>(rs[k] * gam(ch));
                    let (c2, c3) = (a_of::<<T as dtype::Element>::Acc>(coef[2 * k]), a_of::<<T as dtype::Element>::Acc>(coef[2 * k + 1]));
                    for e in row * hw..(row + 1) * hw {
                        // SAFETY: element e of the contiguous tensors; rows are disjoint.
                        unsafe {
                            let v = c1 * dtype::Element::to_acc(*(gp as *const T).add(e)) + c2 * dtype::Element::to_acc(*(xp as *const T).add(e)) + c3;
                            *(dxp as *mut T).add(e) = <T as dtype::Element>::from_acc(v);
                        }
                    }
                }
            });
        }, else unreachable!());
    }
    if want(1) {
        let v: Vec<f64> = (0..cc)
            .map(|ch| {
                (0..nn)
                    .map(|s| {
                        let k = s * g + ch / d;
                        (sums[2 * (s * cc + ch)] - sums[2 * (s * cc + ch) + 1] * mu[k]) * rs[k]
                    })
                    .sum()
            })
            .collect();
        write_f64(&dg.as_ref(), &v)?;
    }
    if want(2) {
        let v: Vec<f64> = (0..cc).map(|ch| (0..nn).map(|s| sums[2 * (s * cc + ch) + 1]).sum()).collect();
        write_f64(&db.as_ref(), &v)?;
    }
    Ok((dx, dg, db))
}

/// A norm's backward gets a gradient of its input's shape and dtype (ATen's message).
fn check_grad_out(dy: &TensorRef<'_>, input: &TensorRef<'_>, dtype: DType) -> Result<()> {
    let have = DType::from_scalar_type(dy.dtype())?;
    if dy.sizes() != input.sizes() || have != dtype {
        return Err(Error::runtime(format!(
            "Expected grad_out of size {} and dtype {}, but got {} {}",
            fmt_sizes(input.sizes()),
            dtype.name(),
            fmt_sizes(dy.sizes()),
            have.name()
        )));
    }
    Ok(())
}

/// `native_group_norm_backward`'s argument checks, with ATen's messages.
fn check_group_norm_backward(
    dy: &TensorRef<'_>,
    input: &TensorRef<'_>,
    mean: &TensorRef<'_>,
    rstd: &TensorRef<'_>,
    weight: Option<&TensorRef<'_>>,
    dtype: DType,
    [n, c, hxw, group]: [i64; 4],
) -> Result<()> {
    if group <= 0 || c % group != 0 {
        return Err(Error::runtime(format!(
            "Expected number of channels in input to be divisible by num_groups, but got input of shape {} and num_groups={group}",
            fmt_sizes(input.sizes())
        )));
    }
    check_grad_out(dy, input, dtype)?;
    if n * c * hxw != input.numel() || n < 0 || c < 0 || hxw < 0 {
        return Err(Error::runtime(format!(
            "Expected input of {} elements (N={n}, C={c}, HxW={hxw}), but got size {}",
            n * c * hxw,
            fmt_sizes(input.sizes())
        )));
    }
    let (nn, cc, g) = (n as usize, c as usize, group as usize);
    if mean.numel() as usize != nn * g || rstd.numel() as usize != nn * g {
        return Err(Error::runtime("native_group_norm_backward: mean and rstd must have N x group elements"));
    }
    if let Some(w) = weight
        && w.numel() as usize != cc
    {
        return Err(Error::runtime(format!(
            "Expected weight to be a vector of size equal to the number of channels in input, but got weight of shape {} and input of shape {}",
            fmt_sizes(w.sizes()),
            fmt_sizes(input.sizes())
        )));
    }
    Ok(())
}

/// Per row (one sample's channel) of `hw` contiguous elements: `Σ dy·x` and `Σ dy`, interleaved.
fn channel_sums(dtype: DType, x: &Dense, gy: &Dense, rows: usize, hw: usize) -> Vec<f64> {
    let mut sums = vec![0.0f64; 2 * rows];
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        let (xp, gp, sp) = (x.ptr, gy.ptr, sums.as_mut_ptr() as usize);
        regen_runtime::host::parallel_for(rows, (GRAIN / hw.max(1)).max(1), |lo, hi| {
            for r in lo..hi {
                // SAFETY: row r (one sample's channel) of the contiguous tensors; sums slots 2r,
                // 2r + 1 written by this range only.
                unsafe {
                    let xs = std::slice::from_raw_parts((xp as *const T).add(r * hw), hw);
                    let gs = std::slice::from_raw_parts((gp as *const T).add(r * hw), hw);
                    let ds = lane_sum([xs, gs], |[a, b]| dtype::Element::to_acc(a) * dtype::Element::to_acc(b));
                    let db = lane_sum([gs], |[b]| dtype::Element::to_acc(b));
                    (sp as *mut f64).add(2 * r).write(ds.to_f64_());
                    (sp as *mut f64).add(2 * r + 1).write(db.to_f64_());
                }
            }
        });
    }, else unreachable!());
    sums
}

/// Copies `src` into `dst` (resized to `src`'s shape; same dtype), for the `.out` forms.
pub fn assign(dst: TensorRef<'_>, src: &Tensor) -> Result<()> {
    let s = src.as_ref();
    if DType::from_scalar_type(dst.dtype())? != DType::from_scalar_type(s.dtype())? {
        return Err(Error::runtime(format!(
            "Expected out tensor to have dtype {}, but got {} instead",
            torch_name(DType::from_scalar_type(s.dtype())?),
            torch_name(DType::from_scalar_type(dst.dtype())?)
        )));
    }
    with_size(&dst, s.sizes(), |d| copy::copy_(*d, s))
}

/// This family's kernels: group `norm` of regen.toml's `[implement]`.
impl crate::NormKernels for crate::Reference {
    fn _softmax(&self, self_: TensorRef<'_>, dim: i64, half_to_float: bool) -> Result<Tensor> {
        softmax(self_, dim, half_to_float, Kind::Softmax)
    }
    fn _softmax_out(&self, self_: TensorRef<'_>, dim: i64, half_to_float: bool, out: TensorRef<'_>) -> Result<()> {
        softmax_out(self_, dim, half_to_float, Kind::Softmax, out)
    }
    fn _log_softmax(&self, self_: TensorRef<'_>, dim: i64, half_to_float: bool) -> Result<Tensor> {
        softmax(self_, dim, half_to_float, Kind::LogSoftmax)
    }
    fn _log_softmax_out(&self, self_: TensorRef<'_>, dim: i64, half_to_float: bool, out: TensorRef<'_>) -> Result<()> {
        softmax_out(self_, dim, half_to_float, Kind::LogSoftmax, out)
    }
    fn _softmax_backward_data(
        &self,
        grad_output: TensorRef<'_>,
        output: TensorRef<'_>,
        dim: i64,
        input_dtype: ScalarType,
    ) -> Result<Tensor> {
        use {Kind, softmax_backward};
        softmax_backward(grad_output, output, dim, input_dtype, Kind::Softmax)
    }
    fn _softmax_backward_data_out(
        &self,
        grad_output: TensorRef<'_>,
        output: TensorRef<'_>,
        dim: i64,
        input_dtype: ScalarType,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use {Kind, softmax_backward_out};
        softmax_backward_out(grad_output, output, dim, input_dtype, Kind::Softmax, grad_input)
    }
    fn _log_softmax_backward_data(
        &self,
        grad_output: TensorRef<'_>,
        output: TensorRef<'_>,
        dim: i64,
        input_dtype: ScalarType,
    ) -> Result<Tensor> {
        use {Kind, softmax_backward};
        softmax_backward(grad_output, output, dim, input_dtype, Kind::LogSoftmax)
    }
    fn _log_softmax_backward_data_out(
        &self,
        grad_output: TensorRef<'_>,
        output: TensorRef<'_>,
        dim: i64,
        input_dtype: ScalarType,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use {Kind, softmax_backward_out};
        softmax_backward_out(grad_output, output, dim, input_dtype, Kind::LogSoftmax, out)
    }
    fn native_layer_norm(
        &self,
        input: TensorRef<'_>,
        normalized_shape: &[i64],
        weight: Option<TensorRef<'_>>,
        bias: Option<TensorRef<'_>>,
        eps: f64,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        layer_norm(input, normalized_shape, weight, bias, eps)
    }
    fn native_layer_norm_backward(
        &self,
        grad_out: TensorRef<'_>,
        input: TensorRef<'_>,
        normalized_shape: &[i64],
        mean: TensorRef<'_>,
        rstd: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        bias: Option<TensorRef<'_>>,
        output_mask: &[bool],
    ) -> Result<(Tensor, Tensor, Tensor)> {
        layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias, output_mask)
    }
    fn native_group_norm(
        &self,
        input: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        bias: Option<TensorRef<'_>>,
        n: i64,
        c: i64,
        hx_w: i64,
        group: i64,
        eps: f64,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        group_norm(input, weight, bias, [n, c, hx_w, group], eps)
    }
    fn native_group_norm_backward(
        &self,
        grad_out: TensorRef<'_>,
        input: TensorRef<'_>,
        mean: TensorRef<'_>,
        rstd: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        n: i64,
        c: i64,
        hx_w: i64,
        group: i64,
        output_mask: &[bool],
    ) -> Result<(Tensor, Tensor, Tensor)> {
        group_norm_backward(grad_out, input, mean, rstd, weight, [n, c, hx_w, group], output_mask)
    }
    fn native_batch_norm(
        &self,
        input: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        bias: Option<TensorRef<'_>>,
        running_mean: Option<TensorRef<'_>>,
        running_var: Option<TensorRef<'_>>,
        training: bool,
        momentum: f64,
        eps: f64,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
    }
    fn native_batch_norm_out(
        &self,
        input: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        bias: Option<TensorRef<'_>>,
        running_mean: Option<TensorRef<'_>>,
        running_var: Option<TensorRef<'_>>,
        training: bool,
        momentum: f64,
        eps: f64,
        out: TensorRef<'_>,
        save_mean: TensorRef<'_>,
        save_invstd: TensorRef<'_>,
    ) -> Result<()> {
        use {assign, batch_norm};
        let r = batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)?;
        assign(out, &r.0)?;
        assign(save_mean, &r.1)?;
        assign(save_invstd, &r.2)
    }
    fn _native_batch_norm_legit(
        &self,
        input: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        bias: Option<TensorRef<'_>>,
        running_mean: TensorRef<'_>,
        running_var: TensorRef<'_>,
        training: bool,
        momentum: f64,
        eps: f64,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        batch_norm(input, weight, bias, Some(running_mean), Some(running_var), training, momentum, eps)
    }
    fn _native_batch_norm_legit_out(
        &self,
        input: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        bias: Option<TensorRef<'_>>,
        running_mean: TensorRef<'_>,
        running_var: TensorRef<'_>,
        training: bool,
        momentum: f64,
        eps: f64,
        out: TensorRef<'_>,
        save_mean: TensorRef<'_>,
        save_invstd: TensorRef<'_>,
    ) -> Result<()> {
        use {assign, batch_norm};
        let r = batch_norm(input, weight, bias, Some(running_mean), Some(running_var), training, momentum, eps)?;
        assign(out, &r.0)?;
        assign(save_mean, &r.1)?;
        assign(save_invstd, &r.2)
    }
    fn _native_batch_norm_legit_no_stats(
        &self,
        input: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        bias: Option<TensorRef<'_>>,
        training: bool,
        momentum: f64,
        eps: f64,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        batch_norm(input, weight, bias, None, None, training, momentum, eps)
    }
    fn _native_batch_norm_legit_no_stats_out(
        &self,
        input: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        bias: Option<TensorRef<'_>>,
        training: bool,
        momentum: f64,
        eps: f64,
        out: TensorRef<'_>,
        save_mean: TensorRef<'_>,
        save_invstd: TensorRef<'_>,
    ) -> Result<()> {
        use {assign, batch_norm};
        let r = batch_norm(input, weight, bias, None, None, training, momentum, eps)?;
        assign(out, &r.0)?;
        assign(save_mean, &r.1)?;
        assign(save_invstd, &r.2)
    }
    #[cfg(regen_has_op = "_batch_norm_with_update")]
    fn _batch_norm_with_update(
        &self,
        input: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        bias: Option<TensorRef<'_>>,
        running_mean: TensorRef<'_>,
        running_var: TensorRef<'_>,
        momentum: f64,
        eps: f64,
    ) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
        let (o, m, s) = batch_norm(input, weight, bias, Some(running_mean), Some(running_var), true, momentum, eps)?;
        let reserve = crate::engine::iter::new_tensor(&[0], crate::engine::dtype::DType::U8)?;
        Ok((o, m, s, reserve))
    }
    #[cfg(regen_has_op = "_batch_norm_with_update.out")]
    fn _batch_norm_with_update_out(
        &self,
        input: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        bias: Option<TensorRef<'_>>,
        running_mean: TensorRef<'_>,
        running_var: TensorRef<'_>,
        momentum: f64,
        eps: f64,
        out: TensorRef<'_>,
        save_mean: TensorRef<'_>,
        save_invstd: TensorRef<'_>,
        reserve: TensorRef<'_>,
    ) -> Result<()> {
        use {assign, batch_norm};
        let r = batch_norm(input, weight, bias, Some(running_mean), Some(running_var), true, momentum, eps)?;
        assign(out, &r.0)?;
        assign(save_mean, &r.1)?;
        assign(save_invstd, &r.2)?;
        regen_runtime::bootstrap::with_size(&reserve, &[0], |_| Ok(()))
    }
    fn native_batch_norm_backward(
        &self,
        grad_out: TensorRef<'_>,
        input: TensorRef<'_>,
        weight: Option<TensorRef<'_>>,
        running_mean: Option<TensorRef<'_>>,
        running_var: Option<TensorRef<'_>>,
        save_mean: Option<TensorRef<'_>>,
        save_invstd: Option<TensorRef<'_>>,
        train: bool,
        eps: f64,
        output_mask: &[bool],
    ) -> Result<(Tensor, Tensor, Tensor)> {
        batch_norm_backward(
            grad_out,
            input,
            weight,
            running_mean,
            running_var,
            save_mean,
            save_invstd,
            train,
            eps,
            output_mask,
        )
    }
    #[cfg(regen_has_op = "batch_norm_backward")]
    fn batch_norm_backward(
        &self,
        grad_out: TensorRef<'_>,
        input: TensorRef<'_>,
        weight: TensorRef<'_>,
        running_mean: Option<TensorRef<'_>>,
        running_var: Option<TensorRef<'_>>,
        save_mean: Option<TensorRef<'_>>,
        save_var: Option<TensorRef<'_>>,
        update: bool,
        eps: f64,
        output_mask: &[bool],
        _reserve: TensorRef<'_>,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        batch_norm_backward(
            grad_out,
            input,
            Some(weight),
            running_mean,
            running_var,
            save_mean,
            save_var,
            update,
            eps,
            output_mask,
        )
    }
    fn _masked_softmax(
        &self,
        self_: TensorRef<'_>,
        mask: TensorRef<'_>,
        dim: Option<i64>,
        mask_type: Option<i64>,
    ) -> Result<Tensor> {
        masked_softmax(self_, mask, dim, mask_type)
    }
    fn _masked_softmax_backward(
        &self,
        grad_output: TensorRef<'_>,
        output: TensorRef<'_>,
        mask: TensorRef<'_>,
        dim: Option<i64>,
    ) -> Result<Tensor> {
        masked_softmax_backward(grad_output, output, mask, dim)
    }
}
