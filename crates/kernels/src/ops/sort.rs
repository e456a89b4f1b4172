//! Sorting and selection: sort, topk, kthvalue, median, nanmedian, mode. One engine: every
//! element of a row (the positions along `dim`) becomes a key that orders as PyTorch's CPU
//! comparators do — integers by value, floats by value with -0.0 equal to 0.0 and NaN greater
//! than everything — paired with its index, and each op is the algorithm CPU runs on those
//! pairs, so that equal elements come out in CPU's order: a stable sort when asked for one,
//! otherwise libstdc++'s `std::sort`, `std::partial_sort` or `std::nth_element` and ATen's
//! quickselect as [`crate::math::stl`] ports them, comparing keys only, as CPU compares
//! values only. Values are copied as bits from the input, so only the key is per dtype.

use regen_runtime::bootstrap::with_size;
use regen_runtime::{Error, Result, Tensor, TensorRef};

use crate::engine::dtype::{DType, Element, Num, not_implemented};
use crate::engine::iter::GRAIN;
use crate::math::stl;
use crate::ops::shape::wrap_dim;

/// The order key of an element: unsigned order is PyTorch's order of the values.
fn key<T: Element>(x: T) -> u64 {
    match T::DTYPE {
        DType::Bool | DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
            (x.to_num().as_i64() ^ i64::MIN) as u64
        }
        _ => {
            let f = x.to_num().as_f64();
            // -0.0 and 0.0 compare equal; negative values order by their bits reversed.
            let bits = if f == 0.0 { 0 } else { f.to_bits() };
            let k = bits ^ (((bits as i64) >> 63) as u64 | 1 << 63);
            if f.is_nan() { NAN_KEY } else { k }
        }
    }
}

const NAN_KEY: u64 = u64::MAX;

/// The rows of an op: `t` viewed as `rows` runs of `len` elements along `dim` (a 0-dim tensor
/// is one row of one), with each row's element offset in `t` and in each output (outputs list
/// their strides over the other dimensions, in order).
struct Rows {
    len: usize,
    stride: isize,
    input: Vec<isize>,
    outputs: Vec<Vec<isize>>,
}

fn rows(t: &TensorRef<'_>, dim: usize, outputs: &[Vec<i64>]) -> Rows {
    let (sizes, strides) = (t.sizes(), t.strides());
    if sizes.is_empty() {
        return Rows { len: 1, stride: 1, input: vec![0], outputs: outputs.iter().map(|_| vec![0]).collect() };
    }
    let other: Vec<usize> = (0..sizes.len()).filter(|&d| d != dim).collect();
    let count: i64 = other.iter().map(|&d| sizes[d]).product();
    let count = count.max(0) as usize;
    let mut input = Vec::with_capacity(count);
    let mut outs: Vec<Vec<isize>> = outputs.iter().map(|_| Vec::with_capacity(count)).collect();
    let mut index = vec![0i64; other.len()];
    for _ in 0..count {
        input.push(other.iter().zip(&index).map(|(&d, &i)| (i * strides[d]) as isize).sum());
        for (o, st) in outs.iter_mut().zip(outputs) {
            o.push(index.iter().zip(st).map(|(&i, &s)| (i * s) as isize).sum());
        }
        // Next index, last dimension fastest.
        for k in (0..other.len()).rev() {
            index[k] += 1;
            if index[k] < sizes[other[k]] {
                break;
            }
            index[k] = 0;
        }
    }
    Rows { len: sizes[dim].max(0) as usize, stride: strides[dim] as isize, input, outputs: outs }
}

/// Fills `pairs` with the (key, index) pairs of row `r`, in the row's order (descending:
/// reversed keys).
fn row_pairs<T: Element>(pairs: &mut Vec<(u64, u64)>, base: *const u8, rows: &Rows, r: usize, descending: bool) {
    let flip = if descending { u64::MAX } else { 0 };
    let (start, stride) = (base.cast::<T>().wrapping_offset(rows.input[r]), rows.stride);
    pairs.clear();
    pairs.extend((0..rows.len).map(|i| {
        // SAFETY: element i of row r is inside the input.
        let x = unsafe { start.offset(i as isize * stride).read_unaligned() };
        (key(x) ^ flip, i as u64)
    }));
}

thread_local! {
    /// Whether this thread's last sorted row had equal keys (a speed hint only: any row's
    /// result is the same whichever way it is sorted).
    static ROW_HAD_TIES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Orders by key alone: CPU's comparators see values, not indices.
fn by_key(a: &(u64, u64), b: &(u64, u64)) -> bool {
    a.0 < b.0
}

/// Runs `f(row, pairs)` over the rows, on several threads when the work is large; the rows one
/// thread runs share one buffer for their pairs (as CPU's kernels share one per loop).
fn for_rows(rows: &Rows, f: impl Fn(usize, &mut Vec<(u64, u64)>) + Sync) {
    let n = rows.input.len();
    let run = |a: usize, b: usize| {
        let mut pairs = Vec::with_capacity(rows.len);
        (a..b).for_each(|r| f(r, &mut pairs));
    };
    let work = n * rows.len.max(1);
    if work < GRAIN || n < 2 || regen_runtime::host::num_threads() < 2 {
        return run(0, n);
    }
    let grain = (GRAIN / rows.len.max(1)).max(1);
    regen_runtime::host::parallel_for(n, grain, run);
}

/// Writes `pairs` as row `r` of the outputs: position j gets the value and the index of the
/// input element of pair j.
fn write_row<T: Element>(
    pairs: &[(u64, u64)],
    src: Ptr,
    rows: &Rows,
    r: usize,
    [vp, ip]: [Ptr; 2],
    [vs, is]: [isize; 2],
) {
    let e = std::mem::size_of::<T>();
    let (input, values, indices) = (rows.input[r], rows.outputs[0][r], rows.outputs[1][r]);
    for (j, &(_, i)) in pairs.iter().enumerate() {
        // SAFETY: positions j and i of row r are inside their tensors.
        unsafe {
            let x = src.at(input + i as isize * rows.stride, e).cast::<T>().read_unaligned();
            vp.at(values + j as isize * vs, e).cast::<T>().write_unaligned(x);
            ip.at(indices + j as isize * is, 8).cast::<i64>().write_unaligned(i as i64);
        }
    }
}

/// Element pointer arithmetic over `usize` addresses (so closures stay `Sync`).
#[derive(Clone, Copy)]
struct Ptr(usize);
impl Ptr {
    fn of(t: &TensorRef<'_>) -> Ptr {
        Ptr(t.data_ptr() as usize)
    }
    /// # Safety
    /// `offset` elements of size `e` from the base stay inside the tensor.
    unsafe fn at(self, offset: isize, e: usize) -> *mut u8 {
        (self.0 as isize + offset * e as isize) as *mut u8
    }
}

fn check_dtype(t: &TensorRef<'_>, what: &str) -> Result<DType> {
    let dtype = DType::from_scalar_type(t.dtype())?;
    if dtype.is_complex() {
        return Err(Error::runtime(format!("{what} does not support complex dtypes on CPU")));
    }
    Ok(dtype)
}

fn check_index_out(indices: &TensorRef<'_>) -> Result<()> {
    if DType::from_scalar_type(indices.dtype())? != DType::I64 {
        return Err(Error::runtime("Expected out tensor to have dtype long int, but got another instead"));
    }
    Ok(())
}

/// `sort(self, stable, dim, descending, values=, indices=)`: pairs ordered by (key, index) when
/// stable, else by `std::sort` on keys (CPU's `sort_kernel`); a row of stride 0 is one value
/// repeated, which CPU leaves in place.
pub fn sort(
    t: TensorRef<'_>,
    dim: i64,
    descending: bool,
    stable: bool,
    values: TensorRef<'_>,
    indices: TensorRef<'_>,
) -> Result<()> {
    let dtype = check_dtype(&t, "Sort")?;
    let d = wrap_dim(dim, t.dim())?;
    check_index_out(&indices)?;
    let sizes = t.sizes().to_vec();
    with_size(&values, &sizes, |values| {
        with_size(&indices, &sizes, |indices| {
            let vs = values.strides().to_vec();
            let is = indices.strides().to_vec();
            let other = |s: &[i64]| -> Vec<i64> { (0..s.len()).filter(|&k| k != d).map(|k| s[k]).collect() };
            let rows = rows(&t, d, &[other(&vs), other(&is)]);
            let (vstride, istride) =
                (vs.get(d).copied().unwrap_or(1) as isize, is.get(d).copied().unwrap_or(1) as isize);
            let (src, vp, ip) = (Ptr::of(&t), Ptr::of(values), Ptr::of(indices));
            crate::dispatch!(dtype, [Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| for_rows(&rows, |r, pairs| {
                let base = src.0 as *const u8;
                row_pairs::<T>(pairs, base, &rows, r, descending);
                if stable {
                    pairs.sort_unstable();
                } else if rows.stride != 0 {
                    // With distinct keys every sort gives the one order, so a faster one serves,
                    // and only rows with equal keys need std::sort's own order of them. Tried
                    // first where ties are unlikely (fewer elements than the square root of the
                    // dtype's count of values), as it is wasted work otherwise.
                    // A thread that just met a row with ties expects more (integer data of few
                    // values) and skips the attempt until a row comes out without any.
                    let unlikely = rows.len < 1 << (4 * std::mem::size_of::<T>()).min(32);
                    let has_ties = |p: &[(u64, u64)]| p.windows(2).any(|w| w[0].0 == w[1].0);
                    if !unlikely {
                        stl::sort(pairs, &mut by_key);
                    } else if ROW_HAD_TIES.get() {
                        stl::sort(pairs, &mut by_key);
                        ROW_HAD_TIES.set(has_ties(pairs));
                    } else {
                        pairs.sort_unstable_by_key(|p| p.0);
                        if has_ties(pairs) {
                            ROW_HAD_TIES.set(true);
                            row_pairs::<T>(pairs, base, &rows, r, descending);
                            stl::sort(pairs, &mut by_key);
                        }
                    }
                }
                write_row::<T>(pairs, src, &rows, r, [vp, ip], [vstride, istride]);
            }), else unreachable!());
            Ok(())
        })
    })
}

/// `topk(self, k, dim, largest, sorted, values=, indices=)`, as ATen's `topk_impl_loop`: a partial
/// sort when k is at most 1/64 of the row, else the k-th in place (`nth_element`) and, when
/// sorted, the k - 1 before it sorted.
pub fn topk(
    t: TensorRef<'_>,
    k: i64,
    dim: i64,
    largest: bool,
    sorted: bool,
    values: TensorRef<'_>,
    indices: TensorRef<'_>,
) -> Result<()> {
    let dtype = check_dtype(&t, "topk")?;
    if dtype == DType::Bool {
        return Err(Error::not_implemented("topk does not support bool dtypes on CPU"));
    }
    let d = wrap_dim(dim, t.dim())?;
    let n = t.sizes().get(d).copied().unwrap_or(1);
    if k < 0 || k > n {
        return Err(Error::runtime("selected index k out of range"));
    }
    check_index_out(&indices)?;
    let mut sizes = t.sizes().to_vec();
    if !sizes.is_empty() {
        sizes[d] = k;
    }
    with_size(&values, &sizes, |values| {
        with_size(&indices, &sizes, |indices| {
            let vs = values.strides().to_vec();
            let is = indices.strides().to_vec();
            let other = |s: &[i64]| -> Vec<i64> { (0..s.len()).filter(|&q| q != d).map(|q| s[q]).collect() };
            let rows = rows(&t, d, &[other(&vs), other(&is)]);
            if k == 0 {
                return Ok(());
            }
            let (vstride, istride) =
                (vs.get(d).copied().unwrap_or(1) as isize, is.get(d).copied().unwrap_or(1) as isize);
            let (src, vp, ip) = (Ptr::of(&t), Ptr::of(values), Ptr::of(indices));
            let k = k as usize;
            crate::dispatch!(dtype, [U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| for_rows(&rows, |r, pairs| {
                row_pairs::<T>(pairs, src.0 as *const u8, &rows, r, largest);
                if k * 64 <= pairs.len() {
                    stl::partial_sort(pairs, k, &mut by_key);
                } else {
                    stl::nth_element(pairs, k - 1, &mut by_key);
                    if sorted {
                        stl::sort(&mut pairs[..k - 1], &mut by_key);
                    }
                }
                write_row::<T>(&pairs[..k], src, &rows, r, [vp, ip], [vstride, istride]);
            }), else unreachable!());
            Ok(())
        })
    })
}

/// Which element of a row a selection op writes.
#[derive(Clone, Copy)]
pub enum Select {
    /// The k-th smallest (0-based), by ATen's `quick_select_template`.
    Kth(usize),
    /// The lower median; the first NaN when there is one.
    Median,
    /// The lower median of the non-NaN values.
    NanMedian,
    /// The most frequent value (the last of equally frequent runs after CPU's `std::sort`), at
    /// the index it ends with.
    Mode,
}

impl Select {
    /// The index of the element written, in row `r` (not empty) of the input at `base`.
    fn row_index<T: Element>(self, pairs: &mut Vec<(u64, u64)>, base: *const u8, rows: &Rows, r: usize) -> u64 {
        let mut fill = || row_pairs::<T>(pairs, base, rows, r, false);
        match self {
            Select::Kth(k) => {
                fill();
                stl::quick_select(pairs, k, &mut |a, b| a.0 > b.0);
                pairs[k].1
            }
            Select::Median => {
                fill();
                if let Some(p) = pairs.iter().find(|p| p.0 == NAN_KEY) {
                    return p.1;
                }
                // (value, index) is a total order: the median is one element, whatever selects it.
                let nth = (pairs.len() - 1) / 2;
                stl::nth_element(pairs, nth, &mut |a, b| a < b);
                pairs[nth].1
            }
            Select::NanMedian => {
                fill();
                let valid = pairs.iter().filter(|p| p.0 != NAN_KEY).count() as i64;
                // C++'s (valid - 1) / 2 truncates -1/2 to 0: a row of NaNs gives the NaN
                // nth_element leaves first, NaNs being equal under CPU's comparator.
                let nth = ((valid - 1) / 2) as usize;
                stl::nth_element(pairs, nth, &mut |a, b| !(a.0 == NAN_KEY && b.0 == NAN_KEY) && a < b);
                pairs[nth].1
            }
            Select::Mode => mode_row::<T>(base, rows, r),
        }
    }
}

/// CPU's `mode` of one row of `(value, index)` pairs: `std::sort` by `value <` (with NaN, which
/// compares false both ways, wherever the algorithm leaves it), then the longest run of values
/// that are not `!=` (each NaN a run of its own), the first longest.
fn mode_index<V: Copy + PartialOrd>(pairs: &mut [(V, u64)]) -> u64 {
    stl::sort(pairs, &mut |a, b| a.0 < b.0);
    let n = pairs.len();
    let (mut best, mut best_freq, mut run) = (0, 0, 0);
    for i in 0..n {
        run += 1;
        if i == n - 1 || pairs[i].0 != pairs[i + 1].0 {
            if run > best_freq {
                best = pairs[i].1;
                best_freq = run;
            }
            run = 0;
        }
    }
    best
}

/// The mode's index in row `r`: the values compared as CPU compares them (floats as f64, which
/// holds every f16, bf16 and f32 exactly; integers and bool as i64).
fn mode_row<T: Element>(base: *const u8, rows: &Rows, r: usize) -> u64 {
    // SAFETY: element i of row r is inside the input.
    let at = |i: usize| unsafe { base.cast::<T>().offset(rows.input[r] + i as isize * rows.stride).read_unaligned() };
    if T::DTYPE.is_floating() {
        mode_index(&mut (0..rows.len).map(|i| (at(i).to_num().as_f64(), i as u64)).collect::<Vec<_>>())
    } else {
        mode_index(&mut (0..rows.len).map(|i| (at(i).to_num().as_i64(), i as u64)).collect::<Vec<_>>())
    }
}

/// A reduction to one element per row along `dim` (kthvalue, median, nanmedian, mode), into
/// `values` and `indices` (keepdim: the dimension stays with size 1).
pub fn select_dim(
    t: TensorRef<'_>,
    dim: i64,
    keepdim: bool,
    select: Select,
    name: &str,
    values: TensorRef<'_>,
    indices: TensorRef<'_>,
) -> Result<()> {
    let dtype = DType::from_scalar_type(t.dtype())?;
    let cpu_name = match select {
        Select::Kth(_) => "kthvalue_cpu",
        Select::Median => "median_out",
        Select::NanMedian => "nanmedian_out",
        Select::Mode => "mode_cpu",
    };
    if dtype.is_complex() || (dtype == DType::Bool && !matches!(select, Select::Mode)) {
        return Err(not_implemented(cpu_name, dtype));
    }
    let d = wrap_dim(dim, t.dim())?;
    let n = t.sizes().get(d).copied().unwrap_or(1);
    let mut sizes = t.sizes().to_vec();
    if !sizes.is_empty() {
        if keepdim {
            sizes[d] = 1;
        } else {
            sizes.remove(d);
        }
    }
    if n == 0 && sizes.iter().product::<i64>() > 0 {
        return Err(Error::index(format!("{name}(): Expected reduction dim {d} to have non-zero size.")));
    }
    if let Select::Kth(k) = select
        && k as i64 >= n
    {
        return Err(Error::runtime(format!("kthvalue(): selected number k out of range for dimension {d}")));
    }
    check_index_out(&indices)?;
    with_size(&values, &sizes, |values| {
        with_size(&indices, &sizes, |indices| {
            let out_other = |s: &[i64]| -> Vec<i64> {
                if keepdim && !s.is_empty() {
                    (0..s.len()).filter(|&q| q != d).map(|q| s[q]).collect()
                } else {
                    s.to_vec()
                }
            };
            let rows = rows(&t, d, &[out_other(values.strides()), out_other(indices.strides())]);
            if n == 0 {
                return Ok(());
            }
            let (src, vp, ip) = (Ptr::of(&t), Ptr::of(values), Ptr::of(indices));
            crate::dispatch!(dtype, [Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| for_rows(&rows, |r, pairs| {
                let i = select.row_index::<T>(pairs, src.0 as *const u8, &rows, r);
                write_row::<T>(&[(0, i)], src, &rows, r, [vp, ip], [0, 0]);
            }), else unreachable!());
            Ok(())
        })
    })
}

/// `median(self)` / `nanmedian(self)`: the selection over every element (NaN when empty).
pub fn select_all(t: TensorRef<'_>, select: Select) -> Result<Tensor> {
    let dtype = DType::from_scalar_type(t.dtype())?;
    let name = if matches!(select, Select::NanMedian) { "nanmedian_cpu" } else { "median_cpu" };
    if dtype.is_complex() || dtype == DType::Bool {
        return Err(not_implemented(name, dtype));
    }
    let out = regen_runtime::host::empty_strided(&[], &[], dtype.code())?;
    if t.numel() == 0 {
        regen_runtime::bootstrap::fill_(out.as_ref(), regen_runtime::Scalar::Float(f64::NAN))?;
        return Ok(out);
    }
    // The elements in the order CPU partitions them: that of its `self.clone()`, which keeps a
    // dense tensor's memory order (and another's dimension order), not the logical one.
    let strides = clone_strides(t.sizes(), t.strides());
    let flat;
    let t = if t.strides() == strides.as_slice() {
        t
    } else {
        flat = regen_runtime::host::empty_strided(t.sizes(), &strides, dtype.code())?;
        crate::ops::copy::copy_(flat.as_ref(), t)?;
        flat.as_ref()
    };
    let n = t.numel() as usize;
    let e = dtype.size();
    let (src, vp) = (Ptr::of(&t), Ptr::of(&out.as_ref()));
    let ignore_nan = matches!(select, Select::NanMedian);
    crate::dispatch!(dtype, [U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| {
        // SAFETY: the n elements are inside the contiguous input.
        let at = |i: usize| unsafe { src.at(i as isize, e).cast::<T>().read_unaligned() };
        let i = if dtype.is_floating() {
            median_all_index((0..n).map(|i| (at(i).to_num().as_f64(), i as u64)).collect(), ignore_nan)
        } else {
            median_all_index((0..n).map(|i| (at(i).to_num().as_i64(), i as u64)).collect(), ignore_nan)
        };
        // SAFETY: element i is inside the input; the output holds one element.
        unsafe {
            match i {
                Some(i) => std::ptr::copy_nonoverlapping(src.at(i as isize, e), vp.at(0, e), e),
                // CPU writes its type's quiet NaN, not the input's.
                None => vp.at(0, e).cast::<T>().write_unaligned(T::from_num(Num::Float(f64::NAN))),
            }
        }
    }, else unreachable!());
    Ok(out)
}

/// The strides of CPU's `clone()` of a tensor (`at::infer_dense_strides`, which orders the
/// dimensions as TensorIterator does: by stride, a smaller size first among equal strides,
/// stride-0 dimensions left where they are).
fn clone_strides(sizes: &[i64], strides: &[i64]) -> Vec<i64> {
    use std::cmp::Ordering::*;
    let n = sizes.len();
    if n < 2 {
        return vec![1; n];
    }
    // perm[0] is the innermost dimension.
    let mut perm: Vec<usize> = (0..n).rev().collect();
    let after = |d0: usize, d1: usize| -> Option<bool> {
        let (s0, s1) = (strides[d0], strides[d1]);
        match s0.cmp(&s1) {
            _ if s0 == 0 || s1 == 0 => None,
            Less => Some(false),
            Greater => Some(true),
            Equal => (sizes[d0] > sizes[d1]).then_some(true),
        }
    };
    // Insertion sort that steps over ambiguous pairs.
    for i in 1..n {
        let mut d1 = i;
        for d0 in (0..i).rev() {
            match after(perm[d0], perm[d1]) {
                Some(true) => {
                    perm.swap(d0, d1);
                    d1 = d0;
                }
                Some(false) => break,
                None => {}
            }
        }
    }
    let mut out = vec![0; n];
    let mut stride = 1;
    for &d in &perm {
        out[d] = stride;
        stride *= sizes[d].max(1);
    }
    out
}

/// CPU's `median_impl` over all elements (as `(value, index)` pairs, values compared as CPU
/// compares them): `std::nth_element` on the values alone, so of equal values (-0.0 and 0.0)
/// the one it leaves there; `None` for median when there is a NaN.
fn median_all_index<V: Copy + PartialOrd>(mut v: Vec<(V, u64)>, ignore_nan: bool) -> Option<u64> {
    let is_nan = |x: V| x.partial_cmp(&x).is_none();
    let nan = v.iter().filter(|p| is_nan(p.0)).count();
    if nan > 0 && !ignore_nan {
        return None;
    }
    // C++'s (n - nan - 1) / 2 truncates -1/2 to 0 (all NaN).
    let nth = (((v.len() - nan) as i64 - 1) / 2) as usize;
    if ignore_nan {
        stl::nth_element(&mut v, nth, &mut |a, b| a.0 < b.0 || (is_nan(b.0) && !is_nan(a.0)));
    } else {
        stl::nth_element(&mut v, nth, &mut |a, b| a.0 < b.0);
    }
    Some(v[nth].1)
}

/// This family's kernels: group `sort` of regen.toml's `[implement]`.
impl crate::SortKernels for crate::Reference {
    fn sort_values_stable(
        &self,
        self_: TensorRef<'_>,
        stable: Option<bool>,
        dim: i64,
        descending: bool,
        values: TensorRef<'_>,
        indices: TensorRef<'_>,
    ) -> Result<()> {
        sort(self_, dim, descending, stable.unwrap_or(false), values, indices)
    }
    fn topk_values(
        &self,
        self_: TensorRef<'_>,
        k: i64,
        dim: i64,
        largest: bool,
        sorted: bool,
        values: TensorRef<'_>,
        indices: TensorRef<'_>,
    ) -> Result<()> {
        topk(self_, k, dim, largest, sorted, values, indices)
    }
    fn kthvalue_values(
        &self,
        self_: TensorRef<'_>,
        k: i64,
        dim: i64,
        keepdim: bool,
        values: TensorRef<'_>,
        indices: TensorRef<'_>,
    ) -> Result<()> {
        use {Select, select_dim};
        let n = self_.sizes().get(crate::ops::shape::wrap_dim(dim, self_.dim())?).copied().unwrap_or(1);
        if (k < 1 || k > n) && n > 0 {
            let d = crate::ops::shape::wrap_dim(dim, self_.dim())?;
            return Err(regen_runtime::Error::runtime(format!(
                "kthvalue(): selected number k out of range for dimension {d}"
            )));
        }
        select_dim(self_, dim, keepdim, Select::Kth((k - 1).max(0) as usize), "kthvalue", values, indices)
    }
    fn median(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        select_all(self_, Select::Median)
    }
    fn median_dim_values(
        &self,
        self_: TensorRef<'_>,
        dim: i64,
        keepdim: bool,
        values: TensorRef<'_>,
        indices: TensorRef<'_>,
    ) -> Result<()> {
        use {Select, select_dim};
        select_dim(self_, dim, keepdim, Select::Median, "median", values, indices)
    }
    fn nanmedian(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        select_all(self_, Select::NanMedian)
    }
    fn nanmedian_dim_values(
        &self,
        self_: TensorRef<'_>,
        dim: i64,
        keepdim: bool,
        values: TensorRef<'_>,
        indices: TensorRef<'_>,
    ) -> Result<()> {
        use {Select, select_dim};
        select_dim(self_, dim, keepdim, Select::NanMedian, "nanmedian", values, indices)
    }
    fn mode(&self, self_: TensorRef<'_>, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
        use {Select, select_dim};
        let dtype = crate::engine::dtype::DType::from_scalar_type(self_.dtype())?;
        let values = regen_runtime::host::empty_strided(&[0], &[1], dtype.code())?;
        let indices = regen_runtime::host::empty_strided(&[0], &[1], crate::engine::dtype::DType::I64.code())?;
        select_dim(self_, dim, keepdim, Select::Mode, "mode", values.as_ref(), indices.as_ref())?;
        Ok((values, indices))
    }
}

#[cfg(test)]
mod tests {
    use super::clone_strides;

    #[test]
    fn clone_strides_are_cpus() {
        // torch.empty_strided(sizes, strides).clone().stride() on CPU.
        assert_eq!(clone_strides(&[6, 5, 4, 3, 2], &[6, 0, 120, 0, 1]), [6, 36, 180, 2, 1]);
        // empty(4, 12)[:, ::2].t() and empty(3, 1, 4).expand(3, 5, 4).transpose(0, 2).
        assert_eq!(clone_strides(&[6, 4], &[2, 12]), [1, 6]);
        assert_eq!(clone_strides(&[4, 5, 3], &[1, 0, 4]), [1, 4, 20]);
        assert_eq!(clone_strides(&[], &[]), [0i64; 0]);
        assert_eq!(clone_strides(&[7], &[3]), [1]);
    }
}
