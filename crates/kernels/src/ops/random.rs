//! Random ops, drawing from the device generator (`regen_runtime::rng`, PyTorch's CPU generator
//! ported state for state) with CPU's algorithms (`native/cpu/DistributionTemplates.h`,
//! `core/DistributionsHelper.h`, `core/TransformationHelper.h`), so that after the same seed
//! the device draws the numbers CPU draws, in CPU's order.
//!
//! Each op is one `Dist` row: how one element is drawn for each dtype domain. The generator is
//! locked for the whole call and elements are visited serially in the order of ATen's
//! TensorIterator (dimensions sorted by stride and coalesced), as `cpu_serial_kernel` does.
//! Where ATen's compiled CPU code fuses a multiply and an add (`x * (to - from) + from`,
//! `val * std + mean`), the kernels call `mul_add`: that is what makes the bits equal.

use half::{bf16, f16};
use regen_runtime::rng::{CpuGenerator, with_generator};
use regen_runtime::{Error, Generator, Result, Scalar, Tensor, TensorRef};

use crate::engine::dtype::{DType, Element, Num, dtype_of, not_implemented, torch_name};
use crate::engine::iter::{self, Iter, Operand};
use crate::engine::operands::{self, Input};
use crate::ops::binary::{self, ops as bin};

/// Visits every element of `ops[0]` (and the matching elements of the other operands) serially
/// in ATen's TensorIterator order, passing the element pointers.
pub(crate) fn serial(ops: &[Operand], f: impl FnMut(&[*mut u8]) -> Result<()>) -> Result<()> {
    let it = Iter::new(&ops[..1], &ops[1..], &ops[0].sizes);
    if it.numel() == 0 {
        return Ok(());
    }
    let strides: Vec<Vec<isize>> = (0..ops.len()).map(|k| it.strides(k).to_vec()).collect();
    walk(it.shape(), &strides, ops, it.numel(), f)
}

/// The loop nest of [`serial`] and [`row_major`]: `numel` elements over `shape` (fastest
/// dimension first, at least one) with each operand's byte strides.
fn walk(
    shape: &[usize],
    strides: &[Vec<isize>],
    ops: &[Operand],
    numel: usize,
    mut f: impl FnMut(&[*mut u8]) -> Result<()>,
) -> Result<()> {
    let mut index = vec![0usize; shape.len()];
    let mut ptrs: Vec<*mut u8> = ops.iter().map(|o| o.data).collect();
    for _ in 0..numel {
        f(&ptrs)?;
        let mut d = 0;
        loop {
            index[d] += 1;
            for (p, s) in ptrs.iter_mut().zip(strides) {
                *p = p.wrapping_offset(s[d]);
            }
            if index[d] < shape[d] || d + 1 == shape.len() {
                break;
            }
            for (p, s) in ptrs.iter_mut().zip(strides) {
                *p = p.wrapping_offset(-(s[d] * shape[d] as isize));
            }
            index[d] = 0;
            d += 1;
        }
    }
    Ok(())
}

/// Fills `out` with `draw()` per element, in ATen's order.
fn fill<T: Element>(out: &Operand, g: &mut CpuGenerator, mut draw: impl FnMut(&mut CpuGenerator) -> T) -> Result<()> {
    if iter::is_contiguous(&out.sizes, &out.strides) {
        // SAFETY: a contiguous operand holds numel elements of T from `data`.
        let data = unsafe { std::slice::from_raw_parts_mut(out.data.cast::<T>(), out.numel()) };
        data.iter_mut().for_each(|x| *x = draw(g));
        return Ok(());
    }
    serial(std::slice::from_ref(out), |p| {
        // SAFETY: the iterator visits elements of `out`, whose dtype is T.
        unsafe { p[0].cast::<T>().write(draw(g)) };
        Ok(())
    })
}

/// `static_cast<T>(int64_t)`: directly to float types (no detour through double).
pub(crate) trait FromI64: Element {
    fn from_i64(v: i64) -> Self;
}
macro_rules! from_i64_int {
    ($($t:ty),*) => {$(impl FromI64 for $t { fn from_i64(v: i64) -> Self { v as $t } })*};
}
from_i64_int!(u8, i8, i16, i32, i64);
impl FromI64 for bool {
    fn from_i64(v: i64) -> Self {
        v != 0
    }
}
impl FromI64 for f32 {
    fn from_i64(v: i64) -> Self {
        v as f32
    }
}
impl FromI64 for f64 {
    fn from_i64(v: i64) -> Self {
        v as f64
    }
}
impl FromI64 for f16 {
    fn from_i64(v: i64) -> Self {
        f16::from_f32(v as f32)
    }
}
impl FromI64 for bf16 {
    fn from_i64(v: i64) -> Self {
        bf16::from_f32(v as f32)
    }
}

/// `static_cast<T>(double)` for the results of the double distributions (ints truncate).
fn from_f64<T: Element>(v: f64) -> T {
    T::from_num(Num::Float(v))
}

/// Formats a double as C++'s `operator<<` does (`%g`, six significant digits: `-1`, `0.5`,
/// `1e-07`), for messages that show arguments.
fn cpp_double(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "nan"
        } else if v > 0.0 {
            "inf"
        } else {
            "-inf"
        }
        .into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = format!("{v:.5e}");
    let (m, e) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = e.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let m = m.trim_end_matches('0').trim_end_matches('.');
        return format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    let s = format!("{:.*}", (5 - exp) as usize, v);
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_owned() } else { s }
}

// ---------------------------------------------------------------------------------------------
// uniform_, normal_ and the distributions of one double uniform.

/// `uniform_(from, to)`: `uniform_real_distribution<opmath_t>`, clamped to `[from, to)` after the
/// cast (a float rounding up to `to` becomes `from`, as CPU's kernel does).
pub fn uniform_(t: TensorRef<'_>, from: f64, to: f64, generator: Option<Generator>) -> Result<()> {
    let dtype = dtype_of(&t)?;
    if dtype.is_complex() {
        if t.numel() == 0 {
            return Ok(());
        }
        let real = crate::ops::copy::view_as_real(t)?;
        return uniform_(real.as_ref(), from, to, generator);
    }
    let (lowest, max) = match dtype {
        DType::F32 => (f64::from(f32::MIN), f64::from(f32::MAX)),
        DType::F64 => (f64::MIN, f64::MAX),
        DType::F16 => (f64::from(f16::MIN), f64::from(f16::MAX)),
        DType::BF16 => (f64::from(bf16::MIN), f64::from(bf16::MAX)),
        other => return Err(not_implemented("check_uniform_bounds", other)),
    };
    for (v, name) in [(from, "from"), (to, "to")] {
        if !(v >= lowest && v <= max) {
            return Err(Error::runtime(format!("{name} is out of bounds for {}", torch_name(dtype))));
        }
    }
    if from > to {
        return Err(Error::runtime(format!(
            "uniform_ expects to return a [from, to) range, but found from={} > to={}",
            cpp_double(from),
            cpp_double(to)
        )));
    }
    if to - from > max {
        return Err(Error::runtime(format!(
            "uniform_ expects to-from <= std::numeric_limits<{}>::max(), but found to={} and from={} which result in to-from to exceed the limit",
            dtype.name(),
            cpp_double(to),
            cpp_double(from)
        )));
    }
    if t.numel() == 0 {
        return Ok(());
    }
    let out = Operand::of(&t)?;
    with_generator(generator, |g| match dtype {
        DType::F64 => fill(&out, g, |g| {
            let v = g.uniform_f64().mul_add(to - from, from);
            if v == to { from } else { v }
        }),
        _ => {
            let (f, tt) = (from as f32, to as f32);
            let range = tt - f;
            crate::dispatch!(dtype, [F32, F16, BF16], |T| {
                let (to_t, from_t): (T, T) = (from_f64(to), from_f64(from));
                fill(&out, g, |g| {
                    let v: T = from_f64(f64::from(g.uniform_f32().mul_add(range, f)));
                    if v == to_t { from_t } else { v }
                })
            }, else Ok(()))
        }
    })?
}

/// ATen's `NormalFill16` on 16 opmath values: Box–Muller on 8 pairs (`1 - u` of the first half
/// feeds the log), scaled by a fused multiply-add.
fn normal_fill_16_f64(data: &mut [f64], mean: f64, std: f64) {
    for j in 0..8 {
        let u1 = 1.0 - data[j];
        let u2 = data[j + 8];
        let radius = (-2.0 * u1.ln()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u2;
        data[j] = (radius * theta.cos()).mul_add(std, mean);
        data[j + 8] = (radius * theta.sin()).mul_add(std, mean);
    }
}

/// ATen's float `NormalFill16`: CPU's kernel is the AVX2 one (`normal_stub` is not built for
/// AVX-512), whose log and sincos are avx_mathfun's cephes polynomials ([`log_ps`],
/// [`sincos_ps`]), with the multiply-adds GCC fuses. Inlined into [`box_muller_f32`] so that
/// those `mul_add`s are FMA instructions rather than calls to libm's `fmaf`.
#[inline(always)]
fn normal_fill_16_f32(data: &mut [f32], mean: f32, std: f32) {
    for j in 0..8 {
        let u1 = 1.0 - data[j];
        let u2 = data[j + 8];
        let radius = (-2.0 * log_ps(u1)).sqrt();
        let theta = (2.0 * std::f64::consts::PI) as f32 * u2;
        let (s, c) = sincos_ps(theta);
        data[j] = (radius * c).mul_add(std, mean);
        data[j + 8] = (radius * s).mul_add(std, mean);
    }
}

/// An avx_mathfun constant: its C literal (a double) rounded to float, as `_PS256_CONST` stores it.
#[allow(clippy::excessive_precision)]
const fn c(v: f64) -> f32 {
    v as f32
}

/// avx_mathfun's `log256_ps` on one lane (arguments in (0, 1] here). The constants are its
/// C literals, digit for digit.
#[allow(clippy::excessive_precision, clippy::approx_constant)]
#[inline(always)]
fn log_ps(x: f32) -> f32 {
    let invalid = x <= 0.0;
    let x = x.max(f32::from_bits(0x0080_0000));
    let exponent = (x.to_bits() >> 23) as i32 - 0x7f;
    let mut x = f32::from_bits((x.to_bits() & !0x7f80_0000) | 0.5f32.to_bits());
    let mut e = exponent as f32 + 1.0;
    let tmp = if x < c(0.707106781186547524) {
        e -= 1.0;
        x
    } else {
        0.0
    };
    x = (x - 1.0) + tmp;
    let z = x * x;
    let mut y = c(7.0376836292E-2);
    for c in [
        c(-1.1514610310E-1),
        c(1.1676998740E-1),
        c(-1.2420140846E-1),
        c(1.4249322787E-1),
        c(-1.6668057665E-1),
        c(2.0000714765E-1),
        c(-2.4999993993E-1),
        c(3.3333331174E-1),
    ] {
        y = y.mul_add(x, c);
    }
    y *= x;
    y = y.mul_add(z, e * c(-2.12194440e-4));
    y = (-z).mul_add(0.5, y);
    x += y;
    x = e.mul_add(0.693_359_375, x);
    if invalid { f32::NAN } else { x }
}

/// avx_mathfun's `sincos256_ps` on one lane: `(sin x, cos x)`.
#[allow(clippy::excessive_precision)]
#[inline(always)]
fn sincos_ps(x: f32) -> (f32, f32) {
    let mut sign_sin = x.to_bits() & 0x8000_0000;
    let mut x = x.abs();
    let j = ((x * c(1.27323954473516)) as i32).wrapping_add(1) & !1;
    let y = j as f32;
    let swap = ((j & 4) as u32) << 29;
    let poly = (j & 2) == 0;
    x = y.mul_add(-0.785_156_25, x);
    x = y.mul_add(c(-2.4187564849853515625e-4), x);
    x = y.mul_add(c(-3.77489497744594108e-8), x);
    let sign_cos = ((!(j.wrapping_sub(2)) & 4) as u32) << 29;
    sign_sin ^= swap;
    let z = x * x;
    let mut co = c(2.443315711809948E-005).mul_add(z, c(-1.388731625493765E-003)).mul_add(z, c(4.166664568298827E-002));
    co *= z;
    co = co.mul_add(z, -(z * 0.5)) + 1.0;
    let mut s = c(-1.9515295891E-4).mul_add(z, c(8.3321608736E-3)).mul_add(z, c(-1.6666654611E-1));
    s = (s * z).mul_add(x, x);
    let (s, co) = if poly { (s, co) } else { (co, s) };
    (f32::from_bits(s.to_bits() ^ sign_sin), f32::from_bits(co.to_bits() ^ sign_cos))
}

/// `normal_fill` for float and double: uniforms drawn in place, Box–Muller 16 at a time over a
/// contiguous tensor of at least 16 elements, the last (partial) block redrawn whole.
macro_rules! normal_fill_in_place {
    ($name:ident, $t:ty, $uniform:ident, $fill16:ident) => {
        fn $name(d: &mut [$t], g: &mut CpuGenerator, mean: $t, std: $t) {
            let n = d.len();
            d.iter_mut().for_each(|x| *x = g.$uniform());
            for i in (0..n - 15).step_by(16) {
                $fill16(&mut d[i..i + 16], mean, std);
            }
            if !n.is_multiple_of(16) {
                let tail = &mut d[n - 16..];
                tail.iter_mut().for_each(|x| *x = g.$uniform());
                $fill16(tail, mean, std);
            }
        }
    };
}
normal_fill_in_place!(normal_fill_f64, f64, uniform_f64, normal_fill_16_f64);
normal_fill_in_place!(normal_fill_f32, f32, uniform_f32, box_muller_f32);

/// [`normal_fill_16_f32`] compiled with FMA and AVX2 where the machine has them: the same
/// operations (so the same bits), but fused multiply-adds inline and the eight lanes vectorised,
/// where the baseline target's `fmaf` calls had made `normal_` on float 7x slower than CPU's.
fn box_muller_f32(data: &mut [f32], mean: f32, std: f32) {
    #[cfg(target_arch = "x86_64")]
    if crate::engine::has_avx2() {
        #[target_feature(enable = "avx2,fma")]
        unsafe fn fused(data: &mut [f32], mean: f32, std: f32) {
            normal_fill_16_f32(data, mean, std);
        }
        // SAFETY: the features were detected just above.
        return unsafe { fused(data, mean, std) };
    }
    normal_fill_16_f32(data, mean, std);
}

/// `normal_fill` for bfloat16 and half: each block of 16 float uniforms drawn into a buffer,
/// transformed, then rounded to the dtype.
fn normal_fill_reduced<T: Element>(data: &mut [T], g: &mut CpuGenerator, mean: f32, std: f32) {
    let n = data.len();
    let block = |g: &mut CpuGenerator, out: &mut [T]| {
        let mut buf = [0f32; 16];
        buf.iter_mut().for_each(|x| *x = g.uniform_f32());
        box_muller_f32(&mut buf, mean, std);
        for (o, &v) in out.iter_mut().zip(&buf) {
            *o = from_f64(f64::from(v));
        }
    };
    for i in (0..n - 15).step_by(16) {
        block(g, &mut data[i..i + 16]);
    }
    if !n.is_multiple_of(16) {
        block(g, &mut data[n - 16..]);
    }
}

/// `n` elements of `T` at `data`.
///
/// # Safety
/// `data` points to `n` contiguous elements of `T`, unaliased for the lifetime.
unsafe fn slice<'a, T>(data: *mut u8, n: usize) -> &'a mut [T] {
    // SAFETY: per the contract.
    unsafe { std::slice::from_raw_parts_mut(data.cast::<T>(), n) }
}

/// `normal_(mean, std)`.
pub fn normal_(t: TensorRef<'_>, mean: f64, std: f64, generator: Option<Generator>) -> Result<()> {
    if std.is_nan() || std < 0.0 {
        return Err(Error::runtime(format!("normal expects std >= 0.0, but found std {}", cpp_double(std))));
    }
    if t.numel() == 0 {
        return Ok(());
    }
    let dtype = dtype_of(&t)?;
    if dtype.is_complex() {
        let real = crate::ops::copy::view_as_real(t)?;
        return normal_(real.as_ref(), mean, std / std::f64::consts::SQRT_2, generator);
    }
    if !dtype.is_floating() {
        return Err(not_implemented("normal_kernel_cpu", dtype));
    }
    let out = Operand::of(&t)?;
    let n = out.numel();
    let contiguous = iter::is_contiguous(&out.sizes, &out.strides);
    with_generator(generator, |g| {
        if n >= 16 && contiguous {
            // SAFETY: a contiguous output of n elements of its dtype.
            unsafe {
                match dtype {
                    DType::F64 => normal_fill_f64(slice(out.data, n), g, mean, std),
                    DType::F32 => normal_fill_f32(slice(out.data, n), g, mean as f32, std as f32),
                    DType::F16 => normal_fill_reduced::<f16>(slice(out.data, n), g, mean as f32, std as f32),
                    _ => normal_fill_reduced::<bf16>(slice(out.data, n), g, mean as f32, std as f32),
                }
            }
            return Ok(());
        }
        crate::dispatch!(dtype, [F32, F64, F16, BF16], |T| {
            fill(&out, g, |g| from_f64::<T>(g.normal_f64(mean, std)))
        }, else Ok(()))
    })?
}

/// The ops drawing one double uniform per element and transforming it (`exponential_`,
/// `geometric_`, `cauchy_`) or one normal (`log_normal_`).
#[derive(Clone, Copy)]
enum Dist {
    Exponential(f64),
    Geometric(f64),
    Cauchy(f64, f64),
    LogNormal(f64, f64),
}

impl Dist {
    #[inline]
    fn draw(self, g: &mut CpuGenerator) -> f64 {
        match self {
            Dist::Exponential(lambda) => -1.0 / lambda * (-g.uniform_f64()).ln_1p(),
            Dist::Geometric(p) => (g.uniform_f64().ln() / (-p).ln_1p()).ceil(),
            Dist::Cauchy(median, sigma) => {
                sigma.mul_add((std::f64::consts::PI * (g.uniform_f64() - 0.5)).tan(), median)
            }
            Dist::LogNormal(mean, std) => g.normal_f64(mean, std).exp(),
        }
    }
}

fn run_dist(t: TensorRef<'_>, dist: Dist, generator: Option<Generator>, kernel: &str, ints: bool) -> Result<()> {
    if t.numel() == 0 {
        return Ok(());
    }
    let dtype = dtype_of(&t)?;
    if dtype.is_complex() || dtype == DType::Bool || (!ints && !dtype.is_floating()) {
        return Err(not_implemented(kernel, dtype));
    }
    let out = Operand::of(&t)?;
    with_generator(generator, |g| {
        crate::dispatch!(dtype, [U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| {
            fill(&out, g, |g| from_f64::<T>(dist.draw(g)))
        }, else Ok(()))
    })?
}

fn float_only(t: &TensorRef<'_>, what: &str) -> Result<()> {
    let dtype = dtype_of(t)?;
    if dtype.is_floating() {
        return Ok(());
    }
    Err(Error::runtime(format!(
        "{what} distribution is a continuous probability distribution. dtype must be a floating point but you specified {}",
        dtype.name()
    )))
}

pub fn exponential_(t: TensorRef<'_>, lambda: f64, generator: Option<Generator>) -> Result<()> {
    if lambda.is_nan() || lambda <= 0.0 {
        return Err(Error::runtime(format!(
            "exponential_ expects lambda > 0.0, but found lambda={}",
            cpp_double(lambda)
        )));
    }
    if t.numel() == 0 {
        return Ok(());
    }
    float_only(&t, "Exponential")?;
    run_dist(t, Dist::Exponential(lambda), generator, "exponential_cpu", false)
}

pub fn geometric_(t: TensorRef<'_>, p: f64, generator: Option<Generator>) -> Result<()> {
    if !(0.0 < p && p < 1.0) {
        return Err(Error::runtime(format!("geometric_ expects p to be in (0, 1), but got p={}", cpp_double(p))));
    }
    run_dist(t, Dist::Geometric(p), generator, "geometric_cpu", true)
}

pub fn log_normal_(t: TensorRef<'_>, mean: f64, std: f64, generator: Option<Generator>) -> Result<()> {
    if std.is_nan() || std <= 0.0 {
        return Err(Error::runtime(format!("log_normal_ expects std > 0.0, but found std={}", cpp_double(std))));
    }
    run_dist(t, Dist::LogNormal(mean, std), generator, "log_normal_cpu", false)
}

pub fn cauchy_(t: TensorRef<'_>, median: f64, sigma: f64, generator: Option<Generator>) -> Result<()> {
    if sigma.is_nan() || sigma <= 0.0 {
        return Err(Error::runtime(format!("cauchy_ expects sigma > 0.0, but found sigma={}", cpp_double(sigma))));
    }
    float_only(&t, "Cauchy")?;
    run_dist(t, Dist::Cauchy(median, sigma), generator, "cauchy_cpu", false)
}

// ---------------------------------------------------------------------------------------------
// random_

/// `std::numeric_limits<T>::digits` of a float dtype.
fn digits(dtype: DType) -> u32 {
    match dtype {
        DType::F16 => 11,
        DType::BF16 => 8,
        DType::F32 => 24,
        _ => 53,
    }
}

/// `static_cast<int64_t>(static_cast<scalar_t>(v))` for a float dtype.
fn round_trip(dtype: DType, v: i64) -> i64 {
    match dtype {
        DType::F16 => f16::from_f32(v as f32).to_f32() as i64,
        DType::BF16 => bf16::from_f32(v as f32).to_f32() as i64,
        DType::F32 => (v as f32) as i64,
        _ => (v as f64) as i64,
    }
}

/// ATen's `update_from`: the closest `from` whose cast stays inside `[from, to)`.
fn update_from(dtype: DType, from: i64) -> i64 {
    let from_plus_1 = round_trip(dtype, from.wrapping_add(1));
    if from_plus_1 < from {
        let n = 63 - from.wrapping_add(1).unsigned_abs().leading_zeros().min(63) as i64;
        let shift = n - i64::from(digits(dtype)) + 1;
        return from_plus_1.wrapping_add(1i64.checked_shl(shift.clamp(0, 63) as u32).unwrap_or(0));
    }
    from
}

/// ATen's `update_to`.
fn update_to(dtype: DType, to: i64) -> i64 {
    let to_minus_1 = round_trip(dtype, to.wrapping_sub(1));
    if to_minus_1 >= to {
        let n = 63 - to.wrapping_sub(1).unsigned_abs().leading_zeros().min(63) as i64;
        let shift = n - i64::from(digits(dtype)) + 1;
        return to_minus_1.wrapping_sub(1i64.checked_shl(shift.clamp(0, 63) as u32).unwrap_or(0));
    }
    to
}

/// ATen's `check_from_to_in_range`.
fn check_from_to_in_range(from: i64, to_inc: i64, dtype: DType) -> Result<()> {
    let (min, max): (f64, f64) = match dtype {
        DType::F16 => (f64::from(f16::MIN), f64::from(f16::MAX)),
        DType::BF16 => (f64::from(bf16::MIN), f64::from(bf16::MAX)),
        DType::F32 => (f64::from(f32::MIN), f64::from(f32::MAX)),
        DType::F64 => (f64::MIN, f64::MAX),
        DType::Bool => (0.0, 1.0),
        DType::U8 => (0.0, 255.0),
        DType::I8 => (-128.0, 127.0),
        DType::I16 => (-32768.0, 32767.0),
        DType::I32 => (f64::from(i32::MIN), f64::from(i32::MAX)),
        DType::I64 => (i64::MIN as f64, i64::MAX as f64),
        other => return Err(not_implemented("check_random_bounds", other)),
    };
    let integral = !dtype.is_floating();
    for (v, name) in [(from, "from"), (to_inc, "to - 1")] {
        let inside = if integral { v >= min as i64 && v <= max as i64 } else { v as f64 >= min && v as f64 <= max };
        if !inside {
            return Err(Error::runtime(format!("{name} is out of bounds for {}", torch_name(dtype))));
        }
    }
    Ok(())
}

/// `uniform_int_from_to_distribution`: 32 random bits for ranges below 2^28, 64 otherwise.
fn random_from_to(out: &Operand, g: &mut CpuGenerator, range: u64, base: i64) -> Result<()> {
    crate::dispatch!(out.dtype, [Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| {
        fill(out, g, |g| {
            let v = if range >= 1 << 28 { g.random64() } else { u64::from(g.random()) };
            T::from_i64((v % range).wrapping_add(base as u64) as i64)
        })
    }, else Err(not_implemented("random_from_to_kernel_cpu", out.dtype)))
}

/// `random_()` with neither bound: `uniform_int_distribution`, each dtype's own modulus.
fn random_default(out: &Operand, g: &mut CpuGenerator) -> Result<()> {
    fn mod32<T: FromI64>(out: &Operand, g: &mut CpuGenerator, m: u64) -> Result<()> {
        fill(out, g, |g| T::from_i64((u64::from(g.random()) % m) as i64))
    }
    match out.dtype {
        DType::Bool => fill(out, g, |g| g.random() & 1 != 0),
        DType::U8 => mod32::<u8>(out, g, 1 << 8),
        DType::I8 => mod32::<i8>(out, g, 1 << 7),
        DType::I16 => mod32::<i16>(out, g, 1 << 15),
        DType::I32 => mod32::<i32>(out, g, 1 << 31),
        DType::I64 => fill(out, g, |g| (g.random64() % (1 << 63)) as i64),
        DType::F16 => mod32::<f16>(out, g, (1 << 11) + 1),
        DType::BF16 => mod32::<bf16>(out, g, (1 << 8) + 1),
        DType::F32 => mod32::<f32>(out, g, (1 << 24) + 1),
        DType::F64 => fill(out, g, |g| (g.random64() % ((1 << 53) + 1)) as f64),
        other => Err(not_implemented("random_kernel_cpu", other)),
    }
}

/// `random_()`.
pub fn random_(t: TensorRef<'_>, generator: Option<Generator>) -> Result<()> {
    if t.numel() == 0 {
        return Ok(());
    }
    let out = Operand::of(&t)?;
    with_generator(generator, |g| random_default(&out, g))?
}

/// `random_(from, to)` (`to` None: up to the dtype's maximum, inclusive).
pub fn random_from(t: TensorRef<'_>, mut from: i64, to: Option<i64>, generator: Option<Generator>) -> Result<()> {
    let dtype = dtype_of(&t)?;
    let floating = dtype.is_floating();
    if dtype.is_complex() {
        return Err(not_implemented("random_from_to_range_calc", dtype));
    }
    let out = Operand::of(&t)?;
    if let Some(mut to) = to {
        if from >= to {
            return Err(Error::runtime(format!(
                "random_ expects 'from' to be less than 'to', but got from={from} >= to={to}"
            )));
        }
        if floating {
            from = update_from(dtype, from);
            to = update_to(dtype, to);
            if from >= to {
                return Err(Error::runtime(format!(
                    "random_ expects 'from' casted to dtype to be less than 'to' casted to dtype, but got from={from} >= to={to}"
                )));
            }
        }
        check_from_to_in_range(from, to.wrapping_sub(1), dtype)?;
        if t.numel() == 0 {
            return Ok(());
        }
        let range = (to as u64).wrapping_sub(from as u64);
        return with_generator(generator, |g| random_from_to(&out, g, range, from))?;
    }
    if from != i64::MIN {
        let to_inc = match dtype {
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
                let max = 1i64 << digits(dtype);
                from = update_from(dtype, from);
                if from >= max {
                    return Err(Error::runtime(format!(
                        "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted to dtype, but got from={from} > to_inc={max}"
                    )));
                }
                max
            }
            DType::Bool => 1,
            DType::U8 => 255,
            DType::I8 => 127,
            DType::I16 => 32767,
            DType::I32 => i64::from(i32::MAX),
            _ => i64::MAX,
        };
        check_from_to_in_range(from, to_inc, dtype)?;
        if t.numel() == 0 {
            return Ok(());
        }
        let range = (to_inc as u64).wrapping_sub(from as u64).wrapping_add(1);
        return with_generator(generator, |g| random_from_to(&out, g, range, from))?;
    }
    if t.numel() == 0 {
        return Ok(());
    }
    // The whole 64-bit range.
    with_generator(generator, |g| match dtype {
        DType::I64 => fill(&out, g, |g| g.random64() as i64),
        DType::F64 => fill(&out, g, |g| g.random64() as i64 as f64),
        DType::F32 => fill(&out, g, |g| g.random64() as i64 as f32),
        DType::BF16 => fill(&out, g, |g| bf16::from_f32(g.random64() as i64 as f32)),
        _ => Err(Error::runtime("random_full_64_bits_range_kernel_cpu handles only int64, double, float and bfloat16")),
    })?
}

// ---------------------------------------------------------------------------------------------
// bernoulli_

const BERNOULLI_P_CHECK: &str = "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)";

/// `bernoulli_(p)` with a probability per element (`p` broadcast to `self`): a double uniform
/// for a double `p`, a float uniform otherwise.
pub fn bernoulli_tensor_(t: TensorRef<'_>, p: TensorRef<'_>, generator: Option<Generator>) -> Result<()> {
    if t.numel() == 0 {
        return Ok(());
    }
    let dtype = dtype_of(&t)?;
    if dtype.is_complex() {
        return Err(not_implemented("bernoulli_tensor_cpu_self_", dtype));
    }
    let pd = dtype_of(&p)?;
    if !pd.is_floating() {
        return Err(not_implemented("bernoulli_tensor_cpu_p_", pd));
    }
    // expand_inplace(self, p): p broadcasts to self's shape.
    let (ts, ps) = (t.sizes(), p.sizes());
    let mut p_strides = vec![0i64; ts.len()];
    if ps.len() > ts.len() {
        return Err(expand_error(ts, ps, ps.len() - 1, 0));
    }
    for k in 0..ps.len() {
        let d = ts.len() - ps.len() + k;
        if ps[k] == ts[d] {
            p_strides[d] = p.strides()[k];
        } else if ps[k] != 1 {
            return Err(expand_error(ts, ps, d, k));
        }
    }
    let out = Operand::of(&t)?;
    let pop = Operand {
        data: p.data_ptr().cast(),
        dtype: pd,
        sizes: ts.iter().copied().collect(),
        strides: p_strides.into_iter().collect(),
    };
    with_generator(generator, |g| {
        crate::dispatch!(dtype, [Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| {
            serial(&[out.clone(), pop.clone()], |ptrs| {
                // SAFETY: the iterator visits matching elements of `self` (T) and `p` (pd).
                let hit = unsafe {
                    match pd {
                        DType::F64 => {
                            let pv = ptrs[1].cast::<f64>().read();
                            if !(0.0..=1.0).contains(&pv) {
                                return Err(Error::runtime(BERNOULLI_P_CHECK));
                            }
                            g.uniform_f64() < pv
                        }
                        _ => {
                            let pv = match pd {
                                DType::F16 => ptrs[1].cast::<f16>().read().to_f32(),
                                DType::BF16 => ptrs[1].cast::<bf16>().read().to_f32(),
                                _ => ptrs[1].cast::<f32>().read(),
                            };
                            if !(0.0..=1.0).contains(&pv) {
                                return Err(Error::runtime(BERNOULLI_P_CHECK));
                            }
                            g.uniform_f32() < pv
                        }
                    }
                };
                // SAFETY: as above.
                unsafe { ptrs[0].cast::<T>().write(T::from_i64(i64::from(hit))) };
                Ok(())
            })
        }, else Ok(()))
    })?
}

fn expand_error(target: &[i64], sizes: &[i64], d: usize, k: usize) -> Error {
    Error::runtime(format!(
        "The expanded size of the tensor ({}) must match the existing size ({}) at non-singleton dimension {d}.  Target sizes: {}.  Tensor sizes: {}",
        target.get(d).copied().unwrap_or(0),
        sizes[k],
        iter::fmt_sizes(target),
        iter::fmt_sizes(sizes)
    ))
}

/// `bernoulli_(p)` with one probability: a double uniform per element. (CPU builds with MKL
/// take MKL's bernoulli on Intel processors instead, whose stream cannot be reproduced; this is
/// CPU's own path, the one it takes elsewhere.)
pub fn bernoulli_float_(t: TensorRef<'_>, p: f64, generator: Option<Generator>) -> Result<()> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::runtime(format!("bernoulli_ expects p to be in [0, 1], but got p={}", cpp_double(p))));
    }
    if t.numel() == 0 {
        return Ok(());
    }
    let dtype = dtype_of(&t)?;
    if dtype.is_complex() {
        return Err(not_implemented("bernoulli_scalar_cpu_", dtype));
    }
    let out = Operand::of(&t)?;
    with_generator(generator, |g| {
        crate::dispatch!(dtype, [Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| {
            fill(&out, g, |g| T::from_i64(i64::from(g.uniform_f64() < p)))
        }, else Ok(()))
    })?
}

/// `bernoulli(p, out=out)`: `out` resized to `p`'s shape, then `bernoulli_(p)`.
pub fn bernoulli_out(p: TensorRef<'_>, generator: Option<Generator>, out: TensorRef<'_>) -> Result<()> {
    regen_runtime::bootstrap::with_size(&out, p.sizes(), |o| bernoulli_tensor_(*o, p, generator))
}

// ---------------------------------------------------------------------------------------------
// randperm, dropout, normal with tensor parameters.

/// `randperm(n, out=out)`: CPU's swap loop (`random() % (n - i)`), or for n of the order of
/// 2^32 / 20 and above its inside-out shuffle on 64-bit draws.
pub fn randperm_out(n: i64, generator: Option<Generator>, out: TensorRef<'_>) -> Result<()> {
    if n < 0 {
        return Err(Error::runtime(format!("n must be non-negative, got{n}")));
    }
    let dtype = dtype_of(&out)?;
    // check_supported_max_int_with_precision (bfloat16 has no check there).
    let limit = match dtype {
        DType::F16 => Some(((1 << 11) + 1, "2049")),
        DType::F32 => Some(((1 << 24) + 1, "2^24+1")),
        DType::F64 => Some(((1 << 53) + 1, "2^53+1")),
        _ => None,
    };
    if let Some((max, shown)) = limit
        && n > max
    {
        return Err(Error::runtime(format!("n cannot be greater than {shown} for {} type.", dtype.name())));
    }
    if dtype.is_complex() || dtype == DType::Bool {
        return Err(not_implemented("randperm", dtype));
    }
    regen_runtime::bootstrap::with_size(&out, &[n], |o| {
        let stride = o.strides().first().copied().unwrap_or(1) as isize;
        let base = o.data_ptr().cast::<u8>();
        with_generator(generator, |g| {
            crate::dispatch!(dtype, [U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| {
                let at = |i: i64| base.wrapping_offset(i as isize * stride * std::mem::size_of::<T>() as isize).cast::<T>();
                // SAFETY: indices stay in 0..n of the resized output.
                unsafe {
                    if n < i64::from(u32::MAX / 20) {
                        for i in 0..n {
                            at(i).write(T::from_i64(i));
                        }
                        for i in 0..n.saturating_sub(1) {
                            let z = i64::from(g.random()) % (n - i);
                            let sav = at(i).read();
                            at(i).write(at(z + i).read());
                            at(z + i).write(sav);
                        }
                    } else {
                        for i in 0..n {
                            let z = (g.random64() % (i as u64 + 1)) as i64;
                            at(i).write(at(z).read());
                            at(z).write(T::from_i64(i));
                        }
                    }
                }
            }, else ())
        })
    })
}

/// `native_dropout(input, p, train)`: a Bool mask of `bernoulli_(1 - p)` and
/// `input * mask * (1 / (1 - p))` (0 when p is 1), as CPU computes them; outside training the
/// input's copy and an all-true mask.
pub fn native_dropout(input: TensorRef<'_>, p: f64, train: Option<bool>) -> Result<(Tensor, Tensor)> {
    let dtype = dtype_of(&input)?;
    if input.numel() == 0 {
        return Ok((input.retain()?, operands::new_output(dtype, &[Input::Tensor(input)])?));
    }
    let mask = operands::new_output(DType::Bool, &[Input::Tensor(input)])?;
    if train.unwrap_or(true) {
        let p1m = 1.0 - p;
        let scale = if p1m == 0.0 { 0.0 } else { 1.0 / p1m };
        bernoulli_float_(mask.as_ref(), p1m, None)?;
        let out = binary::functional::<bin::Mul>(Input::Tensor(input), Input::Tensor(mask.as_ref()))?;
        scale_(out.as_ref(), scale)?;
        return Ok((out, mask));
    }
    regen_runtime::bootstrap::fill_(mask.as_ref(), Scalar::Bool(true))?;
    let out = operands::new_output(dtype, &[Input::Tensor(input)])?;
    crate::ops::copy::copy_(out.as_ref(), input)?;
    Ok((out, mask))
}

/// `native_dropout_backward`: `grad * mask * scale`.
pub fn native_dropout_backward(grad: TensorRef<'_>, mask: TensorRef<'_>, scale: f64) -> Result<Tensor> {
    let out = binary::functional::<bin::Mul>(Input::Tensor(grad), Input::Tensor(mask))?;
    let dtype = dtype_of(&out.as_ref())?;
    if !dtype.is_floating() && !dtype.is_complex() {
        // CPU's `grad * mask * scale`: an integer or bool product times a Python float becomes
        // the default float dtype.
        return binary::functional::<bin::Mul>(Input::Tensor(out.as_ref()), Input::Scalar(Scalar::Float(scale)));
    }
    scale_(out.as_ref(), scale)?;
    Ok(out)
}

/// `t.mul_(scale)` with a Python float, as CPU computes it: for bfloat16 and float16 in float
/// with the scale rounded to float, not to the dtype (the binary table rounds it to the dtype).
fn scale_(t: TensorRef<'_>, scale: f64) -> Result<()> {
    let op = Operand::of(&t)?;
    let s = scale as f32;
    match op.dtype {
        DType::F16 => fill_map::<f16>(&op, |x| f16::from_f32(x.to_f32() * s)),
        DType::BF16 => fill_map::<bf16>(&op, |x| bf16::from_f32(x.to_f32() * s)),
        _ => binary::run::<bin::Mul>(Input::Tensor(t), Input::Scalar(Scalar::Float(scale)), None, t),
    }
}

/// Replaces every element `x` of `out` by `f(x)`.
fn fill_map<T: Element>(out: &Operand, f: impl Fn(T) -> T) -> Result<()> {
    serial(std::slice::from_ref(out), |p| {
        // SAFETY: elements of `out` (T).
        unsafe { p[0].cast::<T>().write(f(p[0].cast::<T>().read())) };
        Ok(())
    })
}

/// `multinomial(p, n_sample, replacement, out=out)`, as CPU: without replacement (or for one
/// sample) the exponential trick (`argmax`/`topk` of `p / q`, q ~ Exp(1) drawn by `exponential_`), with
/// replacement a binary search of each double uniform in the normalised cumulative row.
pub fn multinomial_out(
    p: TensorRef<'_>,
    n_sample: i64,
    replacement: bool,
    generator: Option<Generator>,
    out: TensorRef<'_>,
) -> Result<()> {
    if p.dim() == 0 || p.dim() > 2 {
        return Err(Error::runtime("prob_dist must be 1 or 2 dim"));
    }
    let dtype = dtype_of(&p)?;
    if !dtype.is_floating() {
        return Err(Error::runtime(format!(
            "multinomial only supports floating-point dtypes for input, got: {}",
            dtype.name()
        )));
    }
    let out_dtype = dtype_of(&out)?;
    if out_dtype != DType::I64 {
        return Err(Error::runtime(format!("multinomial expects Long tensor out, got: {}", out_dtype.name())));
    }
    if n_sample <= 0 {
        return Err(Error::runtime("cannot sample n_sample <= 0 samples"));
    }
    let n_categories = p.sizes()[p.dim() - 1];
    if !replacement && n_sample > n_categories {
        return Err(Error::runtime("cannot sample n_sample > prob_dist.size(-1) samples without replacement"));
    }
    if n_categories > 1 << 24 {
        return Err(Error::runtime("number of categories cannot exceed 2^24"));
    }
    let n_dist = if p.dim() == 2 { p.sizes()[0] } else { 1 };
    let shape: Vec<i64> = if p.dim() == 2 { vec![n_dist, n_sample] } else { vec![n_sample] };
    regen_runtime::bootstrap::with_size(&out, &shape, |o| {
        let o = *o;
        if o.numel() == 0 {
            return Ok(());
        }
        let row = |i: i64, j: i64| -> f64 {
            let offset = if p.dim() == 2 { i * p.strides()[0] } else { 0 } + j * p.strides()[p.dim() - 1];
            let ptr = p.data_ptr().cast::<u8>().wrapping_offset(offset as isize * dtype.size() as isize);
            // SAFETY: (i, j) is inside p.
            unsafe {
                match dtype {
                    DType::F64 => ptr.cast::<f64>().read(),
                    DType::F32 => f64::from(ptr.cast::<f32>().read()),
                    DType::F16 => ptr.cast::<f16>().read().to_f64(),
                    _ => ptr.cast::<bf16>().read().to_f64(),
                }
            }
        };
        // One sample, with or without replacement, takes the exponential trick, as on CPU.
        if !replacement || n_sample == 1 {
            // CPU's checks, in its order: max < inf and min >= 0 over the whole tensor, then a
            // row summing to 0 (all its entries 0, as none is negative).
            let valid = (0..n_dist).all(|i| (0..n_categories).all(|j| (0.0..f64::INFINITY).contains(&row(i, j))));
            if !valid {
                return Err(Error::runtime("probability tensor contains either `inf`, `nan` or element < 0"));
            }
            if (0..n_dist).any(|i| (0..n_categories).all(|j| row(i, j) == 0.0)) {
                return Err(Error::runtime("invalid multinomial distribution (sum of probabilities <= 0)"));
            }
            let q = operands::new_output(dtype, &[Input::Tensor(p)])?;
            exponential_(q.as_ref(), 1.0, generator)?;
            binary::run::<bin::Div>(Input::Tensor(p), Input::Tensor(q.as_ref()), None, q.as_ref())?;
            if n_sample == 1 {
                return crate::ops::reduce::extremum_dim::<true>("argmax", q.as_ref(), Some(-1), true, None, o);
            }
            let values = iter::new_tensor(o.sizes(), dtype)?;
            return crate::ops::sort::topk(q.as_ref(), n_sample, -1, true, true, values.as_ref(), o);
        }
        let (rs0, rs1) = if o.dim() == 2 { (o.strides()[0], o.strides()[1]) } else { (0, o.strides()[0]) };
        let result = o.data_ptr().cast::<i64>();
        with_generator(generator, |g| {
            let mut cum = vec![0f64; n_categories as usize];
            for i in 0..n_dist {
                // The sums and the normalisation round as CPU's (in double for double, float otherwise).
                let wide = dtype == DType::F64;
                let mut sum = 0f64;
                for j in 0..n_categories {
                    let v = row(i, j);
                    if v.is_nan() || v < 0.0 {
                        return Err(Error::runtime(
                            "invalid multinomial distribution (encountering probability entry < 0)",
                        ));
                    }
                    if !v.is_finite() {
                        return Err(Error::runtime(
                            "invalid multinomial distribution (encountering probability entry = infinity or NaN)",
                        ));
                    }
                    sum = if wide { sum + v } else { f64::from(sum as f32 + v as f32) };
                    cum[j as usize] = sum;
                }
                if sum <= 0.0 {
                    return Err(Error::runtime("invalid multinomial distribution (sum of probabilities <= 0)"));
                }
                for c in &mut cum {
                    *c = if wide { *c / sum } else { f64::from(*c as f32 / sum as f32) };
                }
                for j in 0..n_sample {
                    let u = g.uniform_f64();
                    if let Some(last) = cum.last_mut() {
                        *last = 1.0;
                    }
                    let (mut left, mut right) = (0usize, cum.len());
                    while right > left {
                        let mid = left + (right - left) / 2;
                        if cum[mid] < u {
                            left = mid + 1;
                        } else {
                            right = mid;
                        }
                    }
                    // SAFETY: (i, j) is inside the resized output.
                    unsafe { result.wrapping_offset((i * rs0 + j * rs1) as isize).write(left as i64) };
                }
            }
            Ok(())
        })?
    })
}

/// What a `normal` overload takes as its mean and its standard deviation.
#[derive(Clone, Copy)]
pub enum Param<'a> {
    Float(f64),
    Tensor(TensorRef<'a>),
}

/// CHECK_NORMAL_TENSOR_STD: no complex std, no negative element.
fn check_std_tensor(std: &TensorRef<'_>) -> Result<()> {
    let dtype = dtype_of(std)?;
    if dtype.is_complex() {
        return Err(Error::runtime("normal expects standard deviation to be non-complex"));
    }
    let op = Operand::of(std)?;
    let mut negative = false;
    crate::dispatch!(dtype, [Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| {
        serial(std::slice::from_ref(&op), |p| {
            // SAFETY: elements of `std` (T).
            let v = unsafe { p[0].cast::<T>().read() }.to_num().as_f64();
            // min().ge(0): a NaN minimum compares false.
            negative |= v.is_nan() || v < 0.0;
            Ok(())
        })?
    }, else ());
    if negative {
        return Err(Error::runtime("normal expects all elements of std >= 0.0"));
    }
    Ok(())
}

/// The `normal.*` overloads with a tensor mean and/or std (into `out`, resized to the broadcast
/// shape): standard normals drawn into `out`, then `out * std + mean` as CPU's two in-place ops.
pub fn normal_params(mean: Param<'_>, std: Param<'_>, generator: Option<Generator>, out: TensorRef<'_>) -> Result<()> {
    let shape = match (mean, std) {
        (Param::Tensor(m), Param::Float(s)) => {
            if s.is_nan() || s < 0.0 {
                return Err(Error::runtime(format!("normal expects std >= 0.0, but found std {}", cpp_double(s))));
            }
            iter::broadcast_shapes(&[m.sizes(), out.sizes()])?
        }
        (Param::Float(_), Param::Tensor(s)) => {
            check_std_tensor(&s)?;
            s.sizes().to_vec()
        }
        (Param::Tensor(m), Param::Tensor(s)) => {
            check_std_tensor(&s)?;
            iter::broadcast_shapes(&[m.sizes(), s.sizes()])?
        }
        (Param::Float(_), Param::Float(_)) => out.sizes().to_vec(),
    };
    regen_runtime::bootstrap::with_size(&out, &shape, |o| {
        let o = *o;
        match (mean, std) {
            (Param::Tensor(m), Param::Float(s)) => {
                normal_(o, 0.0, s, generator)?;
                binary::run::<bin::Add>(Input::Tensor(o), Input::Tensor(m), None, o)
            }
            (Param::Float(m), Param::Tensor(s)) => {
                normal_(o, 0.0, 1.0, generator)?;
                binary::run::<bin::Mul>(Input::Tensor(o), Input::Tensor(s), None, o)?;
                // `full({}, mean, output.options())`: the mean rounded to the output's dtype.
                let dtype = dtype_of(&o)?;
                let m0 = iter::new_tensor(&[], dtype)?;
                regen_runtime::bootstrap::fill_(m0.as_ref(), Scalar::Float(m))?;
                binary::run::<bin::Add>(Input::Tensor(o), Input::Tensor(m0.as_ref()), None, o)
            }
            (Param::Tensor(m), Param::Tensor(s)) => {
                normal_(o, 0.0, 1.0, generator)?;
                binary::run::<bin::Mul>(Input::Tensor(o), Input::Tensor(s), None, o)?;
                binary::run::<bin::Add>(Input::Tensor(o), Input::Tensor(m), None, o)
            }
            (Param::Float(m), Param::Float(s)) => normal_(o, m, s, generator),
        }
    })
}

/// The functional `normal.*` overloads: a contiguous output of the mean's options (the std's
/// for a float mean), then [`normal_params`].
pub fn normal_functional(mean: Param<'_>, std: Param<'_>, generator: Option<Generator>) -> Result<Tensor> {
    let (like, shape) = match (mean, std) {
        (Param::Tensor(m), Param::Float(_)) => (m, m.sizes().to_vec()),
        (Param::Float(_), Param::Tensor(s)) => (s, s.sizes().to_vec()),
        (Param::Tensor(m), Param::Tensor(s)) => (m, iter::broadcast_shapes(&[m.sizes(), s.sizes()])?),
        (Param::Float(_), Param::Float(_)) => return Err(Error::runtime("normal: a tensor mean or std is required")),
    };
    let out = iter::new_tensor(&shape, dtype_of(&like)?)?;
    normal_params(mean, std, generator, out.as_ref())?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// RReLU.

/// `rrelu_with_noise(x, noise, lower, upper, training, out=out)`, as ATen's
/// `rrelu_with_noise_out_cpu`: in evaluation `leaky_relu` with the mean slope
/// `(lower + upper) / 2` and `noise` untouched; in training, element by element in row-major
/// order, a slope drawn from `uniform_real_distribution<double>(lower, upper)` where `x <= 0`
/// (kept in `noise`, the backward's factor), and `noise = 1`, `out = x` elsewhere (NaN included).
pub fn rrelu_with_noise_out(
    x: TensorRef<'_>,
    noise: TensorRef<'_>,
    lower: Scalar,
    upper: Scalar,
    training: bool,
    generator: Option<Generator>,
    out: TensorRef<'_>,
) -> Result<()> {
    if x.sizes() != noise.sizes() {
        return Err(Error::runtime(format!(
            "noise tensor shape must match self tensor shape. Got self.shape = {} noise.shape = {}",
            iter::fmt_sizes(x.sizes()),
            iter::fmt_sizes(noise.sizes())
        )));
    }
    regen_runtime::bootstrap::with_size(&out, x.sizes(), |out| {
        if x.numel() == 0 {
            return Ok(());
        }
        if !training {
            let slope = (lower.to_f64() + upper.to_f64()) / 2.0;
            return crate::ops::pointwise::run(
                &crate::ops::pointwise::ops::LeakyRelu { slope },
                [Input::Tensor(x)],
                *out,
            );
        }
        let dtype = dtype_of(&x)?;
        // CPU's dtypes (float16 too would be exact, but CPU refuses it).
        if !matches!(dtype, DType::F32 | DType::F64 | DType::BF16) {
            return Err(not_implemented("rrelu_with_noise_out_cpu", dtype));
        }
        // ATen reads and writes `out` and `noise` through `data_ptr<scalar_t>()`.
        for other in [dtype_of(out)?, dtype_of(&noise)?] {
            if other != dtype {
                return Err(Error::runtime(format!(
                    "expected scalar type {} but found {}",
                    dtype.name(),
                    other.name()
                )));
            }
        }
        let ops = [Operand::of(out)?, Operand::of(&x)?, Operand::of(&noise)?];
        with_generator(
            generator,
            |g| crate::dispatch!(dtype, [BF16, F32, F64], |T| rrelu_train::<T>(&ops, g, lower, upper), else Ok(())),
        )?
    })
}

/// RReLU's training loop over `[out, x, noise]`. The arithmetic is ATen's in `opmath_t` (float
/// below double): `lower` and `upper` are rounded to it before the double draw, the draw is
/// rounded to it, and `x * r` is one rounding to it (the exact product of two values of at most
/// 24 significant bits fits a double) before the store rounds to the dtype.
fn rrelu_train<T: Element>(ops: &[Operand; 3], g: &mut CpuGenerator, lower: Scalar, upper: Scalar) -> Result<()> {
    let opmath = |v: f64| if T::DTYPE == DType::F64 { v } else { f64::from(v as f32) };
    let (from, to) = (opmath(lower.to_f64()), opmath(upper.to_f64()));
    row_major(ops, |p| {
        // SAFETY: `p` points at one element of each operand, all of dtype T.
        unsafe {
            let x = p[1].cast::<T>().read();
            let xv = x.to_num().as_f64();
            // `x <= 0` is false for NaN, which keeps its value and a factor of one.
            let (y, n) = if xv <= 0.0 {
                // ATen's Activation.cpp is compiled without FMA: a multiply, then an add.
                let r = opmath(g.uniform_f64() * (to - from) + from);
                (T::from_num(Num::Float(opmath(xv * r))), T::from_num(Num::Float(r)))
            } else {
                (x, T::one())
            };
            p[0].cast::<T>().write(y);
            p[2].cast::<T>().write(n);
        }
        Ok(())
    })
}

/// Visits the elements of `ops` (all of one shape) in row-major order of their index, as ATen's
/// loops over `t.contiguous()` data do, passing the element pointers.
fn row_major(ops: &[Operand], f: impl FnMut(&[*mut u8]) -> Result<()>) -> Result<()> {
    let mut shape: Vec<usize> = ops[0].sizes.iter().rev().map(|&s| s as usize).collect();
    let mut strides: Vec<Vec<isize>> =
        ops.iter().map(|o| o.strides.iter().rev().map(|&s| s as isize * o.dtype.size() as isize).collect()).collect();
    if shape.is_empty() {
        shape.push(1);
        strides.iter_mut().for_each(|s| s.push(0));
    }
    walk(&shape, &strides, ops, ops[0].numel(), f)
}

/// This family's kernels: group `random` of regen.toml's `[implement]`.
impl crate::RandomKernels for crate::Reference {
    fn uniform_inplace(&self, s: TensorRef<'_>, from: f64, to: f64, g: Option<regen_runtime::Generator>) -> Result<()> {
        uniform_(s, from, to, g)
    }
    fn normal_inplace(&self, s: TensorRef<'_>, mean: f64, std: f64, g: Option<regen_runtime::Generator>) -> Result<()> {
        normal_(s, mean, std, g)
    }
    fn random_inplace(&self, s: TensorRef<'_>, g: Option<regen_runtime::Generator>) -> Result<()> {
        random_(s, g)
    }
    fn random_inplace_from(
        &self,
        s: TensorRef<'_>,
        from: i64,
        to: Option<i64>,
        g: Option<regen_runtime::Generator>,
    ) -> Result<()> {
        random_from(s, from, to, g)
    }
    fn random_inplace_to(&self, s: TensorRef<'_>, to: i64, g: Option<regen_runtime::Generator>) -> Result<()> {
        random_from(s, 0, Some(to), g)
    }
    fn bernoulli_inplace_tensor(
        &self,
        s: TensorRef<'_>,
        p: TensorRef<'_>,
        g: Option<regen_runtime::Generator>,
    ) -> Result<()> {
        bernoulli_tensor_(s, p, g)
    }
    fn bernoulli_inplace_float(&self, s: TensorRef<'_>, p: f64, g: Option<regen_runtime::Generator>) -> Result<()> {
        bernoulli_float_(s, p, g)
    }
    fn bernoulli_out(&self, s: TensorRef<'_>, g: Option<regen_runtime::Generator>, out: TensorRef<'_>) -> Result<()> {
        bernoulli_out(s, g, out)
    }
    fn exponential_inplace(&self, s: TensorRef<'_>, lambd: f64, g: Option<regen_runtime::Generator>) -> Result<()> {
        exponential_(s, lambd, g)
    }
    fn geometric_inplace(&self, s: TensorRef<'_>, p: f64, g: Option<regen_runtime::Generator>) -> Result<()> {
        geometric_(s, p, g)
    }
    fn log_normal_inplace(
        &self,
        s: TensorRef<'_>,
        mean: f64,
        std: f64,
        g: Option<regen_runtime::Generator>,
    ) -> Result<()> {
        log_normal_(s, mean, std, g)
    }
    fn cauchy_inplace(
        &self,
        s: TensorRef<'_>,
        median: f64,
        sigma: f64,
        g: Option<regen_runtime::Generator>,
    ) -> Result<()> {
        cauchy_(s, median, sigma, g)
    }
    fn randperm_generator_out(&self, n: i64, g: Option<regen_runtime::Generator>, out: TensorRef<'_>) -> Result<()> {
        randperm_out(n, g, out)
    }
    fn multinomial_out(
        &self,
        s: TensorRef<'_>,
        n: i64,
        replacement: bool,
        g: Option<regen_runtime::Generator>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        multinomial_out(s, n, replacement, g, out)
    }
    fn multinomial(
        &self,
        s: TensorRef<'_>,
        n: i64,
        replacement: bool,
        g: Option<regen_runtime::Generator>,
    ) -> Result<Tensor> {
        let out = crate::engine::iter::new_tensor(&[0], crate::engine::dtype::DType::I64)?;
        multinomial_out(s, n, replacement, g, out.as_ref())?;
        Ok(out)
    }
    fn rrelu_with_noise_out(
        &self,
        x: TensorRef<'_>,
        noise: TensorRef<'_>,
        lower: Scalar,
        upper: Scalar,
        training: bool,
        g: Option<regen_runtime::Generator>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        rrelu_with_noise_out(x, noise, lower, upper, training, g, out)
    }
    fn rrelu_with_noise(
        &self,
        x: TensorRef<'_>,
        noise: TensorRef<'_>,
        lower: Scalar,
        upper: Scalar,
        training: bool,
        g: Option<regen_runtime::Generator>,
    ) -> Result<Tensor> {
        // ATen's `empty_like(self, LEGACY_CONTIGUOUS_MEMORY_FORMAT)`.
        let out = crate::engine::iter::new_tensor(x.sizes(), dtype_of(&x)?)?;
        rrelu_with_noise_out(x, noise, lower, upper, training, g, out.as_ref())?;
        Ok(out)
    }
    fn rrelu_with_noise_inplace(
        &self,
        x: TensorRef<'_>,
        noise: TensorRef<'_>,
        lower: Scalar,
        upper: Scalar,
        training: bool,
        g: Option<regen_runtime::Generator>,
    ) -> Result<()> {
        rrelu_with_noise_out(x, noise, lower, upper, training, g, x)
    }
    fn native_dropout(&self, input: TensorRef<'_>, p: f64, train: Option<bool>) -> Result<(Tensor, Tensor)> {
        native_dropout(input, p, train)
    }
    fn native_dropout_backward(&self, grad: TensorRef<'_>, mask: TensorRef<'_>, scale: f64) -> Result<Tensor> {
        native_dropout_backward(grad, mask, scale)
    }
    fn normal_tensor_float(
        &self,
        mean: TensorRef<'_>,
        std: f64,
        g: Option<regen_runtime::Generator>,
    ) -> Result<Tensor> {
        use {Param, normal_functional};
        normal_functional(Param::Tensor(mean), Param::Float(std), g)
    }
    fn normal_float_tensor(
        &self,
        mean: f64,
        std: TensorRef<'_>,
        g: Option<regen_runtime::Generator>,
    ) -> Result<Tensor> {
        use {Param, normal_functional};
        normal_functional(Param::Float(mean), Param::Tensor(std), g)
    }
    fn normal_tensor_tensor(
        &self,
        mean: TensorRef<'_>,
        std: TensorRef<'_>,
        g: Option<regen_runtime::Generator>,
    ) -> Result<Tensor> {
        use {Param, normal_functional};
        normal_functional(Param::Tensor(mean), Param::Tensor(std), g)
    }
    fn normal_tensor_float_out(
        &self,
        mean: TensorRef<'_>,
        std: f64,
        g: Option<regen_runtime::Generator>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use {Param, normal_params};
        normal_params(Param::Tensor(mean), Param::Float(std), g, out)
    }
    fn normal_float_tensor_out(
        &self,
        mean: f64,
        std: TensorRef<'_>,
        g: Option<regen_runtime::Generator>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use {Param, normal_params};
        normal_params(Param::Float(mean), Param::Tensor(std), g, out)
    }
    fn normal_tensor_tensor_out(
        &self,
        mean: TensorRef<'_>,
        std: TensorRef<'_>,
        g: Option<regen_runtime::Generator>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        use {Param, normal_params};
        normal_params(Param::Tensor(mean), Param::Tensor(std), g, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpp_doubles() {
        assert_eq!(cpp_double(-1.0), "-1");
        assert_eq!(cpp_double(0.5), "0.5");
        assert_eq!(cpp_double(1.5), "1.5");
        assert_eq!(cpp_double(1e-7), "1e-07");
    }

    #[test]
    fn update_bounds_are_atens() {
        // ATen's own example: random_(0, 65504) on half moves `to` to 65472.
        assert_eq!(update_to(DType::F16, 65504), 65472);
        assert_eq!(update_to(DType::F32, 100), 100);
        assert_eq!(update_from(DType::F32, 5), 5);
    }
}
