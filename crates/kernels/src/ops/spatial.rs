//! What pooling, resampling and antialiased resampling share about `[batch,] channel, spatial...`
//! tensors: their elements in op-math ([`Px`]), views of their memory (`View`), outputs laid
//! out like the input, and the geometry every upsampling mode starts from (`UpSample.h`).

use half::{bf16, f16};
use regen_runtime::args::MemoryFormat;
use regen_runtime::bootstrap::strides_for;
use regen_runtime::{Error, Result, Tensor, TensorRef};

use crate::engine::dtype::{DType, Element};
use crate::engine::scalar::Real;
use crate::ops::norm::suggest_format;

// ---------------------------------------------------------------------------------------------
// Elements
// ---------------------------------------------------------------------------------------------

/// A pooled element: [`Element`] (loaded into and stored from its op-math type `Acc`) extended
/// with pooling's own operations on that type.
pub trait Px: Element<Acc: PartialOrd> {
    /// The start of a max: -inf for floats, the lowest value for integers.
    fn lowest() -> Self::Acc;
    /// The start of a sum.
    fn acc_zero() -> Self::Acc;
    fn is_nan(a: Self::Acc) -> bool;
    fn add(a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// `a / n` as CPU divides an accumulator by an integer count.
    fn div(a: Self::Acc, n: i64) -> Self::Acc;
}

macro_rules! px_float {
    ($($t:ty => $a:ty),*) => {$(
        impl Px for $t {
            fn lowest() -> $a {
                <$a>::NEG_INFINITY
            }
            fn acc_zero() -> $a {
                0.0
            }
            #[inline(always)]
            fn is_nan(a: $a) -> bool {
                a.is_nan()
            }
            #[inline(always)]
            fn add(a: $a, b: $a) -> $a {
                a + b
            }
            #[inline(always)]
            fn div(a: $a, n: i64) -> $a {
                a / n as $a
            }
        }
    )*};
}

px_float!(f32 => f32, f64 => f64, f16 => f32, bf16 => f32);

macro_rules! px_int {
    ($($t:ty),*) => {$(
        impl Px for $t {
            fn lowest() -> $t {
                <$t>::MIN
            }
            fn acc_zero() -> $t {
                0
            }
            #[inline(always)]
            fn is_nan(_: $t) -> bool {
                false
            }
            #[inline(always)]
            fn add(a: $t, b: $t) -> $t {
                a.wrapping_add(b)
            }
            #[inline(always)]
            fn div(a: $t, n: i64) -> $t {
                (a as i64).wrapping_div(n) as $t
            }
        }
    )*};
}

px_int!(u8, i8, i16, i32, i64);

/// A float element's rounding of its op-math value (CPU's `scalar_t` arithmetic in backward).
#[inline(always)]
pub(crate) fn rd<T: Px>(a: T::Acc) -> T::Acc {
    T::from_acc(a).to_acc()
}

// ---------------------------------------------------------------------------------------------
// Tensors
// ---------------------------------------------------------------------------------------------

/// The sizes of a pooled or resampled tensor: `[n,] c, spatial...` (no batch dimension when the
/// input had none).
pub(crate) fn sizes_of(batched: bool, n: usize, c: usize, spatial: &[usize]) -> Vec<i64> {
    let lead = if batched { vec![n as i64, c as i64] } else { vec![c as i64] };
    lead.into_iter().chain(spatial.iter().map(|&v| v as i64)).collect()
}

/// A tensor's data and its strides as `[batch, channel, depth, height, width]` (0 for the
/// dimensions it lacks).
#[derive(Clone, Copy)]
pub(crate) struct View {
    pub(crate) ptr: usize,
    pub(crate) st: [isize; 5],
}

pub(crate) fn view(t: &TensorRef<'_>, nd: usize) -> View {
    let s = t.strides();
    let k = s.len();
    let mut st = [0isize; 5];
    st[0] = if k == nd + 2 { s[0] as isize } else { 0 };
    st[1] = s[k - nd - 1] as isize;
    for j in 0..nd {
        st[5 - nd + j] = s[k - nd + j] as isize;
    }
    View { ptr: t.data_ptr() as usize, st }
}

impl View {
    #[inline(always)]
    pub(crate) fn at(&self, b: usize, c: usize, d: usize, h: usize, w: usize) -> isize {
        b as isize * self.st[0]
            + c as isize * self.st[1]
            + d as isize * self.st[2]
            + h as isize * self.st[3]
            + w as isize * self.st[4]
    }
}

/// A contiguous copy of a lazily negated tensor (its data is not its values); `None` otherwise.
pub(crate) fn resolved(t: &TensorRef<'_>) -> Result<Option<Tensor>> {
    if !t.is_neg() {
        return Ok(None);
    }
    let c = crate::engine::iter::new_tensor(t.sizes(), DType::from_scalar_type(t.dtype())?)?;
    crate::ops::copy::copy_(c.as_ref(), *t)?;
    Ok(Some(c))
}

/// Strides of a new tensor of `sizes` in the memory format of `like` (CPU's outputs follow
/// the input's `suggest_memory_format`).
fn like_strides(like: &TensorRef<'_>, sizes: &[i64]) -> Vec<i64> {
    let fmt = suggest_format(like).filter(|f| {
        (*f == MemoryFormat::CHANNELS_LAST && sizes.len() == 4)
            || (*f == MemoryFormat::CHANNELS_LAST_3D && sizes.len() == 5)
    });
    strides_for(sizes, fmt)
}

pub(crate) fn new_like(like: &TensorRef<'_>, sizes: &[i64], dtype: DType) -> Result<Tensor> {
    regen_runtime::host::empty_strided(sizes, &like_strides(like, sizes), dtype.code())
}

// ---------------------------------------------------------------------------------------------
// Upsampling geometry
// ---------------------------------------------------------------------------------------------

#[inline(always)]
pub(crate) fn c<A: Real>(v: f64) -> A {
    A::from_f64(v)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Linear,
    Cubic,
}

/// An upsampling op's geometry: planes, spatial extents (a 1-d or 2-d op is a 3-d one with
/// leading extents of 1), and the rule's parameters.
#[derive(Clone, Debug)]
pub struct Up {
    pub(crate) kind: Kind,
    pub(crate) nd: usize,
    pub(crate) n: usize,
    pub(crate) c: usize,
    pub(crate) inp: [usize; 3],
    pub(crate) out: [usize; 3],
    pub(crate) align: bool,
    pub(crate) scales: [Option<f64>; 3],
}

impl Up {
    pub(crate) fn out_sizes(&self) -> Vec<i64> {
        let mut s = vec![self.n as i64, self.c as i64];
        s.extend(self.out[3 - self.nd..].iter().map(|&v| v as i64));
        s
    }
}

/// `upsample_{1,2,3}d_common_check` (`UpSample.h`), shared by every upsampling mode (nearest
/// too, in pool.rs): the ranks of the sizes, and every spatial size positive.
pub(crate) fn upsample_common_check(nd: usize, in_sizes: &[i64], output_size: &[i64]) -> Result<()> {
    if output_size.len() != nd {
        return Err(Error::runtime(format!(
            "It is expected output_size equals to {nd}, but got size {}",
            output_size.len()
        )));
    }
    if in_sizes.len() != nd + 2 {
        return Err(Error::runtime(format!(
            "It is expected input_size equals to {}, but got size {}",
            nd + 2,
            in_sizes.len()
        )));
    }
    let spatial = &in_sizes[2..];
    if spatial.iter().chain(output_size).any(|&v| v <= 0) {
        let names = &["D", "H", "W"][3 - nd..];
        let show = |v: &[i64]| names.iter().zip(v).map(|(n, x)| format!("{n}: {x}")).collect::<Vec<_>>().join(", ");
        let sep = if nd == 1 { " and" } else { "" };
        return Err(Error::runtime(format!(
            "Input and output sizes should be greater than 0, but got input ({}){sep} output ({})",
            show(spatial),
            show(output_size)
        )));
    }
    Ok(())
}

/// The plan of an upsampling (after `upsample_common_check`).
pub(crate) fn up_plan(
    kind: Kind,
    nd: usize,
    in_sizes: &[i64],
    output_size: &[i64],
    align: bool,
    scales: &[Option<f64>],
) -> Result<Up> {
    upsample_common_check(nd, in_sizes, output_size)?;
    let spatial = &in_sizes[2..];
    let mut inp = [1usize; 3];
    let mut out = [1usize; 3];
    let mut sc = [None; 3];
    for j in 0..nd {
        inp[3 - nd + j] = spatial[j] as usize;
        out[3 - nd + j] = output_size[j] as usize;
        sc[3 - nd + j] = scales.get(j).copied().flatten();
    }
    let (n, c) = (in_sizes[0].max(0) as usize, in_sizes[1].max(0) as usize);
    Ok(Up { kind, nd, n, c, inp, out, align, scales: sc })
}

/// `area_pixel_compute_scale`.
pub(crate) fn pixel_scale<A: Real>(inp: usize, out: usize, align: bool, scale: Option<f64>) -> A {
    if align {
        if out > 1 { c::<A>((inp - 1) as f64) / c::<A>((out - 1) as f64) } else { A::zero() }
    } else {
        match scale {
            Some(s) if s > 0.0 => c::<A>(1.0 / s),
            _ => c::<A>(inp as f64) / c::<A>(out as f64),
        }
    }
}

/// `guard_index_and_lambda`: the index through `floorf` (a double goes through float, as there).
pub(crate) fn guard<A: Real>(real: A, size: usize) -> (i64, A) {
    let i = ((real.to_f64() as f32).floor() as i64).min(size as i64 - 1);
    let l = (real - c::<A>(i as f64)).max(A::zero()).min(A::one());
    (i, l)
}
