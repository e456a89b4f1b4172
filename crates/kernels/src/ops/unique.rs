//! Unique and histogram ops: `_unique`, `_unique2`, `unique_consecutive`, `unique_dim`,
//! `unique_dim_consecutive`, `histc` and `bincount`, ATen's CPU algorithms (`Unique.cpp`,
//! `SummaryOps.cpp`, `Histogram.cpp`, `cpu/HistogramKernel.cpp`) step for step wherever their
//! order shows in a result. CPU's unique sorts with libstdc++'s `std::sort`, which is not stable:
//! which of several NaNs gets which inverse index, and whether -0.0 or 0.0 represents zero, are
//! that algorithm's, so such inputs sort with [`stl::sort`], its
//! move-for-move copy (otherwise equal elements are indistinguishable and any fast sort gives the
//! same result). `histc` counts per chunk of `at::parallel_for` in the input's dtype, as CPU does,
//! so float16/bfloat16 counts saturate per chunk exactly as CPU's.
//!
//! The histogram ops live here rather than on `reduce.rs`'s `Reducer` engine: they scatter into
//! a data-dependent number of bins (a reduction *by value*, not along dimensions), and their
//! results depend on per-chunk accumulators in the input dtype that the engine does not model.

use regen_runtime::bootstrap::with_size;
use regen_runtime::{Error, Result, Scalar, Tensor, TensorRef};

use crate::dispatch;
use crate::engine::dtype::{DType, Element, Num, not_implemented, torch_name};
use crate::engine::iter::{contiguous_strides, is_contiguous, new_tensor, wrap_dim};
use crate::math::stl;
use crate::ops::shape::fmt_g;

// ---------------------------------------------------------------------------------------------
// Shared pieces.

/// The values elements are compared as: integers and bool as i64, floats as f64 (both exact, so
/// `<`, `>` and `==` are those of the element type, NaN unordered, -0.0 == 0.0).
trait Value: Copy + PartialOrd + Send + Sync {
    fn of(n: Num) -> Self;
    fn is_nan(self) -> bool;
    /// Whether equal values can differ in their bits (NaN, -0.0), which is when the order of
    /// CPU's unstable sort shows in a result.
    fn tie_shows(self) -> bool;
}

impl Value for i64 {
    fn of(n: Num) -> i64 {
        n.as_i64()
    }
    fn is_nan(self) -> bool {
        false
    }
    fn tie_shows(self) -> bool {
        false
    }
}

impl Value for f64 {
    fn of(n: Num) -> f64 {
        n.as_f64()
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn tie_shows(self) -> bool {
        self.is_nan() || (self == 0.0 && self.is_sign_negative())
    }
}

/// The tensor's elements in row-major order: `t` itself when contiguous, else a contiguous copy
/// (held in `holder`), as ATen's `contiguous()` / `reshape` give its kernels.
fn row_major<'a>(t: TensorRef<'a>, holder: &'a mut Option<Tensor>) -> Result<TensorRef<'a>> {
    if is_contiguous(t.sizes(), t.strides()) {
        return Ok(t);
    }
    let copy = new_tensor(t.sizes(), DType::from_scalar_type(t.dtype())?)?;
    crate::ops::copy::copy_(copy.as_ref(), t)?;
    Ok(holder.insert(copy).as_ref())
}

/// The elements of a row-major tensor as a slice (empty without touching its pointer).
///
/// # Safety
/// `t` is contiguous with elements of type `T`, alive and unaliased by writers while the slice is.
unsafe fn elements<'a, T>(t: &TensorRef<'a>) -> &'a [T] {
    let n = t.numel().max(0) as usize;
    if n == 0 {
        return &[];
    }
    // SAFETY: per the contract.
    unsafe { std::slice::from_raw_parts(t.data_ptr().cast::<T>(), n) }
}

/// A new contiguous tensor's elements to write.
///
/// # Safety
/// `t` is a new contiguous tensor of `T`s, not otherwise accessed while the slice is alive.
unsafe fn elements_mut<'a, T>(t: TensorRef<'a>) -> &'a mut [T] {
    let n = t.numel().max(0) as usize;
    if n == 0 {
        return &mut [];
    }
    // SAFETY: per the contract.
    unsafe { std::slice::from_raw_parts_mut(t.data_ptr().cast::<T>(), n) }
}

fn long(sizes: &[i64]) -> Result<Tensor> {
    new_tensor(sizes, DType::I64)
}

/// The three results of the unique ops: values, inverse indices, counts.
pub type Unique = (Tensor, Tensor, Tensor);

fn real_dtype(t: &TensorRef<'_>, op: &str) -> Result<DType> {
    let dtype = DType::from_scalar_type(t.dtype())?;
    if dtype.is_complex() {
        return Err(not_implemented(op, dtype));
    }
    Ok(dtype)
}

// ---------------------------------------------------------------------------------------------
// unique over all elements.

/// `torch._unique2(self, sorted, return_inverse, return_counts)` (and `_unique`): CPU always sorts,
/// whatever `sorted` says (its comment: sorting is faster than a hash table), so the values come
/// out ascending, NaNs last and each NaN its own value. The inverse has `self`'s shape when asked
/// for and is empty otherwise; so are the counts.
pub fn unique(t: TensorRef<'_>, return_inverse: bool, return_counts: bool) -> Result<Unique> {
    let dtype = real_dtype(&t, "unique")?;
    let mut holder = None;
    let src = row_major(t, &mut holder)?;
    let inverse = long(if return_inverse { t.sizes() } else { &[0] })?;
    if t.numel() == 0 {
        return Ok((new_tensor(&[0], dtype)?, inverse, long(&[0])?));
    }
    // SAFETY: a new contiguous i64 tensor.
    let inv = if return_inverse { Some(unsafe { elements_mut::<i64>(inverse.as_ref()) }) } else { None };
    if dtype == DType::Bool {
        // SAFETY: `src` is row-major bool.
        return unique_bool(unsafe { elements::<bool>(&src) }, inv, return_counts).map(|(v, c)| (v, inverse, c));
    }
    let (values, counts) = dispatch!(dtype, [U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| {
        // SAFETY: `src` is row-major `T`.
        let x = unsafe { elements::<T>(&src) };
        if dtype.is_floating() { unique_sorted::<T, f64>(x, inv, return_counts) } else { unique_sorted::<T, i64>(x, inv, return_counts) }
    }, else unreachable!())?;
    Ok((values, inverse, counts))
}

/// CPU's bool kernel: false first, then true, whichever occur.
fn unique_bool(x: &[bool], inv: Option<&mut [i64]>, return_counts: bool) -> Result<(Tensor, Tensor)> {
    let trues = x.iter().filter(|&&b| b).count() as i64;
    let falses = x.len() as i64 - trues;
    let present: Vec<(bool, i64)> = [(false, falses), (true, trues)].into_iter().filter(|p| p.1 > 0).collect();
    let values = new_tensor(&[present.len() as i64], DType::Bool)?;
    let counts = long(&[if return_counts { present.len() as i64 } else { 0 }])?;
    // SAFETY: new contiguous tensors of these types.
    let (v, c) = unsafe { (elements_mut::<bool>(values.as_ref()), elements_mut::<i64>(counts.as_ref())) };
    for (k, &(b, n)) in present.iter().enumerate() {
        v[k] = b;
        if return_counts {
            c[k] = n;
        }
    }
    if let Some(inv) = inv {
        let true_index = i64::from(falses > 0);
        inv.iter_mut().zip(x).for_each(|(i, &b)| *i = if b { true_index } else { 0 });
    }
    Ok((values, counts))
}

/// The positions of `x` in the order of CPU's `flatten().sort()`: libstdc++'s `std::sort` on
/// (value, index) pairs comparing values (NaN greatest) when ties can show, any sort otherwise.
fn sorted_order<V: Value>(v: &[V]) -> Vec<usize> {
    let mut pairs: Vec<(V, usize)> = v.iter().copied().zip(0..).collect();
    if v.iter().any(|x| x.tie_shows()) {
        stl::sort(&mut pairs, &mut |a: &(V, usize), b: &(V, usize)| a.0 < b.0 || (!a.0.is_nan() && b.0.is_nan()));
    } else {
        // No NaN: the order is total.
        pairs.sort_unstable_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    }
    pairs.into_iter().map(|p| p.1).collect()
}

/// `unique_cpu_sorted_template`: the sorted elements, a new value wherever one differs from the
/// one before (`!=`, so every NaN is new), the inverse of each original position, the counts.
fn unique_sorted<T: Element, V: Value>(
    x: &[T],
    inv: Option<&mut [i64]>,
    return_counts: bool,
) -> Result<(Tensor, Tensor)> {
    let v: Vec<V> = x.iter().map(|e| V::of(e.to_num())).collect();
    let order = sorted_order(&v);
    // The first sorted position of each value.
    let starts: Vec<usize> = (0..order.len()).filter(|&i| i == 0 || v[order[i]] != v[order[i - 1]]).collect();
    let values = new_tensor(&[starts.len() as i64], T::DTYPE)?;
    // SAFETY: a new contiguous tensor of `T`.
    let out = unsafe { elements_mut::<T>(values.as_ref()) };
    for (o, &s) in out.iter_mut().zip(&starts) {
        *o = x[order[s]];
    }
    if let Some(inv) = inv {
        let mut group = 0;
        for (i, &p) in order.iter().enumerate() {
            if group + 1 < starts.len() && starts[group + 1] == i {
                group += 1;
            }
            inv[p] = group as i64;
        }
    }
    let counts = long(&[if return_counts { starts.len() as i64 } else { 0 }])?;
    if return_counts {
        // SAFETY: a new contiguous i64 tensor.
        let c = unsafe { elements_mut::<i64>(counts.as_ref()) };
        for (g, c) in c.iter_mut().enumerate() {
            *c = (starts.get(g + 1).copied().unwrap_or(order.len()) - starts[g]) as i64;
        }
    }
    Ok((values, counts))
}

// ---------------------------------------------------------------------------------------------
// unique_consecutive.

/// `torch.unique_consecutive(self, return_inverse, return_counts, dim)`: over all elements in
/// row-major order when `dim` is None (or 0 of a 1-d tensor), else over slices along `dim`.
pub fn unique_consecutive(
    t: TensorRef<'_>,
    return_inverse: bool,
    return_counts: bool,
    dim: Option<i64>,
) -> Result<Unique> {
    if let Some(d) = dim
        && !(d == 0 && t.dim() == 1)
    {
        return unique_dim(t, d, true);
    }
    let dtype = real_dtype(&t, "unique")?;
    let mut holder = None;
    let src = row_major(t, &mut holder)?;
    let inverse = long(if return_inverse { t.sizes() } else { &[0] })?;
    if t.numel() == 0 {
        return Ok((new_tensor(&[0], dtype)?, inverse, long(&[0])?));
    }
    // SAFETY: a new contiguous i64 tensor.
    let mut inv = if return_inverse { Some(unsafe { elements_mut::<i64>(inverse.as_ref()) }) } else { None };
    let (values, counts) = dispatch!(dtype, [Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| {
        // SAFETY: `src` is row-major `T`.
        let x = unsafe { elements::<T>(&src) };
        let v: Vec<f64> = if dtype.is_floating() { x.iter().map(|e| e.to_num().as_f64()).collect() } else { Vec::new() };
        let differs = |i: usize| if dtype.is_floating() { v[i] != v[i - 1] } else { x[i].to_num().as_i64() != x[i - 1].to_num().as_i64() };
        let mut starts = vec![0usize];
        for i in 1..x.len() {
            if differs(i) {
                starts.push(i);
            }
            if let Some(inv) = inv.as_mut() {
                inv[i] = starts.len() as i64 - 1;
            }
        }
        if let Some(inv) = inv.as_mut() {
            inv[0] = 0;
        }
        let values = new_tensor(&[starts.len() as i64], dtype)?;
        // SAFETY: a new contiguous tensor of `T`.
        unsafe { elements_mut::<T>(values.as_ref()) }.iter_mut().zip(&starts).for_each(|(o, &s)| *o = x[s]);
        let counts = long(&[if return_counts { starts.len() as i64 } else { 0 }])?;
        if return_counts {
            // SAFETY: a new contiguous i64 tensor.
            let c = unsafe { elements_mut::<i64>(counts.as_ref()) };
            for (g, c) in c.iter_mut().enumerate() {
                *c = (starts.get(g + 1).copied().unwrap_or(x.len()) - starts[g]) as i64;
            }
        }
        (values, counts)
    }, else unreachable!());
    Ok((values, inverse, counts))
}

// ---------------------------------------------------------------------------------------------
// unique along a dimension.

/// `unique_dim` (sorted) and `unique_dim_consecutive`: the slices along `dim`, compared
/// lexicographically (`<` then `>` per element, so a NaN compares as neither) and sorted with
/// libstdc++'s `std::sort` unless consecutive; a new value wherever a slice is not elementwise
/// equal (`==`) to the group's first. CPU returns the inverse (one per slice) and the counts
/// whatever the flags say; the values are a permuted view of a contiguous `[groups, rest...]`.
pub fn unique_dim(t: TensorRef<'_>, dim: i64, consecutive: bool) -> Result<Unique> {
    let dtype = real_dtype(&t, "unique_dim")?;
    if t.dim() == 0 {
        return Err(Error::index(format!("Dimension specified as {dim} but tensor has no dimensions")));
    }
    let d = wrap_dim(dim, t.dim())?;
    let sizes = t.sizes();
    let zero_dims = sizes.iter().filter(|&&s| s == 0).count();
    if sizes[d] == 0 {
        if zero_dims != 1 {
            return Err(Error::runtime(
                "Number of zero sized dimensions is more than one, so unique cannot be applied ",
            ));
        }
        return Ok((new_tensor(sizes, dtype)?, long(&[0])?, long(&[0])?));
    }
    if zero_dims > 0 {
        return Err(Error::runtime(
            "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied",
        ));
    }
    let n = sizes[d] as usize;
    // The offsets of one slice's elements (the other dimensions in order), row-major.
    let other: Vec<usize> = (0..sizes.len()).filter(|&k| k != d).collect();
    let mut offsets = vec![0isize];
    for &k in &other {
        let step = t.strides()[k] as isize;
        offsets = offsets.iter().flat_map(|&o| (0..sizes[k] as isize).map(move |i| o + i * step)).collect();
    }
    let m = offsets.len();
    let row_stride = t.strides()[d] as isize;
    let base = t.data_ptr().cast::<u8>();
    let e = dtype.size();
    let read = |r: usize, j: usize| -> *const u8 {
        // SAFETY: slice r < n, element j < m: inside the tensor.
        unsafe { base.offset((r as isize * row_stride + offsets[j]) * e as isize) }
    };
    let (order, starts) = dispatch!(dtype, [Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| {
        let num = |r: usize, j: usize| -> Num {
            // SAFETY: see `read`.
            unsafe { read(r, j).cast::<T>().read_unaligned() }.to_num()
        };
        if dtype.is_floating() { group_slices::<f64>(n, m, consecutive, num) } else { group_slices::<i64>(n, m, consecutive, num) }
    }, else unreachable!());
    // Values: the groups' first slices, laid out as CPU's `stack(...).moveaxis(0, dim)`.
    let groups = starts.len();
    let mut moved: Vec<i64> = vec![groups as i64];
    moved.extend(other.iter().map(|&k| sizes[k]));
    let moved_strides = contiguous_strides(&moved);
    let mut out_sizes = sizes.to_vec();
    out_sizes[d] = groups as i64;
    let mut out_strides = vec![0i64; sizes.len()];
    out_strides[d] = moved_strides[0];
    for (i, &k) in other.iter().enumerate() {
        out_strides[k] = moved_strides[i + 1];
    }
    let values = regen_runtime::host::empty_strided(&out_sizes, &out_strides, dtype.code())?;
    let dst = values.as_ref().data_ptr().cast::<u8>();
    for (g, &s) in starts.iter().enumerate() {
        for j in 0..m {
            // SAFETY: group g < groups, element j < m of the new `[groups, m]` storage.
            unsafe { std::ptr::copy_nonoverlapping(read(order[s], j), dst.add((g * m + j) * e), e) };
        }
    }
    let inverse = long(&[n as i64])?;
    let counts = long(&[groups as i64])?;
    // SAFETY: new contiguous i64 tensors.
    let (inv, cnt) = unsafe { (elements_mut::<i64>(inverse.as_ref()), elements_mut::<i64>(counts.as_ref())) };
    let mut group = 0;
    for (i, &r) in order.iter().enumerate() {
        if group + 1 < groups && starts[group + 1] == i {
            group += 1;
        }
        inv[r] = group as i64;
    }
    for (g, c) in cnt.iter_mut().enumerate() {
        *c = (starts.get(g + 1).copied().unwrap_or(n) - starts[g]) as i64;
    }
    Ok((values, inverse, counts))
}

/// The slices' order (sorted unless consecutive) and the first position of each group in it.
fn group_slices<V: Value>(
    n: usize,
    m: usize,
    consecutive: bool,
    num: impl Fn(usize, usize) -> Num,
) -> (Vec<usize>, Vec<usize>) {
    let rows: Vec<V> = (0..n).flat_map(|r| (0..m).map(move |j| (r, j))).map(|(r, j)| V::of(num(r, j))).collect();
    let row = |r: usize| &rows[r * m..(r + 1) * m];
    let mut order: Vec<usize> = (0..n).collect();
    if !consecutive {
        stl::sort(&mut order, &mut |&a: &usize, &b: &usize| {
            for (x, y) in row(a).iter().zip(row(b)) {
                if x < y {
                    return true;
                }
                if x > y {
                    return false;
                }
            }
            false
        });
    }
    let mut starts = vec![0usize];
    for i in 1..n {
        let first = order[starts[starts.len() - 1]];
        if !row(order[i]).iter().zip(row(first)).all(|(x, y)| x == y) {
            starts.push(i);
        }
    }
    (order, starts)
}

// ---------------------------------------------------------------------------------------------
// histc.

/// The dtype's largest finite value, as `c10::checked_convert` bounds a Scalar converted to it.
fn finite_max(d: DType) -> f64 {
    match d {
        DType::F16 => 65504.0,
        DType::BF16 => half::bf16::MAX.to_f64(),
        DType::F32 => f64::from(f32::MAX),
        _ => f64::MAX,
    }
}

/// `x` rounded to dtype `d` the way one of its C++ operations rounds: float16 and bfloat16
/// compute in float and round the result (from f64 the float rounding is exact, the inputs being
/// floats), float in float, double in double.
#[inline(always)]
fn round_to(d: DType, x: f64) -> f64 {
    match d {
        DType::F64 => x,
        DType::F32 => f64::from(x as f32),
        DType::F16 => half::f16::from_f32(x as f32).to_f64(),
        _ => half::bf16::from_f32(x as f32).to_f64(),
    }
}

/// The largest count a dtype's `+= 1` reaches: then `x + 1` rounds back to `x`.
fn saturation(d: DType) -> u64 {
    match d {
        DType::F16 => 1 << 11,
        DType::BF16 => 1 << 8,
        DType::F32 => 1 << 24,
        _ => 1 << 53,
    }
}

/// `aminmax` of the elements as doubles. With a NaN both are NaN: CPU's vectorised reduction
/// returns its all-ones NaN (printed `-nan`), which bfloat16 rounds to a positive NaN; a single
/// element is returned as it is.
fn data_range<T: Element>(x: &[T]) -> (f64, f64) {
    let v = |e: &T| e.to_num().as_f64();
    if let [only] = x {
        return (v(only), v(only));
    }
    let (lo, hi) = x.iter().map(v).fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), e| {
        if e.is_nan() || lo.is_nan() { (f64::NAN, f64::NAN) } else { (lo.min(e), hi.max(e)) }
    });
    if lo.is_nan() {
        let nan = if T::DTYPE == DType::BF16 { f64::NAN } else { -f64::NAN };
        return (nan, nan);
    }
    (lo, hi)
}

/// `histc_select_outer_bin_edges`: `min`/`max`, or the data's range when they are equal, widened
/// when that is empty (float and double to the next representable value or by 1, whichever is
/// wider; other dtypes by 1).
fn histc_range(
    dtype: DType,
    numel: i64,
    min: Scalar,
    max: Scalar,
    data_range: impl FnOnce() -> (f64, f64),
) -> Result<(f64, f64)> {
    let (mut lo, mut hi) = (min.to_f64(), max.to_f64());
    if lo == hi && numel > 0 {
        if dtype.is_complex() {
            return Err(Error::type_error(format!("aminmax not implemented for {}", dtype.name())));
        }
        (lo, hi) = data_range();
    }
    if lo == hi {
        match dtype {
            DType::F64 => (lo, hi) = (next_down(lo).min(lo - 1.0), next_up(hi).max(hi + 1.0)),
            DType::F32 => {
                let (l, h) = (lo as f32, hi as f32);
                let down = if l == f32::MIN || l.is_nan() { l } else { l.next_down() };
                let up = if h == f32::MAX || h.is_nan() { h } else { h.next_up() };
                (lo, hi) = (f64::from(down).min(lo - 1.0), f64::from(up).max(hi + 1.0));
            }
            _ => (lo, hi) = (lo - 1.0, hi + 1.0),
        }
    }
    if !lo.is_finite() || !hi.is_finite() {
        return Err(Error::runtime(format!("torch.histc: range of [{}, {}] is not finite", fmt_g(lo), fmt_g(hi))));
    }
    if lo >= hi {
        return Err(Error::runtime("torch.histc: max must be larger than min"));
    }
    Ok((lo, hi))
}

/// `std::nexttoward(x, lowest())` for doubles: the next smaller value (lowest stays).
fn next_down(x: f64) -> f64 {
    if x == f64::MIN || x.is_nan() { x } else { x.next_down() }
}

fn next_up(x: f64) -> f64 {
    if x == f64::MAX || x.is_nan() { x } else { x.next_up() }
}

/// The bin of `v` among `bins` between the edges `[left, right, bins, right - left]`:
/// `(v - left) * bins / (right - left)` with `round` after each operation, truncated. A quotient
/// that is NaN or out of int64's range converts to INT64_MIN (x86's `cvttss2si`), whose offset
/// wraps to bin 0 in CPU's kernel; any other bin outside the histogram is skipped (CPU would
/// write outside it).
#[inline(always)]
fn locate<F>(v: F, [left, right, scale, width]: [F; 4], bins: usize, round: impl Fn(F) -> F) -> Option<usize>
where
    F: Copy
        + PartialOrd
        + std::ops::Sub<Output = F>
        + std::ops::Mul<Output = F>
        + std::ops::Div<Output = F>
        + Into<f64>,
{
    if !(v >= left && v <= right) {
        return None;
    }
    let q: f64 = round(round(round(v - left) * scale) / width).into();
    let pos = if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&q) { q as i64 } else { i64::MIN };
    match pos {
        i64::MIN => Some(0),
        p if p == bins as i64 => Some(bins - 1),
        p if (0..bins as i64).contains(&p) => Some(p as usize),
        _ => None,
    }
}

/// `torch.histc(self, bins, min, max, out=)`: ATen's `histogram_histc_out` with the
/// `LINEAR_INTERPOLATION` kernel. The bin of `x` is `(x - lo) * bins / (hi - lo)` in the input
/// dtype's arithmetic, truncated; the last bin includes `hi`; values outside `[lo, hi]` and NaN
/// are skipped (see `locate` for quotients out of range).
pub fn histc_out(t: TensorRef<'_>, bins: i64, min: Scalar, max: Scalar, out: TensorRef<'_>) -> Result<()> {
    let dtype = DType::from_scalar_type(t.dtype())?;
    let hist_dtype = DType::from_scalar_type(out.dtype())?;
    if dtype != hist_dtype {
        return Err(Error::runtime(format!(
            "torch.histogram: input tensor and hist tensor should have the same dtype, but got input {} and hist {}",
            torch_name(dtype),
            torch_name(hist_dtype)
        )));
    }
    if bins <= 0 {
        return Err(Error::runtime(format!("torch.histogram(): bins must be > 0, but got {bins} for dimension 0")));
    }
    with_size(&out, &[bins], |out| {
        let mut holder = None;
        let src = row_major(t, &mut holder)?;
        let (lo, hi) = histc_range(dtype, t.numel(), min, max, || {
            // SAFETY: `src` is row-major of its (real: complex fails first) dtype.
            dispatch!(dtype, [Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| data_range(unsafe {
                elements::<T>(&src)
            }), else (0.0, 0.0))
        })?;
        match dtype {
            DType::Bool => return Err(not_implemented("linspace_cpu", dtype)),
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {}
            _ => return Err(not_implemented("histogram_cpu", dtype)),
        }
        for v in [lo, hi] {
            if v.abs() > finite_max(dtype) {
                return Err(Error::runtime(format!(
                    "value cannot be converted to type {} without overflow",
                    torch_name(dtype)
                )));
            }
        }
        let o = out.data_ptr().cast::<u8>();
        let stride = out.strides()[0] as isize;
        dispatch!(dtype, [F16, BF16, F32, F64], |T| {
            // SAFETY: `src` is row-major `T`.
            let counts = histc_counts(unsafe { elements::<T>(&src) }, bins as usize, lo, hi);
            for (b, &c) in counts.iter().enumerate() {
                // SAFETY: bin b < bins of the resized `out`.
                unsafe { o.cast::<T>().offset(b as isize * stride).write_unaligned(T::from_num(Num::Float(c))) };
            }
        }, else unreachable!());
        Ok(())
    })
}

/// The histogram, as CPU's kernel sums it: each chunk of `at::parallel_for(0, n, 200)` (the same
/// chunks on the runtime's pool) counts in the dtype (saturating), and the chunks add up in
/// float (double for double), rounded to the dtype once.
fn histc_counts<T: Element>(x: &[T], bins: usize, lo: f64, hi: f64) -> Vec<f64> {
    let dtype = T::DTYPE;
    // The edges linspace gives: the Scalars in the dtype, or NaN when its step overflows the
    // opmath type (float for float16/bfloat16/float).
    let (lo_t, hi_t) = (round_to(dtype, lo), round_to(dtype, hi));
    let opmath = if dtype == DType::F64 { DType::F64 } else { DType::F32 };
    let step = round_to(opmath, round_to(opmath, hi_t - lo_t) / round_to(opmath, bins as f64));
    let (left, right) = if step.is_finite() { (lo_t, hi_t) } else { (f64::NAN, f64::NAN) };
    let bins_t = round_to(dtype, bins as f64);
    let width = round_to(dtype, right - left);
    let chunks = std::sync::Mutex::new(Vec::<(usize, Vec<u64>)>::new());
    regen_runtime::host::parallel_for(x.len(), 200, |begin, end| {
        let mut local = vec![0u64; bins];
        let x = &x[begin..end];
        let edges = [left, right, bins_t, width];
        let mut add = |b: Option<usize>| {
            if let Some(b) = b {
                local[b] += 1;
            }
        };
        // Float and double compute natively (each operation rounds as C++'s does); float16 and
        // bfloat16 in double, rounded after each operation.
        let f = |v: &T| v.to_num().as_f64();
        match dtype {
            DType::F32 => {
                let e = edges.map(|v| v as f32);
                x.iter().for_each(|v| add(locate(f(v) as f32, e, bins, |q| q)));
            }
            DType::F64 => x.iter().for_each(|v| add(locate(f(v), edges, bins, |q| q))),
            _ => x.iter().for_each(|v| add(locate(f(v), edges, bins, |q| round_to(dtype, q)))),
        }
        chunks.lock().unwrap_or_else(|e| e.into_inner()).push((begin, local));
    });
    let mut chunks = chunks.into_inner().unwrap_or_else(|e| e.into_inner());
    chunks.sort_by_key(|c| c.0);
    let cap = saturation(dtype);
    let mut sums = vec![0.0f64; bins];
    for (_, local) in &chunks {
        for (s, &c) in sums.iter_mut().zip(local) {
            *s = round_to(opmath, *s + c.min(cap) as f64);
        }
    }
    sums.iter().map(|&s| round_to(dtype, s)).collect()
}

// ---------------------------------------------------------------------------------------------
// bincount.

/// `torch.bincount(self, weights, minlength)`: SummaryOps.cpp's checks in its order; counts as
/// int64, or sums of float weights in float and of any other weights in double, in index order.
pub fn bincount(t: TensorRef<'_>, weights: Option<TensorRef<'_>>, minlength: i64) -> Result<Tensor> {
    let dtype = DType::from_scalar_type(t.dtype())?;
    if !matches!(dtype, DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64) {
        return Err(not_implemented("bincount_cpu", dtype));
    }
    if minlength < 0 {
        return Err(Error::runtime("minlength should be >= 0"));
    }
    let weights = weights.filter(TensorRef::is_defined);
    if t.dim() == 1 && t.numel() == 0 {
        let out = long(&[minlength])?;
        // SAFETY: a new contiguous i64 tensor.
        unsafe { elements_mut::<i64>(out.as_ref()) }.fill(0);
        return Ok(out);
    }
    let bad_input = || Error::runtime("bincount only supports 1-d non-negative integral inputs.");
    if t.dim() != 1 {
        return Err(bad_input());
    }
    let (n, stride, base) = (t.sizes()[0] as usize, t.strides()[0] as isize, t.data_ptr());
    dispatch!(dtype, [U8, I8, I16, I32, I64], |T| {
        // The input as a slice (gathered when strided): min, max and counting vectorise.
        let gathered: Vec<T>;
        let x: &[T] = if stride == 1 || n < 2 {
            // SAFETY: n contiguous elements of the 1-d input.
            unsafe { std::slice::from_raw_parts(base.cast::<T>(), n) }
        } else {
            // SAFETY: element i < n of the 1-d input.
            gathered = (0..n).map(|i| unsafe { base.cast::<T>().offset(i as isize * stride).read_unaligned() }).collect();
            &gathered
        };
        let (lo, hi) = x.iter().fold((i64::MAX, i64::MIN), |(lo, hi), v| {
            let v = v.to_num().as_i64();
            (lo.min(v), hi.max(v))
        });
        let bin = |v: &T| v.to_num().as_i64() as usize;
        if lo < 0 {
            return Err(bad_input());
        }
        if hi == i64::MAX {
            return Err(Error::runtime(format!(
                "maximum value of input overflowed, it should be < {} but got {hi}",
                i64::MAX
            )));
        }
        if let Some(w) = &weights
            && (w.dim() != 1 || w.sizes()[0] != n as i64)
        {
            return Err(Error::runtime("weights should be 1-d and have the same length as input"));
        }
        let nbins = (hi + 1).max(minlength);
        let Some(w) = weights else {
            let out = long(&[nbins])?;
            // SAFETY: a new contiguous i64 tensor.
            let o = unsafe { elements_mut::<i64>(out.as_ref()) };
            o.fill(0);
            x.iter().for_each(|v| o[bin(v)] += 1);
            return Ok(out);
        };
        let wdtype = DType::from_scalar_type(w.dtype())?;
        let (wstride, wbase) = (w.strides()[0] as isize, w.data_ptr());
        let out = new_tensor(&[nbins], if wdtype == DType::F32 { DType::F32 } else { DType::F64 })?;
        if wdtype == DType::F32 && (wstride == 1 || n < 2) {
            // SAFETY: a new contiguous f32 tensor; n contiguous weights.
            let (o, w) = unsafe { (elements_mut::<f32>(out.as_ref()), std::slice::from_raw_parts(wbase.cast::<f32>(), n)) };
            o.fill(0.0);
            x.iter().zip(w).for_each(|(v, w)| o[bin(v)] += w);
        } else if wdtype == DType::F32 {
            // SAFETY: a new contiguous f32 tensor.
            let o = unsafe { elements_mut::<f32>(out.as_ref()) };
            o.fill(0.0);
            // SAFETY: weight i < n of the 1-d weights.
            x.iter().enumerate().for_each(|(i, v)| o[bin(v)] += unsafe { wbase.cast::<f32>().offset(i as isize * wstride).read_unaligned() });
        } else {
            // SAFETY: a new contiguous f64 tensor.
            let o = unsafe { elements_mut::<f64>(out.as_ref()) };
            o.fill(0.0);
            // Other weights as CPU's `weights.to(kDouble)` (complex: the real part).
            crate::dispatch_all!(wdtype, |W| x.iter().enumerate().for_each(|(i, v)| {
                // SAFETY: weight i < n of the 1-d weights.
                let w = unsafe { wbase.cast::<W>().offset(i as isize * wstride).read_unaligned() };
                o[bin(v)] += w.to_num().as_f64();
            }));
        }
        Ok(out)
    }, else unreachable!())
}

/// This family's kernels: group `unique` of regen.toml's `[implement]`.
impl crate::UniqueKernels for crate::Reference {
    fn _unique(&self, self_: TensorRef<'_>, _sorted: bool, return_inverse: bool) -> Result<(Tensor, Tensor)> {
        let (values, inverse, _) = unique(self_, return_inverse, false)?;
        Ok((values, inverse))
    }
    fn _unique2(
        &self,
        self_: TensorRef<'_>,
        _sorted: bool,
        return_inverse: bool,
        return_counts: bool,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        unique(self_, return_inverse, return_counts)
    }
    fn unique_consecutive(
        &self,
        self_: TensorRef<'_>,
        return_inverse: bool,
        return_counts: bool,
        dim: Option<i64>,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        unique_consecutive(self_, return_inverse, return_counts, dim)
    }
    fn unique_dim(
        &self,
        self_: TensorRef<'_>,
        dim: i64,
        _sorted: bool,
        _return_inverse: bool,
        _return_counts: bool,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        unique_dim(self_, dim, false)
    }
    fn unique_dim_consecutive(
        &self,
        self_: TensorRef<'_>,
        dim: i64,
        _return_inverse: bool,
        _return_counts: bool,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        unique_dim(self_, dim, true)
    }
    fn histc_out(&self, self_: TensorRef<'_>, bins: i64, min: Scalar, max: Scalar, out: TensorRef<'_>) -> Result<()> {
        histc_out(self_, bins, min, max, out)
    }
    fn histc(&self, self_: TensorRef<'_>, bins: i64, min: Scalar, max: Scalar) -> Result<Tensor> {
        let dtype = crate::engine::dtype::DType::from_scalar_type(self_.dtype())?;
        let out = crate::engine::iter::new_tensor(&[0], dtype)?;
        histc_out(self_, bins, min, max, out.as_ref())?;
        Ok(out)
    }
    fn bincount(&self, self_: TensorRef<'_>, weights: Option<TensorRef<'_>>, minlength: i64) -> Result<Tensor> {
        bincount(self_, weights, minlength)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histc_bins_follow_the_dtype_arithmetic() {
        // float16: 2 * 40000 overflows to inf, whose bin converts to INT64_MIN: bin 0 (as CPU).
        let h = [1.0, 2.0, 3.0].map(half::f16::from_f32);
        let c = histc_counts(&h, 40000, 0.0, 3.0);
        assert_eq!((c[0], c[13336]), (2.0, 1.0));
        // Edges of [0, 1] in 4 bins: the right edge counts in the last bin, NaN nowhere.
        assert_eq!(histc_counts(&[0.0f32, 0.25, 1.0, f32::NAN, 1.5], 4, 0.0, 1.0), [1.0, 1.0, 0.0, 1.0]);
    }

    #[test]
    fn histc_widens_an_empty_range() {
        let zero = Scalar::Int(0);
        assert_eq!(histc_range(DType::F32, 2, zero, zero, || data_range(&[2.0f32, 2.0])), Ok((1.0, 3.0)));
        let e = histc_range(DType::F32, 2, zero, zero, || data_range(&[1.0f32, f32::NAN])).unwrap_err();
        assert_eq!(e.message(), "torch.histc: range of [-nan, -nan] is not finite");
    }

    #[test]
    fn doubles_print_as_cpp_streams_do() {
        let cases = [
            (0.5, "0.5"),
            (1.0, "1"),
            (100000.0, "100000"),
            (1e6, "1e+06"),
            (-1.5e10, "-1.5e+10"),
            (f64::from(f32::MAX), "3.40282e+38"),
            (0.0001, "0.0001"),
            (1e-5, "1e-05"),
            (123456789.0, "1.23457e+08"),
            (f64::INFINITY, "inf"),
            (-f64::NAN, "-nan"),
        ];
        for (x, s) in cases {
            assert_eq!(fmt_g(x), s);
        }
    }
}
