//! Cumulative ops along one dimension (cumsum, cumprod, cummax/cummin, logcumsumexp): one scan
//! engine ([`run`]) and one small struct per op implementing [`Scanner`], accumulating in the
//! wide domain ATen's CPU kernels use (`acc_type`: double for float, float for half).
//!
//! Lines along the dimension are independent and split across PyTorch's intra-op pool. When the
//! scanned dimension is not the contiguous one but another dimension is (cumsum over dim 0 of a
//! matrix), a block of neighbouring lines is scanned together, row by row, so memory is read in
//! order and the step vectorises across lines. Otherwise (cumsum over dim 1) groups of lines are
//! scanned side by side, each line's steps still in order, so the latency of one step overlaps
//! the others'. The loops run as pulp jobs, compiled for AVX-512 and AVX2.

use regen_runtime::bootstrap::with_size;
use regen_runtime::{Error, Result, ScalarType, Tensor, TensorRef};

use std::mem::MaybeUninit;

use num_complex::Complex64;

use crate::engine::dtype::DType;
use crate::engine::dtype::dtype_of;
use crate::engine::iter::{Dims, GRAIN, Operand};
use crate::ops::reduce::{Dom, Load, input_as, new_tensor, wrap_dim};

/// Lines scanned together when the scanned dimension is outer.
const LINE_BLOCK: usize = 256;

/// One cumulative op: the running state, one step (with the element's position along the
/// dimension), and the value (and index, for cummax/cummin) written at each position.
pub trait Scanner<W: Dom>: Sync {
    type Acc: Copy + Send + Sync;
    fn init(&self) -> Self::Acc;
    fn step(&self, acc: Self::Acc, x: W, i: i64) -> Self::Acc;
    fn value(&self, acc: Self::Acc) -> W;
    fn index(&self, _acc: Self::Acc) -> i64 {
        0
    }
}

pub struct CumSum;
impl<W: Dom> Scanner<W> for CumSum {
    type Acc = W;
    fn init(&self) -> W {
        W::zero()
    }
    #[inline(always)]
    fn step(&self, acc: W, x: W, _: i64) -> W {
        acc.add(x)
    }
    #[inline(always)]
    fn value(&self, acc: W) -> W {
        acc
    }
}

pub struct CumProd;
impl<W: Dom> Scanner<W> for CumProd {
    type Acc = W;
    fn init(&self) -> W {
        W::one()
    }
    #[inline(always)]
    fn step(&self, acc: W, x: W, _: i64) -> W {
        acc.mul(x)
    }
    #[inline(always)]
    fn value(&self, acc: W) -> W {
        acc
    }
}

/// cummax (`MAX`) / cummin: ATen's `cummax_cummin_helper` takes the later of equal values
/// (`>=`), and every NaN (so the index is the latest NaN's).
pub struct CumExtremum<const MAX: bool>;
impl<W: Dom, const MAX: bool> Scanner<W> for CumExtremum<MAX> {
    type Acc = (W, i64);
    fn init(&self) -> (W, i64) {
        (W::zero(), -1)
    }
    #[inline(always)]
    fn step(&self, acc: (W, i64), x: W, i: i64) -> (W, i64) {
        let take = acc.1 < 0 || x.is_nan() || (!acc.0.is_nan() && if MAX { !x.lt(acc.0) } else { !x.gt(acc.0) });
        if take { (x, i) } else { acc }
    }
    #[inline(always)]
    fn value(&self, acc: (W, i64)) -> W {
        acc.0
    }
    fn index(&self, acc: (W, i64)) -> i64 {
        acc.1
    }
}

/// logcumsumexp: ATen's `_log_add_exp_helper` (complex values order by real part).
pub struct LogCumSumExp;
impl<W: Dom> Scanner<W> for LogCumSumExp {
    type Acc = Complex64;
    fn init(&self) -> Complex64 {
        Complex64::new(f64::NEG_INFINITY, 0.0)
    }
    #[inline(always)]
    fn step(&self, acc: Complex64, x: W, _: i64) -> Complex64 {
        let x = x.c64();
        let (lo, hi) = if acc.re < x.re { (acc, x) } else { (x, acc) };
        let nan = |z: Complex64| z.re.is_nan() || z.im.is_nan();
        if nan(lo) || nan(hi) {
            Complex64::new(f64::NAN, if W::COMPLEX { f64::NAN } else { 0.0 })
        } else if lo.re == hi.re && lo.re.is_infinite() {
            if lo.re < 0.0 { lo } else { hi }
        } else if W::COMPLEX {
            hi + ((lo - hi).exp() + 1.0).ln()
        } else {
            Complex64::new(hi.re + (lo.re - hi.re).exp().ln_1p(), 0.0)
        }
    }
    #[inline(always)]
    fn value(&self, acc: Complex64) -> W {
        W::from_c64(acc)
    }
}

#[derive(Clone, Copy)]
struct Ptr(*mut u8);
// SAFETY: tensor memory alive for the kernel call; threads write disjoint lines.
unsafe impl Send for Ptr {}
// SAFETY: the threads sharing it read the input and write disjoint lines of the outputs, all
// alive for the kernel call.
unsafe impl Sync for Ptr {}

/// Lines scanned side by side when each is scanned alone (the scanned dimension is the
/// contiguous one, or no other dimension is): the lines' chains of dependent steps overlap
/// instead of each waiting for the previous step's latency. (8 was slower: twice the memory
/// streams.)
const LINE_GROUP: usize = 4;

/// The loop nest of one scan: `units` units of work, each a block of up to [`LINE_BLOCK`]
/// neighbouring lines (`width` > 1) or one line.
struct Lines {
    /// The other dimensions, outermost first: size and the strides of input, values, indices.
    others: Dims<(usize, [isize; 3])>,
    /// Length of the scanned dimension and its strides in input, values, indices.
    n: usize,
    steps: [isize; 3],
    width: usize,
    blocks_per: usize,
    /// Input, values, indices (null without indices).
    ptrs: [Ptr; 3],
}

impl Lines {
    /// Element offsets of line `line` (row-major over `others`) in input, values, indices.
    #[inline(always)]
    fn offsets(&self, mut line: usize) -> [isize; 3] {
        let mut off = [0isize; 3];
        for &(size, s) in self.others.iter().rev() {
            let c = (line % size) as isize;
            line /= size;
            for k in 0..3 {
                off[k] += c * s[k];
            }
        }
        off
    }
}

/// Scans units `b..e` of `lines`.
///
/// # Safety
/// `lines` describes live operands as [`run`] requires.
#[inline(always)]
unsafe fn scan_units<T: Load, S: Scanner<T::W>>(op: &S, lines: &Lines, b: usize, e: usize) {
    let (n, steps) = (lines.n, lines.steps);
    let ptrs = (lines.ptrs[0].0 as *const T, lines.ptrs[1].0.cast::<T>(), lines.ptrs[2].0.cast::<i64>());
    let with_index = !ptrs.2.is_null();
    if lines.width == 1 {
        let mut u = b;
        while u < e {
            let g = (e - u).min(LINE_GROUP);
            let offs: [[isize; 3]; LINE_GROUP] = std::array::from_fn(|j| lines.offsets(u + j.min(g - 1)));
            // SAFETY: lines `u..u + g`, per the contract.
            unsafe {
                match (g == LINE_GROUP, with_index) {
                    (true, false) => scan_group::<T, S, LINE_GROUP, false>(op, n, ptrs, &offs, steps),
                    (true, true) => scan_group::<T, S, LINE_GROUP, true>(op, n, ptrs, &offs, steps),
                    (false, _) => {
                        for o in &offs[..g] {
                            if with_index {
                                scan_group::<T, S, 1, true>(op, n, ptrs, &[*o; LINE_GROUP], steps);
                            } else {
                                scan_group::<T, S, 1, false>(op, n, ptrs, &[*o; LINE_GROUP], steps);
                            }
                        }
                    }
                }
            }
            u += g;
        }
        return;
    }
    let (pi, pv, px) = ptrs;
    let [si, sv, sx] = steps;
    let (width, blocks_per) = (lines.width, lines.blocks_per);
    let mut accs: Vec<S::Acc> = Vec::with_capacity(LINE_BLOCK);
    for u in b..e {
        let (line, block) = (u / blocks_per, u % blocks_per);
        let [oi, ov, ox] = lines.offsets(line);
        let c0 = block * LINE_BLOCK;
        let w = (width - c0).min(LINE_BLOCK);
        accs.clear();
        accs.resize(w, op.init());
        for k in 0..n {
            let kk = k as isize;
            // SAFETY: elements (line, k) of each operand, columns c0..c0 + w, per the contract.
            unsafe {
                let (xi, xv) = (pi.offset(oi + kk * si + c0 as isize), pv.offset(ov + kk * sv + c0 as isize));
                for (j, acc) in accs.iter_mut().enumerate() {
                    *acc = op.step(*acc, xi.add(j).read().wide(), k as i64);
                    xv.add(j).write(T::from_wide(op.value(*acc)));
                }
                if with_index {
                    let xx = px.offset(ox + kk * sx + c0 as isize);
                    for (j, acc) in accs.iter().enumerate() {
                        xx.add(j).write(op.index(*acc));
                    }
                }
            }
        }
    }
}

/// Scans `G` lines side by side, the accumulators in registers: line `j` starts at offsets
/// `offs[j]` (input, values, indices) and moves by `steps`.
///
/// # Safety
/// As [`scan_units`].
#[inline(always)]
unsafe fn scan_group<T: Load, S: Scanner<T::W>, const G: usize, const INDEX: bool>(
    op: &S,
    n: usize,
    (pi, pv, px): (*const T, *mut T, *mut i64),
    offs: &[[isize; 3]; LINE_GROUP],
    [si, sv, sx]: [isize; 3],
) {
    if T::SCAN_BLOCKS && si == 1 && sv == 1 {
        // SAFETY: forwarded contract; the lines are contiguous.
        return unsafe { scan_group_blocks::<T, S, G, INDEX>(op, n, (pi, pv, px), offs, sx) };
    }
    let mut accs = [op.init(); G];
    for k in 0..n {
        let kk = k as isize;
        // Every line's load before any store: lines a multiple of 4 KiB apart (rows of a
        // matrix) would otherwise have each load wait on the previous line's store to the same
        // address modulo 4 KiB (the CPU's 4K aliasing).
        // SAFETY: element k of each line, per the contract.
        let mut xs = [unsafe { pi.offset(offs[0][0] + kk * si).read() }; G];
        for j in 1..G {
            // SAFETY: as above.
            xs[j] = unsafe { pi.offset(offs[j][0] + kk * si).read() };
        }
        for j in 0..G {
            accs[j] = op.step(accs[j], xs[j].wide(), k as i64);
        }
        for j in 0..G {
            // SAFETY: as above.
            unsafe {
                pv.offset(offs[j][1] + kk * sv).write(T::from_wide(op.value(accs[j])));
                if INDEX {
                    px.offset(offs[j][2] + kk * sx).write(op.index(accs[j]));
                }
            }
        }
    }
}

/// [`scan_group`] over contiguous lines of a type that converts faster a block at a time
/// ([`Load::SCAN_BLOCKS`]: float16 and bfloat16): each line is widened [`SCAN_BLOCK`] elements at a time into a
/// buffer, scanned there with the same steps in the same order, and its values narrowed back a
/// block at a time.
///
/// # Safety
/// As [`scan_group`], with unit input and value steps.
#[inline(always)]
unsafe fn scan_group_blocks<T: Load, S: Scanner<T::W>, const G: usize, const INDEX: bool>(
    op: &S,
    n: usize,
    (pi, pv, px): (*const T, *mut T, *mut i64),
    offs: &[[isize; 3]; LINE_GROUP],
    sx: isize,
) {
    let mut accs = [op.init(); G];
    let mut ins = [[MaybeUninit::<T::W>::uninit(); SCAN_BLOCK]; G];
    let mut outs = [[T::W::zero(); SCAN_BLOCK]; G];
    let mut k0 = 0;
    while k0 < n {
        let m = (n - k0).min(SCAN_BLOCK);
        for j in 0..G {
            // SAFETY: elements k0..k0 + m of line j, per the contract.
            let line = unsafe { std::slice::from_raw_parts(pi.offset(offs[j][0] + k0 as isize), m) };
            T::wide_block(line, &mut ins[j][..m]);
        }
        for k in 0..m {
            for j in 0..G {
                // SAFETY: wide_block wrote the first m elements of each buffer.
                let x = unsafe { ins[j][k].assume_init() };
                accs[j] = op.step(accs[j], x, (k0 + k) as i64);
                outs[j][k] = op.value(accs[j]);
                if INDEX {
                    // SAFETY: element k0 + k of line j's indices, per the contract.
                    unsafe { px.offset(offs[j][2] + (k0 + k) as isize * sx).write(op.index(accs[j])) };
                }
            }
        }
        for j in 0..G {
            // SAFETY: elements k0..k0 + m of line j's values, per the contract.
            unsafe { T::from_wide_block(&outs[j][..m], pv.offset(offs[j][1] + k0 as isize)) };
        }
        k0 += m;
    }
}

/// Elements of each line per block of [`scan_group_blocks`] (four lines' input and value
/// buffers of f32: 2 KiB).
const SCAN_BLOCK: usize = 64;

/// A range of units as a pulp job: `with_simd` and everything it calls are inlined into pulp's
/// entry points compiled for AVX-512 / AVX2 (a closure given to `Arch::dispatch` would not be).
struct ScanJob<'a, T, S> {
    op: &'a S,
    lines: &'a Lines,
    range: (usize, usize),
    _t: std::marker::PhantomData<T>,
}

impl<T: Load, S: Scanner<T::W>> pulp::WithSimd for ScanJob<'_, T, S> {
    type Output = ();
    #[inline(always)]
    fn with_simd<V: pulp::Simd>(self, _: V) {
        // SAFETY: `lines` was built by `run` under its contract.
        unsafe { scan_units::<T, S>(self.op, self.lines, self.range.0, self.range.1) }
    }
}

/// Scans `input` (of `T`) along `dim` into `values` (of `T`, same shape) and, when given,
/// `indices` (i64, same shape).
///
/// # Safety
/// Live operands of one shape; outputs writable and not overlapping the input.
pub unsafe fn run<T: Load, S: Scanner<T::W>>(
    op: &S,
    input: &Operand,
    dim: usize,
    values: &Operand,
    indices: Option<&Operand>,
) {
    let ndim = input.sizes.len();
    if ndim == 0 {
        // SAFETY: a zero-dim input holds one element, and it is a live operand of T (the
        // contract).
        let x = unsafe { input.data.cast::<T>().read() }.wide();
        let acc = op.step(op.init(), x, 0);
        // SAFETY: one element each, per the contract.
        unsafe {
            values.data.cast::<T>().write(T::from_wide(op.value(acc)));
            if let Some(ix) = indices {
                ix.data.cast::<i64>().write(op.index(acc));
            }
        }
        return;
    }
    let n = input.sizes[dim] as usize;
    let istr = |o: &Operand, d: usize| o.strides[d] as isize;
    let (si, sv, sx) = (istr(input, dim), istr(values, dim), indices.map_or(0, |o| istr(o, dim)));
    let mut others: Dims<(usize, [isize; 3])> = (0..ndim)
        .filter(|&d| d != dim && input.sizes[d] != 1)
        .map(|d| (input.sizes[d] as usize, [istr(input, d), istr(values, d), indices.map_or(0, |o| istr(o, d))]))
        .collect();
    others.sort_by_key(|o| std::cmp::Reverse(o.1[0].unsigned_abs()));
    let lines: usize = others.iter().map(|o| o.0).product();
    if lines == 0 || n == 0 {
        return;
    }
    // Lines scanned together: a contiguous other dimension (in input and values) when the
    // scanned one is not contiguous.
    let width = match others.last() {
        Some(&(size, [1, 1, sxi])) if si != 1 && (indices.is_none() || sxi == 1) => {
            others.pop();
            size
        }
        _ => 1,
    };
    let blocks_per = width.div_ceil(LINE_BLOCK);
    let units = (lines / width) * blocks_per;
    let ptrs = [Ptr(input.data), Ptr(values.data), Ptr(indices.map_or(std::ptr::null_mut(), |o| o.data))];
    let plan = Lines { others, n, steps: [si, sv, sx], width, blocks_per, ptrs };
    let job = |b: usize, e: usize| ScanJob::<T, S> { op, lines: &plan, range: (b, e), _t: std::marker::PhantomData };
    let arch = crate::engine::pulp_arch();
    let per_unit = n * width.min(LINE_BLOCK);
    let grain = (GRAIN / per_unit.max(1)).max(1);
    if units * per_unit < GRAIN || regen_runtime::host::num_threads() < 2 {
        arch.dispatch(job(0, units));
    } else {
        regen_runtime::host::parallel_for(units, grain, |b, e| arch.dispatch(job(b, e)));
    }
}

/// Runs `op` over `input` converted to `compute`, into `values` (resized to the input's shape;
/// computed through a temporary when its dtype differs) and `indices`.
pub fn scan_into<S>(
    op: &S,
    input: TensorRef<'_>,
    dim: i64,
    compute: DType,
    values: TensorRef<'_>,
    indices: Option<TensorRef<'_>>,
) -> Result<()>
where
    S: Scanner<i64> + Scanner<f32> + Scanner<f64> + Scanner<num_complex::Complex64>,
{
    let d = wrap_dim(dim, input.dim())?;
    let shape = input.sizes().to_vec();
    let (src, _keep) = input_as(input, compute)?;
    let vo = with_size(&values, &shape, Operand::of)?;
    let io = match indices {
        Some(ix) => Some(with_size(&ix, &shape, Operand::of)?),
        None => None,
    };
    let direct = vo.dtype == compute;
    let tmp = if direct { None } else { Some(new_tensor(&shape, compute)?) };
    let target = match &tmp {
        Some(t) => Operand::of(&t.as_ref())?,
        None => vo.clone(),
    };
    // SAFETY: live tensors of the input's shape.
    unsafe {
        crate::dispatch!(
            compute,
            [Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64, C64, C128],
            |T| run::<T, S>(op, &src, d, &target, io.as_ref()),
            else unreachable!()
        );
        if !direct {
            crate::engine::loops::copy_cast(&target, &vo);
        }
    }
    Ok(())
}

/// cumsum / cumprod: computed in the output's dtype (the input converted), as ATen does.
pub fn cumulative<S>(op: &S, t: TensorRef<'_>, dim: i64, _dtype: Option<ScalarType>, out: TensorRef<'_>) -> Result<()>
where
    S: Scanner<i64> + Scanner<f32> + Scanner<f64> + Scanner<num_complex::Complex64>,
{
    let compute = dtype_of(&out)?;
    scan_into(op, t, dim, compute, out, None)
}

/// _cummax_helper / _cummin_helper.
pub fn cum_extremum<const MAX: bool>(
    t: TensorRef<'_>,
    values: TensorRef<'_>,
    indices: TensorRef<'_>,
    dim: i64,
) -> Result<()> {
    let d = dtype_of(&t)?;
    if d.is_complex() {
        let op = if MAX { "cummax" } else { "cummin" };
        return Err(Error::not_implemented(format!("\"{op}\" not implemented for '{}'", d.name())));
    }
    scan_into(&CumExtremum::<MAX>, t, dim, d, values, Some(indices))
}

/// _logcumsumexp into `out`.
pub fn logcumsumexp(t: TensorRef<'_>, dim: i64, out: TensorRef<'_>) -> Result<()> {
    let d = dtype_of(&t)?;
    if !(d.is_floating() || d.is_complex()) {
        return Err(Error::not_implemented(format!("\"logcumsumexp\" not implemented for '{}'", d.name())));
    }
    scan_into(&LogCumSumExp, t, dim, d, out, None)
}

/// This family's kernels: group `scan` of regen.toml's `[implement]`.
impl crate::ScanKernels for crate::Reference {
    fn cumsum_out(&self, self_: TensorRef<'_>, dim: i64, dtype: Option<ScalarType>, out: TensorRef<'_>) -> Result<()> {
        cumulative(&CumSum, self_, dim, dtype, out)
    }

    fn cumprod_out(&self, self_: TensorRef<'_>, dim: i64, dtype: Option<ScalarType>, out: TensorRef<'_>) -> Result<()> {
        cumulative(&CumProd, self_, dim, dtype, out)
    }

    fn _cummax_helper(
        &self,
        self_: TensorRef<'_>,
        values: TensorRef<'_>,
        indices: TensorRef<'_>,
        dim: i64,
    ) -> Result<()> {
        cum_extremum::<true>(self_, values, indices, dim)
    }

    fn _cummin_helper(
        &self,
        self_: TensorRef<'_>,
        values: TensorRef<'_>,
        indices: TensorRef<'_>,
        dim: i64,
    ) -> Result<()> {
        cum_extremum::<false>(self_, values, indices, dim)
    }

    fn _logcumsumexp(&self, self_: TensorRef<'_>, dim: i64) -> Result<Tensor> {
        let d = dtype_of(&self_)?;
        let d = if d.is_floating() || d.is_complex() { d } else { crate::engine::dtype::DType::DEFAULT_FLOAT };
        let out = crate::ops::reduce::new_tensor(self_.sizes(), d)?;
        logcumsumexp(self_, dim, out.as_ref())?;
        Ok(out)
    }

    fn _logcumsumexp_out(&self, self_: TensorRef<'_>, dim: i64, out: TensorRef<'_>) -> Result<()> {
        logcumsumexp(self_, dim, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_scanned_side_by_side_match_one_at_a_time() {
        // 13 lines: one group of LINE_GROUP and single lines; along dim 1 (contiguous) and
        // dim 0 of the transpose (strided lines).
        let (lines, n) = (13usize, 50usize);
        let mut x: Vec<f32> = (0..lines * n).map(|i| ((i * 7919) % 101) as f32 * 0.37 - 17.0).collect();
        let mut expect = vec![0f32; lines * n];
        let mut expect_idx = vec![0i64; lines * n];
        for l in 0..lines {
            let mut acc = 0f64;
            let (mut best, mut at) = (f32::NEG_INFINITY, 0i64);
            for k in 0..n {
                acc += f64::from(x[l * n + k]);
                expect[l * n + k] = acc as f32;
                if x[l * n + k] >= best {
                    (best, at) = (x[l * n + k], k as i64);
                }
                expect_idx[l * n + k] = at;
            }
        }
        let (l, k) = (lines as i64, n as i64);
        for (sizes, strides, dim) in [([l, k], [k, 1], 1), ([k, l], [1, k], 0)] {
            let input = Operand::over(&mut x, &sizes, &strides, DType::F32);
            let mut out = vec![0f32; lines * n];
            let mut vals = vec![0f32; lines * n];
            let mut idx = vec![0i64; lines * n];
            // SAFETY: the operands describe the local arrays.
            unsafe {
                run::<f32, _>(&CumSum, &input, dim, &Operand::over(&mut out, &sizes, &strides, DType::F32), None);
                let ix = Operand::over(&mut idx, &sizes, &strides, DType::I64);
                run::<f32, _>(
                    &CumExtremum::<true>,
                    &input,
                    dim,
                    &Operand::over(&mut vals, &sizes, &strides, DType::F32),
                    Some(&ix),
                );
            }
            assert_eq!(out, expect);
            assert_eq!(idx, expect_idx);
        }
    }
}
