//! The dtypes the engine computes with, written once: one table row per PyTorch dtype (Rust
//! type, `c10::ScalarType` code, name, category, accumulation type), the [`Element`] trait, the
//! [`dispatch!`](crate::dispatch) macro that turns a generic `f::<T>` into the per-dtype match,
//! and PyTorch's type promotion (`c10::promoteTypes`, `at::result_type`, `canCast`).

use half::{bf16, f16};
use num_complex::{Complex32, Complex64};
use regen_runtime::{Error, Result, Scalar, ScalarType};

/// Type-promotion category: bool < integral < floating < complex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    Bool,
    Integral,
    Floating,
    Complex,
}

/// A value in the widest domain of its category: how elements convert between dtypes
/// (`static_cast` semantics: float to int truncates, complex to real keeps the real part,
/// anything to bool is `!= 0`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    Bool(bool),
    Int(i64),
    Float(f64),
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
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Bool(b) => f64::from(u8::from(b)),
            Num::Int(i) => i as f64,
            Num::Float(f) | Num::Complex(f, _) => f,
        }
    }
    pub fn as_i64(self) -> i64 {
        match self {
            Num::Bool(b) => i64::from(b),
            Num::Int(i) => i,
            // `as` saturates where C++ would be undefined; NaN becomes 0.
            Num::Float(f) | Num::Complex(f, _) => f as i64,
        }
    }
    pub fn as_bool(self) -> bool {
        match self {
            Num::Bool(b) => b,
            Num::Int(i) => i != 0,
            Num::Float(f) => f != 0.0,
            Num::Complex(re, im) => re != 0.0 || im != 0.0,
        }
    }
    pub fn as_complex(self) -> (f64, f64) {
        match self {
            Num::Complex(re, im) => (re, im),
            other => (other.as_f64(), 0.0),
        }
    }
}

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
    ($($t:ty => $variant:ident),*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$variant;
            type Acc = f32;
            #[inline(always)]
            fn to_acc(self) -> f32 {
                self.to_f32()
            }
            #[inline(always)]
            fn from_acc(a: f32) -> Self {
                <$t>::from_f32(a)
            }
            #[inline(always)]
            fn to_num(self) -> Num {
                Num::Float(self.to_f64())
            }
            #[inline(always)]
            fn from_num(n: Num) -> Self {
                // Through f32, as c10::Half(float) rounds.
                <$t>::from_f32(n.as_f64() as f32)
            }
            fn zero() -> Self {
                <$t>::ZERO
            }
            fn one() -> Self {
                <$t>::ONE
            }
        }
    )*};
}
half_element!(f16 => F16, bf16 => BF16);

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

/// The table: every dtype the engine computes with, one row each.
macro_rules! dtype_table {
    ($($variant:ident: $ty:ty, code $code:literal, $name:literal, $category:ident;)*) => {
        /// A PyTorch dtype the engine computes with.
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

/// Runs `$body` with `$T` bound to the Rust type of `$dtype`.
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
        use $crate::engine::dtype::DType;
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
    pub fn from_scalar_type(t: ScalarType) -> Result<DType> {
        DType::from_code(t.0).ok_or_else(|| {
            Error::runtime(format!("the regen device has no kernels for ScalarType {} (convert the tensor first)", t.0))
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
    /// The complex dtype with this real part.
    pub fn to_complex(self) -> DType {
        match self {
            DType::F64 | DType::C128 => DType::C128,
            _ => DType::C64,
        }
    }
    /// `torch.get_default_dtype()` as the engine assumes it.
    pub const DEFAULT_FLOAT: DType = DType::F32;
}

/// `c10::promoteTypes` for the dtypes of the table.
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
            (F32, _) | (_, F32) => F32,
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
        _ => {
            if a.size() >= b.size() {
                a
            } else {
                b
            }
        }
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

fn combine_categories(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    let (Some(h), Some(l)) = (higher, lower) else { return higher.or(lower) };
    Some(if h.is_complex() {
        h
    } else if l.is_complex() {
        // Keep the higher operand's precision when it is floating.
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
    from.category() <= to.category() || to.category() == Category::Complex
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

/// The dtype as Python spells it (`float`, `c10::BFloat16`...): as ATen prints a `caffe2::TypeMeta`.
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

/// An `out=` tensor must have the dtype the op computes (ATen's message).
pub fn check_out_dtype(out: &regen_runtime::TensorRef<'_>, want: DType) -> Result<()> {
    let have = DType::from_scalar_type(out.dtype())?;
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
        }
        assert_eq!(C64.size(), 8);
        assert_eq!(BF16.size(), 2);
        assert_eq!(DType::from_code(23), None, "Float8_e5m2 has no kernels");
        let mut seen = 0;
        for d in DType::ALL {
            seen += dispatch_all!(*d, |T| std::mem::size_of::<T>() == d.size()) as usize;
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
}
