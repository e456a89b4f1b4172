//! The older native loop still in use: sum on [`View`]s of host memory (the reduction engine
//! replaces it; matrix products moved to `kernels::matmul`). Callers (the backend) check shapes and dtypes and
//! size the outputs; these loops only compute. Each has a generic strided path (values converted
//! through f64/i64) and a fast path for contiguous same-dtype float data.

use num_complex::Complex64;
use rayon::prelude::*;

use regen_runtime::view::{Category, DType, Value, View, for_each_offset, load, store};

/// `f32` and `f64` elements, for the contiguous fast paths.
trait Float: Copy {
    fn to(self) -> f64;
    fn from(v: f64) -> Self;
}
impl Float for f32 {
    fn to(self) -> f64 {
        <f64 as std::convert::From<f32>>::from(self)
    }
    fn from(v: f64) -> Self {
        v as f32
    }
}
impl Float for f64 {
    fn to(self) -> f64 {
        self
    }
    fn from(v: f64) -> Self {
        v
    }
}

/// Elementwise work at least this large is split across the machine's cores.
const PARALLEL_MIN: usize = 1 << 18;

/// The number of cores, asked once: `available_parallelism` reads cgroup files, which costs
/// tens of microseconds, more than a small op itself.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// # Safety
/// `v` is contiguous with `numel` readable (and, for outputs, writable) elements of `T`.
unsafe fn slice_of<'a, T>(v: &View) -> &'a mut [T] {
    // SAFETY: per the contract.
    unsafe { std::slice::from_raw_parts_mut(v.data.cast::<T>(), v.numel() as usize) }
}

/// Sums `a` over `dims` (already normalised, non-negative) into `out`, whose shape is `a`'s with
/// those dimensions removed, or kept as 1 when `keepdim`.
///
/// # Safety
/// As for [`binary`].
pub unsafe fn sum(a: &View, dims: &[usize], out: &View) {
    if a.is_contiguous() && out.is_contiguous() && a.dtype == out.dtype && matches!(a.dtype, DType::F32 | DType::F64) {
        // SAFETY: contiguous same-dtype views, per the contract.
        if unsafe { sum_contiguous(a, dims, out) } {
            return;
        }
    }
    let reduced: Vec<bool> = (0..a.dim()).map(|d| dims.contains(&d)).collect();
    let kept: Vec<i64> = a.sizes.iter().zip(&reduced).filter(|(_, r)| !**r).map(|(s, _)| *s).collect();
    let acc_strides_kept = regen_runtime::view::contiguous_strides(&kept);
    let mut acc_strides = Vec::with_capacity(a.dim());
    let mut k = 0;
    for &r in &reduced {
        if r {
            acc_strides.push(0);
        } else {
            acc_strides.push(acc_strides_kept[k]);
            k += 1;
        }
    }
    let n = kept.iter().product::<i64>() as usize;
    let category = out.dtype.category();
    let (floating, complex) = (category == Category::Floating, category == Category::Complex);
    let mut acc_f = vec![0f64; if floating { n } else { 0 }];
    let mut acc_c = vec![Complex64::new(0.0, 0.0); if complex { n } else { 0 }];
    let mut acc_i = vec![0i64; if floating || complex { 0 } else { n }];
    let ea = a.dtype.size() as isize;
    for_each_offset(&a.sizes, [&a.strides, &acc_strides], |[ia, iacc]| {
        // SAFETY: as above.
        let x = unsafe { load(a.dtype, a.data.offset(ia * ea)) };
        if floating {
            acc_f[iacc as usize] += x.as_f64();
        } else if complex {
            let (re, im) = x.as_complex();
            acc_c[iacc as usize] += Complex64::new(re, im);
        } else {
            acc_i[iacc as usize] += x.as_i64();
        }
    });
    // `out` has the kept sizes (plus 1s when keepdim): walk it in the same row-major order.
    let eo = out.dtype.size() as isize;
    let mut next = 0usize;
    for_each_offset(&out.sizes, [&out.strides], |[io]| {
        let v = if floating {
            Value::Float(acc_f[next])
        } else if complex {
            Value::Complex(acc_c[next].re, acc_c[next].im)
        } else {
            Value::Int(acc_i[next])
        };
        next += 1;
        // SAFETY: as above.
        unsafe { store(out.dtype, out.data.offset(io * eo), v) }
    });
}

/// Sum of a slice in f64 with eight independent accumulators (which the compiler vectorises).
fn sum_slice<T: Float + Send + Sync>(xs: &[T]) -> f64 {
    if xs.len() >= PARALLEL_MIN && cores() > 1 {
        // Partial sums of fixed chunks, added in order: the result does not depend on scheduling.
        let partial: Vec<f64> = xs.par_chunks(PARALLEL_MIN / 4).map(sum_slice_one_core).collect();
        return partial.iter().sum();
    }
    sum_slice_one_core(xs)
}

fn sum_slice_one_core<T: Float>(xs: &[T]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        return unsafe { sum_slice_avx2(xs) };
    }
    sum_slice_portable(xs)
}

/// The portable loop, compiled again with AVX2 enabled (the CPU is checked at run time).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn sum_slice_avx2<T: Float>(xs: &[T]) -> f64 {
    sum_slice_portable(xs)
}

#[inline(always)]
fn sum_slice_portable<T: Float>(xs: &[T]) -> f64 {
    let mut acc = [0f64; 8];
    let chunks = xs.chunks_exact(8);
    let tail: f64 = chunks.remainder().iter().map(|x| x.to()).sum();
    for c in chunks {
        for k in 0..8 {
            acc[k] += c[k].to();
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// Reductions over trailing or leading dimensions of contiguous float data: each output is the
/// sum of one contiguous block, or of one column of rows. Returns false for other layouts.
///
/// # Safety
/// As for [`sum`], with `a` and `out` contiguous and of the same float dtype.
unsafe fn sum_contiguous(a: &View, dims: &[usize], out: &View) -> bool {
    let ndim = a.dim();
    let r = dims.len();
    let trailing = (ndim - r..ndim).all(|d| dims.contains(&d));
    let leading = (0..r).all(|d| dims.contains(&d));
    let inner: usize = a.sizes[ndim - r..].iter().product::<i64>() as usize;
    let outer: usize = a.sizes[..r].iter().product::<i64>() as usize;
    fn run<T: Float + Send + Sync>(a: &[T], out: &mut [T], trailing: bool, inner: usize, outer: usize) {
        if trailing {
            for (o, block) in out.iter_mut().zip(a.chunks(inner.max(1))) {
                *o = T::from(sum_slice(block));
            }
            if inner == 0 {
                out.iter_mut().for_each(|o| *o = T::from(0.0));
            }
        } else {
            let width = out.len();
            let mut acc = vec![0f64; width];
            for row in a.chunks(width.max(1)).take(outer) {
                acc.iter_mut().zip(row).for_each(|(s, x)| *s += x.to());
            }
            out.iter_mut().zip(&acc).for_each(|(o, s)| *o = T::from(*s));
        }
    }
    if !trailing && !leading {
        return false;
    }
    // SAFETY: contiguous views of their numel elements, per the contract.
    unsafe {
        match a.dtype {
            DType::F32 => run::<f32>(slice_of(a), slice_of(out), trailing, inner, outer),
            _ => run::<f64>(slice_of(a), slice_of(out), trailing, inner, outer),
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use regen_runtime::view::contiguous_strides;

    fn view<T>(data: &mut [T], sizes: &[i64], dtype: DType) -> View {
        View { data: data.as_mut_ptr().cast(), sizes: sizes.to_vec(), strides: contiguous_strides(sizes), dtype }
    }

    #[test]
    fn parallel_sum_matches_a_naive_reference() {
        let mut big: Vec<f32> = (0..PARALLEL_MIN * 2 + 5).map(|i| (i % 10) as f32).collect();
        let expected: f64 = big.iter().map(|&x| x as f64).sum();
        let mut total = [0f32];
        let n_big = big.len() as i64;
        // SAFETY: as above.
        unsafe { sum(&view(&mut big, &[n_big], DType::F32), &[0], &view(&mut total, &[], DType::F32)) };
        assert_eq!(total[0] as f64, expected);
    }

    #[test]
    fn sum_of_integers() {
        let mut s = [0i64; 2];
        let mut ints = [1i32, 2, 3, 4, 5, 6];
        let vs = view(&mut s, &[2], DType::I64);
        // SAFETY: as above.
        unsafe { sum(&view(&mut ints, &[2, 3], DType::I32), &[1], &vs) };
        assert_eq!(s, [6, 15]);
    }
}
