//! The scalar math the op tables are written in: [`Real`] (f32 and f64, with the special
//! functions std lacks, from libm) and complex numbers through num-complex. Half and bfloat16
//! compute through f32 ([`crate::engine::dtype::Element::Acc`]).

use num_complex::Complex;
use num_traits::{Float, FloatConst};

use crate::math::vmath;

/// f32 and f64.
pub trait Real: Float + FloatConst + Send + Sync + std::fmt::Debug + 'static {
    fn erf(self) -> Self;
    fn erfc(self) -> Self;
    fn lgamma(self) -> Self;
    /// Round half to even, as `torch.round` (and C's nearbyint) does.
    fn round_even(self) -> Self;
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    // vmath's polynomials on one element, inlined (`vmath::lane_api!`): in the engine's
    // contiguous loops they vectorise with the formula around them, where libm's `exp` is a
    // call per element that keeps the loop scalar. Same special values as libm's. A function
    // that calls them must be `#[inline(always)]` down to the loop: compiled outside the loop's
    // CPU tier, their fused multiply-adds are libm calls (gelu_backward ran 80x slower).
    fn vexp(self) -> Self;
    fn vexp_m1(self) -> Self;
    fn vln(self) -> Self;
    fn vln_1p(self) -> Self;
    fn vtanh(self) -> Self;
    fn verf(self) -> Self;
}

impl Real for f32 {
    fn erf(self) -> Self {
        libm::erff(self)
    }
    fn erfc(self) -> Self {
        libm::erfcf(self)
    }
    fn lgamma(self) -> Self {
        libm::lgammaf(self)
    }
    fn round_even(self) -> Self {
        self.round_ties_even()
    }
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn vexp(self) -> Self {
        vmath::exp_lane_f32(self)
    }
    #[inline(always)]
    fn vexp_m1(self) -> Self {
        vmath::expm1_lane_f32(self)
    }
    #[inline(always)]
    fn vln(self) -> Self {
        vmath::log_lane_f32(self)
    }
    #[inline(always)]
    fn vln_1p(self) -> Self {
        vmath::log1p_lane_f32(self)
    }
    #[inline(always)]
    fn vtanh(self) -> Self {
        vmath::tanh_lane_f32(self)
    }
    #[inline(always)]
    fn verf(self) -> Self {
        vmath::erf_lane_f32(self)
    }
}

impl Real for f64 {
    fn erf(self) -> Self {
        libm::erf(self)
    }
    fn erfc(self) -> Self {
        libm::erfc(self)
    }
    fn lgamma(self) -> Self {
        libm::lgamma(self)
    }
    fn round_even(self) -> Self {
        self.round_ties_even()
    }
    fn from_f64(x: f64) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn vexp(self) -> Self {
        vmath::exp_lane_f64(self)
    }
    #[inline(always)]
    fn vexp_m1(self) -> Self {
        vmath::expm1_lane_f64(self)
    }
    #[inline(always)]
    fn vln(self) -> Self {
        vmath::log_lane_f64(self)
    }
    #[inline(always)]
    fn vln_1p(self) -> Self {
        vmath::log1p_lane_f64(self)
    }
    #[inline(always)]
    fn vtanh(self) -> Self {
        vmath::tanh_lane_f64(self)
    }
    #[inline(always)]
    fn verf(self) -> Self {
        vmath::erf_lane_f64(self)
    }
}

/// `torch.sign` of a real: -1, 0 or 1, NaN for NaN (Rust's `signum(0.0)` is 1).
/// Two selects, not an `else if` (see [`relu`]).
#[inline(always)]
pub fn sign<T: Real>(x: T) -> T {
    let negative = if x < T::zero() { -T::one() } else { x };
    if x > T::zero() { T::one() } else { negative }
}

/// `torch.sigmoid`: 1 / (1 + exp(-x)).
#[inline(always)]
pub fn sigmoid<T: Real>(x: T) -> T {
    T::one() / (T::one() + (-x).vexp())
}

/// `torch.sgn` of a complex: z / |z|, 0 at 0.
pub fn sgn<T: Real>(z: Complex<T>) -> Complex<T> {
    let r = z.norm();
    if r == T::zero() { Complex::new(T::zero(), T::zero()) } else { z / r }
}

/// `torch.relu` of a real, propagating NaN as PyTorch's CPU kernel does (`x > 0 ? x : 0`
/// keeps NaN out; clamp_min keeps it in: relu uses clamp_min). Compares and a select: the
/// scalar functions are written as selects with cheap arms, no `||` between float compares and
/// no `else if`, which the compiler keeps as a branch per element where it vectorises lanes
/// rather than a loop (`loops::lanes`, float16).
#[inline(always)]
pub fn relu<T: Real>(x: T) -> T {
    if x.is_nan() | (x > T::zero()) { x } else { T::zero() }
}

/// `min(max(x, lo), hi)` as two selects, NaN in `x` kept (a bound above the other gives `hi`).
#[inline(always)]
pub fn clamp<T: Real>(x: T, lo: T, hi: T) -> T {
    let y = if x < lo { lo } else { x };
    if y > hi { hi } else { y }
}

/// Python's modulo (`torch.remainder`): the result has the sign of the divisor.
#[inline(always)]
pub fn remainder<T: Real>(a: T, b: T) -> T {
    remainder_from_fmod(a % b, b)
}

/// `torch.floor_divide` of reals: floor(a / b), as ATen's `div_floor_floating` computes it.
#[inline(always)]
pub fn floor_divide<T: Real>(a: T, b: T) -> T {
    floor_from_fmod(a, b, a % b)
}

/// [`remainder`] from C's remainder `m` of `a / b`: `m + b` where `m` is not 0 and its sign is not
/// `b`'s. One select, shared by the libm form and the vectorised [`remainder_checked`].
#[inline(always)]
fn remainder_from_fmod<T: Real>(m: T, b: T) -> T {
    let fix = (m != T::zero()) & ((m < T::zero()) != (b < T::zero()));
    if fix { m + b } else { m }
}

/// [`floor_divide`] from C's remainder `m` of `a / b`: ATen's `div_floor_floating` (`(a - m) / b`,
/// one less where `m`'s sign is not `b`'s, rounded to the nearest integer; a zero quotient keeps
/// the sign of `a / b`, and `b == 0` gives `a / b`), its branches as selects.
#[inline(always)]
fn floor_from_fmod<T: Real>(a: T, b: T, m: T) -> T {
    let div = (a - m) / b;
    let fix = (m != T::zero()) & ((b < T::zero()) != (m < T::zero()));
    let div = if fix { div - T::one() } else { div };
    let floor = div.floor();
    let rounded = if div - floor > T::from_f64(0.5) { floor + T::one() } else { floor };
    let rounded = if div == T::zero() { T::zero().copysign(a / b) } else { rounded };
    if b == T::zero() { a / b } else { rounded }
}

/// C's `fmod` (`torch.fmod`), exact, as selects that vectorise, for every lane but one kind:
/// the second value is true where it does not apply (a quotient |x / y| of 2^digits or more, with
/// x finite and y finite and not 0), and the caller computes libm's `fmod` there
/// (`loops::checked2`). Below 2^digits the rounded quotient is within one of the true one and not
/// below an integer the true one reaches (integers are representable there), so its truncation
/// `q` is right or one too large; `a - q b` by a fused multiply-add is exact when `q` is right (the
/// remainder is representable) and negative when not, and the second one, with `q - 1`, is exact.
/// ATen's vector kernels call Sleef's exact `fmod`; libm's is a call and a loop per element
/// (float32 `fmod` took 5.4x CPU's time through it).
#[inline(always)]
pub fn fmod_checked<T: Real>(x: T, y: T) -> (T, bool) {
    let (a, b) = (x.abs(), y.abs());
    let quotient = a / b;
    let q = quotient.trunc();
    let r = (-q).mul_add(b, a);
    let q = if r < T::zero() { q - T::one() } else { q };
    let r = (-q).mul_add(b, a).copysign(x);
    let nan = a.is_nan() | b.is_nan() | a.is_infinite() | (b == T::zero());
    // x finite: `a / inf` is 0, and `0 * inf` would make the remainder NaN.
    let r = if b.is_infinite() { x } else { r };
    let r = if nan { T::nan() } else { r };
    let limit = T::from_f64(2.0) / T::epsilon();
    // False for a NaN quotient too (0 / 0, inf / inf: `nan` lanes).
    let in_range = quotient < limit;
    (r, !in_range & !nan)
}

/// [`remainder`] through [`fmod_checked`] (the same flag).
#[inline(always)]
pub fn remainder_checked<T: Real>(a: T, b: T) -> (T, bool) {
    let (m, libm) = fmod_checked(a, b);
    (remainder_from_fmod(m, b), libm)
}

/// [`floor_divide`] through [`fmod_checked`] (the same flag).
#[inline(always)]
pub fn floor_divide_checked<T: Real>(a: T, b: T) -> (T, bool) {
    let (m, libm) = fmod_checked(a, b);
    (floor_from_fmod(a, b, m), libm)
}

/// Integer floor division (Python's `//`); division by zero is the caller's error.
pub fn floor_divide_int(a: i64, b: i64) -> i64 {
    let q = a.wrapping_div(b);
    if (a % b != 0) && ((a < 0) != (b < 0)) { q - 1 } else { q }
}

/// Integer Python modulo.
pub fn remainder_int(a: i64, b: i64) -> i64 {
    let m = a.wrapping_rem(b);
    if m != 0 && ((m < 0) != (b < 0)) { m + b } else { m }
}

/// `torch.maximum`/`minimum` of reals: NaN wins.
#[inline(always)]
pub fn maximum<T: Real>(a: T, b: T) -> T {
    let m = if a > b { a } else { b };
    if a.is_nan() | b.is_nan() { T::nan() } else { m }
}
#[inline(always)]
pub fn minimum<T: Real>(a: T, b: T) -> T {
    let m = if a < b { a } else { b };
    if a.is_nan() | b.is_nan() { T::nan() } else { m }
}

/// `torch.hypot`: float32 (and the halves, through it) in f64 as glibc's `hypotf` computes it (the
/// squares are exact, the sum and the root round once each), so the same values, but vectorised
/// (a `hypotf` call per element took 2.4x CPU's time); an infinite operand gives inf, NaN or not.
/// float64 takes libm's `hypot`.
#[inline(always)]
pub fn hypot<T: Real>(x: T, y: T) -> T {
    if size_of::<T>() != 4 {
        return x.hypot(y);
    }
    let (a, b) = (x.to_f64(), y.to_f64());
    let r = T::from_f64((a * a + b * b).sqrt());
    if x.is_infinite() | y.is_infinite() { T::infinity() } else { r }
}

/// C's `frexp` of an f64 (`torch.frexp` of every float type, each exact in f64): x = m 2^e with
/// |m| in [0.5, 1), m = x and e = 0 for zero, inf and NaN. On the bits, as selects, so that the
/// loop vectorises (libm's, a branching call per element, took 2x CPU's time).
#[inline(always)]
pub fn frexp(x: f64) -> (f64, i32) {
    // Subnormals are scaled into the normal range first.
    let subnormal = x.abs() < f64::MIN_POSITIVE;
    let y = if subnormal { x * f64::from_bits((1023 + 54) << 52) } else { x };
    let bits = y.to_bits();
    let e = ((bits >> 52) & 0x7ff) as i32 - 1022 - if subnormal { 54 } else { 0 };
    let m = f64::from_bits(bits & !(0x7ff << 52) | (1022 << 52));
    let special = (x == 0.0) | !x.is_finite();
    (if special { x } else { m }, if special { 0 } else { e })
}

/// `torch.xlogy`: 0 where x is 0 (unless y is NaN).
pub fn xlogy<T: Real>(x: T, y: T) -> T {
    if y.is_nan() {
        T::nan()
    } else if x == T::zero() {
        T::zero()
    } else {
        x * y.ln()
    }
}

/// `torch.logaddexp`: log(exp(a) + exp(b)) without overflow.
#[inline(always)]
pub fn logaddexp<T: Real>(a: T, b: T) -> T {
    if a.is_infinite() && a == b {
        return a;
    }
    let m = a.max(b);
    m + (-(a - b).abs()).vexp().vln_1p()
}

/// `torch.logaddexp` of complex numbers: the larger real part factored out, as ATen's
/// `_log_add_exp_helper` does.
pub fn logaddexp_complex<T: Real>(a: Complex<T>, b: Complex<T>) -> Complex<T> {
    let (big, small) = if a.re >= b.re { (a, b) } else { (b, a) };
    if big.re.is_infinite() && big.re < T::zero() {
        return big;
    }
    big + ((small - big).exp() + Complex::new(T::one(), T::zero())).ln()
}

/// `torch.logaddexp2`.
pub fn logaddexp2<T: Real>(a: T, b: T) -> T {
    if a.is_infinite() && a == b {
        return a;
    }
    let m = a.max(b);
    m + (-(a - b).abs()).exp2().ln_1p() / T::LN_2()
}

/// `torch.heaviside`: `values` where x is 0, else x > 0.
#[inline(always)]
pub fn heaviside<T: Real>(x: T, values: T) -> T {
    let y = if x > T::zero() { T::one() } else { T::zero() };
    let y = if x.is_nan() { x } else { y };
    if x == T::zero() { values } else { y }
}

/// Greatest common divisor (non-negative), as `torch.gcd`.
pub fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a as i64
}

/// Least common multiple, as `torch.lcm`.
pub fn lcm(a: i64, b: i64) -> i64 {
    let g = gcd(a, b);
    if g == 0 { 0 } else { (a / g).wrapping_mul(b).wrapping_abs() }
}

/// `torch.nextafter` of f32 or f64, each stepping in its own precision: C's `nextafter` on the
/// bits, as selects so that the loop vectorises (libm's, a call per element, took 12x CPU's time).
#[inline(always)]
pub fn nextafter<T: Real>(a: T, b: T) -> T {
    if std::mem::size_of::<T>() == 4 {
        let (x, y) = (a.to_f64() as f32, b.to_f64() as f32);
        let step = next_bits(x > 0.0, x < y, u64::from(x.to_bits()), u64::from(y.to_bits()), 31) as u32;
        return T::from_f64(f64::from(next_select(x, y, f32::from_bits(step))));
    }
    let (x, y) = (a.to_f64(), b.to_f64());
    T::from_f64(next_select(x, y, f64::from_bits(next_bits(x > 0.0, x < y, x.to_bits(), y.to_bits(), 63))))
}

/// `torch.nextafter` of float16 or bfloat16 values (given widened, `Float::Acc`), stepping one
/// unit in the last place of the stored type, not of f32: `bits` and `from_bits` are the
/// stored type's 16 bits.
#[inline(always)]
pub fn nextafter_half(x: f32, y: f32, bits: impl Fn(f32) -> u16, from_bits: impl Fn(u16) -> f32) -> f32 {
    let step = next_bits(x > 0.0, x < y, u64::from(bits(x)), u64::from(bits(y)), 15) as u16;
    next_select(x, y, from_bits(step))
}

/// The bits one step from `x` towards `y` (`up`: `x < y`), for a nonzero `x`: one more in
/// magnitude when moving away from zero, one less towards it; for `x` zero, the smallest
/// subnormal with `y`'s sign (bit `sign` is the sign bit).
#[inline(always)]
fn next_bits(positive: bool, up: bool, x: u64, y: u64, sign: u32) -> u64 {
    let away = up == positive;
    let stepped = if away { x.wrapping_add(1) } else { x.wrapping_sub(1) };
    let zero = x & !(1 << sign) == 0;
    if zero { 1 | (y & (1 << sign)) } else { stepped }
}

/// C's cases around the step: NaN in either gives NaN, `x == y` gives `y`.
#[inline(always)]
fn next_select<T: Real>(x: T, y: T, step: T) -> T {
    let r = if x == y { y } else { step };
    if x.is_nan() | y.is_nan() { x + y } else { r }
}

/// `torch.lerp`, as ATen computes it: from the nearer end, so weight 1 gives `end` exactly.
pub fn lerp<T: Real>(x: T, end: T, w: T) -> T {
    if w.abs() < T::from_f64(0.5) { x + w * (end - x) } else { end - (end - x) * (T::one() - w) }
}

/// `torch.lerp` of complex numbers.
pub fn lerp_complex<T: Real>(x: Complex<T>, end: Complex<T>, w: Complex<T>) -> Complex<T> {
    let one = Complex::new(T::one(), T::zero());
    if w.norm() < T::from_f64(0.5) { x + w * (end - x) } else { end - (end - x) * (one - w) }
}

/// `gelu(x)` with the exact (erf) formula.
#[inline(always)]
pub fn gelu<T: Real>(x: T) -> T {
    x * T::from_f64(0.5) * (T::one() + (x * T::FRAC_1_SQRT_2()).verf())
}

const GELU_BETA: f64 = std::f64::consts::SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI * 0.5;
const GELU_KAPPA: f64 = 0.044715;

/// `gelu(x, approximate="tanh")`.
#[inline(always)]
pub fn gelu_tanh<T: Real>(x: T) -> T {
    let inner = T::from_f64(GELU_BETA) * (x + T::from_f64(GELU_KAPPA) * x * x * x);
    T::from_f64(0.5) * x * (T::one() + inner.vtanh())
}

/// The gradient of [`gelu`] times `g`.
#[inline(always)]
pub fn gelu_backward<T: Real>(g: T, x: T) -> T {
    let beta = T::from_f64(std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2 * 0.5);
    let cdf = T::from_f64(0.5) * (T::one() + (x * T::FRAC_1_SQRT_2()).verf());
    let pdf = beta * (x * x * T::from_f64(-0.5)).vexp();
    g * (cdf + x * pdf)
}

/// The gradient of [`gelu_tanh`] times `g`.
#[inline(always)]
pub fn gelu_tanh_backward<T: Real>(g: T, x: T) -> T {
    let (beta, kappa) = (T::from_f64(GELU_BETA), T::from_f64(GELU_KAPPA));
    let x_sq = x * x;
    let tanh_inner = (beta * (x + kappa * x_sq * x)).vtanh();
    let left = T::from_f64(0.5) * x;
    let right = T::one() + tanh_inner;
    let left_derivative = T::from_f64(0.5) * right;
    let right_derivative =
        left * (T::one() - tanh_inner * tanh_inner) * beta * (T::one() + T::from_f64(3.0) * kappa * x_sq);
    g * (left_derivative + right_derivative)
}

/// Complex division as c10::complex (numpy's algorithm): scaled by the larger part of the
/// divisor, and a zero divisor gives infinities or NaN per part rather than NaN + NaN·i.
pub fn complex_div<T: Real>(x: Complex<T>, y: Complex<T>) -> Complex<T> {
    let (a, b, c, d) = (x.re, x.im, y.re, y.im);
    let (abs_c, abs_d) = (c.abs(), d.abs());
    if abs_c >= abs_d {
        if abs_c == T::zero() && abs_d == T::zero() {
            return Complex::new(a / abs_c, b / abs_d);
        }
        let rat = d / c;
        let scl = T::one() / (c + d * rat);
        Complex::new((a + b * rat) * scl, (b - a * rat) * scl)
    } else {
        let rat = c / d;
        let scl = T::one() / (d + c * rat);
        Complex::new((a * rat + b) * scl, (b * rat - a) * scl)
    }
}

/// Complex asinh without num-complex's cancellation: odd symmetry puts z in the right half-plane
/// (ln(z + sqrt(z^2 + 1)) cancels for negative real parts), and a series serves small |z|
/// (where z + sqrt(z^2 + 1) is 1 + tiny).
pub fn complex_asinh<T: Real>(z: Complex<T>) -> Complex<T> {
    if z.re < T::zero() {
        return -complex_asinh(-z);
    }
    if z.norm() < T::from_f64(1e-2) {
        let z2 = z * z;
        // z - z^3/6 + 3z^5/40 - 5z^7/112: the next term is below 1e-16 relative.
        let c = |x: f64| Complex::new(T::from_f64(x), T::zero());
        return z * (c(1.0) + z2 * (c(-1.0 / 6.0) + z2 * (c(3.0 / 40.0) + z2 * c(-5.0 / 112.0))));
    }
    z.asinh()
}

/// `torch.nan_to_num` of a real.
#[inline(always)]
pub fn nan_to_num<T: Real>(x: T, nan: T, posinf: T, neginf: T) -> T {
    let y = if x == T::infinity() { posinf } else { x };
    let y = if x == T::neg_infinity() { neginf } else { y };
    if x.is_nan() { nan } else { y }
}

/// `torch.round(x, decimals=d)`: scaled by 10^|d|, rounded half to even, scaled back.
pub fn round_decimals<T: Real>(x: T, decimals: i64) -> T {
    let ten_pow = T::from_f64(10f64.powi(decimals.unsigned_abs().min(400) as i32));
    if decimals < 0 { (x / ten_pow).round_even() * ten_pow } else { (x * ten_pow).round_even() / ten_pow }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_semantics() {
        assert_eq!(remainder(-7.0f64, 3.0), 2.0);
        assert_eq!(remainder(7.0f64, -3.0), -2.0);
        assert_eq!(floor_divide(-7.0f64, 2.0), -4.0);
        assert_eq!(floor_divide_int(-7, 2), -4);
        assert_eq!(remainder_int(-7, 3), 2);
        assert_eq!(sign(0.0f32), 0.0);
        assert!(sign(f64::NAN).is_nan());
        assert_eq!((2.5f32).round_even(), 2.0);
        assert_eq!(gcd(-12, 18), 6);
        assert_eq!(lcm(4, -6), 12);
        assert_eq!(heaviside(0.0f32, 0.5), 0.5);
        assert!((logaddexp(1000.0f64, 1000.0) - (1000.0 + std::f64::consts::LN_2)).abs() < 1e-9);
        assert_eq!(xlogy(0.0f64, 0.0), 0.0);
        assert!(maximum(1.0f32, f32::NAN).is_nan());
        assert_eq!(nextafter(1.0f32, 2.0), 1.0 + f32::EPSILON);
    }
}

#[cfg(test)]
mod nextafter_tests {
    use super::*;

    #[test]
    fn nextafter_is_cs_in_each_precision() {
        let edges = [0.0, -0.0, 1.0, -1.0, 1e-40, -1e-45, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 3.5e38, 65504.0];
        let spread = (0..20_000u64).map(|k| f64::from_bits(0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(k)));
        let values: Vec<f64> = edges.into_iter().chain(spread).collect();
        for (k, &x) in values.iter().enumerate() {
            for &y in &values[k.saturating_sub(3)..(k + 3).min(values.len())] {
                let (a, b) = (nextafter(x, y), libm::nextafter(x, y));
                assert!(a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan(), "{x:e} {y:e}");
                let (x, y) = (x as f32, y as f32);
                let (a, b) = (nextafter(x, y), libm::nextafterf(x, y));
                assert!(a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan(), "{x:e} {y:e}");
            }
        }
        // float16: every value towards +inf and -inf is its neighbour among float16's values.
        use crate::engine::dtype::{f16_from_f32, f16_to_f32};
        let (bits, value) = (|v| f16_from_f32(v).to_bits(), |b| f16_to_f32(half::f16::from_bits(b)));
        let mut sorted: Vec<f32> = (0..=u16::MAX).map(value).filter(|v| !v.is_nan()).collect();
        sorted.sort_by(f32::total_cmp);
        sorted.dedup();
        for &x in sorted.iter().filter(|x| x.is_finite()) {
            let above = sorted[sorted.partition_point(|&v| v <= x)];
            let below = sorted[sorted.partition_point(|&v| v < x) - 1];
            assert_eq!(nextafter_half(x, f32::INFINITY, bits, value), above, "{x}");
            let down = nextafter_half(x, f32::NEG_INFINITY, bits, value);
            // Below zero, -0 and 0 are one value to the search; the step from 0 is the
            // smallest negative subnormal.
            assert!(down == below || x == 0.0 && down == -f16_to_f32(half::f16::from_bits(1)), "{x}");
        }
    }
}

#[cfg(test)]
mod hypot_tests {
    use super::*;

    #[test]
    fn float32_hypot_is_the_rounded_exact_root_and_inf_beats_nan() {
        let edges = [0.0, -0.0, 1.0, -3.0, 1e-45, 3e38, -3e38, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
        let spread = (0..20_000u64).map(|k| f32::from_bits((0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(k) >> 32) as u32));
        let values: Vec<f32> = edges.into_iter().chain(spread).collect();
        for (k, &x) in values.iter().enumerate() {
            for &y in &values[k.saturating_sub(3)..(k + 3).min(values.len())] {
                let got = hypot(x, y);
                if x.is_infinite() || y.is_infinite() {
                    assert_eq!(got, f32::INFINITY, "hypot({x:e}, {y:e})");
                    continue;
                }
                // libm's double hypot is within an ulp of the root: rounded to f32, at most one
                // f32 ulp from ours (double rounding either way).
                let want = libm::hypot(f64::from(x), f64::from(y)) as f32;
                let ulps = (got.to_bits() as i64 - want.to_bits() as i64).abs();
                assert!(ulps <= 1 || got.is_nan() && want.is_nan(), "hypot({x:e}, {y:e}) = {got:e}, {want:e}");
            }
        }
    }
}

#[cfg(test)]
mod frexp_tests {
    use super::*;

    #[test]
    fn frexp_is_libms() {
        let edges = [0.0, -0.0, 1.0, -0.5, 5e-324, -2.2e-308, 1e-310, f64::MAX, f64::INFINITY, f64::NEG_INFINITY];
        let spread = (0..50_000u64).map(|k| f64::from_bits(0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(k)));
        let subnormals =
            (0..2000u64).map(|k| f64::from_bits(k.wrapping_mul(0x0000_0937_79b9_7f4b) & 0x800f_ffff_ffff_ffff));
        for x in edges.into_iter().chain(spread).chain(subnormals).chain([f64::NAN]) {
            let ((m, e), (lm, le)) = (frexp(x), libm::frexp(x));
            assert!(m.to_bits() == lm.to_bits() || m.is_nan() && lm.is_nan(), "frexp({x:e}) = {m:e}, libm's {lm:e}");
            assert_eq!(e, le, "frexp({x:e})");
        }
    }
}
