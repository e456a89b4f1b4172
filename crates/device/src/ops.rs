//! The older native loops still in use: matmul on [`View`]s of host memory (the
//! GEMM engine replaces them). Callers (the backend) check shapes and dtypes and
//! size the outputs; these loops only compute. Each has a generic strided path (values converted
//! through f64/i64) and a fast path for contiguous same-dtype float data.

use num_complex::Complex64;
use rayon::prelude::*;

use regen_runtime::view::{Category, DType, Value, View, for_each_offset, load, store};

/// `f32` and `f64` elements, for the contiguous fast paths.
trait Float: Copy {
    fn from(v: f64) -> Self;
}
impl Float for f32 {
    fn from(v: f64) -> Self {
        v as f32
    }
}
impl Float for f64 {
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

/// Contiguous same-dtype float matrices: `out = a @ b` row by row (i-k-j order, which the
/// compiler vectorises), rows split across the cores for large products.
fn matmul_f<T: Float + Send + Sync + std::ops::AddAssign + std::ops::Mul<Output = T>>(
    a: &[T],
    b: &[T],
    out: &mut [T],
    (n, k, m): (usize, usize, usize),
) {
    if n * k * m < PARALLEL_MIN || cores() < 2 {
        return matmul_rows(a, b, out, 0, (k, m));
    }
    // Enough row blocks to balance the cores, each independent (no reduction across blocks).
    let per = n.div_ceil(cores() * 4).max(1);
    out.par_chunks_mut(per * m).enumerate().for_each(|(t, chunk)| matmul_rows(a, b, chunk, t * per, (k, m)));
}

/// Rows `first..` of `a @ b` into `out`.
fn matmul_rows<T: Float + std::ops::AddAssign + std::ops::Mul<Output = T>>(
    a: &[T],
    b: &[T],
    out: &mut [T],
    first: usize,
    km: (usize, usize),
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has AVX2 and FMA.
        return unsafe { matmul_rows_avx2(a, b, out, first, km) };
    }
    matmul_rows_portable(a, b, out, first, km)
}

/// The portable loop, compiled again with AVX2 and FMA enabled (checked at run time).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn matmul_rows_avx2<T: Float + std::ops::AddAssign + std::ops::Mul<Output = T>>(
    a: &[T],
    b: &[T],
    out: &mut [T],
    first: usize,
    km: (usize, usize),
) {
    matmul_rows_portable(a, b, out, first, km)
}

/// i-k-j order (the inner loop runs along rows of `b` and `out`, which vectorises), with `k`
/// taken in blocks so a block of `b`'s rows stays in cache across all rows of `out`.
#[inline(always)]
fn matmul_rows_portable<T: Float + std::ops::AddAssign + std::ops::Mul<Output = T>>(
    a: &[T],
    b: &[T],
    out: &mut [T],
    first: usize,
    (k, m): (usize, usize),
) {
    const K_BLOCK: usize = 64;
    out.iter_mut().for_each(|r| *r = T::from(0.0));
    for p0 in (0..k).step_by(K_BLOCK) {
        let p1 = (p0 + K_BLOCK).min(k);
        for (i, row) in out.chunks_mut(m.max(1)).enumerate() {
            let arow = &a[(first + i) * k..(first + i + 1) * k];
            for p in p0..p1 {
                let x = arow[p];
                let brow = &b[p * m..(p + 1) * m];
                row.iter_mut().zip(brow).for_each(|(r, &y)| *r += x * y);
            }
        }
    }
}

/// `out = beta * bias + alpha * (a @ b)` for matrices; `bias` (broadcast to `out`) is ignored
/// when `beta` is 0, as PyTorch does (so NaNs in it do not propagate).
///
/// # Safety
/// As for [`binary`]; `a` is n×k, `b` is k×m and `out` is n×m.
pub unsafe fn addmm(bias: Option<&View>, a: &View, b: &View, beta: Complex64, alpha: Complex64, out: &View) {
    let (n, k, m) = (a.sizes[0] as usize, a.sizes[1] as usize, b.sizes[1] as usize);
    let plain = bias.is_none() && alpha == Complex64::new(1.0, 0.0);
    for dtype in [DType::F32, DType::F64] {
        if plain && [a, b, out].iter().all(|v| v.dtype == dtype && v.is_contiguous()) {
            // SAFETY: contiguous views of n×k, k×m and n×m elements, per the contract.
            unsafe {
                match dtype {
                    DType::F32 => matmul_f::<f32>(slice_of(a), slice_of(b), slice_of(out), (n, k, m)),
                    _ => matmul_f::<f64>(slice_of(a), slice_of(b), slice_of(out), (n, k, m)),
                }
            }
            return;
        }
    }
    // Gather both operands into contiguous complex f64 rows (the imaginary parts stay 0 for real
    // dtypes), then accumulate row by row (i-k-j order).
    let gather = |v: &View| -> Vec<Complex64> {
        let mut buf = Vec::with_capacity(v.numel() as usize);
        let e = v.dtype.size() as isize;
        for_each_offset(&v.sizes, [&v.strides], |[i]| {
            // SAFETY: as above.
            let (re, im) = unsafe { load(v.dtype, v.data.offset(i * e)) }.as_complex();
            buf.push(Complex64::new(re, im))
        });
        buf
    };
    let (av, bv) = (gather(a), gather(b));
    let mut acc = vec![Complex64::new(0.0, 0.0); n * m];
    for i in 0..n {
        let row = &mut acc[i * m..(i + 1) * m];
        for p in 0..k {
            let x = av[i * k + p];
            if x == Complex64::new(0.0, 0.0) {
                continue;
            }
            let brow = &bv[p * m..(p + 1) * m];
            row.iter_mut().zip(brow).for_each(|(r, y)| *r += x * y);
        }
    }
    let bias_values = bias.filter(|_| beta != Complex64::new(0.0, 0.0)).map(|bias| {
        let sb = bias.broadcast_strides(&out.sizes);
        let e = bias.dtype.size() as isize;
        let mut values = Vec::with_capacity(n * m);
        for_each_offset(&out.sizes, [&sb], |[i]| {
            // SAFETY: as above.
            let (re, im) = unsafe { load(bias.dtype, bias.data.offset(i * e)) }.as_complex();
            values.push(Complex64::new(re, im))
        });
        values
    });
    let category = out.dtype.category();
    let eo = out.dtype.size() as isize;
    let mut next = 0;
    for_each_offset(&out.sizes, [&out.strides], |[io]| {
        let mut v = acc[next] * alpha;
        if let Some(bias) = &bias_values {
            v += bias[next] * beta;
        }
        next += 1;
        let value = match category {
            Category::Complex => Value::Complex(v.re, v.im),
            Category::Floating => Value::Float(v.re),
            _ => Value::Int(v.re as i64),
        };
        // SAFETY: as above.
        unsafe { store(out.dtype, out.data.offset(io * eo), value) }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use regen_runtime::view::contiguous_strides;

    fn view<T>(data: &mut [T], sizes: &[i64], dtype: DType) -> View {
        View { data: data.as_mut_ptr().cast(), sizes: sizes.to_vec(), strides: contiguous_strides(sizes), dtype }
    }

    #[test]
    fn blocked_parallel_matmul_matches_a_naive_reference() {
        // Large enough for k-blocking (k > 64) and for the parallel paths.
        let (n, k, m) = (70usize, 130usize, 33usize);
        let mut a: Vec<f32> = (0..n * k).map(|i| ((i * 7919) % 97) as f32 / 13.0 - 3.0).collect();
        let mut b: Vec<f32> = (0..k * m).map(|i| ((i * 104729) % 89) as f32 / 11.0 - 4.0).collect();
        let mut out = vec![0f32; n * m];
        let vo = view(&mut out, &[n as i64, m as i64], DType::F32);
        // SAFETY: the views describe the local vectors.
        unsafe {
            addmm(
                None,
                &view(&mut a, &[n as i64, k as i64], DType::F32),
                &view(&mut b, &[k as i64, m as i64], DType::F32),
                Complex64::new(0.0, 0.0),
                Complex64::new(1.0, 0.0),
                &vo,
            )
        };
        for i in 0..n {
            for j in 0..m {
                let expected: f64 = (0..k).map(|p| (a[i * k + p] as f64) * (b[p * m + j] as f64)).sum();
                assert!(((out[i * m + j] as f64) - expected).abs() < 1e-3 * expected.abs().max(1.0), "{i},{j}");
            }
        }
    }

    #[test]
    fn matmul_with_bias() {
        let mut m1 = [1f32, 2., 3., 4.];
        let mut m2 = [5f32, 6., 7., 8.];
        let mut bias = [10f32, 20.];
        let mut r = [0f32; 4];
        let vr = view(&mut r, &[2, 2], DType::F32);
        // SAFETY: as above.
        unsafe {
            addmm(
                Some(&view(&mut bias, &[2], DType::F32)),
                &view(&mut m1, &[2, 2], DType::F32),
                &view(&mut m2, &[2, 2], DType::F32),
                Complex64::new(1.0, 0.0),
                Complex64::new(2.0, 0.0),
                &vr,
            )
        };
        assert_eq!(r, [48., 64., 96., 120.]);
    }
}
