//! The rejection samplers — `poisson`, `binomial`, `_standard_gamma`, `_sample_dirichlet` — and
//! the gamma's reparameterised gradient, as ATen's `native/Distributions.cpp` and
//! `Distributions.h` run them on CPU: one element at a time in TensorIterator order, each drawing
//! double uniforms (and normals) from the device generator until a candidate is accepted.
//!
//! The arithmetic keeps C++'s types: in `sample_binomial<float, double>` a product of two
//! `scalar_t`s is a float product and `std::sqrt` of it a float root, while the uniforms and the
//! bounds are doubles. Rounding the same operations at the same precision keeps the accepted
//! candidates, so the samples equal CPU's after the same seed. ATen's file is compiled without
//! FMA, so nothing here is fused.

use regen_runtime::rng::{CpuGenerator, with_generator};
use regen_runtime::{Error, Generator, Result, Tensor, TensorRef};

use crate::engine::dtype::dtype_of;
use crate::engine::dtype::{DType, Element, not_implemented};
use crate::engine::iter::{self, Operand};
use crate::engine::scalar::Real;
use crate::ops::random::{FromI64, serial};
use crate::ops::reduce;

/// What one element of each op is drawn from, and the dtypes CPU's kernel dispatches over.
#[derive(Clone, Copy)]
enum Sampler {
    /// `_s_poisson_cpu`: floating types with bfloat16 and half.
    Poisson,
    /// `_s_binomial_cpu`: float and double (`AT_DISPATCH_FLOATING_TYPES`).
    Binomial,
    /// `_s_gamma_cpu`: float and double.
    Gamma,
}

impl Sampler {
    fn kernel(self) -> &'static str {
        match self {
            Sampler::Poisson => "poisson_cpu",
            Sampler::Binomial => "binomial_cpu",
            Sampler::Gamma => "gamma_cpu",
        }
    }

    fn supports(self, d: DType) -> bool {
        match self {
            Sampler::Poisson => matches!(d, DType::F32 | DType::F64 | DType::F16 | DType::BF16),
            Sampler::Binomial | Sampler::Gamma => matches!(d, DType::F32 | DType::F64),
        }
    }
}

/// Numpy's `random_poisson` as ATen's `sample_poisson`: Hörmann's transformed rejection (PTRS)
/// for rates of at least 10, multiplication of uniforms below.
fn sample_poisson(lambda: f64, g: &mut CpuGenerator) -> Result<i64> {
    if lambda.is_nan() || lambda < 0.0 {
        return Err(Error::runtime("invalid Poisson rate, expected rate to be non-negative"));
    }
    if lambda >= 10.0 {
        let slam = lambda.sqrt();
        let loglam = lambda.ln();
        let b = 0.931 + 2.53 * slam;
        let a = -0.059 + 0.02483 * b;
        let invalpha = 1.1239 + 1.1328 / (b - 3.4);
        let vr = 0.9277 - 3.6224 / (b - 2.0);
        loop {
            let u = g.uniform_f64() - 0.5;
            let v = g.uniform_f64();
            let us = 0.5 - u.abs();
            let k = ((2.0 * a / us + b) * u + lambda + 0.43).floor();
            if us >= 0.07 && v <= vr {
                return Ok(k as i64);
            }
            if k < 0.0 || (us < 0.013 && v > us) {
                continue;
            }
            if v.ln() + invalpha.ln() - (a / (us * us) + b).ln() <= -lambda + k * loglam - lgamma(k + 1.0) {
                return Ok(k as i64);
            }
        }
    }
    if lambda == 0.0 {
        return Ok(0);
    }
    let enlam = (-lambda).exp();
    let mut x = 0;
    let mut prod = 1.0;
    loop {
        prod *= g.uniform_f64();
        if prod > enlam {
            x += 1;
        } else {
            return Ok(x);
        }
    }
}

/// glibc's `lgamma` (what `std::lgamma` calls), through the reentrant entry point.
fn lgamma(x: f64) -> f64 {
    unsafe extern "C" {
        fn lgamma_r(x: f64, sign: *mut i32) -> f64;
    }
    let mut sign = 0;
    // SAFETY: a pure libm function writing the sign through a valid pointer.
    unsafe { lgamma_r(x, &mut sign) }
}

/// TensorFlow's binomial sampler as ATen's `sample_binomial<scalar_t, double>`: inversion for a
/// mean below 10, BTRS above, on the smaller of `p` and `1 - p`.
///
/// A NaN or infinite count (which CPU loops on forever: no geometric sum exceeds it) gives NaN.
fn sample_binomial<T: Real>(count: T, prob: T, g: &mut CpuGenerator) -> T {
    let (zero, one, ten) = (T::zero(), T::one(), T::from_f64(10.0));
    if count <= zero || prob <= zero {
        return zero;
    }
    if prob >= one {
        return count;
    }
    if !count.is_finite() {
        return T::nan();
    }
    if prob <= T::from_f64(0.5) {
        if count * prob >= ten { btrs(count, prob, g) } else { binomial_inversion(count, prob, g) }
    } else if prob > T::from_f64(0.5) {
        // `scalar_t qprob = 1.0 - prob`: a double difference rounded back.
        let q = T::from_f64(1.0 - prob.to_f64());
        count - if count * q >= ten { btrs(count, q, g) } else { binomial_inversion(count, q, g) }
    } else {
        T::nan()
    }
}

/// The number of geometric(p) waiting times that fit in `count`.
fn binomial_inversion<T: Real>(count: T, prob: T, g: &mut CpuGenerator) -> T {
    let logprob = (-prob).ln_1p().to_f64();
    let (mut geom_sum, mut num_geom) = (0.0, T::zero());
    loop {
        let geom = (g.uniform_f64().ln() / logprob).ceil();
        geom_sum += geom;
        if geom_sum > count.to_f64() {
            return num_geom;
        }
        num_geom = num_geom + T::one();
    }
}

/// Hörmann's BTRS (transformed rejection with squeeze), with TensorFlow's missing log.
fn btrs<T: Real>(count: T, prob: T, g: &mut CpuGenerator) -> T {
    let one = T::one();
    let stddev = (count * prob * (one - prob)).sqrt().to_f64();
    let b = 1.15 + 2.53 * stddev;
    let a = -0.0873 + 0.0248 * b + 0.01 * prob.to_f64();
    let c = (count * prob).to_f64() + 0.5;
    let v_r = 0.92 - 4.2 / b;
    let r = (prob / (one - prob)).to_f64();
    let alpha = (2.83 + 5.1 / b) * stddev;
    let m = ((count + one) * prob).floor().to_f64();
    let n = count.to_f64();
    loop {
        let u = g.uniform_f64() - 0.5;
        let v = g.uniform_f64();
        let us = 0.5 - u.abs();
        let k = T::from_f64(((2.0 * a / us + b) * u + c).floor());
        if k < T::zero() || k > count {
            continue;
        }
        if us >= 0.07 && v <= v_r {
            return k;
        }
        let v = (v * alpha / (a / (us * us) + b)).ln();
        let kd = k.to_f64();
        let n_k1 = (count - k + one).to_f64();
        let upperbound = (m + 0.5) * ((m + 1.0) / (r * (n - m + 1.0))).ln()
            + (count + one).to_f64() * ((n - m + 1.0) / n_k1).ln()
            + (kd + 0.5) * (r * n_k1 / (k + one).to_f64()).ln()
            + stirling_approx_tail(m)
            + stirling_approx_tail(n - m)
            - stirling_approx_tail(kd)
            - stirling_approx_tail((count - k).to_f64());
        if v <= upperbound {
            return k;
        }
    }
}

/// `log k! - (k + 1/2) log(k + 1) + k + 1 - log(sqrt(2 pi))`: tabulated below 10, Stirling's
/// series above.
#[allow(clippy::excessive_precision)]
fn stirling_approx_tail(k: f64) -> f64 {
    const TAIL: [f64; 10] = [
        0.0810614667953272,
        0.0413406959554092,
        0.0276779256849983,
        0.02079067210376509,
        0.0166446911898211,
        0.0138761288230707,
        0.0118967099458917,
        0.0104112652619720,
        0.00925546218271273,
        0.00833056343336287,
    ];
    if k < TAIL.len() as f64 {
        return TAIL[k as usize];
    }
    let kp1sq = (k + 1.0) * (k + 1.0);
    (1.0 / 12.0 - (1.0 / 360.0 - 1.0 / 1260.0 / kp1sq) / kp1sq) / (k + 1.0)
}

/// Marsaglia and Tsang's gamma sampler as ATen's `sample_gamma<scalar_t, double>`, boosting
/// `alpha < 1` by a uniform power. The float literals `1.0f / 3.0f` and `0.0331f` are float
/// values even where the arithmetic is double.
fn sample_gamma<T: Real>(alpha: T, g: &mut CpuGenerator) -> f64 {
    let one = T::one();
    let mut alpha = alpha;
    let mut scale = 1.0f64;
    if alpha < one {
        if alpha == T::zero() {
            return 0.0;
        }
        scale *= (1.0 - g.uniform_f64()).powf((one / alpha).to_f64());
        alpha = alpha + one;
    }
    let d = (alpha - T::from_f64(f64::from(1.0f32 / 3.0f32))).to_f64();
    let c = 1.0 / (9.0 * d).sqrt();
    let squeeze = f64::from(0.0331f32);
    loop {
        let (x, y) = loop {
            let x = g.normal_f64(0.0, 1.0);
            let y = 1.0 + c * x;
            if y > 0.0 || y.is_nan() {
                break (x, y);
            }
        };
        let v = y * y * y;
        let u = 1.0 - g.uniform_f64();
        let xx = x * x;
        if u < 1.0 - squeeze * xx * xx || u.ln() < 0.5 * xx + d * (1.0 - v + v.ln()) {
            return scale * d * v;
        }
    }
}

/// TensorIterator's check that every operand has the first one's dtype.
fn same_dtype(inputs: &[TensorRef<'_>]) -> Result<DType> {
    let dtype = dtype_of(&inputs[0])?;
    for t in &inputs[1..] {
        let d = dtype_of(t)?;
        if d != dtype {
            return Err(Error::runtime(format!("expected scalar type {} but found {}", dtype.name(), d.name())));
        }
    }
    Ok(dtype)
}

/// The output of `at::zeros(first.sizes(), first.options())` filled by `draw` element by element
/// in TensorIterator order, the generator locked throughout.
fn sample(
    op: Sampler,
    inputs: &[TensorRef<'_>],
    generator: Option<Generator>,
    check_dtype: impl Fn(DType) -> Result<()>,
) -> Result<Tensor> {
    let dtype = same_dtype(inputs)?;
    check_dtype(dtype)?;
    let shape = inputs[0].sizes().to_vec();
    let broadcast = iter::broadcast_shapes(&inputs.iter().map(|t| t.sizes()).collect::<Vec<_>>())?;
    if broadcast != shape {
        return Err(Error::runtime(format!(
            "output with shape {shape:?} doesn't match the broadcast shape {broadcast:?}"
        )));
    }
    if !op.supports(dtype) {
        return Err(not_implemented(op.kernel(), dtype));
    }
    let out = iter::new_tensor(&shape, dtype)?;
    let mut ops = vec![Operand::of(&out.as_ref())?];
    for t in inputs {
        ops.push(Operand::of(t)?);
    }
    with_generator(generator, |g| match op {
        Sampler::Poisson => crate::dispatch!(dtype, [F32, F64, F16, BF16], |T| {
            each::<T>(&ops, |x, _| Ok(T::from_i64(sample_poisson(x.to_num().as_f64(), g)?)))
        }, else Ok(())),
        Sampler::Binomial => crate::dispatch!(dtype, [F32, F64], |T| {
            each::<T>(&ops, |count, prob| Ok(sample_binomial(count, prob, g)))
        }, else Ok(())),
        // `std::max(numeric_limits<scalar_t>::min(), (scalar_t) sample)`.
        Sampler::Gamma => crate::dispatch!(dtype, [F32, F64], |T| {
            each::<T>(&ops, |alpha, _| Ok(T::MIN_POSITIVE.max(sample_gamma(alpha, g) as T)))
        }, else Ok(())),
    })??;
    Ok(out)
}

/// Writes `f(first input, second input)` (the first again for one input) to each output
/// element, in TensorIterator order.
fn each<T: Element>(ops: &[Operand], mut f: impl FnMut(T, T) -> Result<T>) -> Result<()> {
    serial(ops, |p| {
        // SAFETY: the iterator visits matching elements of the operands, all of dtype T.
        unsafe {
            let x = p[1].cast::<T>().read();
            let y = p.get(2).map_or(x, |q| q.cast::<T>().read());
            p[0].cast::<T>().write(f(x, y)?);
        }
        Ok(())
    })
}

/// `torch.poisson(rates)`.
pub fn poisson(rates: TensorRef<'_>, generator: Option<Generator>) -> Result<Tensor> {
    sample(Sampler::Poisson, &[rates], generator, |_| Ok(()))
}

/// `torch.binomial(count, prob)`.
pub fn binomial(count: TensorRef<'_>, prob: TensorRef<'_>, generator: Option<Generator>) -> Result<Tensor> {
    for (what, t) in [("count", &count), ("prob", &prob)] {
        let d = dtype_of(t)?;
        if !d.is_floating() {
            return Err(Error::value(format!(
                "binomial only supports floating-point dtypes for {what}, got: {}",
                d.name()
            )));
        }
    }
    sample(Sampler::Binomial, &[count, prob], generator, |_| Ok(()))
}

/// `torch._standard_gamma(alpha)`.
pub fn standard_gamma(alpha: TensorRef<'_>, generator: Option<Generator>) -> Result<Tensor> {
    sample(Sampler::Gamma, &[alpha], generator, |_| Ok(()))
}

/// `torch._sample_dirichlet(alpha)`: double gamma samples (CPU's, draw for draw) normalised
/// along the last dimension, clamped into `[min normal, 1)` of the dtype. The sums are the
/// device's `sum`, whose order is not `SumKernel.cpp`'s, so a double result can differ from
/// CPU's in the last bit.
pub fn sample_dirichlet(alpha: TensorRef<'_>, generator: Option<Generator>) -> Result<Tensor> {
    let dtype = dtype_of(&alpha)?;
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Err(not_implemented("dirichlet", dtype));
    }
    let shape = alpha.sizes().to_vec();
    let gamma = iter::new_tensor(&shape, DType::F64)?;
    let ops = [Operand::of(&gamma.as_ref())?, Operand::of(&alpha)?];
    with_generator(generator, |g| {
        crate::dispatch!(dtype, [F32, F64], |T| {
            serial(&ops, |p| {
                // SAFETY: the iterator visits matching elements: gamma is double, alpha T.
                unsafe {
                    let a = Real::to_f64(p[1].cast::<T>().read());
                    p[0].cast::<f64>().write(f64::MIN_POSITIVE.max(sample_gamma(a, g)));
                }
                Ok(())
            })
        }, else Ok(()))
    })??;
    let mask = reduce::dim_mask(Some(&[-1]), shape.len())?;
    let sum_shape = reduce::reduced_shape(&shape, &mask, true);
    let sum = iter::new_tensor(&sum_shape, DType::F64)?;
    reduce::reduce_into(&reduce::Sum::<false, false>, gamma.as_ref(), DType::F64, &mask, true, &[sum.as_ref()])?;
    let out = iter::new_tensor(&shape, dtype)?;
    let ops = [Operand::of(&out.as_ref())?, Operand::of(&gamma.as_ref())?, Operand::of(&sum.as_ref())?];
    crate::dispatch!(dtype, [F32, F64], |T| {
        // `std::nexttoward(scalar_t(1), 0)`: the largest value below one.
        let below_one = T::from_bits((1.0 as T).to_bits() - 1);
        serial(&ops, |p| {
            // SAFETY: out is T, gamma and its sums double.
            unsafe {
                let v = (p[1].cast::<f64>().read() / p[2].cast::<f64>().read()) as T;
                p[0].cast::<T>().write(below_one.min(T::MIN_POSITIVE.max(v)));
            }
            Ok(())
        })
    }, else Ok(()))?;
    Ok(out)
}

/// Cephes' digamma as `digamma_one<double, double>` (its own cut-offs, not `torch.digamma`'s).
#[allow(clippy::excessive_precision)]
fn digamma_one(mut x: f64) -> f64 {
    const PSI_10: f64 = 2.25175258906672110764;
    if x == 0.0 {
        return f64::INFINITY;
    }
    let mut additional_summand = 0.0;
    let x_is_integer = x == x.floor();
    if x < 0.0 {
        if x_is_integer {
            return f64::INFINITY;
        }
        additional_summand = -std::f64::consts::PI / (std::f64::consts::PI * x).tan();
        x = 1.0 - x;
    }
    let mut result = 0.0;
    while x < 10.0 {
        result -= 1.0 / x;
        x += 1.0;
    }
    if x == 10.0 {
        return result + PSI_10 + additional_summand;
    }
    const A: [f64; 7] = [
        8.33333333333333333333E-2,
        -2.10927960927960927961E-2,
        7.57575757575757575758E-3,
        -4.16666666666666666667E-3,
        3.96825396825396825397E-3,
        -8.33333333333333333333E-3,
        8.33333333333333333333E-2,
    ];
    let mut y = 0.0;
    if x < f64::from(1.0e17f32) {
        let z = 1.0 / (x * x);
        y = z * A.iter().fold(0.0, |acc, &a| acc * z + a);
    }
    result + x.ln() - (0.5 / x) - y + additional_summand
}

/// `standard_gamma_grad_one<scalar_t, double>`: `-(d/dalpha cdf(x; alpha)) / pdf(x; alpha)` by a
/// Taylor series for small x, Rice's saddle point for large alpha, a rational fit otherwise.
#[allow(clippy::excessive_precision)]
fn standard_gamma_grad_one(alpha: f64, x: f64) -> f64 {
    if x < f64::from(0.8f32) {
        let (mut numer, mut denom) = (1.0, alpha);
        let mut series1 = numer / denom;
        let mut series2 = numer / (denom * denom);
        for i in 1..=5 {
            numer *= -x / f64::from(i);
            denom += 1.0;
            series1 += numer / denom;
            series2 += numer / (denom * denom);
        }
        let pow_x_alpha = x.powf(alpha);
        let gamma_pdf = x.powf(alpha - 1.0) * (-x).exp();
        let gamma_cdf = pow_x_alpha * series1;
        let gamma_cdf_alpha = (x.ln() - digamma_one(alpha)) * gamma_cdf - pow_x_alpha * series2;
        let result = -gamma_cdf_alpha / gamma_pdf;
        return if result.is_nan() { 0.0 } else { result };
    }
    if alpha > 8.0 {
        if f64::from(0.9f32) * alpha <= x && x <= f64::from(1.1f32) * alpha {
            let numer_1 = 1.0 + 24.0 * alpha * (1.0 + 12.0 * alpha);
            let numer_2 = 1440.0 * (alpha * alpha) + 6.0 * x * (53.0 - 120.0 * x) - 65.0 * x * x / alpha
                + alpha * (107.0 + 3600.0 * x);
            let denom = 1244160.0 * (alpha * alpha) * (alpha * alpha);
            return numer_1 * numer_2 / denom;
        }
        let denom = (8.0 * alpha).sqrt();
        let term2 = denom / (alpha - x);
        let term3 = (x - alpha - alpha * (x / alpha).ln()).powf(-1.5);
        let term23 = if x < alpha { term2 - term3 } else { term2 + term3 };
        let term1 = (x / alpha).ln() * term23 - (2.0 / alpha).sqrt() * (alpha + x) / ((alpha - x) * (alpha - x));
        let stirling = 1.0 + 1.0 / (12.0 * alpha) * (1.0 + 1.0 / (24.0 * alpha));
        let numer = x * term1;
        return -stirling * numer / denom;
    }
    let u = (x / alpha).ln();
    let v = alpha.ln();
    const COEF_UV: [[f64; 8]; 3] = [
        [0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1.0, 0.32668115, 0.10406089, 0.0014179084],
        [0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113, -0.0035938915, -0.00058392623],
        [
            0.040121004,
            -0.0065914022,
            -0.0026286047,
            -0.0013441777,
            0.017050642,
            -0.0021309326,
            0.00085092367,
            -1.5247877e-07,
        ],
    ];
    let cv: [f64; 8] = std::array::from_fn(|i| COEF_UV[0][i] + u * (COEF_UV[1][i] + u * COEF_UV[2][i]));
    let p = cv[0] + v * (cv[1] + v * (cv[2] + v * cv[3]));
    let q = cv[4] + v * (cv[5] + v * (cv[6] + v * cv[7]));
    (p / q).exp()
}

/// `torch._standard_gamma_grad(alpha, sample)`: the reparameterised gradient, elementwise.
pub fn standard_gamma_grad(alpha: TensorRef<'_>, output: TensorRef<'_>) -> Result<Tensor> {
    let dtype = same_dtype(&[alpha, output])?;
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Err(not_implemented("_standard_gamma_grad_cpu", dtype));
    }
    let out = iter::new_tensor(alpha.sizes(), dtype)?;
    let ops = [Operand::of(&out.as_ref())?, Operand::of(&alpha)?, Operand::of(&output)?];
    crate::dispatch!(dtype, [F32, F64], |T| {
        each::<T>(&ops, |a, x| Ok(standard_gamma_grad_one(Real::to_f64(a), Real::to_f64(x)) as T))
    }, else Ok(()))?;
    Ok(out)
}

/// This family's kernels: group `samplers` of regen.toml's `[implement]`.
impl crate::SamplersKernels for crate::Reference {
    fn poisson(&self, s: TensorRef<'_>, g: Option<regen_runtime::Generator>) -> Result<Tensor> {
        poisson(s, g)
    }
    fn binomial(
        &self,
        count: TensorRef<'_>,
        prob: TensorRef<'_>,
        g: Option<regen_runtime::Generator>,
    ) -> Result<Tensor> {
        binomial(count, prob, g)
    }
    fn _standard_gamma(&self, s: TensorRef<'_>, g: Option<regen_runtime::Generator>) -> Result<Tensor> {
        standard_gamma(s, g)
    }
    fn _standard_gamma_grad(&self, s: TensorRef<'_>, output: TensorRef<'_>) -> Result<Tensor> {
        standard_gamma_grad(s, output)
    }
    fn _sample_dirichlet(&self, s: TensorRef<'_>, g: Option<regen_runtime::Generator>) -> Result<Tensor> {
        sample_dirichlet(s, g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stirling_tail_continues_the_table() {
        // log 10! - 10.5 log 11 + 11 - log sqrt(2 pi), the first value past the table.
        let exact = 15.104412573075516 - 10.5 * 11f64.ln() + 11.0 - (2.0 * std::f64::consts::PI).sqrt().ln();
        assert!((stirling_approx_tail(10.0) - exact).abs() < 1e-9);
    }

    #[test]
    fn digamma_matches_known_values() {
        let euler = 0.5772156649015329;
        assert!((digamma_one(1.0) + euler).abs() < 1e-12);
        assert!((digamma_one(0.5) + euler + 2.0 * std::f64::consts::LN_2).abs() < 1e-12);
        assert_eq!(digamma_one(-2.0), f64::INFINITY);
    }

    #[test]
    fn samplers_reject_bad_rates_and_stop_on_nan() {
        let mut g = CpuGenerator::new(0);
        assert!(sample_poisson(-1.0, &mut g).is_err());
        assert!(sample_poisson(f64::NAN, &mut g).is_err());
        assert!(sample_binomial(f64::NAN, 0.3, &mut g).is_nan());
        assert!(sample_binomial(f64::INFINITY, 0.3, &mut g).is_nan());
        assert!(sample_binomial(5.0, f64::NAN, &mut g).is_nan());
        assert!(sample_gamma(f64::NAN, &mut g).is_nan());
    }

    #[test]
    fn sample_means_are_the_distributions() {
        let mut g = CpuGenerator::new(42);
        let n = 20000;
        let mean = |f: &mut dyn FnMut(&mut CpuGenerator) -> f64, g: &mut CpuGenerator| {
            (0..n).map(|_| f(g)).sum::<f64>() / n as f64
        };
        for lambda in [0.5, 4.0, 30.0] {
            let m = mean(&mut |g| sample_poisson(lambda, g).unwrap() as f64, &mut g);
            assert!((m - lambda).abs() < 0.05 * lambda + 0.02, "poisson({lambda}): {m}");
        }
        for (count, p) in [(8.0, 0.3), (100.0, 0.4), (100.0, 0.9)] {
            let m = mean(&mut |g| sample_binomial(count, p, g), &mut g);
            assert!((m - count * p).abs() < 0.03 * count * p, "binomial({count}, {p}): {m}");
        }
        for alpha in [0.3, 2.0, 9.0] {
            let m = mean(&mut |g| sample_gamma(alpha, g), &mut g);
            assert!((m - alpha).abs() < 0.05 * alpha, "gamma({alpha}): {m}");
        }
    }
}
