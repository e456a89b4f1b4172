//! Reductions over any set of dimensions: one engine ([`run`]) and one small struct per op
//! implementing [`Reducer`] (init / combine / merge / finish over an accumulation type), in the
//! manner of ATen's `Reduce.h` and `SumKernel.cpp`.
//!
//! Elements are read in their compute domain ([`Load::D`]: integers and bool as i64, f16/bf16 as
//! f32, f32, f64, complex as themselves), so a reducer is written once, generically. The engine
//! drops size-1 dimensions, orders and coalesces the rest, then picks ATen's layout strategy:
//! - reduced dimensions innermost and contiguous: each output reduces contiguous runs
//!   ([`Reducer::slice`], which sums do in cascade, as `SumKernel.cpp`);
//! - reduced dimensions outer with the kept ones contiguous: whole rows are combined into a
//!   block of accumulators (vectorised across outputs), blocks of [`ROW_BLOCK`] rows merged in
//!   a cascade so float sums stay accurate;
//! - otherwise a strided walk per output.
//!
//! A reduced dimension of stride 0 (an expanded tensor) is reduced once and its accumulator
//! reused, with the operations of the full walk. The loops run as pulp jobs, compiled for
//! AVX-512 and AVX2 (pulp's `V4` / `V3`, picked at run time).
//!
//! Work above [`GRAIN`] runs on PyTorch's intra-op pool: over outputs when there are at least as
//! many as threads, otherwise the reduced range is split per thread and the partial
//! accumulators are merged in order (so results do not depend on scheduling).

use std::mem::MaybeUninit;

use num_complex::{Complex, Complex32, Complex64};
use regen_runtime::bootstrap::with_size;
use regen_runtime::{Error, Result, Scalar, ScalarType, Tensor, TensorRef};

use crate::dispatch;
pub use crate::engine::dtype::DType;
use crate::engine::dtype::{Category, Element, Half, Num, dtype_of};
use crate::engine::iter::{Dims, GRAIN, Operand, contiguous_strides};
use crate::engine::loops::copy_cast;

/// Rows combined into a fresh block of accumulators, and blocks merged per cascade level, for
/// reductions over outer dimensions.
pub const ROW_BLOCK: usize = 16;
/// Elements a cascade sums with plain lane accumulators before splitting pairwise.
const CASCADE_BASE: usize = 2048;
/// Independent accumulators in a cascade's base case: four vector registers of f32 on AVX-512,
/// as ATen's vectorised sums keep four, so that consecutive vector additions do not wait for
/// each other (with one register, a sum over rows of 3136 float32, ResNet's global average
/// pool, ran at one addition per add latency: 1.5x CPU's time).
const LANES: usize = 64;

/// A compute domain: i64, f32, f64, Complex32 or Complex64.
pub trait Dom: Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    const COMPLEX: bool;
    const FLOAT: bool;
    fn zero() -> Self;
    fn one() -> Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn is_nan(self) -> bool;
    /// Real order (complex values compare by real part; no reducer that orders accepts them).
    fn gt(self, o: Self) -> bool;
    fn lt(self, o: Self) -> bool;
    fn nonzero(self) -> bool;
    /// As a complex f64 (variance and norms accumulate in double, as ATen's CPU `acc_type`).
    fn c64(self) -> Complex64;
    fn to_num(self) -> Num;
    /// Division by an element count (mean).
    fn div_count(self, n: f64) -> Self;
    /// `exp` and `log` for log-sum-exp scans (reals only).
    fn from_f64(x: f64) -> Self;
    /// From a complex f64 (reals take the real part).
    fn from_c64(z: Complex64) -> Self;
    /// The identities of max and min (-inf and inf; the integer limits).
    fn lowest() -> Self;
    fn highest() -> Self;
}

macro_rules! real_dom {
    ($($t:ty),*) => {$(
        impl Dom for $t {
            const COMPLEX: bool = false;
            const FLOAT: bool = true;
            #[inline(always)] fn zero() -> Self { 0.0 }
            #[inline(always)] fn one() -> Self { 1.0 }
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)] fn is_nan(self) -> bool { self.is_nan() }
            #[inline(always)] fn gt(self, o: Self) -> bool { self > o }
            #[inline(always)] fn lt(self, o: Self) -> bool { self < o }
            #[inline(always)] fn nonzero(self) -> bool { self != 0.0 }
            #[inline(always)] fn c64(self) -> Complex64 { Complex64::new(self as f64, 0.0) }
            #[inline(always)] fn to_num(self) -> Num { Num::Float(self as f64) }
            #[inline(always)] fn div_count(self, n: f64) -> Self { (self as f64 / n) as $t }
            #[inline(always)] fn from_f64(x: f64) -> Self { x as $t }
            #[inline(always)] fn from_c64(z: Complex64) -> Self { z.re as $t }
            #[inline(always)] fn lowest() -> Self { <$t>::NEG_INFINITY }
            #[inline(always)] fn highest() -> Self { <$t>::INFINITY }
        }
    )*};
}
real_dom!(f32, f64);

macro_rules! complex_dom {
    ($($t:ty),*) => {$(
        impl Dom for Complex<$t> {
            const COMPLEX: bool = true;
            const FLOAT: bool = true;
            #[inline(always)] fn zero() -> Self { Complex::new(0.0, 0.0) }
            #[inline(always)] fn one() -> Self { Complex::new(1.0, 0.0) }
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)] fn is_nan(self) -> bool { self.re.is_nan() || self.im.is_nan() }
            #[inline(always)] fn gt(self, o: Self) -> bool { self.re > o.re }
            #[inline(always)] fn lt(self, o: Self) -> bool { self.re < o.re }
            #[inline(always)] fn nonzero(self) -> bool { self.re != 0.0 || self.im != 0.0 }
            #[inline(always)] fn c64(self) -> Complex64 { Complex64::new(self.re as f64, self.im as f64) }
            #[inline(always)] fn to_num(self) -> Num { Num::Complex(self.re as f64, self.im as f64) }
            #[inline(always)] fn div_count(self, n: f64) -> Self { self / (n as $t) }
            #[inline(always)] fn from_f64(x: f64) -> Self { Complex::new(x as $t, 0.0) }
            #[inline(always)] fn from_c64(z: Complex64) -> Self { Complex::new(z.re as $t, z.im as $t) }
            #[inline(always)] fn lowest() -> Self { Complex::new(0.0, 0.0) }
            #[inline(always)] fn highest() -> Self { Complex::new(0.0, 0.0) }
        }
    )*};
}
complex_dom!(f32, f64);

impl Dom for i64 {
    const COMPLEX: bool = false;
    const FLOAT: bool = false;
    #[inline(always)]
    fn zero() -> Self {
        0
    }
    #[inline(always)]
    fn one() -> Self {
        1
    }
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self.wrapping_mul(o)
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        false
    }
    #[inline(always)]
    fn gt(self, o: Self) -> bool {
        self > o
    }
    #[inline(always)]
    fn lt(self, o: Self) -> bool {
        self < o
    }
    #[inline(always)]
    fn nonzero(self) -> bool {
        self != 0
    }
    #[inline(always)]
    fn c64(self) -> Complex64 {
        Complex64::new(self as f64, 0.0)
    }
    #[inline(always)]
    fn to_num(self) -> Num {
        Num::Int(self)
    }
    #[inline(always)]
    fn div_count(self, n: f64) -> Self {
        (self as f64 / n) as i64
    }
    #[inline(always)]
    fn from_f64(x: f64) -> Self {
        x as i64
    }
    #[inline(always)]
    fn from_c64(z: Complex64) -> Self {
        z.re as i64
    }
    #[inline(always)]
    fn lowest() -> Self {
        i64::MIN
    }
    #[inline(always)]
    fn highest() -> Self {
        i64::MAX
    }
}

/// An element read in its compute domain `D`, and in the wide domain `W` cumulative ops
/// accumulate in (ATen's CPU `acc_type`: double for float, float for half, complex double).
pub trait Load: Element {
    type D: Dom;
    type W: Dom;
    fn load(self) -> Self::D;
    fn wide(self) -> Self::W;
    /// A cascade's base case over `xs` (at most `CASCADE_BASE` elements): `cascade_base` of
    /// the elements loaded one by one.
    #[inline(always)]
    fn base_sum<const SKIP_NAN: bool>(xs: &[Self]) -> Self::D {
        cascade_base::<Self, SKIP_NAN>(xs)
    }
    fn from_wide(w: Self::W) -> Self;
    /// Whether contiguous runs load faster a block at a time through [`Load::load_block`] than
    /// element by element inside a reduction's loop (float16).
    const BLOCKS: bool = false;
    /// `out[k] = xs[k].load()`, `out` as long as `xs`.
    #[inline(always)]
    fn load_block(xs: &[Self], out: &mut [MaybeUninit<Self::D>]) {
        for (o, x) in out.iter_mut().zip(xs) {
            o.write(x.load());
        }
    }
    /// Whether cumulative ops scan contiguous lines faster a block at a time, widened into a
    /// buffer by [`Load::wide_block`] and narrowed back by [`Load::from_wide_block`] (float16
    /// and bfloat16).
    const SCAN_BLOCKS: bool = false;
    /// `out[k] = xs[k].wide()`, `out` as long as `xs` ([`Load::SCAN_BLOCKS`]).
    #[inline(always)]
    fn wide_block(xs: &[Self], out: &mut [MaybeUninit<Self::W>]) {
        for (o, x) in out.iter_mut().zip(xs) {
            o.write(x.wide());
        }
    }
    /// `out[k] = Self::from_wide(ws[k])` for `k < ws.len()`.
    ///
    /// # Safety
    /// `out` holds `ws.len()` writable elements.
    #[inline(always)]
    unsafe fn from_wide_block(ws: &[Self::W], out: *mut Self) {
        for (k, &w) in ws.iter().enumerate() {
            // SAFETY: per the contract.
            unsafe { out.add(k).write(Self::from_wide(w)) };
        }
    }
    /// `xs` loaded into the front of `out` by [`Load::load_block`], as a slice of values.
    #[inline(always)]
    fn loaded<'a>(xs: &[Self], out: &'a mut [MaybeUninit<Self::D>]) -> &'a [Self::D] {
        let out = &mut out[..xs.len()];
        Self::load_block(xs, out);
        // SAFETY: load_block wrote every element of `out`.
        unsafe { &*(out as *const [MaybeUninit<Self::D>] as *const [Self::D]) }
    }
}

macro_rules! load_int {
    ($($t:ty),*) => {$(
        impl Load for $t {
            type D = i64;
            type W = i64;
            #[inline(always)] fn load(self) -> i64 { self as i64 }
            #[inline(always)] fn wide(self) -> i64 { self as i64 }
            #[inline(always)] fn from_wide(w: i64) -> Self { w as $t }
        }
    )*};
}
load_int!(u8, i8, i16, i32, i64);

impl Load for bool {
    type D = i64;
    type W = i64;
    #[inline(always)]
    fn load(self) -> i64 {
        i64::from(self)
    }
    #[inline(always)]
    fn wide(self) -> i64 {
        i64::from(self)
    }
    #[inline(always)]
    fn from_wide(w: i64) -> Self {
        w != 0
    }
}

/// float16 and bfloat16 load and sum in f32, converted as every kernel converts them.
impl<T: Half> Load for T {
    type D = f32;
    type W = f32;
    #[inline(always)]
    fn load(self) -> f32 {
        self.to_acc()
    }
    #[inline(always)]
    fn wide(self) -> f32 {
        self.to_acc()
    }
    #[inline(always)]
    fn from_wide(w: f32) -> Self {
        T::from_acc(w)
    }
    /// float16 only: bfloat16's conversion, a shift, fuses into the reduction's own loop
    /// ([`Half::FUSES`]; through buffers its sums took 1.3-1.5x the time).
    const BLOCKS: bool = !T::FUSES;
    /// By the tier's conversion instructions ([`Half::widen`]).
    #[inline(always)]
    fn load_block(xs: &[Self], out: &mut [MaybeUninit<f32>]) {
        let n = xs.len().min(out.len());
        // SAFETY: both hold at least n elements.
        unsafe { T::widen(xs.as_ptr(), out.as_mut_ptr().cast(), n) };
    }
    /// Both: converted between the steps of a scan, float16's bit arithmetic and bfloat16's
    /// rounding made `cumsum` along rows 2.6-3.1x (float16) and 1.33x (bfloat16) CPU's time.
    const SCAN_BLOCKS: bool = true;
    #[inline(always)]
    fn wide_block(xs: &[Self], out: &mut [MaybeUninit<f32>]) {
        Self::load_block(xs, out)
    }
    /// By the tier's conversion instructions ([`Half::narrow`]).
    #[inline(always)]
    unsafe fn from_wide_block(ws: &[f32], out: *mut Self) {
        // SAFETY: per the contract.
        unsafe { T::narrow(ws.as_ptr(), out, ws.len()) };
    }
    /// float16: widened into a buffer first ([`Load::load_block`]), then summed as float32 (the
    /// same additions in the same order). Loaded element by element, float16's branch-free bit
    /// arithmetic made its sums 9-14x CPU's time; widened by vectors inside the sum's loop, the
    /// run-time tier check of each conversion kept the partial sums in memory, not registers,
    /// and a sum's speed doubled or halved from one process to the next (store forwarding
    /// against the stack's address).
    #[inline(always)]
    fn base_sum<const SKIP_NAN: bool>(xs: &[Self]) -> f32 {
        #[repr(C, align(64))]
        struct Buf([MaybeUninit<f32>; CASCADE_BASE]);
        if !Self::BLOCKS || xs.len() > CASCADE_BASE {
            return cascade_base::<Self, SKIP_NAN>(xs);
        }
        let mut buf = Buf([MaybeUninit::uninit(); CASCADE_BASE]);
        cascade_base::<f32, SKIP_NAN>(Self::loaded(xs, &mut buf.0))
    }
}

impl Load for f32 {
    type D = f32;
    type W = f64;
    #[inline(always)]
    fn load(self) -> f32 {
        self
    }
    #[inline(always)]
    fn wide(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn from_wide(w: f64) -> Self {
        w as f32
    }
}

impl Load for f64 {
    type D = f64;
    type W = f64;
    #[inline(always)]
    fn load(self) -> f64 {
        self
    }
    #[inline(always)]
    fn wide(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_wide(w: f64) -> Self {
        w
    }
}

impl Load for Complex32 {
    type D = Complex32;
    type W = Complex64;
    #[inline(always)]
    fn load(self) -> Complex32 {
        self
    }
    #[inline(always)]
    fn wide(self) -> Complex64 {
        Complex64::new(self.re.into(), self.im.into())
    }
    #[inline(always)]
    fn from_wide(w: Complex64) -> Self {
        Complex32::new(w.re as f32, w.im as f32)
    }
}

impl Load for Complex64 {
    type D = Complex64;
    type W = Complex64;
    #[inline(always)]
    fn load(self) -> Complex64 {
        self
    }
    #[inline(always)]
    fn wide(self) -> Complex64 {
        self
    }
    #[inline(always)]
    fn from_wide(w: Complex64) -> Self {
        w
    }
}

/// One reduction: how an accumulator starts, takes an element (with its index in the reduced
/// range, row-major), merges with the accumulator of a later part of the range, and becomes the
/// output values (one or two outputs: `max.dim` gives values and indices).
pub trait Reducer<D: Dom>: Sync {
    type Acc: Copy + Send + Sync;
    /// The reducer uses element indices (argmax, first NaN): the reduced dimensions keep their
    /// row-major order instead of being reordered by stride. Any other reducer must ignore `i`:
    /// the engine reuses the accumulator of a run repeated along a stride-0 dimension.
    const INDEXED: bool = false;
    fn init(&self) -> Self::Acc;
    fn combine(&self, acc: Self::Acc, x: D, i: i64) -> Self::Acc;
    /// `a` covers elements before `b`'s.
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// The output values from the accumulator of `n` elements.
    fn finish(&self, acc: Self::Acc, n: i64) -> [Num; 2];
    /// A contiguous run whose first element has index `i0`.
    #[inline(always)]
    fn slice<T: Load<D = D>>(&self, mut acc: Self::Acc, xs: &[T], i0: i64) -> Self::Acc {
        for (k, x) in xs.iter().enumerate() {
            acc = self.combine(acc, x.load(), i0 + k as i64);
        }
        acc
    }
}

/// Cascade summation of a contiguous run (`SumKernel.cpp`'s idea): lane accumulators over
/// blocks, blocks added pairwise, so rounding error grows with log(n), not n. `SKIP_NAN` for
/// nansum.
///
/// The pairwise tree (halves rounded up to whole lanes, down to runs of [`CASCADE_BASE`]) is
/// walked with an explicit stack rather than by recursion: a recursive call would not be
/// inlined, and the out-of-line copy would miss the vector features of the caller.
#[inline(always)]
fn cascade<T: Load, const SKIP_NAN: bool>(xs: &[T]) -> T::D {
    if xs.len() <= CASCADE_BASE {
        return T::base_sum::<SKIP_NAN>(xs);
    }
    // Frames (start, len, left half done, its sum); each level halves the length.
    let mut frames = [(0usize, 0usize, false, T::D::zero()); usize::BITS as usize];
    frames[0] = (0, xs.len(), false, T::D::zero());
    let mut depth = 1;
    // The sum of the subtree that just finished, on the way up.
    let mut done: Option<T::D> = None;
    while depth > 0 {
        let (start, len, right, left) = frames[depth - 1];
        let half = (len / 2).next_multiple_of(LANES);
        match done {
            Some(v) if right => {
                done = Some(left.add(v));
                depth -= 1;
            }
            Some(v) => {
                frames[depth - 1] = (start, len, true, v);
                frames[depth] = (start + half, len - half, false, T::D::zero());
                depth += 1;
                done = None;
            }
            None if len <= CASCADE_BASE => {
                done = Some(T::base_sum::<SKIP_NAN>(&xs[start..start + len]));
                depth -= 1;
            }
            None => {
                frames[depth] = (start, half, false, T::D::zero());
                depth += 1;
            }
        }
    }
    done.unwrap_or_else(T::D::zero)
}

/// A cascade's base case: [`LANES`] running sums, added pairwise, then the tail.
///
/// The run is taken as whole arrays of [`LANES`] (with `chunks_exact` slices the compiler
/// vectorised the lanes two at a time) and the pairwise fold stays out of line (inlined, it
/// led the compiler to split the lanes into pairs as well).
#[inline(always)]
fn cascade_base<T: Load, const SKIP_NAN: bool>(xs: &[T]) -> T::D {
    let mut lanes = [T::D::zero(); LANES];
    let (chunks, tail) = xs.as_chunks::<LANES>();
    for c in chunks {
        for k in 0..LANES {
            let x = c[k].load();
            lanes[k] = if SKIP_NAN && x.is_nan() { lanes[k] } else { lanes[k].add(x) };
        }
    }
    let mut s = fold_pairwise(lanes);
    for x in tail {
        let x = x.load();
        if !(SKIP_NAN && x.is_nan()) {
            s = s.add(x);
        }
    }
    s
}

/// The lanes of a cascade's base case added pairwise (lane k with lane k + width/2, halving).
#[inline(never)]
fn fold_pairwise<D: Dom>(mut lanes: [D; LANES]) -> D {
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for k in 0..width {
            lanes[k] = lanes[k].add(lanes[k + width]);
        }
    }
    lanes[0]
}

/// sum (and nansum with `SKIP_NAN`), mean with `MEAN`.
pub struct Sum<const SKIP_NAN: bool, const MEAN: bool>;

impl<D: Dom, const SKIP_NAN: bool, const MEAN: bool> Reducer<D> for Sum<SKIP_NAN, MEAN> {
    type Acc = D;
    fn init(&self) -> D {
        D::zero()
    }
    #[inline(always)]
    fn combine(&self, acc: D, x: D, _: i64) -> D {
        if SKIP_NAN && x.is_nan() { acc } else { acc.add(x) }
    }
    #[inline(always)]
    fn merge(&self, a: D, b: D) -> D {
        a.add(b)
    }
    fn finish(&self, acc: D, n: i64) -> [Num; 2] {
        let v = if MEAN { acc.div_count(n as f64) } else { acc };
        [v.to_num(), Num::Int(0)]
    }
    #[inline(always)]
    fn slice<T: Load<D = D>>(&self, acc: D, xs: &[T], _: i64) -> D {
        acc.add(cascade::<T, SKIP_NAN>(xs))
    }
}

/// prod.
pub struct Prod;

impl<D: Dom> Reducer<D> for Prod {
    type Acc = D;
    fn init(&self) -> D {
        D::one()
    }
    #[inline(always)]
    fn combine(&self, acc: D, x: D, _: i64) -> D {
        acc.mul(x)
    }
    #[inline(always)]
    fn merge(&self, a: D, b: D) -> D {
        a.mul(b)
    }
    fn finish(&self, acc: D, _: i64) -> [Num; 2] {
        [acc.to_num(), Num::Int(0)]
    }
}

/// Whether `x` (index later) replaces `best` as the maximum (`MAX`) or minimum: NaN wins and
/// stays (the first NaN), ties keep the earlier element.
#[inline(always)]
fn better<D: Dom, const MAX: bool>(best: D, x: D) -> bool {
    !best.is_nan() && (x.is_nan() || if MAX { x.gt(best) } else { x.lt(best) })
}

/// max/min with the index of the first extremum (max.dim, argmax); amax/amin ignore the index.
pub struct Extremum<const MAX: bool>;

impl<D: Dom, const MAX: bool> Reducer<D> for Extremum<MAX> {
    /// (value, index); index -1 before the first element.
    type Acc = (D, i64);
    const INDEXED: bool = true;
    fn init(&self) -> (D, i64) {
        (D::zero(), -1)
    }
    #[inline(always)]
    fn combine(&self, acc: (D, i64), x: D, i: i64) -> (D, i64) {
        if acc.1 < 0 || better::<D, MAX>(acc.0, x) { (x, i) } else { acc }
    }
    #[inline(always)]
    fn merge(&self, a: (D, i64), b: (D, i64)) -> (D, i64) {
        if b.1 >= 0 && (a.1 < 0 || better::<D, MAX>(a.0, b.0)) { b } else { a }
    }
    fn finish(&self, acc: (D, i64), _: i64) -> [Num; 2] {
        [acc.0.to_num(), Num::Int(acc.1.max(0))]
    }
}

/// amax/amin: the value only, starting from the op's identity (the callers reject empty
/// reductions), so the combine is a branch-free select that vectorises across outputs too.
pub struct ExtremumValue<const MAX: bool>;

impl<D: Dom, const MAX: bool> Reducer<D> for ExtremumValue<MAX> {
    type Acc = D;
    fn init(&self) -> D {
        if MAX { D::lowest() } else { D::highest() }
    }
    /// NaN propagates: a NaN `x` is taken, and once `acc` is NaN no comparison takes `x`. (Of
    /// two NaNs the later is kept, unlike `better`; only the payload can differ, and the
    /// select has no branch, so it vectorises across outputs.)
    #[inline(always)]
    fn combine(&self, acc: D, x: D, _: i64) -> D {
        let take = if MAX { x.gt(acc) } else { x.lt(acc) };
        if take || x.is_nan() { x } else { acc }
    }
    #[inline(always)]
    fn merge(&self, a: D, b: D) -> D {
        self.combine(a, b, 0)
    }
    fn finish(&self, acc: D, _: i64) -> [Num; 2] {
        [acc.to_num(), Num::Int(0)]
    }
    #[inline(always)]
    fn slice<T: Load<D = D>>(&self, acc: D, xs: &[T], _: i64) -> D {
        // Lane-wise extrema with NaN folded into a flag (a branch-free loop that vectorises; whole
        // arrays of EXTREMUM_LANES and the fold out of line, as in `cascade_base`).
        let mut lanes = [self.init(); EXTREMUM_LANES];
        let mut nan = false;
        let (chunks, tail) = xs.as_chunks::<EXTREMUM_LANES>();
        for c in chunks {
            for k in 0..EXTREMUM_LANES {
                let x = c[k].load();
                nan |= x.is_nan();
                let take = if MAX { x.gt(lanes[k]) } else { x.lt(lanes[k]) };
                lanes[k] = if take { x } else { lanes[k] };
            }
        }
        if nan {
            let first = xs.iter().map(|x| x.load()).find(|x| x.is_nan());
            return self.combine(acc, first.unwrap_or(lanes[0]), 0);
        }
        let mut acc = fold_extrema::<D, MAX>(acc, lanes);
        for x in tail {
            acc = self.combine(acc, x.load(), 0);
        }
        acc
    }
}

/// Lanes of [`ExtremumValue::slice`]: two AVX-512 vectors of f32. With the sums' 64 the lane
/// loop was not unrolled, the lanes stayed on the stack and each select became a masked store,
/// which the next iteration's load could not take its data from: float32 `amax` along rows of
/// 1024 took 3.2-3.5x CPU's time (a kernel test: 278 us per 1024x1024, 75 us with 32 lanes and
/// the pairwise fold, 78 with 16).
const EXTREMUM_LANES: usize = 32;

/// `acc` combined with the lanes of [`ExtremumValue::slice`], folded pairwise (lane k with lane
/// k + width/2, halving: a few vector selects; one by one, the fold was a quarter of the time of
/// a row of 1024). The lanes hold no NaN (the slice returns before), so the order of the fold
/// does not change the value (but for which of +0 and -0 is kept, as CPU's order decides too).
#[inline(never)]
fn fold_extrema<D: Dom, const MAX: bool>(acc: D, mut lanes: [D; EXTREMUM_LANES]) -> D {
    let mut width = EXTREMUM_LANES;
    while width > 1 {
        width /= 2;
        for k in 0..width {
            lanes[k] = ExtremumValue::<MAX>.combine(lanes[k], lanes[k + width], 0);
        }
    }
    ExtremumValue::<MAX>.combine(acc, lanes[0], 0)
}

/// aminmax: (min, max) with NaN propagating to both.
pub struct MinMax;

impl<D: Dom> Reducer<D> for MinMax {
    type Acc = (D, D);
    fn init(&self) -> (D, D) {
        (ExtremumValue::<false>.init(), ExtremumValue::<true>.init())
    }
    #[inline(always)]
    fn combine(&self, acc: (D, D), x: D, i: i64) -> (D, D) {
        (ExtremumValue::<false>.combine(acc.0, x, i), ExtremumValue::<true>.combine(acc.1, x, i))
    }
    #[inline(always)]
    fn merge(&self, a: (D, D), b: (D, D)) -> (D, D) {
        (ExtremumValue::<false>.merge(a.0, b.0), ExtremumValue::<true>.merge(a.1, b.1))
    }
    fn finish(&self, acc: (D, D), _: i64) -> [Num; 2] {
        [acc.0.to_num(), acc.1.to_num()]
    }
}

/// Welford's running moments in double (ATen's CPU `WelfordOps` with a double accumulator);
/// complex values add the variances of both parts. Outputs (var or std, mean).
pub struct Moments {
    pub correction: f64,
    pub take_sqrt: bool,
}

#[derive(Clone, Copy)]
pub struct Welford {
    n: f64,
    mean: Complex64,
    m2: f64,
}

impl<D: Dom> Reducer<D> for Moments {
    type Acc = Welford;
    fn init(&self) -> Welford {
        Welford { n: 0.0, mean: Complex64::new(0.0, 0.0), m2: 0.0 }
    }
    #[inline(always)]
    fn combine(&self, a: Welford, x: D, _: i64) -> Welford {
        let x = x.c64();
        let n = a.n + 1.0;
        let delta = x - a.mean;
        let mean = a.mean + delta / n;
        let delta2 = x - mean;
        Welford { n, mean, m2: a.m2 + delta.re * delta2.re + delta.im * delta2.im }
    }
    #[inline(always)]
    fn merge(&self, a: Welford, b: Welford) -> Welford {
        if a.n == 0.0 {
            return b;
        }
        if b.n == 0.0 {
            return a;
        }
        let n = a.n + b.n;
        let delta = b.mean - a.mean;
        let frac = b.n / n;
        Welford { n, mean: a.mean + delta * frac, m2: a.m2 + b.m2 + delta.norm_sqr() * a.n * frac }
    }
    fn finish(&self, a: Welford, _: i64) -> [Num; 2] {
        let var = a.m2 / (a.n - self.correction).max(0.0);
        let v = if self.take_sqrt { var.sqrt() } else { var };
        let mean = if a.n == 0.0 { Complex64::new(f64::NAN, 0.0) } else { a.mean };
        let mean = if D::COMPLEX { Num::Complex(mean.re, mean.im) } else { Num::Float(mean.re) };
        [Num::Float(v), mean]
    }
}

/// Vector norms of every order (`linalg_vector_norm`), in double; complex inputs use |z|.
pub struct Norm {
    pub ord: f64,
}

impl<D: Dom> Reducer<D> for Norm {
    type Acc = f64;
    fn init(&self) -> f64 {
        if self.ord == f64::NEG_INFINITY { f64::INFINITY } else { 0.0 }
    }
    #[inline(always)]
    fn combine(&self, acc: f64, x: D, _: i64) -> f64 {
        let a = if D::COMPLEX { x.c64().norm() } else { x.c64().re.abs() };
        let p = self.ord;
        if p == 2.0 {
            acc + a * a
        } else if p == 1.0 {
            acc + a
        } else if p == 0.0 {
            acc + f64::from(u8::from(a != 0.0))
        } else if p == f64::INFINITY {
            if acc.is_nan() || a.is_nan() || a > acc { if acc.is_nan() { acc } else { a } } else { acc }
        } else if p == f64::NEG_INFINITY {
            if acc.is_nan() || a.is_nan() || a < acc { if acc.is_nan() { acc } else { a } } else { acc }
        } else {
            acc + a.powf(p)
        }
    }
    #[inline(always)]
    fn merge(&self, a: f64, b: f64) -> f64 {
        if self.ord.is_infinite() { self.combine(a, D::from_f64(b), 0) } else { a + b }
    }
    fn finish(&self, acc: f64, _: i64) -> [Num; 2] {
        let p = self.ord;
        let v = if p == 2.0 {
            acc.sqrt()
        } else if p == 1.0 || p == 0.0 || p.is_infinite() {
            acc
        } else {
            acc.powf(1.0 / p)
        };
        [Num::Float(v), Num::Int(0)]
    }
}

/// any (`ALL` false) and all.
pub struct AnyAll<const ALL: bool>;

impl<D: Dom, const ALL: bool> Reducer<D> for AnyAll<ALL> {
    type Acc = bool;
    fn init(&self) -> bool {
        ALL
    }
    #[inline(always)]
    fn combine(&self, acc: bool, x: D, _: i64) -> bool {
        if ALL { acc & x.nonzero() } else { acc | x.nonzero() }
    }
    #[inline(always)]
    fn merge(&self, a: bool, b: bool) -> bool {
        if ALL { a & b } else { a | b }
    }
    fn finish(&self, acc: bool, _: i64) -> [Num; 2] {
        [Num::Bool(acc), Num::Int(0)]
    }
}

/// count_nonzero.
pub struct CountNonzero;

impl<D: Dom> Reducer<D> for CountNonzero {
    type Acc = i64;
    fn init(&self) -> i64 {
        0
    }
    #[inline(always)]
    fn combine(&self, acc: i64, x: D, _: i64) -> i64 {
        acc + i64::from(x.nonzero())
    }
    #[inline(always)]
    fn merge(&self, a: i64, b: i64) -> i64 {
        a + b
    }
    fn finish(&self, acc: i64, _: i64) -> [Num; 2] {
        [Num::Int(acc), Num::Int(0)]
    }
}

/// The loop nest of one reduction after dropping size-1 dimensions, ordering and coalescing:
/// outermost first in both lists. Strides are in elements.
struct Geometry {
    /// Kept dimensions: size, input stride, stride of each output.
    kept: Dims<(usize, isize, [isize; 2])>,
    /// Reduced dimensions: size, input stride.
    red: Dims<(usize, isize)>,
}

impl Geometry {
    fn outputs(&self) -> usize {
        self.kept.iter().map(|k| k.0).product()
    }
    fn reduced(&self) -> usize {
        self.red.iter().map(|r| r.0).product()
    }
    /// Input and output offsets of output `o` (row-major over `kept`).
    #[inline]
    fn offsets(&self, mut o: usize) -> (isize, [isize; 2]) {
        let (mut i, mut out) = (0isize, [0isize; 2]);
        for &(size, si, so) in self.kept.iter().rev() {
            let c = (o % size) as isize;
            o /= size;
            i += c * si;
            out[0] += c * so[0];
            out[1] += c * so[1];
        }
        (i, out)
    }
}

/// Drops size-1 dimensions, orders by input stride when allowed (outermost = largest) and
/// merges dimensions that are one run in the input (and in every output, for kept ones).
fn geometry(sizes: &[i64], strides: &[i64], reduce: &[bool], out_strides: [&[i64]; 2], reorder_red: bool) -> Geometry {
    let mut kept: Dims<(usize, isize, [isize; 2])> = Dims::new();
    let mut red: Dims<(usize, isize)> = Dims::new();
    for d in 0..sizes.len() {
        if sizes[d] == 1 {
            continue;
        }
        if reduce[d] {
            red.push((sizes[d] as usize, strides[d] as isize));
        } else {
            kept.push((
                sizes[d] as usize,
                strides[d] as isize,
                [out_strides[0][d] as isize, out_strides[1][d] as isize],
            ));
        }
    }
    // Largest |stride| outermost; stable, so equal strides keep their order.
    kept.sort_by_key(|k| std::cmp::Reverse(k.1.unsigned_abs()));
    if reorder_red {
        // Broadcast (stride-0) dimensions outermost, so that a dense dimension, when there is
        // one, becomes the contiguous inner run (an expanded row summed: slices, not strides).
        red.sort_by_key(|r| std::cmp::Reverse(if r.1 == 0 { usize::MAX } else { r.1.unsigned_abs() }));
    }
    let mut i = 1;
    while i < red.len() {
        let (outer, inner) = (red[i - 1], red[i]);
        if outer.1 == inner.1 * inner.0 as isize {
            red[i - 1] = (outer.0 * inner.0, inner.1);
            red.remove(i);
        } else {
            i += 1;
        }
    }
    let mut i = 1;
    while i < kept.len() {
        let (outer, inner) = (kept[i - 1], kept[i]);
        let n = inner.0 as isize;
        if outer.1 == inner.1 * n && outer.2[0] == inner.2[0] * n && outer.2[1] == inner.2[1] * n {
            kept[i - 1] = (outer.0 * inner.0, inner.1, inner.2);
            kept.remove(i);
        } else {
            i += 1;
        }
    }
    Geometry { kept, red }
}

/// Raw pointers the worker threads share.
#[derive(Clone, Copy)]
struct Ptr(*mut u8);
// SAFETY: the pointers address tensor memory alive for the whole kernel call; threads write
// disjoint outputs.
unsafe impl Send for Ptr {}
// SAFETY: shared between the worker threads, which only read inputs and write disjoint outputs
// of that live memory.
unsafe impl Sync for Ptr {}

impl Ptr {
    /// The pointer (a method, so closures capture the whole `Send` wrapper, not its field).
    fn get(self) -> *mut u8 {
        self.0
    }
}

/// Accumulators per block of columns in the row strategy: 8 KiB of them, so a block reads
/// whole runs of 8 KiB (f32 sums: 2048 columns) and the part, the levels and the total stay in
/// the L1/L2 caches.
fn column_block<A>() -> usize {
    (8192 / std::mem::size_of::<A>().max(1)).max(16)
}

/// The levels of the row strategy's cascade: level `L` holds up to [`ROW_BLOCK`] merged
/// values, each the merge of [`ROW_BLOCK`] values of level `L - 1` (level 0: parts of
/// [`ROW_BLOCK`] rows); a full level is merged into the next (ATen's `multi_row_sum`).
struct Levels<'a, A> {
    /// `depth` slices of `cols` accumulators (only the first `n` of each in use).
    store: &'a mut [A],
    cols: usize,
    n: usize,
    counts: [usize; 17],
}

/// Levels needed for `parts` parts: level `L` is reached once `ROW_BLOCK^L` parts came in.
fn levels_for(parts: usize) -> usize {
    let (mut depth, mut reach) = (1, ROW_BLOCK);
    while reach <= parts {
        depth += 1;
        match reach.checked_mul(ROW_BLOCK) {
            Some(r) => reach = r,
            None => break,
        }
    }
    depth
}

impl<A: Copy> Levels<'_, A> {
    // The reducer is passed to each method (not a merge closure, which might stay out of line,
    // compiled without the job's vector features).
    /// Adds the next part (`part` is clobbered).
    #[inline(always)]
    fn push<D: Dom, R: Reducer<D, Acc = A>>(&mut self, op: &R, part: &mut [A]) {
        let mut l = 0;
        loop {
            let (c, cols, n) = (self.counts[l], self.cols, self.n);
            let level = &mut self.store[l * cols..l * cols + n];
            if c == 0 {
                level.copy_from_slice(part);
                self.counts[l] = 1;
                return;
            }
            for (p, v) in part.iter_mut().zip(level.iter()) {
                *p = op.merge(*v, *p);
            }
            if c + 1 < ROW_BLOCK {
                level.copy_from_slice(part);
                self.counts[l] = c + 1;
                return;
            }
            self.counts[l] = 0;
            l += 1;
        }
    }

    /// Into empty levels, the state after [`push`](Self::push)ing `m` parts equal to `part`,
    /// without pushing them: level `L` ends with digit `L` of `m` (base [`ROW_BLOCK`]) copies of
    /// `C_L` merged in order, where `C_0 = part` and `C_(L+1)` is `ROW_BLOCK` copies of `C_L`
    /// merged, as the pushes would compute them. `part` and `scratch` are clobbered.
    #[inline(always)]
    fn push_repeated<D: Dom, R: Reducer<D, Acc = A>>(&mut self, op: &R, part: &mut [A], scratch: &mut [A], m: usize) {
        let (mut rest, mut l) = (m, 0);
        while rest > 0 {
            let digit = rest % ROW_BLOCK;
            rest /= ROW_BLOCK;
            if digit > 0 {
                let (cols, n) = (self.cols, self.n);
                let level = &mut self.store[l * cols..l * cols + n];
                level.copy_from_slice(part);
                for _ in 1..digit {
                    for (v, p) in level.iter_mut().zip(part.iter()) {
                        *v = op.merge(*v, *p);
                    }
                }
                self.counts[l] = digit;
            }
            if rest > 0 {
                scratch.copy_from_slice(part);
                for _ in 1..ROW_BLOCK {
                    for (s, p) in scratch.iter_mut().zip(part.iter()) {
                        *s = op.merge(*s, *p);
                    }
                }
                part.copy_from_slice(scratch);
            }
            l += 1;
        }
    }

    /// The merge of every level, the highest (earliest rows) first, into `total`.
    #[inline(always)]
    fn total<D: Dom, R: Reducer<D, Acc = A>>(&mut self, op: &R, total: &mut [A]) {
        for l in (0..self.counts.len()).rev() {
            if self.counts[l] > 0 {
                let level = &self.store[l * self.cols..l * self.cols + self.n];
                for (t, v) in total.iter_mut().zip(level) {
                    *t = op.merge(*t, *v);
                }
            }
        }
    }
}

/// Offset of reduced position `r` (row-major over `dims`).
#[inline(always)]
fn red_offset(mut r: usize, dims: &[(usize, isize)]) -> isize {
    let mut off = 0isize;
    for &(size, s) in dims.iter().rev() {
        off += (r % size) as isize * s;
        r /= size;
    }
    off
}

/// Elements per block of [`combine_rows`]' block-loading types (1 KiB of f32).
const BLOCK: usize = 256;

/// Rows `r..r_end` of `red` (row `rr` at `first + red_offset(rr)`, `part.len()` contiguous
/// columns each) combined into `part`, afresh.
///
/// # Safety
/// The rows are readable.
#[inline(always)]
unsafe fn combine_rows<T: Load, R: Reducer<T::D>>(
    op: &R,
    part: &mut [R::Acc],
    first: *const T,
    red: &[(usize, isize)],
    (r, r_end): (usize, usize),
    i0: i64,
) {
    part.fill(op.init());
    // Block-loading types (float16) widen each row a block at a time first: loaded element by
    // element, their conversion took most of a column sum's time (14x CPU's; 1.9x now).
    let mut buf = [const { MaybeUninit::<T::D>::uninit() }; BLOCK];
    for rr in r..r_end {
        // SAFETY: per the contract.
        let row = unsafe { std::slice::from_raw_parts(first.offset(red_offset(rr, red)), part.len()) };
        let idx = i0 + rr as i64;
        if T::BLOCKS {
            for (part, row) in part.chunks_mut(BLOCK).zip(row.chunks(BLOCK)) {
                for (a, &x) in part.iter_mut().zip(T::loaded(row, &mut buf)) {
                    *a = op.combine(*a, x, idx);
                }
            }
        } else {
            for (a, x) in part.iter_mut().zip(row) {
                *a = op.combine(*a, x.load(), idx);
            }
        }
    }
}

/// The accumulator of one run of `len` elements from `p`, `stride` apart (a slice when 1),
/// the first with index `idx`.
///
/// # Safety
/// The run is readable.
#[inline(always)]
unsafe fn reduce_run<T: Load, R: Reducer<T::D>>(
    op: &R,
    p: *const T,
    (len, stride): (usize, isize),
    idx: i64,
) -> R::Acc {
    if stride == 1 {
        // SAFETY: a contiguous run, per the contract.
        return op.slice(op.init(), unsafe { std::slice::from_raw_parts(p, len) }, idx);
    }
    let mut a = op.init();
    for k in 0..len {
        // SAFETY: per the contract.
        a = op.combine(a, unsafe { p.offset(k as isize * stride).read() }.load(), idx + k as i64);
    }
    a
}

/// Accumulates the outputs `o0..o1` over the reduced range described by `red` (whose
/// first element is at `base`, with indices starting at `i0`) and hands each accumulator to
/// `sink(o, acc)`.
///
/// A reduced dimension of stride 0 (an expanded tensor) is not read element by element when
/// the reducer ignores indices: equal inputs give equal accumulators, so a run repeated along
/// it is reduced once and its accumulator reused, in the same order of operations as the full
/// walk (the results are the same bits).
///
/// Everything here is inlined into the pulp job (no closures on the hot paths: one left out of
/// line would be compiled without the job's vector features).
///
/// # Safety
/// `base` and the geometry describe readable elements of `T`.
#[inline(always)]
unsafe fn accumulate<T: Load, R: Reducer<T::D>>(
    op: &R,
    g: &Geometry,
    red: &[(usize, isize)],
    base: *const T,
    i0: i64,
    (o0, o1): (usize, usize),
    sink: &mut impl FnMut(usize, R::Acc),
) {
    let n_red: usize = red.iter().map(|r| r.0).product();
    let inner = red.last().copied().unwrap_or((1, 0));
    let outer = &red[..red.len().saturating_sub(1)];
    let n_outer: usize = outer.iter().map(|r| r.0).product();
    let kept_inner = g.kept.last().copied();
    let rows = !red.is_empty() && inner.1 != 1 && kept_inner.is_some_and(|k| k.1 == 1);
    if n_red == 0 {
        for o in o0..o1 {
            sink(o, op.init());
        }
    } else if rows {
        // Outer reduction over contiguous kept columns: whole rows combine into a part of
        // accumulators (vectorised across outputs), parts go up the cascade of `Levels`.
        let width = kept_inner.map_or(1, |k| k.0);
        let cols = column_block::<R::Acc>().min(o1 - o0);
        let depth = levels_for(n_red.div_ceil(ROW_BLOCK));
        let mut buf = vec![op.init(); cols * (depth + 2)];
        let (part, rest) = buf.split_at_mut(cols);
        let (total, store) = rest.split_at_mut(cols);
        let identical = !R::INDEXED && red.iter().all(|r| r.1 == 0);
        let mut o = o0;
        while o < o1 {
            let n = (width - o % width).min(o1 - o).min(cols);
            let (ioff, _) = g.offsets(o);
            // SAFETY: the first element of this block of columns, per the contract.
            let first = unsafe { base.offset(ioff) };
            let (part, total) = (&mut part[..n], &mut total[..n]);
            let mut levels = Levels { store: &mut store[..], cols, n, counts: [0; 17] };
            let full = n_red / ROW_BLOCK;
            // SAFETY (combine_rows): rows of this block of columns, per the contract.
            if identical && full > 1 {
                // SAFETY: rows 0..ROW_BLOCK exist (full > 1 means n_red >= 2·ROW_BLOCK); each is
                // n <= width - o % width contiguous kept columns (kept stride 1) from first, inside
                // the input per accumulate's contract.
                unsafe { combine_rows(op, part, first, red, (0, ROW_BLOCK), i0) };
                levels.push_repeated(op, part, total, full);
                if full * ROW_BLOCK < n_red {
                    // SAFETY: the remaining rows full·ROW_BLOCK..n_red of this block of columns,
                    // inside the input per the contract (as the first block's).
                    unsafe { combine_rows(op, part, first, red, (full * ROW_BLOCK, n_red), i0) };
                    levels.push(op, part);
                }
            } else {
                let mut r = 0;
                while r < n_red {
                    let r_end = (r + ROW_BLOCK).min(n_red);
                    // SAFETY: rows r..r_end <= n_red of this block of n contiguous columns from
                    // first, inside the input per accumulate's contract.
                    unsafe { combine_rows(op, part, first, red, (r, r_end), i0) };
                    levels.push(op, part);
                    r = r_end;
                }
            }
            total.fill(op.init());
            levels.total(op, total);
            for (k, t) in total.iter().enumerate() {
                sink(o + k, *t);
            }
            o += n;
        }
    } else {
        // Each output reduces runs of the innermost reduced dimension (contiguous: a slice).
        let identical = !R::INDEXED && n_outer > 1 && outer.iter().all(|r| r.1 == 0);
        for o in o0..o1 {
            let (ioff, _) = g.offsets(o);
            let mut acc = op.init();
            // SAFETY (reduce_run): every run is in the input, per the contract.
            if identical {
                // SAFETY: ioff is output o's first input element (g.offsets); from it the
                // innermost reduced run (inner: size and stride) is inside the input per the
                // contract.
                let run = unsafe { reduce_run(op, base.offset(ioff), inner, i0) };
                for _ in 0..n_outer {
                    acc = op.merge(acc, run);
                }
            } else {
                for q in 0..n_outer {
                    // SAFETY: q < n_outer, so ioff + red_offset(q, outer) is the start of output
                    // o's q-th run, an element of the input per the contract.
                    let p = unsafe { base.offset(ioff + red_offset(q, outer)) };
                    // SAFETY: that run (inner.0 elements, inner.1 apart, from p) is reduced
                    // elements of output o, inside the input per the contract.
                    acc = op.merge(acc, unsafe { reduce_run(op, p, inner, i0 + (q * inner.0) as i64) });
                }
            }
            sink(o, acc);
        }
    }
}

/// One [`accumulate`] call as a pulp job. `with_simd` and everything it calls are inlined into
/// pulp's entry points compiled for AVX-512 / AVX2 (a closure handed to `Arch::dispatch` is
/// not inlined there and stays baseline x86-64: 128-bit vectors at best).
struct Accumulate<'a, T, R, S> {
    op: &'a R,
    g: &'a Geometry,
    red: &'a [(usize, isize)],
    base: *const T,
    i0: i64,
    range: (usize, usize),
    sink: S,
}

impl<T: Load, R: Reducer<T::D>, S: FnMut(usize, R::Acc)> pulp::WithSimd for Accumulate<'_, T, R, S> {
    type Output = ();
    #[inline(always)]
    fn with_simd<V: pulp::Simd>(mut self, _: V) {
        // SAFETY: the job is built under `accumulate`'s contract (see `run`).
        unsafe { accumulate::<T, R>(self.op, self.g, self.red, self.base, self.i0, self.range, &mut self.sink) }
    }
}

/// Stores a value into an output element of `dtype`.
///
/// # Safety
/// `p` addresses a writable element of `dtype`.
#[inline]
unsafe fn store(dtype: DType, p: *mut u8, v: Num) {
    // SAFETY: per the contract.
    crate::dispatch_all!(dtype, |O| unsafe { p.cast::<O>().write(O::from_num(v)) })
}

/// Runs `op` over `input` (already in its compute dtype `T`) reducing the dimensions marked in
/// `reduce`, writing `finish`'s values into `outs` (one or two operands of the reduced shape,
/// with or without the kept size-1 dimensions).
///
/// # Safety
/// The operands describe live tensor memory; the outputs are writable and do not overlap the
/// input.
pub unsafe fn run<T: Load, R: Reducer<T::D>>(op: &R, input: &Operand, reduce: &[bool], outs: &[Operand]) {
    let ndim = input.sizes.len();
    // Output strides per input dimension (0 for reduced ones).
    let per_dim = |o: &Operand| -> Dims<i64> {
        let keepdim = o.sizes.len() == ndim;
        let mut next = 0;
        (0..ndim)
            .map(|d| {
                if keepdim {
                    if reduce[d] { 0 } else { o.strides[d] }
                } else if reduce[d] {
                    0
                } else {
                    next += 1;
                    o.strides[next - 1]
                }
            })
            .collect()
    };
    let s0 = per_dim(&outs[0]);
    let s1 = outs.get(1).map_or_else(|| s0.clone(), per_dim);
    let g = geometry(&input.sizes, &input.strides, reduce, [&s0, &s1], !R::INDEXED);
    let (n_out, n_red) = (g.outputs(), g.reduced());
    if n_out == 0 {
        return;
    }
    let out_ptrs: Dims<(Ptr, DType)> = outs.iter().map(|o| (Ptr(o.data), o.dtype)).collect();
    let write = |o: usize, acc: R::Acc| {
        let (_, off) = g.offsets(o);
        let values = op.finish(acc, n_red as i64);
        for (k, &(p, dtype)) in out_ptrs.iter().enumerate() {
            // SAFETY: output `o` of each output operand, per the contract.
            unsafe { store(dtype, p.0.offset(off[k] * dtype.size() as isize), values[k]) };
        }
    };
    let base = Ptr(input.data);
    let threads = regen_runtime::host::num_threads();
    let work = n_out.saturating_mul(n_red.max(1));
    let arch = crate::engine::pulp_arch();
    // Outputs `range` accumulated whole, each written by the thread that reduced it.
    let whole = |range: (usize, usize)| {
        let sink: &mut dyn FnMut(usize, R::Acc) = &mut |o, a| write(o, a);
        arch.dispatch(Accumulate { op, g: &g, red: &g.red, base: base.get() as *const T, i0: 0, range, sink });
    };
    if work < GRAIN || threads < 2 {
        whole((0, n_out));
    } else if n_out >= threads || g.red.is_empty() || g.red[0].0 < 2 {
        let grain = (GRAIN / n_red.max(1)).max(1);
        regen_runtime::host::parallel_for(n_out, grain, |b, e| whole((b, e)));
    } else {
        // Few outputs: split the outermost reduced dimension into one chunk per thread and
        // merge the partial accumulators in order.
        let (outer_n, outer_s) = g.red[0];
        let below = (n_red / outer_n) as i64;
        let chunks = threads.min(outer_n);
        let per = outer_n.div_ceil(chunks);
        let partials: Vec<std::sync::Mutex<Vec<R::Acc>>> =
            (0..chunks).map(|_| std::sync::Mutex::new(Vec::new())).collect();
        regen_runtime::host::parallel_for(chunks, 1, |b, e| {
            for (c, slot) in partials.iter().enumerate().take(e).skip(b) {
                let start = c * per;
                let len = per.min(outer_n.saturating_sub(start));
                let mut red = g.red.clone();
                red[0].0 = len;
                let mut accs = vec![op.init(); n_out];
                if len > 0 {
                    // SAFETY: the chunk's part of the input, per the contract.
                    let p = unsafe { (base.get() as *const T).offset(start as isize * outer_s) };
                    let sink: &mut dyn FnMut(usize, R::Acc) = &mut |o, a| accs[o] = a;
                    let i0 = start as i64 * below;
                    arch.dispatch(Accumulate { op, g: &g, red: &red, base: p, i0, range: (0, n_out), sink });
                }
                *slot.lock().unwrap_or_else(|e| e.into_inner()) = accs;
            }
        });
        let mut total = vec![op.init(); n_out];
        for p in partials {
            let p = p.into_inner().unwrap_or_else(|e| e.into_inner());
            for (t, a) in total.iter_mut().zip(p) {
                *t = op.merge(*t, a);
            }
        }
        for (o, t) in total.into_iter().enumerate() {
            write(o, t);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Argument handling shared by the ops: dims, output shapes, compute dtypes.

pub use crate::engine::iter::wrap_dim;

/// The reduced-dimension mask of `dim` (None or empty: every dimension).
pub fn dim_mask(dim: Option<&[i64]>, ndim: usize) -> Result<Vec<bool>> {
    match dim {
        None | Some([]) => Ok(vec![true; ndim]),
        Some(list) => {
            let mut mask = vec![false; ndim.max(1)];
            for &d in list {
                let w = wrap_dim(d, ndim)?;
                if mask[w] {
                    return Err(Error::runtime(format!("dim {w} appears multiple times in the list of dims")));
                }
                mask[w] = true;
            }
            mask.truncate(ndim);
            Ok(mask)
        }
    }
}

/// The output shape: reduced dimensions removed, or kept as 1.
pub fn reduced_shape(sizes: &[i64], mask: &[bool], keepdim: bool) -> Vec<i64> {
    sizes
        .iter()
        .zip(mask)
        .filter_map(|(&s, &r)| match (r, keepdim) {
            (true, true) => Some(1),
            (true, false) => None,
            (false, _) => Some(s),
        })
        .collect()
}

/// `t` as an operand of dtype `dtype`: itself, or a contiguous converted copy (kept alive in
/// the returned tensor), as ATen's TensorIterator converts inputs on CPU. Lazily conjugated or
/// negated views are resolved first.
pub fn input_as(t: TensorRef<'_>, dtype: DType) -> Result<(Operand, Option<Tensor>)> {
    let resolved = crate::ops::copy::resolved(t)?;
    let t = resolved.as_ref().map_or(t, Tensor::as_ref);
    let src = Operand::of(&t)?;
    if src.dtype == dtype {
        return Ok((src, resolved));
    }
    let tmp = regen_runtime::host::empty_strided(&src.sizes, &contiguous_strides(&src.sizes), dtype.code())?;
    let dst = Operand::of(&tmp.as_ref())?;
    // SAFETY: `dst` is a fresh tensor of `src`'s shape.
    unsafe { copy_cast(&src, &dst) };
    Ok((dst, Some(tmp)))
}

pub use crate::engine::iter::new_tensor;

/// Runs `op` on `input` in dtype `compute` (converting first if needed) into the outputs, each
/// resized to the reduced shape.
pub fn reduce_into<R>(
    op: &R,
    input: TensorRef<'_>,
    compute: DType,
    mask: &[bool],
    keepdim: bool,
    outs: &[TensorRef<'_>],
) -> Result<()>
where
    R: Reducer<i64> + Reducer<f32> + Reducer<f64> + Reducer<Complex32> + Reducer<Complex64>,
{
    let shape = reduced_shape(input.sizes(), mask, keepdim);
    let (src, _keep) = input_as(input, compute)?;
    let mut ops: Dims<Operand> = Dims::new();
    for o in outs {
        ops.push(with_size(o, &shape, Operand::of)?);
    }
    // SAFETY: live tensors; outputs resized to the reduced shape.
    unsafe {
        dispatch!(compute, [Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64, C64, C128], |T| run::<T, R>(op, &src, mask, &ops), else unreachable!())
    };
    Ok(())
}

/// The dtype name as PyTorch's messages spell it (`Float`, `Long`).
pub fn name(t: &TensorRef<'_>) -> Result<&'static str> {
    Ok(DType::from_scalar_type(t.dtype())?.name())
}

pub fn opt_dtype(d: Option<ScalarType>) -> Result<Option<DType>> {
    d.map(DType::from_scalar_type).transpose()
}

/// sum's and prod's result dtype without `dtype=`: integers and bool widen to int64.
pub fn widened(d: DType) -> DType {
    if matches!(d.category(), Category::Bool | Category::Integral) { DType::I64 } else { d }
}

/// amax/amin/max/min's checks: no complex, non-empty reduced dimensions.
pub fn check_ordered(op: &str, t: &TensorRef<'_>, mask: &[bool]) -> Result<()> {
    if t.numel() == 0 {
        for (d, (&s, &r)) in t.sizes().iter().zip(mask).enumerate() {
            if r && s == 0 {
                return Err(Error::index(format!("{op}(): Expected reduction dim {d} to have non-zero size.")));
            }
        }
    }
    // An empty result computes nothing, so CPU never reaches its dtype check.
    let d = dtype_of(t)?;
    if d.is_complex() && t.numel() > 0 {
        return Err(Error::not_implemented(format!("\"{op}\" not implemented for '{}'", d.name())));
    }
    Ok(())
}

/// The correction of var/std (default 1).
pub fn correction(c: Option<Scalar>) -> f64 {
    c.map_or(1.0, |s| s.to_f64())
}

/// This family's kernels: group `reduce` of regen.toml's `[implement]`.
impl crate::ReduceKernels for crate::Reference {
    fn sum_int_list_out(
        &self,
        self_: TensorRef<'_>,
        dim: Option<&[i64]>,
        keepdim: bool,
        _dtype: Option<ScalarType>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::ops::reduce as r;
        let mask = r::dim_mask(dim, self_.dim())?;
        r::reduce_into(&r::Sum::<false, false>, self_, dtype_of(&out)?, &mask, keepdim, &[out])
    }

    fn nansum_out(
        &self,
        self_: TensorRef<'_>,
        dim: Option<&[i64]>,
        keepdim: bool,
        _dtype: Option<ScalarType>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::ops::reduce as r;
        if dtype_of(&self_)?.is_complex() {
            return Err(Error::not_implemented("nansum does not support complex inputs"));
        }
        let mask = r::dim_mask(dim, self_.dim())?;
        r::reduce_into(&r::Sum::<true, false>, self_, dtype_of(&out)?, &mask, keepdim, &[out])
    }

    fn nansum(
        &self,
        self_: TensorRef<'_>,
        dim: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<ScalarType>,
    ) -> Result<Tensor> {
        use crate::ops::reduce as r;
        let d = r::opt_dtype(dtype)?.unwrap_or(r::widened(dtype_of(&self_)?));
        let mask = r::dim_mask(dim, self_.dim())?;
        let out = r::new_tensor(&r::reduced_shape(self_.sizes(), &mask, keepdim), d)?;
        self.nansum_out(self_, dim, keepdim, dtype, out.as_ref())?;
        Ok(out)
    }

    fn mean_out(
        &self,
        self_: TensorRef<'_>,
        dim: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<ScalarType>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::ops::reduce as r;
        let input = dtype_of(&self_)?;
        if dtype.is_none() && !(input.is_floating() || input.is_complex()) {
            return Err(Error::runtime(format!(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
                input.name()
            )));
        }
        let mask = r::dim_mask(dim, self_.dim())?;
        r::reduce_into(&r::Sum::<false, true>, self_, dtype_of(&out)?, &mask, keepdim, &[out])
    }

    fn prod(&self, self_: TensorRef<'_>, dtype: Option<ScalarType>) -> Result<Tensor> {
        use crate::ops::reduce as r;
        let d = r::opt_dtype(dtype)?.unwrap_or(r::widened(dtype_of(&self_)?));
        let out = r::new_tensor(&[], d)?;
        let mask = vec![true; self_.dim()];
        r::reduce_into(&r::Prod, self_, d, &mask, false, &[out.as_ref()])?;
        Ok(out)
    }

    fn prod_int_out(
        &self,
        self_: TensorRef<'_>,
        dim: i64,
        keepdim: bool,
        _dtype: Option<ScalarType>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use crate::ops::reduce as r;
        let mask = r::dim_mask(Some(&[dim]), self_.dim())?;
        r::reduce_into(&r::Prod, self_, dtype_of(&out)?, &mask, keepdim, &[out])
    }

    fn amax_out(&self, self_: TensorRef<'_>, dim: &[i64], keepdim: bool, out: TensorRef<'_>) -> Result<()> {
        extremum_value::<true>("amax", self_, dim, keepdim, out)
    }

    fn amin_out(&self, self_: TensorRef<'_>, dim: &[i64], keepdim: bool, out: TensorRef<'_>) -> Result<()> {
        extremum_value::<false>("amin", self_, dim, keepdim, out)
    }

    fn aminmax_out(
        &self,
        self_: TensorRef<'_>,
        dim: Option<i64>,
        keepdim: bool,
        min: TensorRef<'_>,
        max: TensorRef<'_>,
    ) -> Result<()> {
        use crate::ops::reduce as r;
        let dims = dim.map(|d| [d]);
        let mask = r::dim_mask(dims.as_ref().map(|d| &d[..]), self_.dim())?;
        r::check_ordered("aminmax", &self_, &mask)?;
        if self_.numel() == 0 && dim.is_none() {
            return Err(Error::runtime(
                "aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.",
            ));
        }
        let d = dtype_of(&self_)?;
        r::reduce_into(&r::MinMax, self_, d, &mask, keepdim, &[min, max])
    }

    fn max_dim_max(
        &self,
        self_: TensorRef<'_>,
        dim: i64,
        keepdim: bool,
        max: TensorRef<'_>,
        max_values: TensorRef<'_>,
    ) -> Result<()> {
        extremum_dim::<true>("max", self_, Some(dim), keepdim, Some(max), max_values)
    }

    fn min_dim_min(
        &self,
        self_: TensorRef<'_>,
        dim: i64,
        keepdim: bool,
        min: TensorRef<'_>,
        min_indices: TensorRef<'_>,
    ) -> Result<()> {
        extremum_dim::<false>("min", self_, Some(dim), keepdim, Some(min), min_indices)
    }

    fn max(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        let out = new_tensor(&[], dtype_of(&self_)?)?;
        self.max_unary_out(self_, out.as_ref())?;
        Ok(out)
    }

    fn max_unary_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        extremum_all::<true>("max", self_, out)
    }

    fn min(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        let out = new_tensor(&[], dtype_of(&self_)?)?;
        self.min_unary_out(self_, out.as_ref())?;
        Ok(out)
    }

    fn min_unary_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        extremum_all::<false>("min", self_, out)
    }

    fn argmax_out(&self, self_: TensorRef<'_>, dim: Option<i64>, keepdim: bool, out: TensorRef<'_>) -> Result<()> {
        extremum_dim::<true>("argmax", self_, dim, keepdim, None, out)
    }

    fn argmin_out(&self, self_: TensorRef<'_>, dim: Option<i64>, keepdim: bool, out: TensorRef<'_>) -> Result<()> {
        extremum_dim::<false>("argmin", self_, dim, keepdim, None, out)
    }

    fn var_correction_out(
        &self,
        self_: TensorRef<'_>,
        dim: Option<&[i64]>,
        correction: Option<Scalar>,
        keepdim: bool,
        out: TensorRef<'_>,
    ) -> Result<()> {
        moments("var", self_, dim, correction, keepdim, false, &[out])
    }

    fn std_correction_out(
        &self,
        self_: TensorRef<'_>,
        dim: Option<&[i64]>,
        correction: Option<Scalar>,
        keepdim: bool,
        out: TensorRef<'_>,
    ) -> Result<()> {
        moments("std", self_, dim, correction, keepdim, true, &[out])
    }

    fn var_correction(
        &self,
        self_: TensorRef<'_>,
        dim: Option<&[i64]>,
        correction: Option<Scalar>,
        keepdim: bool,
    ) -> Result<Tensor> {
        let [v, _] = moments_new("var", self_, dim, correction, keepdim, false, false)?;
        Ok(v)
    }

    fn std_correction(
        &self,
        self_: TensorRef<'_>,
        dim: Option<&[i64]>,
        correction: Option<Scalar>,
        keepdim: bool,
    ) -> Result<Tensor> {
        let [v, _] = moments_new("std", self_, dim, correction, keepdim, true, false)?;
        Ok(v)
    }

    fn var_mean_correction(
        &self,
        self_: TensorRef<'_>,
        dim: Option<&[i64]>,
        correction: Option<Scalar>,
        keepdim: bool,
    ) -> Result<(Tensor, Tensor)> {
        let [v, m] = moments_new("var_mean", self_, dim, correction, keepdim, false, true)?;
        Ok((v, m))
    }

    fn std_mean_correction(
        &self,
        self_: TensorRef<'_>,
        dim: Option<&[i64]>,
        correction: Option<Scalar>,
        keepdim: bool,
    ) -> Result<(Tensor, Tensor)> {
        let [v, m] = moments_new("std_mean", self_, dim, correction, keepdim, true, true)?;
        Ok((v, m))
    }

    fn norm_out(
        &self,
        self_: TensorRef<'_>,
        p: Option<Scalar>,
        dim: &[i64],
        keepdim: bool,
        out: TensorRef<'_>,
    ) -> Result<()> {
        let ord = p.map_or(2.0, |p| p.to_f64());
        norm("norm", self_, ord, Some(dim), keepdim, None, out)
    }

    fn norm_dtype_out(
        &self,
        self_: TensorRef<'_>,
        p: Option<Scalar>,
        dim: &[i64],
        keepdim: bool,
        dtype: ScalarType,
        out: TensorRef<'_>,
    ) -> Result<()> {
        let ord = p.map_or(2.0, |p| p.to_f64());
        norm("norm", self_, ord, Some(dim), keepdim, Some(dtype), out)
    }

    fn linalg_vector_norm_out(
        &self,
        self_: TensorRef<'_>,
        ord: Scalar,
        dim: Option<&[i64]>,
        keepdim: bool,
        dtype: Option<ScalarType>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        norm("linalg.vector_norm", self_, ord.to_f64(), dim, keepdim, dtype, out)
    }

    fn any_out(&self, self_: TensorRef<'_>, dim: i64, keepdim: bool, out: TensorRef<'_>) -> Result<()> {
        use crate::ops::reduce as r;
        let mask = r::dim_mask(Some(&[dim]), self_.dim())?;
        let d = dtype_of(&self_)?;
        r::reduce_into(&r::AnyAll::<false>, self_, d, &mask, keepdim, &[out])
    }

    fn any_all_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        use crate::ops::reduce as r;
        let mask = vec![true; self_.dim()];
        let d = dtype_of(&self_)?;
        r::reduce_into(&r::AnyAll::<false>, self_, d, &mask, false, &[out])
    }

    fn all_out(&self, self_: TensorRef<'_>, dim: i64, keepdim: bool, out: TensorRef<'_>) -> Result<()> {
        use crate::ops::reduce as r;
        let mask = r::dim_mask(Some(&[dim]), self_.dim())?;
        let d = dtype_of(&self_)?;
        r::reduce_into(&r::AnyAll::<true>, self_, d, &mask, keepdim, &[out])
    }

    fn all_all_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        use crate::ops::reduce as r;
        let mask = vec![true; self_.dim()];
        let d = dtype_of(&self_)?;
        r::reduce_into(&r::AnyAll::<true>, self_, d, &mask, false, &[out])
    }

    fn count_nonzero_dim_int_list(&self, self_: TensorRef<'_>, dim: &[i64]) -> Result<Tensor> {
        use crate::ops::reduce as r;
        let mask = r::dim_mask(Some(dim), self_.dim())?;
        let out = r::new_tensor(&r::reduced_shape(self_.sizes(), &mask, false), r::DType::I64)?;
        let d = dtype_of(&self_)?;
        r::reduce_into(&r::CountNonzero, self_, d, &mask, false, &[out.as_ref()])?;
        Ok(out)
    }
}

/// amax / amin.
pub fn extremum_value<const MAX: bool>(
    op: &str,
    t: TensorRef<'_>,
    dim: &[i64],
    keepdim: bool,
    out: TensorRef<'_>,
) -> Result<()> {
    if dim.is_empty() && t.numel() == 0 {
        return Err(Error::runtime(format!(
            "{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
        )));
    }
    let mask = dim_mask(Some(dim), t.dim())?;
    check_ordered(op, &t, &mask)?;
    let (d, od) = (dtype_of(&t)?, dtype_of(&out)?);
    if d != od {
        return Err(Error::runtime(format!(
            "Expected the dtype for input and out to match, but got {} for input's dtype and {} for out's dtype.",
            d.name(),
            od.name()
        )));
    }
    reduce_into(&ExtremumValue::<MAX>, t, d, &mask, keepdim, &[out])
}

/// max.dim / min.dim (values and indices) and argmax / argmin (indices only; `dim` None
/// reduces the flattened tensor).
pub fn extremum_dim<const MAX: bool>(
    op: &str,
    t: TensorRef<'_>,
    dim: Option<i64>,
    keepdim: bool,
    values: Option<TensorRef<'_>>,
    indices: TensorRef<'_>,
) -> Result<()> {
    let dims = dim.map(|d| [d]);
    let mask = dim_mask(dims.as_ref().map(|d| &d[..]), t.dim())?;
    if t.numel() == 0 && dim.is_none() {
        return Err(Error::runtime(format!("{op}(): Expected reduction dim to be specified for input.numel() == 0.")));
    }
    check_ordered(op, &t, &mask)?;
    let d = dtype_of(&t)?;
    // argmax over every dimension returns a 0-dim index (or all-ones shape with keepdim).
    let keep = keepdim;
    match values {
        Some(v) => reduce_into(&Extremum::<MAX>, t, d, &mask, keep, &[v, indices]),
        None => {
            // The engine writes outputs in order: a scratch tensor for the values.
            let shape = reduced_shape(t.sizes(), &mask, keep);
            let scratch = new_tensor(&shape, d)?;
            reduce_into(&Extremum::<MAX>, t, d, &mask, keep, &[scratch.as_ref(), indices])
        }
    }
}

/// max() / min() of the whole tensor.
pub fn extremum_all<const MAX: bool>(op: &str, t: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
    if t.numel() == 0 {
        return Err(Error::runtime(format!(
            "{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
        )));
    }
    let mask = vec![true; t.dim()];
    check_ordered(op, &t, &mask)?;
    let d = dtype_of(&t)?;
    reduce_into(&ExtremumValue::<MAX>, t, d, &mask, false, &[out])
}

fn moments_checks(op: &str, t: &TensorRef<'_>) -> Result<DType> {
    let d = dtype_of(t)?;
    if !(d.is_floating() || d.is_complex()) {
        return Err(Error::not_implemented(format!(
            "{op}: std and var only support floating point and complex dtypes"
        )));
    }
    Ok(d)
}

/// var / std into `outs` (var or std, then the mean for var_mean / std_mean).
pub fn moments(
    op: &str,
    t: TensorRef<'_>,
    dim: Option<&[i64]>,
    c: Option<Scalar>,
    keepdim: bool,
    take_sqrt: bool,
    outs: &[TensorRef<'_>],
) -> Result<()> {
    let d = moments_checks(op, &t)?;
    let mask = dim_mask(dim, t.dim())?;
    let m = Moments { correction: correction(c), take_sqrt };
    if outs.len() == 1 {
        let shape = reduced_shape(t.sizes(), &mask, keepdim);
        let scratch = new_tensor(&shape, d)?;
        return reduce_into(&m, t, d, &mask, keepdim, &[outs[0], scratch.as_ref()]);
    }
    reduce_into(&m, t, d, &mask, keepdim, outs)
}

/// var / std / var_mean / std_mean as new tensors.
pub fn moments_new(
    op: &str,
    t: TensorRef<'_>,
    dim: Option<&[i64]>,
    c: Option<Scalar>,
    keepdim: bool,
    take_sqrt: bool,
    with_mean: bool,
) -> Result<[Tensor; 2]> {
    let d = moments_checks(op, &t)?;
    let mask = dim_mask(dim, t.dim())?;
    let shape = reduced_shape(t.sizes(), &mask, keepdim);
    let v = new_tensor(&shape, d.to_real())?;
    let mean = new_tensor(&shape, d)?;
    let _ = with_mean;
    reduce_into(&Moments { correction: correction(c), take_sqrt }, t, d, &mask, keepdim, &[v.as_ref(), mean.as_ref()])?;
    Ok([v, mean])
}

/// norm / linalg_vector_norm.
pub fn norm(
    op: &str,
    t: TensorRef<'_>,
    ord: f64,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<ScalarType>,
    out: TensorRef<'_>,
) -> Result<()> {
    let input = dtype_of(&t)?;
    if !(input.is_floating() || input.is_complex()) {
        return Err(Error::not_implemented(format!(
            "{op}: Expected a floating point or complex tensor as input. Got {}",
            input.name()
        )));
    }
    let mask = dim_mask(dim, t.dim())?;
    if (ord < 0.0 || ord == f64::INFINITY) && t.numel() == 0 {
        let empty_reduced = t.dim() == 0 || t.sizes().iter().zip(&mask).any(|(&s, &r)| r && s == 0);
        if empty_reduced {
            return Err(Error::runtime(format!(
                "{op} cannot compute the {ord} norm on an empty tensor because the operation does not have an identity"
            )));
        }
    }
    let compute = match opt_dtype(dtype)? {
        Some(d) if input.is_complex() && !d.is_complex() => {
            return Err(Error::runtime(format!(
                "linalg.vector_norm: dtype should be complex for complex inputs, but got {}",
                d.name()
            )));
        }
        Some(d) => d,
        None => input,
    };
    reduce_into(&Norm { ord }, t, compute, &mask, keepdim, &[out])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_over_inner_outer_and_all_dims() {
        let mut a: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let input = Operand::over(&mut a, &[3, 4], &[4, 1], DType::F32);
        let mut rows = [0f32; 3];
        let mut cols = [0f32; 4];
        let mut all = [0f32; 1];
        // SAFETY: the operands describe the local arrays.
        unsafe {
            run::<f32, _>(
                &Sum::<false, false>,
                &input,
                &[false, true],
                &[Operand::over(&mut rows, &[3], &[1], DType::F32)],
            );
            run::<f32, _>(
                &Sum::<false, false>,
                &input,
                &[true, false],
                &[Operand::over(&mut cols, &[4], &[1], DType::F32)],
            );
            run::<f32, _>(
                &Sum::<false, false>,
                &input,
                &[true, true],
                &[Operand::over(&mut all, &[], &[], DType::F32)],
            );
        }
        assert_eq!(rows, [6., 22., 38.]);
        assert_eq!(cols, [12., 15., 18., 21.]);
        assert_eq!(all, [66.]);
    }

    #[test]
    fn argmax_takes_the_first_maximum_and_the_first_nan() {
        let mut a = [1f64, 5., 5., f64::NAN, 2., f64::NAN];
        let input = Operand::over(&mut a, &[6], &[1], DType::F64);
        let mut v = [0f64];
        let mut i = [0i64];
        // SAFETY: as above.
        unsafe {
            run::<f64, _>(
                &Extremum::<true>,
                &input,
                &[true],
                &[Operand::over(&mut v, &[], &[], DType::F64), Operand::over(&mut i, &[], &[], DType::I64)],
            )
        };
        assert!(v[0].is_nan());
        assert_eq!(i[0], 3);
        let mut b = [1i32, 5, 5, 2];
        let input = Operand::over(&mut b, &[4], &[1], DType::I32);
        let mut v = [0i32];
        // SAFETY: as above.
        unsafe {
            run::<i32, _>(
                &Extremum::<true>,
                &input,
                &[true],
                &[Operand::over(&mut v, &[], &[], DType::I32), Operand::over(&mut i, &[], &[], DType::I64)],
            )
        };
        assert_eq!((v[0], i[0]), (5, 1));
    }

    #[test]
    fn cascade_sum_is_accurate() {
        let mut a: Vec<f32> = (0..1_000_003).map(|i| 0.1 + (i % 7) as f32 * 1e-3).collect();
        let exact: f64 = a.iter().map(|&x| x as f64).sum();
        let n = a.len() as i64;
        let input = Operand::over(&mut a, &[n], &[1], DType::F32);
        let mut s = [0f32];
        // SAFETY: as above.
        unsafe { run::<f32, _>(&Sum::<false, false>, &input, &[true], &[Operand::over(&mut s, &[], &[], DType::F32)]) };
        assert!(((s[0] as f64) - exact).abs() / exact < 1e-6, "{} vs {exact}", s[0]);
    }

    /// The recursive form of `cascade` (halves rounded up to whole lanes).
    fn cascade_recursive(xs: &[f32]) -> f32 {
        if xs.len() > CASCADE_BASE {
            let half = (xs.len() / 2).next_multiple_of(LANES);
            return cascade_recursive(&xs[..half]) + cascade_recursive(&xs[half..]);
        }
        cascade_base::<f32, false>(xs)
    }

    #[test]
    fn cascade_walks_the_recursive_tree() {
        let xs: Vec<f32> = (0..100_003).map(|i| ((i * 7919) % 1013) as f32 * 1.37e-3 + 1e3).collect();
        for n in [0, 1, 2047, 2048, 2049, 4096, 5000, 33_333, 100_003] {
            let got = cascade::<f32, false>(&xs[..n]);
            assert_eq!(got.to_bits(), cascade_recursive(&xs[..n]).to_bits(), "n = {n}");
        }
    }

    /// Reduces `rows` equal rows of `row` as a stride-0 (expanded) input and as a materialised
    /// one, over the rows (row strategy) and over everything (runs reused). The copies are a
    /// padded row apart, so the loops are the same (dense rows would coalesce into one run).
    fn expanded_vs_materialised<R: Reducer<f32>>(op: &R, rows: usize, row: &[f32]) {
        let cols = row.len();
        let mut row = row.to_vec();
        let mut full: Vec<f32> = (0..rows).flat_map(|_| row.iter().copied().chain([0.0])).collect();
        let (r, c) = (rows as i64, cols as i64);
        let expanded = Operand::over(&mut row, &[r, c], &[0, 1], DType::F32);
        let dense = Operand::over(&mut full, &[r, c], &[c + 1, 1], DType::F32);
        let (mut a, mut b) = (vec![0f32; cols], vec![0f32; cols]);
        let (mut x, mut y) = ([0f32], [0f32]);
        // SAFETY: the operands describe the local arrays.
        unsafe {
            run::<f32, _>(op, &expanded, &[true, false], &[Operand::over(&mut a, &[c], &[1], DType::F32)]);
            run::<f32, _>(op, &dense, &[true, false], &[Operand::over(&mut b, &[c], &[1], DType::F32)]);
            run::<f32, _>(op, &expanded, &[true, true], &[Operand::over(&mut x, &[], &[], DType::F32)]);
            run::<f32, _>(op, &dense, &[true, true], &[Operand::over(&mut y, &[], &[], DType::F32)]);
        }
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a), bits(&b), "rows {rows}");
        assert_eq!(x[0].to_bits(), y[0].to_bits(), "rows {rows}");
    }

    #[test]
    fn expanded_dims_reduce_as_the_full_walk() {
        let row: Vec<f32> = (0..37).map(|i| 0.1 + i as f32 * 1.3e-2).collect();
        for rows in [1, 2, 15, 16, 17, 31, 32, 33, 255, 256, 257, 4095, 4096, 4097, 70_001] {
            expanded_vs_materialised(&Sum::<false, false>, rows, &row);
            expanded_vs_materialised(&Sum::<false, true>, rows, &row);
            expanded_vs_materialised(&Moments { correction: 1.0, take_sqrt: false }, rows, &row);
            expanded_vs_materialised(&Prod, rows.min(300), &row);
            expanded_vs_materialised(&ExtremumValue::<true>, rows, &row);
        }
        let mut nan = row.clone();
        nan[3] = f32::NAN;
        expanded_vs_materialised(&ExtremumValue::<false>, 40, &nan);
    }
}
