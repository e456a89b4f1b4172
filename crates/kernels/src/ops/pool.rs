//! Pooling: max (with indices), average, adaptive average and adaptive max, 2-d and 3-d, and
//! nearest(-exact) upsampling, 1-d to 3-d, forward and backward (plus max unpooling and
//! fractional max pooling, `MaxUnpoolKernel.cpp` and `FractionalMaxPool{2,3}d.cpp`, which are
//! index scatters and random windows rather than plans), as ATen's CPU kernels
//! (`MaxPoolKernel.cpp`, `AvgPoolKernel.cpp`, `AdaptiveAvgPoolKernel.cpp`,
//! `AdaptiveMaxPoolKernel.cpp`, `UpSampleKernel.cpp`) compute them: nearest upsampling is a
//! window of one input element per output.
//!
//! One engine serves every op: a [`Plan`] holds the planes (`batch × channels`), the spatial
//! extents (a 2-d op is a 3-d one of depth 1) and, per spatial dimension and output index, the
//! input window (`Win`) the op's rule gives; the kernels walk planes in parallel and read and
//! write every tensor through its own strides, so contiguous, channels-last, un-batched and
//! strided tensors need no copies. Sums run in the window's order in the op-math type (f32 for
//! float16/bfloat16), so results equal CPU's bit for bit.

use regen_runtime::bootstrap::with_size;
use regen_runtime::{Error, Result, Tensor, TensorRef};

use half::{bf16, f16};

use crate::engine::dtype::{DType, Element, check_out_dtype, not_implemented};
use crate::engine::iter::{GRAIN, fmt_sizes};
use crate::engine::simd_fn;
use crate::ops::spatial::{Px, View, new_like, rd, resolved, sizes_of, upsample_common_check, view};

// ---------------------------------------------------------------------------------------------
// The plan
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    Max,
    Avg { include_pad: bool, divisor: Option<i64> },
    AdaptiveAvg,
    AdaptiveMax,
    Nearest { exact: bool },
}

/// The input range of one output index along one dimension: `lo, lo+step, … < hi`, and the
/// window's length before it was clipped to the input (average pooling's `count_include_pad`).
#[derive(Clone, Copy, Debug)]
struct Win {
    lo: usize,
    hi: usize,
    step: usize,
    full: usize,
}

impl Win {
    /// Elements in the window. Average windows (step 1) skip the division, which the backward
    /// pass made three times per output element (avg_pool2d backward 32x64x56x56 k3s2, float32,
    /// 1 thread: 21.5 -> 20.4 ms; CPU 15).
    fn len(&self) -> usize {
        match self.step {
            1 => self.hi.saturating_sub(self.lo),
            step => self.hi.saturating_sub(self.lo).div_ceil(step),
        }
    }
}

pub struct Plan {
    mode: Mode,
    /// 2 or 3 spatial dimensions.
    nd: usize,
    batched: bool,
    n: usize,
    c: usize,
    inp: [usize; 3],
    out: [usize; 3],
    win: [Vec<Win>; 3],
}

impl Plan {
    fn out_sizes(&self) -> Vec<i64> {
        sizes_of(self.batched, self.n, self.c, &self.out[3 - self.nd..])
    }

    fn plane(&self) -> usize {
        self.inp.iter().product()
    }
}

fn name(mode: Mode, nd: usize) -> String {
    let base = match mode {
        Mode::Max => "max_pool",
        Mode::Avg { .. } => "avg_pool",
        Mode::AdaptiveAvg => "adaptive_avg_pool",
        Mode::AdaptiveMax => "adaptive_max_pool",
        Mode::Nearest { exact: false } => "upsample_nearest",
        Mode::Nearest { exact: true } => "_upsample_nearest_exact",
    };
    format!("{base}{nd}d")
}

/// A pooling parameter, as ATen's messages name it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Param {
    KernelSize,
    /// May be omitted: it is then the kernel size.
    Stride,
    Padding,
    Dilation,
}

impl Param {
    fn name(self) -> &'static str {
        match self {
            Param::KernelSize => "kernel_size",
            Param::Stride => "stride",
            Param::Padding => "padding",
            Param::Dilation => "dilation",
        }
    }
}

/// A parameter list of 1 or `nd` values (or empty, for a stride: the kernel size).
fn param(v: &[i64], nd: usize, fallback: Option<&[i64]>, mode: Mode, what: Param) -> Result<[i64; 3]> {
    let v = if v.is_empty() && fallback.is_some() { fallback.unwrap_or_default() } else { v };
    let words = if nd == 2 { "two" } else { "three" };
    if v.len() != 1 && v.len() != nd {
        let msg = match what {
            Param::Stride => {
                format!("{}: stride must either be omitted, a single int, or a tuple of {words} ints", name(mode, nd))
            }
            _ => format!("{}: {} must either be a single int, or a tuple of {words} ints", name(mode, nd), what.name()),
        };
        return Err(Error::runtime(msg));
    }
    // A 2-d op's depth: one plane, a window of 1, no padding.
    let mut out = [if what == Param::Padding { 0 } else { 1 }; 3];
    for (k, o) in out.iter_mut().enumerate().skip(3 - nd) {
        *o = if v.len() == 1 { v[0] } else { v[k - (3 - nd)] };
    }
    Ok(out)
}

/// `pooling_output_shape` (with its checks).
fn out_size(inp: i64, k: i64, pad: i64, stride: i64, dil: i64, ceil: bool) -> Result<i64> {
    if stride == 0 {
        return Err(Error::runtime("stride should not be zero"));
    }
    if pad < 0 {
        return Err(Error::runtime(format!("pad must be non-negative, but got pad: {pad}")));
    }
    if pad > ((k - 1) * dil + 1) / 2 {
        return Err(Error::runtime(format!(
            "pad should be at most half of effective kernel size, but got pad={pad}, kernel_size={k} and dilation={dil}"
        )));
    }
    let num = inp + 2 * pad - dil * (k - 1) - 1 + if ceil { stride - 1 } else { 0 };
    let mut o = num.div_euclid(stride) + 1;
    if ceil && (o - 1) * stride >= inp + pad {
        o -= 1;
    }
    Ok(o)
}

/// The input's planes and spatial extents, with the dimension checks of the op.
fn input_dims(s: &[i64], nd: usize, mode: Mode) -> Result<(bool, usize, usize, [usize; 3])> {
    let k = s.len();
    if k != nd + 1 && k != nd + 2 {
        let what = if nd == 2 { "3D or 4D" } else { "4D or 5D" };
        return Err(Error::runtime(match mode {
            Mode::AdaptiveAvg | Mode::AdaptiveMax => {
                format!("{}(): Expected {what} tensor, but got: {}", name(mode, nd), fmt_sizes(s))
            }
            _ if nd == 2 => format!(
                "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:{}",
                fmt_sizes(s)
            ),
            _ => format!("{}: Expected 4D or 5D tensor for input, but got: {}", name(mode, nd), fmt_sizes(s)),
        }));
    }
    let batched = k == nd + 2;
    let first = if batched { 1 } else { 0 };
    if let Some(&bad) = s[first..].iter().find(|&&v| v <= 0) {
        let _ = bad;
        return Err(Error::runtime(match mode {
            Mode::AdaptiveAvg | Mode::AdaptiveMax => format!(
                "{}(): Expected input to have non-zero size for non-batch dimensions, but input has sizes {} with dimension {} being empty",
                name(mode, nd),
                fmt_sizes(s),
                s.iter().enumerate().skip(first).find(|(_, v)| **v <= 0).map_or(0, |(i, _)| i)
            ),
            _ if nd == 2 => format!(
                "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:{}",
                fmt_sizes(s)
            ),
            _ => format!(
                "{}: Expected input's non-batch dimensions to have positive length, but input has a shape of {} and non-batch dimension {} has length zero!",
                name(mode, nd),
                fmt_sizes(s),
                bad
            ),
        }));
    }
    let n = if batched { s[0] as usize } else { 1 };
    let c = s[first] as usize;
    let mut inp = [1usize; 3];
    for (j, v) in inp.iter_mut().enumerate().skip(3 - nd) {
        *v = s[k - 3 + j] as usize;
    }
    Ok((batched, n, c, inp))
}

/// The plan of max or average pooling.
#[allow(clippy::too_many_arguments)]
fn window_plan(
    mode: Mode,
    nd: usize,
    input: &TensorRef<'_>,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil: bool,
) -> Result<Plan> {
    let k = param(kernel, nd, None, mode, Param::KernelSize)?;
    let s = param(stride, nd, Some(kernel), mode, Param::Stride)?;
    let p = param(padding, nd, None, mode, Param::Padding)?;
    let d = param(dilation, nd, None, mode, Param::Dilation)?;
    if let Mode::Avg { divisor: Some(0), .. } = mode {
        return Err(Error::runtime("divisor must be not zero"));
    }
    let (batched, n, c, inp) = input_dims(input.sizes(), nd, mode)?;
    let tail = |v: [i64; 3]| v[3 - nd..].iter().map(|x| x.to_string()).collect::<Vec<_>>();
    if k.iter().any(|&v| v <= 0) {
        return Err(Error::runtime(format!("kernel size should be greater than zero, but got {}", tail(k).join(" "))));
    }
    if s.iter().any(|&v| v <= 0) {
        return Err(Error::runtime(format!("stride should be greater than zero, but got {}", tail(s).join(" "))));
    }
    if d.iter().any(|&v| v <= 0) {
        return Err(Error::runtime(format!("dilation should be greater than zero, but got {}", tail(d).join(" "))));
    }
    if nd == 3 && matches!(mode, Mode::Avg { .. }) && (0..3).any(|j| (inp[j] as i64) < k[j]) {
        return Err(Error::runtime(format!(
            "input image (T: {} H: {} W: {}) smaller than kernel size (kT: {} kH: {} kW: {})",
            inp[0], inp[1], inp[2], k[0], k[1], k[2]
        )));
    }
    let mut sizes = [0i64; 3];
    for j in 0..3 {
        sizes[j] = out_size(inp[j] as i64, k[j], p[j], s[j], d[j], ceil)?;
    }
    if sizes.iter().any(|&o| o < 1) {
        let inputs = inp[3 - nd..].iter().map(|x| x.to_string()).collect::<Vec<_>>().join("x");
        let outputs = sizes[3 - nd..].iter().map(|x| x.to_string()).collect::<Vec<_>>().join("x");
        return Err(Error::runtime(format!(
            "Given input size: ({c}x{inputs}). Calculated output size: ({c}x{outputs}). Output size is too small"
        )));
    }
    let mut out = [1usize; 3];
    let mut win: [Vec<Win>; 3] = Default::default();
    for j in 0..3 {
        let i = inp[j] as i64;
        let o = sizes[j];
        out[j] = o as usize;
        win[j] = (0..o)
            .map(|oi| {
                let start = oi * s[j] - p[j];
                match mode {
                    Mode::Avg { .. } => {
                        let end = (start + k[j]).min(i + p[j]);
                        let full = (end - start).max(0) as usize;
                        let (lo, hi) = (start.max(0), end.min(i));
                        Win { lo: lo as usize, hi: hi.max(lo) as usize, step: 1, full }
                    }
                    _ => {
                        let end = (start + (k[j] - 1) * d[j] + 1).min(i);
                        let mut lo = start;
                        while lo < 0 {
                            lo += d[j];
                        }
                        Win { lo: lo as usize, hi: end.max(lo) as usize, step: d[j] as usize, full: 0 }
                    }
                }
            })
            .collect();
    }
    Ok(Plan { mode, nd, batched, n, c, inp, out, win })
}

/// The plan of adaptive pooling: output index `o` of `out` reads `[⌊o·in/out⌋, ⌈(o+1)·in/out⌉)`.
fn adaptive_plan(mode: Mode, nd: usize, input: &TensorRef<'_>, output_size: &[i64]) -> Result<Plan> {
    if output_size.len() != nd {
        return Err(Error::runtime(format!("{}: output_size must be {nd}", name(mode, nd))));
    }
    let (batched, n, c, inp) = input_dims(input.sizes(), nd, mode)?;
    if let Some(&bad) = output_size.iter().find(|&&v| v < 0) {
        return Err(Error::runtime(format!(
            "{}: elements of output_size must be greater than or equal to 0 but received {bad}",
            name(mode, nd)
        )));
    }
    let mut out = [1usize; 3];
    let mut win: [Vec<Win>; 3] = Default::default();
    for j in 0..3 {
        let o = if j < 3 - nd { 1 } else { output_size[j - (3 - nd)] as usize };
        out[j] = o;
        let i = inp[j];
        win[j] = (0..o)
            .map(|oi| {
                let lo = oi * i / o;
                let hi = ((oi + 1) * i).div_ceil(o);
                Win { lo, hi, step: 1, full: hi - lo }
            })
            .collect();
    }
    Ok(Plan { mode, nd, batched, n, c, inp, out, win })
}

/// The plan of nearest upsampling (`upsample_{1,2,3}d_common_check`, `nearest_idx`,
/// `nearest_exact_idx`): output index `o` reads `⌊o·scale⌋` (`⌊(o + ½)·scale⌋` exact), the scale
/// `1/scales` when given, else `in/out`, in float as CPU computes it.
fn nearest_plan(nd: usize, exact: bool, in_sizes: &[i64], output_size: &[i64], scales: &[Option<f64>]) -> Result<Plan> {
    let mode = Mode::Nearest { exact };
    upsample_common_check(nd, in_sizes, output_size)?;
    let spatial = &in_sizes[2..];
    let (batched, n, c, inp) = input_dims(in_sizes, nd, mode).or_else(|_| {
        // A batch or channel of 0: no planes, nothing to compute.
        Ok::<_, Error>((true, in_sizes[0].max(0) as usize, in_sizes[1].max(0) as usize, [1, 1, 1]))
    })?;
    let mut inp = inp;
    for j in 0..nd {
        inp[3 - nd + j] = spatial[j] as usize;
    }
    let mut out = [1usize; 3];
    let mut win: [Vec<Win>; 3] = Default::default();
    for j in 0..3 {
        let (i, o) = if j < 3 - nd { (1, 1) } else { (inp[j], output_size[j - (3 - nd)] as usize) };
        out[j] = o;
        let scale = if j < 3 - nd { None } else { scales.get(j - (3 - nd)).copied().flatten() };
        let s = match scale {
            Some(v) if v > 0.0 => (1.0 / v) as f32,
            _ => i as f32 / o as f32,
        };
        win[j] = (0..o)
            .map(|oi| {
                let src = if exact {
                    ((oi as f64 + 0.5) * s as f64) as f32
                } else if o == i {
                    oi as f32
                } else if o == 2 * i {
                    (oi >> 1) as f32
                } else {
                    oi as f32 * s
                };
                let lo = (src.floor() as i64).clamp(0, i as i64 - 1) as usize;
                Win { lo, hi: lo + 1, step: 1, full: 1 }
            })
            .collect();
    }
    Ok(Plan { mode, nd, batched, n, c, inp, out, win })
}

// ---------------------------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------------------------

/// Input elements read per output element (its first window's size).
fn per_out(p: &Plan) -> usize {
    p.win.iter().map(|w| w.first().map_or(1, |w| w.len().max(1))).product()
}

/// Planes per task: about GRAIN elements of work.
fn grain(p: &Plan) -> usize {
    let work = p.out.iter().product::<usize>() * per_out(p);
    (GRAIN / work.max(1)).max(1)
}

/// Calls `f` with a pointer to each element of a window of plane `base` (strides `st`), in the
/// window's order, its rows walked by stepped pointers (offsets computed per element from three
/// strides made average pooling forward and backward a quarter slower than CPU's).
///
/// # Safety
/// The window lies inside the plane `base` of a tensor with strides `st`.
#[inline(always)]
unsafe fn for_window<T>(base: *mut T, st: &[isize; 5], [wd, wh, ww]: [&Win; 3], mut f: impl FnMut(*mut T)) {
    let wstep = st[4] * ww.step as isize;
    let mut d = wd.lo;
    while d < wd.hi {
        let mut h = wh.lo;
        while h < wh.hi {
            let mut q = base.wrapping_offset(d as isize * st[2] + h as isize * st[3] + ww.lo as isize * st[4]);
            if wstep == 1 {
                // A contiguous row with its unit stride visible to the compiler, which
                // vectorises a row of `+= delta` (backward) that a run-time step keeps scalar.
                for k in 0..ww.hi.saturating_sub(ww.lo) {
                    f(q.wrapping_add(k));
                }
            } else {
                let mut w = ww.lo;
                while w < ww.hi {
                    f(q);
                    q = q.wrapping_offset(wstep);
                    w += ww.step;
                }
            }
            h += wh.step;
        }
        d += wd.step;
    }
}

/// The sum of a window's elements of plane `xp` of `x` in op-math, in the window's order, each
/// partial sum passed through `r` (rounding to the element type where CPU's kernel does).
///
/// # Safety
/// The window lies inside the plane `xp` of `x`.
#[inline(always)]
unsafe fn window_sum<T: Px>(xp: *const T, x: &View, wins: [&Win; 3], r: impl Fn(T::Acc) -> T::Acc) -> T::Acc {
    let mut sum = T::acc_zero();
    // SAFETY: the caller's contract; every pointer is an element of the window.
    unsafe { for_window(xp.cast_mut(), &x.st, wins, |q| sum = r(T::add(sum, (*q).to_acc()))) };
    sum
}

fn forward<T: Px>(p: &Plan, x: View, y: View, idx: Option<View>) {
    if channels_innermost(p, &x, &y, &idx) {
        return forward_channels_last::<T>(p, x, y, idx);
    }
    if matches!(p.mode, Mode::Max | Mode::AdaptiveMax) {
        return forward_max::<T>(p, x, y, idx);
    }
    let planes = p.n * p.c;
    regen_runtime::host::parallel_for(planes, grain(p), |a, b| {
        for pl in a..b {
            let (bn, ch) = (pl / p.c, pl % p.c);
            let xp = (x.ptr as *const T).wrapping_offset(x.at(bn, ch, 0, 0, 0));
            for (od, wd) in p.win[0].iter().enumerate() {
                for (oh, wh) in p.win[1].iter().enumerate() {
                    for (ow, ww) in p.win[2].iter().enumerate() {
                        let o = y.at(bn, ch, od, oh, ow);
                        // SAFETY: every call passes window indices, which lie inside the input
                        // (the plan clips them to 0..inp, or clamps nearest's), so at() reads
                        // an element of plane (bn, ch) of the input the plan was built from.
                        let at = |d: usize, h: usize, w: usize| unsafe {
                            *xp.offset(d as isize * x.st[2] + h as isize * x.st[3] + w as isize * x.st[4])
                        };
                        match p.mode {
                            Mode::Max | Mode::AdaptiveMax => unreachable!("forward_max pools the max modes"),
                            Mode::Avg { include_pad, divisor } => {
                                let v = if wd.len() == 0 || wh.len() == 0 || ww.len() == 0 {
                                    T::acc_zero()
                                } else {
                                    // SAFETY: the plan clips windows to the input.
                                    let sum = unsafe { window_sum::<T>(xp, &x, [wd, wh, ww], |a| a) };
                                    let div = divisor.unwrap_or(if include_pad {
                                        (wd.full * wh.full * ww.full) as i64
                                    } else {
                                        (wd.len() * wh.len() * ww.len()) as i64
                                    });
                                    T::div(sum, div)
                                };
                                // SAFETY: o is output element (bn, ch, od, oh, ow) of y (resized
                                // to the plan's output sizes); plane (bn, ch) is this thread's.
                                unsafe { *(y.ptr as *mut T).offset(o) = T::from_acc(v) };
                            }
                            Mode::Nearest { .. } => {
                                // SAFETY: o is this thread's output element as above; the read is
                                // at(), of nearest_plan's indices clamped to 0..inp.
                                unsafe { *(y.ptr as *mut T).offset(o) = at(wd.lo, wh.lo, ww.lo) };
                            }
                            Mode::AdaptiveAvg => {
                                // CPU's 3-d kernel sums and divides in the element type (float16
                                // and bfloat16 round at each step), its 2-d kernel in op-math.
                                let r = |a: T::Acc| if p.nd == 3 { rd::<T>(a) } else { a };
                                // SAFETY: the plan clips windows to the input.
                                let sum = unsafe { window_sum::<T>(xp, &x, [wd, wh, ww], r) };
                                // CPU divides by each extent in turn (`sum / kh / kw`).
                                let mut v = sum;
                                for k in &[wd.full, wh.full, ww.full][3 - p.nd..] {
                                    v = r(T::div(v, *k as i64));
                                }
                                // SAFETY: o is output element (bn, ch, od, oh, ow) of y, in plane
                                // (bn, ch), which only this thread writes.
                                unsafe { *(y.ptr as *mut T).offset(o) = T::from_acc(v) };
                            }
                        }
                    }
                }
            }
        }
    });
}

/// Max pooling plane by plane, the mode decided once rather than per output element: each
/// window's rows walked by a stepped pointer, CPU's `val > max || isnan(val)` update (the first
/// maximum wins, a NaN sticks).
fn forward_max<T: Px>(p: &Plan, x: View, y: View, idx: Option<View>) {
    let [ih, iw] = [p.inp[1], p.inp[2]];
    regen_runtime::host::parallel_for(p.n * p.c, grain(p), |a, b| {
        for pl in a..b {
            let (bn, ch) = (pl / p.c, pl % p.c);
            let xp = (x.ptr as *const T).wrapping_offset(x.at(bn, ch, 0, 0, 0));
            let yp = (y.ptr as *mut T).wrapping_offset(y.at(bn, ch, 0, 0, 0));
            let ip = idx.map(|iv| (iv.ptr as *mut i64).wrapping_offset(iv.at(bn, ch, 0, 0, 0)));
            for (od, wd) in p.win[0].iter().enumerate() {
                for (oh, wh) in p.win[1].iter().enumerate() {
                    let yrow = yp.wrapping_offset(od as isize * y.st[2] + oh as isize * y.st[3]);
                    for (ow, ww) in p.win[2].iter().enumerate() {
                        let mut best = T::lowest();
                        let mut bi = (wd.lo * ih + wh.lo) * iw + ww.lo;
                        let wstep = x.st[4] * ww.step as isize;
                        // Plain loops rather than `step_by`, whose setup divides once per
                        // window row.
                        let mut d = wd.lo;
                        while d < wd.hi {
                            let mut h = wh.lo;
                            while h < wh.hi {
                                let base = (d * ih + h) * iw;
                                let mut xq = xp.wrapping_offset(
                                    d as isize * x.st[2] + h as isize * x.st[3] + ww.lo as isize * x.st[4],
                                );
                                let mut w = ww.lo;
                                while w < ww.hi {
                                    // SAFETY: window indices lie inside the input (the plan
                                    // clips them).
                                    let v = unsafe { *xq }.to_acc();
                                    if v > best || <T as Px>::is_nan(v) {
                                        best = v;
                                        bi = base + w;
                                    }
                                    xq = xq.wrapping_offset(wstep);
                                    w += ww.step;
                                }
                                h += wh.step;
                            }
                            d += wd.step;
                        }
                        // SAFETY: yrow + ow·st[4] is output element (bn, ch, od, oh, ow) of y
                        // (resized to the plan's output), in this thread's plane.
                        unsafe { *yrow.offset(ow as isize * y.st[4]) = T::from_acc(best) };
                        if let (Some(ip), Some(iv)) = (ip, idx) {
                            let io = od as isize * iv.st[2] + oh as isize * iv.st[3] + ow as isize * iv.st[4];
                            // SAFETY: ip + io is element (bn, ch, od, oh, ow) of the indices,
                            // resized to the same output sizes, in this thread's plane.
                            unsafe { *ip.offset(io) = bi as i64 };
                        }
                    }
                }
            }
        }
    });
}

/// Whether max or average pooling can walk channels innermost: input, output and indices all
/// have channel stride 1 (channels-last), with more than one channel and planes whose indices
/// fit in 32 bits.
fn channels_innermost(p: &Plan, x: &View, y: &View, idx: &Option<View>) -> bool {
    matches!(p.mode, Mode::Max | Mode::Avg { .. })
        && p.c > 1
        && p.inp.iter().product::<usize>() <= u32::MAX as usize
        && x.st[1] == 1
        && y.st[1] == 1
        && idx.as_ref().is_none_or(|v| v.st[1] == 1)
}

simd_fn! {
    /// One window element's row of channels against the running maxima and their indices, as
    /// selects rather than branches so the channels vectorise (CPU's `vec::blendv`).
    fn max_update<T: Px>(acc: &mut [T::Acc], arg: &mut [u32], row: &[T], lin: u32) {
        for ((best, bi), &v) in acc.iter_mut().zip(arg.iter_mut()).zip(row) {
            let v = v.to_acc();
            let take = v > *best || T::is_nan(v);
            *best = if take { v } else { *best };
            *bi = if take { lin } else { *bi };
        }
    }
}

/// Max and average pooling of channels-last tensors, as CPU's `cpu_max_pool_channels_last` /
/// `cpu_avg_pool_channels_last`: for each output position, the window's elements in the same
/// order as the plane walk, each updating a row of `C` contiguous channels (so every channel
/// sees the same operations as there, and the results are the same bits).
fn forward_channels_last<T: Px>(p: &Plan, x: View, y: View, idx: Option<View>) {
    let [od, oh, ow] = p.out;
    let [ih, iw] = [p.inp[1], p.inp[2]];
    let c = p.c;
    let positions = p.n * od * oh * ow;
    let grain = (GRAIN / (per_out(p) * c).max(1)).max(1);
    regen_runtime::host::parallel_for(positions, grain, |a, b| {
        let mut acc = vec![T::acc_zero(); c];
        let mut arg = vec![0u32; c];
        for pos in a..b {
            let (bn, rest) = (pos / (od * oh * ow), pos % (od * oh * ow));
            let (d_o, h_o, w_o) = (rest / (oh * ow), rest / ow % oh, rest % ow);
            let (wd, wh, ww) = (p.win[0][d_o], p.win[1][h_o], p.win[2][w_o]);
            let xp = (x.ptr as *const T).wrapping_offset(x.at(bn, 0, 0, 0, 0));
            // SAFETY: every call passes window indices, inside the input (the plan clips them),
            // and channels 0..c are contiguous (x.st[1] == 1, channels_innermost), so the row is
            // c elements of batch bn of the input.
            let row = |d: usize, h: usize, w: usize| unsafe {
                std::slice::from_raw_parts(
                    xp.offset(d as isize * x.st[2] + h as isize * x.st[3] + w as isize * x.st[4]),
                    c,
                )
            };
            // SAFETY: the c contiguous channels (y.st[1] == 1) of output position (bn, d_o, h_o,
            // w_o), inside the output (resized to the plan's); each position is one thread's.
            let yo = unsafe { std::slice::from_raw_parts_mut((y.ptr as *mut T).offset(y.at(bn, 0, d_o, h_o, w_o)), c) };
            match p.mode {
                Mode::Max => {
                    acc.fill(T::lowest());
                    arg.fill(((wd.lo * ih + wh.lo) * iw + ww.lo) as u32);
                    for d in (wd.lo..wd.hi).step_by(wd.step) {
                        for h in (wh.lo..wh.hi).step_by(wh.step) {
                            for w in (ww.lo..ww.hi).step_by(ww.step) {
                                max_update::<T>(&mut acc, &mut arg, row(d, h, w), ((d * ih + h) * iw + w) as u32);
                            }
                        }
                    }
                    for (o, &v) in yo.iter_mut().zip(&acc) {
                        *o = T::from_acc(v);
                    }
                    if let Some(iv) = idx {
                        // SAFETY: as for yo, in the indices (same output sizes, channel stride 1
                        // by channels_innermost).
                        let io = unsafe {
                            std::slice::from_raw_parts_mut((iv.ptr as *mut i64).offset(iv.at(bn, 0, d_o, h_o, w_o)), c)
                        };
                        for (o, &i) in io.iter_mut().zip(&arg) {
                            *o = i as i64;
                        }
                    }
                }
                Mode::Avg { include_pad, divisor } => {
                    if wd.len() == 0 || wh.len() == 0 || ww.len() == 0 {
                        yo.fill(T::from_acc(T::acc_zero()));
                        continue;
                    }
                    acc.fill(T::acc_zero());
                    for d in wd.lo..wd.hi {
                        for h in wh.lo..wh.hi {
                            for w in ww.lo..ww.hi {
                                for (s, &v) in acc.iter_mut().zip(row(d, h, w)) {
                                    *s = T::add(*s, v.to_acc());
                                }
                            }
                        }
                    }
                    let div = divisor.unwrap_or(if include_pad {
                        (wd.full * wh.full * ww.full) as i64
                    } else {
                        (wd.len() * wh.len() * ww.len()) as i64
                    });
                    for (o, &s) in yo.iter_mut().zip(&acc) {
                        *o = T::from_acc(T::div(s, div));
                    }
                }
                _ => unreachable!("channels_innermost admits max and average pooling only"),
            }
        }
    });
}

/// Zeroes a plane of grad_input (`gp`, sizes `inp`, strides `gi`'s); returns whether it is dense,
/// i.e. whether a flat index within the plane is its offset.
///
/// # Safety
/// `gp` is a plane of `gi` with the plan's input sizes, which no other thread writes.
unsafe fn zero_plane<T: Px>(gp: *mut T, gi: &View, [id, ih, iw]: [usize; 3]) -> bool {
    let dense = gi.st[4] == 1 && gi.st[3] == iw as isize && (id == 1 || gi.st[2] == (ih * iw) as isize);
    if dense {
        // SAFETY: the plane's id*ih*iw elements are contiguous; zero bits are zero in every dtype.
        unsafe { std::ptr::write_bytes(gp, 0, id * ih * iw) };
        return true;
    }
    for d in 0..id {
        for h in 0..ih {
            for w in 0..iw {
                let o = d as isize * gi.st[2] + h as isize * gi.st[3] + w as isize * gi.st[4];
                // SAFETY: (d, h, w) < (id, ih, iw), an element of the plane.
                unsafe { *gp.offset(o) = T::from_acc(T::acc_zero()) };
            }
        }
    }
    false
}

/// Max pooling's backward plane by plane: each output's gradient added at its saved index, the
/// gradient and index rows walked by stepped pointers (through [`backward`]'s general walk, which
/// computes five-term offsets and matches the mode per output, the max_pool2d backward of a
/// ResNet stem took twice CPU's time). Returns false when an index lies outside its plane (that
/// gradient is skipped, and the caller reports the first such index): the indices are checked
/// here, in the parallel loop, rather than in a serial pass of their own over all of them.
fn backward_max<T: Px>(p: &Plan, go: View, gi: View, iv: View) -> bool {
    let [id, ih, iw] = p.inp;
    let [od_n, oh_n, ow_n] = p.out;
    let plane = (id * ih * iw) as u64;
    let valid = std::sync::atomic::AtomicBool::new(true);
    regen_runtime::host::parallel_for(p.n * p.c, grain(p), |a, b| {
        for pl in a..b {
            let (bn, ch) = (pl / p.c, pl % p.c);
            let gp = (gi.ptr as *mut T).wrapping_offset(gi.at(bn, ch, 0, 0, 0));
            // SAFETY: gp is plane (bn, ch) of grad_input, this thread's.
            let dense = unsafe { zero_plane::<T>(gp, &gi, p.inp) };
            let gop = (go.ptr as *const T).wrapping_offset(go.at(bn, ch, 0, 0, 0));
            let ip = (iv.ptr as *const i64).wrapping_offset(iv.at(bn, ch, 0, 0, 0));
            for od in 0..od_n {
                for oh in 0..oh_n {
                    let g_row = gop.wrapping_offset(od as isize * go.st[2] + oh as isize * go.st[3]);
                    let i_row = ip.wrapping_offset(od as isize * iv.st[2] + oh as isize * iv.st[3]);
                    for ow in 0..ow_n {
                        // SAFETY: grad_output's and the indices' sizes were checked equal to the
                        // plan's output sizes (run_backward): (bn, ch, od, oh, ow) is an element
                        // of each.
                        let (g, i) =
                            unsafe { (*g_row.offset(ow as isize * go.st[4]), *i_row.offset(ow as isize * iv.st[4])) };
                        // CPU skips -1 (`maxindex != -1`) and writes any other index out of the
                        // plane out of bounds.
                        if i as u64 >= plane {
                            if i != -1 {
                                valid.store(false, std::sync::atomic::Ordering::Relaxed);
                            }
                            continue;
                        }
                        let i = i as usize;
                        let o = if dense {
                            i as isize
                        } else {
                            (i / (ih * iw)) as isize * gi.st[2]
                                + (i / iw % ih) as isize * gi.st[3]
                                + (i % iw) as isize * gi.st[4]
                        };
                        // SAFETY: o is an element of this thread's plane (the index was checked
                        // in 0..plane just above).
                        unsafe { *gp.offset(o) = T::from_acc(rd::<T>(T::add((*gp.offset(o)).to_acc(), g.to_acc()))) };
                    }
                }
            }
        }
    });
    valid.into_inner()
}

/// The backward pass of the average modes and nearest upsampling (the max modes, which come with
/// indices, take [`backward_max`]).
fn backward<T: Px>(p: &Plan, go: View, gi: View) {
    let [id, ih, iw] = p.inp;
    let planes = p.n * p.c;
    regen_runtime::host::parallel_for(planes, grain(p), |a, b| {
        // Nearest upsampling sums a plane in op-math and rounds once (CPU's `acc_data_ptr`).
        let mut acc = vec![T::acc_zero(); if matches!(p.mode, Mode::Nearest { .. }) { id * ih * iw } else { 0 }];
        for pl in a..b {
            let (bn, ch) = (pl / p.c, pl % p.c);
            let gp = (gi.ptr as *mut T).wrapping_offset(gi.at(bn, ch, 0, 0, 0));
            let gat =
                |d: usize, h: usize, w: usize| d as isize * gi.st[2] + h as isize * gi.st[3] + w as isize * gi.st[4];
            // SAFETY: every call passes an element of plane (bn, ch) of grad_input (the input's
            // sizes): one of a window the plan clipped to the input, or of the whole plane. The
            // plane is this thread's only.
            let add = |q: *mut T, v: T::Acc| unsafe { *q = T::from_acc(rd::<T>(T::add((*q).to_acc(), v))) };
            // SAFETY: gp is plane (bn, ch) of grad_input, this thread's.
            unsafe { zero_plane::<T>(gp, &gi, p.inp) };
            for (od, wd) in p.win[0].iter().enumerate() {
                for (oh, wh) in p.win[1].iter().enumerate() {
                    for (ow, ww) in p.win[2].iter().enumerate() {
                        // SAFETY: grad_output's sizes were checked equal to the plan's output
                        // sizes (run_backward), so (bn, ch, od, oh, ow) is one of its elements.
                        let g = unsafe { *(go.ptr as *const T).offset(go.at(bn, ch, od, oh, ow)) }.to_acc();
                        match p.mode {
                            Mode::Nearest { .. } => {
                                let k = (wd.lo * ih + wh.lo) * iw + ww.lo;
                                acc[k] = T::add(acc[k], g);
                            }
                            Mode::Max | Mode::AdaptiveMax => {
                                unreachable!("run_backward routes the max modes to backward_max")
                            }
                            Mode::Avg { include_pad, divisor } => {
                                if wd.len() == 0 || wh.len() == 0 || ww.len() == 0 {
                                    continue;
                                }
                                let div = divisor.unwrap_or(if include_pad {
                                    (wd.full * wh.full * ww.full) as i64
                                } else {
                                    (wd.len() * wh.len() * ww.len()) as i64
                                });
                                let delta = rd::<T>(T::div(g, div));
                                // SAFETY: the plan clips windows to the input; the plane is
                                // this thread's.
                                unsafe { for_window(gp, &gi.st, [wd, wh, ww], |q| add(q, delta)) };
                            }
                            Mode::AdaptiveAvg => {
                                let mut delta = g;
                                for k in &[wd.full, wh.full, ww.full][3 - p.nd..] {
                                    delta = rd::<T>(T::div(delta, *k as i64));
                                }
                                // SAFETY: as for the average mode.
                                unsafe { for_window(gp, &gi.st, [wd, wh, ww], |q| add(q, delta)) };
                            }
                        }
                    }
                }
            }
            if !acc.is_empty() {
                for d in 0..id {
                    for h in 0..ih {
                        for w in 0..iw {
                            let k = (d * ih + h) * iw + w;
                            // SAFETY: (d, h, w) < (id, ih, iw), an element of this thread's plane
                            // of grad_input.
                            unsafe { *gp.offset(gat(d, h, w)) = T::from_acc(acc[k]) };
                            acc[k] = T::acc_zero();
                        }
                    }
                }
            }
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Ops
// ---------------------------------------------------------------------------------------------

/// The dtypes CPU's kernel of `mode` takes (forward).
fn check_dtype(mode: Mode, nd: usize, t: &TensorRef<'_>) -> Result<DType> {
    let d = DType::from_scalar_type(t.dtype())?;
    let ok = match mode {
        Mode::Max => matches!(d, DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64) || d.is_floating(),
        Mode::Avg { .. } => d == DType::I64 || d == DType::F32 || d == DType::F64 || (nd == 2 && d.is_floating()),
        Mode::Nearest { .. } => d == DType::U8 || d.is_floating(),
        _ => d.is_floating(),
    };
    if ok {
        return Ok(d);
    }
    let kernel = match (mode, nd) {
        (Mode::Max, 2) => "max_pool2d",
        (Mode::Max, _) => "max_pool3d_cpu",
        (Mode::Avg { .. }, 2) => "avg_pool2d",
        (Mode::Avg { .. }, _) => "avg_pool3d_out_frame",
        (Mode::AdaptiveAvg, 2) => "adaptive_avg_pool2d",
        (Mode::AdaptiveAvg, _) => "adaptive_avg_pool3d_cpu",
        (Mode::AdaptiveMax, 2) => "adaptive_max_pool2d",
        (Mode::AdaptiveMax, _) => "adaptive_max_pool3d_cpu",
        (Mode::Nearest { .. }, 2) => "upsample_nearest2d_channels_last",
        (Mode::Nearest { .. }, _) => "compute_indices_weights_nearest",
    };
    Err(not_implemented(kernel, d))
}

/// The forward pass into `out` (and `indices` for the max ops), both resized to the plan's
/// output when their sizes differ.
fn run_forward(p: &Plan, input: &TensorRef<'_>, out: &TensorRef<'_>, indices: Option<&TensorRef<'_>>) -> Result<()> {
    let dtype = check_dtype(p.mode, p.nd, input)?;
    check_out_dtype(out, dtype)?;
    if let Some(i) = indices {
        check_out_dtype(i, DType::I64)?;
    }
    let sizes = p.out_sizes();
    with_size(out, &sizes, |o| {
        let go = |iv: Option<View>| -> Result<()> {
            if p.n * p.c == 0 {
                return Ok(());
            }
            let copy = resolved(input)?;
            let x = view(&copy.as_ref().map_or(*input, |c| c.as_ref()), p.nd);
            let y = view(o, p.nd);
            crate::dispatch!(dtype, [U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| {
                forward::<T>(p, x, y, iv);
                Ok(())
            }, else Err(not_implemented(&name(p.mode, p.nd), dtype)))
        };
        match indices {
            Some(i) => with_size(i, &sizes, |i| go(Some(view(i, p.nd)))),
            None => go(None),
        }
    })
}

/// The backward pass into `grad_input` (resized to the input's sizes when they differ).
fn run_backward(
    p: &Plan,
    grad_output: &TensorRef<'_>,
    (in_sizes, dtype): (&[i64], DType),
    indices: Option<&TensorRef<'_>>,
    grad_input: &TensorRef<'_>,
) -> Result<()> {
    if !dtype.is_floating() {
        return Err(not_implemented(&format!("{}_backward", name(p.mode, p.nd)), dtype));
    }
    let gd = DType::from_scalar_type(grad_output.dtype())?;
    if gd != dtype {
        return Err(Error::runtime(format!("expected scalar type {} but found {}", dtype.name(), gd.name())));
    }
    check_out_dtype(grad_input, dtype)?;
    let sizes = p.out_sizes();
    if grad_output.sizes() != sizes.as_slice() {
        return Err(Error::runtime(format!(
            "Expected grad_output of size {} but got {}",
            fmt_sizes(&sizes),
            fmt_sizes(grad_output.sizes())
        )));
    }
    let iv = match indices {
        Some(i) => {
            check_out_dtype(i, DType::I64).map_err(|_| {
                Error::runtime(format!(
                    "expected scalar type Long but found {}",
                    DType::from_scalar_type(i.dtype()).map_or("?", |d| d.name())
                ))
            })?;
            if i.sizes() != sizes.as_slice() {
                return Err(Error::runtime(format!(
                    "Expected indices of size {} but got {}",
                    fmt_sizes(&sizes),
                    fmt_sizes(i.sizes())
                )));
            }
            Some(view(i, p.nd))
        }
        None => None,
    };
    // The route below is by mode: the max modes' backward reads the forward's indices.
    let max = matches!(p.mode, Mode::Max | Mode::AdaptiveMax);
    if max && iv.is_none() {
        return Err(Error::runtime(format!("{}_backward: expected the forward's indices", name(p.mode, p.nd))));
    }
    with_size(grad_input, in_sizes, |g| {
        if p.n * p.c == 0 {
            return Ok(());
        }
        let copy = resolved(grad_output)?;
        let go = view(&copy.as_ref().map_or(*grad_output, |c| c.as_ref()), p.nd);
        let gi = view(g, p.nd);
        let valid = crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
            match iv {
                Some(v) if max => backward_max::<T>(p, go, gi, v),
                _ => {
                    backward::<T>(p, go, gi);
                    true
                }
            }
        }, else return Err(not_implemented(&name(p.mode, p.nd), dtype)));
        match iv {
            Some(v) if !valid => check_indices(p, v),
            _ => Ok(()),
        }
    })
}

/// The first index (in the output's order) that names no element of its plane, as an error
/// (CPU would write out of bounds).
fn check_indices(p: &Plan, v: View) -> Result<()> {
    let plane = p.plane() as i64;
    for b in 0..p.n {
        for c in 0..p.c {
            for d in 0..p.out[0] {
                for h in 0..p.out[1] {
                    for w in 0..p.out[2] {
                        // SAFETY: an element of the indices tensor (sizes checked).
                        let i = unsafe { *(v.ptr as *const i64).offset(v.at(b, c, d, h, w)) };
                        if i != -1 && !(0..plane).contains(&i) {
                            return Err(Error::runtime(format!(
                                "Found an invalid max index: {i} (output volumes are of size {plane}"
                            )));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// `max_pool{2,3}d_with_indices.out`.
#[allow(clippy::too_many_arguments)]
pub fn max_pool_out(
    nd: usize,
    input: TensorRef<'_>,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil: bool,
    out: TensorRef<'_>,
    indices: TensorRef<'_>,
) -> Result<()> {
    let p = window_plan(Mode::Max, nd, &input, kernel, stride, padding, dilation, ceil)?;
    run_forward(&p, &input, &out, Some(&indices))
}

/// `max_pool3d_with_indices`: new outputs in the input's memory format.
pub fn max_pool(
    nd: usize,
    input: TensorRef<'_>,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil: bool,
) -> Result<(Tensor, Tensor)> {
    let p = window_plan(Mode::Max, nd, &input, kernel, stride, padding, dilation, ceil)?;
    let dtype = check_dtype(p.mode, nd, &input)?;
    let sizes = p.out_sizes();
    let (out, idx) = (new_like(&input, &sizes, dtype)?, new_like(&input, &sizes, DType::I64)?);
    run_forward(&p, &input, &out.as_ref(), Some(&idx.as_ref()))?;
    Ok((out, idx))
}

/// `max_pool{2,3}d_with_indices_backward.grad_input`.
#[allow(clippy::too_many_arguments)]
pub fn max_pool_backward_out(
    nd: usize,
    grad_output: TensorRef<'_>,
    input: TensorRef<'_>,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil: bool,
    indices: TensorRef<'_>,
    grad_input: TensorRef<'_>,
) -> Result<()> {
    let p = window_plan(Mode::Max, nd, &input, kernel, stride, padding, dilation, ceil)?;
    run_backward(
        &p,
        &grad_output,
        (input.sizes(), DType::from_scalar_type(input.dtype())?),
        Some(&indices),
        &grad_input,
    )
}

/// `max_pool3d_with_indices_backward`.
#[allow(clippy::too_many_arguments)]
pub fn max_pool_backward(
    nd: usize,
    grad_output: TensorRef<'_>,
    input: TensorRef<'_>,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil: bool,
    indices: TensorRef<'_>,
) -> Result<Tensor> {
    let gi = new_like(&input, input.sizes(), DType::from_scalar_type(input.dtype())?)?;
    max_pool_backward_out(nd, grad_output, input, kernel, stride, padding, dilation, ceil, indices, gi.as_ref())?;
    Ok(gi)
}

/// `avg_pool{2,3}d.out`.
#[allow(clippy::too_many_arguments)]
pub fn avg_pool_out(
    nd: usize,
    input: TensorRef<'_>,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil: bool,
    include_pad: bool,
    divisor: Option<i64>,
    out: TensorRef<'_>,
) -> Result<()> {
    let mode = Mode::Avg { include_pad, divisor };
    let p = window_plan(mode, nd, &input, kernel, stride, padding, &[1], ceil)?;
    run_forward(&p, &input, &out, None)
}

/// `avg_pool{2,3}d_backward.grad_input`.
#[allow(clippy::too_many_arguments)]
pub fn avg_pool_backward_out(
    nd: usize,
    grad_output: TensorRef<'_>,
    input: TensorRef<'_>,
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil: bool,
    include_pad: bool,
    divisor: Option<i64>,
    grad_input: TensorRef<'_>,
) -> Result<()> {
    let mode = Mode::Avg { include_pad, divisor };
    let p = window_plan(mode, nd, &input, kernel, stride, padding, &[1], ceil)?;
    run_backward(&p, &grad_output, (input.sizes(), DType::from_scalar_type(input.dtype())?), None, &grad_input)
}

/// `adaptive_avg_pool{2,3}d.out` and `adaptive_max_pool{2,3}d.out`.
pub fn adaptive_out(
    max: bool,
    nd: usize,
    input: TensorRef<'_>,
    output_size: &[i64],
    out: TensorRef<'_>,
    indices: Option<TensorRef<'_>>,
) -> Result<()> {
    let mode = if max { Mode::AdaptiveMax } else { Mode::AdaptiveAvg };
    let p = adaptive_plan(mode, nd, &input, output_size)?;
    run_forward(&p, &input, &out, indices.as_ref())
}

/// `_adaptive_avg_pool{2,3}d`: a new output in the input's memory format.
pub fn adaptive_avg(nd: usize, input: TensorRef<'_>, output_size: &[i64]) -> Result<Tensor> {
    let p = adaptive_plan(Mode::AdaptiveAvg, nd, &input, output_size)?;
    let dtype = check_dtype(p.mode, nd, &input)?;
    let out = new_like(&input, &p.out_sizes(), dtype)?;
    run_forward(&p, &input, &out.as_ref(), None)?;
    Ok(out)
}

/// The adaptive ops' backward into `grad_input` (the output size is grad_output's).
pub fn adaptive_backward_out(
    max: bool,
    nd: usize,
    grad_output: TensorRef<'_>,
    input: TensorRef<'_>,
    indices: Option<TensorRef<'_>>,
    grad_input: TensorRef<'_>,
) -> Result<()> {
    let mode = if max { Mode::AdaptiveMax } else { Mode::AdaptiveAvg };
    let g = grad_output.sizes();
    if g.len() != input.dim() || g.len() < nd {
        return Err(Error::runtime(format!(
            "{}_backward(): Expected grad_output to have the same dimension as input, but got {} and {}",
            name(mode, nd),
            fmt_sizes(g),
            fmt_sizes(input.sizes())
        )));
    }
    let p = adaptive_plan(mode, nd, &input, &g[g.len() - nd..])?;
    run_backward(
        &p,
        &grad_output,
        (input.sizes(), DType::from_scalar_type(input.dtype())?),
        indices.as_ref(),
        &grad_input,
    )
}

/// `_adaptive_avg_pool{2,3}d_backward`: a new gradient in the input's memory format.
pub fn adaptive_avg_backward(nd: usize, grad_output: TensorRef<'_>, input: TensorRef<'_>) -> Result<Tensor> {
    let gi = new_like(&input, input.sizes(), DType::from_scalar_type(input.dtype())?)?;
    adaptive_backward_out(false, nd, grad_output, input, None, gi.as_ref())?;
    Ok(gi)
}

/// `upsample_nearest{1,2,3}d.out` / `_upsample_nearest_exact{1,2,3}d.out`.
pub fn nearest_out(
    nd: usize,
    exact: bool,
    input: TensorRef<'_>,
    output_size: &[i64],
    scales: &[Option<f64>],
    out: TensorRef<'_>,
) -> Result<()> {
    let p = nearest_plan(nd, exact, input.sizes(), output_size, scales)?;
    run_forward(&p, &input, &out, None)
}

/// `upsample_nearest{1,2,3}d_backward.grad_input` (and the exact forms).
pub fn nearest_backward_out(
    nd: usize,
    exact: bool,
    grad_output: TensorRef<'_>,
    output_size: &[i64],
    input_size: &[i64],
    scales: &[Option<f64>],
    grad_input: TensorRef<'_>,
) -> Result<()> {
    let p = nearest_plan(nd, exact, input_size, output_size, scales)?;
    let dtype = DType::from_scalar_type(grad_output.dtype())?;
    run_backward(&p, &grad_output, (input_size, dtype), None, &grad_input)
}

// ---------------------------------------------------------------------------------------------
// Max unpooling and fractional max pooling
// ---------------------------------------------------------------------------------------------

/// The float dtypes of max unpooling and fractional max pooling (CPU's
/// `AT_DISPATCH_FLOATING_TYPES_AND2(Half, BFloat16)`).
fn float_of(t: &TensorRef<'_>, op: &str) -> Result<DType> {
    let d = DType::from_scalar_type(t.dtype())?;
    match d {
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => Ok(d),
        _ => Err(not_implemented(op, d)),
    }
}

/// An int64 tensor's elements in row-major order.
fn longs(t: &TensorRef<'_>) -> Result<Vec<i64>> {
    let d = crate::ops::norm::dense(t)?;
    // SAFETY: the dense data holds the tensor's numel int64 elements (callers check the dtype).
    Ok(unsafe { std::slice::from_raw_parts(d.ptr as *const i64, t.numel().max(0) as usize) }.to_vec())
}

fn non_batch_nonzero(t: &TensorRef<'_>, who: &str, sep: &str) -> Result<()> {
    for i in 1..t.dim() {
        if t.sizes()[i] <= 0 {
            return Err(Error::runtime(format!(
                "{who}: Expected input to have non-zero size for non-batch dimensions, but got{sep}{} with dimension {i} being empty.",
                fmt_sizes(t.sizes())
            )));
        }
    }
    Ok(())
}

/// `max_unpool2d.out` (`nd` 2) and `max_unpool3d.out` (`nd` 3): the output zeroed, then each
/// input element written at its plane's flat index (the last write wins, as CPU's serial
/// loop); an index outside the plane fails as CPU's does (the last one found is named).
pub fn max_unpool_out(
    nd: usize,
    input: TensorRef<'_>,
    indices: TensorRef<'_>,
    output_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    out: TensorRef<'_>,
) -> Result<()> {
    let idt = DType::from_scalar_type(indices.dtype())?;
    if idt != DType::I64 {
        return Err(Error::runtime(format!("elements in indices should be type int64 but got: {}", idt.name())));
    }
    let what = if nd == 2 { "(height, width)" } else { "(depth, height, width)" };
    let count = if nd == 2 { "two" } else { "three" };
    let who = format!("max_unpooling{nd}d_forward_out_cpu()");
    let ndim_err = || {
        Error::runtime(format!(
            "Input to max_unpooling{nd}d should be a {}d or {}d Tensor, but got a tensor with {} dimensions.",
            nd + 1,
            nd + 2,
            input.dim()
        ))
    };
    if nd == 3 && !(input.dim() == 4 || input.dim() == 5) {
        return Err(ndim_err());
    }
    if output_size.len() != nd {
        return Err(Error::runtime(format!(
            "There should be exactly {count} elements {what} in output_size, but got {} elements.",
            output_size.len()
        )));
    }
    if nd == 3 {
        for (v, name) in [(stride, "stride"), (padding, "padding")] {
            if v.len() != 3 {
                return Err(Error::runtime(format!(
                    "There should be exactly three elements (depth, height, width) in {name}, but got: {} elements.",
                    v.len()
                )));
            }
        }
    } else if !(input.dim() == 3 || input.dim() == 4) {
        return Err(ndim_err());
    }
    if input.sizes() != indices.sizes() {
        return Err(Error::runtime(format!(
            "Expected shape of indices to be same as that of the input tensor ({}) but got indices tensor with shape: {}",
            fmt_sizes(input.sizes()),
            fmt_sizes(indices.sizes())
        )));
    }
    non_batch_nonzero(&input, &who, " ")?;
    if nd == 3 && stride.iter().any(|&v| v <= 0) {
        return Err(Error::runtime(format!(
            "strides should be greater than zero, but got stride: {}",
            fmt_sizes(stride)
        )));
    }
    let dtype = float_of(&input, if nd == 2 { "max_unpool2d" } else { "max_unpool3d" })?;
    let lead = input.dim() - nd;
    let mut sizes: Vec<i64> = input.sizes()[..lead].to_vec();
    sizes.extend_from_slice(output_size);
    let planes = input.sizes()[..lead].iter().product::<i64>().max(0) as usize;
    let in_img = input.sizes()[lead..].iter().product::<i64>().max(0) as usize;
    let out_img = output_size.iter().product::<i64>().max(0) as usize;
    let idx = longs(&indices)?;
    let x = crate::ops::norm::dense(&input)?;
    crate::ops::norm::into_out(&out, &sizes, dtype, |op| {
        let bad = std::sync::Mutex::new(None::<i64>);
        crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
            // SAFETY: the output holds planes·out_img contiguous elements.
            unsafe { std::slice::from_raw_parts_mut(op as *mut T, planes * out_img) }.fill(T::from_acc(T::acc_zero()));
            let xp = x.ptr;
            regen_runtime::host::parallel_for(planes, (GRAIN / in_img.max(1)).max(1), |a, b| {
                for pl in a..b {
                    for (i, &m) in idx.iter().enumerate().take((pl + 1) * in_img).skip(pl * in_img) {
                        if m < 0 || m as usize >= out_img {
                            if let Ok(mut g) = bad.lock() {
                                *g = Some(m);
                            }
                            continue;
                        }
                        // SAFETY: element m of plane pl of the output; element i of the input.
                        unsafe { *(op as *mut T).add(pl * out_img + m as usize) = *(xp as *const T).add(i) };
                    }
                }
            });
            Ok(())
        }, else Err(not_implemented("max_unpool", dtype)))?;
        if let Some(m) = bad.lock().ok().and_then(|g| *g) {
            let dims = output_size.iter().map(i64::to_string).collect::<Vec<_>>().join("x");
            return Err(Error::runtime(format!("Found an invalid max index: {m} (output volumes are of size {dims})")));
        }
        Ok(())
    })
}

pub fn max_unpool(
    nd: usize,
    input: TensorRef<'_>,
    indices: TensorRef<'_>,
    output_size: &[i64],
    stride: &[i64],
    padding: &[i64],
) -> Result<Tensor> {
    let out = crate::engine::iter::new_tensor(&[0], DType::from_scalar_type(input.dtype())?)?;
    max_unpool_out(nd, input, indices, output_size, stride, padding, out.as_ref())?;
    Ok(out)
}

/// Rounds an f64 to a float dtype's precision: one operation of that dtype computed in f64 and
/// rounded equals the dtype's own (f64 has more than twice their precision plus two bits).
fn rounder(d: DType) -> fn(f64) -> f64 {
    match d {
        DType::F32 => |x| x as f32 as f64,
        DType::F16 => |x| f16::from_f64(x).to_f64(),
        DType::BF16 => |x| bf16::from_f64(x).to_f64(),
        _ => |x| x,
    }
}

/// `generate_intervals` of `FractionalMaxPooling.h` in the element type: window starts
/// `(int)((i + u)·α) - (int)(u·α)` with `α = (in - pool) / (out - 1)`, the last at `in - pool`.
fn intervals(r: fn(f64) -> f64, u: f64, input: i64, output: i64, pool: i64) -> Vec<i64> {
    let mut seq = vec![0i64; output.max(0) as usize];
    if output > 1 {
        let alpha = r(r((input - pool) as f64) / r((output - 1) as f64));
        for (i, v) in seq.iter_mut().enumerate().take(output as usize - 1) {
            *v = r(r(r(i as f64) + u) * alpha) as i64 - r(u * alpha) as i64;
        }
    }
    if let Some(last) = seq.last_mut() {
        *last = input - pool;
    }
    seq
}

/// The checked geometry of a fractional max pooling: batch, planes, input and output extents
/// and pool sizes padded to three dimensions (time first).
struct Frac {
    batch: usize,
    planes: usize,
    inp: [i64; 3],
    out: [i64; 3],
    pool: [i64; 3],
    out_sizes: Vec<i64>,
}

fn frac_geometry(nd: usize, input: &TensorRef<'_>, kernel: &[i64], output_size: &[i64]) -> Result<Frac> {
    let (who, dims) =
        if nd == 2 { ("fractional_max_pool2d()", "3D or 4D") } else { ("fractional_max_pool3d_out()", "4D or 5D") };
    if nd == 2 {
        if kernel.len() != 2 {
            return Err(Error::runtime(
                "fractional_max_pool2d: kernel_size must either be a single Int or tuple of Ints",
            ));
        }
        if output_size.len() != 2 {
            return Err(Error::runtime(
                "fractional_max_pool2d: output_size must either be a single Int or tuple of Ints",
            ));
        }
    } else if kernel.len() != 3 || output_size.len() != 3 {
        return Err(Error::runtime("fractional_max_pool3d: kernel_size and output_size must be tuples of three Ints"));
    }
    if kernel.iter().any(|&k| k <= 0) {
        let ks = kernel.iter().map(i64::to_string).collect::<Vec<_>>().join("x");
        return Err(Error::runtime(format!(
            "fractional_max_pool{nd}d(): kernel size should be greater than zero, but got {ks}"
        )));
    }
    let n = input.dim();
    if n != nd + 1 && n != nd + 2 {
        return Err(Error::runtime(format!("{who}: Expected {dims} tensor, but got: {}", fmt_sizes(input.sizes()))));
    }
    non_batch_nonzero(input, who, "")?;
    let s = input.sizes();
    let batch = if n == nd + 2 { s[0].max(0) as usize } else { 1 };
    let planes = s[n - nd - 1].max(0) as usize;
    let pad = |v: &[i64]| if nd == 2 { [1, v[0], v[1]] } else { [v[0], v[1], v[2]] };
    let (inp, out, pool) = (pad(&s[n - nd..]), pad(output_size), pad(kernel));
    let names = ["time", "height", "width"];
    for d in (3 - nd)..3 {
        // The 3-d op wants the last window to end before the input's end, the 2-d op at it.
        let last = out[d] + pool[d] - 1;
        if last > inp[d] || (nd == 3 && last == inp[d]) {
            return Err(Error::runtime(format!(
                "{who}: pool {} {} too large relative to input {} {}",
                names[d], pool[d], names[d], inp[d]
            )));
        }
    }
    let mut out_sizes = s[..n - nd].to_vec();
    out_sizes.extend_from_slice(output_size);
    Ok(Frac { batch, planes, inp, out, pool, out_sizes })
}

/// `fractional_max_pool2d.output` / `fractional_max_pool3d.output`: per plane the windows of
/// `intervals` from its random samples (2-d: `[w, h]`, 3-d: `[t, h, w]`), the first maximum
/// (or NaN) of each window in time-height-width order, and its flat index in the plane.
#[allow(clippy::too_many_arguments)]
pub fn fractional_out(
    nd: usize,
    input: TensorRef<'_>,
    kernel: &[i64],
    output_size: &[i64],
    samples: TensorRef<'_>,
    output: TensorRef<'_>,
    indices: TensorRef<'_>,
) -> Result<()> {
    let f = frac_geometry(nd, &input, kernel, output_size)?;
    let dtype = DType::from_scalar_type(input.dtype())?;
    if DType::from_scalar_type(samples.dtype())? != dtype {
        return Err(Error::runtime("Expect _random_samples to have the same dtype as input"));
    }
    if samples.dim() != 3 {
        return Err(Error::runtime(format!("Expect _random_samples to have 3 dimensions, got {}", samples.dim())));
    }
    let ss = samples.sizes();
    if (ss[0].max(0) as usize) < f.batch {
        return Err(Error::runtime("Expect _random_samples.size(0) no less then input batch size."));
    }
    if ss[1].max(0) as usize != f.planes {
        return Err(Error::runtime("Expect _random_samples.size(1) equals to input channel size."));
    }
    if ss[2] != nd as i64 {
        return Err(Error::runtime(format!("Expect _random_samples.size(2) equals to {nd}; got {}.", ss[2])));
    }
    let dtype = float_of(&input, &format!("fractional_max_pool{nd}d_out_frame"))?;
    let total = f.batch * f.planes;
    let in_img = (f.inp[0] * f.inp[1] * f.inp[2]) as usize;
    let out_img = (f.out[0] * f.out[1] * f.out[2]).max(0) as usize;
    let x = crate::ops::norm::dense(&input)?;
    let u = crate::ops::norm::dense(&samples)?;
    let r = rounder(dtype);
    let mut idx = vec![0i64; total * out_img];
    let ip = idx.as_mut_ptr() as usize;
    crate::ops::norm::into_out(&output, &f.out_sizes, dtype, |op| {
        crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
            let (xp, up) = (x.ptr, u.ptr);
            regen_runtime::host::parallel_for(total, 1, |a, b| {
                for pl in a..b {
                    // SAFETY: the plane's nd samples of the contiguous samples (size(1) == planes).
                    let smp = |k: usize| unsafe { (*(up as *const T).add(pl * nd + k)).to_acc() };
                    let samp: [f64; 3] = if nd == 2 {
                        [0.0, f64_of::<T>(smp(1)), f64_of::<T>(smp(0))]
                    } else {
                        [f64_of::<T>(smp(0)), f64_of::<T>(smp(1)), f64_of::<T>(smp(2))]
                    };
                    let seq: Vec<Vec<i64>> = (0..3)
                        .map(|d| if d < 3 - nd { vec![0] } else { intervals(r, samp[d], f.inp[d], f.out[d], f.pool[d]) })
                        .collect();
                    let mut o = pl * out_img;
                    for &t0 in &seq[0] {
                        for &h0 in &seq[1] {
                            for &w0 in &seq[2] {
                                let mut best = T::lowest();
                                let mut at = (t0 * f.inp[1] + h0) * f.inp[2] + w0;
                                for t in t0..t0 + f.pool[0] {
                                    for h in h0..h0 + f.pool[1] {
                                        for w in w0..w0 + f.pool[2] {
                                            let k = (t * f.inp[1] + h) * f.inp[2] + w;
                                            // SAFETY: k < in_img (windows lie inside the input).
                                            let v = unsafe { *(xp as *const T).add(pl * in_img + k as usize) }.to_acc();
                                            if v > best || <T as Px>::is_nan(v) {
                                                best = v;
                                                at = k;
                                            }
                                        }
                                    }
                                }
                                // SAFETY: output element o of the contiguous output and indices.
                                unsafe {
                                    *(op as *mut T).add(o) = T::from_acc(best);
                                    *(ip as *mut i64).add(o) = at;
                                }
                                o += 1;
                            }
                        }
                    }
                }
            });
            Ok(())
        }, else Err(not_implemented("fractional_max_pool", dtype)))
    })?;
    crate::ops::norm::into_out(&indices, &f.out_sizes, DType::I64, |p| {
        // SAFETY: the indices hold idx.len() contiguous elements.
        unsafe { std::ptr::copy_nonoverlapping(idx.as_ptr(), p as *mut i64, idx.len()) };
        Ok(())
    })
}

fn f64_of<T: Px>(a: T::Acc) -> f64
where
    T::Acc: Into<f64>,
{
    a.into()
}

/// `fractional_max_pool{2,3}d_backward.grad_input`: the gradient zeroed, then each output's
/// gradient added at its index in plane order (element-type sums).
pub fn fractional_backward_out(
    nd: usize,
    grad_output: TensorRef<'_>,
    input: TensorRef<'_>,
    output_size: &[i64],
    indices: TensorRef<'_>,
    grad_input: TensorRef<'_>,
) -> Result<()> {
    let n = input.dim();
    if (n != nd + 1 && n != nd + 2) || output_size.len() != nd {
        return Err(Error::runtime(format!("fractional_max_pool{nd}d_backward(): unexpected input or output_size")));
    }
    let mut want = input.sizes()[..n - nd].to_vec();
    want.extend_from_slice(output_size);
    if nd == 2 {
        if grad_output.sizes() != want.as_slice() {
            return Err(Error::runtime("fractional_max_pool2d_backward(): gradOutput sizes unexpected"));
        }
        if indices.sizes() != want.as_slice() {
            return Err(Error::runtime("fractional_max_pool2d_backward(): indices sizes unexpected"));
        }
    } else {
        let names = ["time", "height", "width"];
        for (d, name) in names.iter().enumerate() {
            if grad_output.dim() != n || grad_output.sizes()[n - 3 + d] != output_size[d] {
                return Err(Error::runtime(format!(
                    "fractional_max_pool3d_backward_out(): gradOutput {name} unexpected"
                )));
            }
        }
        if indices.sizes() != want.as_slice() {
            return Err(Error::runtime("fractional_max_pool3d_backward_out(): indices sizes unexpected"));
        }
    }
    if DType::from_scalar_type(indices.dtype())? != DType::I64 {
        return Err(Error::runtime("expected scalar type Long but found another type for indices"));
    }
    let dtype = float_of(&input, &format!("fractional_max_pool{nd}d_backward_out_frame"))?;
    if DType::from_scalar_type(grad_output.dtype())? != dtype {
        return Err(Error::runtime("expected grad_output to have the input's dtype"));
    }
    let planes = input.sizes()[..n - nd].iter().product::<i64>().max(0) as usize;
    let in_img = input.sizes()[n - nd..].iter().product::<i64>().max(0) as usize;
    let out_img = output_size.iter().product::<i64>().max(0) as usize;
    let idx = longs(&indices)?;
    if idx.iter().any(|&k| k < 0 || k as usize >= in_img) {
        let cond = if nd == 2 {
            "index >= 0 && index < static_cast<int64_t>(inputW) * inputH"
        } else {
            "index >= 0 && index < inputT * inputH * inputW"
        };
        return Err(Error::runtime(format!("{cond} INTERNAL ASSERT FAILED: an index lies outside its plane")));
    }
    let g = crate::ops::norm::dense(&grad_output)?;
    crate::ops::norm::into_out(&grad_input, input.sizes(), dtype, |op| {
        crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
            // SAFETY: the gradient holds planes·in_img contiguous elements.
            unsafe { std::slice::from_raw_parts_mut(op as *mut T, planes * in_img) }.fill(T::from_acc(T::acc_zero()));
            let gp = g.ptr;
            regen_runtime::host::parallel_for(planes, 1, |a, b| {
                for pl in a..b {
                    for (o, &k) in idx.iter().enumerate().take((pl + 1) * out_img).skip(pl * out_img) {
                        // SAFETY: idx[o] < in_img (checked); element o of the dense gradient.
                        unsafe {
                            let dst = (op as *mut T).add(pl * in_img + k as usize);
                            *dst = T::from_acc(T::add((*dst).to_acc(), (*(gp as *const T).add(o)).to_acc()));
                        }
                    }
                }
            });
            Ok(())
        }, else Err(not_implemented("fractional_max_pool_backward", dtype)))
    })
}

pub fn fractional_backward(
    nd: usize,
    grad_output: TensorRef<'_>,
    input: TensorRef<'_>,
    output_size: &[i64],
    indices: TensorRef<'_>,
) -> Result<Tensor> {
    let gi = crate::engine::iter::new_tensor(input.sizes(), DType::from_scalar_type(input.dtype())?)?;
    fractional_backward_out(nd, grad_output, input, output_size, indices, gi.as_ref())?;
    Ok(gi)
}

/// This family's kernels: group `pool` of regen.toml's `[implement]`.
impl crate::PoolKernels for crate::Reference {
    fn max_pool2d_with_indices_out(
        &self,
        self_: TensorRef<'_>,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        ceil_mode: bool,
        out: TensorRef<'_>,
        indices: TensorRef<'_>,
    ) -> Result<()> {
        max_pool_out(2, self_, kernel_size, stride, padding, dilation, ceil_mode, out, indices)
    }
    fn max_pool3d_with_indices_out(
        &self,
        self_: TensorRef<'_>,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        ceil_mode: bool,
        out: TensorRef<'_>,
        indices: TensorRef<'_>,
    ) -> Result<()> {
        max_pool_out(3, self_, kernel_size, stride, padding, dilation, ceil_mode, out, indices)
    }
    fn max_pool3d_with_indices(
        &self,
        self_: TensorRef<'_>,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        ceil_mode: bool,
    ) -> Result<(Tensor, Tensor)> {
        max_pool(3, self_, kernel_size, stride, padding, dilation, ceil_mode)
    }
    fn max_pool2d_with_indices_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        ceil_mode: bool,
        indices: TensorRef<'_>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        max_pool_backward_out(
            2,
            grad_output,
            self_,
            kernel_size,
            stride,
            padding,
            dilation,
            ceil_mode,
            indices,
            grad_input,
        )
    }
    fn max_pool3d_with_indices_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        ceil_mode: bool,
        indices: TensorRef<'_>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        max_pool_backward_out(
            3,
            grad_output,
            self_,
            kernel_size,
            stride,
            padding,
            dilation,
            ceil_mode,
            indices,
            grad_input,
        )
    }
    fn max_pool3d_with_indices_backward(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        ceil_mode: bool,
        indices: TensorRef<'_>,
    ) -> Result<Tensor> {
        max_pool_backward(3, grad_output, self_, kernel_size, stride, padding, dilation, ceil_mode, indices)
    }
    fn avg_pool2d_out(
        &self,
        self_: TensorRef<'_>,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Option<i64>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        avg_pool_out(2, self_, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, out)
    }
    fn avg_pool3d_out(
        &self,
        self_: TensorRef<'_>,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Option<i64>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        avg_pool_out(3, self_, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, out)
    }
    fn avg_pool2d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Option<i64>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        avg_pool_backward_out(
            2,
            grad_output,
            self_,
            kernel_size,
            stride,
            padding,
            ceil_mode,
            count_include_pad,
            divisor_override,
            grad_input,
        )
    }
    fn avg_pool3d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        kernel_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        ceil_mode: bool,
        count_include_pad: bool,
        divisor_override: Option<i64>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        avg_pool_backward_out(
            3,
            grad_output,
            self_,
            kernel_size,
            stride,
            padding,
            ceil_mode,
            count_include_pad,
            divisor_override,
            grad_input,
        )
    }
    fn adaptive_avg_pool2d_out(&self, self_: TensorRef<'_>, output_size: &[i64], out: TensorRef<'_>) -> Result<()> {
        adaptive_out(false, 2, self_, output_size, out, None)
    }
    fn adaptive_avg_pool3d_out(&self, self_: TensorRef<'_>, output_size: &[i64], out: TensorRef<'_>) -> Result<()> {
        adaptive_out(false, 3, self_, output_size, out, None)
    }
    fn _adaptive_avg_pool2d(&self, self_: TensorRef<'_>, output_size: &[i64]) -> Result<Tensor> {
        adaptive_avg(2, self_, output_size)
    }
    fn _adaptive_avg_pool3d(&self, self_: TensorRef<'_>, output_size: &[i64]) -> Result<Tensor> {
        adaptive_avg(3, self_, output_size)
    }
    fn _adaptive_avg_pool2d_backward(&self, grad_output: TensorRef<'_>, self_: TensorRef<'_>) -> Result<Tensor> {
        adaptive_avg_backward(2, grad_output, self_)
    }
    fn _adaptive_avg_pool3d_backward(&self, grad_output: TensorRef<'_>, self_: TensorRef<'_>) -> Result<Tensor> {
        adaptive_avg_backward(3, grad_output, self_)
    }
    fn adaptive_avg_pool3d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        adaptive_backward_out(false, 3, grad_output, self_, None, grad_input)
    }
    fn adaptive_max_pool2d_out(
        &self,
        self_: TensorRef<'_>,
        output_size: &[i64],
        out: TensorRef<'_>,
        indices: TensorRef<'_>,
    ) -> Result<()> {
        adaptive_out(true, 2, self_, output_size, out, Some(indices))
    }
    fn adaptive_max_pool3d_out(
        &self,
        self_: TensorRef<'_>,
        output_size: &[i64],
        out: TensorRef<'_>,
        indices: TensorRef<'_>,
    ) -> Result<()> {
        adaptive_out(true, 3, self_, output_size, out, Some(indices))
    }
    fn adaptive_max_pool2d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        indices: TensorRef<'_>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        adaptive_backward_out(true, 2, grad_output, self_, Some(indices), grad_input)
    }
    fn adaptive_max_pool3d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        indices: TensorRef<'_>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        adaptive_backward_out(true, 3, grad_output, self_, Some(indices), grad_input)
    }
    fn upsample_nearest1d_out(
        &self,
        self_: TensorRef<'_>,
        output_size: &[i64],
        scales: Option<f64>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        nearest_out(1, false, self_, output_size, &[scales], out)
    }
    fn upsample_nearest1d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        output_size: &[i64],
        input_size: &[i64],
        scales: Option<f64>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        nearest_backward_out(1, false, grad_output, output_size, input_size, &[scales], grad_input)
    }
    fn _upsample_nearest_exact1d_out(
        &self,
        self_: TensorRef<'_>,
        output_size: &[i64],
        scales: Option<f64>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        nearest_out(1, true, self_, output_size, &[scales], out)
    }
    fn _upsample_nearest_exact1d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        output_size: &[i64],
        input_size: &[i64],
        scales: Option<f64>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        nearest_backward_out(1, true, grad_output, output_size, input_size, &[scales], grad_input)
    }
    fn upsample_nearest2d_out(
        &self,
        self_: TensorRef<'_>,
        output_size: &[i64],
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        nearest_out(2, false, self_, output_size, &[scales_h, scales_w], out)
    }
    fn upsample_nearest2d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        output_size: &[i64],
        input_size: &[i64],
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        nearest_backward_out(2, false, grad_output, output_size, input_size, &[scales_h, scales_w], grad_input)
    }
    fn _upsample_nearest_exact2d_out(
        &self,
        self_: TensorRef<'_>,
        output_size: &[i64],
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        nearest_out(2, true, self_, output_size, &[scales_h, scales_w], out)
    }
    fn _upsample_nearest_exact2d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        output_size: &[i64],
        input_size: &[i64],
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        nearest_backward_out(2, true, grad_output, output_size, input_size, &[scales_h, scales_w], grad_input)
    }
    fn upsample_nearest3d_out(
        &self,
        self_: TensorRef<'_>,
        output_size: &[i64],
        scales_d: Option<f64>,
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        nearest_out(3, false, self_, output_size, &[scales_d, scales_h, scales_w], out)
    }
    fn upsample_nearest3d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        output_size: &[i64],
        input_size: &[i64],
        scales_d: Option<f64>,
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        nearest_backward_out(
            3,
            false,
            grad_output,
            output_size,
            input_size,
            &[scales_d, scales_h, scales_w],
            grad_input,
        )
    }
    fn _upsample_nearest_exact3d_out(
        &self,
        self_: TensorRef<'_>,
        output_size: &[i64],
        scales_d: Option<f64>,
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        nearest_out(3, true, self_, output_size, &[scales_d, scales_h, scales_w], out)
    }
    fn _upsample_nearest_exact3d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        output_size: &[i64],
        input_size: &[i64],
        scales_d: Option<f64>,
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        nearest_backward_out(3, true, grad_output, output_size, input_size, &[scales_d, scales_h, scales_w], grad_input)
    }
    fn max_unpool2d_out(
        &self,
        self_: TensorRef<'_>,
        indices: TensorRef<'_>,
        output_size: &[i64],
        out: TensorRef<'_>,
    ) -> Result<()> {
        max_unpool_out(2, self_, indices, output_size, &[], &[], out)
    }
    fn max_unpool2d(&self, self_: TensorRef<'_>, indices: TensorRef<'_>, output_size: &[i64]) -> Result<Tensor> {
        max_unpool(2, self_, indices, output_size, &[], &[])
    }
    fn max_unpool3d_out(
        &self,
        self_: TensorRef<'_>,
        indices: TensorRef<'_>,
        output_size: &[i64],
        stride: &[i64],
        padding: &[i64],
        out: TensorRef<'_>,
    ) -> Result<()> {
        max_unpool_out(3, self_, indices, output_size, stride, padding, out)
    }
    fn max_unpool3d(
        &self,
        self_: TensorRef<'_>,
        indices: TensorRef<'_>,
        output_size: &[i64],
        stride: &[i64],
        padding: &[i64],
    ) -> Result<Tensor> {
        max_unpool(3, self_, indices, output_size, stride, padding)
    }
    fn fractional_max_pool2d_output(
        &self,
        self_: TensorRef<'_>,
        kernel_size: &[i64],
        output_size: &[i64],
        random_samples: TensorRef<'_>,
        output: TensorRef<'_>,
        indices: TensorRef<'_>,
    ) -> Result<()> {
        use fractional_out;
        fractional_out(2, self_, kernel_size, output_size, random_samples, output, indices)
    }
    fn fractional_max_pool2d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        _kernel_size: &[i64],
        output_size: &[i64],
        indices: TensorRef<'_>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use fractional_backward_out;
        fractional_backward_out(2, grad_output, self_, output_size, indices, grad_input)
    }
    fn fractional_max_pool3d_output(
        &self,
        self_: TensorRef<'_>,
        kernel_size: &[i64],
        output_size: &[i64],
        random_samples: TensorRef<'_>,
        output: TensorRef<'_>,
        indices: TensorRef<'_>,
    ) -> Result<()> {
        use fractional_out;
        fractional_out(3, self_, kernel_size, output_size, random_samples, output, indices)
    }
    fn fractional_max_pool3d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        _kernel_size: &[i64],
        output_size: &[i64],
        indices: TensorRef<'_>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use fractional_backward_out;
        fractional_backward_out(3, grad_output, self_, output_size, indices, grad_input)
    }
    fn fractional_max_pool3d_backward(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        _kernel_size: &[i64],
        output_size: &[i64],
        indices: TensorRef<'_>,
    ) -> Result<Tensor> {
        fractional_backward(3, grad_output, self_, output_size, indices)
    }
}
