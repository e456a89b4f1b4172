//! Typed elements for exact kernels: the Rust type of each dtype, the arithmetic PyTorch's CPU
//! kernels do in it, and a broadcasting binary loop that converts operands as CPU does.
//!
//! Computing every dtype through f64 is not exact: an int64 above 2^53 loses its low bits, a
//! complex number its imaginary part, and integers saturate where CPU's wrap. An [`Element`]
//! computes in its dtype's own arithmetic instead ([`Element::Math`], ATen's `opmath_type`), so a
//! kernel written once as a generic scalar function gives CPU's result in every dtype.

use std::num::Wrapping;
use std::ops::{Add, Mul, Sub};

pub use half::{bf16, f16};
pub use num_complex::Complex;

use crate::args::{Scalar, TensorRef};
use crate::bootstrap::with_size;
use crate::dtype::{DType, check_can_cast};
use crate::error::{Error, Result};
use crate::view::{View, broadcast_shapes, for_each_offset, load, store};

/// The element type of one dtype, and the arithmetic CPU computes it in.
pub trait Element: Copy + 'static {
    /// The dtype whose elements are `Self`.
    const DTYPE: DType;
    /// The type CPU computes in (`at::opmath_type`): f32 for float16 and bfloat16, which round
    /// once when stored; [`Wrapping`] integers, since CPU's integer arithmetic wraps around; 0/1
    /// for bool, stored as `!= 0` as C++ converts an integer to bool; the type itself otherwise.
    type Math: Copy + Add<Output = Self::Math> + Sub<Output = Self::Math> + Mul<Output = Self::Math>;
    fn to_math(self) -> Self::Math;
    fn from_math(m: Self::Math) -> Self;
    /// A Scalar argument (`alpha`) in this arithmetic, as CPU converts it: to the dtype first
    /// (`Scalar::to<scalar_t>()`, so float16's alpha is rounded to float16), with c10's error when
    /// the value does not fit. The caller checks its kind (no float alpha for integers: ATen's
    /// `alpha_check`).
    fn scalar(s: Scalar) -> Result<Self::Math>;
}

/// c10's `checked_convert` error (named by PyTorch's dtype name rather than the C++ type).
fn overflow(dtype: DType) -> Error {
    Error::runtime(format!("value cannot be converted to type {} without overflow", dtype.scalar_type()))
}

/// A real value for a floating dtype whose largest finite value is `max`: infinities and NaN
/// convert, finite values beyond `max` overflow (c10's `overflows` for floating types).
fn checked_real(v: f64, max: f64, dtype: DType) -> Result<f64> {
    if v.is_finite() && v.abs() > max { Err(overflow(dtype)) } else { Ok(v) }
}

macro_rules! integer {
    ($($t:ty => $dtype:ident),*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            type Math = Wrapping<$t>;
            fn to_math(self) -> Wrapping<$t> {
                Wrapping(self)
            }
            fn from_math(m: Wrapping<$t>) -> $t {
                m.0
            }
            fn scalar(s: Scalar) -> Result<Wrapping<$t>> {
                let i = match s {
                    Scalar::Int(i) => i128::from(i),
                    Scalar::Bool(b) => i128::from(b),
                    Scalar::Float(f) | Scalar::Complex(f, _) => f as i128,
                };
                // An unsigned type also takes negatives down to -MAX, which wrap (c10 allows
                // them so that `a - b` can be `a + MAX * b`).
                let (min, max) = (i128::from(<$t>::MIN), i128::from(<$t>::MAX));
                let min = if min == 0 { -max } else { min };
                if i < min || i > max {
                    return Err(overflow(Self::DTYPE));
                }
                Ok(Wrapping(i as $t))
            }
        }
    )*};
}
integer!(u8 => U8, i8 => I8, i16 => I16, i32 => I32, i64 => I64);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    type Math = Wrapping<u8>;
    fn to_math(self) -> Wrapping<u8> {
        Wrapping(u8::from(self))
    }
    fn from_math(m: Wrapping<u8>) -> bool {
        m.0 != 0
    }
    fn scalar(s: Scalar) -> Result<Wrapping<u8>> {
        Ok(Wrapping(u8::from(match s {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
            Scalar::Complex(re, im) => re != 0.0 || im != 0.0,
        })))
    }
}

/// The real part of a Scalar as f64 (c10's conversion of a complex to a real drops the imaginary
/// part; kernels refuse complex arguments for real dtypes before converting).
fn real(s: Scalar) -> f64 {
    match s {
        Scalar::Float(f) | Scalar::Complex(f, _) => f,
        Scalar::Int(i) => i as f64,
        Scalar::Bool(b) => f64::from(u8::from(b)),
    }
}

/// A Scalar as f32 the way C++ converts it (an integer straight to float, one rounding),
/// checked against `max`, the dtype's largest finite value.
fn real_f32(s: Scalar, max: f64, dtype: DType) -> Result<f32> {
    checked_real(real(s), max, dtype)?;
    Ok(match s {
        Scalar::Int(i) => i as f32,
        other => real(other) as f32,
    })
}

macro_rules! half_float {
    ($($t:ty => $dtype:ident),*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            type Math = f32;
            fn to_math(self) -> f32 {
                self.to_f32()
            }
            fn from_math(m: f32) -> $t {
                <$t>::from_f32(m)
            }
            fn scalar(s: Scalar) -> Result<f32> {
                Ok(<$t>::from_f32(real_f32(s, <$t>::MAX.to_f64(), Self::DTYPE)?).to_f32())
            }
        }
    )*};
}
half_float!(f16 => F16, bf16 => BF16);

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    type Math = f32;
    fn to_math(self) -> f32 {
        self
    }
    fn from_math(m: f32) -> f32 {
        m
    }
    fn scalar(s: Scalar) -> Result<f32> {
        real_f32(s, f64::from(f32::MAX), Self::DTYPE)
    }
}

impl Element for f64 {
    const DTYPE: DType = DType::F64;
    type Math = f64;
    fn to_math(self) -> f64 {
        self
    }
    fn from_math(m: f64) -> f64 {
        m
    }
    fn scalar(s: Scalar) -> Result<f64> {
        Ok(real(s))
    }
}

impl Element for Complex<f32> {
    const DTYPE: DType = DType::C64;
    type Math = Complex<f32>;
    fn to_math(self) -> Complex<f32> {
        self
    }
    fn from_math(m: Complex<f32>) -> Complex<f32> {
        m
    }
    fn scalar(s: Scalar) -> Result<Complex<f32>> {
        let max = f64::from(f32::MAX);
        Ok(match s {
            Scalar::Complex(re, im) => {
                Complex::new(checked_real(re, max, Self::DTYPE)? as f32, checked_real(im, max, Self::DTYPE)? as f32)
            }
            other => Complex::new(real_f32(other, max, Self::DTYPE)?, 0.0),
        })
    }
}

impl Element for Complex<f64> {
    const DTYPE: DType = DType::C128;
    type Math = Complex<f64>;
    fn to_math(self) -> Complex<f64> {
        self
    }
    fn from_math(m: Complex<f64>) -> Complex<f64> {
        m
    }
    fn scalar(s: Scalar) -> Result<Complex<f64>> {
        Ok(match s {
            Scalar::Complex(re, im) => Complex::new(re, im),
            other => Complex::new(real(other), 0.0),
        })
    }
}

/// Element `i` (in elements, under `v`'s strides) of `v` as a `T`, converted as CPU converts an
/// operand to the computation's dtype when `v` has another one.
///
/// # Safety
/// `v` describes a live tensor and `i` is the offset of one of its elements.
unsafe fn read<T: Element>(v: &View, i: isize) -> T {
    // SAFETY: per the contract; a T-sized buffer holds one element of T::DTYPE. A bool byte is
    // never read as a Rust bool (a tensor viewed as bool may hold any byte): `load` tests != 0.
    unsafe {
        let p = v.data.offset(i * v.dtype.size() as isize);
        if v.dtype == T::DTYPE && T::DTYPE != DType::Bool {
            return p.cast::<T>().read_unaligned();
        }
        let mut t = std::mem::MaybeUninit::<T>::uninit();
        store(T::DTYPE, t.as_mut_ptr().cast(), load(v.dtype, p));
        t.assume_init()
    }
}

/// Writes `x` to element `i` of `v`, converted to `v`'s dtype as CPU casts a result to `out`.
///
/// # Safety
/// As [`read`], and the element is writable.
unsafe fn write<T: Element>(v: &View, i: isize, x: T) {
    // SAFETY: per the contract.
    unsafe {
        let p = v.data.offset(i * v.dtype.size() as isize);
        if v.dtype == T::DTYPE {
            p.cast::<T>().write_unaligned(x);
        } else {
            store(v.dtype, p, load(T::DTYPE, std::ptr::from_ref(&x).cast()));
        }
    }
}

/// `out[i] = f(a[i], b[i])` over the broadcast shape of `a` and `b`, computed in `T` (the dtype
/// the caller chose, normally [`crate::view::result_type`] of the operands): operands of other
/// dtypes are converted to `T` first, the result to `out`'s dtype, which must be able to hold
/// `T` (PyTorch's "can't be cast to the desired output type" otherwise). `out` is resized to the
/// broadcast shape when its shape differs (that needs the host, i.e. a loaded backend).
pub fn binary<T: Element>(
    a: &TensorRef<'_>,
    b: &TensorRef<'_>,
    out: &TensorRef<'_>,
    f: impl Fn(T::Math, T::Math) -> T::Math,
) -> Result<()> {
    let (va, vb) = (View::of(a)?, View::of(b)?);
    check_can_cast(T::DTYPE, View::of(out)?.dtype)?;
    let shape = broadcast_shapes(&[&va.sizes, &vb.sizes])?;
    with_size(out, &shape, |out| {
        let vo = View::of(out)?;
        let (sa, sb) = (va.broadcast_strides(&shape), vb.broadcast_strides(&shape));
        for_each_offset(&shape, [&sa, &sb, &vo.strides], |[ia, ib, io]| {
            // SAFETY: the views describe live tensors and every offset is inside them. Each
            // element is read before it is written, so `out` may be `a` or `b` (in-place ops).
            unsafe {
                let (x, y) = (read::<T>(&va, ia).to_math(), read::<T>(&vb, ib).to_math());
                write(&vo, io, T::from_math(f(x, y)));
            }
        });
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element type has its dtype's size (`read`/`write` rely on it).
    #[test]
    fn element_types_have_their_dtype_size() {
        fn size<T: Element>() -> (usize, usize) {
            (std::mem::size_of::<T>(), T::DTYPE.size())
        }
        for (rust, dtype) in [
            size::<bool>(),
            size::<u8>(),
            size::<i8>(),
            size::<i16>(),
            size::<i32>(),
            size::<i64>(),
            size::<f16>(),
            size::<bf16>(),
            size::<f32>(),
            size::<f64>(),
            size::<Complex<f32>>(),
            size::<Complex<f64>>(),
        ] {
            assert_eq!(rust, dtype);
        }
    }

    #[test]
    fn arithmetic_is_the_dtypes_own() {
        let add = |x: i64, y: i64| i64::from_math(x.to_math() + i64::scalar(Scalar::Int(1)).unwrap() * y.to_math());
        assert_eq!(add(i64::MAX, 1), i64::MIN, "int64 wraps around as in C++");
        assert_eq!(add((1 << 62) + 1, 0), (1 << 62) + 1, "no f64 rounding");
        assert!(bool::from_math(true.to_math() + true.to_math()));
        let c = Complex::new(1.0f32, 2.0);
        let one = Complex::<f32>::scalar(Scalar::Int(1)).unwrap();
        assert_eq!(Complex::<f32>::from_math(c + one * c), Complex::new(2.0, 4.0));
        // float16 computes in float: 2048 + 3 * 1 = 2051 rounds once, to the even 2052.
        let (h, one) = (f16::from_f32(2048.0).to_math(), f16::from_f32(1.0).to_math());
        assert_eq!(f16::from_math(h + f16::scalar(Scalar::Int(3)).unwrap() * one), f16::from_f32(2052.0));
        assert_eq!(f32::scalar(Scalar::Int((1 << 40) + 1)).unwrap(), (1u64 << 40) as f32, "an integer rounds once");
    }

    /// Expectations from CPU in PyTorch 2.15 (`torch.add(a, b, alpha=...)`).
    #[test]
    fn scalars_convert_as_cpu_converts_alpha() {
        assert_eq!(f16::scalar(Scalar::Float(0.1)).unwrap(), f16::from_f64(0.1).to_f32(), "rounded to float16 first");
        assert_eq!(u8::scalar(Scalar::Int(-255)).unwrap(), Wrapping(1));
        for (e, dtype) in [
            (u8::scalar(Scalar::Int(-256)).unwrap_err(), "uint8"),
            (i8::scalar(Scalar::Int(300)).unwrap_err(), "int8"),
            (f16::scalar(Scalar::Float(1e10)).unwrap_err(), "float16"),
            (f32::scalar(Scalar::Float(1e300)).unwrap_err(), "float32"),
            (Complex::<f32>::scalar(Scalar::Complex(0.0, 1e300)).unwrap_err(), "complex64"),
        ] {
            assert_eq!(e.message(), format!("value cannot be converted to type {dtype} without overflow"));
        }
        assert_eq!(f32::scalar(Scalar::Float(f64::INFINITY)).unwrap(), f32::INFINITY);
        assert!(bool::scalar(Scalar::Int(2)).unwrap().0 != 0);
    }
}
