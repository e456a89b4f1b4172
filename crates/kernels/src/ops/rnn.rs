//! The fused LSTM and GRU cells that ATen's nn.LSTM/nn.GRU call for a PrivateUse1 tensor
//! (`_thnn_fused_lstm_cell`, `_thnn_fused_gru_cell` and their backward ops). PyTorch has only
//! CUDA kernels for them (`native/cuda/RNN.cu`), so the CPU fallback cannot serve them; these
//! follow CUDA's order of operations: float16 and bfloat16 compute in f32, the workspace keeps
//! the activated gates (LSTM) or gates, previous state and `hn + b_hn` (GRU) for the backward.
//!
//! Every op is elementwise over `N × H` after the two GEMMs the caller ran: row `r`, column `j`
//! reads gate `g` at `r·(k·H) + g·H + j` of the `N × kH` gate tensors.

use regen_runtime::{Error, Result, Tensor, TensorRef};

use crate::engine::dtype::DType;
use crate::engine::dtype::float_dtype;
use crate::engine::iter::{GRAIN, fmt_sizes, new_tensor};
use crate::engine::scalar::Real;
use crate::ops::norm::{Dense, Elem, dense};
use crate::ops::reduce;

/// `1 / (1 + e^-x)`, as CUDA's cell kernels write it, and tanh, in the compute type.
trait Act: Real {
    #[inline(always)]
    fn sig(self) -> Self {
        Self::one() / (Self::one() + (-self).exp())
    }
    #[inline(always)]
    fn th(self) -> Self {
        self.tanh()
    }
}
impl<A: Real> Act for A {}

/// Checks a cell's arguments as CUDA's `checkSizes` does: gates `N × factor·H`, the state
/// `N × H`, both biases or neither, each of `factor·H` elements; returns `(N, H)`.
fn check_cell(
    op: &str,
    input_gates: &TensorRef<'_>,
    hidden_gates: &TensorRef<'_>,
    input_bias: &Option<TensorRef<'_>>,
    hidden_bias: &Option<TensorRef<'_>>,
    factor: usize,
    prev: &TensorRef<'_>,
) -> Result<(usize, usize)> {
    let dtype = float_dtype(input_gates, op)?;
    if input_gates.dim() != 2 {
        return Err(Error::runtime(format!(
            "{op}: Expected 2-dimensional tensor, but got {}-dimensional tensor for argument #1 'input_gates'",
            input_gates.dim()
        )));
    }
    let (n, kh) = (input_gates.sizes()[0], input_gates.sizes()[1]);
    let same = |t: &TensorRef<'_>, name: &str, sizes: &[i64]| -> Result<()> {
        if t.sizes() != sizes {
            return Err(Error::runtime(format!(
                "{op}: Expected tensor for argument '{name}' to have size {}, but got {}",
                fmt_sizes(sizes),
                fmt_sizes(t.sizes())
            )));
        }
        if DType::from_scalar_type(t.dtype())? != dtype {
            return Err(Error::runtime(format!(
                "{op}: Expected tensor for argument '{name}' to have the same type as input_gates ({}), but got {}",
                dtype.name(),
                DType::from_scalar_type(t.dtype())?.name()
            )));
        }
        Ok(())
    };
    same(hidden_gates, "hidden_gates", &[n, kh])?;
    if kh % factor as i64 != 0 {
        return Err(Error::runtime(format!("{op}: the gates' second size ({kh}) is not a multiple of {factor}")));
    }
    let h = kh / factor as i64;
    same(prev, "prev_hidden", &[n, h])?;
    match (input_bias, hidden_bias) {
        (None, None) => {}
        (Some(b1), Some(b2)) => {
            same(b1, "input_bias", &[kh])?;
            same(b2, "hidden_bias", &[kh])?;
        }
        _ => {
            return Err(Error::runtime(format!("{op}: input_bias and hidden_bias must both be given, or neither")));
        }
    }
    Ok((n as usize, h as usize))
}

/// Contiguous data of the optional biases, `None` when the cell has none.
fn biases(b1: &Option<TensorRef<'_>>, b2: &Option<TensorRef<'_>>) -> Result<Option<(Dense, Dense)>> {
    match (b1, b2) {
        (Some(a), Some(b)) => Ok(Some((dense(a)?, dense(b)?))),
        _ => Ok(None),
    }
}

/// Runs `f(r0, r1)` over row ranges of an `n`-row cell with `work` elements per row.
fn rows(n: usize, work: usize, f: impl Fn(usize, usize) + Sync) {
    regen_runtime::host::parallel_for(n, GRAIN.div_ceil(work.max(1)), f)
}

/// Element `i` of the contiguous data at `p`, in the compute type.
///
/// # Safety
/// `i` is inside the data.
#[inline(always)]
unsafe fn ld<T: Elem>(p: usize, i: usize) -> T::Acc {
    // SAFETY: the caller guarantees i is inside the contiguous data of T at p.
    unsafe { (*(p as *const T).add(i)).to_acc() }
}

/// Stores `v` as element `i` of the contiguous data at `p`.
///
/// # Safety
/// `i` is inside the data, and no other thread writes it.
#[inline(always)]
unsafe fn st<T: Elem>(p: usize, i: usize, v: T::Acc) {
    // SAFETY: the caller guarantees i is inside the data of T at p and no other thread writes it.
    unsafe { *(p as *mut T).add(i) = T::from_acc(v) }
}

macro_rules! float_dispatch {
    ($op:expr, $dtype:expr, |$T:ident| $body:expr) => {
        $crate::dispatch!($dtype, [F16, BF16, F32, F64], |$T| $body, else Err(crate::engine::dtype::not_implemented($op, $dtype)))
    };
}

/// The bias term of gate `g`, column `j` (0 without biases): `b1[gH+j] + b2[gH+j]` is added
/// after the gates as CUDA does (`x_in + x_h + b1 + b2`, left to right).
fn gate_sum<T: Elem>(ip: usize, hp: usize, b: &Option<(usize, usize)>, off: usize, bj: usize) -> T::Acc {
    // SAFETY: the callers pass offsets inside the gates and biases.
    unsafe {
        let s = ld::<T>(ip, off) + ld::<T>(hp, off);
        match *b {
            Some((b1, b2)) => s + ld::<T>(b1, bj) + ld::<T>(b2, bj),
            None => s,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// LSTM
// ---------------------------------------------------------------------------------------------

/// `_thnn_fused_lstm_cell`: `(hy, cy, workspace)` from the gates `[i, f, g, o]`.
pub fn lstm_cell(
    input_gates: TensorRef<'_>,
    hidden_gates: TensorRef<'_>,
    cx: TensorRef<'_>,
    input_bias: Option<TensorRef<'_>>,
    hidden_bias: Option<TensorRef<'_>>,
) -> Result<(Tensor, Tensor, Tensor)> {
    const OP: &str = "_thnn_fused_lstm_cell";
    let (n, h) = check_cell(OP, &input_gates, &hidden_gates, &input_bias, &hidden_bias, 4, &cx)?;
    let dtype = DType::from_scalar_type(input_gates.dtype())?;
    let workspace = new_tensor(input_gates.sizes(), dtype)?;
    let hy = new_tensor(cx.sizes(), dtype)?;
    let cy = new_tensor(cx.sizes(), dtype)?;
    let (ig, hg, c) = (dense(&input_gates)?, dense(&hidden_gates)?, dense(&cx)?);
    let b = biases(&input_bias, &hidden_bias)?;
    let bp = b.as_ref().map(|(x, y)| (x.ptr, y.ptr));
    let (wp, hyp, cyp) =
        (workspace.as_ref().data_ptr() as usize, hy.as_ref().data_ptr() as usize, cy.as_ref().data_ptr() as usize);
    float_dispatch!(OP, dtype, |T| {
        lstm_forward::<T>(n, h, [ig.ptr, hg.ptr, c.ptr], &bp, [hyp, cyp, wp]);
        Ok(())
    })?;
    Ok((hy, cy, workspace))
}

fn lstm_forward<T: Elem>(
    n: usize,
    h: usize,
    [ip, hp, cp]: [usize; 3],
    b: &Option<(usize, usize)>,
    [hyp, cyp, wp]: [usize; 3],
) {
    rows(n, 4 * h, |r0, r1| {
        for r in r0..r1 {
            for j in 0..h {
                let off = r * 4 * h + j;
                let gate = |g: usize| gate_sum::<T>(ip, hp, b, off + g * h, g * h + j);
                let (i, f, g, o) = (gate(0).sig(), gate(1).sig(), gate(2).th(), gate(3).sig());
                let k = r * h + j;
                // SAFETY: row r of the N × H and N × 4H tensors, written by this range only.
                unsafe {
                    let cy = f * ld::<T>(cp, k) + i * g;
                    st::<T>(hyp, k, o * cy.th());
                    st::<T>(cyp, k, cy);
                    st::<T>(wp, off, i);
                    st::<T>(wp, off + h, f);
                    st::<T>(wp, off + 2 * h, g);
                    st::<T>(wp, off + 3 * h, o);
                }
            }
        }
    });
}

/// `sum(0)` of an `N × kH` gradient: the bias gradient.
fn bias_grad(grad: &Tensor) -> Result<Tensor> {
    let g = grad.as_ref();
    let dtype = DType::from_scalar_type(g.dtype())?;
    let out = new_tensor(&[g.sizes()[1]], dtype)?;
    reduce::reduce_into(&reduce::Sum::<false, false>, g, dtype, &[true, false], false, &[out.as_ref()])?;
    Ok(out)
}

/// `_thnn_fused_lstm_cell_backward_impl`: `(grad_gates, grad_cx, grad_bias)`; all undefined when
/// neither gradient is.
pub fn lstm_cell_backward(
    grad_hy: Option<TensorRef<'_>>,
    grad_cy: Option<TensorRef<'_>>,
    cx: TensorRef<'_>,
    cy: TensorRef<'_>,
    workspace: TensorRef<'_>,
    has_bias: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    const OP: &str = "_thnn_fused_lstm_cell_backward";
    let Some(defined) = grad_hy.or(grad_cy) else {
        return Ok((Tensor::undefined(), Tensor::undefined(), Tensor::undefined()));
    };
    let dtype = float_dtype(&workspace, OP)?;
    if defined.dim() != 2 {
        return Err(Error::runtime(format!(
            "{OP}: Expected 2-dimensional tensor, but got {}-dimensional tensor for argument 'grad_hy'",
            defined.dim()
        )));
    }
    let sizes = defined.sizes().to_vec();
    for (t, name) in [(grad_hy, "grad_hy"), (grad_cy, "grad_cy"), (Some(cx), "cx"), (Some(cy), "cy")] {
        if let Some(t) = t
            && (t.sizes() != sizes.as_slice() || DType::from_scalar_type(t.dtype())? != dtype)
        {
            return Err(Error::runtime(format!(
                "{OP}: Expected tensor for argument '{name}' to have size {} and dtype {}, but got {} and {}",
                fmt_sizes(&sizes),
                dtype.name(),
                fmt_sizes(t.sizes()),
                DType::from_scalar_type(t.dtype())?.name()
            )));
        }
    }
    let (n, h) = (sizes[0] as usize, sizes[1] as usize);
    if workspace.dim() != 2 || workspace.numel() as usize != n * h * 4 {
        return Err(Error::runtime(format!(
            "{OP}: Expected a 2-dimensional workspace of {} elements, but got size {}",
            n * h * 4,
            fmt_sizes(workspace.sizes())
        )));
    }
    let grad_gates = new_tensor(&[n as i64, 4 * h as i64], dtype)?;
    let grad_cx = new_tensor(&sizes, dtype)?;
    let (ghy, gcy) = (grad_hy.map(|t| dense(&t)).transpose()?, grad_cy.map(|t| dense(&t)).transpose()?);
    let (c, y, w) = (dense(&cx)?, dense(&cy)?, dense(&workspace)?);
    let ptrs = [ghy.as_ref().map_or(0, |d| d.ptr), gcy.as_ref().map_or(0, |d| d.ptr), c.ptr, y.ptr, w.ptr];
    let outs = [grad_gates.as_ref().data_ptr() as usize, grad_cx.as_ref().data_ptr() as usize];
    float_dispatch!(OP, dtype, |T| {
        lstm_backward::<T>(n, h, ptrs, outs);
        Ok(())
    })?;
    let grad_bias = if has_bias { bias_grad(&grad_gates)? } else { Tensor::undefined() };
    Ok((grad_gates, grad_cx, grad_bias))
}

fn lstm_backward<T: Elem>(n: usize, h: usize, [ghy, gcy, cxp, cyp, wp]: [usize; 5], [ggp, gcxp]: [usize; 2]) {
    rows(n, 4 * h, |r0, r1| {
        let zero = T::Acc::from_f64(0.0);
        let one = T::Acc::from_f64(1.0);
        for r in r0..r1 {
            for j in 0..h {
                let (k, off) = (r * h + j, r * 4 * h + j);
                // SAFETY: row r of the N × H and N × 4H tensors, written by this range only; a
                // gradient pointer is read only when it is defined (non-zero).
                unsafe {
                    let (i, f, g, o) =
                        (ld::<T>(wp, off), ld::<T>(wp, off + h), ld::<T>(wp, off + 2 * h), ld::<T>(wp, off + 3 * h));
                    let go = if ghy != 0 { ld::<T>(ghy, k) } else { zero };
                    let goc = if gcy != 0 { ld::<T>(gcy, k) } else { zero };
                    let mut gcx = ld::<T>(cyp, k).th();
                    let mut gog = go * gcx;
                    gcx = go * o * (one - gcx * gcx) + goc;
                    let mut gig = gcx * g;
                    let mut gfg = gcx * ld::<T>(cxp, k);
                    let mut gcg = gcx * i;
                    gcx = gcx * f;
                    gig = gig * (one - i) * i;
                    gfg = gfg * (one - f) * f;
                    gcg = gcg * (one - g * g);
                    gog = gog * (one - o) * o;
                    st::<T>(ggp, off, gig);
                    st::<T>(ggp, off + h, gfg);
                    st::<T>(ggp, off + 2 * h, gcg);
                    st::<T>(ggp, off + 3 * h, gog);
                    st::<T>(gcxp, k, gcx);
                }
            }
        }
    });
}

// ---------------------------------------------------------------------------------------------
// GRU
// ---------------------------------------------------------------------------------------------

/// Columns of the GRU workspace per hidden unit: `[r, i, n, hx, hn + b_hn]`.
const GRU_WORK: usize = 5;

/// `_thnn_fused_gru_cell`: `(hy, workspace)` from the gates `[r, i, n]`.
pub fn gru_cell(
    input_gates: TensorRef<'_>,
    hidden_gates: TensorRef<'_>,
    hx: TensorRef<'_>,
    input_bias: Option<TensorRef<'_>>,
    hidden_bias: Option<TensorRef<'_>>,
) -> Result<(Tensor, Tensor)> {
    const OP: &str = "_thnn_fused_gru_cell";
    let (n, h) = check_cell(OP, &input_gates, &hidden_gates, &input_bias, &hidden_bias, 3, &hx)?;
    let dtype = DType::from_scalar_type(input_gates.dtype())?;
    let workspace = new_tensor(&[n as i64, (h * GRU_WORK) as i64], dtype)?;
    let hy = new_tensor(hx.sizes(), dtype)?;
    let (ig, hg, x) = (dense(&input_gates)?, dense(&hidden_gates)?, dense(&hx)?);
    let b = biases(&input_bias, &hidden_bias)?;
    let bp = b.as_ref().map(|(p, q)| (p.ptr, q.ptr));
    let (wp, hyp) = (workspace.as_ref().data_ptr() as usize, hy.as_ref().data_ptr() as usize);
    float_dispatch!(OP, dtype, |T| {
        gru_forward::<T>(n, h, [ig.ptr, hg.ptr, x.ptr], &bp, [hyp, wp]);
        Ok(())
    })?;
    Ok((hy, workspace))
}

fn gru_forward<T: Elem>(
    n: usize,
    h: usize,
    [ip, hp, xp]: [usize; 3],
    b: &Option<(usize, usize)>,
    [hyp, wp]: [usize; 2],
) {
    rows(n, 3 * h, |r0, r1| {
        for r in r0..r1 {
            for j in 0..h {
                let (k, off, w) = (r * h + j, r * 3 * h + j, r * GRU_WORK * h + j);
                let gate = |g: usize| gate_sum::<T>(ip, hp, b, off + g * h, g * h + j);
                // SAFETY: row r of the N × H, N × 3H and N × 5H tensors, written by this range
                // only.
                unsafe {
                    let (rg, ig) = (gate(0).sig(), gate(1).sig());
                    let (b1n, b2n) = match *b {
                        Some((b1, b2)) => (ld::<T>(b1, 2 * h + j), ld::<T>(b2, 2 * h + j)),
                        None => (T::Acc::from_f64(0.0), T::Acc::from_f64(0.0)),
                    };
                    let hn = ld::<T>(hp, off + 2 * h) + b2n;
                    let ng = (ld::<T>(ip, off + 2 * h) + b1n + rg * hn).th();
                    let x = ld::<T>(xp, k);
                    st::<T>(hyp, k, ng + ig * (x - ng));
                    st::<T>(wp, w, rg);
                    st::<T>(wp, w + h, ig);
                    st::<T>(wp, w + 2 * h, ng);
                    st::<T>(wp, w + 3 * h, x);
                    st::<T>(wp, w + 4 * h, hn);
                }
            }
        }
    });
}

/// `_thnn_fused_gru_cell_backward`: `(grad_input_gates, grad_hidden_gates, grad_hx,
/// grad_input_bias, grad_hidden_bias)`.
pub fn gru_cell_backward(
    grad_hy: TensorRef<'_>,
    workspace: TensorRef<'_>,
    has_bias: bool,
) -> Result<(Tensor, Tensor, Tensor, Tensor, Tensor)> {
    const OP: &str = "_thnn_fused_gru_cell_backward";
    let dtype = float_dtype(&grad_hy, OP)?;
    if grad_hy.dim() != 2 {
        return Err(Error::runtime(format!(
            "{OP}: Expected 2-dimensional tensor, but got {}-dimensional tensor for argument #1 'grad_hy'",
            grad_hy.dim()
        )));
    }
    let (n, h) = (grad_hy.sizes()[0], grad_hy.sizes()[1]);
    let want = [n, h * GRU_WORK as i64];
    if workspace.sizes() != want || DType::from_scalar_type(workspace.dtype())? != dtype {
        return Err(Error::runtime(format!(
            "{OP}: Expected tensor for argument #2 'workspace' to have size {} and dtype {}, but got {}",
            fmt_sizes(&want),
            dtype.name(),
            fmt_sizes(workspace.sizes())
        )));
    }
    let (n, h) = (n as usize, h as usize);
    let gi = new_tensor(&[n as i64, 3 * h as i64], dtype)?;
    let gh = new_tensor(&[n as i64, 3 * h as i64], dtype)?;
    let ghx = new_tensor(grad_hy.sizes(), dtype)?;
    let (go, w) = (dense(&grad_hy)?, dense(&workspace)?);
    let outs = [gi.as_ref().data_ptr() as usize, gh.as_ref().data_ptr() as usize, ghx.as_ref().data_ptr() as usize];
    float_dispatch!(OP, dtype, |T| {
        gru_backward::<T>(n, h, [go.ptr, w.ptr], outs);
        Ok(())
    })?;
    let (gib, ghb) =
        if has_bias { (bias_grad(&gi)?, bias_grad(&gh)?) } else { (Tensor::undefined(), Tensor::undefined()) };
    Ok((gi, gh, ghx, gib, ghb))
}

fn gru_backward<T: Elem>(n: usize, h: usize, [gop, wp]: [usize; 2], [gip, ghp, ghxp]: [usize; 3]) {
    rows(n, 3 * h, |r0, r1| {
        let one = T::Acc::from_f64(1.0);
        for r in r0..r1 {
            for j in 0..h {
                let (k, off, w) = (r * h + j, r * 3 * h + j, r * GRU_WORK * h + j);
                // SAFETY: row r of the N × H, N × 3H and N × 5H tensors, written by this range
                // only.
                unsafe {
                    let (rg, ig, ng) = (ld::<T>(wp, w), ld::<T>(wp, w + h), ld::<T>(wp, w + 2 * h));
                    let (x, hn) = (ld::<T>(wp, w + 3 * h), ld::<T>(wp, w + 4 * h));
                    let go = ld::<T>(gop, k);
                    let gig = go * (x - ng) * (one - ig) * ig;
                    let ghx = go * ig;
                    let gin = go * (one - ig) * (one - ng * ng);
                    let ghn = gin * rg;
                    let grg = gin * hn * (one - rg) * rg;
                    st::<T>(gip, off, grg);
                    st::<T>(gip, off + h, gig);
                    st::<T>(gip, off + 2 * h, gin);
                    st::<T>(ghp, off, grg);
                    st::<T>(ghp, off + h, gig);
                    st::<T>(ghp, off + 2 * h, ghn);
                    st::<T>(ghxp, k, ghx);
                }
            }
        }
    });
}

/// This family's kernels: group `rnn` of regen.toml's `[implement]`.
impl crate::RnnKernels for crate::Reference {
    fn _thnn_fused_lstm_cell(
        &self,
        input_gates: TensorRef<'_>,
        hidden_gates: TensorRef<'_>,
        cx: TensorRef<'_>,
        input_bias: Option<TensorRef<'_>>,
        hidden_bias: Option<TensorRef<'_>>,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        lstm_cell(input_gates, hidden_gates, cx, input_bias, hidden_bias)
    }

    fn _thnn_fused_lstm_cell_backward_impl(
        &self,
        grad_hy: Option<TensorRef<'_>>,
        grad_cy: Option<TensorRef<'_>>,
        cx: TensorRef<'_>,
        cy: TensorRef<'_>,
        workspace: TensorRef<'_>,
        has_bias: bool,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        lstm_cell_backward(grad_hy, grad_cy, cx, cy, workspace, has_bias)
    }

    fn _thnn_fused_gru_cell(
        &self,
        input_gates: TensorRef<'_>,
        hidden_gates: TensorRef<'_>,
        hx: TensorRef<'_>,
        input_bias: Option<TensorRef<'_>>,
        hidden_bias: Option<TensorRef<'_>>,
    ) -> Result<(Tensor, Tensor)> {
        gru_cell(input_gates, hidden_gates, hx, input_bias, hidden_bias)
    }

    fn _thnn_fused_gru_cell_backward(
        &self,
        grad_hy: TensorRef<'_>,
        workspace: TensorRef<'_>,
        has_bias: bool,
    ) -> Result<(Tensor, Tensor, Tensor, Tensor, Tensor)> {
        gru_cell_backward(grad_hy, workspace, has_bias)
    }
}
