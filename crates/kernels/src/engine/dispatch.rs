//! The one dtype → loop dispatch of the elementwise families, as candle's `Map1`/`Map2`: a kernel
//! says what it computes in each dtype domain (bool, integers, reals, complex), generic over the
//! element type, and [`dispatch`] picks the domain and the type from the dtype once for every op
//! (the unary, binary and pointwise tables and their predicates).

use half::{bf16, f16};
use regen_runtime::Result;

use crate::engine::dtype::{DType, Element, not_implemented};
use crate::engine::iter::Iter;
use crate::engine::loops::{self, Vector, Vector2};
use crate::engine::scalar::Real;

/// An integer element (u8 ... i64), computed through i64 as the op tables' `i` functions are.
pub trait Int: Element {
    fn to_i64(self) -> i64;
    /// Wraps around, as C++'s conversion does.
    fn from_i64(x: i64) -> Self;
}

macro_rules! int {
    ($($t:ty),*) => {$(
        impl Int for $t {
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn from_i64(x: i64) -> Self {
                x as $t
            }
        }
    )*};
}
int!(u8, i8, i16, i32, i64);

/// A real element, computed in its op-math type ([`Element::Acc`]: f32 for f16 and bf16). The
/// row's function is given over that type: float16 and bfloat16 runs are widened to f32 a chunk
/// at a time for it ([`loops::unary_widened`]).
pub trait Float: Element<Acc: Real> {
    /// `out = f(a)` over `it`, with the kernel's vector function (if it has one) for this type's
    /// runs: f32's for f32, float16 and bfloat16; f64's for f64.
    fn unary(
        it: &Iter,
        f: impl Fn(Self::Acc) -> Self::Acc + Sync + Copy,
        v32: Option<Vector<f32>>,
        v64: Option<Vector<f64>>,
    );
    /// `out = f(a, b)` over `it`, with the kernel's two-input vector function as [`Float::unary`].
    fn binary(
        it: &Iter,
        f: impl Fn(Self::Acc, Self::Acc) -> Self::Acc + Sync + Copy,
        v32: Option<Vector2<f32>>,
        v64: Option<Vector2<f64>>,
    );
    /// `out = f([a, b, ...])` over `it`, for `N` inputs of this type.
    fn nary<const N: usize>(it: &Iter, f: impl Fn([Self::Acc; N]) -> Self::Acc + Sync + Copy);
}

impl Float for f32 {
    #[inline(always)]
    fn unary(it: &Iter, f: impl Fn(f32) -> f32 + Sync + Copy, v32: Option<Vector<f32>>, _: Option<Vector<f64>>) {
        loops::unary_vec(it, f, v32)
    }
    #[inline(always)]
    fn binary(
        it: &Iter,
        f: impl Fn(f32, f32) -> f32 + Sync + Copy,
        v32: Option<Vector2<f32>>,
        _: Option<Vector2<f64>>,
    ) {
        loops::binary_vec(it, f, v32)
    }
    #[inline(always)]
    fn nary<const N: usize>(it: &Iter, f: impl Fn([f32; N]) -> f32 + Sync + Copy) {
        loops::nary::<f32, f32, N>(it, f)
    }
}

impl Float for f64 {
    #[inline(always)]
    fn unary(it: &Iter, f: impl Fn(f64) -> f64 + Sync + Copy, _: Option<Vector<f32>>, v64: Option<Vector<f64>>) {
        loops::unary_vec(it, f, v64)
    }
    #[inline(always)]
    fn binary(
        it: &Iter,
        f: impl Fn(f64, f64) -> f64 + Sync + Copy,
        _: Option<Vector2<f32>>,
        v64: Option<Vector2<f64>>,
    ) {
        loops::binary_vec(it, f, v64)
    }
    #[inline(always)]
    fn nary<const N: usize>(it: &Iter, f: impl Fn([f64; N]) -> f64 + Sync + Copy) {
        loops::nary::<f64, f64, N>(it, f)
    }
}

macro_rules! half_float {
    ($($t:ty),*) => {$(
        impl Float for $t {
            #[inline(always)]
            fn unary(it: &Iter, f: impl Fn(f32) -> f32 + Sync + Copy, v32: Option<Vector<f32>>, _: Option<Vector<f64>>) {
                loops::unary_widened::<$t>(it, f, v32)
            }
            #[inline(always)]
            fn binary(it: &Iter, f: impl Fn(f32, f32) -> f32 + Sync + Copy, v32: Option<Vector2<f32>>, _: Option<Vector2<f64>>) {
                loops::binary_widened::<$t>(it, f, v32)
            }
            #[inline(always)]
            fn nary<const N: usize>(it: &Iter, f: impl Fn([f32; N]) -> f32 + Sync + Copy) {
                loops::nary_widened::<$t, N>(it, f)
            }
        }
    )*};
}
half_float!(f16, bf16);

/// What an elementwise kernel computes in each dtype domain it has (the others are refused with
/// ATen's NotImplementedError, naming the op and the dtype). Each method runs the whole loop for
/// one element type; the kernel holds its iterator and parameters.
pub trait Domains {
    /// The op, for the refusal's message.
    const NAME: &'static str;
    const BOOL: bool;
    const INT: bool;
    const FLOAT: bool;
    const COMPLEX: bool;
    fn bool(&self) {
        unreachable!("checked by BOOL")
    }
    fn int<T: Int>(&self) {
        unreachable!("checked by INT")
    }
    fn float<T: Float>(&self) {
        unreachable!("checked by FLOAT")
    }
    /// Complex elements of real part `R` (`Complex<f32>` is complex64).
    fn complex<R: Real>(&self) {
        unreachable!("checked by COMPLEX")
    }
}

/// Runs `kernel` for `dtype`: the one match from dtype to element type.
pub fn dispatch<D: Domains>(kernel: &D, dtype: DType) -> Result<()> {
    match dtype {
        DType::Bool if D::BOOL => kernel.bool(),
        DType::U8 if D::INT => kernel.int::<u8>(),
        DType::I8 if D::INT => kernel.int::<i8>(),
        DType::I16 if D::INT => kernel.int::<i16>(),
        DType::I32 if D::INT => kernel.int::<i32>(),
        DType::I64 if D::INT => kernel.int::<i64>(),
        DType::F16 if D::FLOAT => kernel.float::<f16>(),
        DType::BF16 if D::FLOAT => kernel.float::<bf16>(),
        DType::F32 if D::FLOAT => kernel.float::<f32>(),
        DType::F64 if D::FLOAT => kernel.float::<f64>(),
        DType::C64 if D::COMPLEX => kernel.complex::<f32>(),
        DType::C128 if D::COMPLEX => kernel.complex::<f64>(),
        other => return Err(not_implemented(D::NAME, other)),
    }
    Ok(())
}
