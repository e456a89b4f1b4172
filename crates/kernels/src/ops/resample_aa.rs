//! Antialiased bilinear and bicubic resampling (`_upsample_{bilinear,bicubic}2d_aa`, forward and
//! backward), and uint8 bilinear and bicubic resampling with or without antialiasing, as ATen's
//! CPU separable kernels compute them (`cpu/UpSampleKernel.cpp`:
//! `separable_upsample_generic_Nd_kernel_impl`, `HelperInterpBase::_compute_index_ranges_weights`,
//! `_compute_index_ranges_int16_weights`, `cpu_upsample_genNd_backward_aa`).
//!
//! The forward pass is separable: the width is resampled first (into a temporary of the element
//! type when the height changes too), then the height; a dimension whose size does not change is
//! left alone, and equal sizes copy. Per dimension and output index a plan holds the window's
//! first input index and the filter's normalised weights, in the element type for floats; for
//! uint8 in double, then rounded to int16 at a precision chosen from the largest weight and summed
//! as integers from half an LSB, shifted down and clamped.
//!
//! A float window is summed in its order, and the sums round as CPU's compiled loop rounds them:
//! GCC vectorises that loop with an in-order reduction over whole vectors (4 floats, 2 doubles),
//! whose products are added unfused, and contracts the scalar epilogue into fused multiply-adds.
//! The backward pass scatters each gradient element into its window, plane by plane in output
//! order, as CPU's does, so every sum has CPU's terms in CPU's order.

use regen_runtime::bootstrap::with_size;
use regen_runtime::{Error, Result, TensorRef};

use crate::engine::dtype::{DType, check_out_dtype, not_implemented};
use crate::engine::iter::{GRAIN, fmt_sizes};
use crate::engine::scalar::Real;
use crate::engine::simd_fn;
use crate::ops::spatial::{Kind, View, guard, pixel_scale, resolved, up_plan, view};

// ---------------------------------------------------------------------------------------------
// Windows and weights
// ---------------------------------------------------------------------------------------------

/// One dimension's windows: output index `o` reads `len[o]` input indices from `min[o]` with
/// weights `w[o*k..][..len[o]]`.
struct Taps<W> {
    k: usize,
    min: Vec<usize>,
    len: Vec<usize>,
    w: Vec<W>,
}

impl<W> Taps<W> {
    fn window(&self, o: usize) -> (usize, &[W]) {
        (self.min[o], &self.w[o * self.k..][..self.len[o]])
    }
}

fn interp_size(kind: Kind) -> usize {
    if kind == Kind::Linear { 2 } else { 4 }
}

/// `static_cast<int64_t>` of a double (truncation; NaN and overflow saturate rather than trap).
fn trunc(v: f64) -> i64 {
    v as i64
}

/// `HelperInterpLinear::aa_filter`, and `HelperInterpCubic::aa_filter` (Keys' cubic with `a`:
/// -0.5 with antialiasing, -0.75 without) with its polynomials contracted into FMAs as CPU's
/// compiler does.
fn filter<A: Real>(kind: Kind, a: f64, x: A) -> A {
    let x = x.abs();
    let one = A::one();
    let c = |v: f64| A::from_f64(v);
    match kind {
        Kind::Linear => {
            if x < one {
                one - x
            } else {
                A::zero()
            }
        }
        Kind::Cubic => {
            let a = c(a);
            if x < one {
                // ((a + 2) x - (a + 3)) x x + 1
                ((a + c(2.0)).mul_add(x, -(a + c(3.0))) * x).mul_add(x, one)
            } else if x < c(2.0) {
                // ((a x - 5a) x + 8a) x - 4a
                a.mul_add(x, -(c(5.0) * a)).mul_add(x, c(8.0) * a).mul_add(x, -(c(4.0) * a))
            } else {
                A::zero()
            }
        }
    }
}

/// `_compute_indices_min_size_weights_aa` for every output index: the window around the output
/// index's centre, the filter widened by the scale when downsampling, the weights normalised to
/// sum to one. Returns the taps and the largest weight.
fn aa_taps<A: Real>(kind: Kind, inp: usize, out: usize, scale: A) -> (Taps<A>, A) {
    let isz = interp_size(kind) as f64;
    let one = A::one();
    let down = scale >= one;
    let support = if down { A::from_f64(isz * 0.5 * scale.to_f64()) } else { A::from_f64(isz * 0.5) };
    let k = (support.ceil().to_f64() as usize).saturating_mul(2).saturating_add(1);
    let invscale = if down { A::from_f64(1.0 / scale.to_f64()) } else { one };
    let mut t = Taps { k, min: Vec::with_capacity(out), len: Vec::with_capacity(out), w: vec![A::zero(); out * k] };
    let mut wt_max = A::zero();
    for i in 0..out {
        let center = A::from_f64(scale.to_f64() * (i as f64 + 0.5));
        let xmin = trunc((center - support).to_f64() + 0.5).max(0);
        let xsize = (trunc((center + support).to_f64() + 0.5).min(inp as i64) - xmin).clamp(0, k as i64) as usize;
        let w = &mut t.w[i * k..][..xsize];
        let mut total = A::zero();
        for (j, wj) in w.iter_mut().enumerate() {
            let at = A::from_f64((j as i64 + xmin) as f64) - center;
            *wj = filter(kind, -0.5, A::from_f64((at.to_f64() + 0.5) * invscale.to_f64()));
            total = total + *wj;
        }
        if total != A::zero() {
            for wj in w.iter_mut() {
                *wj = *wj / total;
                wt_max = wt_max.max(*wj);
            }
        }
        t.min.push(xmin as usize);
        t.len.push(xsize);
    }
    (t, wt_max)
}

/// `area_pixel_compute_source_index` in double as CPU's compiler contracts it.
fn source_index(scale: f64, o: usize, align: bool, cubic: bool) -> f64 {
    if align {
        scale * o as f64
    } else {
        let s = scale.mul_add(o as f64 + 0.5, -0.5);
        if !cubic && s < 0.0 { 0.0 } else { s }
    }
}

/// `_compute_indices_min_size_weights` (uint8 without antialiasing): the linear or cubic (a =
/// -0.75) taps around the source index, those of indices outside the input added to the first
/// or last index inside it. Returns the taps and the largest weight.
fn plain_taps(kind: Kind, inp: usize, out: usize, align: bool, scale: f64) -> (Taps<f64>, f64) {
    let k = interp_size(kind);
    let support = (k as f64 * 0.5) as i64;
    let inp_i = inp as i64;
    let mut t = Taps { k, min: Vec::with_capacity(out), len: Vec::with_capacity(out), w: vec![0.0; out * k] };
    let mut wt_max = 0.0f64;
    for i in 0..out {
        let (idx, lambda) = guard(source_index(scale, i, align, kind == Kind::Cubic), inp);
        let umin = idx - support + 1;
        let min = umin.max(0);
        let size = ((idx + support + 1).min(inp_i) - min).clamp(0, k as i64);
        let w = &mut t.w[i * k..][..k];
        let mut wi = 0i64;
        for j in 0..k {
            w[j] = 0.0;
            let v = filter(kind, -0.75, (j as i64 + 1 - support) as f64 - lambda);
            if umin + j as i64 <= 0 {
                wi = 0;
            } else if umin + j as i64 >= inp_i - 1 {
                wi = size - 1;
            }
            let s = wi.clamp(0, k as i64 - 1) as usize;
            w[s] += v;
            wt_max = wt_max.max(w[s]);
            wi += 1;
        }
        t.min.push(min as usize);
        t.len.push(size as usize);
    }
    (t, wt_max)
}

/// `_compute_index_ranges_int16_weights`: the double weights scaled by 2^precision (the largest
/// precision below 22 that keeps twice the largest weight under 2^15) and rounded half away from
/// zero.
fn int16_taps(kind: Kind, inp: usize, out: usize, align: bool, scale: Option<f64>, aa: bool) -> (Taps<i16>, u32) {
    let s = pixel_scale::<f64>(inp, out, align, scale);
    let (t, wt_max) = if aa { aa_taps::<f64>(kind, inp, out, s) } else { plain_taps(kind, inp, out, align, s) };
    let mut prec = 0u32;
    while prec < 22 && ((0.5 + wt_max * f64::from(1u32 << (prec + 1))) as i32) < (1 << 15) {
        prec += 1;
    }
    let m = f64::from(1u32 << prec);
    let w =
        t.w.iter().map(|&w| (if w * m < 0.0 { (-0.5 + w * m) as i32 } else { (0.5 + w * m) as i32 }) as i16).collect();
    (Taps { k: t.k, min: t.min, len: t.len, w }, prec)
}

// ---------------------------------------------------------------------------------------------
// The separable passes
// ---------------------------------------------------------------------------------------------

/// An element of a pass: how a window's terms sum and the sum is stored.
trait Elem: Copy + Send + Sync + 'static {
    type W: Copy + Send + Sync + 'static;
    type Acc: Copy + Send + Sync + 'static;
    /// The width of CPU's vectorised reduction: whole vectors of terms after the first are
    /// added unfused, the rest fused.
    const VF: usize;
    fn zero() -> Self;
    /// The sum's start: uint8's half an LSB.
    fn bias(prec: u32) -> Self::Acc;
    fn first(x: Self, w: Self::W, bias: Self::Acc) -> Self::Acc;
    fn term(acc: Self::Acc, x: Self, w: Self::W, fused: bool) -> Self::Acc;
    fn store(acc: Self::Acc, prec: u32) -> Self;
}

macro_rules! float_elem {
    ($($t:ty, $vf:expr;)*) => {$(
        impl Elem for $t {
            type W = $t;
            type Acc = $t;
            const VF: usize = $vf;
            fn zero() -> $t {
                0.0
            }
            fn bias(_: u32) -> $t {
                0.0
            }
            #[inline(always)]
            fn first(x: $t, w: $t, _: $t) -> $t {
                x * w
            }
            #[inline(always)]
            fn term(acc: $t, x: $t, w: $t, fused: bool) -> $t {
                if fused { x.mul_add(w, acc) } else { acc + x * w }
            }
            #[inline(always)]
            fn store(acc: $t, _: u32) -> $t {
                acc
            }
        }
    )*};
}
float_elem! { f32, 4; f64, 2; }

impl Elem for u8 {
    type W = i16;
    type Acc = i32;
    const VF: usize = 1;
    fn zero() -> u8 {
        0
    }
    fn bias(prec: u32) -> i32 {
        if prec > 0 { 1 << (prec - 1) } else { 0 }
    }
    #[inline(always)]
    fn first(x: u8, w: i16, bias: i32) -> i32 {
        bias.wrapping_add(i32::from(x) * i32::from(w))
    }
    #[inline(always)]
    fn term(acc: i32, x: u8, w: i16, _: bool) -> i32 {
        acc.wrapping_add(i32::from(x) * i32::from(w))
    }
    #[inline(always)]
    fn store(acc: i32, prec: u32) -> u8 {
        (acc >> prec.min(31)).clamp(0, 255) as u8
    }
}

/// Whether term `j` (of `n`) of a window is fused.
#[inline(always)]
fn fused<E: Elem>(j: usize, n: usize) -> bool {
    j > (n - 1) / E::VF * E::VF
}

/// A tensor's data pointer and its `[n, c, h, w]` strides in elements.
#[derive(Clone, Copy)]
struct Grid {
    ptr: usize,
    st: [isize; 4],
}

impl Grid {
    fn of(v: View) -> Grid {
        Grid { ptr: v.ptr, st: [v.st[0], v.st[1], v.st[3], v.st[4]] }
    }
    #[inline(always)]
    fn at(&self, i: [usize; 4]) -> isize {
        (0..4).map(|d| i[d] as isize * self.st[d]).sum()
    }
}

/// One window's sum, reading `x` every `sx` elements.
///
/// # Safety
/// The window's elements lie in a live tensor.
#[inline(always)]
unsafe fn dot<E: Elem>(x: *const E, sx: isize, w: &[E::W], bias: E::Acc, prec: u32) -> E {
    let n = w.len();
    if n == 0 {
        return E::store(bias, prec);
    }
    // SAFETY: the caller's.
    let mut acc = E::first(unsafe { *x }, w[0], bias);
    for (j, &wj) in w.iter().enumerate().skip(1) {
        // SAFETY: the caller's.
        acc = E::term(acc, unsafe { *x.offset(j as isize * sx) }, wj, fused::<E>(j, n));
    }
    E::store(acc, prec)
}

simd_fn! {
    /// Term `j` (of `n`) of a row of windows: `acc[l]` gains `x[l·sx]·w`.
    fn lane_term<E: Elem>(acc: &mut [E::Acc], x: *const E, sx: isize, w: E::W, j: usize, n: usize, bias: E::Acc) {
        let f = fused::<E>(j, n);
        if sx == 1 {
            // SAFETY: the caller's: acc.len() elements from x are a row of the input.
            let xs = unsafe { std::slice::from_raw_parts(x, acc.len()) };
            if j == 0 {
                for (a, &v) in acc.iter_mut().zip(xs) {
                    *a = E::first(v, w, bias);
                }
            } else if f {
                for (a, &v) in acc.iter_mut().zip(xs) {
                    *a = E::term(*a, v, w, true);
                }
            } else {
                for (a, &v) in acc.iter_mut().zip(xs) {
                    *a = E::term(*a, v, w, false);
                }
            }
        } else {
            for (l, a) in acc.iter_mut().enumerate() {
                // SAFETY: the caller's: element l of the row, every sx elements.
                let v = unsafe { *x.offset(l as isize * sx) };
                *a = if j == 0 { E::first(v, w, bias) } else { E::term(*a, v, w, f) };
            }
        }
    }
}

/// Resamples dimension `axis` (2: height, 3: width) of `x` into `y` of sizes `ys`.
fn pass<E: Elem>(x: Grid, y: Grid, ys: [usize; 4], axis: usize, t: &Taps<E::W>, prec: u32) {
    let bias = E::bias(prec);
    let rest: Vec<usize> = (0..4).filter(|&d| d != axis).collect();
    // The lanes: the other dimension the input steps through fastest, when it steps through it
    // faster than through the resampled one, and the dimension after it when both tensors hold
    // the two as one run (channels and width of a channels-last image); below a vector's worth
    // of lanes a dot product per output is faster.
    let lane = rest.iter().copied().filter(|&d| ys[d] > 1).min_by_key(|&d| x.st[d].unsigned_abs());
    let lanes = lane.filter(|&l| x.st[l].unsigned_abs() < x.st[axis].unsigned_abs()).map(|l| {
        let next = rest.iter().copied().find(|&m| {
            m != l && ys[m] > 1 && x.st[m] == x.st[l] * ys[l] as isize && y.st[m] == y.st[l] * ys[l] as isize
        });
        (l, next)
    });
    match lanes {
        Some((l, next)) if ys[l] * next.map_or(1, |m| ys[m]) >= 8 => {
            let outer: Vec<usize> = rest.iter().copied().filter(|&d| d != l && Some(d) != next).collect();
            let (nl, no) = (ys[l] * next.map_or(1, |m| ys[m]), ys[axis]);
            let items = outer.iter().map(|&d| ys[d]).product::<usize>() * no;
            let per = nl * t.k.max(1);
            regen_runtime::host::parallel_for(items, (GRAIN / per).max(1), |a, b| {
                let mut acc = vec![E::bias(prec); nl];
                for it in a..b {
                    let (o, mut rem) = (it % no, it / no);
                    let mut i = [0usize; 4];
                    for &d in outer.iter().rev() {
                        i[d] = rem % ys[d];
                        rem /= ys[d];
                    }
                    let (min, w) = t.window(o);
                    let xb = (x.ptr as *const E).wrapping_offset(x.at(i));
                    for (j, &wj) in w.iter().enumerate() {
                        let row = xb.wrapping_offset((min + j) as isize * x.st[axis]);
                        lane_term::<E>(&mut acc, row, x.st[l], wj, j, w.len(), bias);
                    }
                    i[axis] = o;
                    let yb = (y.ptr as *mut E).wrapping_offset(y.at(i));
                    for (k, &v) in acc.iter().enumerate() {
                        let v = if w.is_empty() { E::store(bias, prec) } else { E::store(v, prec) };
                        // SAFETY: lane k of an output row (the merged lanes are one run).
                        unsafe { *yb.offset(k as isize * y.st[l]) = v };
                    }
                }
            });
        }
        _ => {
            let [p, q, r] = [rest[0], rest[1], rest[2]];
            let rows = ys[p] * ys[q] * ys[r];
            let no = ys[axis];
            regen_runtime::host::parallel_for(rows, (GRAIN / (no * t.k).max(1)).max(1), |a, b| {
                for row in a..b {
                    let mut i = [0usize; 4];
                    i[p] = row / (ys[q] * ys[r]);
                    i[q] = row / ys[r] % ys[q];
                    i[r] = row % ys[r];
                    let xb = (x.ptr as *const E).wrapping_offset(x.at(i));
                    for o in 0..no {
                        let (min, w) = t.window(o);
                        i[axis] = o;
                        // SAFETY: the window lies inside the input's dimension; (i) is an output
                        // element.
                        unsafe {
                            *(y.ptr as *mut E).offset(y.at(i)) =
                                dot(xb.offset(min as isize * x.st[axis]), x.st[axis], w, bias, prec);
                        }
                    }
                }
            });
        }
    }
}

/// The forward passes: width, then height, through a temporary laid out as the input when both
/// change.
fn forward<E: Elem>(
    x: Grid,
    y: Grid,
    s: [usize; 4],
    o: [usize; 2],
    tw: Option<(&Taps<E::W>, u32)>,
    th: Option<(&Taps<E::W>, u32)>,
) {
    let [n, c, ih, _] = s;
    let [oh, ow] = o;
    match (tw, th) {
        (Some((tw, pw)), Some((th, ph))) => {
            let channels_last =
                c > 1 && (0..4).all(|d| d == 1 || s[d] <= 1 || x.st[1].unsigned_abs() < x.st[d].unsigned_abs());
            let st = if channels_last {
                [(ih * ow * c) as isize, 1, (ow * c) as isize, c as isize]
            } else {
                [(c * ih * ow) as isize, (ih * ow) as isize, ow as isize, 1]
            };
            let mut tmp = vec![E::zero(); n * c * ih * ow];
            let g = Grid { ptr: tmp.as_mut_ptr() as usize, st };
            pass::<E>(x, g, [n, c, ih, ow], 3, tw, pw);
            pass::<E>(g, y, [n, c, oh, ow], 2, th, ph);
        }
        (Some((tw, pw)), None) => pass::<E>(x, y, [n, c, oh, ow], 3, tw, pw),
        (None, Some((th, ph))) => pass::<E>(x, y, [n, c, oh, ow], 2, th, ph),
        (None, None) => {}
    }
}

fn non_empty(input: &TensorRef<'_>) -> Result<()> {
    if input.sizes().contains(&0) && input.sizes()[1..].iter().product::<i64>() == 0 {
        return Err(Error::runtime(format!(
            "Non-empty 4D data tensor expected but got a tensor with sizes {}",
            fmt_sizes(input.sizes())
        )));
    }
    Ok(())
}

/// `_upsample_{bilinear,bicubic}2d_aa.out` (`aa`), and `upsample_{bilinear,bicubic}2d.out` for
/// uint8 input.
pub fn up_out(
    kind: Kind,
    aa: bool,
    input: TensorRef<'_>,
    output_size: &[i64],
    align: bool,
    scales: &[Option<f64>],
    out: TensorRef<'_>,
) -> Result<()> {
    up_plan(kind, 2, input.sizes(), output_size, align, scales)?;
    non_empty(&input)?;
    let dtype = DType::from_scalar_type(input.dtype())?;
    let supported = dtype == DType::U8 || (aa && matches!(dtype, DType::F32 | DType::F64));
    if !supported {
        return Err(not_implemented("compute_index_ranges_weights", dtype));
    }
    check_out_dtype(&out, dtype)?;
    let sz = input.sizes();
    let s = [sz[0] as usize, sz[1] as usize, sz[2] as usize, sz[3] as usize];
    let [oh, ow] = [output_size[0] as usize, output_size[1] as usize];
    let sizes = [sz[0], sz[1], output_size[0], output_size[1]];
    let sc = [scales.first().copied().flatten(), scales.get(1).copied().flatten()];
    with_size(&out, &sizes, |o| {
        if s[0] * s[1] == 0 {
            return Ok(());
        }
        if (oh, ow) == (s[2], s[3]) {
            return crate::ops::copy::copy_(*o, input);
        }
        let copy = resolved(&input)?;
        let x = Grid::of(view(&copy.as_ref().map_or(input, |c| c.as_ref()), 2));
        let y = Grid::of(view(o, 2));
        let (rw, rh) = (ow != s[3], oh != s[2]);
        match dtype {
            DType::U8 => {
                let tw = rw.then(|| int16_taps(kind, s[3], ow, align, sc[1], aa));
                let th = rh.then(|| int16_taps(kind, s[2], oh, align, sc[0], aa));
                let tw = tw.as_ref().map(|(t, p)| (t, *p));
                let th = th.as_ref().map(|(t, p)| (t, *p));
                forward::<u8>(x, y, s, [oh, ow], tw, th);
            }
            DType::F32 => float_forward::<f32>(kind, x, y, s, [oh, ow], align, sc, [rh, rw]),
            _ => float_forward::<f64>(kind, x, y, s, [oh, ow], align, sc, [rh, rw]),
        }
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
fn float_forward<A: Real + Elem<W = A>>(
    kind: Kind,
    x: Grid,
    y: Grid,
    s: [usize; 4],
    o: [usize; 2],
    align: bool,
    sc: [Option<f64>; 2],
    [rh, rw]: [bool; 2],
) {
    let tw = rw.then(|| aa_taps::<A>(kind, s[3], o[1], pixel_scale::<A>(s[3], o[1], align, sc[1])).0);
    let th = rh.then(|| aa_taps::<A>(kind, s[2], o[0], pixel_scale::<A>(s[2], o[0], align, sc[0])).0);
    forward::<A>(x, y, s, o, tw.as_ref().map(|t| (t, 0)), th.as_ref().map(|t| (t, 0)));
}

simd_fn! {
    /// One window row of a row of gradients: `row[xmin + x] += wx[x]·wy·g` for each output
    /// column's `g`, contracted into an FMA as CPU's compiler does.
    fn scatter_row<A: Real>(row: &mut [A], tw: &Taps<A>, g: &[A], wy: A) {
        for (o, &gv) in g.iter().enumerate() {
            let (xmin, wx) = tw.window(o);
            for (r, &vx) in row[xmin..].iter_mut().zip(wx) {
                *r = (vx * wy).mul_add(gv, *r);
            }
        }
    }
}

/// The backward pass of one plane: each gradient element times its window's weights, added in
/// output order (CPU's `*gi += wx·wy·g`, contracted into an FMA).
fn backward<A: Real>(
    go: View,
    gi: View,
    [n, c]: [usize; 2],
    inp: [usize; 2],
    out: [usize; 2],
    th: &Taps<A>,
    tw: &Taps<A>,
) {
    let [ih, iw] = inp;
    let [oh, ow] = out;
    let work = oh * ow * th.k * tw.k;
    regen_runtime::host::parallel_for(n * c, (GRAIN / work.max(1)).max(1), |a, b| {
        let mut acc = vec![A::zero(); ih * iw];
        let mut grow = vec![A::zero(); ow];
        for pl in a..b {
            let (bn, ch) = (pl / c, pl % c);
            acc.fill(A::zero());
            let gp = (go.ptr as *const A).wrapping_offset(go.at(bn, ch, 0, 0, 0));
            for h in 0..oh {
                for (w, gw) in grow.iter_mut().enumerate() {
                    // SAFETY: an element of grad_output.
                    *gw = unsafe { *gp.offset(h as isize * go.st[3] + w as isize * go.st[4]) };
                }
                // CPU's order is output row, output column, window row, window column; an input
                // element gets one term per output row, so window rows may go before columns.
                let (ymin, wy) = th.window(h);
                for (y, &vy) in wy.iter().enumerate() {
                    scatter_row::<A>(&mut acc[(ymin + y) * iw..][..iw], tw, &grow, vy);
                }
            }
            let gq = (gi.ptr as *mut A).wrapping_offset(gi.at(bn, ch, 0, 0, 0));
            for h in 0..ih {
                for w in 0..iw {
                    // SAFETY: an element of grad_input.
                    unsafe { *gq.offset(h as isize * gi.st[3] + w as isize * gi.st[4]) = acc[h * iw + w] };
                }
            }
        }
    });
}

/// `_upsample_{bilinear,bicubic}2d_aa_backward.grad_input`.
#[allow(clippy::too_many_arguments)]
pub fn up_backward_out(
    kind: Kind,
    grad_output: TensorRef<'_>,
    output_size: &[i64],
    input_size: &[i64],
    align: bool,
    scales: &[Option<f64>],
    grad_input: TensorRef<'_>,
) -> Result<()> {
    up_plan(kind, 2, input_size, output_size, align, scales)?;
    let g = grad_output.sizes();
    if g.len() != 4 {
        return Err(Error::runtime(format!(
            "Expected grad_output to be a tensor of dimension 4 but got: dimension {}",
            g.len()
        )));
    }
    let want = [input_size[0], input_size[1], output_size[0], output_size[1]];
    for (i, (&w, &h)) in want.iter().zip(g).enumerate() {
        if w != h {
            return Err(Error::runtime(format!(
                "Expected grad_output to have the same shape as output; output.size({i}) = {w} but got grad_output.size({i}) = {h}"
            )));
        }
    }
    let name =
        if kind == Kind::Linear { "upsample_bilinear2d_aa_backward_cpu" } else { "upsample_bicubic2d_aa_backward_cpu" };
    let dtype = DType::from_scalar_type(grad_output.dtype())?;
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Err(not_implemented(name, dtype));
    }
    check_out_dtype(&grad_input, dtype)?;
    let [n, c, ih, iw] = [0, 1, 2, 3].map(|i| input_size[i] as usize);
    let [oh, ow] = [output_size[0] as usize, output_size[1] as usize];
    let sc = [scales.first().copied().flatten(), scales.get(1).copied().flatten()];
    with_size(&grad_input, input_size, |gi| {
        if n * c == 0 {
            return Ok(());
        }
        let copy = resolved(&grad_output)?;
        let go = view(&copy.as_ref().map_or(grad_output, |c| c.as_ref()), 2);
        let gv = view(gi, 2);
        crate::dispatch!(dtype, [F32, F64], |T| {
            let th = aa_taps::<T>(kind, ih, oh, pixel_scale::<T>(ih, oh, align, sc[0])).0;
            let tw = aa_taps::<T>(kind, iw, ow, pixel_scale::<T>(iw, ow, align, sc[1])).0;
            backward::<T>(go, gv, [n, c], [ih, iw], [oh, ow], &th, &tw);
            Ok(())
        }, else Err(not_implemented(name, dtype)))
    })
}

/// This family's kernels: group `resample_aa` of regen.toml's `[implement]`.
impl crate::ResampleAaKernels for crate::Reference {
    fn _upsample_bilinear2d_aa_out(
        &self,
        self_: TensorRef<'_>,
        output_size: &[i64],
        align_corners: bool,
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::{ops::resample_aa::up_out, ops::spatial::Kind};
        up_out(Kind::Linear, true, self_, output_size, align_corners, &[scales_h, scales_w], out)
    }
    fn _upsample_bilinear2d_aa_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        output_size: &[i64],
        input_size: &[i64],
        align_corners: bool,
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use crate::{ops::resample_aa::up_backward_out, ops::spatial::Kind};
        let s = [scales_h, scales_w];
        up_backward_out(Kind::Linear, grad_output, output_size, input_size, align_corners, &s, grad_input)
    }
    fn _upsample_bicubic2d_aa_out(
        &self,
        self_: TensorRef<'_>,
        output_size: &[i64],
        align_corners: bool,
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::{ops::resample_aa::up_out, ops::spatial::Kind};
        up_out(Kind::Cubic, true, self_, output_size, align_corners, &[scales_h, scales_w], out)
    }
    fn _upsample_bicubic2d_aa_backward_grad_input(
        &self,
        grad_output: TensorRef<'_>,
        output_size: &[i64],
        input_size: &[i64],
        align_corners: bool,
        scales_h: Option<f64>,
        scales_w: Option<f64>,
        grad_input: TensorRef<'_>,
    ) -> Result<()> {
        use crate::{ops::resample_aa::up_backward_out, ops::spatial::Kind};
        let s = [scales_h, scales_w];
        up_backward_out(Kind::Cubic, grad_output, output_size, input_size, align_corners, &s, grad_input)
    }
}
