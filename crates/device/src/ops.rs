//! The native compute kernels, on [`View`]s of host memory. Callers (the backend) check shapes
//! and dtypes and size the outputs; these loops only compute. Each has a generic strided path
//! (values converted through f64/i64) and a fast path for contiguous same-dtype float data.

use rayon::prelude::*;

use regen_runtime::view::{Category, DType, Value, View, for_each_offset, load, store};
use regen_runtime::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    Div,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unary {
    Neg,
    Abs,
    Exp,
    Log,
    Sqrt,
    Sigmoid,
    Tanh,
    Relu,
}

impl Unary {
    /// Ops whose result is floating even for integral input (`torch.exp(int_tensor)` is float).
    pub fn is_floating(self) -> bool {
        matches!(self, Unary::Exp | Unary::Log | Unary::Sqrt | Unary::Sigmoid | Unary::Tanh)
    }

    fn f(self, x: f64) -> f64 {
        match self {
            Unary::Neg => -x,
            Unary::Abs => x.abs(),
            Unary::Exp => x.exp(),
            Unary::Log => x.ln(),
            Unary::Sqrt => x.sqrt(),
            Unary::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Unary::Tanh => x.tanh(),
            Unary::Relu => {
                if x > 0.0 || x.is_nan() {
                    x
                } else {
                    0.0
                }
            }
        }
    }

    fn i(self, x: i64) -> i64 {
        match self {
            Unary::Neg => x.wrapping_neg(),
            Unary::Abs => x.wrapping_abs(),
            Unary::Relu => x.max(0),
            _ => unreachable!("floating unary ops compute in f64"),
        }
    }
}

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

/// Runs `f` over matching chunks of `out` and the inputs, on rayon's pool for large work
/// (a persistent pool: spawning threads per op cost more than a 4 MB op).
fn par_chunks<T: Send + Sync, U: Send>(inputs: &[&[T]], out: &mut [U], f: impl Fn(&[&[T]], &mut [U]) + Sync) {
    if out.len() < PARALLEL_MIN || cores() < 2 {
        return f(inputs, out);
    }
    let chunk = out.len().div_ceil(cores() * 4).max(PARALLEL_MIN / 4);
    out.par_chunks_mut(chunk).enumerate().for_each(|(k, out_chunk)| {
        let range = k * chunk..(k * chunk + out_chunk.len());
        let parts: Vec<&[T]> = inputs.iter().map(|i| &i[range.clone()]).collect();
        f(&parts, out_chunk);
    });
}

/// # Safety
/// `v` is contiguous with `numel` readable (and, for outputs, writable) elements of `T`.
unsafe fn slice_of<'a, T>(v: &View) -> &'a mut [T] {
    // SAFETY: per the contract.
    unsafe { std::slice::from_raw_parts_mut(v.data.cast::<T>(), v.numel() as usize) }
}

fn same_contiguous(views: &[&View], dtype: DType) -> bool {
    let shape = &views[0].sizes;
    views.iter().all(|v| v.dtype == dtype && v.is_contiguous() && &v.sizes == shape)
}

fn binary_f<T: Float + Send + Sync>(op: Binary, alpha: f64, a: &[T], b: &[T], out: &mut [T]) {
    par_chunks(&[a, b], out, |ins, out| binary_chunk(op, alpha, ins[0], ins[1], out));
}

fn binary_chunk<T: Float>(op: Binary, alpha: f64, a: &[T], b: &[T], out: &mut [T]) {
    match op {
        Binary::Add if alpha == 1.0 => {
            out.iter_mut().zip(a.iter().zip(b)).for_each(|(o, (x, y))| *o = T::from(x.to() + y.to()))
        }
        Binary::Add => {
            out.iter_mut().zip(a.iter().zip(b)).for_each(|(o, (x, y))| *o = T::from(x.to() + alpha * y.to()))
        }
        Binary::Sub => {
            out.iter_mut().zip(a.iter().zip(b)).for_each(|(o, (x, y))| *o = T::from(x.to() - alpha * y.to()))
        }
        Binary::Mul => out.iter_mut().zip(a.iter().zip(b)).for_each(|(o, (x, y))| *o = T::from(x.to() * y.to())),
        Binary::Div => out.iter_mut().zip(a.iter().zip(b)).for_each(|(o, (x, y))| *o = T::from(x.to() / y.to())),
    }
}

/// `out = a op (alpha *) b`, with `a` and `b` broadcast to `out`'s shape and converted to its dtype.
///
/// # Safety
/// Every view describes live memory; `out` is writable and does not partially overlap the inputs.
pub unsafe fn binary(op: Binary, a: &View, b: &View, alpha: Value, out: &View) -> Result<()> {
    for dtype in [DType::F32, DType::F64] {
        if same_contiguous(&[a, b, out], dtype) {
            // SAFETY: contiguous views of `numel` elements of the dtype, per the contract.
            unsafe {
                match dtype {
                    DType::F32 => binary_f::<f32>(op, alpha.as_f64(), slice_of(a), slice_of(b), slice_of(out)),
                    _ => binary_f::<f64>(op, alpha.as_f64(), slice_of(a), slice_of(b), slice_of(out)),
                }
            }
            return Ok(());
        }
    }
    let shape = &out.sizes;
    let (sa, sb) = (a.broadcast_strides(shape), b.broadcast_strides(shape));
    let category = if op == Binary::Div { Category::Floating } else { out.dtype.category() };
    if category == Category::Bool && op == Binary::Sub {
        return Err(Error::runtime(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.",
        ));
    }
    let (ea, eb, eo) = (a.dtype.size() as isize, b.dtype.size() as isize, out.dtype.size() as isize);
    for_each_offset(shape, [&sa, &sb, &out.strides], |[ia, ib, io]| {
        // SAFETY: offsets stay within each view's extent, per the contract.
        unsafe {
            let x = load(a.dtype, a.data.offset(ia * ea));
            let y = load(b.dtype, b.data.offset(ib * eb));
            let r = match category {
                Category::Floating => {
                    let (x, y, al) = (x.as_f64(), y.as_f64(), alpha.as_f64());
                    Value::Float(match op {
                        Binary::Add => x + al * y,
                        Binary::Sub => x - al * y,
                        Binary::Mul => x * y,
                        Binary::Div => x / y,
                    })
                }
                Category::Integral => {
                    let (x, y, al) = (x.as_i64(), y.as_i64(), alpha.as_i64());
                    Value::Int(match op {
                        Binary::Add => x.wrapping_add(al.wrapping_mul(y)),
                        Binary::Sub => x.wrapping_sub(al.wrapping_mul(y)),
                        Binary::Mul => x.wrapping_mul(y),
                        Binary::Div => unreachable!("division computes in floating point"),
                    })
                }
                Category::Bool => Value::Bool(match op {
                    Binary::Add => x.as_bool() || (alpha.as_bool() && y.as_bool()),
                    _ => x.as_bool() && y.as_bool(),
                }),
            };
            store(out.dtype, out.data.offset(io * eo), r);
        }
    });
    Ok(())
}

/// `out = op(a)`, elementwise, `a` broadcast to `out`'s shape.
///
/// # Safety
/// As for [`binary`].
pub unsafe fn unary(op: Unary, a: &View, out: &View) -> Result<()> {
    for dtype in [DType::F32, DType::F64] {
        if same_contiguous(&[a, out], dtype) {
            fn run<T: Float + Send + Sync>(op: Unary, a: &[T], out: &mut [T]) {
                par_chunks(&[a], out, |ins, out| {
                    out.iter_mut().zip(ins[0]).for_each(|(o, x)| *o = T::from(op.f(x.to())))
                });
            }
            // SAFETY: contiguous views of `numel` elements, per the contract.
            unsafe {
                match dtype {
                    DType::F32 => run::<f32>(op, slice_of(a), slice_of(out)),
                    _ => run::<f64>(op, slice_of(a), slice_of(out)),
                }
            }
            return Ok(());
        }
    }
    let floating = op.is_floating() || out.dtype.category() == Category::Floating;
    if !floating && out.dtype == DType::Bool && op == Unary::Neg {
        return Err(Error::runtime(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
        ));
    }
    let sa = a.broadcast_strides(&out.sizes);
    let (ea, eo) = (a.dtype.size() as isize, out.dtype.size() as isize);
    for_each_offset(&out.sizes, [&sa, &out.strides], |[ia, io]| {
        // SAFETY: as above.
        unsafe {
            let x = load(a.dtype, a.data.offset(ia * ea));
            let r = if floating {
                Value::Float(op.f(x.as_f64()))
            } else if out.dtype == DType::Bool {
                // abs and relu of a bool are the bool itself.
                Value::Bool(x.as_bool())
            } else {
                Value::Int(op.i(x.as_i64()))
            };
            store(out.dtype, out.data.offset(io * eo), r);
        }
    });
    Ok(())
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
    let n: i64 = kept.iter().product();
    let floating = out.dtype.category() == Category::Floating;
    let mut acc_f = vec![0f64; if floating { n as usize } else { 0 }];
    let mut acc_i = vec![0i64; if floating { 0 } else { n as usize }];
    let ea = a.dtype.size() as isize;
    for_each_offset(&a.sizes, [&a.strides, &acc_strides], |[ia, iacc]| {
        // SAFETY: as above.
        let x = unsafe { load(a.dtype, a.data.offset(ia * ea)) };
        if floating {
            acc_f[iacc as usize] += x.as_f64();
        } else {
            acc_i[iacc as usize] += x.as_i64();
        }
    });
    // `out` has the kept sizes (plus 1s when keepdim): walk it in the same row-major order.
    let eo = out.dtype.size() as isize;
    let mut next = 0usize;
    for_each_offset(&out.sizes, [&out.strides], |[io]| {
        let v = if floating { Value::Float(acc_f[next]) } else { Value::Int(acc_i[next]) };
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
pub unsafe fn addmm(bias: Option<&View>, a: &View, b: &View, beta: f64, alpha: f64, out: &View) {
    let (n, k, m) = (a.sizes[0] as usize, a.sizes[1] as usize, b.sizes[1] as usize);
    let plain = bias.is_none() && alpha == 1.0;
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
    // Gather both operands into contiguous f64 rows, then accumulate row by row (i-k-j order).
    let gather = |v: &View| -> Vec<f64> {
        let mut buf = Vec::with_capacity(v.numel() as usize);
        let e = v.dtype.size() as isize;
        for_each_offset(&v.sizes, [&v.strides], |[i]| {
            // SAFETY: as above.
            buf.push(unsafe { load(v.dtype, v.data.offset(i * e)) }.as_f64())
        });
        buf
    };
    let (av, bv) = (gather(a), gather(b));
    let mut acc = vec![0f64; n * m];
    for i in 0..n {
        let row = &mut acc[i * m..(i + 1) * m];
        for p in 0..k {
            let x = av[i * k + p];
            if x == 0.0 {
                continue;
            }
            let brow = &bv[p * m..(p + 1) * m];
            row.iter_mut().zip(brow).for_each(|(r, y)| *r += x * y);
        }
    }
    let bias_values = bias.filter(|_| beta != 0.0).map(|bias| {
        let sb = bias.broadcast_strides(&out.sizes);
        let e = bias.dtype.size() as isize;
        let mut values = Vec::with_capacity(n * m);
        for_each_offset(&out.sizes, [&sb], |[i]| {
            // SAFETY: as above.
            values.push(unsafe { load(bias.dtype, bias.data.offset(i * e)) }.as_f64())
        });
        values
    });
    let integral = out.dtype.category() != Category::Floating;
    let eo = out.dtype.size() as isize;
    let mut next = 0;
    for_each_offset(&out.sizes, [&out.strides], |[io]| {
        let mut v = alpha * acc[next];
        if let Some(bias) = &bias_values {
            v += beta * bias[next];
        }
        next += 1;
        let value = if integral { Value::Int(v as i64) } else { Value::Float(v) };
        // SAFETY: as above.
        unsafe { store(out.dtype, out.data.offset(io * eo), value) }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use regen_runtime::bootstrap::copy;
    use regen_runtime::view::contiguous_strides;

    fn view<T>(data: &mut [T], sizes: &[i64], dtype: DType) -> View {
        View { data: data.as_mut_ptr().cast(), sizes: sizes.to_vec(), strides: contiguous_strides(sizes), dtype }
    }

    #[test]
    fn broadcast_binary_with_mixed_dtypes_and_alpha() {
        let mut a = [1i32, 2, 3, 4, 5, 6];
        let mut b = [0.5f64, 1.5, 2.5];
        let mut out = [0f32; 6];
        let (va, vb, vo) =
            (view(&mut a, &[2, 3], DType::I32), view(&mut b, &[3], DType::F64), view(&mut out, &[2, 3], DType::F32));
        // SAFETY: the views describe the local arrays.
        unsafe { binary(Binary::Sub, &va, &vb, Value::Int(2), &vo).unwrap() };
        assert_eq!(out, [0.0, -1.0, -2.0, 3.0, 2.0, 1.0]);
    }

    #[test]
    fn non_contiguous_inputs_and_fast_path_agree() {
        let mut a = [1f32, 2., 3., 4., 5., 6.];
        let mut t = [0f32; 6];
        let mut out = [0f32; 6];
        // The transpose of a 2x3 matrix, as a strided view.
        let at = View { data: a.as_mut_ptr().cast(), sizes: vec![3, 2], strides: vec![1, 3], dtype: DType::F32 };
        let (vt, vo) = (view(&mut t, &[3, 2], DType::F32), view(&mut out, &[3, 2], DType::F32));
        // SAFETY: as above.
        unsafe {
            copy(&at, &vt);
            binary(Binary::Mul, &at, &vt, Value::Int(1), &vo).unwrap();
        }
        assert_eq!(t, [1., 4., 2., 5., 3., 6.]);
        assert_eq!(out, [1., 16., 4., 25., 9., 36.]);
    }

    #[test]
    fn blocked_parallel_matmul_and_sum_match_a_naive_reference() {
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
                0.0,
                1.0,
                &vo,
            )
        };
        for i in 0..n {
            for j in 0..m {
                let expected: f64 = (0..k).map(|p| (a[i * k + p] as f64) * (b[p * m + j] as f64)).sum();
                assert!(((out[i * m + j] as f64) - expected).abs() < 1e-3 * expected.abs().max(1.0), "{i},{j}");
            }
        }
        let mut big: Vec<f32> = (0..PARALLEL_MIN * 2 + 5).map(|i| (i % 10) as f32).collect();
        let expected: f64 = big.iter().map(|&x| x as f64).sum();
        let mut total = [0f32];
        let n_big = big.len() as i64;
        // SAFETY: as above.
        unsafe { sum(&view(&mut big, &[n_big], DType::F32), &[0], &view(&mut total, &[], DType::F32)) };
        assert_eq!(total[0] as f64, expected);
    }

    #[test]
    fn unary_sum_and_matmul() {
        let mut a = [-1f64, 0., 2., -3.];
        let mut out = [0f64; 4];
        let (va, vo) = (view(&mut a, &[2, 2], DType::F64), view(&mut out, &[2, 2], DType::F64));
        // SAFETY: as above.
        unsafe { unary(Unary::Relu, &va, &vo).unwrap() };
        assert_eq!(out, [0., 0., 2., 0.]);
        let mut s = [0i64; 2];
        let mut ints = [1i32, 2, 3, 4, 5, 6];
        let vs = view(&mut s, &[2], DType::I64);
        // SAFETY: as above.
        unsafe { sum(&view(&mut ints, &[2, 3], DType::I32), &[1], &vs) };
        assert_eq!(s, [6, 15]);
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
                1.0,
                2.0,
                &vr,
            )
        };
        assert_eq!(r, [48., 64., 96., 120.]);
    }
}
