//! Indexing, scatter/gather and data-dependent selection: one engine that visits, for each
//! position of an index, one element (`gather`, `scatter*`: `along`) or one slice
//! (`index_select`, `index_add`, `index_copy`, `index_fill_`, `index_reduce`: `slices`) and
//! hands the pair of element offsets to a small combine function ([`Reduce`]); the dtype dispatch,
//! the bounds checks and the striding are written once here. Ops that write where several
//! indices may meet (scatter, index_add, put_ with accumulate) walk those indices in order on one
//! thread, as ATen's CPU kernels do, so sums come out bit for bit as on CPU; gathers split across
//! PyTorch's threads.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use regen_runtime::bootstrap::with_size;
use regen_runtime::view::{contiguous_strides, for_each_offset};
use regen_runtime::{Error, OptionalTensorList, Result, Scalar, Tensor, TensorRef};

use crate::dispatch_all;
use crate::engine::dtype::{DType, Element, Num, PromotionOperand, dtype_of, result_type};
use crate::engine::iter::{GRAIN, Operand, fmt_sizes};
use crate::ops::binary::ScaledAdd;
use crate::ops::copy;

/// Element arithmetic the combine functions need, for every dtype (half types through f32,
/// integers wrapping, bool as logical or/and).
pub trait Arith: Element {
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// `dst[j] += alpha * src[j]` over a run of `n` (element strides `ds`, `ss`), alpha a Scalar
    /// argument, as ATen's `add_` kernel rounds it (floats: binary.rs' `ScaledAdd`).
    ///
    /// # Safety
    /// Both runs lie inside their tensors, and `src` is either `dst` itself or does not overlap
    /// it (as `run_combine`).
    unsafe fn add_scaled_run(dst: *mut Self, ds: isize, src: *const Self, ss: isize, n: usize, alpha: Num);
    /// `max` propagating NaN from either side (ATen's scatter_reduce amax).
    fn max_nan(self, o: Self) -> Self;
    fn min_nan(self, o: Self) -> Self;
    /// Mean's final division: true division for floats, floor division for integers.
    fn div_count(self, n: i64) -> Self;
    /// The identity of amax / amin (lowest / highest value).
    fn lowest() -> Self;
    fn highest() -> Self;
}

macro_rules! int_arith {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)]
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            unsafe fn add_scaled_run(dst: *mut Self, ds: isize, src: *const Self, ss: isize, n: usize, alpha: Num) {
                let a = alpha.as_i64() as $t;
                // SAFETY: forwarded contract.
                unsafe { run_combine(dst, ds, src, ss, n, |x: $t, y: $t| x.wrapping_add(y.wrapping_mul(a))) }
            }
            #[inline(always)]
            fn max_nan(self, o: Self) -> Self { if self < o { o } else { self } }
            #[inline(always)]
            fn min_nan(self, o: Self) -> Self { if o < self { o } else { self } }
            fn div_count(self, n: i64) -> Self {
                // Floor division, as `div_(count, rounding_mode="floor")`.
                let a = self as i64;
                let q = a / n;
                (if a % n != 0 && ((a < 0) != (n < 0)) { q - 1 } else { q }) as $t
            }
            fn lowest() -> Self { <$t>::MIN }
            fn highest() -> Self { <$t>::MAX }
        }
    )*};
}
int_arith!(u8, i8, i16, i32, i64);

impl Arith for bool {
    fn add(self, o: Self) -> Self {
        self || o
    }
    fn mul(self, o: Self) -> Self {
        self && o
    }
    unsafe fn add_scaled_run(dst: *mut Self, ds: isize, src: *const Self, ss: isize, n: usize, alpha: Num) {
        let a = alpha.as_bool();
        // SAFETY: forwarded contract.
        unsafe { run_combine(dst, ds, src, ss, n, |x, y| x || (y && a)) }
    }
    fn max_nan(self, o: Self) -> Self {
        self || o
    }
    fn min_nan(self, o: Self) -> Self {
        self && o
    }
    fn div_count(self, _n: i64) -> Self {
        self
    }
    fn lowest() -> Self {
        false
    }
    fn highest() -> Self {
        true
    }
}

/// Reals computing in their opmath type (f32 for f16/bf16).
macro_rules! float_arith {
    ($($t:ty: $acc:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self { Self::from_acc(self.to_acc() + o.to_acc()) }
            #[inline(always)]
            fn mul(self, o: Self) -> Self { Self::from_acc(self.to_acc() * o.to_acc()) }
            unsafe fn add_scaled_run(dst: *mut Self, ds: isize, src: *const Self, ss: isize, n: usize, alpha: Num) {
                let size = std::mem::size_of::<Self>() as isize;
                // SAFETY: forwarded contract (`src` is `dst` itself or apart from it).
                unsafe {
                    <Self as ScaledAdd>::run_one(dst, [dst.cast_const(), src], &[ds * size, ds * size, ss * size], n, alpha.as_f64(), false)
                }
            }
            #[inline(always)]
            fn max_nan(self, o: Self) -> Self {
                let (a, b) = (self.to_acc(), o.to_acc());
                if b.is_nan() || a < b { o } else { self }
            }
            #[inline(always)]
            fn min_nan(self, o: Self) -> Self {
                let (a, b) = (self.to_acc(), o.to_acc());
                if b.is_nan() || b < a { o } else { self }
            }
            fn div_count(self, n: i64) -> Self { Self::from_acc(self.to_acc() / n as $acc) }
            fn lowest() -> Self { Self::from_acc(<$acc>::NEG_INFINITY) }
            fn highest() -> Self { Self::from_acc(<$acc>::INFINITY) }
        }
    )*};
}
float_arith!(f32: f32, f64: f64, half::f16: f32, half::bf16: f32);

macro_rules! complex_arith {
    ($($t:ty: $r:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)]
            fn add(self, o: Self) -> Self { self + o }
            #[inline(always)]
            fn mul(self, o: Self) -> Self { self * o }
            unsafe fn add_scaled_run(dst: *mut Self, ds: isize, src: *const Self, ss: isize, n: usize, alpha: Num) {
                let (re, im) = alpha.as_complex();
                let a = <$t>::new(re as $r, im as $r);
                // SAFETY: forwarded contract.
                unsafe { run_combine(dst, ds, src, ss, n, |x: $t, y: $t| x + a * y) }
            }
            // Complex numbers have no order: the reductions that need one reject them first.
            fn max_nan(self, _o: Self) -> Self { self }
            fn min_nan(self, _o: Self) -> Self { self }
            fn div_count(self, n: i64) -> Self { self / n as $r }
            fn lowest() -> Self { Self::zero() }
            fn highest() -> Self { Self::zero() }
        }
    )*};
}
complex_arith!(num_complex::Complex32: f32, num_complex::Complex64: f64);

/// How a written element combines with what is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduce {
    Assign,
    Add,
    Mul,
    Mean,
    Max,
    Min,
}

impl Reduce {
    #[inline(always)]
    fn apply<T: Arith>(self, a: T, b: T) -> T {
        match self {
            Reduce::Assign => b,
            Reduce::Add | Reduce::Mean => a.add(b),
            Reduce::Mul => a.mul(b),
            Reduce::Max => a.max_nan(b),
            Reduce::Min => a.min_nan(b),
        }
    }
    /// The value an element starts from when `include_self=False`.
    fn identity<T: Arith>(self) -> T {
        match self {
            Reduce::Mul => T::one(),
            Reduce::Max => T::lowest(),
            Reduce::Min => T::highest(),
            _ => T::zero(),
        }
    }
    fn ordered(self) -> bool {
        matches!(self, Reduce::Max | Reduce::Min)
    }
}

// ---------------------------------------------------------------------------------------------
// Geometry helpers.

/// The operand of `t`, a zero-dim tensor seen as one element of a 1-d tensor (as ATen's
/// scatter/gather kernels do).
fn operand_1d(t: &TensorRef<'_>) -> Result<Operand> {
    let mut o = Operand::of(t)?;
    if o.sizes.is_empty() {
        o.sizes.push(1);
        o.strides.push(1);
    }
    Ok(o)
}

pub use crate::engine::iter::new_tensor;

/// `t` converted to `dtype` (a new tensor), or `None` when it already has it.
fn converted(t: TensorRef<'_>, dtype: DType) -> Result<Option<Tensor>> {
    if dtype_of(&t)? == dtype {
        return Ok(None);
    }
    copy::dense(t, dtype).map(Some)
}

pub use crate::engine::iter::wrap_dim;

fn is_index_dtype(d: DType) -> bool {
    matches!(d, DType::I64 | DType::I32)
}

/// The values of an int32/int64 index tensor in row-major order.
fn read_indices(t: &Operand) -> Vec<i64> {
    let mut out = Vec::with_capacity(t.numel());
    let (sizes, strides) = (t.sizes.as_slice(), t.strides.as_slice());
    // SAFETY: the offsets come from the tensor's own geometry.
    match t.dtype {
        DType::I32 => {
            // SAFETY: o is an offset of t's own sizes and strides, so an element of the live
            // index tensor t, whose dtype is int32 in this arm.
            for_each_offset(sizes, [strides], |[o]| out.push(i64::from(unsafe { *t.data.cast::<i32>().offset(o) })))
        }
        // SAFETY: o is an offset of t's own geometry; every caller checked t is int32 or int64
        // (slice_indices, put, advanced indexing, searchsorted's sorter), so int64 in this arm.
        _ => for_each_offset(sizes, [strides], |[o]| out.push(unsafe { *t.data.cast::<i64>().offset(o) })),
    }
    out
}

/// Visits every position of `shape` with each operand's element offset, splitting dimension 0
/// across PyTorch's threads when `parallel` and the work (`per_position` elements each) is large.
fn walk<const N: usize, F>(shape: &[i64], strides: [&[i64]; N], parallel: bool, per_position: usize, f: F)
where
    F: Fn([isize; N]) + Sync,
{
    let numel = shape.iter().product::<i64>().max(0) as usize;
    if numel == 0 {
        return;
    }
    if shape.is_empty() {
        return f([0; N]);
    }
    let rows = shape[0] as usize;
    let row_work = (numel / rows) * per_position.max(1);
    if !parallel || rows < 2 || row_work * rows < GRAIN || regen_runtime::host::num_threads() < 2 {
        return for_each_offset(shape, strides, f);
    }
    let grain = GRAIN.div_ceil(row_work.max(1)).max(1);
    regen_runtime::host::parallel_for(rows, grain, |start, end| {
        let mut sub = shape.to_vec();
        sub[0] = (end - start) as i64;
        let base: [isize; N] = std::array::from_fn(|k| start as isize * strides[k][0] as isize);
        for_each_offset(&sub, strides, |o| f(std::array::from_fn(|k| o[k] + base[k])));
    });
}

/// `v` without dimension `d`.
fn without(v: &[i64], d: usize) -> Vec<i64> {
    v.iter().enumerate().filter(|&(k, _)| k != d).map(|(_, &x)| x).collect()
}

/// Raw pointer access for the typed loops.
#[inline(always)]
unsafe fn at<T>(base: *mut u8, offset: isize) -> *mut T {
    // SAFETY: the caller's offset is inside the tensor.
    unsafe { base.cast::<T>().offset(offset) }
}

/// A pointer shared by the threads of one kernel, which touch disjoint elements.
#[derive(Clone, Copy)]
struct Ptr(*mut u8);
// SAFETY: see above.
unsafe impl Send for Ptr {}
// SAFETY: the threads sharing a Ptr touch disjoint elements of tensor memory that outlives the
// kernel call (see the doc comment above).
unsafe impl Sync for Ptr {}
impl Ptr {
    /// Through a method, so closures capture the `Sync` wrapper, not its raw field.
    #[inline(always)]
    fn get(self) -> *mut u8 {
        self.0
    }
}

/// Records the first out-of-range index seen by a loop (possibly on several threads).
struct FirstBad(Mutex<Option<i64>>);
impl FirstBad {
    fn new() -> Self {
        FirstBad(Mutex::new(None))
    }
    fn set(&self, i: i64) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(i);
    }
    fn get(self) -> Option<i64> {
        self.0.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

// ---------------------------------------------------------------------------------------------
// The element engine: gather and scatter.

/// For each position of `index` (all dims but `dim` outside, `dim` inside), calls
/// `f(data_offset, other_offset)` where `data_offset` addresses `data` at the position with
/// its `dim` coordinate replaced by the index value, and `other_offset` addresses `other`
/// (same coordinates as the index). Out-of-range values are reported, as ATen's message.
/// `parallel` splits the outer positions across threads (each position's run along `dim` stays
/// on one thread, in order).
fn along<F>(index: &Operand, data: &Operand, other: Option<&Operand>, dim: usize, parallel: bool, f: F) -> Result<()>
where
    F: Fn(isize, isize) + Sync + Copy,
{
    let outer = without(&index.sizes, dim);
    let (si, sd) = (without(&index.strides, dim), without(&data.strides, dim));
    let so = other.map_or_else(|| vec![0; outer.len()], |o| without(&o.strides, dim));
    let n = index.sizes[dim];
    let (istep, dstep) = (index.strides[dim] as isize, data.strides[dim] as isize);
    let ostep = other.map_or(0, |o| o.strides[dim] as isize);
    let bound = data.sizes[dim];
    let bad = FirstBad::new();
    let (ip, wide) = (Ptr(index.data), index.dtype == DType::I64);
    walk(&outer, [&si, &sd, &so], parallel, n as usize, |[io, dof, oo]| {
        // SAFETY: the run of `n` indices from `io` is inside the index tensor.
        let first_bad = unsafe {
            if wide {
                index_run(at::<i64>(ip.get(), io), istep, n, bound, (dof, dstep), (oo, ostep), f)
            } else {
                index_run(at::<i32>(ip.get(), io), istep, n, bound, (dof, dstep), (oo, ostep), f)
            }
        };
        if let Some(i) = first_bad {
            bad.set(i);
        }
    });
    match bad.get() {
        Some(i) => Err(Error::runtime(format!("index {i} is out of bounds for dimension {dim} with size {bound}"))),
        None => Ok(()),
    }
}

/// One run of `along`: `n` indices from `ip` (step `istep`), each checked against `bound`
/// (one unsigned comparison, as ATen's loop) and handed to `f` with its data and other
/// offsets. Everything comes by value, so the loop keeps it in registers (read through the
/// caller's captures, it would be reloaded after every store `f` makes). Returns the first
/// out-of-range index.
///
/// # Safety
/// The `n` indices are readable.
#[inline(always)]
unsafe fn index_run<I: Copy + Into<i64>>(
    ip: *const I,
    istep: isize,
    n: i64,
    bound: i64,
    (dof, dstep): (isize, isize),
    (oo, ostep): (isize, isize),
    f: impl Fn(isize, isize),
) -> Option<i64> {
    for k in 0..n as isize {
        // SAFETY: per the contract.
        let i: i64 = unsafe { ip.offset(k * istep).read() }.into();
        if i as u64 >= bound as u64 {
            return Some(i);
        }
        f(dof + i as isize * dstep, oo + k * ostep);
    }
    None
}

/// Whether no two elements of `o` share memory (each dimension's stride, smallest first,
/// passes the span of the smaller ones), so writes to different positions cannot collide.
fn non_overlapping(o: &Operand) -> bool {
    let mut dims: Vec<(i64, i64)> =
        o.sizes.iter().zip(&o.strides).filter(|d| *d.0 > 1).map(|(&n, &s)| (s.abs(), n)).collect();
    dims.sort_unstable();
    let mut span = 0i64;
    for (s, n) in dims {
        if s <= span {
            return false;
        }
        span = span.saturating_add(s.saturating_mul(n - 1));
    }
    true
}

/// Whether the memory `a` and `b` span (first to last element) does not intersect.
fn disjoint(a: &Operand, b: &Operand) -> bool {
    let span = |o: &Operand| {
        let (mut lo, mut hi) = (0i64, 0i64);
        for (&n, &s) in o.sizes.iter().zip(&o.strides) {
            let far = s.saturating_mul((n - 1).max(0));
            if far < 0 { lo = lo.saturating_add(far) } else { hi = hi.saturating_add(far) }
        }
        let (base, size) = (o.data as i64, o.dtype.size() as i64);
        (base.saturating_add(lo.saturating_mul(size)), base.saturating_add(hi.saturating_add(1).saturating_mul(size)))
    };
    let ((a0, a1), (b0, b1)) = (span(a), span(b));
    a1 <= b0 || b1 <= a0
}

fn check_index_dtype(index: &TensorRef<'_>, op: &str) -> Result<()> {
    // An empty index of any dtype is accepted, as on CPU.
    if index.numel() > 0 && !is_index_dtype(dtype_of(index)?) {
        return Err(Error::runtime(format!("{op}(): Expected dtype int32/int64 for index")));
    }
    Ok(())
}

/// ATen's `gather_shape_check` / `scatter_shape_check`.
fn shape_check(self_: &TensorRef<'_>, dim: usize, index: &TensorRef<'_>, src: Option<&TensorRef<'_>>) -> Result<()> {
    if index.numel() == 0 {
        return Ok(());
    }
    let nd = |t: &TensorRef<'_>| t.dim().max(1);
    if nd(self_) != nd(index) || src.is_some_and(|s| nd(s) != nd(index)) {
        return Err(Error::runtime("Index tensor must have the same number of dimensions as input tensor"));
    }
    let size = |t: &TensorRef<'_>, d: usize| t.sizes().get(d).copied().unwrap_or(1);
    for d in 0..nd(index) {
        let too_big_self = d != dim && size(index, d) > size(self_, d);
        let too_big_src = src.is_some_and(|s| size(index, d) > size(s, d));
        if too_big_self || too_big_src {
            return Err(Error::runtime(match src {
                Some(s) => format!(
                    "Expected index {} to be no larger than self {} apart from dimension {dim} and to be no larger size than src {}",
                    fmt_sizes(index.sizes()),
                    fmt_sizes(self_.sizes()),
                    fmt_sizes(s.sizes())
                ),
                None => format!(
                    "Size does not match at dimension {d} expected index {} to be no larger than self {} apart from dimension {dim}",
                    fmt_sizes(index.sizes()),
                    fmt_sizes(self_.sizes())
                ),
            }));
        }
    }
    Ok(())
}

/// `torch.gather(self, dim, index, out=out)`.
pub fn gather(self_: TensorRef<'_>, dim: i64, index: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
    check_index_dtype(&index, "gather")?;
    let dim = wrap_dim(dim, self_.dim())?;
    shape_check(&self_, dim, &index, None)?;
    let dtype = dtype_of(&self_)?;
    if dtype_of(&out)? != dtype {
        return Err(Error::runtime(format!(
            "gather(): Expected self.dtype to be equal to out.dtype, but got {} and {}",
            dtype.name(),
            dtype_of(&out)?.name()
        )));
    }
    with_size(&out, index.sizes(), |o| {
        if index.numel() == 0 {
            return Ok(());
        }
        let (s, i, o) = (operand_1d(&self_)?, operand_1d(&index)?, operand_1d(o)?);
        let (sp, op) = (Ptr(s.data), Ptr(o.data));
        dispatch_all!(dtype, |T| along(&i, &s, Some(&o), dim, true, move |d, k| {
            // SAFETY: offsets from the operands' geometry, bounds checked by `along`.
            unsafe { *at::<T>(op.get(), k) = *at::<T>(sp.get(), d) }
        }))
    })
}

/// What a scatter writes: a tensor's elements or one value.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    Tensor(TensorRef<'a>),
    Value(Scalar),
}

/// Every scatter: `out = self` (a copy unless `out` is `self`), then `out[index] op= src`.
/// `include_self=false` first sets the scattered-to elements to the reduction's identity;
/// `mean` divides by the number of contributions (plus one with `include_self`).
pub fn scatter(
    self_: TensorRef<'_>,
    dim: i64,
    index: TensorRef<'_>,
    src: Source<'_>,
    reduce: Reduce,
    include_self: bool,
    out: TensorRef<'_>,
) -> Result<()> {
    check_index_dtype(&index, "scatter")?;
    let dim = wrap_dim(dim, self_.dim())?;
    let dtype = dtype_of(&self_)?;
    if let Source::Tensor(s) = src {
        if dtype_of(&s)? != dtype {
            return Err(Error::runtime(format!(
                "scatter(): Expected self.dtype to be equal to src.dtype, but got {} and {}",
                dtype.name(),
                dtype_of(&s)?.name()
            )));
        }
        shape_check(&self_, dim, &index, Some(&s))?;
    } else {
        shape_check(&self_, dim, &index, None)?;
    }
    if reduce.ordered() && dtype.is_complex() {
        return Err(Error::runtime(format!(
            "scatter(): reduction is not supported for complex dtype {}",
            dtype.name()
        )));
    }
    with_size(&out, self_.sizes(), |o| {
        copy::copy_(*o, self_)?;
        if index.numel() == 0 {
            return Ok(());
        }
        // Half types accumulate in f32 and round once per element, as ATen's CPU scatter does:
        // the scatter runs on an f32 copy laid out like `out` (same offsets), copied back after.
        let half = matches!(dtype, DType::F16 | DType::BF16);
        let wide = if half {
            Some(regen_runtime::host::empty_strided(o.sizes(), o.strides(), DType::F32.code())?)
        } else {
            None
        };
        let wide_src = match (half, src) {
            (true, Source::Tensor(s)) => converted(s, DType::F32)?,
            _ => None,
        };
        let target = wide.as_ref().map_or(*o, Tensor::as_ref);
        if half {
            copy::copy_(target, *o)?;
        }
        let src = match (&wide_src, src) {
            (Some(w), _) => Source::Tensor(w.as_ref()),
            (None, Source::Value(v)) if half => {
                // The value as the op's dtype first (`value.to<scalar_t>()`).
                let rounded = dispatch_all!(dtype, |T| T::from_num(Num::from_scalar(v)).to_num());
                Source::Value(match rounded {
                    Num::Float(f) => Scalar::Float(f),
                    _ => v,
                })
            }
            (None, other) => other,
        };
        let d = operand_1d(&target)?;
        let i = operand_1d(&index)?;
        let src_op = match src {
            Source::Tensor(s) => Some(operand_1d(&s)?),
            Source::Value(_) => None,
        };
        let counts: Mutex<std::collections::HashMap<isize, i64>> = Mutex::new(Default::default());
        // Positions outside `dim` write disjoint elements of a target without internal overlap,
        // and each position's indices stay in order on one thread: threads cannot change the
        // result (ATen's CPU scatter splits the same way). Mean counts through one map: serial.
        let src_op = src_op.as_ref();
        let parallel = reduce != Reduce::Mean && non_overlapping(&d) && src_op.is_none_or(|s| disjoint(s, &d));
        dispatch_all!(d.dtype, |T| {
            let value: T = match src {
                Source::Value(v) => T::from_num(Num::from_scalar(v)),
                Source::Tensor(_) => T::zero(),
            };
            if !include_self {
                let (dp, id) = (Ptr(d.data), reduce.identity::<T>());
                // SAFETY: offsets from the operands' geometry, bounds checked by `along`.
                along(&i, &d, src_op, dim, parallel, move |x, _| unsafe { *at::<T>(dp.get(), x) = id })?;
            }
            let mean = (&counts, include_self);
            match reduce {
                Reduce::Assign => scatter_loop::<T, false>(&i, &d, src_op, dim, parallel, value, |_, b| b, mean),
                Reduce::Add => scatter_loop::<T, false>(&i, &d, src_op, dim, parallel, value, T::add, mean),
                Reduce::Mul => scatter_loop::<T, false>(&i, &d, src_op, dim, parallel, value, T::mul, mean),
                Reduce::Max => scatter_loop::<T, false>(&i, &d, src_op, dim, parallel, value, T::max_nan, mean),
                Reduce::Min => scatter_loop::<T, false>(&i, &d, src_op, dim, parallel, value, T::min_nan, mean),
                Reduce::Mean => scatter_loop::<T, true>(&i, &d, src_op, dim, false, value, T::add, mean),
            }
        })?;
        if half {
            copy::copy_(*o, target)?;
        }
        // Mean divides the (rounded) sums afterwards, as ATen's `self.div_(count)`.
        let out_op = operand_1d(o)?;
        dispatch_all!(dtype, |T| for (x, n) in counts.into_inner().unwrap_or_else(|e| e.into_inner()) {
            // SAFETY: `x` was written above; `out` has the offsets of `target`.
            unsafe {
                let p = at::<T>(out_op.data, x);
                *p = (*p).div_count(n.max(1));
            }
        });
        Ok(())
    })
}

/// Every element of `src` (or `value` without it) combines into `d` at its index along `dim`
/// by `c` (picked outside the loop). `MEAN` counts the contributions per element in `mean`'s
/// map (starting from 1 with its `include_self`); without it the loop's closure stays small
/// enough to be inlined.
#[allow(clippy::too_many_arguments)]
fn scatter_loop<T: Arith, const MEAN: bool>(
    i: &Operand,
    d: &Operand,
    src: Option<&Operand>,
    dim: usize,
    parallel: bool,
    value: T,
    c: impl Fn(T, T) -> T + Sync + Copy,
    mean: (&Mutex<std::collections::HashMap<isize, i64>>, bool),
) -> Result<()> {
    let (dp, sp) = (Ptr(d.data), Ptr(src.map_or(std::ptr::null_mut(), |s| s.data)));
    along(i, d, src, dim, parallel, move |x, k| {
        // SAFETY: offsets from the operands' geometry, bounds checked by `along`.
        unsafe {
            let v = if sp.get().is_null() { value } else { *at::<T>(sp.get(), k) };
            let p = at::<T>(dp.get(), x);
            *p = c(*p, v);
        }
        if MEAN {
            let (counts, include_self) = mean;
            *counts.lock().unwrap_or_else(|e| e.into_inner()).entry(x).or_insert(i64::from(include_self)) += 1;
        }
    })
}

/// `scatter(..., reduce=)`'s legacy names.
pub fn legacy_reduce(reduce: &str) -> Result<Reduce> {
    match reduce {
        "add" => Ok(Reduce::Add),
        "multiply" => Ok(Reduce::Mul),
        _ => Err(Error::runtime("reduce argument must be either add or multiply.")),
    }
}

/// `scatter_reduce`'s names.
pub fn two_reduce(reduce: &str) -> Result<Reduce> {
    match reduce {
        "sum" => Ok(Reduce::Add),
        "prod" => Ok(Reduce::Mul),
        "mean" => Ok(Reduce::Mean),
        "amax" => Ok(Reduce::Max),
        "amin" => Ok(Reduce::Min),
        _ => Err(Error::runtime(format!("reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"))),
    }
}

// ---------------------------------------------------------------------------------------------
// The slice engine: index_select and the index_* family.

/// Reads a 0- or 1-d index along a dimension of size `bound`, checking it. `wrap` accepts
/// negative indices (index_fill_); `bad` builds the error for one value.
fn slice_indices(
    index: &TensorRef<'_>,
    op: &str,
    bound: i64,
    wrap: bool,
    bad: impl Fn(i64) -> Error,
) -> Result<Vec<i64>> {
    let d = dtype_of(index)?;
    if !is_index_dtype(d) {
        return Err(Error::runtime(format!("{op}(): Expected dtype int32 or int64 for index")));
    }
    if index.dim() > 1 {
        return Err(Error::index(format!("{op}(): Index is supposed to be a vector")));
    }
    let mut v = read_indices(&Operand::of(index)?);
    for i in &mut v {
        let w = if wrap && *i < 0 { *i + bound } else { *i };
        if !(0..bound).contains(&w) {
            return Err(bad(*i));
        }
        *i = w;
    }
    Ok(v)
}

/// For `pre x k x post` positions (the dims before `dim`, the index list, the dims after it),
/// calls `f(data_offset, other_offset, n, data_step, other_step)` for runs of `n` elements along
/// the last dimension, where `data` is addressed at `idx[k]` and `other` at `k` along `dim`.
/// Writes into `data` (`write`) keep the index order per element: the threads split the post
/// positions, never the index list.
#[allow(clippy::too_many_arguments)]
fn slices<F>(data: &Operand, other: Option<&Operand>, dim: usize, idx: &[i64], write: bool, f: F)
where
    F: Fn(isize, isize, usize, isize, isize) + Sync,
{
    let nd = data.sizes.len();
    let zeros = vec![0i64; nd];
    let (dsz, dst) = (&data.sizes[..], &data.strides[..]);
    let ost: &[i64] = other.map_or(&zeros, |o| &o.strides[..]);
    // The dims after `dim`, merged where both operands are contiguous across them (as ATen's
    // slice iterator coalesces), so a dense slice is one run: the runs' lengths decide where
    // CPU's vector body ends.
    let (mut psz, mut pd, mut po) = (dsz[dim + 1..].to_vec(), dst[dim + 1..].to_vec(), ost[dim + 1..].to_vec());
    let mut j = psz.len();
    while j >= 2 {
        if pd[j - 2] == psz[j - 1] * pd[j - 1] && po[j - 2] == psz[j - 1] * po[j - 1] {
            psz[j - 2] *= psz[j - 1];
            pd[j - 2] = pd[j - 1];
            po[j - 2] = po[j - 1];
            psz.remove(j - 1);
            pd.remove(j - 1);
            po.remove(j - 1);
        }
        j -= 1;
    }
    // The last dim runs inside `f`; when `dim` is the last one, runs have length 1.
    let (run, dstep, ostep, post_end) = match (psz.last(), pd.last(), po.last()) {
        (Some(&n), Some(&d), Some(&o)) => (n as usize, d as isize, o as isize, psz.len() - 1),
        _ => (1, 0, 0, 0),
    };
    let mut shape: Vec<i64> = dsz[..dim].to_vec();
    let mut sd: Vec<i64> = dst[..dim].to_vec();
    let mut so: Vec<i64> = ost[..dim].to_vec();
    let post_shape = &psz[..post_end];
    let (pd, po) = (&pd[..post_end], &po[..post_end]);
    let (ddim, odim) = (dst[dim] as isize, ost[dim] as isize);
    if run == 0 || idx.is_empty() || shape.contains(&0) || post_shape.contains(&0) {
        return;
    }
    if write {
        // Threads split pre x post positions; each walks the whole index list in order.
        shape.extend_from_slice(post_shape);
        sd.extend_from_slice(pd);
        so.extend_from_slice(po);
        walk(&shape, [&sd, &so], true, run * idx.len(), |[a, b]| {
            for (k, &i) in idx.iter().enumerate() {
                f(a + i as isize * ddim, b + k as isize * odim, run, dstep, ostep);
            }
        });
    } else {
        // Reads split anywhere: the index list is a dimension of the walk (pre x k x post).
        let kk = shape.len();
        shape.push(idx.len() as i64);
        sd.push(0);
        so.push(odim as i64);
        shape.extend_from_slice(post_shape);
        sd.extend_from_slice(pd);
        so.extend_from_slice(po);
        let mut sk = vec![0i64; shape.len()];
        sk[kk] = 1;
        walk(&shape, [&sd, &so, &sk], true, run, |[a, b, k]| {
            f(a + idx[k as usize] as isize * ddim, b, run, dstep, ostep);
        });
    }
}

/// Copies or combines a run of `n` elements.
///
/// # Safety
/// The runs are inside their tensors, and `src` is either `dst` itself (a fill or an in-place
/// scaling of the run) or does not overlap it.
#[inline(always)]
unsafe fn run_combine<T: Arith>(dst: *mut T, ds: isize, src: *const T, ss: isize, n: usize, op: impl Fn(T, T) -> T) {
    // SAFETY: per the contract.
    unsafe {
        if ds == 1 && ss == 1 && std::ptr::eq(dst.cast_const(), src) {
            // The same run: one `&mut` slice, no `&` to the same memory beside it.
            for x in std::slice::from_raw_parts_mut(dst, n) {
                *x = op(*x, *x);
            }
        } else if ds == 1 && ss == 1 {
            let (d, s) = (std::slice::from_raw_parts_mut(dst, n), std::slice::from_raw_parts(src, n));
            for (x, &y) in d.iter_mut().zip(s) {
                *x = op(*x, y);
            }
        } else {
            for j in 0..n as isize {
                let p = dst.offset(j * ds);
                *p = op(*p, *src.offset(j * ss));
            }
        }
    }
}

fn index_select_size(self_: &TensorRef<'_>, dim: usize, n: i64) -> Vec<i64> {
    let mut s = self_.sizes().to_vec();
    if !s.is_empty() {
        s[dim] = n;
    }
    s
}

/// `torch.index_select(self, dim, index, out=out)`.
pub fn index_select(self_: TensorRef<'_>, dim: i64, index: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
    let dim = wrap_dim(dim, self_.dim())?;
    let bound = self_.sizes().get(dim).copied().unwrap_or(1);
    let idx = slice_indices(&index, "index_select", bound, false, |_| Error::index("index out of range in self"))?;
    if self_.dim() == 0 && idx.len() != 1 {
        return Err(Error::index(format!(
            "index_select(): Index to scalar can have only 1 value, got {} value(s)",
            idx.len()
        )));
    }
    let dtype = dtype_of(&self_)?;
    if dtype_of(&out)? != dtype {
        return Err(Error::runtime(format!(
            "index_select(): self and result must have the same scalar type, got {} and {}",
            dtype.name(),
            dtype_of(&out)?.name()
        )));
    }
    with_size(&out, &index_select_size(&self_, dim, idx.len() as i64), |o| {
        let (s, o) = (operand_1d(&self_)?, operand_1d(o)?);
        dispatch_all!(dtype, |T| {
            let (sp, op) = (Ptr(s.data), Ptr(o.data));
            // SAFETY: runs from the operands' geometry, indices checked.
            slices(&s, Some(&o), dim, &idx, false, |a, b, n, sa, sb| unsafe {
                run_combine::<T>(at(op.get(), b), sb, at(sp.get(), a), sa, n, |_, y| y)
            });
            Ok(())
        })
    })
}

/// `index_select` returning a new tensor.
pub fn index_select_new(self_: TensorRef<'_>, dim: i64, index: TensorRef<'_>) -> Result<Tensor> {
    let out = new_tensor(&[0], dtype_of(&self_)?)?;
    index_select(self_, dim, index, out.as_ref())?;
    Ok(out)
}

/// Which of the ops [`index_combine`] runs: their checks and messages differ.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IndexOp {
    Add,
    Copy,
    /// `index_reduce` with its reduction (prod, mean, amax or amin).
    Reduce(Reduce),
}

impl IndexOp {
    fn name(self) -> &'static str {
        match self {
            IndexOp::Add => "index_add",
            IndexOp::Copy => "index_copy",
            IndexOp::Reduce(_) => "index_reduce",
        }
    }

    /// How a source element combines with the destination's.
    fn reduce(self) -> Reduce {
        match self {
            IndexOp::Add => Reduce::Add,
            IndexOp::Copy => Reduce::Assign,
            IndexOp::Reduce(r) => r,
        }
    }
}

/// `index_add`, `index_copy`, `index_reduce`: `out = self`, then slice `k` of `source` combines
/// into slice `index[k]` of `out`.
#[allow(clippy::too_many_arguments)]
pub fn index_combine(
    which: IndexOp,
    self_: TensorRef<'_>,
    dim: i64,
    index: TensorRef<'_>,
    source: TensorRef<'_>,
    alpha: Num,
    include_self: bool,
    out: TensorRef<'_>,
) -> Result<()> {
    let (op, reduce) = (which.name(), which.reduce());
    let dim = wrap_dim(dim, self_.dim())?;
    let dtype = dtype_of(&self_)?;
    if dtype_of(&source)? != dtype {
        return Err(Error::runtime(format!(
            "{op}(): self ({}) and source ({}) must have the same scalar type",
            dtype.name(),
            dtype_of(&source)?.name()
        )));
    }
    if reduce.ordered() && dtype.is_complex() {
        return Err(Error::runtime(format!("\"{op}\" not implemented for '{}'", dtype.name())));
    }
    let bound = self_.sizes().get(dim).copied().unwrap_or(1);
    let idx = slice_indices(&index, op, bound, false, |i| {
        let m = format!("index {i} is out of bounds for dimension {dim} with size {bound}");
        match which {
            IndexOp::Copy => Error::index(format!("index_copy_(): {m}")),
            IndexOp::Add => Error::runtime(m),
            IndexOp::Reduce(_) => Error::index(m),
        }
    })?;
    let ssize = source.sizes().get(dim).copied().unwrap_or(1);
    if ssize != idx.len() as i64 {
        return Err(Error::runtime(format!(
            "{op}_(): Number of indices ({}) should be equal to source.size(dim) ({ssize})",
            idx.len()
        )));
    }
    let (sd, od) = (self_.dim().max(1), source.dim().max(1));
    let shapes_ok = sd == od
        && (0..sd).all(|d| {
            d == dim || self_.sizes().get(d).copied().unwrap_or(1) == source.sizes().get(d).copied().unwrap_or(1)
        });
    // ATen's checks (index_copy's, and index_add's and index_reduce's meta function): the
    // slices are walked with the destination's sizes and the source's strides, so a source
    // slice of another shape, even of as many elements, would be read outside the source.
    if which == IndexOp::Copy && self_.dim() > 0 && source.dim() > 0 && self_.dim() != source.dim() {
        return Err(Error::index(format!(
            "index_copy_(): When source and destination are not scalars, their dimensionality must match. Source dimensionality ({}), destination dimensionality ({})",
            source.dim(),
            self_.dim()
        )));
    }
    if !shapes_ok {
        let spaced = |s: Vec<i64>| s.iter().map(i64::to_string).collect::<Vec<_>>().join(" ");
        return Err(Error::runtime(if which == IndexOp::Copy {
            format!(
                "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: {} at dimension {dim} and source slice shape: {} at dimension 0.",
                spaced(without(self_.sizes(), dim)),
                spaced(without(source.sizes(), dim)),
            )
        } else {
            format!(
                "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = {} source.shape = {}",
                fmt_sizes(self_.sizes()),
                fmt_sizes(source.sizes()),
            )
        }));
    }
    with_size(&out, self_.sizes(), |o| {
        copy::copy_(*o, self_)?;
        // ATen's index_add of a tensor of 2+ dims along its first or last dim, with alpha 1, an
        // int64 index and slices of one shape, is a scatter_add, which for half types sums in f32
        // and rounds once: do the same on f32 copies (same offsets), copied back after. Otherwise
        // CPU adds slice by slice, rounding each step.
        let ndim = self_.dim();
        let wide = reduce == Reduce::Add
            && matches!(dtype, DType::F16 | DType::BF16)
            && ndim > 1
            && (dim == 0 || dim == ndim - 1)
            && alpha.as_complex() == (1.0, 0.0)
            && dtype_of(&index)? == DType::I64;
        // Tensors of at most one dim take ATen's scalar loop, `self += source * alpha` in the
        // element type: the product rounds before the sum.
        let scalar_loop = ndim <= 1;
        let (wo, ws) = if wide {
            let t = regen_runtime::host::empty_strided(o.sizes(), o.strides(), DType::F32.code())?;
            copy::copy_(t.as_ref(), *o)?;
            (Some(t), converted(source, DType::F32)?)
        } else {
            (None, None)
        };
        let target = wo.as_ref().map_or(*o, Tensor::as_ref);
        let source = ws.as_ref().map_or(source, Tensor::as_ref);
        let (d, s) = (operand_1d(&target)?, operand_1d(&source)?);
        let (dp, sp) = (Ptr(d.data), Ptr(s.data));
        if wide {
            // SAFETY: as below; both operands are f32 here.
            slices(&d, Some(&s), dim, &idx, true, |a, b, n, sa, sb| unsafe {
                run_combine::<f32>(at(dp.get(), a), sa, at(sp.get(), b), sb, n, |x, y| x + y)
            });
            return copy::copy_(*o, target);
        }
        dispatch_all!(dtype, |T| {
            // SAFETY (all loops): runs from the operands' geometry, indices checked.
            if !include_self {
                // SAFETY: slices() walks d's own geometry with every idx[k] checked in 0..bound
                // (slice_indices), and this closure touches d only; with write = true each
                // thread owns its pre/post positions, so runs of different threads are disjoint.
                // dst and src are the same run, which run_combine allows.
                slices(&d, Some(&s), dim, &idx, true, |a, _, n, sa, _| unsafe {
                    run_combine::<T>(at(dp.get(), a), sa, at(dp.get(), a), sa, n, |_, _| reduce.identity::<T>())
                });
            }
            match reduce {
                Reduce::Add if scalar_loop => {
                    let alpha = T::from_num(alpha);
                    // SAFETY: d's run is at idx[k] (checked in 0..bound) through d's own strides;
                    // s's run is at k < ssize = idx.len() along dim, walked with d's sizes after
                    // dim and s's strides: inside s, whose slice shape equals d's (shapes_ok,
                    // checked above).
                    slices(&d, Some(&s), dim, &idx, true, |a, b, n, sa, sb| unsafe {
                        run_combine::<T>(at(dp.get(), a), sa, at(sp.get(), b), sb, n, |x, y| x.add(y.mul(alpha)))
                    })
                }
                // Slice by slice as ATen's `add_` kernel: the vector body of a dense run, then its
                // scalar tail (they round differently in half types).
                // SAFETY: as in the scalar loop: d's runs are checked, s's are inside s (the
                // slice shapes are equal, checked above).
                Reduce::Add => slices(&d, Some(&s), dim, &idx, true, |a, b, n, sa, sb| unsafe {
                    T::add_scaled_run(at(dp.get(), a), sa, at(sp.get(), b), sb, n, alpha)
                }),
                // SAFETY: as in the scalar loop: d's runs are checked, s's are inside s (the
                // slice shapes are equal, checked above).
                _ => slices(&d, Some(&s), dim, &idx, true, |a, b, n, sa, sb| unsafe {
                    run_combine::<T>(at(dp.get(), a), sa, at(sp.get(), b), sb, n, |x, y| reduce.apply(x, y))
                }),
            }
            if reduce == Reduce::Mean {
                // Counts per destination slice, as ATen's index_reduce divides.
                let mut counts = vec![i64::from(include_self); bound as usize];
                for &i in &idx {
                    counts[i as usize] += 1;
                }
                // Divide slice by slice (untouched slices keep their values).
                for (k, &c) in counts.iter().enumerate() {
                    if c > 1 || (c == 1 && !include_self) {
                        let one = [k as i64];
                        // SAFETY: slice k < bound of d (counts has bound entries), walked through
                        // d's own geometry; only d is touched, its post positions split across
                        // threads. dst and src are the same run, which
                        // run_combine allows.
                        slices(&d, None, dim, &one, true, |a, _, n, sa, _| unsafe {
                            run_combine::<T>(at(dp.get(), a), sa, at(dp.get(), a), sa, n, |x, _| x.div_count(c))
                        });
                    }
                }
            }
            Ok(())
        })
    })
}

/// `index_fill_(dim, index, value)`.
pub fn index_fill(self_: TensorRef<'_>, dim: i64, index: TensorRef<'_>, value: Num) -> Result<()> {
    let dim = wrap_dim(dim, self_.dim())?;
    let bound = self_.sizes().get(dim).copied().unwrap_or(1);
    let d = dtype_of(&index)?;
    if d != DType::I64 {
        return Err(Error::runtime("index_fill_(): Expected dtype int64 for index."));
    }
    let idx = slice_indices(&index, "index_fill_", bound, true, |i| {
        Error::index(format!("index {i} is out of bounds for dimension {dim} with size {bound}"))
    })?;
    let s = operand_1d(&self_)?;
    let dtype = s.dtype;
    let sp = Ptr(s.data);
    dispatch_all!(dtype, |T| {
        let v = T::from_num(value);
        // SAFETY: runs from the tensor's geometry, indices checked.
        slices(&s, None, dim, &idx, true, |a, _, n, sa, _| unsafe {
            run_combine::<T>(at(sp.get(), a), sa, at(sp.get(), a), sa, n, |_, _| v)
        });
    });
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// take / put_: flat (row-major) indices into any layout.

/// The element offset of row-major position `i` of a tensor.
#[inline]
fn flat_offset(sizes: &[i64], strides: &[i64], mut i: i64) -> isize {
    let mut off = 0isize;
    for d in (0..sizes.len()).rev() {
        let s = sizes[d].max(1);
        off += ((i % s) * strides[d]) as isize;
        i /= s;
    }
    off
}

fn take_bad(i: i64, n: i64) -> Error {
    Error::index(format!("out of range: tried to access index {i} on a tensor of {n} elements."))
}

/// `torch.take(self, index, out=out)`.
pub fn take(self_: TensorRef<'_>, index: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
    if dtype_of(&index)? != DType::I64 {
        return Err(Error::runtime(format!(
            "take(): Expected a long tensor for index, but got {}",
            dtype_of(&index)?.name()
        )));
    }
    let dtype = dtype_of(&self_)?;
    if dtype_of(&out)? != dtype {
        return Err(Error::runtime(format!(
            "take(): self and out expected to have the same dtype, but got self.dtype = {} and out.dtype = {}",
            dtype.name(),
            dtype_of(&out)?.name()
        )));
    }
    let n = self_.numel();
    if n == 0 && index.numel() != 0 {
        return Err(Error::index("take(): tried to take from an empty tensor"));
    }
    with_size(&out, index.sizes(), |o| {
        let (s, i, o) = (Operand::of(&self_)?, Operand::of(&index)?, Operand::of(o)?);
        let (sp, ip, op) = (Ptr(s.data), Ptr(i.data), Ptr(o.data));
        let contiguous = crate::engine::iter::is_contiguous(&s.sizes, &s.strides);
        let bad = FirstBad::new();
        dispatch_all!(dtype, |T| walk(&i.sizes, [&i.strides[..], &o.strides[..]], true, 1, |[a, b]| {
            // SAFETY: offsets from the operands' geometry; the index is checked.
            unsafe {
                let k = *at::<i64>(ip.get(), a);
                let w = if k < 0 { k + n } else { k };
                if !(0..n).contains(&w) {
                    return bad.set(k);
                }
                let off = if contiguous { w as isize } else { flat_offset(&s.sizes, &s.strides, w) };
                *at::<T>(op.get(), b) = *at::<T>(sp.get(), off);
            }
        }));
        bad.get().map_or(Ok(()), |k| Err(take_bad(k, n)))
    })
}

pub fn take_new(self_: TensorRef<'_>, index: TensorRef<'_>) -> Result<Tensor> {
    let out = new_tensor(index.sizes(), dtype_of(&self_)?)?;
    take(self_, index, out.as_ref())?;
    Ok(out)
}

/// `self.put_(index, source, accumulate)`: in index order on one thread.
pub fn put(self_: TensorRef<'_>, index: TensorRef<'_>, source: TensorRef<'_>, accumulate: bool) -> Result<()> {
    if dtype_of(&index)? != DType::I64 {
        return Err(Error::runtime(format!(
            "put_(): Expected a long tensor for index, but got {}",
            dtype_of(&index)?.name()
        )));
    }
    let dtype = dtype_of(&self_)?;
    if dtype_of(&source)? != dtype {
        return Err(Error::runtime(format!(
            "put_(): self and source expected to have the same dtype, but got self.dtype = {} and source.dtype = {}",
            dtype.name(),
            dtype_of(&source)?.name()
        )));
    }
    if index.numel() != source.numel() {
        return Err(Error::runtime(format!(
            "put_(): Expected source and index to have the same number of elements, but got source.numel() = {}, index.numel() = {}",
            source.numel(),
            index.numel()
        )));
    }
    let n = self_.numel();
    if n == 0 && index.numel() != 0 {
        return Err(Error::index("put_(): Tried to put elements into an empty tensor"));
    }
    let (s, i, src) = (Operand::of(&self_)?, Operand::of(&index)?, Operand::of(&source)?);
    let idx = read_indices(&i);
    let mut src_offsets = Vec::with_capacity(idx.len());
    for_each_offset(&src.sizes, [&src.strides[..]], |[o]| src_offsets.push(o));
    dispatch_all!(dtype, |T| {
        for (&k, &so) in idx.iter().zip(&src_offsets) {
            let w = if k < 0 { k + n } else { k };
            if !(0..n).contains(&w) {
                return Err(take_bad(k, n));
            }
            // SAFETY: offsets from the operands' geometry; the index is checked.
            unsafe {
                let p = at::<T>(s.data, flat_offset(&s.sizes, &s.strides, w));
                let v = *at::<T>(src.data, so);
                *p = if accumulate { (*p).add(v) } else { v };
            }
        }
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------------
// Data-dependent sizes: nonzero, masked_select, masked_scatter_.

/// Where the non-zero elements of a tensor are, found in two parallel passes as ATen's
/// `nonzero` does: each chunk of the row-major order counts its set elements, a prefix sum gives
/// each chunk its first rank, then each chunk emits its elements' coordinates at their ranks.
struct NonZero {
    /// Elements per chunk (the last chunk may be shorter).
    chunk: usize,
    /// The rank of each chunk's first set element, then the total.
    starts: Vec<usize>,
}

impl NonZero {
    fn plan(s: &Operand) -> NonZero {
        let numel = s.numel();
        let st = s.strides[s.sizes.len() - 1] as isize;
        let threads = regen_runtime::host::num_threads().max(1);
        // Several chunks per thread even out masks set in one region only.
        let chunk = numel.div_ceil(threads * 4).max(GRAIN);
        let chunks = numel.div_ceil(chunk);
        let counts: Vec<AtomicUsize> = (0..chunks).map(|_| AtomicUsize::new(0)).collect();
        regen_runtime::host::parallel_for(chunks, 1, |a, b| {
            for (c, count) in counts.iter().enumerate().take(b).skip(a) {
                let mut n = 0usize;
                dispatch_all!(s.dtype, |T| scan_rows(s, c * chunk, ((c + 1) * chunk).min(numel), |base, j0, j1, _| {
                    for j in j0..j1 {
                        // SAFETY: offsets from the tensor's geometry.
                        n += usize::from(unsafe { *at::<T>(s.data, base + j as isize * st) } != T::zero());
                    }
                }));
                count.store(n, Ordering::Relaxed);
            }
        });
        let mut starts = Vec::with_capacity(chunks + 1);
        let mut total = 0;
        for c in &counts {
            starts.push(total);
            total += c.load(Ordering::Relaxed);
        }
        starts.push(total);
        NonZero { chunk, starts }
    }

    fn count(&self) -> usize {
        *self.starts.last().expect("a total")
    }

    /// Calls `emit(rank, coords)` for every set element, chunks in parallel.
    fn emit<F: Fn(usize, &[i64]) + Sync>(&self, s: &Operand, emit: F) {
        let numel = s.numel();
        let chunks = self.starts.len() - 1;
        let last = s.sizes.len() - 1;
        let st = s.strides[last] as isize;
        regen_runtime::host::parallel_for(chunks, 1, |a, b| {
            // The set positions of a run, gathered without a branch per element (masks are
            // often random: a branch would mispredict half the time).
            let mut set = Vec::new();
            for c in a..b {
                let mut rank = self.starts[c];
                dispatch_all!(s.dtype, |T| scan_rows(
                    s,
                    c * self.chunk,
                    ((c + 1) * self.chunk).min(numel),
                    |base, j0, j1, coords| {
                        set.resize(j1 - j0 + 1, 0i64);
                        let mut k = 0;
                        for j in j0..j1 {
                            set[k] = j as i64;
                            // SAFETY: offsets from the tensor's geometry.
                            k += usize::from(unsafe { *at::<T>(s.data, base + j as isize * st) } != T::zero());
                        }
                        for &j in &set[..k] {
                            coords[last] = j;
                            emit(rank, coords);
                            rank += 1;
                        }
                    }
                ));
            }
        });
    }
}

/// Visits elements `start..end` (row-major) of a tensor of at least one dim a run of the last dim
/// at a time: `f(base, j0, j1, coords)` gets the run's row offset, its range along the last dim
/// and the row's coordinates (the last one free for `f` to fill).
fn scan_rows(s: &Operand, start: usize, end: usize, mut f: impl FnMut(isize, usize, usize, &mut [i64])) {
    let nd = s.sizes.len();
    let last = nd - 1;
    let n_last = s.sizes[last] as usize;
    let mut coords = vec![0i64; nd];
    let mut rem = start as i64;
    for d in (0..nd).rev() {
        coords[d] = rem % s.sizes[d];
        rem /= s.sizes[d];
    }
    let mut base: isize = (0..last).map(|d| (coords[d] * s.strides[d]) as isize).sum();
    let mut i = start;
    while i < end {
        let j0 = coords[last] as usize;
        let j1 = n_last.min(j0 + (end - i));
        f(base, j0, j1, &mut coords);
        i += j1 - j0;
        coords[last] = 0;
        for d in (0..last).rev() {
            coords[d] += 1;
            base += s.strides[d] as isize;
            if coords[d] < s.sizes[d] {
                break;
            }
            base -= (s.sizes[d] * s.strides[d]) as isize;
            coords[d] = 0;
        }
    }
}

/// `out` must be int64, as ATen's nonzero and nonzero_static check before anything else.
fn check_long_out(out: &TensorRef<'_>) -> Result<()> {
    let d = dtype_of(out)?;
    if d != DType::I64 {
        return Err(Error::runtime(format!(
            "nonzero: Expected out tensor to have scalar type Long but got scalar type{}",
            d.name()
        )));
    }
    Ok(())
}

/// Writes the coordinates of the first `rows` set elements of `s` (at least one dim) into `o`,
/// sized [rows, ndim], and `fill` into the rows past the count.
fn write_coords(plan: &NonZero, s: &Operand, o: &TensorRef<'_>, rows: usize, fill: i64) -> Result<()> {
    let o = Operand::of(o)?;
    let (op, rs, cs) = (Ptr(o.data), o.strides[0] as isize, o.strides[1] as isize);
    let put = |r: usize, d: usize, x: i64| {
        // SAFETY: (r, d) is inside `out`, sized [rows, ndim].
        unsafe { *at::<i64>(op.get(), r as isize * rs + d as isize * cs) = x }
    };
    plan.emit(s, |rank, c| {
        if rank < rows {
            c.iter().enumerate().for_each(|(d, &x)| put(rank, d, x));
        }
    });
    for r in plan.count()..rows {
        (0..s.sizes.len()).for_each(|d| put(r, d, fill));
    }
    Ok(())
}

pub fn nonzero_out(self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
    check_long_out(&out)?;
    let nd = self_.dim();
    if nd == 0 {
        return with_size(&out, &[i64::from(nonzero_scalar(&self_)?), 0], |_| Ok(()));
    }
    let s = Operand::of(&self_)?;
    let plan = NonZero::plan(&s);
    let n = plan.count();
    with_size(&out, &[n as i64, nd as i64], |o| write_coords(&plan, &s, o, n, 0))
}

fn nonzero_scalar(t: &TensorRef<'_>) -> Result<bool> {
    let s = Operand::of(t)?;
    // SAFETY: a zero-dim tensor has one element.
    Ok(dispatch_all!(s.dtype, |T| unsafe { *at::<T>(s.data, 0) } != T::zero()))
}

pub fn nonzero(self_: TensorRef<'_>) -> Result<Tensor> {
    let out = new_tensor(&[0, self_.dim() as i64], DType::I64)?;
    nonzero_out(self_, out.as_ref())?;
    Ok(out)
}

pub fn nonzero_static_out(self_: TensorRef<'_>, size: i64, fill_value: i64, out: TensorRef<'_>) -> Result<()> {
    if size < 0 {
        return Err(Error::runtime(format!("nonzero_static: 'size' must be an non-negative integer, but got {size}")));
    }
    check_long_out(&out)?;
    let nd = self_.dim();
    if nd == 0 {
        return with_size(&out, &[size, 0], |_| Ok(()));
    }
    let s = Operand::of(&self_)?;
    let plan = NonZero::plan(&s);
    with_size(&out, &[size, nd as i64], |o| write_coords(&plan, &s, o, size as usize, fill_value))
}

pub fn nonzero_static(self_: TensorRef<'_>, size: i64, fill_value: i64) -> Result<Tensor> {
    let out = new_tensor(&[size.max(0), self_.dim() as i64], DType::I64)?;
    nonzero_static_out(self_, size, fill_value, out.as_ref())?;
    Ok(out)
}

fn check_mask(mask: &TensorRef<'_>, op: &str) -> Result<()> {
    if !matches!(dtype_of(mask)?, DType::Bool | DType::U8) {
        return Err(Error::runtime(format!("{op}: expected BoolTensor for mask")));
    }
    Ok(())
}

/// The offsets (into `a` and the mask) of every broadcast position where the mask is set.
fn masked_positions(a: &Operand, mask: &Operand, shape: &[i64]) -> Vec<isize> {
    let sa = broadcast_strides(a, shape);
    let sm = broadcast_strides(mask, shape);
    let mut out = Vec::new();
    // SAFETY: offsets from the operands' broadcast geometry; masks are one byte.
    for_each_offset(shape, [&sa, &sm], |[x, m]| {
        // SAFETY: shape is the broadcast of self's and the mask's shapes (the callers'
        // broadcast_shapes), so m is an element of the live mask; check_mask made it Bool or
        // U8, one byte.
        if unsafe { *mask.data.offset(m) } != 0 {
            out.push(x);
        }
    });
    out
}

fn broadcast_strides(o: &Operand, shape: &[i64]) -> Vec<i64> {
    let lead = shape.len() - o.sizes.len();
    (0..shape.len())
        .map(|d| if d < lead || o.sizes[d - lead] == 1 && shape[d] != 1 { 0 } else { o.strides[d - lead] })
        .collect()
}

pub fn masked_select_out(self_: TensorRef<'_>, mask: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
    check_mask(&mask, "masked_select")?;
    let shape = regen_runtime::view::broadcast_shapes(&[self_.sizes(), mask.sizes()])?;
    let (s, m) = (Operand::of(&self_)?, Operand::of(&mask)?);
    let pos = masked_positions(&s, &m, &shape);
    let dtype = s.dtype;
    if dtype_of(&out)? != dtype {
        return Err(Error::runtime(format!(
            "masked_select(): self and result must have the same scalar type, got {} and {}",
            dtype.name(),
            dtype_of(&out)?.name()
        )));
    }
    with_size(&out, &[pos.len() as i64], |o| {
        let o = Operand::of(o)?;
        let step = o.strides[0] as isize;
        dispatch_all!(dtype, |T| for (k, &p) in pos.iter().enumerate() {
            // SAFETY: `k` is inside `out`, `p` inside `self`.
            unsafe { *at::<T>(o.data, k as isize * step) = *at::<T>(s.data, p) };
        });
        Ok(())
    })
}

pub fn masked_select(self_: TensorRef<'_>, mask: TensorRef<'_>) -> Result<Tensor> {
    let out = new_tensor(&[0], dtype_of(&self_)?)?;
    masked_select_out(self_, mask, out.as_ref())?;
    Ok(out)
}

pub fn masked_scatter(self_: TensorRef<'_>, mask: TensorRef<'_>, source: TensorRef<'_>) -> Result<()> {
    check_mask(&mask, "masked_scatter_")?;
    let dtype = dtype_of(&self_)?;
    if dtype_of(&source)? != dtype {
        return Err(Error::runtime(format!(
            "masked_scatter_: expected self and source to have same dtypes but got {} and {}",
            dtype.name(),
            dtype_of(&source)?.name()
        )));
    }
    let shape = regen_runtime::view::broadcast_shapes(&[self_.sizes(), mask.sizes()])?;
    if shape.as_slice() != self_.sizes() {
        return Err(Error::runtime(format!(
            "masked_scatter_: mask of shape {} cannot be broadcast to self of shape {}",
            fmt_sizes(mask.sizes()),
            fmt_sizes(self_.sizes())
        )));
    }
    let (s, m, src) = (Operand::of(&self_)?, Operand::of(&mask)?, Operand::of(&source)?);
    let pos = masked_positions(&s, &m, &shape);
    if pos.len() > src.numel() {
        return Err(Error::runtime("Number of elements of source < number of ones in mask"));
    }
    let mut src_offsets = Vec::with_capacity(pos.len());
    for_each_offset(&src.sizes, [&src.strides[..]], |[o]| {
        if src_offsets.len() < pos.len() {
            src_offsets.push(o)
        }
    });
    dispatch_all!(dtype, |T| for (&p, &q) in pos.iter().zip(&src_offsets) {
        // SAFETY: offsets inside their tensors.
        unsafe { *at::<T>(s.data, p) = *at::<T>(src.data, q) };
    });
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Advanced indexing: `self[indices]` and `self[indices] = values`.

/// The geometry of an advanced indexing: the result's shape, `self`'s strides in it (0 on the
/// broadcast index dims), and per position of the broadcast index shape the offset it adds.
struct Advanced {
    shape: Vec<i64>,
    self_strides: Vec<i64>,
    /// Row-major position in the broadcast index shape, per result dim (0 elsewhere).
    pos_strides: Vec<i64>,
    offsets: Vec<isize>,
}

fn advanced(self_: &TensorRef<'_>, indices: OptionalTensorList<'_>) -> Result<Advanced> {
    let (sizes, strides) = (self_.sizes(), self_.strides());
    let longs = index_entries(self_, indices)?;
    let nself = sizes.len();
    if longs.len() > nself {
        return Err(Error::index(format!("too many indices for tensor of dimension {nself}")));
    }
    let bshape = {
        let shapes: Vec<&[i64]> = longs.iter().flatten().map(|(s, _)| s.as_slice()).collect();
        regen_runtime::view::broadcast_shapes(&shapes).map_err(|e| {
            Error::index(format!(
                "shape mismatch: indexing tensors could not be broadcast together with shapes {}",
                longs.iter().flatten().map(|(s, _)| fmt_sizes(s)).collect::<Vec<_>>().join(", ")
            ))
            .in_op(e.message())
        })?
    };
    let adv: Vec<usize> = (0..longs.len()).filter(|&k| longs[k].is_some()).collect();
    let adjacent = adv.windows(2).all(|w| w[1] == w[0] + 1);
    let first = if adjacent { adv[0] } else { 0 };
    // Result dims: the regular dims before `first`, the broadcast dims, the other regular dims.
    let regular: Vec<usize> = (0..nself).filter(|d| !adv.contains(d)).collect();
    let (mut shape, mut self_strides) = (Vec::new(), Vec::new());
    let before: Vec<usize> = regular.iter().copied().filter(|&d| d < first).collect();
    let after: Vec<usize> = regular.iter().copied().filter(|&d| d >= first).collect();
    for &d in &before {
        shape.push(sizes[d]);
        self_strides.push(strides[d]);
    }
    let b0 = shape.len();
    shape.extend_from_slice(&bshape);
    self_strides.extend(std::iter::repeat_n(0, bshape.len()));
    for &d in &after {
        shape.push(sizes[d]);
        self_strides.push(strides[d]);
    }
    let bstrides = contiguous_strides(&bshape);
    let mut pos_strides = vec![0i64; shape.len()];
    pos_strides[b0..b0 + bshape.len()].copy_from_slice(&bstrides);
    let offsets = position_offsets(self_, &longs, &adv, &bshape)?;
    Ok(Advanced { shape, self_strides, pos_strides, offsets })
}

/// The offset each position of the broadcast index shape `bshape` adds to self: the sum over
/// the advanced entries `adv` of `longs`, with ATen's error for an index out of bounds.
fn position_offsets(self_: &TensorRef<'_>, longs: &[Entry], adv: &[usize], bshape: &[i64]) -> Result<Vec<isize>> {
    let (sizes, strides) = (self_.sizes(), self_.strides());
    let bn: i64 = bshape.iter().product();
    let mut offsets = vec![0isize; bn as usize];
    for (ordinal, &k) in adv.iter().enumerate() {
        let (ishape, idx) = longs[k].as_ref().expect("advanced");
        let t = match idx {
            Idx::Tensor(t) => t,
            Idx::Covered => continue,
            Idx::Offsets(o) if o.len() == offsets.len() => {
                // The mask is the only index shape: its offsets are the positions' own.
                offsets.iter_mut().zip(o).for_each(|(p, &x)| *p += x);
                continue;
            }
            Idx::Offsets(o) => {
                let bs = broadcast_of(ishape, bshape);
                let mut p = 0usize;
                for_each_offset(bshape, [&bs], |[x]| {
                    offsets[p] += o[x as usize];
                    p += 1;
                });
                continue;
            }
        };
        // One pass per index tensor, read in place through its own (broadcast) strides and
        // split across threads: each position's offset is written by one thread.
        let (bs, pos) = (broadcast_strides(t, bshape), contiguous_strides(bshape));
        let (size, stride, out) = (sizes[k], strides[k] as isize, Ptr(offsets.as_mut_ptr().cast()));
        let bad = FirstBad::new();
        let add = |i: i64, p: isize| {
            let w = if i < 0 { i + size } else { i };
            if (0..size).contains(&w) {
                // SAFETY: `p` is a position of the broadcast shape, visited once.
                unsafe { *out.get().cast::<isize>().offset(p) += w as isize * stride }
            } else {
                bad.set(i);
            }
        };
        // SAFETY: offsets from the index tensor's geometry.
        match t.dtype {
            DType::I32 => {
                // SAFETY: bshape is the broadcast of every index shape, t's among them, so o (from
                // t's broadcast strides) is an element of the live index tensor t, int32 here.
                walk(bshape, [&bs, &pos], true, 1, |[o, p]| add(i64::from(unsafe { *at::<i32>(t.data, o) }), p))
            }
            // SAFETY: o is an element of t as above; Idx::Tensor holds only int32 or int64 index
            // tensors, so int64 in this arm.
            _ => walk(bshape, [&bs, &pos], true, 1, |[o, p]| add(unsafe { *at::<i64>(t.data, o) }, p)),
        }
        if bad.get().is_some() {
            // ATen reports the first bad index in row-major order and counts the dimension
            // among the index tensors, not among self's dims.
            let i = read_indices(t).into_iter().find(|&i| !(-size..size).contains(&i)).unwrap_or(size);
            return Err(Error::index(format!("index {i} is out of bounds for dimension {ordinal} with size {size}")));
        }
    }
    Ok(offsets)
}

/// Each entry of the index list as (index shape, what it adds), `None` for a `:`: a long or int
/// tensor as it is; a bool or byte mask over dims k..k+m stands for m long indices (its
/// nonzero() columns), kept as the offsets its set elements add to self, computed in one parallel
/// pass, followed by m - 1 entries it covers.
fn index_entries(self_: &TensorRef<'_>, indices: OptionalTensorList<'_>) -> Result<Vec<Entry>> {
    let (sizes, strides) = (self_.sizes(), self_.strides());
    let mut longs: Vec<Entry> = Vec::new();
    for t in indices.iter() {
        let Some(t) = t else {
            longs.push(None);
            continue;
        };
        let d = dtype_of(&t)?;
        match d {
            DType::Bool | DType::U8 => {
                let k = longs.len();
                for (j, &m) in t.sizes().iter().enumerate() {
                    if k + j >= sizes.len() || sizes[k + j] != m {
                        return Err(Error::index(format!(
                            "The shape of the mask {} at index {j} does not match the shape of the indexed tensor {} at index {}",
                            fmt_sizes(t.sizes()),
                            fmt_sizes(sizes),
                            k + j
                        )));
                    }
                }
                let nd = t.dim();
                if nd == 0 {
                    // A zero-dim mask adds a dim of size 1 or 0 and indexes nothing (marked by a
                    // negative size, refused below).
                    let set = nonzero_scalar(&t)?;
                    longs.push(Some((vec![-1 - i64::from(set)], Idx::Covered)));
                    continue;
                }
                let m = Operand::of(&t)?;
                let plan = NonZero::plan(&m);
                let n = plan.count();
                let mut offs = vec![0isize; n];
                let (out, st) = (Ptr(offs.as_mut_ptr().cast()), &strides[k..k + nd]);
                plan.emit(&m, |rank, c| {
                    let o: i64 = c.iter().zip(st).map(|(&x, &s)| x * s).sum();
                    // SAFETY: ranks are distinct and below the count.
                    unsafe { *out.get().cast::<isize>().add(rank) = o as isize }
                });
                longs.push(Some((vec![n as i64], Idx::Offsets(offs))));
                for _ in 1..nd {
                    longs.push(Some((vec![n as i64], Idx::Covered)));
                }
            }
            DType::I64 | DType::I32 => longs.push(Some((t.sizes().to_vec(), Idx::Tensor(Operand::of(&t)?)))),
            _ => return Err(Error::index("tensors used as indices must be long, int, byte or bool tensors")),
        }
    }
    // Zero-dim bool masks: ATen handles them by unsqueezing self; this kernel refuses them
    // (not implemented) rather than index wrongly.
    if longs.iter().flatten().any(|(s, _)| s.first().is_some_and(|&x| x < 0)) {
        return Err(Error::not_implemented("indexing with a zero-dim bool mask"));
    }
    Ok(longs)
}

/// One entry of the index list: `None` for `:`, else its index shape and what it adds.
type Entry = Option<(Vec<i64>, Idx)>;

/// What one entry of the index list contributes along its dim.
enum Idx {
    /// A long or int index tensor, its values checked when used.
    Tensor(Operand),
    /// A mask's set positions as offsets into self (in range by construction).
    Offsets(Vec<isize>),
    /// A dim of a mask whose first dim carries the offsets.
    Covered,
}

/// The contiguous strides of an index of shape `ishape` broadcast to `bshape` (0 where it is
/// broadcast).
fn broadcast_of(ishape: &[i64], bshape: &[i64]) -> Vec<i64> {
    let lead = bshape.len() - ishape.len();
    let istr = contiguous_strides(ishape);
    (0..bshape.len()).map(|d| if d < lead || ishape[d - lead] == 1 { 0 } else { istr[d - lead] }).collect()
}

/// `torch.ops.aten.index.Tensor_out(self, indices, out=out)`.
pub fn index_out(self_: TensorRef<'_>, indices: OptionalTensorList<'_>, out: TensorRef<'_>) -> Result<()> {
    let a = advanced(&self_, indices)?;
    let dtype = dtype_of(&self_)?;
    if dtype_of(&out)? != dtype {
        return Err(Error::runtime(format!(
            "index_out: self ({}) and result ({}) must have the same scalar type",
            dtype.name(),
            dtype_of(&out)?.name()
        )));
    }
    with_size(&out, &a.shape, |o| {
        let o = Operand::of(o)?;
        let (sp, op) = (Ptr(self_.data_ptr().cast()), Ptr(o.data));
        let offs = &a.offsets;
        let last = a.shape.len().wrapping_sub(1);
        if !a.shape.is_empty() && a.pos_strides[last] == 0 && a.self_strides[last] == 1 && o.strides[last] == 1 {
            // Rows of self's trailing dims (x[idx] on a matrix): one memcpy per row.
            let (row, esize) = (a.shape[last] as usize, dtype.size() as isize);
            let (lead, ostr) = (&a.shape[..last], &o.strides[..last]);
            walk(lead, [ostr, &a.self_strides[..last], &a.pos_strides[..last]], true, row, |[x, s, p]| {
                // SAFETY: rows inside both tensors (`copy`: an out= may alias self).
                unsafe {
                    std::ptr::copy(
                        sp.get().offset((s + offs[p as usize]) * esize),
                        op.get().offset(x * esize),
                        row * esize as usize,
                    )
                }
            });
            return Ok(());
        }
        dispatch_all!(dtype, |T| walk(
            &a.shape,
            [&o.strides[..], &a.self_strides, &a.pos_strides],
            true,
            1,
            |[x, s, p]| {
                // SAFETY: offsets from the geometry, indices checked.
                unsafe { *at::<T>(op.get(), x) = *at::<T>(sp.get(), s + offs[p as usize]) }
            }
        ));
        Ok(())
    })
}

/// `self[indices] = values` (`accumulate`: `+=`), in row-major order on one thread.
pub fn index_put(
    self_: TensorRef<'_>,
    indices: OptionalTensorList<'_>,
    values: TensorRef<'_>,
    accumulate: bool,
) -> Result<()> {
    let dtype = dtype_of(&self_)?;
    if dtype_of(&values)? != dtype {
        return Err(Error::runtime(format!(
            "Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.",
            dtype.name(),
            dtype_of(&values)?.name()
        )));
    }
    let a = advanced(&self_, indices)?;
    let v = Operand::of(&values)?;
    if regen_runtime::view::broadcast_shapes(&[&a.shape, &v.sizes]).map_or(true, |s| s != a.shape) {
        return Err(Error::runtime(format!(
            "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
            fmt_sizes(&v.sizes),
            fmt_sizes(&a.shape)
        )));
    }
    let vs = broadcast_strides(&v, &a.shape);
    let sp: *mut u8 = self_.data_ptr().cast();
    dispatch_all!(dtype, |T| for_each_offset(&a.shape, [&vs, &a.self_strides, &a.pos_strides], |[x, s, p]| {
        // SAFETY: offsets from the geometry, indices checked.
        unsafe {
            let d = at::<T>(sp, s + a.offsets[p as usize]);
            let y = *at::<T>(v.data, x);
            *d = if accumulate { (*d).add(y) } else { y };
        }
    }));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// searchsorted / bucketize.

/// `torch.searchsorted(sorted_sequence, values, ...)` into `out` (int64, or int32 with `out_int32`).
#[allow(clippy::too_many_arguments)]
pub fn searchsorted(
    seq: TensorRef<'_>,
    values: TensorRef<'_>,
    out_int32: bool,
    right: bool,
    side: Option<&str>,
    sorter: Option<TensorRef<'_>>,
    out: TensorRef<'_>,
) -> Result<()> {
    let right = match side {
        None => right,
        Some("right") => true,
        Some("left") if right => {
            return Err(Error::runtime(
                "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True",
            ));
        }
        Some("left") => false,
        Some(other) => {
            return Err(Error::runtime(format!(
                "torch.searchsorted(): side can only be 'left' or 'right' but got side of {other}"
            )));
        }
    };
    let (ss, vs) = (seq.sizes(), values.sizes());
    if ss.is_empty() {
        return Err(Error::runtime(
            "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension",
        ));
    }
    if ss.len() != 1 && (ss.len() != vs.len() || ss[..ss.len() - 1] != vs[..vs.len() - 1]) {
        return Err(Error::runtime(format!(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor {} and input value tensor {}",
            fmt_sizes(ss),
            fmt_sizes(vs)
        )));
    }
    if let Some(s) = sorter {
        if dtype_of(&s)? != DType::I64 {
            return Err(Error::runtime(format!(
                "torch.searchsorted(): sorter must be a tensor of long dtype but got dtype {}",
                dtype_of(&s)?.name()
            )));
        }
        if s.sizes() != ss {
            return Err(Error::runtime(format!(
                "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor {} and got sorter tensor {}",
                fmt_sizes(ss),
                fmt_sizes(s.sizes())
            )));
        }
    }
    let want = if out_int32 { DType::I32 } else { DType::I64 };
    if dtype_of(&out)? != want {
        return Err(Error::runtime(format!(
            "torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) depending on whether out_int32 flag is True, but we got output tensor's dtype {} and out_int32 flag is {}",
            dtype_of(&out)?.name(),
            if out_int32 { "True" } else { "False" }
        )));
    }
    // Compare in the common dtype, as ATen converts both.
    let op = |t: &TensorRef<'_>| -> Result<PromotionOperand> {
        Ok(PromotionOperand { dtype: dtype_of(t)?, dim: t.dim(), wrapped_number: t.is_wrapped_number() })
    };
    let common = result_type(&[op(&seq)?, op(&values)?]).unwrap_or(DType::F32);
    if matches!(common, DType::Bool) || common.is_complex() {
        return Err(Error::runtime(format!("\"searchsorted_out_cpu\" not implemented for '{}'", common.name())));
    }
    let (cs, cv) = (converted(seq, common)?, converted(values, common)?);
    let (seq, values) = (cs.as_ref().map_or(seq, Tensor::as_ref), cv.as_ref().map_or(values, Tensor::as_ref));
    let sorted: Vec<i64> = match sorter {
        Some(s) => read_indices(&Operand::of(&s)?),
        None => Vec::new(),
    };
    with_size(&out, vs, |o| {
        let (b, v, o) = (Operand::of(&seq)?, Operand::of(&values)?, Operand::of(o)?);
        let len = *ss.last().expect("dim") as usize;
        let bstep = *b.strides.last().expect("dim") as isize;
        let rows = b.numel() / len.max(1);
        // Row offsets of the boundaries and sorter, row-major.
        let mut brow = Vec::with_capacity(rows);
        let lead = &b.sizes[..b.sizes.len() - 1];
        for_each_offset(lead, [&b.strides[..b.strides.len() - 1]], |[r]| brow.push(r));
        let vlen = vs.last().copied().unwrap_or(1).max(1) as usize;
        let mut k = 0usize;
        let sorted = &sorted;
        let nd = b.sizes.len();
        crate::dispatch!(common, [U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| for_each_offset(
            &v.sizes,
            [&v.strides[..], &o.strides[..]],
            |[x, y]| {
                let row = if nd == 1 { 0 } else { k / vlen };
                k += 1;
                // SAFETY: offsets from the operands' geometry.
                unsafe {
                    let val = *at::<T>(v.data, x);
                    let base = brow[row];
                    let get = |m: usize| {
                        let j = if sorted.is_empty() { m as isize } else { sorted[row * len + m] as isize };
                        *at::<T>(b.data, base + j * bstep)
                    };
                    let (mut lo, mut hi) = (0usize, len);
                    while lo < hi {
                        let mid = lo + (hi - lo) / 2;
                        let m = get(mid);
                        // ATen's `!(mid > val)` / `!(mid >= val)`: NaN goes right.
                        let go_right = match m.partial_cmp(&val) {
                            Some(std::cmp::Ordering::Greater) => false,
                            Some(std::cmp::Ordering::Equal) => right,
                            _ => true,
                        };
                        if go_right { lo = mid + 1 } else { hi = mid }
                    }
                    if out_int32 { *at::<i32>(o.data, y) = lo as i32 } else { *at::<i64>(o.data, y) = lo as i64 }
                }
            }
        ), else unreachable!());
        Ok(())
    })
}

/// A Scalar as a zero-dim tensor of its wrapped dtype, for the Scalar overloads.
pub fn scalar_tensor(s: Scalar, like: DType) -> Result<Tensor> {
    let dtype = match s {
        Scalar::Bool(_) => DType::Bool,
        Scalar::Int(_) => {
            if like.is_floating() {
                like
            } else {
                DType::I64
            }
        }
        Scalar::Float(_) => {
            if like.is_floating() {
                like
            } else {
                DType::DEFAULT_FLOAT
            }
        }
        Scalar::Complex(..) => DType::C64,
    };
    let t = new_tensor(&[], dtype)?;
    let o = Operand::of(&t.as_ref())?;
    dispatch_all!(dtype, |T| {
        // SAFETY: a new zero-dim tensor has one element.
        unsafe { *at::<T>(o.data, 0) = T::from_num(Num::from_scalar(s)) };
    });
    Ok(t)
}

/// `torch.isin(elements, test_elements, invert=)` into a bool `out` of `elements`' shape, in the
/// common dtype of both (as ATen converts them): a sorted copy of the test elements searched per
/// element (a linear scan for complex numbers, which have no order). NaN is in nothing.
pub fn isin(elements: TensorRef<'_>, test: TensorRef<'_>, invert: bool, out: TensorRef<'_>) -> Result<()> {
    let op = |t: &TensorRef<'_>| -> Result<PromotionOperand> {
        Ok(PromotionOperand { dtype: dtype_of(t)?, dim: t.dim(), wrapped_number: t.is_wrapped_number() })
    };
    let common = result_type(&[op(&elements)?, op(&test)?]).unwrap_or(DType::F32);
    if dtype_of(&out)? != DType::Bool {
        return Err(Error::runtime(format!(
            "isin: Expected out tensor to have dtype Bool, but got {}",
            dtype_of(&out)?.name()
        )));
    }
    let (ce, ct) = (converted(elements, common)?, converted(test, common)?);
    let (elements, test) = (ce.as_ref().map_or(elements, Tensor::as_ref), ct.as_ref().map_or(test, Tensor::as_ref));
    with_size(&out, elements.sizes(), |o| {
        let (e, t, o) = (Operand::of(&elements)?, Operand::of(&test)?, Operand::of(o)?);
        dispatch_all!(common, |T| {
            let mut values: Vec<T> = Vec::new();
            // SAFETY: offsets from the tensor's geometry.
            for_each_offset(&t.sizes, [&t.strides[..]], |[x]| values.push(unsafe { *at::<T>(t.data, x) }));
            let ordered = !common.is_complex();
            if ordered {
                values.retain(not_nan);
                values.sort_by(partial_order);
            }
            let (ep, op) = (Ptr(e.data), Ptr(o.data));
            let values = &values;
            walk(&e.sizes, [&e.strides[..], &o.strides[..]], true, 16, |[x, y]| {
                // SAFETY: offsets from the operands' geometry; `out` is Bool.
                unsafe {
                    let v = *at::<T>(ep.get(), x);
                    let found = if ordered {
                        values.binary_search_by(|w| partial_order(w, &v)).is_ok() && not_nan(&v)
                    } else {
                        values.contains(&v)
                    };
                    *at::<bool>(op.get(), y) = found != invert;
                }
            });
        });
        Ok(())
    })
}

/// `v == v`: false for NaN (and complex numbers with a NaN part).
#[allow(clippy::eq_op)]
fn not_nan<T: PartialEq>(v: &T) -> bool {
    v == v
}

/// A total order for values without NaN (complex numbers compare equal: never sorted).
fn partial_order<T: Element>(a: &T, b: &T) -> std::cmp::Ordering {
    a.to_num().partial_cmp_num(&b.to_num())
}

trait NumOrder {
    fn partial_cmp_num(&self, other: &Self) -> std::cmp::Ordering;
}

impl NumOrder for Num {
    fn partial_cmp_num(&self, other: &Num) -> std::cmp::Ordering {
        use std::cmp::Ordering::Equal;
        match (*self, *other) {
            (Num::Int(a), Num::Int(b)) => a.cmp(&b),
            (Num::Bool(a), Num::Bool(b)) => a.cmp(&b),
            (a, b) => a.as_f64().partial_cmp(&b.as_f64()).unwrap_or(Equal),
        }
    }
}

/// This family's kernels: group `index` of regen.toml's `[implement]`.
impl crate::IndexKernels for crate::Reference {
    fn index_select_out(&self, s: TensorRef<'_>, dim: i64, index: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        index_select(s, dim, index, out)
    }
    fn index_select(&self, s: TensorRef<'_>, dim: i64, index: TensorRef<'_>) -> Result<Tensor> {
        index_select_new(s, dim, index)
    }
    fn gather_out(
        &self,
        s: TensorRef<'_>,
        dim: i64,
        index: TensorRef<'_>,
        _sparse: bool,
        out: TensorRef<'_>,
    ) -> Result<()> {
        gather(s, dim, index, out)
    }
    fn scatter_src_out(
        &self,
        s: TensorRef<'_>,
        dim: i64,
        index: TensorRef<'_>,
        src: TensorRef<'_>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::ops::index as ix;
        ix::scatter(s, dim, index, ix::Source::Tensor(src), ix::Reduce::Assign, true, out)
    }
    fn scatter_value_out(
        &self,
        s: TensorRef<'_>,
        dim: i64,
        index: TensorRef<'_>,
        v: Scalar,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::ops::index as ix;
        ix::scatter(s, dim, index, ix::Source::Value(v), ix::Reduce::Assign, true, out)
    }
    fn scatter_reduce_out(
        &self,
        s: TensorRef<'_>,
        dim: i64,
        index: TensorRef<'_>,
        src: TensorRef<'_>,
        reduce: &str,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::ops::index as ix;
        ix::scatter(s, dim, index, ix::Source::Tensor(src), ix::legacy_reduce(reduce)?, true, out)
    }
    fn scatter_value_reduce_out(
        &self,
        s: TensorRef<'_>,
        dim: i64,
        index: TensorRef<'_>,
        v: Scalar,
        reduce: &str,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::ops::index as ix;
        ix::scatter(s, dim, index, ix::Source::Value(v), ix::legacy_reduce(reduce)?, true, out)
    }
    fn scatter_add_out(
        &self,
        s: TensorRef<'_>,
        dim: i64,
        index: TensorRef<'_>,
        src: TensorRef<'_>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::ops::index as ix;
        ix::scatter(s, dim, index, ix::Source::Tensor(src), ix::Reduce::Add, true, out)
    }
    fn scatter_reduce_two_out(
        &self,
        s: TensorRef<'_>,
        dim: i64,
        index: TensorRef<'_>,
        src: TensorRef<'_>,
        reduce: &str,
        include_self: bool,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::ops::index as ix;
        ix::scatter(s, dim, index, ix::Source::Tensor(src), ix::two_reduce(reduce)?, include_self, out)
    }
    fn index_add_out(
        &self,
        s: TensorRef<'_>,
        dim: i64,
        index: TensorRef<'_>,
        source: TensorRef<'_>,
        alpha: Scalar,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::ops::index as ix;
        let alpha = crate::engine::dtype::Num::from_scalar(alpha);
        ix::index_combine(ix::IndexOp::Add, s, dim, index, source, alpha, true, out)
    }
    fn index_copy_out(
        &self,
        s: TensorRef<'_>,
        dim: i64,
        index: TensorRef<'_>,
        source: TensorRef<'_>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::ops::index as ix;
        let one = crate::engine::dtype::Num::Int(1);
        ix::index_combine(ix::IndexOp::Copy, s, dim, index, source, one, true, out)
    }
    fn index_reduce_out(
        &self,
        s: TensorRef<'_>,
        dim: i64,
        index: TensorRef<'_>,
        source: TensorRef<'_>,
        reduce: &str,
        include_self: bool,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::ops::index as ix;
        let r = match reduce {
            "prod" => ix::Reduce::Mul,
            "mean" => ix::Reduce::Mean,
            "amax" => ix::Reduce::Max,
            "amin" => ix::Reduce::Min,
            _ => {
                return Err(Error::runtime(format!(
                    "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}."
                )));
            }
        };
        let one = crate::engine::dtype::Num::Int(1);
        ix::index_combine(ix::IndexOp::Reduce(r), s, dim, index, source, one, include_self, out)
    }
    fn index_fill_inplace_int_scalar(&self, s: TensorRef<'_>, dim: i64, index: TensorRef<'_>, v: Scalar) -> Result<()> {
        index_fill(s, dim, index, crate::engine::dtype::Num::from_scalar(v))
    }
    fn index_fill_inplace_int_tensor(
        &self,
        s: TensorRef<'_>,
        dim: i64,
        index: TensorRef<'_>,
        v: TensorRef<'_>,
    ) -> Result<()> {
        if v.dim() != 0 {
            return Err(Error::runtime(format!(
                "index_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                v.dim()
            )));
        }
        let value = regen_runtime::bootstrap::_local_scalar_dense(v)?;
        index_fill(s, dim, index, crate::engine::dtype::Num::from_scalar(value))
    }
    fn take_out(&self, s: TensorRef<'_>, index: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        take(s, index, out)
    }
    fn take(&self, s: TensorRef<'_>, index: TensorRef<'_>) -> Result<Tensor> {
        take_new(s, index)
    }
    fn put_inplace(
        &self,
        s: TensorRef<'_>,
        index: TensorRef<'_>,
        source: TensorRef<'_>,
        accumulate: bool,
    ) -> Result<()> {
        put(s, index, source, accumulate)
    }
    fn nonzero(&self, s: TensorRef<'_>) -> Result<Tensor> {
        nonzero(s)
    }
    fn nonzero_out(&self, s: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        nonzero_out(s, out)
    }
    fn nonzero_static(&self, s: TensorRef<'_>, size: i64, fill_value: i64) -> Result<Tensor> {
        nonzero_static(s, size, fill_value)
    }
    fn nonzero_static_out(&self, s: TensorRef<'_>, size: i64, fill_value: i64, out: TensorRef<'_>) -> Result<()> {
        nonzero_static_out(s, size, fill_value, out)
    }
    fn masked_select(&self, s: TensorRef<'_>, mask: TensorRef<'_>) -> Result<Tensor> {
        masked_select(s, mask)
    }
    fn masked_select_out(&self, s: TensorRef<'_>, mask: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        masked_select_out(s, mask, out)
    }
    fn masked_scatter_inplace(&self, s: TensorRef<'_>, mask: TensorRef<'_>, source: TensorRef<'_>) -> Result<()> {
        masked_scatter(s, mask, source)
    }
    fn index_tensor_out(
        &self,
        s: TensorRef<'_>,
        indices: regen_runtime::OptionalTensorList<'_>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        index_out(s, indices, out)
    }
    fn _index_put_impl_inplace(
        &self,
        s: TensorRef<'_>,
        indices: regen_runtime::OptionalTensorList<'_>,
        values: TensorRef<'_>,
        accumulate: bool,
        _unsafe: bool,
    ) -> Result<()> {
        index_put(s, indices, values, accumulate)
    }
    fn searchsorted_tensor(
        &self,
        seq: TensorRef<'_>,
        s: TensorRef<'_>,
        out_int32: bool,
        right: bool,
        side: Option<&str>,
        sorter: Option<TensorRef<'_>>,
    ) -> Result<Tensor> {
        use crate::{engine::dtype::DType, ops::index as ix};
        let out = ix::new_tensor(s.sizes(), if out_int32 { DType::I32 } else { DType::I64 })?;
        ix::searchsorted(seq, s, out_int32, right, side, sorter, out.as_ref())?;
        Ok(out)
    }
    fn searchsorted_tensor_out(
        &self,
        seq: TensorRef<'_>,
        s: TensorRef<'_>,
        out_int32: bool,
        right: bool,
        side: Option<&str>,
        sorter: Option<TensorRef<'_>>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        searchsorted(seq, s, out_int32, right, side, sorter, out)
    }
    fn searchsorted_scalar(
        &self,
        seq: TensorRef<'_>,
        s: Scalar,
        out_int32: bool,
        right: bool,
        side: Option<&str>,
        sorter: Option<TensorRef<'_>>,
    ) -> Result<Tensor> {
        use crate::{engine::dtype::DType, ops::index as ix};
        let v = ix::scalar_tensor(s, DType::from_scalar_type(seq.dtype())?)?;
        let out = ix::new_tensor(&[], if out_int32 { DType::I32 } else { DType::I64 })?;
        ix::searchsorted(seq, v.as_ref(), out_int32, right, side, sorter, out.as_ref())?;
        Ok(out)
    }
    fn searchsorted_scalar_out(
        &self,
        seq: TensorRef<'_>,
        s: Scalar,
        out_int32: bool,
        right: bool,
        side: Option<&str>,
        sorter: Option<TensorRef<'_>>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::{engine::dtype::DType, ops::index as ix};
        let v = ix::scalar_tensor(s, DType::from_scalar_type(seq.dtype())?)?;
        ix::searchsorted(seq, v.as_ref(), out_int32, right, side, sorter, out)
    }
    fn bucketize_tensor(
        &self,
        s: TensorRef<'_>,
        boundaries: TensorRef<'_>,
        out_int32: bool,
        right: bool,
    ) -> Result<Tensor> {
        use crate::{engine::dtype::DType, ops::index as ix};
        let out = ix::new_tensor(s.sizes(), if out_int32 { DType::I32 } else { DType::I64 })?;
        self.bucketize_tensor_out(s, boundaries, out_int32, right, out.as_ref())?;
        Ok(out)
    }
    fn bucketize_tensor_out(
        &self,
        s: TensorRef<'_>,
        boundaries: TensorRef<'_>,
        out_int32: bool,
        right: bool,
        out: TensorRef<'_>,
    ) -> Result<()> {
        if boundaries.dim() != 1 {
            return Err(Error::runtime(format!(
                "boundaries tensor must be 1 dimension, but got dim({})",
                boundaries.dim()
            )));
        }
        searchsorted(boundaries, s, out_int32, right, None, None, out)
    }
    fn isin_tensor_tensor_out(
        &self,
        e: TensorRef<'_>,
        t: TensorRef<'_>,
        _assume_unique: bool,
        invert: bool,
        out: TensorRef<'_>,
    ) -> Result<()> {
        isin(e, t, invert, out)
    }
    fn isin_tensor_scalar_out(
        &self,
        e: TensorRef<'_>,
        t: Scalar,
        _assume_unique: bool,
        invert: bool,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::{engine::dtype::DType, ops::index as ix};
        let t = ix::scalar_tensor(t, DType::from_scalar_type(e.dtype())?)?;
        ix::isin(e, t.as_ref(), invert, out)
    }
    fn isin_scalar_tensor_out(
        &self,
        e: Scalar,
        t: TensorRef<'_>,
        _assume_unique: bool,
        invert: bool,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::{engine::dtype::DType, ops::index as ix};
        let e = ix::scalar_tensor(e, DType::from_scalar_type(t.dtype())?)?;
        ix::isin(e.as_ref(), t, invert, out)
    }
    fn bucketize_scalar(&self, s: Scalar, boundaries: TensorRef<'_>, out_int32: bool, right: bool) -> Result<Tensor> {
        use crate::{engine::dtype::DType, ops::index as ix};
        if boundaries.dim() != 1 {
            return Err(Error::runtime(format!(
                "boundaries tensor must be 1 dimension, but got dim({})",
                boundaries.dim()
            )));
        }
        let v = ix::scalar_tensor(s, DType::from_scalar_type(boundaries.dtype())?)?;
        let out = ix::new_tensor(&[], if out_int32 { DType::I32 } else { DType::I64 })?;
        ix::searchsorted(boundaries, v.as_ref(), out_int32, right, None, None, out.as_ref())?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reductions_follow_aten() {
        assert!(f32::NAN.max_nan(1.0).is_nan());
        assert!(1.0f32.max_nan(f32::NAN).is_nan());
        assert_eq!(2i64.max_nan(5), 5);
        assert_eq!(7i64.div_count(2), 3);
        assert_eq!((-7i64).div_count(2), -4);
        assert_eq!(Reduce::Max.identity::<f32>(), f32::NEG_INFINITY);
        assert_eq!(Reduce::Mul.identity::<i32>(), 1);
        assert!(true.add(false));
    }

    #[test]
    fn flat_offsets_walk_row_major() {
        // A transposed 2x3: sizes [3, 2], strides [1, 3].
        let offs: Vec<isize> = (0..6).map(|i| flat_offset(&[3, 2], &[1, 3], i)).collect();
        assert_eq!(offs, vec![0, 3, 1, 4, 2, 5]);
    }
}
