//! `scaled_dot_product_attention`'s backend for PrivateUse1 devices: `_fused_sdp_choice` names the
//! overrideable backend when the fused kernel here serves the call, and
//! `_scaled_dot_product_fused_attention_overrideable` with its backward compute attention in one
//! pass per query row (the scores never become a tensor): `out = softmax(q kᵀ · scale + bias) v`,
//! with the row's log-sum-exp kept for the backward, as FlashAttention does. Half and bfloat16
//! inputs compute in float32, float32 and float64 in their own type (PyTorch's op math).
//!
//! The choice falls back to the math path (`SDPBackend::MATH`, native ops of this device) for what
//! the kernel does not do: dropout (it would need the device generator's Philox stream), grouped
//! query attention, inputs that are not 4-d floating tensors of one dtype, a boolean mask; and
//! before torch 2.5, which has no overrideable backend, it always does.

#![cfg_attr(not(regen_has_op = "_scaled_dot_product_fused_attention_overrideable"), allow(dead_code))]

use regen_runtime::{Error, Result, Tensor, TensorRef};

use crate::engine::dtype::DType;
use crate::engine::iter::new_tensor;
use crate::ops::copy::{dense, dense_as};
use crate::ops::reduce;

/// `torch.nn.attention.SDPBackend`'s values (aten/src/ATen/native/transformers/sdp_utils_cpp.h).
const MATH: i64 = 0;
const OVERRIDEABLE: i64 = 4;

/// Whether the fused kernel serves these inputs (the rest take the math path).
fn fused_serves(
    q: &TensorRef<'_>,
    k: &TensorRef<'_>,
    v: &TensorRef<'_>,
    mask: Option<&TensorRef<'_>>,
    dropout: f64,
) -> bool {
    let float = |t: &TensorRef<'_>| DType::from_scalar_type(t.dtype()).is_ok_and(|d| d.is_floating());
    let four_d = |t: &TensorRef<'_>| t.sizes().len() == 4;
    let (qs, ks, vs) = (q.sizes(), k.sizes(), v.sizes());
    dropout == 0.0
        && [q, k, v].iter().all(|t| float(t) && four_d(t) && t.dtype() == q.dtype())
        && qs[0] == ks[0]
        && ks[0] == vs[0]
        && qs[1] == ks[1]
        && ks[1] == vs[1]
        && qs[3] == ks[3]
        && ks[2] == vs[2]
        && mask.is_none_or(|m| m.dtype() == q.dtype() && m.sizes().len() <= 4)
}

/// `torch._fused_sdp_choice`.
pub fn choice(q: TensorRef<'_>, k: TensorRef<'_>, v: TensorRef<'_>, mask: Option<TensorRef<'_>>, dropout: f64) -> i64 {
    if fused_serves(&q, &k, &v, mask.as_ref(), dropout) { OVERRIDEABLE } else { MATH }
}

/// The op-math dtype of an attention over `dtype`: float32 for the half types.
fn opmath(dtype: DType) -> DType {
    if dtype == DType::F64 { DType::F64 } else { DType::F32 }
}

/// The attention's shapes: batch·heads, query rows, key rows, head and value widths.
#[derive(Clone, Copy)]
struct Dims {
    bh: usize,
    l: usize,
    s: usize,
    e: usize,
    ev: usize,
}

fn dims(q: &TensorRef<'_>, k: &TensorRef<'_>, v: &TensorRef<'_>) -> Result<Dims> {
    if !fused_serves(q, k, v, None, 0.0) {
        return Err(Error::runtime(
            "_scaled_dot_product_fused_attention_overrideable: expected 4-d floating query, key and value of one dtype, (batch, heads, length, width) alike",
        ));
    }
    let (qs, ks, vs) = (q.sizes(), k.sizes(), v.sizes());
    let n = |x: i64| x.max(0) as usize;
    Ok(Dims { bh: n(qs[0] * qs[1]), l: n(qs[2]), s: n(ks[2]), e: n(qs[3]), ev: n(vs[3]) })
}

/// Scores are masked above the diagonal under `is_causal` (PyTorch's top-left alignment): row i
/// sees keys `0..=i`, the first `width(causal, i + 1, s)` (rows before `r` see fewer than
/// `width(causal, r, s)` keys).
fn width(causal: bool, rows: usize, s: usize) -> usize {
    if causal { rows.min(s) } else { s }
}

/// Query rows per block of the products under `is_causal`: a block of rows `r0..r1` needs keys
/// `0..r1` only, so the masked triangle is (mostly) not computed, as FlashAttention skips masked
/// blocks; without a mask, one block. (32 rows: 128-row causal attention computes 5/8 of the
/// square, in products still large enough for the GEMM kernel.)
const CAUSAL_BLOCK: usize = 32;

/// The row blocks `(r0, r1)` of `0..l` for the products ([`CAUSAL_BLOCK`]).
fn blocks(causal: bool, l: usize) -> impl Iterator<Item = (usize, usize)> {
    let step = if causal { CAUSAL_BLOCK } else { l.max(1) };
    (0..l).step_by(step).map(move |r0| (r0, (r0 + step).min(l)))
}

/// A float type the kernel computes in (float32 or float64).
trait Acc: crate::ops::norm::Flt + Send + Sync + PartialOrd + 'static {
    const NEG_INF: Self;
    fn to(self) -> f64;
    fn of(x: f64) -> Self;
    fn plus(self, o: Self) -> Self;
    fn minus(self, o: Self) -> Self;
    fn times(self, o: Self) -> Self;
}
macro_rules! acc {
    ($t:ty) => {
        impl Acc for $t {
            const NEG_INF: Self = <$t>::NEG_INFINITY;
            fn to(self) -> f64 {
                self as f64
            }
            fn of(x: f64) -> Self {
                x as $t
            }
            fn plus(self, o: Self) -> Self {
                self + o
            }
            fn minus(self, o: Self) -> Self {
                self - o
            }
            fn times(self, o: Self) -> Self {
                self * o
            }
        }
    };
}
acc!(f32);
acc!(f64);

/// A dense tensor's elements.
///
/// # Safety
/// `t` is a live dense tensor of `T`'s dtype with `n` elements, not written while the slice lives.
unsafe fn slice<'a, T>(t: &Tensor, n: usize) -> &'a [T] {
    // SAFETY: per the contract.
    unsafe { std::slice::from_raw_parts(t.as_ref().data_ptr().cast::<T>(), n) }
}

/// An output tensor's memory, which the tasks write in disjoint parts (one batch·head each).
#[derive(Clone, Copy)]
struct Out<T>(*mut T);
// SAFETY: each task writes only its own batch·head's part of a tensor the kernel owns.
unsafe impl<T> Send for Out<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Out<T> {}

impl<T> Out<T> {
    fn of(t: &Tensor) -> Self {
        Out(t.as_ref().data_ptr().cast())
    }
    /// # Safety
    /// `at` is inside the tensor and no other task writes it.
    unsafe fn at(self, at: usize) -> *mut T {
        // SAFETY: per the contract.
        unsafe { self.0.add(at) }
    }
}

/// `dst (m × n) = beta · lhs (m × k) · rhs (k × n)`, each matrix at its column and row strides
/// (the `gemm` crate, as the matrix products use it; one thread: the tasks are the parallelism).
///
/// # Safety
/// Every pointer holds its matrix at its strides; `dst` is written by this task alone.
#[allow(clippy::too_many_arguments)]
unsafe fn product<T: Acc>(
    [m, n, k]: [usize; 3],
    dst: *mut T,
    [dst_cs, dst_rs]: [isize; 2],
    lhs: *const T,
    [lhs_cs, lhs_rs]: [isize; 2],
    rhs: *const T,
    [rhs_cs, rhs_rs]: [isize; 2],
    beta: T,
) {
    if k == 0 {
        // An empty sum (keys a causal block never sees): zeros, without asking gemm.
        for i in 0..m as isize {
            for j in 0..n as isize {
                // SAFETY: per the contract.
                unsafe { *dst.offset(i * dst_rs + j * dst_cs) = T::default() };
            }
        }
        return;
    }
    // SAFETY: per the contract.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            dst_cs,
            dst_rs,
            false,
            lhs,
            lhs_cs,
            lhs_rs,
            rhs,
            rhs_cs,
            rhs_rs,
            T::default(),
            beta,
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    }
}

/// One batch·head's probabilities: `p (l × s) = exp(scale · q kᵀ + bias - lse)` row by row, with
/// the row's log-sum-exp into `lse` when `fill_lse` (the forward), or read from it (the backward).
/// A row masked everywhere gets probabilities 0, as ATen's `_safe_softmax` gives it.
///
/// # Safety
/// `q` holds `l × e` and `k` `s × e` elements, dense.
#[allow(clippy::too_many_arguments)]
unsafe fn probabilities<T: Acc>(
    d: Dims,
    q: *const T,
    k: *const T,
    bias: Option<&[T]>,
    scale: T,
    causal: bool,
    p: &mut [T],
    lse: &mut [T],
    fill_lse: bool,
) {
    let (l, s, e) = (d.l, d.s, d.e as isize);
    for (r0, r1) in blocks(causal, l) {
        // SAFETY: per the contract; p holds l × s, q's rows r0..r1 and k's first rows are read.
        unsafe {
            product(
                [r1 - r0, width(causal, r1, s), d.e],
                p.as_mut_ptr().add(r0 * s),
                [1, s as isize],
                q.offset(r0 as isize * e),
                [1, e],
                k,
                [e, 1],
                scale,
            )
        };
    }
    for i in 0..l {
        // The masked scores (past the row's width) get probability 0 without an exp.
        let (row, masked) = p[i * s..][..s].split_at_mut(width(causal, i + 1, s));
        masked.fill(T::default());
        if let Some(b) = bias {
            row.iter_mut().zip(&b[i * s..]).for_each(|(x, &b)| *x = x.plus(b));
        }
        let mut max = T::NEG_INF;
        for x in row.iter() {
            if *x > max {
                max = *x;
            }
        }
        // exp(x - shift) over the row, vectorised (exp(-inf) is 0: masked scores drop out).
        let exp_from = |row: &mut [T], shift: T| {
            row.iter_mut().for_each(|x| *x = x.minus(shift));
            T::exp_slice(row);
        };
        if !fill_lse {
            // The backward: p from the forward's log-sum-exp.
            match lse[i].to().is_finite() {
                true => exp_from(row, lse[i]),
                false => row.fill(T::default()),
            }
            continue;
        }
        if max == T::NEG_INF {
            // Masked everywhere: no probability, as ATen's _safe_softmax gives.
            lse[i] = T::NEG_INF;
            row.fill(T::default());
            continue;
        }
        exp_from(row, max);
        let sum: f64 = row.iter().map(|x| x.to()).sum();
        let inverse = T::of(1.0 / sum);
        row.iter_mut().for_each(|x| *x = x.times(inverse));
        lse[i] = T::of(max.to() + sum.ln());
    }
}

/// The forward, one task per batch·head: the probabilities, then `out = p v`.
#[allow(clippy::too_many_arguments)]
fn forward<T: Acc>(
    d: Dims,
    q: &[T],
    k: &[T],
    v: &[T],
    bias: Option<&[T]>,
    scale: f64,
    causal: bool,
    out: Out<T>,
    lse: Out<T>,
) {
    regen_runtime::host::parallel_for(d.bh, 1, |begin, end| {
        let mut p = vec![T::default(); d.l * d.s];
        for b in begin..end {
            let bias = bias.map(|m| &m[b * d.l * d.s..][..d.l * d.s]);
            // SAFETY: this batch·head's log-sum-exp row is this task's alone.
            let lse = unsafe { std::slice::from_raw_parts_mut(lse.at(b * d.l), d.l) };
            // SAFETY: q and k hold this batch·head's rows, dense.
            unsafe {
                probabilities(
                    d,
                    q[b * d.l * d.e..].as_ptr(),
                    k[b * d.s * d.e..].as_ptr(),
                    bias,
                    T::of(scale),
                    causal,
                    &mut p,
                    lse,
                    true,
                )
            };
            let ev = d.ev as isize;
            for (r0, r1) in blocks(causal, d.l) {
                // SAFETY: out's rows of this batch·head are this task's alone; p is l × s, v s × ev
                // (rows r0..r1 of p are 0 past key r1 under the causal mask).
                unsafe {
                    product(
                        [r1 - r0, d.ev, width(causal, r1, d.s)],
                        out.at((b * d.l + r0) * d.ev),
                        [1, ev],
                        p.as_ptr().add(r0 * d.s),
                        [1, d.s as isize],
                        v[b * d.s * d.ev..].as_ptr(),
                        [1, ev],
                        T::of(1.0),
                    )
                };
            }
        }
    });
}

/// A dense tensor's elements, all of them.
///
/// # Safety
/// As [`slice`].
unsafe fn all<'a, T>(t: &Tensor) -> &'a [T] {
    // SAFETY: per the contract.
    unsafe { slice(t, t.as_ref().numel().max(0) as usize) }
}

/// [`forward`] over dense tensors of `T`'s dtype: q, k, v and the bias, read; out and lse, written.
fn forward_dense<T: Acc>(
    d: Dims,
    ([q, k, v], bias): ([&Tensor; 3], Option<&Tensor>),
    scale: f64,
    causal: bool,
    out: &Tensor,
    lse: &Tensor,
) {
    // SAFETY: the caller made every tensor dense in T's dtype (`dense`, `new_tensor`); the inputs
    // are only read while the slices live.
    unsafe { forward::<T>(d, all(q), all(k), all(v), bias.map(|b| all(b)), scale, causal, Out::of(out), Out::of(lse)) }
}

/// [`backward`] over dense tensors of `T`'s dtype: q, k, v, out, grad_out, the bias and lse,
/// read; the gradients, written.
#[allow(clippy::type_complexity)]
fn backward_dense<T: Acc>(
    d: Dims,
    (inputs, bias, lse): ([&Tensor; 5], Option<&Tensor>, &Tensor),
    scale: f64,
    causal: bool,
    ([dq, dk, dv], dbias): ([&Tensor; 3], Option<&Tensor>),
) {
    // SAFETY: as in forward_dense.
    unsafe {
        let inputs = inputs.map(|t| all::<T>(t));
        backward(
            d,
            inputs,
            bias.map(|b| all(b)),
            all(lse),
            scale,
            causal,
            [Out::of(dq), Out::of(dk), Out::of(dv)],
            dbias.map(Out::of),
        );
    }
}

/// `aten::_scaled_dot_product_fused_attention_overrideable`: (output, logsumexp, cum_seq_q,
/// cum_seq_k, max_q, max_k, philox_seed, philox_offset, debug_attn_mask).
#[allow(clippy::type_complexity)]
pub fn fused(
    q: TensorRef<'_>,
    k: TensorRef<'_>,
    v: TensorRef<'_>,
    bias: Option<TensorRef<'_>>,
    dropout: f64,
    causal: bool,
    scale: Option<f64>,
) -> Result<(Tensor, Tensor, Tensor, Tensor, i64, i64, Tensor, Tensor, Tensor)> {
    if dropout != 0.0 {
        return Err(Error::not_implemented(
            "_scaled_dot_product_fused_attention_overrideable: dropout is not implemented (_fused_sdp_choice sends it to the math path)",
        ));
    }
    let d = dims(&q, &k, &v)?;
    let dtype = DType::from_scalar_type(q.dtype())?;
    let acc = opmath(dtype);
    let (qs, ks, vs) = (q.sizes().to_vec(), k.sizes().to_vec(), v.sizes().to_vec());
    let scale = scale.unwrap_or(1.0 / (qs[3] as f64).sqrt());
    let scores_shape = [qs[0], qs[1], qs[2], ks[2]];
    let (qd, kd, vd) = (dense(q, acc)?, dense(k, acc)?, dense(v, acc)?);
    let bd = bias.map(|b| dense_as(b, &scores_shape, acc)).transpose()?;
    let out_shape = [qs[0], qs[1], qs[2], vs[3]];
    let out = new_tensor(&out_shape, acc)?;
    let lse = new_tensor(&qs[..3], acc)?; // op math: the backward recomputes from it
    let operands = ([&qd, &kd, &vd], bd.as_ref());
    if acc == DType::F64 {
        forward_dense::<f64>(d, operands, scale, causal, &out, &lse);
    } else {
        forward_dense::<f32>(d, operands, scale, causal, &out, &lse);
    }
    let output = if acc == dtype { out } else { dense(out.as_ref(), dtype)? };
    let long = |sizes: &[i64]| new_tensor(sizes, DType::I64);
    let debug = new_tensor(&[0], dtype)?;
    Ok((output, lse, long(&[0])?, long(&[0])?, qs[2], ks[2], long(&[])?, long(&[])?, debug))
}

/// The backward, one task per batch·head: the probabilities again (from the saved log-sum-exp),
/// `dv = pᵀ dO`, `dp = dO vᵀ`, `ds = p ⊙ (dp - rowsum(dO ⊙ out))`, `dq = scale · ds k`,
/// `dk = scale · dsᵀ q`, and `ds` itself as the bias's gradient.
#[allow(clippy::too_many_arguments)]
fn backward<T: Acc>(
    d: Dims,
    [q, k, v, o, g]: [&[T]; 5],
    bias: Option<&[T]>,
    lse: &[T],
    scale: f64,
    causal: bool,
    [dq, dk, dv]: [Out<T>; 3],
    dbias: Option<Out<T>>,
) {
    regen_runtime::host::parallel_for(d.bh, 1, |begin, end| {
        let (l, s, e, ev) = (d.l, d.s, d.e as isize, d.ev as isize);
        let mut p = vec![T::default(); l * s];
        let mut ds = vec![T::default(); l * s];
        for b in begin..end {
            let (qb, kb, vb) = (q[b * l * d.e..].as_ptr(), k[b * s * d.e..].as_ptr(), v[b * s * d.ev..].as_ptr());
            let (ob, gb) = (&o[b * l * d.ev..][..l * d.ev], &g[b * l * d.ev..][..l * d.ev]);
            let mut lse_row = lse[b * l..][..l].to_vec();
            let bias = bias.map(|m| &m[b * l * s..][..l * s]);
            // SAFETY: q and k hold this batch·head's rows, dense; lse is read, not filled.
            unsafe { probabilities(d, qb, kb, bias, T::of(scale), causal, &mut p, &mut lse_row, false) };
            // SAFETY: (the products) each output's rows of this batch·head are this task's alone;
            // the operands hold their matrices at the strides given.
            unsafe {
                // dv (s × ev) = pᵀ (s × l) · dO (l × ev); under the causal mask, keys c0..c1 have
                // probability 0 in the query rows before c0.
                for (c0, c1) in blocks(causal, s) {
                    let from = if causal { c0.min(l) } else { 0 };
                    product(
                        [c1 - c0, d.ev, l - from],
                        dv.at((b * s + c0) * d.ev),
                        [1, ev],
                        // (past p's end when no query sees the block: nothing is read then, k = 0)
                        p.as_ptr().wrapping_add(from * s + c0),
                        [s as isize, 1],
                        gb.as_ptr().add(from * d.ev),
                        [1, ev],
                        T::of(1.0),
                    );
                }
                // dp (l × s) = dO (l × ev) · vᵀ (ev × s), where p is not masked.
                for (r0, r1) in blocks(causal, l) {
                    product(
                        [r1 - r0, width(causal, r1, s), d.ev],
                        ds.as_mut_ptr().add(r0 * s),
                        [1, s as isize],
                        gb.as_ptr().add(r0 * d.ev),
                        [1, ev],
                        vb,
                        [ev, 1],
                        T::of(1.0),
                    );
                }
            }
            for i in 0..l {
                let delta = (0..d.ev).fold(T::default(), |acc, c| acc.plus(gb[i * d.ev + c].times(ob[i * d.ev + c])));
                let (row, masked) = ds[i * s..][..s].split_at_mut(width(causal, i + 1, s));
                row.iter_mut().zip(&p[i * s..]).for_each(|(x, &p)| *x = p.times(x.minus(delta)));
                masked.fill(T::default());
            }
            if let Some(db) = dbias {
                // SAFETY: this batch·head's scores are this task's alone.
                unsafe { std::ptr::copy_nonoverlapping(ds.as_ptr(), db.at(b * l * s), l * s) };
            }
            // SAFETY: as for the products above.
            unsafe {
                // dq (l × e) = scale · ds (l × s) · k (s × e), ds 0 where masked (as for p v).
                for (r0, r1) in blocks(causal, l) {
                    product(
                        [r1 - r0, d.e, width(causal, r1, s)],
                        dq.at((b * l + r0) * d.e),
                        [1, e],
                        ds.as_ptr().add(r0 * s),
                        [1, s as isize],
                        kb,
                        [1, e],
                        T::of(scale),
                    );
                }
                // dk (s × e) = scale · dsᵀ (s × l) · q (l × e), as dv.
                for (c0, c1) in blocks(causal, s) {
                    let from = if causal { c0.min(l) } else { 0 };
                    product(
                        [c1 - c0, d.e, l - from],
                        dk.at((b * s + c0) * d.e),
                        [1, e],
                        ds.as_ptr().wrapping_add(from * s + c0),
                        [s as isize, 1],
                        qb.offset(from as isize * e),
                        [1, e],
                        T::of(scale),
                    );
                }
            }
        }
    });
}

/// `aten::_scaled_dot_product_fused_attention_overrideable_backward`: (grad_query, grad_key,
/// grad_value, grad_attn_bias), each computed where `grad_input_mask` asks (an undefined tensor
/// otherwise, and for the bias when there is none); the bias's gradient is summed over the
/// dimensions it was broadcast along.
#[allow(clippy::too_many_arguments)]
pub fn fused_backward(
    grad_out: TensorRef<'_>,
    q: TensorRef<'_>,
    k: TensorRef<'_>,
    v: TensorRef<'_>,
    bias: TensorRef<'_>,
    mask: &[bool],
    out: TensorRef<'_>,
    lse: TensorRef<'_>,
    dropout: f64,
    causal: bool,
    scale: Option<f64>,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    if dropout != 0.0 {
        return Err(Error::not_implemented("_scaled_dot_product_fused_attention_overrideable_backward: dropout"));
    }
    let d = dims(&q, &k, &v)?;
    let dtype = DType::from_scalar_type(q.dtype())?;
    let acc = opmath(dtype);
    let (qs, ks, vs) = (q.sizes().to_vec(), k.sizes().to_vec(), v.sizes().to_vec());
    let scale = scale.unwrap_or(1.0 / (qs[3] as f64).sqrt());
    let out_shape = [qs[0], qs[1], qs[2], vs[3]];
    let scores_shape = [qs[0], qs[1], qs[2], ks[2]];
    if grad_out.sizes() != out_shape || out.sizes() != out_shape || lse.sizes() != &qs[..3] {
        return Err(Error::runtime(format!(
            "_scaled_dot_product_fused_attention_overrideable_backward: grad_out and out of shape {out_shape:?} and logsumexp of shape {:?} expected",
            &qs[..3]
        )));
    }
    let [qd, kd, vd] = [q, k, v].map(|t| dense(t, acc));
    let (qd, kd, vd) = (qd?, kd?, vd?);
    let (od, gd) = (dense(out, acc)?, dense(grad_out, acc)?);
    let ld = dense(lse, acc)?;
    let has_bias = bias.is_defined();
    let bd = has_bias.then(|| dense_as(bias, &scores_shape, acc)).transpose()?;
    let (dq, dk, dv) = (new_tensor(&qs, acc)?, new_tensor(&ks, acc)?, new_tensor(&vs, acc)?);
    let want_bias = has_bias && mask.get(3).copied().unwrap_or(false);
    let dbias = want_bias.then(|| new_tensor(&scores_shape, acc)).transpose()?;
    let operands = ([&qd, &kd, &vd, &od, &gd], bd.as_ref(), &ld);
    let grads = ([&dq, &dk, &dv], dbias.as_ref());
    if acc == DType::F64 {
        backward_dense::<f64>(d, operands, scale, causal, grads);
    } else {
        backward_dense::<f32>(d, operands, scale, causal, grads);
    }
    let back = |t: Tensor, want: bool| -> Result<Tensor> {
        match want {
            false => Ok(Tensor::undefined()),
            true if acc == dtype => Ok(t),
            true => dense(t.as_ref(), dtype),
        }
    };
    let want = |i: usize| mask.get(i).copied().unwrap_or(true);
    let grad_bias = match dbias {
        Some(full) => reduce_to(full, bias.sizes(), dtype)?,
        None => Tensor::undefined(),
    };
    Ok((back(dq, want(0))?, back(dk, want(1))?, back(dv, want(2))?, grad_bias))
}

/// `full` (the scores' shape) summed over the dimensions `shape` broadcasts along (the reduce
/// family's sum), as `shape` in `dtype`.
fn reduce_to(full: Tensor, shape: &[i64], dtype: DType) -> Result<Tensor> {
    let sizes = full.as_ref().sizes().to_vec();
    if shape == sizes {
        return dense(full.as_ref(), dtype);
    }
    // Trailing-aligned broadcast: a missing or size-1 dimension of `shape` was broadcast.
    let pad = sizes.len() - shape.len();
    let kept: Vec<i64> = (0..sizes.len()).map(|i| if i < pad { 1 } else { shape[i - pad] }).collect();
    let reduced: Vec<bool> = sizes.iter().zip(&kept).map(|(&n, &k)| k == 1 && n != 1).collect();
    let acc = DType::from_scalar_type(full.as_ref().dtype())?;
    let sum = new_tensor(&kept, acc)?;
    reduce::reduce_into(&reduce::Sum::<false, false>, full.as_ref(), acc, &reduced, true, &[sum.as_ref()])?;
    let viewed =
        regen_runtime::host::as_strided(&sum.as_ref(), shape, &regen_runtime::view::contiguous_strides(shape), 0)?;
    dense(viewed.as_ref(), dtype)
}

/// Group `attention` of regen.toml's `[implement]`.
impl crate::AttentionKernels for crate::Reference {
    fn _fused_sdp_choice(
        &self,
        query: TensorRef<'_>,
        key: TensorRef<'_>,
        value: TensorRef<'_>,
        attn_mask: Option<TensorRef<'_>>,
        dropout_p: f64,
        _is_causal: bool,
        _scale: Option<f64>,
        // Equal head counts are required either way (fused_serves).
        #[cfg(regen_has_op = "_scaled_dot_product_fused_attention_overrideable")] _enable_gqa: bool,
    ) -> Result<i64> {
        // Before torch 2.5 there is no overrideable backend: the math path, on native ops.
        if cfg!(not(regen_has_op = "_scaled_dot_product_fused_attention_overrideable")) {
            return Ok(MATH);
        }
        Ok(choice(query, key, value, attn_mask, dropout_p))
    }

    #[cfg(regen_has_op = "_scaled_dot_product_fused_attention_overrideable")]
    fn _scaled_dot_product_fused_attention_overrideable(
        &self,
        query: TensorRef<'_>,
        key: TensorRef<'_>,
        value: TensorRef<'_>,
        attn_bias: Option<TensorRef<'_>>,
        dropout_p: f64,
        is_causal: bool,
        _return_debug_mask: bool,
        scale: Option<f64>,
    ) -> Result<(Tensor, Tensor, Tensor, Tensor, i64, i64, Tensor, Tensor, Tensor)> {
        fused(query, key, value, attn_bias, dropout_p, is_causal, scale)
    }

    #[cfg(regen_has_op = "_scaled_dot_product_fused_attention_overrideable_backward")]
    fn _scaled_dot_product_fused_attention_overrideable_backward(
        &self,
        grad_out: TensorRef<'_>,
        query: TensorRef<'_>,
        key: TensorRef<'_>,
        value: TensorRef<'_>,
        attn_bias: TensorRef<'_>,
        grad_input_mask: &[bool],
        out: TensorRef<'_>,
        logsumexp: TensorRef<'_>,
        _cum_seq_q: TensorRef<'_>,
        _cum_seq_k: TensorRef<'_>,
        _max_q: i64,
        _max_k: i64,
        dropout_p: f64,
        is_causal: bool,
        _philox_seed: TensorRef<'_>,
        _philox_offset: TensorRef<'_>,
        scale: Option<f64>,
    ) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
        fused_backward(
            grad_out,
            query,
            key,
            value,
            attn_bias,
            grad_input_mask,
            out,
            logsumexp,
            dropout_p,
            is_causal,
            scale,
        )
    }
}
