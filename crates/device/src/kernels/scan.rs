//! Cumulative ops along one dimension (cumsum, cumprod, cummax/cummin, logcumsumexp): one scan
//! engine ([`run`]) and one small struct per op implementing [`Scanner`], accumulating in the
//! wide domain ATen's CPU kernels use (`acc_type`: double for float, float for half).
//!
//! Lines along the dimension are independent and split across PyTorch's intra-op pool. When the
//! scanned dimension is not the contiguous one but another dimension is (cumsum over dim 0 of a
//! matrix), a block of neighbouring lines is scanned together, row by row, so memory is read in
//! order and the step vectorises across lines.

use regen_runtime::bootstrap::with_size;
use regen_runtime::{Error, Result, ScalarType, TensorRef};

use num_complex::Complex64;

use super::dtype::DType;
use super::iter::{Dims, GRAIN, Operand};
use super::reduce::{Dom, Load, dtype_of, input_as, new_tensor, wrap_dim};

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
unsafe impl Sync for Ptr {}

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
    // The other dimensions: size and the strides of input, values, indices.
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
    let (pi, pv, px) = (Ptr(input.data), Ptr(values.data), Ptr(indices.map_or(std::ptr::null_mut(), |o| o.data)));
    let work = |b: usize, e: usize| {
        let (pi, pv, px) = (pi, pv, px);
        let mut accs: Vec<S::Acc> = Vec::with_capacity(LINE_BLOCK);
        for u in b..e {
            let (mut line, block) = (u / blocks_per, u % blocks_per);
            let (mut oi, mut ov, mut ox) = (0isize, 0isize, 0isize);
            for &(size, [a, v, x]) in others.iter().rev() {
                let c = (line % size) as isize;
                line /= size;
                oi += c * a;
                ov += c * v;
                ox += c * x;
            }
            let c0 = block * LINE_BLOCK;
            let w = (width - c0).min(LINE_BLOCK);
            accs.clear();
            accs.resize(w, op.init());
            for k in 0..n {
                let kk = k as isize;
                for (j, acc) in accs.iter_mut().enumerate() {
                    let j = (c0 + j) as isize;
                    // SAFETY: element (line, k) of each operand, per the contract.
                    unsafe {
                        let x = pi.0.cast::<T>().offset(oi + kk * si + j).read().wide();
                        *acc = op.step(*acc, x, k as i64);
                        pv.0.cast::<T>().offset(ov + kk * sv + j).write(T::from_wide(op.value(*acc)));
                        if !px.0.is_null() {
                            px.0.cast::<i64>().offset(ox + kk * sx + j).write(op.index(*acc));
                        }
                    }
                }
            }
        }
    };
    let arch = pulp::Arch::new();
    let grain = (GRAIN / (n * width.min(LINE_BLOCK)).max(1)).max(1);
    if units * n * width.min(LINE_BLOCK) < GRAIN || regen_runtime::host::num_threads() < 2 {
        arch.dispatch(|| work(0, units));
    } else {
        regen_runtime::host::parallel_for(units, grain, |b, e| arch.dispatch(|| work(b, e)));
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
            super::iter::copy_cast(&target, &vo);
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

/// The `Kernels` methods of the scans, invoked once in `backend.rs`.
#[macro_export]
macro_rules! scan_methods {
    () => {
        fn cumsum_out(
            &self,
            self_: TensorRef<'_>,
            dim: i64,
            dtype: Option<ScalarType>,
            out: TensorRef<'_>,
        ) -> Result<()> {
            $crate::kernels::scan::cumulative(&$crate::kernels::scan::CumSum, self_, dim, dtype, out)
        }

        fn cumprod_out(
            &self,
            self_: TensorRef<'_>,
            dim: i64,
            dtype: Option<ScalarType>,
            out: TensorRef<'_>,
        ) -> Result<()> {
            $crate::kernels::scan::cumulative(&$crate::kernels::scan::CumProd, self_, dim, dtype, out)
        }

        fn _cummax_helper(
            &self,
            self_: TensorRef<'_>,
            values: TensorRef<'_>,
            indices: TensorRef<'_>,
            dim: i64,
        ) -> Result<()> {
            $crate::kernels::scan::cum_extremum::<true>(self_, values, indices, dim)
        }

        fn _cummin_helper(
            &self,
            self_: TensorRef<'_>,
            values: TensorRef<'_>,
            indices: TensorRef<'_>,
            dim: i64,
        ) -> Result<()> {
            $crate::kernels::scan::cum_extremum::<false>(self_, values, indices, dim)
        }

        fn _logcumsumexp(&self, self_: TensorRef<'_>, dim: i64) -> Result<Tensor> {
            let d = $crate::kernels::reduce::dtype_of(&self_)?;
            let d = if d.is_floating() || d.is_complex() { d } else { $crate::kernels::dtype::DType::DEFAULT_FLOAT };
            let out = $crate::kernels::reduce::new_tensor(self_.sizes(), d)?;
            $crate::kernels::scan::logcumsumexp(self_, dim, out.as_ref())?;
            Ok(out)
        }

        fn _logcumsumexp_out(&self, self_: TensorRef<'_>, dim: i64, out: TensorRef<'_>) -> Result<()> {
            $crate::kernels::scan::logcumsumexp(self_, dim, out)
        }
    };
}
