//! The engine's element trait over the runtime's one dtype system: [`Element`] gives each Rust
//! element type its dtype, accumulation type (`opmath_type`) and `static_cast` conversions. The
//! dtype table, [`Num`], the [`dispatch!`](crate::dispatch) macros and PyTorch's type promotion
//! are `regen_runtime::dtype`'s, re-exported here so the engine names them in one place.

use half::{bf16, f16};
use num_complex::{Complex32, Complex64};
pub use regen_runtime::dtype::{
    Category, DType, Num, PromotionOperand, can_cast, check_can_cast, check_out_dtype, dtype_of, float_dtype,
    not_implemented, promote, result_type, torch_name,
};

/// An element type of a tensor.
pub trait Element: Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    const DTYPE: DType;
    /// The type arithmetic runs in (PyTorch's `opmath_type`): f32 for f16 and bf16.
    type Acc: Copy + Send + Sync;
    fn to_acc(self) -> Self::Acc;
    fn from_acc(a: Self::Acc) -> Self;
    fn to_num(self) -> Num;
    fn from_num(n: Num) -> Self;
    fn zero() -> Self;
    fn one() -> Self;
    /// Whether whole slices convert faster through [`Element::widen_slice`] and
    /// [`Element::narrow_slice`] than element by element inside a row's loop (float16: the CPU's
    /// conversion instructions, which the compiler does not emit for `to_acc`'s bit arithmetic).
    const BLOCK_CONVERT: bool = false;
    /// `dst[k] = src[k].to_acc()` over the shorter of the two.
    #[inline(always)]
    fn widen_slice(src: &[Self], dst: &mut [Self::Acc]) {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = s.to_acc();
        }
    }
    /// `dst[k] = Self::from_acc(src[k])` over the shorter of the two.
    #[inline(always)]
    fn narrow_slice(src: &[Self::Acc], dst: &mut [Self]) {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = Self::from_acc(s);
        }
    }
}

/// Converts one element to another dtype, as `static_cast` does.
#[inline(always)]
pub fn cast<S: Element, D: Element>(x: S) -> D {
    D::from_num(x.to_num())
}

macro_rules! same_acc {
    () => {
        type Acc = Self;
        #[inline(always)]
        fn to_acc(self) -> Self {
            self
        }
        #[inline(always)]
        fn from_acc(a: Self) -> Self {
            a
        }
    };
}

macro_rules! int_element {
    ($($t:ty => $variant:ident),*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            same_acc!();
            #[inline(always)]
            fn to_num(self) -> Num {
                Num::Int(self as i64)
            }
            #[inline(always)]
            fn from_num(n: Num) -> Self {
                // Wrapping, as a C++ integer conversion.
                n.as_i64() as $t
            }
            fn zero() -> Self {
                0
            }
            fn one() -> Self {
                1
            }
        }
    )*};
}
int_element!(u8 => U8, i8 => I8, i16 => I16, i32 => I32, i64 => I64);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    same_acc!();
    #[inline(always)]
    fn to_num(self) -> Num {
        Num::Bool(self)
    }
    #[inline(always)]
    fn from_num(n: Num) -> Self {
        n.as_bool()
    }
    fn zero() -> Self {
        false
    }
    fn one() -> Self {
        true
    }
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    same_acc!();
    #[inline(always)]
    fn to_num(self) -> Num {
        Num::Float(f64::from(self))
    }
    #[inline(always)]
    fn from_num(n: Num) -> Self {
        n.as_f64() as f32
    }
    fn zero() -> Self {
        0.0
    }
    fn one() -> Self {
        1.0
    }
}

impl Element for f64 {
    const DTYPE: DType = DType::F64;
    same_acc!();
    #[inline(always)]
    fn to_num(self) -> Num {
        Num::Float(self)
    }
    #[inline(always)]
    fn from_num(n: Num) -> Self {
        n.as_f64()
    }
    fn zero() -> Self {
        0.0
    }
    fn one() -> Self {
        1.0
    }
}

macro_rules! half_element {
    ($($t:ty => $variant:ident, $to:path, $from:path);*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            type Acc = f32;
            #[inline(always)]
            fn to_acc(self) -> f32 {
                $to(self)
            }
            #[inline(always)]
            fn from_acc(a: f32) -> Self {
                $from(a)
            }
            #[inline(always)]
            fn to_num(self) -> Num {
                Num::Float(f64::from($to(self)))
            }
            #[inline(always)]
            fn from_num(n: Num) -> Self {
                // Through f32, as c10::Half(float) rounds; by the branch-free conversions, which
                // vectorise (`half`'s are a call per element).
                $from(n.as_f64() as f32)
            }
            fn zero() -> Self {
                <$t>::ZERO
            }
            fn one() -> Self {
                <$t>::ONE
            }
            const BLOCK_CONVERT: bool = !<$t as Half>::FUSES;
            /// By [`Half::widen`].
            #[inline(always)]
            fn widen_slice(src: &[Self], dst: &mut [f32]) {
                // SAFETY: both hold the shorter length.
                unsafe { <$t as Half>::widen(src.as_ptr(), dst.as_mut_ptr(), src.len().min(dst.len())) }
            }
            /// By [`Half::narrow`].
            #[inline(always)]
            fn narrow_slice(src: &[f32], dst: &mut [Self]) {
                // SAFETY: both hold the shorter length.
                unsafe { <$t as Half>::narrow(src.as_ptr(), dst.as_mut_ptr(), src.len().min(dst.len())) }
            }
        }
    )*};
}
half_element!(f16 => F16, f16_to_f32, f16_from_f32; bf16 => BF16, bf16_to_f32, bf16_from_f32);

/// bfloat16 to float32: the bits shifted into the high half, as c10::BFloat16 converts (exact;
/// a signalling NaN stays signalling, as on CPU). `half`'s `to_f32` also quiets a signalling
/// NaN, a compare and a masked or per element that made a widened bfloat16 row's loop a quarter
/// longer; the narrowing makes every NaN quiet anyway.
#[inline(always)]
pub fn bf16_to_f32(x: bf16) -> f32 {
    f32::from_bits(u32::from(x.to_bits()) << 16)
}

/// float16 to float32, exact, without branches (F. Giesen's `half_to_float_fast5`), so the
/// elementwise loops vectorise it: `half`'s conversion is a call per element that tests for F16C
/// at run time (float16 ops were 10-55x CPU's time). A NaN stays a NaN (its payload shifted, as
/// the hardware's conversion does).
#[inline(always)]
pub fn f16_to_f32(h: f16) -> f32 {
    let h = u32::from(h.to_bits());
    const MAGIC: f32 = f32::from_bits(113 << 23);
    const SHIFTED_EXP: u32 = 0x7c00 << 13;
    let bits = (h & 0x7fff) << 13;
    let exp = bits & SHIFTED_EXP;
    let adjusted = bits + ((127 - 15) << 23);
    let infinite_or_nan = adjusted + ((128 - 16) << 23);
    // Subnormal or zero: renormalise through a float subtraction.
    let subnormal = (f32::from_bits(adjusted + (1 << 23)) - MAGIC).to_bits();
    let magnitude = if exp == SHIFTED_EXP {
        infinite_or_nan
    } else if exp == 0 {
        subnormal
    } else {
        adjusted
    };
    f32::from_bits(magnitude | ((h & 0x8000) << 16))
}

/// float32 to float16, rounding to nearest even, without branches (F. Giesen's
/// `float_to_half_fast3_rtne`); a NaN becomes 0x7e00, as c10::Half's conversion gives.
#[inline(always)]
pub fn f16_from_f32(x: f32) -> f16 {
    const INFINITY: u32 = 255 << 23;
    const F16_MAX: u32 = (127 + 16) << 23;
    const DENORM_MAGIC: u32 = ((127 - 15) + (23 - 10) + 1) << 23;
    let bits = x.to_bits();
    let sign = bits & 0x8000_0000;
    let abs = bits ^ sign;
    let overflow = if abs > INFINITY { 0x7e00 } else { 0x7c00 };
    // Subnormal or zero: the float addition aligns and rounds the 10 mantissa bits.
    let subnormal = (f32::from_bits(abs) + f32::from_bits(DENORM_MAGIC)).to_bits().wrapping_sub(DENORM_MAGIC);
    let odd = (abs >> 13) & 1;
    let normal = (abs.wrapping_add(((15u32.wrapping_sub(127)) << 23).wrapping_add(0xfff)).wrapping_add(odd)) >> 13;
    let magnitude = if abs >= F16_MAX {
        overflow
    } else if abs < (113 << 23) {
        subnormal
    } else {
        normal
    };
    f16::from_bits((magnitude | (sign >> 16)) as u16)
}

/// float16 and bfloat16, which compute in f32: conversions of whole contiguous runs, which the
/// elementwise loops use to widen a chunk into an f32 buffer and narrow the results back
/// (`loops::widened`), as ATen's reduced-float vector path converts a vector at a time. Each
/// element converts exactly as [`Element::to_acc`] / [`Element::from_acc`] do, but for the
/// payload of a NaN, which the float16 hardware conversion keeps (as ATen's vectorised loops do).
pub trait Half: Element<Acc = f32> {
    /// Whether [`Element::to_acc`] and [`Element::from_acc`] are integer arithmetic the compiler
    /// vectorises inside a row's own loop (bfloat16: a shift, and a rounding add), so that a
    /// contiguous run converts as it computes, in one pass; float16's take a conversion
    /// instruction the compiler does not emit for them, so its runs go through `widened`'s
    /// buffers.
    const FUSES: bool;
    /// `dst[k] = src[k].to_acc()` for `k < n`.
    ///
    /// # Safety
    /// `src` holds `n` readable elements and `dst` `n` writable ones.
    unsafe fn widen(src: *const Self, dst: *mut f32, n: usize);
    /// `dst[k] = Self::from_acc(src[k])` for `k < n` (rounding to nearest even).
    ///
    /// # Safety
    /// As [`Half::widen`], the other way.
    unsafe fn narrow(src: *const f32, dst: *mut Self, n: usize);
    /// [`LANES`] elements widened at once, as [`Half::widen`] does them (float16: one or two
    /// conversion instructions, the result in registers).
    ///
    /// # Safety
    /// `src` holds [`LANES`] readable elements.
    #[inline(always)]
    unsafe fn widen_lanes(src: *const Self) -> [f32; LANES] {
        let mut x = [0.0; LANES];
        for (k, x) in x.iter_mut().enumerate() {
            // SAFETY: per the contract.
            *x = unsafe { src.add(k).read_unaligned() }.to_acc();
        }
        x
    }
    /// [`LANES`] results narrowed at once, as [`Half::narrow`] does them.
    ///
    /// # Safety
    /// `dst` holds [`LANES`] writable elements.
    #[inline(always)]
    unsafe fn narrow_lanes(x: [f32; LANES], dst: *mut Self) {
        for (k, v) in x.into_iter().enumerate() {
            // SAFETY: per the contract.
            unsafe { dst.add(k).write_unaligned(Self::from_acc(v)) };
        }
    }
}

/// Elements per [`Half::widen_lanes`]: one AVX-512 register of f32.
pub const LANES: usize = 16;

impl Half for f16 {
    const FUSES: bool = false;
    /// The CPU's conversion instructions: AVX-512F's 16 lanes, or F16C's 8 in the AVX2 tier
    /// (part of x86-64-v3), one instruction where the branch-free bit arithmetic of
    /// [`f16_to_f32`] takes about fifteen per vector (float16 rows ran at 2-6x CPU's time).
    #[inline(always)]
    unsafe fn widen(src: *const f16, dst: *mut f32, n: usize) {
        // SAFETY: per the contract.
        let done = unsafe { f16_runs::widen(src.cast(), dst, n) };
        for k in done..n {
            // SAFETY: per the contract.
            unsafe { *dst.add(k) = f16_to_f32(*src.add(k)) };
        }
    }
    #[inline(always)]
    unsafe fn narrow(src: *const f32, dst: *mut f16, n: usize) {
        // SAFETY: per the contract.
        let done = unsafe { f16_runs::narrow(src, dst.cast(), n) };
        for k in done..n {
            // SAFETY: per the contract.
            unsafe { *dst.add(k) = f16_from_f32(*src.add(k)) };
        }
    }
    #[inline(always)]
    unsafe fn widen_lanes(src: *const f16) -> [f32; LANES] {
        // SAFETY: per the contract.
        unsafe { f16_runs::widen_lanes(src.cast()) }
    }
    #[inline(always)]
    unsafe fn narrow_lanes(x: [f32; LANES], dst: *mut f16) {
        // SAFETY: per the contract.
        unsafe { f16_runs::narrow_lanes(x, dst.cast()) }
    }
}

/// float16 runs through the conversion instructions of the tier in force, whole vectors only:
/// each function returns how many leading elements it converted (the caller converts the rest).
mod f16_runs {
    #[cfg(target_arch = "x86_64")]
    use std::arch::x86_64::*;

    /// Widens the leading whole vectors of `n` elements.
    ///
    /// # Safety
    /// `src` and `dst` hold `n` elements.
    #[inline(always)]
    pub unsafe fn widen(src: *const u16, dst: *mut f32, n: usize) -> usize {
        #[cfg(target_arch = "x86_64")]
        {
            if crate::engine::has_avx512() {
                // SAFETY: the features were detected; per the contract.
                return unsafe { widen_avx512(src, dst, n) };
            }
            if crate::engine::has_avx2() {
                // SAFETY: the features were detected; per the contract.
                return unsafe { widen_f16c(src, dst, n) };
            }
        }
        let _ = (src, dst, n);
        0
    }

    /// Narrows the leading whole vectors of `n` elements, rounding to nearest even.
    ///
    /// # Safety
    /// `src` and `dst` hold `n` elements.
    #[inline(always)]
    pub unsafe fn narrow(src: *const f32, dst: *mut u16, n: usize) -> usize {
        #[cfg(target_arch = "x86_64")]
        {
            if crate::engine::has_avx512() {
                // SAFETY: the features were detected; per the contract.
                return unsafe { narrow_avx512(src, dst, n) };
            }
            if crate::engine::has_avx2() {
                // SAFETY: the features were detected; per the contract.
                return unsafe { narrow_f16c(src, dst, n) };
            }
        }
        let _ = (src, dst, n);
        0
    }

    /// [`super::LANES`] elements widened by the tier's instructions (its functions take and
    /// return arrays, not vector types, so a call from code compiled without the feature is
    /// sound; inside a loop compiled for the tier they are inlined).
    ///
    /// # Safety
    /// `src` holds that many elements.
    #[inline(always)]
    pub unsafe fn widen_lanes(src: *const u16) -> [f32; super::LANES] {
        #[cfg(target_arch = "x86_64")]
        {
            if crate::engine::has_avx512() {
                // SAFETY: the features were detected; per the contract.
                return unsafe { widen_lanes_avx512(src) };
            }
            if crate::engine::has_avx2() {
                // SAFETY: as above.
                return unsafe { widen_lanes_f16c(src) };
            }
        }
        let mut x = [0.0; super::LANES];
        for (k, x) in x.iter_mut().enumerate() {
            // SAFETY: per the contract.
            *x = super::f16_to_f32(half::f16::from_bits(unsafe { src.add(k).read_unaligned() }));
        }
        x
    }

    /// [`super::LANES`] results narrowed by the tier's instructions, rounding to nearest even.
    ///
    /// # Safety
    /// `dst` holds that many elements.
    #[inline(always)]
    pub unsafe fn narrow_lanes(x: [f32; super::LANES], dst: *mut u16) {
        #[cfg(target_arch = "x86_64")]
        {
            if crate::engine::has_avx512() {
                // SAFETY: the features were detected; per the contract.
                return unsafe { narrow_lanes_avx512(x, dst) };
            }
            if crate::engine::has_avx2() {
                // SAFETY: as above.
                return unsafe { narrow_lanes_f16c(x, dst) };
            }
        }
        for (k, v) in x.into_iter().enumerate() {
            // SAFETY: per the contract.
            unsafe { dst.add(k).write_unaligned(super::f16_from_f32(v).to_bits()) };
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn widen_lanes_avx512(src: *const u16) -> [f32; super::LANES] {
        // SAFETY: the caller's contract; the vector is 16 f32.
        unsafe { std::mem::transmute::<__m512, [f32; 16]>(_mm512_cvtph_ps(_mm256_loadu_si256(src.cast()))) }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn narrow_lanes_avx512(x: [f32; super::LANES], dst: *mut u16) {
        const RNE: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
        // SAFETY: the caller's contract; the array is one vector.
        unsafe { _mm256_storeu_si256(dst.cast(), _mm512_cvtps_ph::<RNE>(std::mem::transmute::<[f32; 16], __m512>(x))) }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx,f16c")]
    #[inline]
    unsafe fn widen_lanes_f16c(src: *const u16) -> [f32; super::LANES] {
        // SAFETY: the caller's contract; two vectors of 8 f32.
        unsafe {
            let [lo, hi] = [_mm_loadu_si128(src.cast()), _mm_loadu_si128(src.add(8).cast())];
            std::mem::transmute::<[__m256; 2], [f32; 16]>([_mm256_cvtph_ps(lo), _mm256_cvtph_ps(hi)])
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx,f16c")]
    #[inline]
    unsafe fn narrow_lanes_f16c(x: [f32; super::LANES], dst: *mut u16) {
        // SAFETY: the caller's contract; the array is two vectors.
        unsafe {
            let [lo, hi] = std::mem::transmute::<[f32; 16], [__m256; 2]>(x);
            _mm_storeu_si128(dst.cast(), _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(lo));
            _mm_storeu_si128(dst.add(8).cast(), _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(hi));
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn widen_avx512(src: *const u16, dst: *mut f32, n: usize) -> usize {
        let mut k = 0;
        while k + 16 <= n {
            // SAFETY: per the callers' contract.
            unsafe { _mm512_storeu_ps(dst.add(k), _mm512_cvtph_ps(_mm256_loadu_si256(src.add(k).cast()))) };
            k += 16;
        }
        k
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn narrow_avx512(src: *const f32, dst: *mut u16, n: usize) -> usize {
        const RNE: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
        let mut k = 0;
        while k + 16 <= n {
            // SAFETY: per the callers' contract.
            unsafe { _mm256_storeu_si256(dst.add(k).cast(), _mm512_cvtps_ph::<RNE>(_mm512_loadu_ps(src.add(k)))) };
            k += 16;
        }
        k
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx,f16c")]
    unsafe fn widen_f16c(src: *const u16, dst: *mut f32, n: usize) -> usize {
        let mut k = 0;
        while k + 8 <= n {
            // SAFETY: per the callers' contract.
            unsafe { _mm256_storeu_ps(dst.add(k), _mm256_cvtph_ps(_mm_loadu_si128(src.add(k).cast()))) };
            k += 8;
        }
        k
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx,f16c")]
    unsafe fn narrow_f16c(src: *const f32, dst: *mut u16, n: usize) -> usize {
        let mut k = 0;
        while k + 8 <= n {
            // SAFETY: per the callers' contract.
            unsafe {
                _mm_storeu_si128(
                    dst.add(k).cast(),
                    _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(src.add(k))),
                )
            };
            k += 8;
        }
        k
    }
}

impl Half for bf16 {
    const FUSES: bool = true;
    /// `to_acc` is a shift, which the compiler vectorises.
    #[inline(always)]
    unsafe fn widen(src: *const bf16, dst: *mut f32, n: usize) {
        for k in 0..n {
            // SAFETY: per the contract.
            unsafe { *dst.add(k) = (*src.add(k)).to_acc() };
        }
    }
    /// `bf16::from_f32` without branches, so the compiler vectorises it: round to nearest even,
    /// a NaN keeps its high payload bits and is made quiet.
    #[inline(always)]
    unsafe fn narrow(src: *const f32, dst: *mut bf16, n: usize) {
        for k in 0..n {
            // SAFETY: per the contract.
            unsafe { *dst.add(k) = bf16_from_f32(*src.add(k)) };
        }
    }
}

/// float32 to bfloat16 as `half`'s `bf16::from_f32`, without branches.
#[inline(always)]
pub fn bf16_from_f32(x: f32) -> bf16 {
    let bits = x.to_bits();
    let rounded = bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) >> 16;
    let nan = (bits >> 16) | 0x40;
    bf16::from_bits(if bits & 0x7fff_ffff > 0x7f80_0000 { nan } else { rounded } as u16)
}

impl Element for Complex32 {
    const DTYPE: DType = DType::C64;
    same_acc!();
    #[inline(always)]
    fn to_num(self) -> Num {
        Num::Complex(f64::from(self.re), f64::from(self.im))
    }
    #[inline(always)]
    fn from_num(n: Num) -> Self {
        let (re, im) = n.as_complex();
        Complex32::new(re as f32, im as f32)
    }
    fn zero() -> Self {
        Complex32::new(0.0, 0.0)
    }
    fn one() -> Self {
        Complex32::new(1.0, 0.0)
    }
}

impl Element for Complex64 {
    const DTYPE: DType = DType::C128;
    same_acc!();
    #[inline(always)]
    fn to_num(self) -> Num {
        Num::Complex(self.re, self.im)
    }
    #[inline(always)]
    fn from_num(n: Num) -> Self {
        let (re, im) = n.as_complex();
        Complex64::new(re, im)
    }
    fn zero() -> Self {
        Complex64::new(0.0, 0.0)
    }
    fn one() -> Self {
        Complex64::new(1.0, 0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_are_static_casts() {
        assert_eq!(cast::<f32, i32>(-2.7), -2);
        assert_eq!(cast::<i64, u8>(257), 1);
        assert!(cast::<f64, bool>(0.5));
        assert_eq!(cast::<Complex32, f32>(Complex32::new(1.5, 2.0)), 1.5);
        assert_eq!(cast::<bool, Complex64>(true), Complex64::new(1.0, 0.0));
        assert_eq!(cast::<f32, bf16>(1.0), bf16::ONE);
        assert_eq!(cast::<i64, i64>(i64::MAX), i64::MAX);
        assert_eq!(f16::from_f32(2.0).to_acc() * 2.0, 4.0);
    }

    #[test]
    fn run_conversions_match_the_element_conversions() {
        // Every float16 widened, in one run (whole vectors and a tail).
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        let mut wide = vec![0f32; all.len()];
        // SAFETY: both hold `all.len()` elements.
        unsafe { f16::widen(all.as_ptr(), wide.as_mut_ptr(), all.len()) };
        for (h, w) in all.iter().zip(&wide) {
            let one = h.to_acc();
            assert!(w.to_bits() == one.to_bits() || (w.is_nan() && one.is_nan()), "{h:?}");
        }
        // float32 narrowed: every float16, the halfway points between neighbours (ties to
        // even), their float32 neighbours, and a spread of bit patterns, including NaNs.
        let mut probes: Vec<f32> = Vec::new();
        for (x, next) in wide.iter().zip(wide.iter().skip(1)) {
            let half = (x + next) / 2.0;
            for y in [*x, half] {
                probes.extend([
                    y,
                    f32::from_bits(y.to_bits().wrapping_add(1)),
                    f32::from_bits(y.to_bits().wrapping_sub(1)),
                ]);
            }
        }
        let mut state = 0x2545_f491u32;
        probes.extend((0..100_003).map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            f32::from_bits(state)
        }));
        let mut halves = vec![f16::ZERO; probes.len()];
        let mut brains = vec![bf16::ZERO; probes.len()];
        // SAFETY: all hold `probes.len()` elements.
        unsafe {
            f16::narrow(probes.as_ptr(), halves.as_mut_ptr(), probes.len());
            bf16::narrow(probes.as_ptr(), brains.as_mut_ptr(), probes.len());
        }
        for ((&x, h), b) in probes.iter().zip(&halves).zip(&brains) {
            if x.is_nan() {
                assert!(h.is_nan() && b.is_nan() && h.is_sign_negative() == x.is_sign_negative(), "{x:?}");
            } else {
                assert_eq!(h.to_bits(), f16::from_acc(x).to_bits(), "{:#x}", x.to_bits());
            }
            assert_eq!(b.to_bits(), bf16::from_f32(x).to_bits(), "{:#x}", x.to_bits());
        }
    }

    #[test]
    fn branch_free_float16_conversions_match_the_half_crate() {
        // Every float16, to float32: bit for bit (NaNs stay NaNs).
        for h in 0..=u16::MAX {
            let h = f16::from_bits(h);
            let (ours, theirs) = (f16_to_f32(h), h.to_f32());
            assert!(ours.to_bits() == theirs.to_bits() || (ours.is_nan() && theirs.is_nan()), "{h:?}");
        }
        // float32 to float16 at every float16, every halfway point between two (ties to even)
        // and the float32 neighbours of each, plus a spread of bit patterns.
        let mut probes: Vec<u32> = Vec::new();
        for h in 0..=u16::MAX {
            let x = f16::from_bits(h).to_f32();
            let next = f16::from_bits(h.wrapping_add(1)).to_f32();
            for y in [x, (x + next) / 2.0] {
                probes.extend([y.to_bits(), y.to_bits().wrapping_add(1), y.to_bits().wrapping_sub(1)]);
            }
        }
        let mut state = 0x9e37_79b9u32;
        probes.extend((0..200_000).map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        }));
        for bits in probes {
            let x = f32::from_bits(bits);
            let (ours, theirs) = (f16_from_f32(x), f16::from_f32(x));
            if x.is_nan() {
                assert_eq!(ours.to_bits() & 0x7fff, 0x7e00, "{bits:#x}");
            } else {
                assert_eq!(ours.to_bits(), theirs.to_bits(), "{bits:#x}");
            }
        }
    }
}
