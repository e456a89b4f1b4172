//! Binary elementwise ops as table rows. `binary_ops!` defines each op once — its scalar
//! function per dtype domain (`b` bool, `i` integers through i64, `f` reals generic over
//! [`Real`], `c` complex) and whether integers compute as float — and [`binary_table!`](crate::binary_table) lists the
//! generated `BinaryKernels` methods each op serves, with their argument shape: `tt` (tensor, tensor),
//! `ts` (tensor, Scalar), `st` (Scalar, tensor), `tta` (tensor, tensor, alpha), and `p` before
//! them for predicates, whose result is Bool. Adding an op is a row in each (and regen.toml).

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};

use half::{bf16, f16};
use num_complex::Complex;
use regen_runtime::{Error, Result, Scalar, TensorRef};

use crate::engine::dispatch::{Domains, Float, Int, dispatch};
use crate::engine::dtype::{DType, Half, Num};
use crate::engine::iter::Iter;
use crate::engine::loops::{self, Vector2};
use crate::engine::operands::{Config, Input, Prepared, elementwise, elementwise_new};
use crate::engine::scalar::{self as s, Real};

/// One binary op.
pub trait Binary: Sync {
    const NAME: &'static str;
    const INT_TO_FLOAT: bool;
    const BOOL: bool;
    const INT: bool;
    const FLOAT: bool;
    const COMPLEX: bool;
    /// A two-input vector function for float32 runs (kernels/math/vmath.rs), which also serves
    /// float16 and bfloat16 (widened to f32: `loops::binary_widened`).
    const V32: Option<Vector2<f32>> = None;
    /// The same for float64 runs.
    const V64: Option<Vector2<f64>> = None;
    fn b(_: bool, _: bool) -> bool {
        unreachable!("checked by BOOL")
    }
    fn i(_: i64, _: i64) -> i64 {
        unreachable!("checked by INT")
    }
    fn f<T: Real>(_: T, _: T) -> T {
        unreachable!("checked by FLOAT")
    }
    fn c<T: Real>(_: Complex<T>, _: Complex<T>) -> Complex<T> {
        unreachable!("checked by COMPLEX")
    }
}

/// One predicate (comparisons, logical ops): the result is Bool.
pub trait Predicate: Sync {
    const NAME: &'static str;
    const BOOL: bool;
    const INT: bool;
    const FLOAT: bool;
    const COMPLEX: bool;
    fn b(_: bool, _: bool) -> bool {
        unreachable!("checked by BOOL")
    }
    fn i(_: i64, _: i64) -> bool {
        unreachable!("checked by INT")
    }
    fn f<T: Real>(_: T, _: T) -> bool {
        unreachable!("checked by FLOAT")
    }
    fn c<T: Real>(_: Complex<T>, _: Complex<T>) -> bool {
        unreachable!("checked by COMPLEX")
    }
}

/// Set by an integer kernel that met a zero divisor (checked after the loop, so the loop
/// itself has no error path).
static ZERO_DIVISION: AtomicBool = AtomicBool::new(false);

/// An integer division's divisor: 1 where it is 0, after flagging the error.
#[inline(always)]
pub fn divisor(y: i64) -> i64 {
    if y == 0 {
        ZERO_DIVISION.store(true, Ordering::Relaxed);
        1
    } else {
        y
    }
}

fn zero_division_check() -> Result<()> {
    if ZERO_DIVISION.swap(false, Ordering::Relaxed) { Err(Error::runtime("ZeroDivisionError")) } else { Ok(()) }
}

/// `out = a + alpha * b` as ATen's CPU `add` kernel rounds it (bit for bit): alpha is first
/// converted to the element type; f32 and f64 use a fused multiply-add everywhere (the vector
/// body's `fmadd`, and the scalar loop, which the compiler contracts); f16 and bf16 use an f32
/// fused multiply-add rounded once in the vector body of a dense run (whole multiples of two
/// vectors, as `vectorized_loop`: 32 elements) and round the product, then the sum, in the scalar loop.
pub(crate) trait ScaledAdd: Copy + Send + Sync + Sized {
    /// One run: `n` elements at byte strides `s` (output, `a`, `b`).
    ///
    /// # Safety
    /// The run's operands hold `n` elements at those strides; an input that overlaps the output
    /// is the output itself (in place).
    unsafe fn run_one(o: *mut Self, ins: [*const Self; 2], s: &[isize], n: usize, alpha: f64, scalar_other: bool);
}

/// Every run of an iterator through [`ScaledAdd::run_one`].
fn scaled_add_iter<T: ScaledAdd>(it: &Iter, alpha: f64, scalar_other: bool) {
    it.for_each(move |p, s, n| {
        let ins = [p[1].cast::<T>().cast_const(), p[2].cast::<T>().cast_const()];
        // SAFETY: the iterator's runs lie inside every operand.
        unsafe { T::run_one(p[0].cast::<T>(), ins, s, n, alpha, scalar_other) }
    });
}

/// Bytes of one ATen CPU vector in the elementwise kernels on this machine: 32 with AVX2 and FMA,
/// even where the CPU capability is AVX-512, because a kernel runs its AVX-512 build only when it
/// opts in (`ALSO_REGISTER_AVX512_DISPATCH`), which the binary kernels do not (measured: bf16
/// `add` with alpha vectorises runs of 32 elements on an AVX-512 machine). A model of ATen's
/// kernels, whose rounding the device reproduces, not a choice of the device's own vector code:
/// `REGEN_CPU_CAPABILITY` does not change it.
pub(crate) fn vector_bytes() -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        return 32;
    }
    16
}

impl ScaledAdd for f32 {
    unsafe fn run_one(o: *mut f32, ins: [*const f32; 2], s: &[isize], n: usize, alpha: f64, scalar_other: bool) {
        // SAFETY: forwarded contract.
        unsafe { scaled_add_full(o, ins, s, n, alpha as f32, scalar_other) }
    }
}

impl ScaledAdd for f64 {
    unsafe fn run_one(o: *mut f64, ins: [*const f64; 2], s: &[isize], n: usize, alpha: f64, scalar_other: bool) {
        // SAFETY: forwarded contract.
        unsafe { scaled_add_full(o, ins, s, n, alpha, scalar_other) }
    }
}

/// `a + alpha * b` in float32 and float64: every element fuses, but for the scalar tail
/// against a one-element `other` (a CPU scalar to ATen), which adds the product `alpha * other`
/// computed once and rounded.
///
/// # Safety
/// As [`ScaledAdd::run_one`].
#[inline(always)]
unsafe fn scaled_add_full<T: num_traits::Float + Send + Sync>(
    o: *mut T,
    ins: [*const T; 2],
    s: &[isize],
    n: usize,
    al: T,
    scalar_other: bool,
) {
    // Every closure here is `#[inline(always)]`, so it is compiled inside the vector tier's
    // function: one compiled on its own lacks the tier's features, and its `mul_add` is a call
    // to libm (float32 `add` with alpha took 10x CPU's time so).
    // SAFETY: forwarded contract.
    unsafe {
        scaled_add_run(
            o,
            ins,
            s,
            n,
            #[inline(always)]
            move |o, ins, s, n| {
                // SAFETY: forwarded from `scaled_add_run`.
                _ = loops::contiguous(
                    o,
                    ins,
                    s,
                    n,
                    #[inline(always)]
                    move |[x, y]: [T; 2]| y.mul_add(al, x),
                )
            },
            #[inline(always)]
            move |x: T, y: T| if scalar_other { x + al * y } else { y.mul_add(al, x) },
        )
    }
}

impl ScaledAdd for f16 {
    unsafe fn run_one(o: *mut f16, ins: [*const f16; 2], s: &[isize], n: usize, alpha: f64, _: bool) {
        // SAFETY: forwarded contract.
        unsafe { scaled_add_half(o, ins, s, n, f16::from_f32(alpha as f32)) }
    }
}

impl ScaledAdd for bf16 {
    unsafe fn run_one(o: *mut bf16, ins: [*const bf16; 2], s: &[isize], n: usize, alpha: f64, _: bool) {
        // SAFETY: forwarded contract.
        unsafe { scaled_add_half(o, ins, s, n, bf16::from_f32(alpha as f32)) }
    }
}

/// `a + alpha * b` in float16 and bfloat16: ATen's vector loop fuses in float32; its scalar
/// tail rounds the product to the type first. `alpha` comes through float, as `c10::Half` and
/// `c10::BFloat16` are made from a double.
///
/// # Safety
/// As [`ScaledAdd::run_one`].
#[inline(always)]
unsafe fn scaled_add_half<T: Half>(o: *mut T, ins: [*const T; 2], s: &[isize], n: usize, alpha: T) {
    let al = alpha.to_acc();
    // With the kernels' own conversions inside the vector tier, the fused part vectorises:
    // element by element through `half`'s conversions (a call each) it took 36x (bfloat16) and
    // 109x (float16) CPU's time. float16, whose conversions are bit arithmetic to the compiler,
    // converts by the tier's instructions sixteen lanes at a time ([`loops::lanes`]).
    // SAFETY: forwarded contract.
    unsafe {
        scaled_add_run(
            o,
            ins,
            s,
            n,
            #[inline(always)]
            move |o, ins, s, n| {
                // SAFETY: forwarded from `scaled_add_run`.
                if T::FUSES {
                    loops::contiguous(
                        o,
                        ins,
                        s,
                        n,
                        #[inline(always)]
                        move |[x, y]: [T; 2]| T::from_acc(y.to_acc().mul_add(al, x.to_acc())),
                    );
                } else {
                    loops::lanes(
                        o,
                        ins,
                        s,
                        n,
                        #[inline(always)]
                        move |[x, y]: [f32; 2]| y.mul_add(al, x),
                    );
                }
            },
            #[inline(always)]
            move |x, y| T::from_acc(x.to_acc() + T::from_acc(al * y.to_acc()).to_acc()),
        )
    }
}

/// One run of `out = a + alpha * b` as ATen's vectorised loop rounds it: a run whose output is
/// dense and whose inputs are dense or broadcast scalars goes to `fused(out, inputs, strides,
/// n)` for its whole vectors (two of [`vector_bytes`] each; a run `loops::contiguous` takes) and
/// `tail` for the rest; a strided run is all `tail`. Both run inside the vector tier.
///
/// # Safety
/// As [`ScaledAdd::run_one`]; `fused` computes a run under the contract of `loops::contiguous`.
#[inline(always)]
unsafe fn scaled_add_run<T: Copy>(
    o: *mut T,
    [a, b]: [*const T; 2],
    s: &[isize],
    n: usize,
    fused: impl Fn(*mut T, [*const T; 2], &[isize], usize),
    tail: impl Fn(T, T) -> T,
) {
    let size = std::mem::size_of::<T>() as isize;
    let chunk = 2 * vector_bytes() / size as usize;
    let unit = |st: isize| st == size || st == 0;
    let body = if s[0] == size && unit(s[1]) && unit(s[2]) { n - n % chunk } else { 0 };
    // SAFETY: per the contract: each element is read before it is written, and the first
    // `body` form a run `contiguous` takes.
    unsafe {
        loops::tiered(
            #[inline(always)]
            move || {
                if body > 0 {
                    fused(o, [a, b], s, body);
                }
                let (o, a, b) = (o.cast::<u8>(), a.cast::<u8>(), b.cast::<u8>());
                for k in body as isize..n as isize {
                    let x = a.offset(k * s[1]).cast::<T>().read_unaligned();
                    let y = b.offset(k * s[2]).cast::<T>().read_unaligned();
                    o.offset(k * s[0]).cast::<T>().write_unaligned(tail(x, y));
                }
            },
        )
    }
}

/// Runs `Op` as `out = op(a, b)`; `alpha` scales `b` (add and sub).
pub fn run<Op: Binary>(a: Input<'_>, b: Input<'_>, alpha: Option<Scalar>, out: TensorRef<'_>) -> Result<()> {
    let config = if Op::INT_TO_FLOAT { Config::FLOATING } else { Config::ARITHMETIC };
    elementwise(Op::NAME, config, &out, &[a, b], body::<Op>(&b, alpha))
}

/// The loop of [`run`] once the operands are prepared.
fn body<Op: Binary>(b: &Input<'_>, alpha: Option<Scalar>) -> impl FnOnce(&Prepared) -> Result<()> {
    // ATen takes a one-element `other` as a scalar (`is_cpu_scalar`), which changes how add rounds.
    let scalar_other = match b {
        Input::Tensor(t) | Input::Mask(t) => t.numel() == 1,
        Input::Scalar(_) => true,
    };
    move |p| {
        let alpha = alpha.map(Num::from_scalar).filter(|a| *a != Num::Int(1) && *a != Num::Float(1.0));
        if let Some(alpha) = alpha {
            if !p.common.is_floating() && !p.common.is_complex() && matches!(alpha, Num::Float(_) | Num::Complex(..)) {
                return Err(Error::runtime(
                    "For integral input tensors, argument alpha must not be a floating point number.",
                ));
            }
            if p.common == DType::Bool && !matches!(alpha, Num::Bool(_)) {
                return Err(Error::runtime("Boolean alpha only supported for Boolean results."));
            }
        }
        match alpha {
            // Only add and sub take alpha; ATen computes `sub` as `add` with `-alpha`, and rounds
            // it its own way (ScaledAdd).
            Some(al) if p.common.is_floating() => {
                // The sign `b` has in the op (`f(0, 1)`: 1 for add, -1 for sub) times alpha.
                let al = Op::f::<f64>(0.0, 1.0) * al.as_f64();
                scaled_add(p.common, &p.iter, al, scalar_other);
            }
            _ => dispatch(&Loop::<Op> { it: &p.iter, alpha, op: PhantomData }, p.common)?,
        }
        zero_division_check()
    }
}

/// `out = a + alpha * b` in a floating dtype, rounded as ATen's kernel for it rounds.
fn scaled_add(dtype: DType, it: &Iter, alpha: f64, scalar_other: bool) {
    match dtype {
        DType::F16 => scaled_add_iter::<f16>(it, alpha, scalar_other),
        DType::BF16 => scaled_add_iter::<bf16>(it, alpha, scalar_other),
        DType::F32 => scaled_add_iter::<f32>(it, alpha, scalar_other),
        DType::F64 => scaled_add_iter::<f64>(it, alpha, scalar_other),
        _ => unreachable!("a floating dtype"),
    }
}

/// `Op`'s loop over an iterator, in each dtype domain it has; `alpha` (not 1) scales `b`.
struct Loop<'a, Op> {
    it: &'a Iter,
    alpha: Option<Num>,
    op: PhantomData<Op>,
}

impl<Op: Binary> Domains for Loop<'_, Op> {
    const NAME: &'static str = Op::NAME;
    const BOOL: bool = Op::BOOL;
    const INT: bool = Op::INT;
    const FLOAT: bool = Op::FLOAT;
    const COMPLEX: bool = Op::COMPLEX;
    fn bool(&self) {
        let al = self.alpha.is_none_or(Num::as_bool);
        loops::binary::<bool, bool, bool>(
            self.it,
            #[inline(always)]
            move |x, y| Op::b(x, y && al),
        )
    }
    fn int<T: Int>(&self) {
        let al = self.alpha.map_or(1, Num::as_i64);
        loops::binary::<T, T, T>(
            self.it,
            #[inline(always)]
            move |x, y| T::from_i64(Op::i(x.to_i64(), y.to_i64().wrapping_mul(al))),
        )
    }
    fn float<T: Float>(&self) {
        if Op::NAME == "nextafter" && matches!(T::DTYPE, DType::F16 | DType::BF16) {
            // The one row whose result depends on the stored type, not only on the value: it
            // steps one unit in the last place of float16 or bfloat16 (in f32, as every other
            // row computes, the step rounded away: x came back unchanged).
            return nextafter_half(self.it, T::DTYPE);
        }
        T::binary(
            self.it,
            #[inline(always)]
            |x, y| Op::f(x, y),
            Op::V32,
            Op::V64,
            const { crate::engine::dispatch::lanes(Op::NAME) },
        )
    }
    fn complex<R: Real>(&self) {
        let (re, im) = self.alpha.map_or((1.0, 0.0), Num::as_complex);
        let al = Complex::new(<R as Real>::from_f64(re), <R as Real>::from_f64(im));
        loops::binary::<Complex<R>, Complex<R>, Complex<R>>(
            self.it,
            #[inline(always)]
            move |x, y| Op::c::<R>(x, y * al),
        )
    }
}

/// Runs the predicate `Op` as `out = op(a, b)` (Bool, cast to `out`'s dtype).
pub fn run_predicate<Op: Predicate>(a: Input<'_>, b: Input<'_>, out: TensorRef<'_>) -> Result<()> {
    elementwise(Op::NAME, Config::PREDICATE, &out, &[a, b], predicate_body::<Op>)
}

/// The predicate `Op` of `a` and `b` into a new Bool tensor (a functional form).
pub fn functional_predicate<Op: Predicate>(a: Input<'_>, b: Input<'_>) -> Result<regen_runtime::Tensor> {
    elementwise_new(Op::NAME, Config::PREDICATE, &[a, b], predicate_body::<Op>)
}

/// The loop of [`run_predicate`] and [`functional_predicate`] once the operands are prepared.
fn predicate_body<Op: Predicate>(p: &Prepared) -> Result<()> {
    dispatch(&PredicateLoop::<Op>(&p.iter, PhantomData), p.common)
}

/// The predicate `Op`'s loop over an iterator, in each dtype domain it has.
struct PredicateLoop<'a, Op>(&'a Iter, PhantomData<Op>);

impl<Op: Predicate> Domains for PredicateLoop<'_, Op> {
    const NAME: &'static str = Op::NAME;
    const BOOL: bool = Op::BOOL;
    const INT: bool = Op::INT;
    const FLOAT: bool = Op::FLOAT;
    const COMPLEX: bool = Op::COMPLEX;
    fn bool(&self) {
        loops::binary::<bool, bool, bool>(self.0, Op::b)
    }
    fn int<T: Int>(&self) {
        loops::binary::<T, T, bool>(
            self.0,
            #[inline(always)]
            |x, y| Op::i(x.to_i64(), y.to_i64()),
        )
    }
    fn float<T: Float>(&self) {
        loops::binary::<T, T, bool>(
            self.0,
            #[inline(always)]
            |x, y| Op::f(x.to_acc(), y.to_acc()),
        )
    }
    fn complex<R: Real>(&self) {
        loops::binary::<Complex<R>, Complex<R>, bool>(self.0, Op::c::<R>)
    }
}

/// `torch.nextafter` of float16 or bfloat16 operands ([`s::nextafter_half`]).
fn nextafter_half(it: &Iter, dtype: DType) {
    use crate::engine::dtype::{Element, bf16_from_f32, f16_from_f32, f16_to_f32};
    if dtype == DType::F16 {
        let (bits, value) = (|v| f16_from_f32(v).to_bits(), |b| f16_to_f32(f16::from_bits(b)));
        loops::binary::<f16, f16, f16>(it, move |x, y| {
            f16_from_f32(s::nextafter_half(x.to_acc(), y.to_acc(), bits, value))
        });
    } else {
        let (bits, value) = (|v| bf16_from_f32(v).to_bits(), |b| bf16::from_bits(b).to_f32());
        loops::binary::<bf16, bf16, bf16>(it, move |x, y| {
            bf16_from_f32(s::nextafter_half(x.to_acc(), y.to_acc(), bits, value))
        });
    }
}

/// The vector functions of the rows that take C's `fmod` (`loops::checked2`): exact, with a libm
/// call only for lanes whose quotient is too large for `scalar::fmod_checked`.
///
/// # Safety
/// [`Vector2`]'s contract: `a`, `b` and `out` point to `n` elements; `out` may be `a` or `b`.
unsafe fn fmod_v<T: Real + Default>(a: *const T, b: *const T, out: *mut T, n: usize) {
    // SAFETY: the caller's contract is checked2's.
    unsafe { loops::checked2(a, b, out, n, s::fmod_checked, |x, y| x % y) }
}

/// [`fmod_v`] for `torch.remainder`.
///
/// # Safety
/// As [`fmod_v`].
unsafe fn remainder_v<T: Real + Default>(a: *const T, b: *const T, out: *mut T, n: usize) {
    // SAFETY: as in `fmod_v`.
    unsafe { loops::checked2(a, b, out, n, s::remainder_checked, s::remainder) }
}

/// [`fmod_v`] for `torch.floor_divide` and `div(rounding_mode="floor")`.
///
/// # Safety
/// As [`fmod_v`].
unsafe fn floor_divide_v<T: Real + Default>(a: *const T, b: *const T, out: *mut T, n: usize) {
    // SAFETY: as in `fmod_v`.
    unsafe { loops::checked2(a, b, out, n, s::floor_divide_checked, s::floor_divide) }
}

/// Defines op structs: `Struct "name" int_to_float { domain: |x, y| function; ... }`, and
/// `predicate Struct "name" { ... }`.
macro_rules! binary_ops {
    ($(
        $kind:ident $op:ident $name:literal $int_to_float:literal {
            $(b: |$bx:ident, $by:ident| $b:expr;)? $(i: |$ix:ident, $iy:ident| $i:expr;)?
            $(f: |$fx:ident, $fy:ident| $f:expr;)? $(c: |$cx:ident, $cy:ident| $c:expr;)?
            $(v32: $v32:path;)? $(v64: $v64:path;)?
        }
    )*) => {$(
        binary_ops!(@impl $kind $op $name $int_to_float
            $(b: |$bx, $by| $b;)? $(i: |$ix, $iy| $i;)? $(f: |$fx, $fy| $f;)? $(c: |$cx, $cy| $c;)?
            $(v32: $v32;)? $(v64: $v64;)?);
    )*};
    (@impl op $op:ident $name:literal $int_to_float:literal
        $(b: |$bx:ident, $by:ident| $b:expr;)? $(i: |$ix:ident, $iy:ident| $i:expr;)?
        $(f: |$fx:ident, $fy:ident| $f:expr;)? $(c: |$cx:ident, $cy:ident| $c:expr;)?
        $(v32: $v32:path;)? $(v64: $v64:path;)?) => {
        pub struct $op;
        impl Binary for $op {
            const NAME: &'static str = $name;
            const INT_TO_FLOAT: bool = $int_to_float;
            $(const V32: Option<$crate::engine::loops::Vector2<f32>> = Some($v32);)?
            $(const V64: Option<$crate::engine::loops::Vector2<f64>> = Some($v64);)?
            const BOOL: bool = false $(|| { let _ = stringify!($b); true })?;
            const INT: bool = false $(|| { let _ = stringify!($i); true })?;
            const FLOAT: bool = false $(|| { let _ = stringify!($f); true })?;
            const COMPLEX: bool = false $(|| { let _ = stringify!($c); true })?;
            // Inlined into each dtype's loop (engine::dispatch): without, eq on float64 ran 1.2x
            // slower and lt on int32 1.3x.
            $(#[inline(always)] fn b($bx: bool, $by: bool) -> bool { $b })?
            $(#[inline(always)] fn i($ix: i64, $iy: i64) -> i64 { $i })?
            $(#[inline(always)] fn f<T: Real>($fx: T, $fy: T) -> T { $f })?
            $(#[inline(always)] fn c<T: Real>($cx: Complex<T>, $cy: Complex<T>) -> Complex<T> { $c })?
        }
    };
    (@impl predicate $op:ident $name:literal $int_to_float:literal
        $(b: |$bx:ident, $by:ident| $b:expr;)? $(i: |$ix:ident, $iy:ident| $i:expr;)?
        $(f: |$fx:ident, $fy:ident| $f:expr;)? $(c: |$cx:ident, $cy:ident| $c:expr;)?) => {
        pub struct $op;
        impl Predicate for $op {
            const NAME: &'static str = $name;
            const BOOL: bool = false $(|| { let _ = stringify!($b); true })?;
            const INT: bool = false $(|| { let _ = stringify!($i); true })?;
            const FLOAT: bool = false $(|| { let _ = stringify!($f); true })?;
            const COMPLEX: bool = false $(|| { let _ = stringify!($c); true })?;
            $(#[inline(always)] fn b($bx: bool, $by: bool) -> bool { $b })?
            $(#[inline(always)] fn i($ix: i64, $iy: i64) -> bool { $i })?
            $(#[inline(always)] fn f<T: Real>($fx: T, $fy: T) -> bool { $f })?
            $(#[inline(always)] fn c<T: Real>($cx: Complex<T>, $cy: Complex<T>) -> bool { $c })?
        }
    };
}

pub mod ops {
    //! The binary op structs.
    use super::{Binary, Predicate, divisor};
    use crate::engine::scalar as s;
    use crate::math::special as sp;
    use num_complex::Complex;
    use num_traits::Zero;

    use crate::engine::scalar::Real;

    binary_ops! {
        op Add "add" false { b: |x, y| x || y; i: |x, y| x.wrapping_add(y); f: |x, y| x + y; c: |x, y| x + y; }
        op Sub "sub" false { i: |x, y| x.wrapping_sub(y); f: |x, y| x - y; c: |x, y| x - y; }
        op Mul "mul" false { b: |x, y| x && y; i: |x, y| x.wrapping_mul(y); f: |x, y| x * y; c: |x, y| x * y; }
        op Div "div" true { f: |x, y| x / y; c: |x, y| s::complex_div(x, y); }
        op DivTrunc "div" false { i: |x, y| x.wrapping_div(divisor(y)); f: |x, y| (x / y).trunc(); }
        op DivFloor "div" false { i: |x, y| s::floor_divide_int(x, divisor(y)); f: |x, y| s::floor_divide(x, y); v32: super::floor_divide_v::<f32>; v64: super::floor_divide_v::<f64>; }
        op Remainder "remainder" false { i: |x, y| s::remainder_int(x, divisor(y)); f: |x, y| s::remainder(x, y); v32: super::remainder_v::<f32>; v64: super::remainder_v::<f64>; }
        op Fmod "fmod" false { i: |x, y| x.wrapping_rem(divisor(y)); f: |x, y| x % y; v32: super::fmod_v::<f32>; v64: super::fmod_v::<f64>; }
        op Pow "pow" false { i: |x, y| int_pow(x, y); f: |x, y| x.powf(y); c: |x, y| complex_pow(x, y); v32: crate::math::vmath::pow_f32_raw; }
        op Atan2 "atan2" true { f: |x, y| x.atan2(y); v32: crate::math::vmath::atan2_f32_raw; }
        op Hypot "hypot" false { f: |x, y| s::hypot(x, y); }
        op Copysign "copysign" true { f: |x, y| x.copysign(y); }
        op Nextafter "nextafter" false { f: |x, y| s::nextafter(x, y); }
        op Maximum "maximum" false { b: |x, y| x || y; i: |x, y| x.max(y); f: |x, y| s::maximum(x, y); }
        op Minimum "minimum" false { b: |x, y| x && y; i: |x, y| x.min(y); f: |x, y| s::minimum(x, y); }
        op Fmax "fmax" false { b: |x, y| x || y; i: |x, y| x.max(y); f: |x, y| x.max(y); }
        op Fmin "fmin" false { b: |x, y| x && y; i: |x, y| x.min(y); f: |x, y| x.min(y); }
        op Logaddexp "logaddexp" false { f: |x, y| s::logaddexp(x, y); c: |x, y| s::logaddexp_complex(x, y); }
        op Logaddexp2 "logaddexp2" false { f: |x, y| s::logaddexp2(x, y); }
        op Xlogy "xlogy" true { f: |x, y| s::xlogy(x, y); }
        op Heaviside "heaviside" false { b: |x, y| x || y; i: |x, y| if x == 0 { y } else { i64::from(x > 0) }; f: |x, y| s::heaviside(x, y); }
        op Gcd "gcd" false { i: |x, y| s::gcd(x, y); }
        op Lcm "lcm" false { i: |x, y| s::lcm(x, y); }
        op FloorDivide "floor_divide" false { i: |x, y| s::floor_divide_int(x, divisor(y)); f: |x, y| s::floor_divide(x, y); v32: super::floor_divide_v::<f32>; v64: super::floor_divide_v::<f64>; }
        op BitwiseAnd "bitwise_and" false { b: |x, y| x && y; i: |x, y| x & y; }
        op BitwiseOr "bitwise_or" false { b: |x, y| x || y; i: |x, y| x | y; }
        op BitwiseXor "bitwise_xor" false { b: |x, y| x ^ y; i: |x, y| x ^ y; }
        op Igamma "igamma" false { f: |x, y| sp::igamma(x, y); }
        op Igammac "igammac" false { f: |x, y| sp::igammac(x, y); }
        op Xlog1py "special_xlog1py" true { f: |x, y| sp::xlog1py(x, y); }
        op Zeta "special_zeta" true { f: |x, y| sp::zeta(x, y); }
        op ChebyshevPolynomialT "special_chebyshev_polynomial_t" true { f: |x, y| sp::chebyshev_polynomial_t(x, y); }
        op ChebyshevPolynomialU "special_chebyshev_polynomial_u" true { f: |x, y| sp::chebyshev_polynomial_u(x, y); }
        op ChebyshevPolynomialV "special_chebyshev_polynomial_v" true { f: |x, y| sp::chebyshev_polynomial_v(x, y); }
        op ChebyshevPolynomialW "special_chebyshev_polynomial_w" true { f: |x, y| sp::chebyshev_polynomial_w(x, y); }
        op ShiftedChebyshevPolynomialT "special_shifted_chebyshev_polynomial_t" true { f: |x, y| sp::shifted_chebyshev_polynomial_t(x, y); }
        op ShiftedChebyshevPolynomialU "special_shifted_chebyshev_polynomial_u" true { f: |x, y| sp::shifted_chebyshev_polynomial_u(x, y); }
        op ShiftedChebyshevPolynomialV "special_shifted_chebyshev_polynomial_v" true { f: |x, y| sp::shifted_chebyshev_polynomial_v(x, y); }
        op ShiftedChebyshevPolynomialW "special_shifted_chebyshev_polynomial_w" true { f: |x, y| sp::shifted_chebyshev_polynomial_w(x, y); }
        op HermitePolynomialH "special_hermite_polynomial_h" true { f: |x, y| sp::hermite_polynomial_h(x, y); }
        op HermitePolynomialHe "special_hermite_polynomial_he" true { f: |x, y| sp::hermite_polynomial_he(x, y); }
        op LaguerrePolynomialL "special_laguerre_polynomial_l" true { f: |x, y| sp::laguerre_polynomial_l(x, y); }
        op LegendrePolynomialP "special_legendre_polynomial_p" true { f: |x, y| sp::legendre_polynomial_p(x, y); }
        predicate LogicalAnd "logical_and" false { b: |x, y| x && y; i: |x, y| x != 0 && y != 0; f: |x, y| x != T::zero() && y != T::zero(); c: |x, y| !x.is_zero() && !y.is_zero(); }
        predicate LogicalOr "logical_or" false { b: |x, y| x || y; i: |x, y| x != 0 || y != 0; f: |x, y| x != T::zero() || y != T::zero(); c: |x, y| !x.is_zero() || !y.is_zero(); }
        predicate LogicalXor "logical_xor" false { b: |x, y| x ^ y; i: |x, y| (x != 0) ^ (y != 0); f: |x, y| (x != T::zero()) ^ (y != T::zero()); c: |x, y| x.is_zero() ^ y.is_zero(); }
        predicate Eq "eq" false { b: |x, y| x == y; i: |x, y| x == y; f: |x, y| x == y; c: |x, y| x == y; }
        predicate Ne "ne" false { b: |x, y| x != y; i: |x, y| x != y; f: |x, y| x != y; c: |x, y| x != y; }
        predicate Lt "lt" false { b: |x, y| !x & y; i: |x, y| x < y; f: |x, y| x < y; }
        predicate Le "le" false { b: |x, y| x <= y; i: |x, y| x <= y; f: |x, y| x <= y; }
        predicate Gt "gt" false { b: |x, y| x & !y; i: |x, y| x > y; f: |x, y| x > y; }
        predicate Ge "ge" false { b: |x, y| x >= y; i: |x, y| x >= y; f: |x, y| x >= y; }
    }

    /// Integer power by squaring (wrapping); negative exponents give 0 except for bases 1 and -1,
    /// as ATen's `powi` does.
    pub fn int_pow(base: i64, exp: i64) -> i64 {
        if exp < 0 {
            return match base {
                1 => 1,
                -1 => {
                    if exp % 2 == 0 {
                        1
                    } else {
                        -1
                    }
                }
                _ => 0,
            };
        }
        let (mut result, mut b, mut e) = (1i64, base, exp as u64);
        while e > 0 {
            if e & 1 == 1 {
                result = result.wrapping_mul(b);
            }
            b = b.wrapping_mul(b);
            e >>= 1;
        }
        result
    }

    /// Complex power, with 0^0 = 1 and 0^y = 0 as `std::pow` of complex gives.
    pub fn complex_pow<T: Real>(x: Complex<T>, y: Complex<T>) -> Complex<T> {
        if y.is_zero() {
            return Complex::new(T::one(), T::zero());
        }
        if x.is_zero() {
            return if y.re > T::zero() {
                Complex::new(T::zero(), T::zero())
            } else {
                Complex::new(T::nan(), T::nan())
            };
        }
        x.powc(y)
    }
}

/// The table of `Kernels` methods: `method kind Op;`. Kinds: `tt`, `ts`, `st` (tensor or scalar
/// operands) and `tta` (with alpha) write `out`; `ftt`, `ftta` are functional forms; `ptt`,
/// `pts` predicates into `out`, `fptt`, `fpts` functional predicates. The functional forms are
/// registered rather than left to PyTorch's derived form, which runs the meta function's
/// TensorIterator and dispatches again to `.out` (heaviside's stays derived: its meta function
/// refuses operands of different dtypes, which the kernel does not check).
#[macro_export]
macro_rules! binary_table {
    ($callback:ident) => {
        $crate::$callback! {
            add_tensor ftta Add;
            sub_tensor ftta Sub;
            mul_tensor ftt Mul;
            div_tensor ftt Div;
            add_out tta Add;
            sub_out tta Sub;
            mul_out tt Mul;
            div_out tt Div;
            remainder_tensor_out tt Remainder;
            fmod_tensor_out tt Fmod;
            pow_tensor_tensor_out tt Pow;
            pow_scalar_out st Pow;
            atan2_out tt Atan2;
            hypot_out tt Hypot;
            copysign_out tt Copysign;
            nextafter_out tt Nextafter;
            maximum_out tt Maximum;
            minimum_out tt Minimum;
            fmax_out tt Fmax;
            fmin_out tt Fmin;
            logaddexp_out tt Logaddexp;
            logaddexp2_out tt Logaddexp2;
            xlogy_out_tensor tt Xlogy;
            heaviside_out tt Heaviside;
            gcd_out tt Gcd;
            lcm_out tt Lcm;
            floor_divide_out tt FloorDivide;
            bitwise_and_tensor_out tt BitwiseAnd;
            bitwise_or_tensor_out tt BitwiseOr;
            bitwise_xor_tensor_out tt BitwiseXor;
            logical_and_out ptt LogicalAnd;
            logical_or_out ptt LogicalOr;
            logical_xor_out ptt LogicalXor;
            eq_tensor_out ptt Eq;
            eq_scalar_out pts Eq;
            ne_tensor_out ptt Ne;
            ne_scalar_out pts Ne;
            lt_tensor_out ptt Lt;
            lt_scalar_out pts Lt;
            le_tensor_out ptt Le;
            le_scalar_out pts Le;
            gt_tensor_out ptt Gt;
            gt_scalar_out pts Gt;
            ge_tensor_out ptt Ge;
            ge_scalar_out pts Ge;
            igamma_out tt Igamma;
            igammac_out tt Igammac;
            special_xlog1py_out tt Xlog1py;
            special_zeta_out tt Zeta;
            special_chebyshev_polynomial_t_out tt ChebyshevPolynomialT;
            special_chebyshev_polynomial_u_out tt ChebyshevPolynomialU;
            special_chebyshev_polynomial_v_out tt ChebyshevPolynomialV;
            special_chebyshev_polynomial_w_out tt ChebyshevPolynomialW;
            special_shifted_chebyshev_polynomial_t_out tt ShiftedChebyshevPolynomialT;
            special_shifted_chebyshev_polynomial_u_out tt ShiftedChebyshevPolynomialU;
            special_shifted_chebyshev_polynomial_v_out tt ShiftedChebyshevPolynomialV;
            special_shifted_chebyshev_polynomial_w_out tt ShiftedChebyshevPolynomialW;
            special_hermite_polynomial_h_out tt HermitePolynomialH;
            special_hermite_polynomial_he_out tt HermitePolynomialHe;
            special_laguerre_polynomial_l_out tt LaguerrePolynomialL;
            special_legendre_polynomial_p_out tt LegendrePolynomialP;
            remainder_tensor ftt Remainder;
            fmod_tensor ftt Fmod;
            pow_tensor_tensor ftt Pow;
            atan2 ftt Atan2;
            hypot ftt Hypot;
            copysign_tensor ftt Copysign;
            nextafter ftt Nextafter;
            maximum ftt Maximum;
            minimum ftt Minimum;
            fmax ftt Fmax;
            fmin ftt Fmin;
            logaddexp ftt Logaddexp;
            logaddexp2 ftt Logaddexp2;
            xlogy_tensor ftt Xlogy;
            gcd ftt Gcd;
            lcm ftt Lcm;
            bitwise_and_tensor ftt BitwiseAnd;
            bitwise_or_tensor ftt BitwiseOr;
            bitwise_xor_tensor ftt BitwiseXor;
            logical_and fptt LogicalAnd;
            logical_or fptt LogicalOr;
            logical_xor fptt LogicalXor;
            eq_tensor fptt Eq;
            eq_scalar fpts Eq;
            ne_tensor fptt Ne;
            ne_scalar fpts Ne;
            lt_tensor fptt Lt;
            lt_scalar fpts Lt;
            le_tensor fptt Le;
            le_scalar fpts Le;
            gt_tensor fptt Gt;
            gt_scalar fpts Gt;
            ge_tensor fptt Ge;
            ge_scalar fpts Ge;
        }
    };
}

/// The trait methods of [`binary_table!`](crate::binary_table)'s rows (its callback in the `BinaryKernels` impl below).
#[macro_export]
macro_rules! binary_methods {
    ($($method:ident $kind:ident $op:ident;)*) => {$(
        $crate::binary_methods!(@one $method $kind $op);
    )*};
    (@one $method:ident tt $op:ident) => {
        fn $method(&self, a: regen_runtime::TensorRef<'_>, b: regen_runtime::TensorRef<'_>, out: regen_runtime::TensorRef<'_>) -> regen_runtime::Result<()> {
            use $crate::engine::operands::Input;
            $crate::ops::binary::run::<$crate::ops::binary::ops::$op>(Input::Tensor(a), Input::Tensor(b), None, out)
        }
    };
    (@one $method:ident ts $op:ident) => {
        fn $method(&self, a: regen_runtime::TensorRef<'_>, b: regen_runtime::Scalar, out: regen_runtime::TensorRef<'_>) -> regen_runtime::Result<()> {
            use $crate::engine::operands::Input;
            $crate::ops::binary::run::<$crate::ops::binary::ops::$op>(Input::Tensor(a), Input::Scalar(b), None, out)
        }
    };
    (@one $method:ident st $op:ident) => {
        fn $method(&self, a: regen_runtime::Scalar, b: regen_runtime::TensorRef<'_>, out: regen_runtime::TensorRef<'_>) -> regen_runtime::Result<()> {
            use $crate::engine::operands::Input;
            $crate::ops::binary::run::<$crate::ops::binary::ops::$op>(Input::Scalar(a), Input::Tensor(b), None, out)
        }
    };
    (@one $method:ident tta $op:ident) => {
        fn $method(&self, a: regen_runtime::TensorRef<'_>, b: regen_runtime::TensorRef<'_>, alpha: regen_runtime::Scalar, out: regen_runtime::TensorRef<'_>) -> regen_runtime::Result<()> {
            use $crate::engine::operands::Input;
            $crate::ops::binary::run::<$crate::ops::binary::ops::$op>(Input::Tensor(a), Input::Tensor(b), Some(alpha), out)
        }
    };
    (@one $method:ident ftt $op:ident) => {
        fn $method(&self, a: regen_runtime::TensorRef<'_>, b: regen_runtime::TensorRef<'_>) -> regen_runtime::Result<regen_runtime::Tensor> {
            use $crate::engine::operands::Input;
            $crate::ops::binary::functional_alpha::<$crate::ops::binary::ops::$op>(Input::Tensor(a), Input::Tensor(b), None)
        }
    };
    (@one $method:ident ftta $op:ident) => {
        fn $method(&self, a: regen_runtime::TensorRef<'_>, b: regen_runtime::TensorRef<'_>, alpha: regen_runtime::Scalar) -> regen_runtime::Result<regen_runtime::Tensor> {
            use $crate::engine::operands::Input;
            $crate::ops::binary::functional_alpha::<$crate::ops::binary::ops::$op>(Input::Tensor(a), Input::Tensor(b), Some(alpha))
        }
    };
    (@one $method:ident ptt $op:ident) => {
        fn $method(&self, a: regen_runtime::TensorRef<'_>, b: regen_runtime::TensorRef<'_>, out: regen_runtime::TensorRef<'_>) -> regen_runtime::Result<()> {
            use $crate::engine::operands::Input;
            $crate::ops::binary::run_predicate::<$crate::ops::binary::ops::$op>(Input::Tensor(a), Input::Tensor(b), out)
        }
    };
    (@one $method:ident fptt $op:ident) => {
        fn $method(&self, a: regen_runtime::TensorRef<'_>, b: regen_runtime::TensorRef<'_>) -> regen_runtime::Result<regen_runtime::Tensor> {
            use $crate::engine::operands::Input;
            $crate::ops::binary::functional_predicate::<$crate::ops::binary::ops::$op>(Input::Tensor(a), Input::Tensor(b))
        }
    };
    (@one $method:ident fpts $op:ident) => {
        fn $method(&self, a: regen_runtime::TensorRef<'_>, b: regen_runtime::Scalar) -> regen_runtime::Result<regen_runtime::Tensor> {
            use $crate::engine::operands::Input;
            $crate::ops::binary::functional_predicate::<$crate::ops::binary::ops::$op>(Input::Tensor(a), Input::Scalar(b))
        }
    };
    (@one $method:ident pts $op:ident) => {
        fn $method(&self, a: regen_runtime::TensorRef<'_>, b: regen_runtime::Scalar, out: regen_runtime::TensorRef<'_>) -> regen_runtime::Result<()> {
            use $crate::engine::operands::Input;
            $crate::ops::binary::run_predicate::<$crate::ops::binary::ops::$op>(Input::Tensor(a), Input::Scalar(b), out)
        }
    };
}

/// This family's kernels: group `binary` of regen.toml's `[implement]`, every row of the table and
/// the forms PyTorch does not derive from `.out`, registered as they are.
impl crate::BinaryKernels for crate::Reference {
    crate::binary_table!(binary_methods);

    fn pow_tensor_scalar_out(&self, a: TensorRef<'_>, exponent: Scalar, out: TensorRef<'_>) -> Result<()> {
        pow_tensor_scalar(a, exponent, out)
    }

    fn floor_divide(&self, self_: TensorRef<'_>, other: TensorRef<'_>) -> Result<regen_runtime::Tensor> {
        functional::<ops::FloorDivide>(Input::Tensor(self_), Input::Tensor(other))
    }

    fn floor_divide_inplace_tensor(&self, self_: TensorRef<'_>, other: TensorRef<'_>) -> Result<()> {
        run::<ops::FloorDivide>(Input::Tensor(self_), Input::Tensor(other), None, self_)
    }

    fn remainder_scalar_tensor(&self, self_: Scalar, other: TensorRef<'_>) -> Result<regen_runtime::Tensor> {
        functional::<ops::Remainder>(Input::Scalar(self_), Input::Tensor(other))
    }

    fn div_out_mode(
        &self,
        self_: TensorRef<'_>,
        other: TensorRef<'_>,
        rounding_mode: Option<&str>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        div_mode(self_, other, rounding_mode, out)
    }
}

/// A functional form (`torch.floor_divide(a, b)`) of an op whose functional form PyTorch does
/// not derive from `.out`: a new tensor of the result dtype, filled by [`run`].
pub fn functional<Op: Binary>(a: Input<'_>, b: Input<'_>) -> Result<regen_runtime::Tensor> {
    functional_alpha::<Op>(a, b, None)
}

/// [`functional`] with `alpha` scaling `b` (`torch.add(a, b, alpha=2)`).
pub fn functional_alpha<Op: Binary>(
    a: Input<'_>,
    b: Input<'_>,
    alpha: Option<Scalar>,
) -> Result<regen_runtime::Tensor> {
    let config = if Op::INT_TO_FLOAT { Config::FLOATING } else { Config::ARITHMETIC };
    elementwise_new(Op::NAME, config, &[a, b], body::<Op>(&b, alpha))
}

/// `div.out_mode`: true, truncating or floor division.
pub fn div_mode(a: TensorRef<'_>, b: TensorRef<'_>, mode: Option<&str>, out: TensorRef<'_>) -> Result<()> {
    let (a, b) = (Input::Tensor(a), Input::Tensor(b));
    match mode {
        None => run::<ops::Div>(a, b, None, out),
        Some("trunc") => run::<ops::DivTrunc>(a, b, None, out),
        Some("floor") => run::<ops::DivFloor>(a, b, None, out),
        Some(other) => Err(Error::value(format!(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{other}'"
        ))),
    }
}

/// `torch.pow(tensor, scalar)` (and `torch.square`, which is `pow(x, 2)`): for a floating tensor,
/// the exponents ATen's CPU kernel special-cases (PowKernel.cpp) are multiplications or the
/// `sqrt`, `rsqrt` and `reciprocal` rows, which vectorise, instead of a `powf` call per element.
/// `x * x` is `powf(x, 2)` exactly; the cube and `1 / (x * x)` are CPU's own formulas. Other
/// exponents take the `Pow` row, vectorised for float32 and the halves by vmath's `pow`.
pub fn pow_tensor_scalar(a: TensorRef<'_>, exponent: Scalar, out: TensorRef<'_>) -> Result<()> {
    use super::unary;

    // The exponents as rows of the unary engine (defined by its table's macro).
    mod powers {
        crate::define_unary_ops! {
            pow_out, Square, "pow", false { f: |x| x * x; }
            pow_out, Cube, "pow", false { f: |x| x * x * x; }
            pow_out, InverseSquare, "pow", false { f: |x| T::one() / (x * x); }
        }
    }
    let floating = DType::from_scalar_type(a.dtype())?.is_floating();
    let power = match Num::from_scalar(exponent) {
        Num::Int(e) => Some(e as f64),
        Num::Float(e) => Some(e),
        Num::Bool(_) | Num::Complex(..) => None,
    };
    match power.filter(|_| floating) {
        Some(2.0) => unary::run::<powers::Square>(a, out),
        Some(3.0) => unary::run::<powers::Cube>(a, out),
        Some(-2.0) => unary::run::<powers::InverseSquare>(a, out),
        Some(0.5) => unary::run::<unary::ops::Sqrt>(a, out),
        Some(-0.5) => unary::run::<unary::ops::Rsqrt>(a, out),
        Some(-1.0) => unary::run::<unary::ops::Reciprocal>(a, out),
        _ => run::<ops::Pow>(Input::Tensor(a), Input::Scalar(exponent), None, out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Operand pairs for the `fmod` rows: edge values, spread bit patterns (quotients of every
    /// size, most beyond `fmod_checked`'s range) and pairs whose quotient is in it, integral or one
    /// unit in the last place either side of an integer, where the rounded quotient is off by one.
    fn pairs<T: Real>(bits: impl Fn(u64) -> T) -> Vec<(T, T)> {
        let f = T::from_f64;
        let edges = [0.0, -0.0, 1.0, -1.0, 3.0, -7.5, 1e-40, -1e-310, 1e30, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];
        let mut pairs: Vec<(T, T)> = edges.iter().flat_map(|&x| edges.iter().map(move |&y| (f(x), f(y)))).collect();
        let spread: Vec<T> = (1..3000u64).map(|k| bits(0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(k))).collect();
        pairs.extend(spread.iter().zip(spread.iter().rev()).map(|(&x, &y)| (x, y)));
        for (k, &y) in spread.iter().enumerate().filter(|(_, y)| y.is_finite() && y.abs() > f(1e-30)) {
            let n = f((k % 5000) as f64 * 37.0 + 1.0);
            let x = n * y;
            let (up, down) = (x + x.abs() * T::epsilon(), x - x.abs() * T::epsilon());
            pairs.extend([(x, y), (up, y), (down, y), (-x, y), (x, -y), (x / f(3.0), y)]);
        }
        pairs
    }

    /// Runs a row's vector function over `pairs` out of place and in place and compares each
    /// result with the row's scalar function bit for bit (any NaN for NaN); returns the share of
    /// lanes `fast` computed itself.
    fn same_as_scalar<T: Real + Default>(
        pairs: &[(T, T)],
        vector: Vector2<T>,
        fast: fn(T, T) -> (T, bool),
        scalar: fn(T, T) -> T,
        name: &str,
    ) -> f64 {
        let (a, b): (Vec<T>, Vec<T>) = pairs.iter().copied().unzip();
        let mut out = vec![T::default(); a.len()];
        let mut in_place = a.clone();
        // SAFETY: three slices of the same length; the second call is in place over `in_place`.
        unsafe {
            vector(a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), a.len());
            vector(in_place.as_ptr(), b.as_ptr(), in_place.as_mut_ptr(), a.len());
        }
        for (k, &(x, y)) in pairs.iter().enumerate() {
            let want = scalar(x, y);
            for got in [out[k], in_place[k]] {
                let same = got.is_nan() && want.is_nan() || got.to_f64().to_bits() == want.to_f64().to_bits();
                assert!(same, "{name}({x:?}, {y:?}) = {got:?}, libm's {want:?}");
            }
        }
        pairs.iter().filter(|&&(x, y)| !fast(x, y).1).count() as f64 / pairs.len() as f64
    }

    #[test]
    fn fmod_rows_are_libms_bit_for_bit_in_both_precisions() {
        let p32 = pairs(|b| f32::from_bits((b >> 32) as u32));
        let p64 = pairs(f64::from_bits);
        let fast = [
            same_as_scalar(&p32, fmod_v::<f32>, s::fmod_checked, |x, y| x % y, "fmod"),
            same_as_scalar(&p32, remainder_v::<f32>, s::remainder_checked, s::remainder, "remainder"),
            same_as_scalar(&p32, floor_divide_v::<f32>, s::floor_divide_checked, s::floor_divide, "floor_divide"),
            same_as_scalar(&p64, fmod_v::<f64>, s::fmod_checked, |x, y| x % y, "fmod"),
            same_as_scalar(&p64, remainder_v::<f64>, s::remainder_checked, s::remainder, "remainder"),
            same_as_scalar(&p64, floor_divide_v::<f64>, s::floor_divide_checked, s::floor_divide, "floor_divide"),
        ];
        // Most pairs were computed by the selects, not by the libm fallback.
        assert!(fast.iter().all(|&share| share > 0.6), "{fast:?}");
    }
}
