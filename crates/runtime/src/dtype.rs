//! The one dtype system every regen crate uses: one table row per dtype the kernels compute with
//! (Rust type, `c10::ScalarType` code, name, category), a value in its widest domain ([`Num`]),
//! the [`dispatch!`](crate::dispatch) macro that turns a generic `f::<T>` into the per-dtype
//! match, and PyTorch's type promotion (`c10::promoteTypes`, `at::result_type`, `canCast`).

use crate::Scalar;
use crate::args::{ScalarType, TensorRef};
use crate::error::{Error, Result};

/// Type-promotion category: bool < integral < floating < complex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    Bool,
    Integral,
    Floating,
    Complex,
}

/// The table: every dtype the kernels compute with, one row each.
macro_rules! dtype_table {
    ($($variant:ident: $ty:ty, code $code:literal, $name:literal, $category:ident;)*) => {
        /// A PyTorch dtype the kernels compute with.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum DType {
            $($variant),*
        }

        impl DType {
            pub const ALL: &[DType] = &[$(DType::$variant),*];

            /// From a `c10::ScalarType` code; `None` for dtypes without kernels (float8, qint, ...).
            pub fn from_code(code: i32) -> Option<DType> {
                match code {
                    $($code => Some(DType::$variant),)*
                    _ => None,
                }
            }
            pub fn code(self) -> i32 {
                match self {
                    $(DType::$variant => $code),*
                }
            }
            /// The `c10::ScalarType` name (`Float`, `ComplexFloat`), as PyTorch's messages use.
            pub fn name(self) -> &'static str {
                match self {
                    $(DType::$variant => $name),*
                }
            }
            pub fn category(self) -> Category {
                match self {
                    $(DType::$variant => Category::$category),*
                }
            }
            /// Bytes per element.
            pub fn size(self) -> usize {
                match self {
                    $(DType::$variant => std::mem::size_of::<$ty>()),*
                }
            }
        }
    };
}

dtype_table! {
    U8: u8, code 0, "Byte", Integral;
    I8: i8, code 1, "Char", Integral;
    I16: i16, code 2, "Short", Integral;
    I32: i32, code 3, "Int", Integral;
    I64: i64, code 4, "Long", Integral;
    F16: half::f16, code 5, "Half", Floating;
    F32: f32, code 6, "Float", Floating;
    F64: f64, code 7, "Double", Floating;
    C64: num_complex::Complex32, code 9, "ComplexFloat", Complex;
    C128: num_complex::Complex64, code 10, "ComplexDouble", Complex;
    Bool: bool, code 11, "Bool", Bool;
    BF16: half::bf16, code 15, "BFloat16", Floating;
}

/// Runs `$body` with `$T` bound to the Rust type of `$dtype`, for every dtype of the table.
#[macro_export]
macro_rules! dispatch_all {
    ($dtype:expr, |$T:ident| $body:expr) => {
        $crate::dispatch!($dtype, [Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64, C64, C128], |$T| $body, else unreachable!())
    };
}

/// Runs `$body` with `$T` bound to the Rust type of `$dtype` when it is one of the listed
/// variants; otherwise evaluates `$else`.
#[macro_export]
macro_rules! dispatch {
    ($dtype:expr, [$($variant:ident),*], |$T:ident| $body:expr, else $else:expr) => {{
        use $crate::dtype::DType;
        match $dtype {
            $(DType::$variant => {
                #[allow(dead_code)]
                type $T = $crate::dtype_rust_type!($variant);
                $body
            })*
            #[allow(unreachable_patterns)]
            _ => $else,
        }
    }};
}

/// The Rust type of a `DType` variant, for [`dispatch!`].
#[macro_export]
macro_rules! dtype_rust_type {
    (Bool) => {
        bool
    };
    (U8) => {
        u8
    };
    (I8) => {
        i8
    };
    (I16) => {
        i16
    };
    (I32) => {
        i32
    };
    (I64) => {
        i64
    };
    (F16) => {
        $crate::half::f16
    };
    (BF16) => {
        $crate::half::bf16
    };
    (F32) => {
        f32
    };
    (F64) => {
        f64
    };
    (C64) => {
        $crate::num_complex::Complex32
    };
    (C128) => {
        $crate::num_complex::Complex64
    };
}

impl DType {
    /// The dtype of a `c10::ScalarType`, or the error for one the kernels do not compute in.
    pub fn from_scalar_type(t: ScalarType) -> Result<DType> {
        // A RuntimeError, never a TypeError: Python turns a TypeError from `a + b` into
        // "unsupported operand type(s)".
        DType::from_code(t.0).ok_or_else(|| {
            Error::runtime(format!(
                "this device's kernels do not compute in {t}; convert the tensor to a dtype they do (bool, uint8, \
                 int8-int64, float16, bfloat16, float32, float64, complex64, complex128) first"
            ))
        })
    }
    pub fn scalar_type(self) -> ScalarType {
        ScalarType(self.code())
    }
    pub fn is_floating(self) -> bool {
        self.category() == Category::Floating
    }
    pub fn is_complex(self) -> bool {
        self.category() == Category::Complex
    }
    /// The real dtype of a complex one (`abs`, `real`, `angle`); itself otherwise.
    pub fn to_real(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            other => other,
        }
    }
    /// The complex dtype whose parts are at least this dtype's precision.
    pub fn to_complex(self) -> DType {
        match self {
            DType::F64 | DType::C128 => DType::C128,
            _ => DType::C64,
        }
    }
    /// `torch.get_default_dtype()` as the kernels assume it.
    pub const DEFAULT_FLOAT: DType = DType::F32;
}

/// A value in the widest domain of its category: how elements convert between dtypes
/// (`static_cast` semantics: float to int truncates, complex to real keeps the real part,
/// anything to bool is `!= 0`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    Bool(bool),
    Int(i64),
    Float(f64),
    /// Real and imaginary parts.
    Complex(f64, f64),
}

impl Num {
    pub fn from_scalar(s: Scalar) -> Num {
        match s {
            Scalar::Bool(b) => Num::Bool(b),
            Scalar::Int(i) => Num::Int(i),
            Scalar::Float(f) => Num::Float(f),
            Scalar::Complex(re, im) => Num::Complex(re, im),
        }
    }
    pub fn to_scalar(self) -> Scalar {
        match self {
            Num::Bool(b) => Scalar::Bool(b),
            Num::Int(i) => Scalar::Int(i),
            Num::Float(f) => Scalar::Float(f),
            Num::Complex(re, im) => Scalar::Complex(re, im),
        }
    }
    #[inline]
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Bool(b) => f64::from(u8::from(b)),
            Num::Int(i) => i as f64,
            Num::Float(f) | Num::Complex(f, _) => f,
        }
    }
    /// As C++ converts to float: an integer rounds once, straight to f32 (through f64 it could
    /// round twice and differ in the last bit, e.g. for int64 values above 2^53).
    #[inline]
    pub fn as_f32(self) -> f32 {
        match self {
            Num::Int(i) => i as f32,
            other => other.as_f64() as f32,
        }
    }
    #[inline]
    pub fn as_i64(self) -> i64 {
        match self {
            Num::Bool(b) => i64::from(b),
            Num::Int(i) => i,
            // Saturating where C++ would be undefined; NaN becomes 0.
            Num::Float(f) | Num::Complex(f, _) => saturating_i64(f),
        }
    }
    #[inline]
    pub fn as_bool(self) -> bool {
        match self {
            Num::Bool(b) => b,
            Num::Int(i) => i != 0,
            Num::Float(f) => f != 0.0,
            Num::Complex(re, im) => re != 0.0 || im != 0.0,
        }
    }
    /// Real and imaginary parts (0 imaginary for reals).
    #[inline]
    pub fn as_complex(self) -> (f64, f64) {
        match self {
            Num::Complex(re, im) => (re, im),
            other => (other.as_f64(), 0.0),
        }
    }
}

/// `f as i64` (saturating, NaN to 0), computed as selects around the plain conversion: LLVM
/// expands a vector of saturating conversions one element at a time, and the kernels' casts from
/// floating types to integers go through this (float32 to int32 took 4.4x CPU's time; this form
/// 4.3x less in a loop over 1M elements, with the same results at NaN, the infinities and the
/// bounds).
#[inline(always)]
pub fn saturating_i64(f: f64) -> i64 {
    // -2^63 and 2^63 (from 2^63 up, i64::MAX), and the largest f64 below 2^63.
    const MIN: f64 = i64::MIN as f64;
    const LIMIT: f64 = -MIN;
    const BELOW_MAX: f64 = f64::from_bits(LIMIT.to_bits() - 1);
    let clamped = if f > MIN { f } else { MIN };
    let clamped = if clamped < BELOW_MAX { clamped } else { BELOW_MAX };
    // SAFETY: `clamped` is finite (NaN was replaced by MIN above: NaN > MIN is false) and
    // inside i64's range.
    let v = unsafe { clamped.to_int_unchecked::<i64>() };
    let v = if f >= LIMIT { i64::MAX } else { v };
    if f.is_nan() { 0 } else { v }
}

/// `c10::promoteTypes` of two dtypes: the higher category wins, with the precision both need
/// (uint8 and int8 meet in int16, float16 and bfloat16 in float32, float64 and complex64 in
/// complex128).
pub fn promote(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    match (a.category(), b.category()) {
        (Category::Complex, _) | (_, Category::Complex) => {
            // The complex type wide enough for the other operand.
            let wide = [a, b].iter().any(|d| matches!(d, F64 | C128));
            if wide { C128 } else { C64 }
        }
        (Category::Bool, _) => b,
        (_, Category::Bool) => a,
        (Category::Floating, Category::Floating) => match (a, b) {
            (F64, _) | (_, F64) => F64,
            // Half and BFloat16 meet in Float.
            _ => F32,
        },
        (Category::Floating, _) => a,
        (_, Category::Floating) => b,
        _ => promote_integral(a, b),
    }
}

fn promote_integral(a: DType, b: DType) -> DType {
    use DType::*;
    match (a, b) {
        // uint8 with a signed type: the signed type wide enough for both.
        (U8, I8) | (I8, U8) => I16,
        (U8, other) | (other, U8) => other,
        _ if a.size() >= b.size() => a,
        _ => b,
    }
}

/// An operand of type promotion: its dtype, whether it has dimensions, and whether it is a
/// wrapped Python number.
#[derive(Debug, Clone, Copy)]
pub struct PromotionOperand {
    pub dtype: DType,
    pub dim: usize,
    pub wrapped_number: bool,
}

/// `at::result_type`: tensors with dimensions outrank zero-dim tensors, which outrank wrapped
/// numbers; a lower rank counts only when it raises the category (a wrapped number then brings
/// the default dtype of its category, not its own). `combine_categories` in ATen's
/// TypeProperties.cpp, step for step.
pub fn result_type(operands: &[PromotionOperand]) -> Option<DType> {
    let mut ranks: [Option<DType>; 3] = [None, None, None];
    for o in operands {
        let (rank, dtype) = if o.wrapped_number {
            let d = match o.dtype.category() {
                Category::Floating => DType::DEFAULT_FLOAT,
                Category::Complex => DType::DEFAULT_FLOAT.to_complex(),
                _ => o.dtype,
            };
            (2, d)
        } else if o.dim == 0 {
            (1, o.dtype)
        } else {
            (0, o.dtype)
        };
        ranks[rank] = Some(ranks[rank].map_or(dtype, |d| promote(d, dtype)));
    }
    let [dim, zero, wrapped] = ranks;
    combine_categories(dim, combine_categories(zero, wrapped))
}

/// A lower-ranked dtype changes a higher-ranked one only when its category is higher (bool
/// promotes with anything); a float operand promoted to complex keeps its precision.
fn combine_categories(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    let (Some(h), Some(l)) = (higher, lower) else { return higher.or(lower) };
    Some(if h.is_complex() {
        h
    } else if l.is_complex() {
        if h.is_floating() { h.to_complex() } else { l }
    } else if h.is_floating() {
        h
    } else if h == DType::Bool || l.is_floating() {
        promote(h, l)
    } else {
        h
    })
}

/// `c10::canCast`: no cast to a lower category (complex to real, float to integral, non-bool to
/// bool).
pub fn can_cast(from: DType, to: DType) -> bool {
    from.category() <= to.category()
}

/// The error PyTorch raises when a result cannot be written to `out`.
pub fn check_can_cast(from: DType, to: DType) -> Result<()> {
    if can_cast(from, to) {
        Ok(())
    } else {
        Err(Error::runtime(format!(
            "result type {} can't be cast to the desired output type {}",
            from.name(),
            to.name()
        )))
    }
}

/// The dtype as ATen prints a `caffe2::TypeMeta` (`float`, `c10::BFloat16`...).
pub fn torch_name(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool",
        DType::U8 => "unsigned char",
        DType::I8 => "signed char",
        DType::I16 => "short int",
        DType::I32 => "int",
        DType::I64 => "long int",
        DType::F16 => "c10::Half",
        DType::BF16 => "c10::BFloat16",
        DType::F32 => "float",
        DType::F64 => "double",
        DType::C64 => "c10::complex<float>",
        DType::C128 => "c10::complex<double>",
    }
}

/// The error ATen's dispatch macros raise for a dtype without a kernel (NotImplementedError).
pub fn not_implemented(op: &str, d: DType) -> Error {
    Error::not_implemented(format!("\"{op}\" not implemented for '{}'", d.name()))
}

/// The dtype of a tensor, or the error for one the kernels do not compute in.
pub fn dtype_of(t: &TensorRef<'_>) -> Result<DType> {
    DType::from_scalar_type(t.dtype())
}

/// The dtype of a tensor a floating-point-only kernel reads, or ATen's NotImplementedError for
/// `op` with any other dtype.
pub fn float_dtype(t: &TensorRef<'_>, op: &str) -> Result<DType> {
    let d = dtype_of(t)?;
    if d.is_floating() { Ok(d) } else { Err(not_implemented(op, d)) }
}

/// An `out=` tensor must have the dtype the op computes (ATen's message).
pub fn check_out_dtype(out: &TensorRef<'_>, want: DType) -> Result<()> {
    let have = dtype_of(out)?;
    if have != want {
        return Err(Error::runtime(format!(
            "Expected out tensor to have dtype {}, but got {} instead",
            torch_name(want),
            torch_name(have)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturating_i64_is_the_as_conversion() {
        let edges = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -(i64::MIN as f64),
            f64::from_bits((-(i64::MIN as f64)).to_bits() - 1),
            i64::MIN as f64,
            f64::from_bits((i64::MIN as f64).to_bits() + 1),
            1e300,
            -1e300,
            -0.0,
            0.999_999,
            -0.999_999,
            2_147_483_648.5,
            -2_147_483_649.5,
        ];
        let spread = (0..200_000).map(|k| f64::from_bits(0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(k)));
        for f in edges.into_iter().chain(spread) {
            assert_eq!(saturating_i64(f), f as i64, "{f:e}");
        }
    }
    use DType::*;

    fn t(dtype: DType) -> PromotionOperand {
        PromotionOperand { dtype, dim: 1, wrapped_number: false }
    }
    fn zero_dim(dtype: DType) -> PromotionOperand {
        PromotionOperand { dtype, dim: 0, wrapped_number: false }
    }
    fn wrapped(dtype: DType) -> PromotionOperand {
        PromotionOperand { dtype, dim: 0, wrapped_number: true }
    }

    #[test]
    fn the_table_matches_c10() {
        for d in DType::ALL {
            assert_eq!(DType::from_code(d.code()), Some(*d));
            assert_eq!(DType::from_scalar_type(d.scalar_type()).unwrap(), *d);
        }
        assert_eq!((C64.size(), BF16.size(), C128.size()), (8, 2, 16));
        assert_eq!(DType::from_code(23), None, "Float8_e5m2 has no kernels");
        let err = DType::from_scalar_type(ScalarType(8)).unwrap_err().to_string();
        assert!(err.contains("do not compute in"), "{err}");
        let mut seen = 0;
        for d in DType::ALL {
            seen += crate::dispatch_all!(*d, |T| std::mem::size_of::<T>() == d.size()) as usize;
        }
        assert_eq!(seen, DType::ALL.len());
    }

    #[test]
    fn promotion_follows_pytorch() {
        // torch.promote_types
        assert_eq!(promote(U8, I8), I16);
        assert_eq!(promote(I32, I64), I64);
        assert_eq!(promote(Bool, I32), I32);
        assert_eq!(promote(F16, BF16), F32);
        assert_eq!(promote(I64, F16), F16);
        assert_eq!(promote(F64, C64), C128);
        assert_eq!(promote(F32, C64), C64);
        assert_eq!(promote(U8, U8), U8);
        // torch.result_type(x, 1) keeps x's dtype; torch.result_type(int_tensor, 2.5) is float32.
        assert_eq!(result_type(&[t(I32), wrapped(I64)]), Some(I32));
        assert_eq!(result_type(&[t(I32), wrapped(F64)]), Some(F32));
        assert_eq!(result_type(&[t(F16), wrapped(F64)]), Some(F16));
        assert_eq!(result_type(&[t(F32), zero_dim(F64)]), Some(F32));
        assert_eq!(result_type(&[t(I32), zero_dim(F64)]), Some(F64));
        assert_eq!(result_type(&[zero_dim(I64), wrapped(F64)]), Some(F32));
        assert_eq!(result_type(&[t(F32), wrapped(C128)]), Some(C64));
        assert_eq!(result_type(&[t(F64), zero_dim(C64)]), Some(C128));
        assert_eq!(result_type(&[t(Bool), wrapped(Bool)]), Some(Bool));
        assert_eq!(result_type(&[t(Bool), wrapped(I64)]), Some(I64));
        assert!(can_cast(I64, F32) && !can_cast(F32, I64) && !can_cast(C64, F64) && can_cast(Bool, U8));
        assert!(!can_cast(I32, Bool));
    }

    #[test]
    fn values_convert_as_static_cast() {
        assert_eq!(Num::Float(-2.7).as_i64(), -2);
        assert_eq!(Num::Int((1 << 53) + 1).as_f32(), ((1i64 << 53) + 1) as f32);
        assert!(Num::Complex(0.0, 1.0).as_bool());
        assert_eq!(Num::Complex(1.5, 2.0).as_f64(), 1.5);
        assert_eq!(Num::from_scalar(Scalar::Int(3)).to_scalar(), Scalar::Int(3));
    }
}
