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
        lanes: bool,
    );
    /// `out = f(a, b)` over `it`, with the kernel's two-input vector function as [`Float::unary`].
    fn binary(
        it: &Iter,
        f: impl Fn(Self::Acc, Self::Acc) -> Self::Acc + Sync + Copy,
        v32: Option<Vector2<f32>>,
        v64: Option<Vector2<f64>>,
        lanes: bool,
    );
    /// `out = f([a, b, ...])` over `it`, for `N` inputs of this type. `lanes` ([`lanes`] of the
    /// op's name): whether float16 runs may compute sixteen lanes in registers.
    fn nary<const N: usize>(it: &Iter, f: impl Fn([Self::Acc; N]) -> Self::Acc + Sync + Copy, lanes: bool);
}

impl Float for f32 {
    #[inline(always)]
    fn unary(
        it: &Iter,
        f: impl Fn(f32) -> f32 + Sync + Copy,
        v32: Option<Vector<f32>>,
        _: Option<Vector<f64>>,
        _: bool,
    ) {
        loops::unary_vec(it, f, v32)
    }
    #[inline(always)]
    fn binary(
        it: &Iter,
        f: impl Fn(f32, f32) -> f32 + Sync + Copy,
        v32: Option<Vector2<f32>>,
        _: Option<Vector2<f64>>,
        _: bool,
    ) {
        loops::binary_vec(it, f, v32)
    }
    #[inline(always)]
    fn nary<const N: usize>(it: &Iter, f: impl Fn([f32; N]) -> f32 + Sync + Copy, _: bool) {
        loops::nary::<f32, f32, N>(it, f)
    }
}

impl Float for f64 {
    #[inline(always)]
    fn unary(
        it: &Iter,
        f: impl Fn(f64) -> f64 + Sync + Copy,
        _: Option<Vector<f32>>,
        v64: Option<Vector<f64>>,
        _: bool,
    ) {
        loops::unary_vec(it, f, v64)
    }
    #[inline(always)]
    fn binary(
        it: &Iter,
        f: impl Fn(f64, f64) -> f64 + Sync + Copy,
        _: Option<Vector2<f32>>,
        v64: Option<Vector2<f64>>,
        _: bool,
    ) {
        loops::binary_vec(it, f, v64)
    }
    #[inline(always)]
    fn nary<const N: usize>(it: &Iter, f: impl Fn([f64; N]) -> f64 + Sync + Copy, _: bool) {
        loops::nary::<f64, f64, N>(it, f)
    }
}

macro_rules! half_float {
    ($($t:ty),*) => {$(
        impl Float for $t {
            #[inline(always)]
            fn unary(it: &Iter, f: impl Fn(f32) -> f32 + Sync + Copy, v32: Option<Vector<f32>>, _: Option<Vector<f64>>, lanes: bool) {
                loops::unary_widened::<$t>(it, f, v32, lanes)
            }
            #[inline(always)]
            fn binary(it: &Iter, f: impl Fn(f32, f32) -> f32 + Sync + Copy, v32: Option<Vector2<f32>>, _: Option<Vector2<f64>>, lanes: bool) {
                loops::binary_widened::<$t>(it, f, v32, lanes)
            }
            #[inline(always)]
            fn nary<const N: usize>(it: &Iter, f: impl Fn([f32; N]) -> f32 + Sync + Copy, lanes: bool) {
                loops::nary_widened::<$t, N>(it, f, lanes)
            }
        }
    )*};
}
half_float!(f16, bf16);

/// The rows whose float16 runs stay on `loops::widened`'s f32 buffers instead of computing
/// sixteen lanes in registers (`loops::lanes`), each with its reason: their scalar functions
/// branch on the argument, and where the compiler vectorises lanes rather than a loop a branch
/// stays a branch per lane (measured over 1M float16, 1 thread, against the buffers:
/// `special_i1e` 10x, `special_i1` 3.6x; the others 1.05-1.3x). A name ending in `_` is a
/// prefix. Every other row's scalar function is straight-line code or selects (`scalar::relu`
/// says how they are written); `crates/device/python/bench/bench_ufuncs.py` times every float16
/// ufunc against CPU's, where a row that branches shows as an outlier.
const BUFFERED: &[(&str, &str)] = &[
    ("special_", "most branch by range or loop; i0e, i1, i1e (selects) take f32's vector loop there"),
    ("digamma", "reflection below 0 and a series above 10"),
    ("polygamma", "digamma's branches, and zeta's loop"),
    ("sinc", "x == 0 around a call to sin"),
    ("igamma", "series or continued fraction by range"),
    ("igammac", "as igamma"),
    ("xlogy", "x == 0 and NaN cases around a call to ln"),
    ("nextafter", "integer steps on the bits, by sign (1.3x)"),
];

/// Whether op `name`'s float16 runs compute sixteen lanes in registers: not a `BUFFERED` row.
pub const fn lanes(name: &str) -> bool {
    let mut k = 0;
    while k < BUFFERED.len() {
        let (row, name) = (BUFFERED[k].0.as_bytes(), name.as_bytes());
        let prefix = row[row.len() - 1] == b'_';
        if (prefix && name.len() >= row.len() || name.len() == row.len()) && starts_with(name, row) {
            return false;
        }
        k += 1;
    }
    true
}

/// `name` starts with `row` (a const fn: `str::starts_with` is not one).
const fn starts_with(name: &[u8], row: &[u8]) -> bool {
    if name.len() < row.len() {
        return false;
    }
    let mut k = 0;
    while k < row.len() {
        if name[k] != row[k] {
            return false;
        }
        k += 1;
    }
    true
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_leaves_the_buffered_rows_by_name_and_prefix() {
        assert!(lanes("relu") && lanes("i0") && lanes("special") && lanes("sinc2"));
        assert!(!lanes("sinc") && !lanes("digamma") && !lanes("special_i1e") && !lanes("special_zeta"));
    }
}
