//! Unary elementwise ops as table rows. [`unary_table!`](crate::unary_table) is the one list: each row names the
//! generated trait method (the op's `.out` form), the op, and its scalar function per dtype
//! domain (`b` bool, `i` integers through i64, `f` reals generic over [`Real`], `h` the bits of
//! float16 and bfloat16 where the op is exact on them, `c` complex), optionally a vector function
//! for contiguous f32/f64 runs. The same table defines the op structs here and their
//! `UnaryKernels` methods, so adding an op is one row (and its regen.toml entry in group `unary`).

use std::marker::PhantomData;

use num_complex::Complex;
use regen_runtime::{Result, TensorRef};

use crate::engine::dispatch::{Domains, Float, Int, dispatch};
use crate::engine::dtype::DType;
use crate::engine::iter::Iter;
use crate::engine::loops;
use crate::engine::operands::{Config, Input, elementwise, elementwise_new};
use crate::engine::scalar::Real;

pub use crate::engine::loops::Vector;

/// One unary op: which dtype domains it has, and its function in each.
pub trait Unary: Sync {
    const NAME: &'static str;
    /// Integral and bool inputs compute in float (`torch.exp(int)` is float).
    const INT_TO_FLOAT: bool;
    const BOOL: bool;
    const INT: bool;
    const FLOAT: bool;
    const COMPLEX: bool;
    /// Complex input gives a real result (`abs`).
    const COMPLEX_TO_REAL: bool;
    /// float16 and bfloat16 compute [`Unary::h`] on their bits instead of widening to f32.
    const HALF_BITS: bool = false;
    const V32: Option<Vector<f32>> = None;
    const V64: Option<Vector<f64>> = None;
    fn b(_: bool) -> bool {
        unreachable!("checked by BOOL")
    }
    fn i(_: i64) -> i64 {
        unreachable!("checked by INT")
    }
    fn f<T: Real>(_: T) -> T {
        unreachable!("checked by FLOAT")
    }
    /// The op on the bits of a float16 or bfloat16, where it is exact there: the sign-bit ops,
    /// whose sign is bit 15 in both (ATen's `Vectorized<Half>` negates by flipping it too).
    fn h(_: u16) -> u16 {
        unreachable!("checked by HALF_BITS")
    }
    fn c<T: Real>(_: Complex<T>) -> Complex<T> {
        unreachable!("checked by COMPLEX")
    }
    fn cr<T: Real>(_: Complex<T>) -> T {
        unreachable!("checked by COMPLEX_TO_REAL")
    }
}

/// Runs `Op` as `out = op(self)`.
pub fn run<Op: Unary>(self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
    elementwise(Op::NAME, config::<Op>(&self_)?, &out, &[Input::Tensor(self_)], |p| {
        dispatch(&Loop::<Op>(&p.iter, PhantomData), p.common)
    })
}

/// `Op` of `self_` into a new tensor (a functional form).
pub fn functional<Op: Unary>(self_: TensorRef<'_>) -> Result<regen_runtime::Tensor> {
    elementwise_new(Op::NAME, config::<Op>(&self_)?, &[Input::Tensor(self_)], |p| {
        dispatch(&Loop::<Op>(&p.iter, PhantomData), p.common)
    })
}

/// How `Op` types its operands for an input like `self_`: integers to float where the row says
/// so, complex to real for rows such as `abs`.
fn config<Op: Unary>(self_: &TensorRef<'_>) -> Result<Config> {
    let mut config = if Op::INT_TO_FLOAT { Config::FLOATING } else { Config::ARITHMETIC };
    let input = DType::from_scalar_type(self_.dtype())?;
    if Op::COMPLEX_TO_REAL && input.is_complex() {
        config.output_dtype = Some(input.to_real());
    }
    Ok(config)
}

/// `Op`'s loop over an iterator, in each dtype domain it has.
struct Loop<'a, Op>(&'a Iter, PhantomData<Op>);

impl<Op: Unary> Domains for Loop<'_, Op> {
    const NAME: &'static str = Op::NAME;
    const BOOL: bool = Op::BOOL;
    const INT: bool = Op::INT;
    const FLOAT: bool = Op::FLOAT;
    const COMPLEX: bool = Op::COMPLEX || Op::COMPLEX_TO_REAL;
    fn bool(&self) {
        loops::unary::<bool, bool>(self.0, Op::b)
    }
    fn int<T: Int>(&self) {
        loops::unary::<T, T>(
            self.0,
            #[inline(always)]
            |x| T::from_i64(Op::i(x.to_i64())),
        )
    }
    fn float<T: Float>(&self) {
        if Op::HALF_BITS && matches!(T::DTYPE, DType::F16 | DType::BF16) {
            // Widening, negating and narrowing cost 3-4x CPU's time on the 2-byte elements.
            return loops::unary::<u16, u16>(self.0, Op::h);
        }
        T::unary(
            self.0,
            #[inline(always)]
            |x| Op::f(x),
            Op::V32,
            Op::V64,
            const { crate::engine::dispatch::lanes(Op::NAME) },
        )
    }
    fn complex<R: Real>(&self) {
        if Op::COMPLEX_TO_REAL {
            loops::unary::<Complex<R>, R>(self.0, Op::cr::<R>)
        } else {
            loops::unary::<Complex<R>, Complex<R>>(self.0, Op::c::<R>)
        }
    }
}

/// The table. Each row: `method / functional, Struct, "name", int_to_float { domain: |x| function; ... }`
/// (the `.out` kernel's method, then the functional form's where it has one that is registered:
/// PyTorch's derived functional form runs the meta function's TensorIterator and dispatches
/// again to `.out`, which doubled a 1-element `torch.exp`'s cost against CPU's),
/// optionally ending with `v: f32_vector, f64_vector;` (kernels/math/vmath.rs) for contiguous runs,
/// or `v32: f32_vector;` when only float32 has one. The f32 function also serves float16 and
/// bfloat16 runs, which compute in f32 (`loops::unary_widened`).
#[macro_export]
macro_rules! unary_table {
    ($callback:ident) => {
        $crate::$callback! {
            neg_out / neg, Neg, "neg", false { i: |x| x.wrapping_neg(); f: |x| -x; h: |x| x ^ 0x8000; c: |z| -z; }
            abs_out / abs, Abs, "abs", false { i: |x| x.wrapping_abs(); f: |x| x.abs(); h: |x| x & 0x7fff; cr: |z| z.norm(); }
            sign_out / sign, Sign, "sign", false { b: |x| x; i: |x| x.signum(); f: |x| $crate::engine::scalar::sign(x); }
            sgn_out / sgn, Sgn, "sgn", false { b: |x| x; i: |x| x.signum(); f: |x| $crate::engine::scalar::sign(x); c: |z| $crate::engine::scalar::sgn(z); }
            exp_out / exp, Exp, "exp", true { f: |x| x.exp(); c: |z| z.exp(); v: $crate::math::vmath::exp_f32_raw, $crate::math::vmath::exp_f64_raw; }
            exp2_out / exp2, Exp2, "exp2", true { f: |x| x.exp2(); c: |z| z.exp2(); v: $crate::math::vmath::exp2_f32_raw, $crate::math::vmath::exp2_f64_raw; }
            expm1_out / expm1, Expm1, "expm1", true { f: |x| x.exp_m1(); c: |z| z.exp() - num_complex::Complex::new(T::one(), T::zero()); v: $crate::math::vmath::expm1_f32_raw, $crate::math::vmath::expm1_f64_raw; }
            log_out / log, Log, "log", true { f: |x| x.ln(); c: |z| z.ln(); v: $crate::math::vmath::log_f32_raw, $crate::math::vmath::log_f64_raw; }
            log2_out / log2, Log2, "log2", true { f: |x| x.log2(); c: |z| z.log2(); v: $crate::math::vmath::log2_f32_raw, $crate::math::vmath::log2_f64_raw; }
            log10_out / log10, Log10, "log10", true { f: |x| x.log10(); c: |z| z.log10(); v: $crate::math::vmath::log10_f32_raw, $crate::math::vmath::log10_f64_raw; }
            log1p_out / log1p, Log1p, "log1p", true { f: |x| x.ln_1p(); c: |z| (z + num_complex::Complex::new(T::one(), T::zero())).ln(); v: $crate::math::vmath::log1p_f32_raw, $crate::math::vmath::log1p_f64_raw; }
            sqrt_out / sqrt, Sqrt, "sqrt", true { f: |x| x.sqrt(); c: |z| z.sqrt(); }
            rsqrt_out / rsqrt, Rsqrt, "rsqrt", true { f: |x| x.sqrt().recip(); c: |z| z.sqrt().inv(); }
            reciprocal_out / reciprocal, Reciprocal, "reciprocal", true { f: |x| x.recip(); c: |z| z.inv(); }
            sin_out / sin, Sin, "sin", true { f: |x| x.sin(); c: |z| z.sin(); v32: $crate::math::vmath::sin_f32_raw; }
            cos_out / cos, Cos, "cos", true { f: |x| x.cos(); c: |z| z.cos(); v32: $crate::math::vmath::cos_f32_raw; }
            tan_out / tan, Tan, "tan", true { f: |x| x.tan(); c: |z| z.tan(); v32: $crate::math::vmath::tan_f32_raw; }
            asin_out / asin, Asin, "asin", true { f: |x| x.asin(); c: |z| z.asin(); v32: $crate::math::vmath::asin_f32_raw; }
            acos_out / acos, Acos, "acos", true { f: |x| x.acos(); c: |z| z.acos(); v32: $crate::math::vmath::acos_f32_raw; }
            atan_out / atan, Atan, "atan", true { f: |x| x.atan(); c: |z| z.atan(); v32: $crate::math::vmath::atan_f32_raw; }
            sinh_out / sinh, Sinh, "sinh", true { f: |x| x.sinh(); c: |z| z.sinh(); v32: $crate::math::vmath::sinh_f32_raw; }
            cosh_out / cosh, Cosh, "cosh", true { f: |x| x.cosh(); c: |z| z.cosh(); v32: $crate::math::vmath::cosh_f32_raw; }
            tanh_out / tanh, Tanh, "tanh", true { f: |x| x.tanh(); c: |z| z.tanh(); v: $crate::math::vmath::tanh_f32_raw, $crate::math::vmath::tanh_f64_raw; }
            asinh_out / asinh, Asinh, "asinh", true { f: |x| x.asinh(); c: |z| $crate::engine::scalar::complex_asinh(z); v32: $crate::math::vmath::asinh_f32_raw; }
            acosh_out / acosh, Acosh, "acosh", true { f: |x| x.acosh(); c: |z| z.acosh(); }
            atanh_out / atanh, Atanh, "atanh", true { f: |x| x.atanh(); c: |z| z.atanh(); v32: $crate::math::vmath::atanh_f32_raw; }
            sigmoid_out / sigmoid, Sigmoid, "sigmoid", true { f: |x| $crate::engine::scalar::sigmoid(x); c: |z| (num_complex::Complex::new(T::one(), T::zero()) + (-z).exp()).inv(); v: $crate::math::vmath::sigmoid_f32_raw, $crate::math::vmath::sigmoid_f64_raw; }
            erf_out / erf, Erf, "erf", true { f: |x| x.erf(); v: $crate::math::vmath::erf_f32_raw, $crate::math::vmath::erf_f64_raw; }
            erfc_out / erfc, Erfc, "erfc", true { f: |x| x.erfc(); v: $crate::math::vmath::erfc_f32_raw, $crate::math::vmath::erfc_f64_raw; }
            lgamma_out / lgamma, Lgamma, "lgamma", true { f: |x| x.lgamma(); v32: $crate::math::vmath::lgamma_f32_raw; }
            ceil_out / ceil, Ceil, "ceil", false { i: |x| x; f: |x| x.ceil(); }
            floor_out / floor, Floor, "floor", false { i: |x| x; f: |x| x.floor(); }
            round_out / round, Round, "round", false { i: |x| x; f: |x| x.round_even(); }
            trunc_out / trunc, Trunc, "trunc", false { i: |x| x; f: |x| x.trunc(); }
            frac_out / frac, Frac, "frac", false { f: |x| x - x.trunc(); }
            bitwise_not_out / bitwise_not, BitwiseNot, "bitwise_not", false { b: |x| !x; i: |x| !x; }
            angle_out / angle, Angle, "angle", true { f: |x| { let y = if x.is_nan() { x } else { T::zero() }; if x < T::zero() { T::PI() } else { y } }; cr: |z| z.im.atan2(z.re); }
            conj_physical_out, ConjPhysical, "conj_physical", false { b: |x| x; i: |x| x; f: |x| x; c: |z| z.conj(); }
            erfinv_out / erfinv, Erfinv, "erfinv", true { f: |x| $crate::math::special::erfinv(x); v32: $crate::math::vmath::erfinv_f32_raw; }
            digamma_out / digamma, Digamma, "digamma", true { f: |x| $crate::math::special::digamma(x); }
            i0_out / i0, I0, "i0", true { f: |x| $crate::math::special::i0(x); }
            sinc_out / sinc, Sinc, "sinc", true { f: |x| $crate::math::special::sinc(x); c: |z| if z == num_complex::Complex::new(T::zero(), T::zero()) { num_complex::Complex::new(T::one(), T::zero()) } else { let p = z * T::PI(); p.sin() / p }; }
            special_i0e_out / special_i0e, I0e, "special_i0e", true { f: |x| $crate::math::special::i0e(x); }
            special_i1_out / special_i1, I1, "special_i1", true { f: |x| $crate::math::special::i1(x); }
            special_i1e_out / special_i1e, I1e, "special_i1e", true { f: |x| $crate::math::special::i1e(x); }
            special_ndtri_out / special_ndtri, Ndtri, "special_ndtri", true { f: |x| $crate::math::special::ndtri(x); }
            special_log_ndtr_out / special_log_ndtr, LogNdtr, "special_log_ndtr", true { f: |x| $crate::math::special::log_ndtr(x); }
            special_erfcx_out / special_erfcx, Erfcx, "special_erfcx", true { f: |x| $crate::math::special::erfcx(x); }
            special_entr_out / special_entr, Entr, "special_entr", true { f: |x| $crate::math::special::entr(x); }
            special_bessel_j0_out / special_bessel_j0, BesselJ0, "special_bessel_j0", true { f: |x| $crate::math::special::bessel_j0(x); }
            special_bessel_j1_out / special_bessel_j1, BesselJ1, "special_bessel_j1", true { f: |x| $crate::math::special::bessel_j1(x); }
            special_bessel_y0_out / special_bessel_y0, BesselY0, "special_bessel_y0", true { f: |x| $crate::math::special::bessel_y0(x); }
            special_bessel_y1_out / special_bessel_y1, BesselY1, "special_bessel_y1", true { f: |x| $crate::math::special::bessel_y1(x); }
            special_modified_bessel_i0_out / special_modified_bessel_i0, ModifiedBesselI0, "special_modified_bessel_i0", true { f: |x| $crate::math::special::modified_bessel_i0(x); }
            special_modified_bessel_i1_out / special_modified_bessel_i1, ModifiedBesselI1, "special_modified_bessel_i1", true { f: |x| $crate::math::special::modified_bessel_i1(x); }
            special_modified_bessel_k0_out / special_modified_bessel_k0, ModifiedBesselK0, "special_modified_bessel_k0", true { f: |x| $crate::math::special::modified_bessel_k0(x); }
            special_modified_bessel_k1_out / special_modified_bessel_k1, ModifiedBesselK1, "special_modified_bessel_k1", true { f: |x| $crate::math::special::modified_bessel_k1(x); }
            special_scaled_modified_bessel_k0_out / special_scaled_modified_bessel_k0, ScaledModifiedBesselK0, "special_scaled_modified_bessel_k0", true { f: |x| $crate::math::special::scaled_modified_bessel_k0(x); }
            special_scaled_modified_bessel_k1_out / special_scaled_modified_bessel_k1, ScaledModifiedBesselK1, "special_scaled_modified_bessel_k1", true { f: |x| $crate::math::special::scaled_modified_bessel_k1(x); }
            special_spherical_bessel_j0_out / special_spherical_bessel_j0, SphericalBesselJ0, "special_spherical_bessel_j0", true { f: |x| $crate::math::special::spherical_bessel_j0(x); }
            special_airy_ai_out / special_airy_ai, AiryAi, "special_airy_ai", true { f: |x| $crate::math::special::airy_ai(x); }
        }
    };
}

/// Defines the op structs of a table (the callback of [`unary_table!`](crate::unary_table) in this module).
#[macro_export]
macro_rules! define_unary_ops {
    ($(
        $method:ident $(/ $functional:ident)?, $op:ident, $name:literal, $int_to_float:literal {
            $(b: |$bx:ident| $b:expr;)? $(i: |$ix:ident| $i:expr;)? $(f: |$fx:ident| $f:expr;)?
            $(h: |$hx:ident| $h:expr;)? $(c: |$cx:ident| $c:expr;)? $(cr: |$crx:ident| $cr:expr;)?
            $(v: $v32:path, $v64:path;)? $(v32: $w32:path;)?
        }
    )*) => {$(
        pub struct $op;
        impl $crate::ops::unary::Unary for $op {
            const NAME: &'static str = $name;
            const INT_TO_FLOAT: bool = $int_to_float;
            const BOOL: bool = false $(|| { let _ = stringify!($b); true })?;
            const INT: bool = false $(|| { let _ = stringify!($i); true })?;
            const FLOAT: bool = false $(|| { let _ = stringify!($f); true })?;
            const COMPLEX: bool = false $(|| { let _ = stringify!($c); true })?;
            const COMPLEX_TO_REAL: bool = false $(|| { let _ = stringify!($cr); true })?;
            const HALF_BITS: bool = false $(|| { let _ = stringify!($h); true })?;
            $(const V32: Option<$crate::ops::unary::Vector<f32>> = Some($v32);)?
            $(const V64: Option<$crate::ops::unary::Vector<f64>> = Some($v64);)?
            $(const V32: Option<$crate::ops::unary::Vector<f32>> = Some($w32);)?
            // Inlined into each dtype's loop, which engine::dispatch instantiates generically:
            // without, relu on float64 ran 1.3x slower.
            $(#[inline(always)] fn b($bx: bool) -> bool { $b })?
            $(#[inline(always)] fn i($ix: i64) -> i64 { $i })?
            $(#[inline(always)] fn f<T: $crate::engine::scalar::Real>($fx: T) -> T { $f })?
            $(#[inline(always)] fn h($hx: u16) -> u16 { $h })?
            $(#[inline(always)] fn c<T: $crate::engine::scalar::Real>($cx: num_complex::Complex<T>) -> num_complex::Complex<T> { $c })?
            $(#[inline(always)] fn cr<T: $crate::engine::scalar::Real>($crx: num_complex::Complex<T>) -> T { $cr })?
        }
    )*};
}

pub mod ops {
    //! The op structs of [`unary_table!`](crate::unary_table).
    crate::unary_table!(define_unary_ops);
}

/// The trait methods of the table's rows (the callback of [`unary_table!`](crate::unary_table) in the
/// `UnaryKernels` impl below).
#[macro_export]
macro_rules! unary_methods {
    ($($method:ident $(/ $functional:ident)?, $op:ident, $name:literal, $int_to_float:literal { $($rest:tt)* })*) => {$(
        fn $method(&self, self_: regen_runtime::TensorRef<'_>, out: regen_runtime::TensorRef<'_>) -> regen_runtime::Result<()> {
            $crate::ops::unary::run::<$crate::ops::unary::ops::$op>(self_, out)
        }
        $(
            fn $functional(&self, self_: regen_runtime::TensorRef<'_>) -> regen_runtime::Result<regen_runtime::Tensor> {
                $crate::ops::unary::functional::<$crate::ops::unary::ops::$op>(self_)
            }
        )?
    )*};
}

/// This family's kernels: group `unary` of regen.toml's `[implement]`, every row of the table and
/// the ops that are not rows.
impl crate::UnaryKernels for crate::Reference {
    crate::unary_table!(unary_methods);

    fn relu(&self, self_: TensorRef<'_>) -> Result<regen_runtime::Tensor> {
        functional::<relu_row::Relu>(self_)
    }

    fn relu_inplace(&self, self_: TensorRef<'_>) -> Result<()> {
        relu(self_, self_)
    }
}

/// `torch.relu` (functional and in place): no `.out` form exists, so it is not a table row.
pub fn relu(self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
    run::<relu_row::Relu>(self_, out)
}

mod relu_row {
    //! relu as a row of its own, outside the table (which lists `.out` forms).
    crate::define_unary_ops! {
        relu, Relu, "relu", false { i: |x| x.max(0); f: |x| crate::engine::scalar::relu(x); }
    }
}
