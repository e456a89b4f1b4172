//! Resampling: linear, bilinear, bicubic and trilinear upsampling, reflection and replication
//! padding, and grid sampling, forward and backward, as ATen's CPU kernels compute them
//! (`UpSample.h`, `cpu/UpSampleKernel.cpp`, `cpu/UpSampleMoreKernel.cpp`, `UpSampleBicubic2d.cpp`,
//! `cpu/PaddingKernel.cpp`, `GridSampler.h`, `GridSampler.cpp`).
//!
//! Upsampling and padding are separable: per spatial dimension and output index, a plan holds the
//! input indices it reads (and, for upsampling, their weights), computed once per call in the
//! op-math type (f32 for float16/bfloat16) with CPU's formulas. The kernels walk planes (or, for
//! channels-last tensors, positions with the channels innermost) in parallel and read and write
//! every tensor through its own strides. Backward passes scatter-add a plane at a time, in the
//! order of the output, so every input element sums the same terms in the same order as on CPU.
//! Grid sampling computes each output position's corners and weights once for all channels.

use half::{bf16, f16};
use num_complex::Complex;
use num_traits::{Float, One, Zero};
use regen_runtime::args::MemoryFormat;
use regen_runtime::bootstrap::{strides_for, with_size};
use regen_runtime::{Error, Result, Tensor, TensorRef};

use crate::engine::dtype::{DType, Element, check_out_dtype, float_dtype, not_implemented};
use crate::engine::iter::{GRAIN, fmt_sizes};
use crate::engine::scalar::Real;
use crate::engine::simd_fn;
use crate::ops::spatial::{Kind, Px, Up, View, c, guard, new_like, pixel_scale, rd, resolved, sizes_of, up_plan, view};

// ---------------------------------------------------------------------------------------------
// Elements
// ---------------------------------------------------------------------------------------------

/// A float element interpolated in its op-math type ([`Element::Acc`], a [`Real`]).
pub trait Fx: Px<Acc: Real> {
    /// Whether CPU's `scalar_t` arithmetic rounds after every operation (float16, bfloat16).
    const REDUCED: bool;
}

impl Fx for f32 {
    const REDUCED: bool = false;
}
impl Fx for f64 {
    const REDUCED: bool = false;
}
impl Fx for f16 {
    const REDUCED: bool = true;
}
impl Fx for bf16 {
    const REDUCED: bool = true;
}

/// An integer as `static_cast<int64_t>` of a float gives it on x86: NaN and values out of range
/// become `INT64_MIN` (so a NaN coordinate reads nothing), others truncate.
#[inline(always)]
fn to_i64<A: Real>(x: A) -> i64 {
    let v = x.to_f64();
    if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&v) { v as i64 } else { i64::MIN }
}

/// Rounds an op-math value to the element type and back where CPU's `scalar_t` arithmetic does
/// (float16, bfloat16); a fn item, so the hot loops inline it.
#[inline(always)]
fn rr<T: Fx>(v: T::Acc) -> T::Acc {
    if T::REDUCED { rd::<T>(v) } else { v }
}

/// Reads element `o` of `p` in op-math.
///
/// # Safety
/// `p.offset(o)` is an element of a live tensor.
#[inline(always)]
unsafe fn ld<T: Fx>(p: *const T, o: isize) -> T::Acc {
    // SAFETY: the caller guarantees p.offset(o) is an element of a live tensor of T.
    unsafe { (*p.offset(o)).to_acc() }
}

/// Whether `t` is contiguous in `fmt` (dimensions of size 1 take any stride, as in ATen).
fn is_contiguous_as(t: &TensorRef<'_>, fmt: MemoryFormat) -> bool {
    let want = strides_for(t.sizes(), Some(fmt));
    t.sizes().iter().zip(t.strides()).zip(&want).all(|((&n, &s), &w)| n == 1 || s == w)
}

/// Planes per task: about GRAIN elements of work.
fn grain(work_per_plane: usize) -> usize {
    (GRAIN / work_per_plane.max(1)).max(1)
}

// ---------------------------------------------------------------------------------------------
// Upsampling
// ---------------------------------------------------------------------------------------------

/// How an output element combines its taps: CPU's generic kernel (`Interpolate`: per dimension,
/// innermost first, weights stored in the element type) or its channels-last kernel (the product
/// of the dimensions' weights in op-math per corner, summed in corner order).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Formula {
    Separable,
    Product,
}

fn up_name(kind: Kind, nd: usize) -> &'static str {
    match (kind, nd) {
        (Kind::Linear, 1) => "upsample_linear1d",
        (Kind::Linear, 2) => "upsample_bilinear2d",
        (Kind::Linear, _) => "upsample_trilinear3d",
        (Kind::Cubic, _) => "upsample_bicubic2d",
    }
}

/// `area_pixel_compute_source_index`.
fn source_index<A: Real>(scale: A, o: usize, align: bool, cubic: bool) -> A {
    if align {
        scale * c::<A>(o as f64)
    } else {
        let s = scale * (c::<A>(o as f64) + c::<A>(0.5)) - c::<A>(0.5);
        if !cubic && s < A::zero() { A::zero() } else { s }
    }
}

/// `get_cubic_upsample_coefficients` (A = -0.75).
fn cubic_coeffs<A: Real>(t: A) -> [A; 4] {
    let a = c::<A>(-0.75);
    let one = A::one();
    let c1 = |x: A| ((a + c(2.0)) * x - (a + c(3.0))) * x * x + one;
    let c2 = |x: A| ((a * x - c::<A>(5.0) * a) * x + c::<A>(8.0) * a) * x - c::<A>(4.0) * a;
    let x2 = one - t;
    [c2(t + one), c1(t), c1(x2), c2(x2 + one)]
}

/// One dimension's taps: output index `o` reads input indices `idx[o*k..][..k]` with weights
/// `w[o*k..][..k]`.
struct Taps<A> {
    k: usize,
    idx: Vec<usize>,
    w: Vec<A>,
}

fn taps<A: Real>(kind: Kind, inp: usize, out: usize, align: bool, scale: Option<f64>) -> Taps<A> {
    let k = if kind == Kind::Linear { 2 } else { 4 };
    let mut idx = Vec::with_capacity(out * k);
    let mut w = Vec::with_capacity(out * k);
    let s = pixel_scale::<A>(inp, out, align, scale);
    for o in 0..out {
        match kind {
            Kind::Linear => {
                // compute_source_index_and_lambda
                if out == inp {
                    idx.extend([o, o]);
                    w.extend([A::one(), A::zero()]);
                } else {
                    let (i0, l1) = guard(source_index(s, o, align, false), inp);
                    let i0 = i0.max(0) as usize;
                    idx.extend([i0, i0 + usize::from(i0 + 1 < inp)]);
                    w.extend([A::one() - l1, l1]);
                }
            }
            Kind::Cubic => {
                let (i, t) = guard(source_index(s, o, align, true), inp);
                let cf = cubic_coeffs(t);
                for (j, &cw) in cf.iter().enumerate() {
                    idx.push((i + j as i64 - 1).clamp(0, inp as i64 - 1) as usize);
                    w.push(cw);
                }
            }
        }
    }
    Taps { k, idx, w }
}

/// A spatial dimension the op does not have: one tap of weight 1.
fn unit<A: Real>() -> Taps<A> {
    Taps { k: 1, idx: vec![0], w: vec![A::one()] }
}

fn all_taps<A: Real>(p: &Up) -> [Taps<A>; 3] {
    let mk = |j: usize| {
        if j < 3 - p.nd { unit() } else { taps(p.kind, p.inp[j], p.out[j], p.align, p.scales[j]) }
    };
    [mk(0), mk(1), mk(2)]
}

/// Which of CPU's kernels serves this forward call (`_use_vectorized_kernel_cond_2d/3d`).
fn formula(p: &Up, input: &TensorRef<'_>) -> Formula {
    if p.kind != Kind::Linear || p.nd == 1 {
        return Formula::Separable;
    }
    let product = if p.nd == 2 {
        (is_contiguous_as(input, MemoryFormat::CHANNELS_LAST) && p.c > 3)
            || p.out[1] + p.out[2] <= 128
            || (regen_runtime::host::num_threads() == 1 && p.c == 3)
    } else {
        is_contiguous_as(input, MemoryFormat::CHANNELS_LAST_3D) && p.c > 3
    };
    if product { Formula::Product } else { Formula::Separable }
}

fn up_forward<T: Fx>(p: &Up, f: Formula, x: View, y: View) {
    let t = all_taps::<T::Acc>(p);
    // The generic kernel stores weights in the element type, a linear tap's first weight as
    // `scalar_t(1) - lambda1` of the stored second.
    let w: Vec<Vec<T::Acc>> = t
        .iter()
        .map(|d| match (f, p.kind) {
            (Formula::Product, _) => d.w.clone(),
            (Formula::Separable, Kind::Cubic) => d.w.iter().map(|&v| rd::<T>(v)).collect(),
            (Formula::Separable, Kind::Linear) => {
                d.w.chunks(d.k)
                    .flat_map(|pair| match *pair {
                        [_, l1] => {
                            let l1 = rd::<T>(l1);
                            [rd::<T>(T::Acc::one() - l1), l1]
                        }
                        _ => [T::Acc::one(), T::Acc::zero()],
                    })
                    .take(d.w.len())
                    .collect()
            }
        })
        .collect();
    let off: Vec<Vec<isize>> = (0..3).map(|j| t[j].idx.iter().map(|&i| i as isize * x.st[2 + j]).collect()).collect();
    let [kd, kh, kw] = [t[0].k, t[1].k, t[2].k];
    let real = [p.nd == 3, p.nd >= 2, true];
    let [od, oh, ow] = p.out;
    let work = od * oh * ow * kd * kh * kw;
    if p.c > 1 && x.st[1] == 1 && y.st[1] == 1 {
        // Channels innermost: each tap's row of channels is weighted into rows of partial sums,
        // so every channel makes the planes' operations, in their order, vectorised.
        let c = p.c;
        let positions = p.n * od * oh * ow;
        regen_runtime::host::parallel_for(positions, grain(work / (od * oh * ow) * c), |a, b| {
            let [mut vw, mut vh, mut vd] = [0, 1, 2].map(|_| vec![T::Acc::zero(); c]);
            for pos in a..b {
                let (bn, rest) = (pos / (od * oh * ow), pos % (od * oh * ow));
                let (d, h, wi) = (rest / (oh * ow), rest / ow % oh, rest % ow);
                let (bd, bh, bw) = (d * kd, h * kh, wi * kw);
                let xp = (x.ptr as *const T).wrapping_offset(x.at(bn, 0, 0, 0, 0));
                // SAFETY: jd < kd, jh < kh, jw < kw pick taps of this position, whose indices lie
                // inside the input (taps() clamps them to 0..inp), and its c channels are
                // contiguous (x.st[1] == 1 checked above): c elements of batch bn of the input.
                let row = |jd: usize, jh: usize, jw: usize| unsafe {
                    std::slice::from_raw_parts(xp.offset(off[0][bd + jd] + off[1][bh + jh] + off[2][bw + jw]), c)
                };
                match f {
                    Formula::Separable => {
                        for jd in 0..kd {
                            for jh in 0..kh {
                                for jw in 0..kw {
                                    weigh_row::<T>(&mut vw, row(jd, jh, jw), w[2][bw + jw], jw == 0);
                                }
                                combine_rows::<T>(&mut vh, &vw, real[1].then(|| w[1][bh + jh]), jh == 0);
                            }
                            combine_rows::<T>(&mut vd, &vh, real[0].then(|| w[0][bd + jd]), jd == 0);
                        }
                    }
                    Formula::Product => {
                        let mut first = true;
                        for jd in 0..kd {
                            for jh in 0..kh {
                                let wdh = if real[0] { w[0][bd + jd] * w[1][bh + jh] } else { w[1][bh + jh] };
                                for jw in 0..kw {
                                    weigh_row::<T>(&mut vd, row(jd, jh, jw), wdh * w[2][bw + jw], first);
                                    first = false;
                                }
                            }
                        }
                    }
                }
                // SAFETY: this position's row of the output.
                let yo = unsafe { std::slice::from_raw_parts_mut((y.ptr as *mut T).offset(y.at(bn, 0, d, h, wi)), c) };
                for (o, &v) in yo.iter_mut().zip(&vd) {
                    *o = T::from_acc(v);
                }
            }
        });
        return;
    }
    // Planes: a row of output at a time, its partial sums kept as rows (CPU's generic kernel:
    // per dimension, innermost first; or the product formula), each element's operations in
    // CPU's order.
    regen_runtime::host::parallel_for(p.n * p.c, grain(work), |a, b| {
        let [mut vw, mut vh, mut vd] = [0, 1, 2].map(|_| vec![T::Acc::zero(); ow]);
        for pl in a..b {
            let (bn, ch) = (pl / p.c, pl % p.c);
            let xp = (x.ptr as *const T).wrapping_offset(x.at(bn, ch, 0, 0, 0));
            for d in 0..od {
                for h in 0..oh {
                    let (bd, bh) = (d * kd, h * kh);
                    let mut first = true;
                    for jd in 0..kd {
                        for jh in 0..kh {
                            let rp = xp.wrapping_offset(off[0][bd + jd] + off[1][bh + jh]);
                            match f {
                                Formula::Separable => {
                                    // SAFETY: tap indices lie inside the input (taps() clamps them).
                                    unsafe { taps_row::<T>(kw, rp, &off[2], &w[2], None, &mut vw, true) };
                                    combine_rows::<T>(&mut vh, &vw, real[1].then(|| w[1][bh + jh]), jh == 0);
                                }
                                Formula::Product => {
                                    let wdh = if real[0] { w[0][bd + jd] * w[1][bh + jh] } else { w[1][bh + jh] };
                                    // SAFETY: as above.
                                    unsafe { taps_row::<T>(kw, rp, &off[2], &w[2], Some(wdh), &mut vd, first) };
                                    first = false;
                                }
                            }
                        }
                        if f == Formula::Separable {
                            combine_rows::<T>(&mut vd, &vh, real[0].then(|| w[0][bd + jd]), jd == 0);
                        }
                    }
                    let yp = (y.ptr as *mut T).wrapping_offset(y.at(bn, ch, d, h, 0));
                    for (wi, &v) in vd.iter().enumerate() {
                        // SAFETY: an element of the output.
                        unsafe { *yp.offset(wi as isize * y.st[4]) = T::from_acc(v) };
                    }
                }
            }
        }
    });
}

/// One row of taps along the width: `out[wi] (=|+=) Σ_j x[off[wi·k + j]] · w'` with the
/// element's sum started at its first tap (`first`) or continued; `w'` is the tap's weight, or
/// `wdh · weight` for the product formula (`wdh` given). `k` is 2 or 4 in practice, and
/// specialised so the tap loop unrolls.
///
/// # Safety
/// Every `rp.offset(off[i])` is an element of a live tensor.
#[inline(always)]
unsafe fn taps_row<T: Fx>(
    k: usize,
    rp: *const T,
    off: &[isize],
    w: &[T::Acc],
    wdh: Option<T::Acc>,
    out: &mut [T::Acc],
    first: bool,
) {
    // SAFETY: taps_row_k reads rp.offset(off[i]) only for entries of off, each an element of a
    // live tensor by this function's contract.
    unsafe {
        match k {
            2 => taps_row_k::<T, 2>(rp, off, w, wdh, out, first),
            4 => taps_row_k::<T, 4>(rp, off, w, wdh, out, first),
            _ => taps_row_k::<T, 1>(rp, off, w, wdh, out, first),
        }
    }
}

#[inline(always)]
unsafe fn taps_row_k<T: Fx, const K: usize>(
    rp: *const T,
    off: &[isize],
    w: &[T::Acc],
    wdh: Option<T::Acc>,
    out: &mut [T::Acc],
    first: bool,
) {
    let rows = off.chunks_exact(K).zip(w.chunks_exact(K));
    match wdh {
        None => {
            for (o, (of, wt)) in out.iter_mut().zip(rows) {
                // SAFETY: the caller's.
                let mut v = unsafe { ld(rp, of[0]) } * wt[0];
                for j in 1..K {
                    // SAFETY: of[j] is an entry of off, so rp.offset(of[j]) is an element of a
                    // live tensor (the caller's contract).
                    v = v + unsafe { ld(rp, of[j]) } * wt[j];
                }
                *o = if first { v } else { *o + v };
            }
        }
        Some(wdh) => {
            for (o, (of, wt)) in out.iter_mut().zip(rows) {
                let mut acc = *o;
                for j in 0..K {
                    // SAFETY: the caller's.
                    let v = unsafe { ld(rp, of[j]) } * (wdh * wt[j]);
                    acc = if first && j == 0 { v } else { acc + v };
                }
                *o = acc;
            }
        }
    }
}

simd_fn! {
    /// `acc = x·w` (`first`) or `acc = acc + x·w` over a row of channels.
    fn weigh_row<T: Fx>(acc: &mut [T::Acc], x: &[T], w: T::Acc, first: bool) {
        if first {
            for (a, &v) in acc.iter_mut().zip(x) {
                *a = v.to_acc() * w;
            }
        } else {
            for (a, &v) in acc.iter_mut().zip(x) {
                *a = *a + v.to_acc() * w;
            }
        }
    }
}

simd_fn! {
    /// `acc = v·w` (`first`) or `acc = acc + v·w` between rows of partial sums; `acc = v` for a
    /// dimension the op does not have (no weight).
    fn combine_rows<T: Fx>(acc: &mut [T::Acc], v: &[T::Acc], w: Option<T::Acc>, first: bool) {
        match w {
            None => acc.copy_from_slice(v),
            Some(w) if first => {
                for (a, &x) in acc.iter_mut().zip(v) {
                    *a = x * w;
                }
            }
            Some(w) => {
                for (a, &x) in acc.iter_mut().zip(v) {
                    *a = *a + x * w;
                }
            }
        }
    }
}

/// The backward pass: each plane's gradient summed in op-math in output order (CPU's
/// `acc_data_ptr`), then stored.
fn up_backward<T: Fx>(p: &Up, go: View, gi: View) {
    let t = all_taps::<T::Acc>(p);
    let [kd, kh, kw] = [t[0].k, t[1].k, t[2].k];
    let [id, ih, iw] = p.inp;
    let [od, oh, ow] = p.out;
    let real = [p.nd == 3, p.nd >= 2];
    // The bicubic backward copies when the sizes agree.
    let copy = p.kind == Kind::Cubic && p.inp == p.out;
    let work = od * oh * ow * kd * kh * kw;
    regen_runtime::host::parallel_for(p.n * p.c, grain(work), |a, b| {
        let mut acc = vec![T::Acc::zero(); id * ih * iw];
        for pl in a..b {
            let (bn, ch) = (pl / p.c, pl % p.c);
            acc.fill(T::Acc::zero());
            let gp = (go.ptr as *const T).wrapping_offset(go.at(bn, ch, 0, 0, 0));
            for d in 0..od {
                for h in 0..oh {
                    let grow = gp.wrapping_offset(d as isize * go.st[2] + h as isize * go.st[3]);
                    if copy {
                        for wi in 0..ow {
                            // SAFETY: an element of grad_output.
                            acc[(d * ih + h) * iw + wi] = unsafe { ld(grow, wi as isize * go.st[4]) };
                        }
                        continue;
                    }
                    let (bd, bh) = (d * kd, h * kh);
                    // The row's (depth, height) taps: their offset in the plane and weight.
                    let mut rows = [(0usize, None::<T::Acc>); 16];
                    for jd in 0..kd {
                        for jh in 0..kh {
                            let wdh = match real {
                                [true, _] => Some(t[0].w[bd + jd] * t[1].w[bh + jh]),
                                [false, true] => Some(t[1].w[bh + jh]),
                                _ => None,
                            };
                            rows[jd * kh + jh] = ((t[0].idx[bd + jd] * ih + t[1].idx[bh + jh]) * iw, wdh);
                        }
                    }
                    let rows = &rows[..kd * kh];
                    let tw = (&t[2].idx[..], &t[2].w[..]);
                    // SAFETY: elements of this row of grad_output.
                    let g = |wi: usize| unsafe { ld(grow, wi as isize * go.st[4]) };
                    match (p.kind, kw) {
                        (Kind::Cubic, _) => back_row_cubic::<T>(&mut acc, rows, tw, ow, g),
                        (_, 2) => back_row::<T, 2>(&mut acc, rows, tw, ow, g),
                        _ => back_row::<T, 1>(&mut acc, rows, tw, ow, g),
                    }
                }
            }
            let gq = (gi.ptr as *mut T).wrapping_offset(gi.at(bn, ch, 0, 0, 0));
            for d in 0..id {
                for h in 0..ih {
                    for wi in 0..iw {
                        let o = d as isize * gi.st[2] + h as isize * gi.st[3] + wi as isize * gi.st[4];
                        // SAFETY: an element of grad_input.
                        unsafe { *gq.offset(o) = T::from_acc(acc[(d * ih + h) * iw + wi]) };
                    }
                }
            }
        }
    });
}

/// One output row's linear scatter: per element, taps in (depth, height, width) order, each
/// `acc += ((wd·wh)·ww)·g` (`rows` holds each (depth, height) tap's offset and `wd·wh`).
#[inline(always)]
fn back_row<T: Fx, const K: usize>(
    acc: &mut [T::Acc],
    rows: &[(usize, Option<T::Acc>)],
    (idx, w): (&[usize], &[T::Acc]),
    ow: usize,
    g: impl Fn(usize) -> T::Acc,
) {
    for wi in 0..ow {
        let gv = g(wi);
        let (ix, wx) = (&idx[wi * K..wi * K + K], &w[wi * K..wi * K + K]);
        for &(base, wdh) in rows {
            for j in 0..K {
                let wt = wdh.map_or(wx[j], |v| v * wx[j]);
                let k = base + ix[j];
                acc[k] = acc[k] + wt * gv;
            }
        }
    }
}

/// `UpSampleBicubic2d.cpp`'s scatter of one output row: per element, x taps outer, y taps inner,
/// `acc += (g·wy)·wx`.
#[inline(always)]
fn back_row_cubic<T: Fx>(
    acc: &mut [T::Acc],
    rows: &[(usize, Option<T::Acc>)],
    (idx, w): (&[usize], &[T::Acc]),
    ow: usize,
    g: impl Fn(usize) -> T::Acc,
) {
    for wi in 0..ow {
        let gv = g(wi);
        for j in 0..4 {
            let (ix, wx) = (idx[wi * 4 + j], w[wi * 4 + j]);
            for &(base, wy) in rows {
                let v = gv * wy.unwrap_or_else(T::Acc::one) * wx;
                acc[base + ix] = acc[base + ix] + v;
            }
        }
    }
}

/// `upsample_{linear1d,bilinear2d,bicubic2d,trilinear3d}.out`.
pub fn up_out(
    kind: Kind,
    nd: usize,
    input: TensorRef<'_>,
    output_size: &[i64],
    align: bool,
    scales: &[Option<f64>],
    out: TensorRef<'_>,
) -> Result<()> {
    // uint8 resamples in CPU's separable fixed-point passes.
    if nd == 2 && DType::from_scalar_type(input.dtype())? == DType::U8 {
        return crate::ops::resample_aa::up_out(kind, false, input, output_size, align, scales, out);
    }
    let p = up_plan(kind, nd, input.sizes(), output_size, align, scales)?;
    if input.sizes().contains(&0) && input.sizes()[1..].iter().product::<i64>() == 0 {
        return Err(Error::runtime(format!(
            "Non-empty {}D data tensor expected but got a tensor with sizes {}",
            nd + 2,
            fmt_sizes(input.sizes())
        )));
    }
    let kernel = match (kind, nd) {
        (Kind::Linear, 2) => "upsample_bilinear2d_channels_last",
        (Kind::Linear, _) => "compute_indices_weights_linear",
        (Kind::Cubic, _) => "compute_indices_weights_cubic",
    };
    let dtype = float_dtype(&input, kernel)?;
    check_out_dtype(&out, dtype)?;
    with_size(&out, &p.out_sizes(), |o| {
        if p.n * p.c == 0 {
            return Ok(());
        }
        let copy = resolved(&input)?;
        let xin = copy.as_ref().map_or(input, |c| c.as_ref());
        let f = formula(&p, &xin);
        let (x, y) = (view(&xin, nd), view(o, nd));
        crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
            up_forward::<T>(&p, f, x, y);
            Ok(())
        }, else Err(not_implemented(kernel, dtype)))
    })
}

/// `upsample_*_backward.grad_input`.
#[allow(clippy::too_many_arguments)]
pub fn up_backward_out(
    kind: Kind,
    nd: usize,
    grad_output: TensorRef<'_>,
    output_size: &[i64],
    input_size: &[i64],
    align: bool,
    scales: &[Option<f64>],
    grad_input: TensorRef<'_>,
) -> Result<()> {
    let p = up_plan(kind, nd, input_size, output_size, align, scales)?;
    let want = p.out_sizes();
    let g = grad_output.sizes();
    if nd == 1 {
        for (i, &w) in want.iter().enumerate() {
            if g.len() != 3 || g[i] != w {
                return Err(Error::runtime(format!(
                    "Expected a tensor of dimension 3 and tensor.size[{i}] == {w} but got: dimension {} and tensor.size[{i}] = {}",
                    g.len(),
                    g.get(i).copied().unwrap_or(0)
                )));
            }
        }
    } else {
        if g.len() != nd + 2 {
            return Err(Error::runtime(format!(
                "Expected grad_output to be a tensor of dimension {} but got: dimension {}",
                nd + 2,
                g.len()
            )));
        }
        for (i, (&w, &h)) in want.iter().zip(g).enumerate() {
            if w != h {
                return Err(Error::runtime(format!(
                    "Expected grad_output to have the same shape as output; output.size({i}) = {w} but got grad_output.size({i}) = {h}"
                )));
            }
        }
    }
    let name = format!("{}_backward", up_name(kind, nd));
    let dtype = float_dtype(&grad_output, &name)?;
    check_out_dtype(&grad_input, dtype)?;
    with_size(&grad_input, input_size, |gi| {
        if p.n * p.c == 0 {
            return Ok(());
        }
        let copy = resolved(&grad_output)?;
        let go = view(&copy.as_ref().map_or(grad_output, |c| c.as_ref()), nd);
        let gv = view(gi, nd);
        crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
            up_backward::<T>(&p, go, gv);
            Ok(())
        }, else Err(not_implemented(&name, dtype)))
    })
}

// ---------------------------------------------------------------------------------------------
// Reflection and replication padding
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pad {
    Reflect,
    Replicate,
}

/// A padding op's geometry and, per spatial dimension and output index, the input index it reads.
pub struct PadPlan {
    nd: usize,
    batched: bool,
    n: usize,
    c: usize,
    inp: [usize; 3],
    out: [usize; 3],
    map: [Vec<usize>; 3],
}

impl PadPlan {
    fn out_sizes(&self) -> Vec<i64> {
        sizes_of(self.batched, self.n, self.c, &self.out[3 - self.nd..])
    }
}

fn pad_name(kind: Pad, nd: usize) -> String {
    format!("{}_pad{nd}d", if kind == Pad::Reflect { "reflection" } else { "replication" })
}

/// The checks of `reflection_pad{1,2,3}d` / `replication_pad{1,2,3}d` and the index maps
/// (`ReflectionPad::index`, `ReplicationPad::index` of `cpu/PaddingKernel.cpp`).
fn pad_plan(kind: Pad, nd: usize, s: &[i64], padding: &[i64]) -> Result<PadPlan> {
    if padding.len() != 2 * nd {
        return Err(Error::runtime(format!("padding size is expected to be {}, but got: {}", 2 * nd, padding.len())));
    }
    let k = s.len();
    let batched = k == nd + 2;
    let first = usize::from(batched);
    if (k != nd + 1 && k != nd + 2) || s[first..].contains(&0) {
        return Err(Error::runtime(format!(
            "Expected {}D or {}D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: {}",
            nd + 1,
            nd + 2,
            fmt_sizes(s)
        )));
    }
    // Spatial dimension j (of 3) pads `padding[2m]` before and `padding[2m+1]` after, m counting
    // from the last dimension.
    let mut inp = [1usize; 3];
    let mut pads = [(0i64, 0i64); 3];
    for j in 3 - nd..3 {
        let m = 2 - j;
        inp[j] = s[k - 3 + j] as usize;
        pads[j] = (padding[2 * m], padding[2 * m + 1]);
    }
    if kind == Pad::Reflect {
        for j in (3 - nd..3).rev() {
            let (l, r) = pads[j];
            let size = inp[j] as i64;
            if l >= size || r >= size {
                return Err(Error::runtime(format!(
                    "Argument #{}: Padding size should be less than the corresponding input dimension, but got: padding ({l}, {r}) at dimension {} of input {}",
                    4 + 2 * (2 - j),
                    k - 3 + j,
                    fmt_sizes(s)
                )));
            }
        }
    }
    let outs: Vec<i64> = (0..3).map(|j| inp[j] as i64 + pads[j].0 + pads[j].1).collect();
    if outs[3 - nd..].iter().any(|&o| o < 1) {
        let names = &["D", "H", "W"][3 - nd..];
        let msg = if nd == 1 {
            format!("input (W: {}) is too small. Calculated output W: {}", inp[2], outs[2])
        } else {
            let o = names.iter().zip(&outs[3 - nd..]).map(|(n, v)| format!("{n}: {v}")).collect::<Vec<_>>().join(" ");
            let i = names.iter().zip(&inp[3 - nd..]).map(|(n, v)| format!("{n}: {v}")).collect::<Vec<_>>().join(", ");
            format!("Calculated output {o} must be >= 1 in every dimension (input {i})")
        };
        return Err(Error::runtime(msg));
    }
    let mut out = [1usize; 3];
    let mut map: [Vec<usize>; 3] = [vec![0], vec![0], vec![0]];
    for j in 3 - nd..3 {
        out[j] = outs[j] as usize;
        let (size, pad) = (inp[j] as i64, pads[j].0);
        map[j] = (0..outs[j])
            .map(|o| {
                let i = match kind {
                    Pad::Reflect if o < pad => 2 * pad - o,
                    Pad::Reflect if o < size + pad => o,
                    Pad::Reflect => 2 * (size + pad - 1) - o,
                    Pad::Replicate => o.clamp(pad, size + pad - 1),
                };
                (i - pad).clamp(0, size - 1) as usize
            })
            .collect();
    }
    let n = if batched { s[0] as usize } else { 1 };
    let c = s[first] as usize;
    Ok(PadPlan { nd, batched, n, c, inp, out, map })
}

/// The gather of the forward pass, for elements of any type of the element's size.
fn pad_forward<E: Copy + Send + Sync>(p: &PadPlan, x: View, y: View) {
    let [od, oh, ow] = p.out;
    let off: Vec<Vec<isize>> = (0..3).map(|j| p.map[j].iter().map(|&i| i as isize * x.st[2 + j]).collect()).collect();
    if p.c > 1 && x.st[1] == 1 && y.st[1] == 1 {
        let positions = p.n * od * oh * ow;
        regen_runtime::host::parallel_for(positions, grain(p.c), |a, b| {
            for pos in a..b {
                let (bn, rest) = (pos / (od * oh * ow), pos % (od * oh * ow));
                let (d, h, w) = (rest / (oh * ow), rest / ow % oh, rest % ow);
                let src = (x.ptr as *const E).wrapping_offset(x.at(bn, 0, 0, 0, 0) + off[0][d] + off[1][h] + off[2][w]);
                let dst = (y.ptr as *mut E).wrapping_offset(y.at(bn, 0, d, h, w));
                // SAFETY: channels 0..c are contiguous in both tensors; the index maps stay inside
                // the input.
                unsafe { std::ptr::copy_nonoverlapping(src, dst, p.c) };
            }
        });
        return;
    }
    regen_runtime::host::parallel_for(p.n * p.c, grain(od * oh * ow), |a, b| {
        for pl in a..b {
            let (bn, ch) = (pl / p.c, pl % p.c);
            let xp = (x.ptr as *const E).wrapping_offset(x.at(bn, ch, 0, 0, 0));
            for (d, &fd) in off[0].iter().enumerate() {
                for (h, &fh) in off[1].iter().enumerate() {
                    for (w, &fw) in off[2].iter().enumerate() {
                        // SAFETY: the index maps stay inside the input; (d, h, w) is an output
                        // element.
                        unsafe { *(y.ptr as *mut E).offset(y.at(bn, ch, d, h, w)) = *xp.offset(fd + fh + fw) };
                    }
                }
            }
        }
    });
}

/// An element the padding backward adds as CPU's `scalar_t +=` does.
trait Acc: Copy + Send + Sync + 'static {
    fn zero() -> Self;
    fn plus(self, o: Self) -> Self;
}

macro_rules! acc_px {
    ($($t:ty),*) => {$(
        impl Acc for $t {
            fn zero() -> $t {
                <$t as Element>::from_acc(<$t as Px>::acc_zero())
            }
            #[inline(always)]
            fn plus(self, o: $t) -> $t {
                <$t as Element>::from_acc(<$t as Px>::add(self.to_acc(), o.to_acc()))
            }
        }
    )*};
}
acc_px!(f32, f64, f16, bf16);

impl<F: num_traits::Float + Send + Sync + 'static> Acc for Complex<F> {
    fn zero() -> Self {
        Complex::new(F::zero(), F::zero())
    }
    #[inline(always)]
    fn plus(self, o: Self) -> Self {
        self + o
    }
}

fn pad_backward<E: Acc>(p: &PadPlan, go: View, gi: View) {
    let [id, ih, iw] = p.inp;
    let [od, oh, ow] = p.out;
    regen_runtime::host::parallel_for(p.n * p.c, grain(od * oh * ow), |a, b| {
        for pl in a..b {
            let (bn, ch) = (pl / p.c, pl % p.c);
            let gq = (gi.ptr as *mut E).wrapping_offset(gi.at(bn, ch, 0, 0, 0));
            let at =
                |d: usize, h: usize, w: usize| d as isize * gi.st[2] + h as isize * gi.st[3] + w as isize * gi.st[4];
            for d in 0..id {
                for h in 0..ih {
                    for w in 0..iw {
                        // SAFETY: (d, h, w) < (id, ih, iw) is an element of plane (bn, ch) of
                        // grad_input (resized to the input's sizes), which only this thread writes.
                        unsafe { *gq.offset(at(d, h, w)) = E::zero() };
                    }
                }
            }
            let gp = (go.ptr as *const E).wrapping_offset(go.at(bn, ch, 0, 0, 0));
            for d in 0..od {
                for h in 0..oh {
                    for w in 0..ow {
                        // SAFETY: (d, h, w) < (od, oh, ow), bn < n and ch < c are inside
                        // grad_output, whose sizes pad_backward_out checked against the plan's
                        // (batch and channel included).
                        let g = unsafe {
                            *gp.offset(d as isize * go.st[2] + h as isize * go.st[3] + w as isize * go.st[4])
                        };
                        let o = at(p.map[0][d], p.map[1][h], p.map[2][w]);
                        // SAFETY: pad_plan clamps every map entry into 0..inp[j], so o is an element
                        // of plane (bn, ch) of grad_input, which only this thread writes.
                        unsafe { *gq.offset(o) = (*gq.offset(o)).plus(g) };
                    }
                }
            }
        }
    });
}

/// `reflection_pad{1,2,3}d.out` / `replication_pad{1,2,3}d.out`.
pub fn pad_out(kind: Pad, nd: usize, input: TensorRef<'_>, padding: &[i64], out: TensorRef<'_>) -> Result<()> {
    let p = pad_plan(kind, nd, input.sizes(), padding)?;
    let dtype = DType::from_scalar_type(input.dtype())?;
    if dtype == DType::Bool {
        return Err(not_implemented(&pad_name(kind, nd), dtype));
    }
    check_out_dtype(&out, dtype)?;
    with_size(&out, &p.out_sizes(), |o| {
        if p.n * p.c == 0 {
            return Ok(());
        }
        let copy = resolved(&input)?;
        let x = view(&copy.as_ref().map_or(input, |c| c.as_ref()), nd);
        let y = view(o, nd);
        match dtype.size() {
            1 => pad_forward::<u8>(&p, x, y),
            2 => pad_forward::<u16>(&p, x, y),
            4 => pad_forward::<u32>(&p, x, y),
            8 => pad_forward::<u64>(&p, x, y),
            16 => pad_forward::<[u64; 2]>(&p, x, y),
            _ => return Err(not_implemented(&pad_name(kind, nd), dtype)),
        }
        Ok(())
    })
}

/// The functional forward: a new output in the input's memory format.
pub fn pad(kind: Pad, nd: usize, input: TensorRef<'_>, padding: &[i64]) -> Result<Tensor> {
    let p = pad_plan(kind, nd, input.sizes(), padding)?;
    let out = new_like(&input, &p.out_sizes(), DType::from_scalar_type(input.dtype())?)?;
    pad_out(kind, nd, input, padding, out.as_ref())?;
    Ok(out)
}

/// `*_pad{1,2,3}d_backward.grad_input`.
pub fn pad_backward_out(
    kind: Pad,
    nd: usize,
    grad_output: TensorRef<'_>,
    input: TensorRef<'_>,
    padding: &[i64],
    grad_input: TensorRef<'_>,
) -> Result<()> {
    let p = pad_plan(kind, nd, input.sizes(), padding)?;
    let want = p.out_sizes();
    let g = grad_output.sizes();
    if g.len() != want.len() {
        return Err(Error::runtime(format!(
            "Expected grad_output of size {} but got {}",
            fmt_sizes(&want),
            fmt_sizes(g)
        )));
    }
    // CPU's checks (channel, then the spatial sizes), and the batch, which CPU leaves unchecked:
    // the loop walks the input's batch through grad_output, so a smaller one would be read past
    // its end.
    let (channel, batch) = (want.len() - nd - 1, (want.len() == nd + 2).then_some(0));
    let spatial = [(2usize, "width"), (1, "height"), (0, "depth")]
        .into_iter()
        .filter(|&(j, _)| j + nd >= 3)
        .map(|(j, what)| (want.len() - 3 + j, what));
    for (k, what) in std::iter::once((channel, "channel")).chain(spatial).chain(batch.map(|b| (b, "batch"))) {
        if g[k] != want[k] {
            return Err(Error::runtime(format!("grad_output {what} unexpected. Expected: {}, Got: {}", want[k], g[k])));
        }
    }
    let dtype = DType::from_scalar_type(grad_output.dtype())?;
    let name = format!("{}_backward", pad_name(kind, nd));
    check_out_dtype(&grad_input, dtype)?;
    with_size(&grad_input, input.sizes(), |gi| {
        if p.n * p.c == 0 {
            return Ok(());
        }
        let copy = resolved(&grad_output)?;
        let go = view(&copy.as_ref().map_or(grad_output, |c| c.as_ref()), nd);
        let gv = view(gi, nd);
        match dtype {
            DType::F32 => pad_backward::<f32>(&p, go, gv),
            DType::F64 => pad_backward::<f64>(&p, go, gv),
            DType::F16 => pad_backward::<f16>(&p, go, gv),
            DType::BF16 => pad_backward::<bf16>(&p, go, gv),
            DType::C64 => pad_backward::<Complex<f32>>(&p, go, gv),
            DType::C128 => pad_backward::<Complex<f64>>(&p, go, gv),
            _ => return Err(not_implemented(&name, dtype)),
        }
        Ok(())
    })
}

/// The functional backward: a new gradient in the input's memory format.
pub fn pad_backward_new(
    kind: Pad,
    nd: usize,
    grad_output: TensorRef<'_>,
    input: TensorRef<'_>,
    padding: &[i64],
) -> Result<Tensor> {
    let gi = new_like(&input, input.sizes(), DType::from_scalar_type(grad_output.dtype())?)?;
    pad_backward_out(kind, nd, grad_output, input, padding, gi.as_ref())?;
    Ok(gi)
}

// ---------------------------------------------------------------------------------------------
// Grid sampling
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Bilinear,
    Nearest,
    Bicubic,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Padding {
    Zeros,
    Border,
    Reflection,
}

/// The coordinate arithmetic of `GridSampler.h` in `scalar_t`: `r` rounds a result to the
/// element type (every operation of float16/bfloat16 does on CPU).
#[derive(Clone, Copy)]
struct Coord<A: Real> {
    r: fn(A) -> A,
    padding: Padding,
    align: bool,
}

impl<A: Real> Coord<A> {
    fn unnormalize(&self, x: A, size: usize) -> (A, A) {
        let r = self.r;
        let one = A::one();
        let two = c::<A>(2.0);
        if self.align {
            let g = r(c::<A>((size - 1) as f64) / two);
            (r(r(r(x + one) / two) * c::<A>((size - 1) as f64)), g)
        } else {
            let g = r(c::<A>(size as f64) / two);
            (r(r(r(r(x + one) * c::<A>(size as f64)) - one) / two), g)
        }
    }

    fn clip(&self, x: A, size: usize) -> (A, A) {
        let max = c::<A>((size - 1) as f64);
        if x <= A::zero() {
            (A::zero(), A::zero())
        } else if x >= max {
            (max, A::zero())
        } else {
            (x, A::one())
        }
    }

    /// `reflect_coordinates_set_grad` (the value equals `reflect_coordinates`' except that a NaN
    /// keeps its sign bit, which nothing reads).
    fn reflect(&self, x: A, twice_low: i64, twice_high: i64) -> (A, A) {
        let r = self.r;
        if twice_low == twice_high {
            return (A::zero(), A::zero());
        }
        let min = r(c::<A>(twice_low as f64) / c::<A>(2.0));
        let span = r(c::<A>((twice_high - twice_low) as f64) / c::<A>(2.0));
        let mut v = r(x - min);
        let mut mult = A::one();
        if v < A::zero() {
            mult = -A::one();
            v = -v;
        }
        let extra = r(v % span);
        let flips = to_i64(r(v / span).floor());
        if flips % 2 == 0 { (r(extra + min), mult) } else { (r(r(span - extra) + min), -mult) }
    }

    /// `compute_coordinates` with the gradient factor of `*_set_grad`.
    fn pad(&self, x: A, size: usize) -> (A, A) {
        let r = self.r;
        match self.padding {
            Padding::Zeros => (x, A::one()),
            Padding::Border => self.clip(x, size),
            Padding::Reflection => {
                let (v, gr) = if self.align {
                    self.reflect(x, 0, 2 * (size as i64 - 1))
                } else {
                    self.reflect(x, -1, 2 * size as i64 - 1)
                };
                let (v, gc) = self.clip(v, size);
                (v, r(gr * gc))
            }
        }
    }

    /// `grid_sampler_compute_source_index_set_grad`: the source coordinate and d(coord)/d(grid).
    fn source(&self, x: A, size: usize) -> (A, A) {
        let (u, g) = self.unnormalize(x, size);
        let (v, gp) = self.pad(u, size);
        (v, if self.padding == Padding::Zeros { g } else { (self.r)(g * gp) })
    }
}

/// `cubic_interp1d`'s and `get_cubic_coefficients_grad`'s coefficients in `scalar_t`.
fn cubic_coeffs_r<A: Real>(t: A, r: fn(A) -> A) -> [A; 4] {
    let a = c::<A>(-0.75);
    let one = A::one();
    let c1 = |x: A| r(r(r(r(r(r(a + c(2.0)) * x) - r(a + c(3.0))) * x) * x) + one);
    let c2 = |x: A| r(r(r(r(r(r(a * x) - r(c::<A>(5.0) * a)) * x) + r(c::<A>(8.0) * a)) * x) - r(c::<A>(4.0) * a));
    let x2 = r(one - t);
    [c2(r(t + one)), c1(t), c1(x2), c2(r(x2 + one))]
}

fn cubic_grad_coeffs<A: Real>(t: A, r: fn(A) -> A) -> [A; 4] {
    let a = c::<A>(-0.75);
    let (c3, c2, c10, c8) = (c::<A>(3.0), c::<A>(2.0), c::<A>(10.0), c::<A>(8.0));
    let x = r(-A::one() - t);
    let g0 = r(r(r(r(r(-c3 * a) * x) - r(c10 * a)) * x) - r(c8 * a));
    let x = -t;
    let g1 = r(r(r(r(-c3 * r(a + c2)) * x) - r(c2 * r(a + c3))) * x);
    let x = r(A::one() - t);
    let g2 = r(r(r(r(c3 * r(a + c2)) * x) - r(c2 * r(a + c3))) * x);
    let x = r(c2 - t);
    let g3 = r(r(r(r(r(c3 * a) * x) - r(c10 * a)) * x) + r(c8 * a));
    [g0, g1, g2, g3]
}

/// A grid sampling call's geometry.
struct Gs {
    nd: usize,
    n: usize,
    c: usize,
    inp: [usize; 3],
    out: [usize; 3],
    mode: Mode,
    padding: Padding,
    align: bool,
}

/// The grid's data and strides as `[batch, depth, height, width, coordinate]`.
#[derive(Clone, Copy)]
struct GView {
    ptr: usize,
    st: [isize; 5],
}

fn gview(t: &TensorRef<'_>, nd: usize) -> GView {
    let s = t.strides();
    let mut st = [0isize; 5];
    st[0] = s[0] as isize;
    for j in 0..nd {
        st[4 - nd + j] = s[1 + j] as isize;
    }
    st[4] = s[nd + 1] as isize;
    GView { ptr: t.data_ptr() as usize, st }
}

fn gs_plan(nd: usize, input: &TensorRef<'_>, grid: &TensorRef<'_>, mode: i64, padding: i64, align: bool) -> Result<Gs> {
    let (s, g) = (input.sizes(), grid.sizes());
    if s.is_empty() || g.is_empty() || s[0] != g[0] {
        return Err(Error::runtime(format!(
            "grid_sampler(): expected grid and input to have same batch size, but got input with sizes {} and grid with sizes {}",
            fmt_sizes(s),
            fmt_sizes(g)
        )));
    }
    if g[g.len() - 1] != s.len() as i64 - 2 {
        return Err(Error::runtime(format!(
            "grid_sampler(): expected grid to have size {} in last dimension, but got grid with sizes {}",
            s.len() as i64 - 2,
            fmt_sizes(g)
        )));
    }
    if let Some(i) = (2..s.len()).find(|&i| s[i] <= 0) {
        return Err(Error::runtime(format!(
            "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes {} with dimension {i} being empty",
            fmt_sizes(s)
        )));
    }
    if s.len() != nd + 2 || g.len() != nd + 2 {
        return Err(Error::runtime(format!(
            "grid_sampler(): expected {}D input and grid with same number of dimensions, but got input with sizes {} and grid with sizes {}",
            nd + 2,
            fmt_sizes(s),
            fmt_sizes(g)
        )));
    }
    let mode = match mode {
        0 => Mode::Bilinear,
        1 => Mode::Nearest,
        2 => Mode::Bicubic,
        m => return Err(Error::runtime(format!("grid_sampler(): unknown interpolation mode {m}"))),
    };
    let padding = match padding {
        0 => Padding::Zeros,
        1 => Padding::Border,
        2 => Padding::Reflection,
        m => return Err(Error::runtime(format!("grid_sampler(): unknown padding mode {m}"))),
    };
    let mut inp = [1usize; 3];
    let mut out = [1usize; 3];
    for j in 0..nd {
        inp[3 - nd + j] = s[2 + j] as usize;
        out[3 - nd + j] = g[1 + j] as usize;
    }
    Ok(Gs { nd, n: s[0] as usize, c: s[1] as usize, inp, out, mode, padding, align })
}

fn gs_dtype(nd: usize, input: &TensorRef<'_>, grid: &TensorRef<'_>, backward: bool) -> Result<DType> {
    let kernel = match (nd, backward) {
        (2, false) => "grid_sampler_2d_cpu_kernel_impl",
        (2, true) => "grid_sampler_2d_backward_cpu_kernel_impl",
        (_, false) => "grid_sampler3d_cpu",
        (_, true) => "grid_sampler_3d_backward_cpu",
    };
    let d = float_dtype(input, kernel)?;
    let gd = DType::from_scalar_type(grid.dtype())?;
    if gd != d {
        return Err(Error::runtime(format!("expected scalar type {} but found {}", d.name(), gd.name())));
    }
    Ok(d)
}

/// One output position's sampling: the source coordinates (x, y, z order) and their gradient
/// factors, and for bilinear and nearest the corners read, with their weights.
struct Sample<A> {
    src: [A; 3],
    mult: [A; 3],
    base: [i64; 3],
}

fn within(p: &Gs, i: [i64; 3]) -> bool {
    (0..p.nd).all(|a| i[a] >= 0 && i[a] < p.inp[2 - a] as i64)
}

/// Offset of input element (x, y, z) in a plane with strides `st` (`[.., .., d, h, w]`).
fn at3(st: &[isize; 5], i: [i64; 3]) -> isize {
    i[0] as isize * st[4] + i[1] as isize * st[3] + i[2] as isize * st[2]
}

/// The bilinear corners of `s` in CPU's order (x fastest, then y, then z), each with its
/// per-axis weight factors (`(x_hi - x)` low, `(x - x_lo)` high).
fn corners<A: Real>(nd: usize, s: &Sample<A>, r: fn(A) -> A) -> ([[i64; 3]; 8], [[A; 3]; 8], usize) {
    let mut idx = [[0i64; 3]; 8];
    let mut fac = [[A::one(); 3]; 8];
    let count = 1 << nd;
    for (k, (i, f)) in idx.iter_mut().zip(fac.iter_mut()).enumerate().take(count) {
        for a in 0..nd {
            let hi = (k >> a) & 1 == 1;
            let lo = s.base[a];
            i[a] = lo + i64::from(hi);
            f[a] = if hi { r(s.src[a] - c::<A>(lo as f64)) } else { r(c::<A>((lo + 1) as f64) - s.src[a]) };
        }
    }
    (idx, fac, count)
}

/// A 5-d bicubic (tricubic) sample: CPU computes it in op-math (float for float16/bfloat16),
/// rounding only the result, unlike the 4-d kernel. `c`/`g` are the coefficients and their
/// derivatives per axis (x, y, z); taps are ordered z, y, x (x fastest).
struct Tricubic<T: Fx> {
    c: [[T::Acc; 4]; 3],
    g: [[T::Acc; 4]; 3],
    mult: [T::Acc; 3],
    idx: [[i64; 3]; 64],
    off: [isize; 64],
    inb: [bool; 64],
}

impl<T: Fx> Tricubic<T> {
    fn new(p: &Gs, co: &Coord<T::Acc>, raw: [T::Acc; 3], st: &[isize; 5], grad: bool) -> Self {
        let one = T::Acc::one();
        let mut base = [T::Acc::zero(); 3];
        let mut cf = [[T::Acc::zero(); 4]; 3];
        let mut g = [[T::Acc::zero(); 4]; 3];
        let mut mult = [T::Acc::zero(); 3];
        for a in 0..3 {
            let (u, m) = co.unnormalize(raw[a], p.inp[2 - a]);
            base[a] = u.floor();
            let t = u - base[a];
            cf[a] = cubic_coeffs_r(t, co.r);
            if grad {
                g[a] = cubic_grad_coeffs(t, co.r);
            }
            mult[a] = m;
        }
        let mut idx = [[0i64; 3]; 64];
        let mut off = [0isize; 64];
        let mut inb = [false; 64];
        for (n, ((e, o), b)) in idx.iter_mut().zip(off.iter_mut()).zip(inb.iter_mut()).enumerate() {
            let ijk = [n % 4, n / 4 % 4, n / 16];
            *e = std::array::from_fn(|a| to_i64(co.pad(base[a] - one + c::<T::Acc>(ijk[a] as f64), p.inp[2 - a]).0));
            *o = at3(st, *e);
            *b = within(p, *e);
        }
        Tricubic { c: cf, g, mult, idx, off, inb }
    }

    /// Tap (i, j, k)'s value in the plane at `cp` (0 outside the input).
    #[inline(always)]
    fn val(&self, xp: *const T, cp: isize, i: usize, j: usize, k: usize) -> T::Acc {
        let n = (k * 4 + j) * 4 + i;
        // SAFETY: an in-bounds element of the input plane.
        if self.inb[n] { unsafe { ld(xp, cp + self.off[n]) } } else { T::Acc::zero() }
    }
}

fn gs_forward<T: Fx>(p: &Gs, x: View, g: GView, y: View) {
    let r = rr::<T>;
    let co = Coord { r, padding: p.padding, align: p.align };
    let co3 = Coord { r: |v| v, ..co };
    let [od, oh, ow] = p.out;
    let positions = p.n * od * oh * ow;
    regen_runtime::host::parallel_for(positions, grain(p.c * (1 << p.nd)), |a, b| {
        for pos in a..b {
            let (bn, rest) = (pos / (od * oh * ow), pos % (od * oh * ow));
            let (d, h, w) = (rest / (oh * ow), rest / ow % oh, rest % ow);
            let gp = (g.ptr as *const T).wrapping_offset(
                bn as isize * g.st[0] + d as isize * g.st[1] + h as isize * g.st[2] + w as isize * g.st[3],
            );
            let raw: [T::Acc; 3] =
                // SAFETY: gs_plan checked the grid is [N, out…, nd] with N the input's batch, so
                // for a < nd, gp + a·st[4] is coordinate a of grid position (bn, d, h, w).
                std::array::from_fn(|a| if a < p.nd { unsafe { ld(gp, a as isize * g.st[4]) } } else { T::Acc::zero() });
            let size = |a: usize| p.inp[2 - a];
            let xp = (x.ptr as *const T).wrapping_offset(x.at(bn, 0, 0, 0, 0));
            let yo = |ch: usize| y.at(bn, ch, d, h, w);
            // SAFETY: for ch < c (every call), element (bn, ch, d, h, w) of the new output
            // [n, c, out…]; position pos is this thread's only.
            let store = |ch: usize, v: T::Acc| unsafe { *(y.ptr as *mut T).offset(yo(ch)) = T::from_acc(v) };
            match p.mode {
                Mode::Bilinear | Mode::Nearest => {
                    let mut src = [T::Acc::zero(); 3];
                    for a in 0..p.nd {
                        src[a] = co.source(raw[a], size(a)).0;
                    }
                    if p.mode == Mode::Nearest {
                        let i: [i64; 3] =
                            std::array::from_fn(|a| if a < p.nd { to_i64(src[a].round_even()) } else { 0 });
                        let inb = within(p, i);
                        for ch in 0..p.c {
                            let v = if inb {
                                // SAFETY: within() checked every coordinate of i in 0..inp, and
                                // ch < c: an element of batch bn of the input.
                                unsafe { ld(xp, ch as isize * x.st[1] + at3(&x.st, i)) }
                            } else {
                                T::Acc::zero()
                            };
                            store(ch, v);
                        }
                        continue;
                    }
                    let base: [i64; 3] = std::array::from_fn(|a| if a < p.nd { to_i64(src[a].floor()) } else { 0 });
                    let s = Sample { src, mult: [T::Acc::one(); 3], base };
                    let (idx, fac, count) = corners(p.nd, &s, r);
                    // The corners read (in bounds), in CPU's order, with their weights.
                    let mut wts = [T::Acc::zero(); 8];
                    let mut offs = [0isize; 8];
                    let mut m = 0;
                    for k in 0..count {
                        if within(p, idx[k]) {
                            wts[m] = (1..p.nd).fold(fac[k][0], |acc, a| r(acc * fac[k][a]));
                            offs[m] = at3(&x.st, idx[k]);
                            m += 1;
                        }
                    }
                    let (wts, offs) = (&wts[..m], &offs[..m]);
                    for ch in 0..p.c {
                        let cp = ch as isize * x.st[1];
                        let mut acc = T::Acc::zero();
                        for (&o, &wt) in offs.iter().zip(wts) {
                            // SAFETY: offs holds only corners that passed within(), and ch < c:
                            // an element of batch bn of the input.
                            acc = r(acc + r(unsafe { ld(xp, cp + o) } * wt));
                        }
                        store(ch, acc);
                    }
                }
                Mode::Bicubic if p.nd == 3 => {
                    let tc = Tricubic::<T>::new(p, &co3, raw, &x.st, false);
                    for ch in 0..p.c {
                        let cp = ch as isize * x.st[1];
                        // Per (z, y) tap the weight cy·cz, then the x taps: ((cy·cz)·v)·cx
                        // accumulated in one sum, as CPU's loop.
                        let mut acc = T::Acc::zero();
                        for k in 0..4 {
                            for j in 0..4 {
                                let wyz = tc.c[1][j] * tc.c[2][k];
                                for i in 0..4 {
                                    acc = acc + wyz * tc.val(xp, cp, i, j, k) * tc.c[0][i];
                                }
                            }
                        }
                        store(ch, acc);
                    }
                }
                Mode::Bicubic => {
                    let ix = co.unnormalize(raw[0], size(0)).0;
                    let iy = co.unnormalize(raw[1], size(1)).0;
                    let (fx, fy) = (ix.floor(), iy.floor());
                    let (tx, ty) = (r(ix - fx), r(iy - fy));
                    let (cx, cy) = (cubic_coeffs_r(tx, r), cubic_coeffs_r(ty, r));
                    // get_value_bounded's 16 taps: (offset, in bounds).
                    let taps: [(isize, bool); 16] = std::array::from_fn(|k| {
                        let (i, j) = (k % 4, k / 4);
                        let px = co.pad(r(r(fx - T::Acc::one()) + c::<T::Acc>(i as f64)), size(0)).0;
                        let py = co.pad(r(r(fy - T::Acc::one()) + c::<T::Acc>(j as f64)), size(1)).0;
                        let id = [to_i64(px), to_i64(py), 0];
                        (at3(&x.st, id), within(p, id))
                    });
                    for ch in 0..p.c {
                        let cp = ch as isize * x.st[1];
                        // SAFETY: read only when taps[k].1, within()'s check that the tap lies
                        // inside the input; ch < c: an element of batch bn of the input.
                        let val = |k: usize| if taps[k].1 { unsafe { ld(xp, cp + taps[k].0) } } else { T::Acc::zero() };
                        let interp = |v: [T::Acc; 4], cf: &[T::Acc; 4]| {
                            r(r(r(r(v[0] * cf[0]) + r(v[1] * cf[1])) + r(v[2] * cf[2])) + r(v[3] * cf[3]))
                        };
                        let rows: [T::Acc; 4] =
                            std::array::from_fn(|j| interp(std::array::from_fn(|i| val(j * 4 + i)), &cx));
                        store(ch, interp(rows, &cy));
                    }
                }
            }
        }
    });
}

/// The backward pass, one batch element per task (its channels scatter into one image, and the
/// grid gradient sums over channels).
fn gs_backward<T: Fx>(p: &Gs, go: View, x: View, g: GView, gi: Option<View>, gg: GView) {
    let r = rr::<T>;
    let co = Coord { r, padding: p.padding, align: p.align };
    let [od, oh, ow] = p.out;
    regen_runtime::host::parallel_for(p.n, 1, |a, b| {
        for bn in a..b {
            for d in 0..od {
                for h in 0..oh {
                    for w in 0..ow {
                        gs_backward_at::<T>(p, &co, [bn, d, h, w], go, x, g, gi, gg);
                    }
                }
            }
        }
    });
}

#[allow(clippy::too_many_arguments)]
fn gs_backward_at<T: Fx>(
    p: &Gs,
    co: &Coord<T::Acc>,
    [bn, d, h, w]: [usize; 4],
    go: View,
    x: View,
    g: GView,
    gi: Option<View>,
    gg: GView,
) {
    let r = rr::<T>;
    let size = |a: usize| p.inp[2 - a];
    let gp = (g.ptr as *const T)
        .wrapping_offset(bn as isize * g.st[0] + d as isize * g.st[1] + h as isize * g.st[2] + w as isize * g.st[3]);
    let ggp = (gg.ptr as *mut T).wrapping_offset(
        bn as isize * gg.st[0] + d as isize * gg.st[1] + h as isize * gg.st[2] + w as isize * gg.st[3],
    );
    let raw: [T::Acc; 3] =
        // SAFETY: gs_plan checked the grid is [N, out…, nd] with N the input's batch, so for
        // a < nd, gp + a·st[4] is coordinate a of grid position (bn, d, h, w).
        std::array::from_fn(|a| if a < p.nd { unsafe { ld(gp, a as isize * g.st[4]) } } else { T::Acc::zero() });
    let xp = (x.ptr as *const T).wrapping_offset(x.at(bn, 0, 0, 0, 0));
    // SAFETY: grad_output's sizes were checked equal to [n, c, out…], so for ch < c (every call)
    // (bn, ch, d, h, w) is one of its elements.
    let gout = |ch: usize| unsafe { ld(go.ptr as *const T, go.at(bn, ch, d, h, w)) };
    let add = |ch: usize, i: [i64; 3], v: T::Acc| {
        if let Some(gv) = gi
            && within(p, i)
        {
            let q = (gv.ptr as *mut T).wrapping_offset(gv.at(bn, ch, 0, 0, 0) + at3(&gv.st, i));
            // SAFETY: within() checked i inside the input and ch < c, so q is an element of the
            // new grad_input (the input's sizes); batch bn is this task's only.
            unsafe { *q = T::from_acc(r((*q).to_acc() + v)) };
        }
    };
    let set_grid = |vals: [T::Acc; 3]| {
        for (a, &v) in vals.iter().enumerate().take(p.nd) {
            // SAFETY: a < nd: coordinate a of position (bn, d, h, w) of the new grid gradient
            // (the grid's sizes); batch bn is this task's only.
            unsafe { *ggp.offset(a as isize * gg.st[4]) = T::from_acc(v) };
        }
    };
    let mut src = [T::Acc::zero(); 3];
    let mut mult = [T::Acc::one(); 3];
    for a in 0..p.nd {
        (src[a], mult[a]) = co.source(raw[a], size(a));
    }
    match p.mode {
        Mode::Nearest => {
            let i: [i64; 3] = std::array::from_fn(|a| if a < p.nd { to_i64(src[a].round_even()) } else { 0 });
            for ch in 0..p.c {
                add(ch, i, gout(ch));
            }
            set_grid([T::Acc::zero(); 3]);
        }
        Mode::Bilinear => {
            let base: [i64; 3] = std::array::from_fn(|a| if a < p.nd { to_i64(src[a].floor()) } else { 0 });
            let s = Sample { src, mult, base };
            let (idx, fac, count) = corners(p.nd, &s, r);
            let mut wts = [T::Acc::zero(); 8];
            let mut inb = [false; 8];
            let mut offs = [0isize; 8];
            for k in 0..count {
                wts[k] = (1..p.nd).fold(fac[k][0], |acc, a| r(acc * fac[k][a]));
                inb[k] = within(p, idx[k]);
                offs[k] = at3(&x.st, idx[k]);
            }
            let mut gsum = [T::Acc::zero(); 3];
            for ch in 0..p.c {
                let gv = gout(ch);
                for k in 0..count {
                    add(ch, idx[k], r(wts[k] * gv));
                }
                let cp = ch as isize * x.st[1];
                for k in 0..count {
                    if !inb[k] {
                        continue;
                    }
                    // SAFETY: inb[k] (within()) says this corner is inside the input, and
                    // ch < c: an element of batch bn of the input.
                    let val = unsafe { ld(xp, cp + offs[k]) };
                    for (a, sum) in gsum.iter_mut().enumerate().take(p.nd) {
                        // val · (the other axes' factors, in x, y, z order) · gOut.
                        let t =
                            fac[k][..p.nd].iter().enumerate().filter(|&(b, _)| b != a).fold(val, |t, (_, &f)| r(t * f));
                        let t = r(t * gv);
                        *sum = if (k >> a) & 1 == 1 { r(*sum + t) } else { r(*sum - t) };
                    }
                }
            }
            set_grid(std::array::from_fn(|a| r(s.mult[a] * gsum[a])));
        }
        Mode::Bicubic if p.nd == 3 => {
            let co3 = Coord { r: |v| v, ..*co };
            let tc = Tricubic::<T>::new(p, &co3, raw, &x.st, true);
            let mut gs = [T::Acc::zero(); 3];
            for ch in 0..p.c {
                let gv = gout(ch);
                let cp = ch as isize * x.st[1];
                for k in 0..4 {
                    for j in 0..4 {
                        for i in 0..4 {
                            let cf = [tc.c[0][i], tc.c[1][j], tc.c[2][k]];
                            let e = tc.idx[(k * 4 + j) * 4 + i];
                            add(ch, e, gv * cf[0] * cf[1] * cf[2]);
                            let val = tc.val(xp, cp, i, j, k);
                            // val · (x, y, z factors, the differentiated axis' by its derivative) · gOut.
                            let ijk = [i, j, k];
                            for (a, sum) in gs.iter_mut().enumerate() {
                                let f = |b: usize| if a == b { tc.g[b][ijk[b]] } else { cf[b] };
                                *sum = *sum - val * f(0) * f(1) * f(2) * gv;
                            }
                        }
                    }
                }
            }
            set_grid(std::array::from_fn(|a| tc.mult[a] * gs[a]));
        }
        Mode::Bicubic => {
            let (ix, mx) = co.unnormalize(raw[0], size(0));
            let (iy, my) = co.unnormalize(raw[1], size(1));
            let (fx, fy) = (ix.floor(), iy.floor());
            let (tx, ty) = (r(ix - fx), r(iy - fy));
            let (cx, cy) = (cubic_coeffs_r(tx, r), cubic_coeffs_r(ty, r));
            let (gxc, gyc) = (cubic_grad_coeffs(tx, r), cubic_grad_coeffs(ty, r));
            let taps: [([i64; 3], isize, bool); 16] = std::array::from_fn(|k| {
                let (i, j) = (k / 4, k % 4);
                let px = co.pad(r(r(fx - T::Acc::one()) + c::<T::Acc>(i as f64)), size(0)).0;
                let py = co.pad(r(r(fy - T::Acc::one()) + c::<T::Acc>(j as f64)), size(1)).0;
                let id = [to_i64(px), to_i64(py), 0];
                (id, at3(&x.st, id), within(p, id))
            });
            let (mut gx, mut gy) = (T::Acc::zero(), T::Acc::zero());
            for ch in 0..p.c {
                let gv = gout(ch);
                let cp = ch as isize * x.st[1];
                for (k, &(id, off, inb)) in taps.iter().enumerate() {
                    let (i, j) = (k / 4, k % 4);
                    add(ch, id, r(r(gv * cx[i]) * cy[j]));
                    // SAFETY: read only when inb (within()) says the tap is inside the input;
                    // ch < c: an element of batch bn of the input.
                    let val = if inb { unsafe { ld(xp, cp + off) } } else { T::Acc::zero() };
                    gx = r(gx - r(r(r(val * gxc[i]) * cy[j]) * gv));
                    gy = r(gy - r(r(r(val * gyc[j]) * cx[i]) * gv));
                }
            }
            set_grid([r(mx * gx), r(my * gy), T::Acc::zero()]);
        }
    }
}

/// `grid_sampler_{2,3}d`: a new contiguous output.
pub fn grid_sample(
    nd: usize,
    input: TensorRef<'_>,
    grid: TensorRef<'_>,
    mode: i64,
    padding: i64,
    align: bool,
) -> Result<Tensor> {
    let p = gs_plan(nd, &input, &grid, mode, padding, align)?;
    let dtype = gs_dtype(nd, &input, &grid, false)?;
    let mut sizes = vec![p.n as i64, p.c as i64];
    sizes.extend(p.out[3 - nd..].iter().map(|&v| v as i64));
    let out = crate::engine::iter::new_tensor(&sizes, dtype)?;
    if p.n * p.c * p.out.iter().product::<usize>() == 0 {
        return Ok(out);
    }
    let (xc, gc) = (resolved(&input)?, resolved(&grid)?);
    let x = view(&xc.as_ref().map_or(input, |t| t.as_ref()), nd);
    let g = gview(&gc.as_ref().map_or(grid, |t| t.as_ref()), nd);
    let y = view(&out.as_ref(), nd);
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        gs_forward::<T>(&p, x, g, y);
        Ok(())
    }, else Err(not_implemented("grid_sampler", dtype)))?;
    Ok(out)
}

/// `grid_sampler_{2,3}d_backward`: `(grad_input, grad_grid)`, the former undefined unless
/// `output_mask[0]`; the grid gradient is always computed, as on CPU.
#[allow(clippy::too_many_arguments)]
pub fn grid_sample_backward(
    nd: usize,
    grad_output: TensorRef<'_>,
    input: TensorRef<'_>,
    grid: TensorRef<'_>,
    mode: i64,
    padding: i64,
    align: bool,
    output_mask: &[bool],
) -> Result<(Tensor, Tensor)> {
    let p = gs_plan(nd, &input, &grid, mode, padding, align)?;
    let mut want = vec![p.n as i64, p.c as i64];
    want.extend(p.out[3 - nd..].iter().map(|&v| v as i64));
    if grad_output.sizes() != want.as_slice() {
        return Err(Error::value(format!(
            "grid_sampler(): expected grad_output to have sizes {} but got grad_output with sizes {}",
            fmt_sizes(&want),
            fmt_sizes(grad_output.sizes())
        )));
    }
    let dtype = gs_dtype(nd, &input, &grid, true)?;
    let gd = DType::from_scalar_type(grad_output.dtype())?;
    if gd != dtype {
        return Err(Error::runtime(format!("expected scalar type {} but found {}", dtype.name(), gd.name())));
    }
    let need_input = output_mask.first().copied().unwrap_or(true);
    let zeros = |sizes: &[i64]| -> Result<Tensor> {
        let t = crate::engine::iter::new_tensor(sizes, dtype)?;
        let bytes = sizes.iter().product::<i64>().max(0) as usize * dtype.size();
        // SAFETY: a new contiguous tensor of `bytes` bytes; zero bits are 0.0 in every float.
        unsafe { std::ptr::write_bytes(t.as_ref().data_ptr().cast::<u8>(), 0, bytes) };
        Ok(t)
    };
    let gi = if need_input { zeros(input.sizes())? } else { Tensor::undefined() };
    let gg = zeros(grid.sizes())?;
    if input.sizes().iter().product::<i64>() == 0 || grid.sizes().iter().product::<i64>() == 0 {
        return Ok((gi, gg));
    }
    let (xc, gc, oc) = (resolved(&input)?, resolved(&grid)?, resolved(&grad_output)?);
    let x = view(&xc.as_ref().map_or(input, |t| t.as_ref()), nd);
    let g = gview(&gc.as_ref().map_or(grid, |t| t.as_ref()), nd);
    let go = view(&oc.as_ref().map_or(grad_output, |t| t.as_ref()), nd);
    let giv = if need_input { Some(view(&gi.as_ref(), nd)) } else { None };
    let ggv = gview(&gg.as_ref(), nd);
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        gs_backward::<T>(&p, go, x, g, giv, ggv);
        Ok(())
    }, else Err(not_implemented("grid_sampler_backward", dtype)))?;
    Ok((gi, gg))
}

/// This family's kernels: group `resample` of regen.toml's `[implement]`.
impl crate::ResampleKernels for crate::Reference {
    fn upsample_linear1d_out(
        &self,
        self_: TensorRef<'_>,
        output_size: &[i64],
        align_corners: bool,
        scales: Option<f64>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use {Kind, up_out};
        up_out(Kind::Linear, 1, self_, output_size, align_corners, &[scales], out)
    }
    fn upsample_linear1d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        output_size: &[i64],
        input_size: &[i64],
        align_corners: bool,
        scales: Option<f64>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use {Kind, up_backward_out};
        up_backward_out(Kind::Linear, 1, grad_output, output_size, input_size, align_corners, &[scales], grad_input)
    }
    fn upsample_bilinear2d_out(
        &self,
        self_: TensorRef<'_>,
        output_size: &[i64],
        align_corners: bool,
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use {Kind, up_out};
        up_out(Kind::Linear, 2, self_, output_size, align_corners, &[scales_h, scales_w], out)
    }
    fn upsample_bilinear2d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        output_size: &[i64],
        input_size: &[i64],
        align_corners: bool,
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use {Kind, up_backward_out};
        let s = [scales_h, scales_w];
        up_backward_out(Kind::Linear, 2, grad_output, output_size, input_size, align_corners, &s, grad_input)
    }
    fn upsample_bicubic2d_out(
        &self,
        self_: TensorRef<'_>,
        output_size: &[i64],
        align_corners: bool,
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use {Kind, up_out};
        up_out(Kind::Cubic, 2, self_, output_size, align_corners, &[scales_h, scales_w], out)
    }
    fn upsample_bicubic2d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        output_size: &[i64],
        input_size: &[i64],
        align_corners: bool,
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use {Kind, up_backward_out};
        let s = [scales_h, scales_w];
        up_backward_out(Kind::Cubic, 2, grad_output, output_size, input_size, align_corners, &s, grad_input)
    }
    fn upsample_trilinear3d_out(
        &self,
        self_: TensorRef<'_>,
        output_size: &[i64],
        align_corners: bool,
        scales_d: Option<f64>,
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use {Kind, up_out};
        up_out(Kind::Linear, 3, self_, output_size, align_corners, &[scales_d, scales_h, scales_w], out)
    }
    #[allow(clippy::too_many_arguments)]
    fn upsample_trilinear3d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        output_size: &[i64],
        input_size: &[i64],
        align_corners: bool,
        scales_d: Option<f64>,
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use {Kind, up_backward_out};
        let s = [scales_d, scales_h, scales_w];
        up_backward_out(Kind::Linear, 3, grad_output, output_size, input_size, align_corners, &s, grad_input)
    }
    fn reflection_pad1d_out(&self, self_: TensorRef<'_>, padding: &[i64], out: TensorRef<'_>) -> Result<()> {
        use {Pad, pad_out};
        pad_out(Pad::Reflect, 1, self_, padding, out)
    }
    fn reflection_pad2d_out(&self, self_: TensorRef<'_>, padding: &[i64], out: TensorRef<'_>) -> Result<()> {
        use {Pad, pad_out};
        pad_out(Pad::Reflect, 2, self_, padding, out)
    }
    fn reflection_pad3d_out(&self, self_: TensorRef<'_>, padding: &[i64], out: TensorRef<'_>) -> Result<()> {
        use {Pad, pad_out};
        pad_out(Pad::Reflect, 3, self_, padding, out)
    }
    fn reflection_pad2d(&self, self_: TensorRef<'_>, padding: &[i64]) -> Result<Tensor> {
        use {Pad, pad};
        pad(Pad::Reflect, 2, self_, padding)
    }
    fn replication_pad1d_out(&self, self_: TensorRef<'_>, padding: &[i64], out: TensorRef<'_>) -> Result<()> {
        use {Pad, pad_out};
        pad_out(Pad::Replicate, 1, self_, padding, out)
    }
    fn replication_pad2d_out(&self, self_: TensorRef<'_>, padding: &[i64], out: TensorRef<'_>) -> Result<()> {
        use {Pad, pad_out};
        pad_out(Pad::Replicate, 2, self_, padding, out)
    }
    fn replication_pad3d_out(&self, self_: TensorRef<'_>, padding: &[i64], out: TensorRef<'_>) -> Result<()> {
        use {Pad, pad_out};
        pad_out(Pad::Replicate, 3, self_, padding, out)
    }
    fn reflection_pad1d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        padding: &[i64],
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use {Pad, pad_backward_out};
        pad_backward_out(Pad::Reflect, 1, grad_output, self_, padding, grad_input)
    }
    fn reflection_pad2d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        padding: &[i64],
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use {Pad, pad_backward_out};
        pad_backward_out(Pad::Reflect, 2, grad_output, self_, padding, grad_input)
    }
    fn reflection_pad3d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        padding: &[i64],
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use {Pad, pad_backward_out};
        pad_backward_out(Pad::Reflect, 3, grad_output, self_, padding, grad_input)
    }
    fn replication_pad1d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        padding: &[i64],
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use {Pad, pad_backward_out};
        pad_backward_out(Pad::Replicate, 1, grad_output, self_, padding, grad_input)
    }
    fn replication_pad2d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        padding: &[i64],
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use {Pad, pad_backward_out};
        pad_backward_out(Pad::Replicate, 2, grad_output, self_, padding, grad_input)
    }
    fn replication_pad3d_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        padding: &[i64],
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use {Pad, pad_backward_out};
        pad_backward_out(Pad::Replicate, 3, grad_output, self_, padding, grad_input)
    }
    fn reflection_pad2d_backward(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        padding: &[i64],
    ) -> Result<Tensor> {
        use {Pad, pad_backward_new};
        pad_backward_new(Pad::Reflect, 2, grad_output, self_, padding)
    }
    fn replication_pad2d_backward(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        padding: &[i64],
    ) -> Result<Tensor> {
        use {Pad, pad_backward_new};
        pad_backward_new(Pad::Replicate, 2, grad_output, self_, padding)
    }
    fn replication_pad3d_backward(
        &self,
        grad_output: TensorRef<'_>,
        self_: TensorRef<'_>,
        padding: &[i64],
    ) -> Result<Tensor> {
        use {Pad, pad_backward_new};
        pad_backward_new(Pad::Replicate, 3, grad_output, self_, padding)
    }
    fn grid_sampler_2d(
        &self,
        input: TensorRef<'_>,
        grid: TensorRef<'_>,
        interpolation_mode: i64,
        padding_mode: i64,
        align_corners: bool,
    ) -> Result<Tensor> {
        grid_sample(2, input, grid, interpolation_mode, padding_mode, align_corners)
    }
    fn grid_sampler_3d(
        &self,
        input: TensorRef<'_>,
        grid: TensorRef<'_>,
        interpolation_mode: i64,
        padding_mode: i64,
        align_corners: bool,
    ) -> Result<Tensor> {
        grid_sample(3, input, grid, interpolation_mode, padding_mode, align_corners)
    }
    #[allow(clippy::too_many_arguments)]
    fn grid_sampler_2d_backward(
        &self,
        grad_output: TensorRef<'_>,
        input: TensorRef<'_>,
        grid: TensorRef<'_>,
        interpolation_mode: i64,
        padding_mode: i64,
        align_corners: bool,
        output_mask: &[bool],
    ) -> Result<(Tensor, Tensor)> {
        grid_sample_backward(2, grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask)
    }
    #[allow(clippy::too_many_arguments)]
    fn grid_sampler_3d_backward(
        &self,
        grad_output: TensorRef<'_>,
        input: TensorRef<'_>,
        grid: TensorRef<'_>,
        interpolation_mode: i64,
        padding_mode: i64,
        align_corners: bool,
        output_mask: &[bool],
    ) -> Result<(Tensor, Tensor)> {
        grid_sample_backward(3, grad_output, input, grid, interpolation_mode, padding_mode, align_corners, output_mask)
    }
}
