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
}
