//! Sorting and selection: sort, topk, kthvalue, median, nanmedian, mode. One engine: every
//! element of a row (the positions along `dim`) becomes a key that orders as PyTorch's CPU
//! comparators do — integers by value, floats by value with -0.0 equal to 0.0 and NaN greater
//! than everything — paired with its index; sorting the (key, index) pairs is then a stable sort
//! (ties keep their order, as CPU's stable sort does), and each op is a choice of which sorted
//! positions to write: all of them (sort), the first k (topk), one (kthvalue, median), the
//! longest run (mode). Values are copied as bits from the input, so only the key is per dtype.

use regen_runtime::bootstrap::with_size;
use regen_runtime::view::contiguous_strides;
use regen_runtime::{Error, Result, Tensor, TensorRef};

use super::dtype::{DType, Element};
use super::iter::GRAIN;
use super::shape::wrap_dim;

/// The order key of an element: unsigned order is PyTorch's order of the values.
fn key<T: Element>(x: T) -> u64 {
    match T::DTYPE {
        DType::Bool | DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => {
            (x.to_num().as_i64() ^ i64::MIN) as u64
        }
        _ => {
            let f = x.to_num().as_f64();
            if f.is_nan() {
                return u64::MAX;
            }
            // -0.0 and 0.0 compare equal.
            let bits = if f == 0.0 { 0 } else { f.to_bits() };
            if bits >> 63 == 1 { !bits } else { bits | 1 << 63 }
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

/// The sorted (key, index) pairs of row `r` (descending: reversed order, ties still in order).
fn sorted_row<T: Element>(base: *const u8, rows: &Rows, r: usize, descending: bool) -> Vec<(u64, u64)> {
    let mut pairs: Vec<(u64, u64)> = (0..rows.len)
        .map(|i| {
            // SAFETY: element i of row r is inside the input.
            let x = unsafe { base.cast::<T>().offset(rows.input[r] + i as isize * rows.stride).read_unaligned() };
            let k = key(x);
            (if descending { !k } else { k }, i as u64)
        })
        .collect();
    pairs.sort_unstable();
    pairs
}

/// Runs `f(row)` over the rows, on several threads when the work is large.
fn for_rows(rows: &Rows, f: impl Fn(usize) + Sync) {
    let n = rows.input.len();
    let work = n * rows.len.max(1);
    if work < GRAIN || n < 2 || regen_runtime::host::num_threads() < 2 {
        return (0..n).for_each(f);
    }
    let grain = (GRAIN / rows.len.max(1)).max(1);
    regen_runtime::host::parallel_for(n, grain, |a, b| (a..b).for_each(&f));
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

fn not_implemented(op: &str, d: DType) -> Error {
    Error::not_implemented(format!("\"{op}\" not implemented for '{}'", d.name()))
}

fn check_index_out(indices: &TensorRef<'_>) -> Result<()> {
    if DType::from_scalar_type(indices.dtype())? != DType::I64 {
        return Err(Error::runtime("Expected out tensor to have dtype long int, but got another instead"));
    }
    Ok(())
}

/// `sort(self, stable, dim, descending, values=, indices=)`.
pub fn sort(t: TensorRef<'_>, dim: i64, descending: bool, values: TensorRef<'_>, indices: TensorRef<'_>) -> Result<()> {
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
            let e = dtype.size();
            crate::dispatch!(dtype, [Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| for_rows(&rows, |r| {
                let pairs = sorted_row::<T>(src.0 as *const u8, &rows, r, descending);
                for (j, &(_, i)) in pairs.iter().enumerate() {
                    // SAFETY: positions j and i of row r are inside their tensors.
                    unsafe {
                        std::ptr::copy_nonoverlapping(src.at(rows.input[r] + i as isize * rows.stride, e), vp.at(rows.outputs[0][r] + j as isize * vstride, e), e);
                        ip.at(rows.outputs[1][r] + j as isize * istride, 8).cast::<i64>().write_unaligned(i as i64);
                    }
                }
            }), else unreachable!());
            Ok(())
        })
    })
}

/// `topk(self, k, dim, largest, sorted, values=, indices=)`: always sorted.
pub fn topk(
    t: TensorRef<'_>,
    k: i64,
    dim: i64,
    largest: bool,
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
            let e = dtype.size();
            let k = k as usize;
            crate::dispatch!(dtype, [U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| for_rows(&rows, |r| {
                let mut pairs: Vec<(u64, u64)> = (0..rows.len)
                    .map(|i| {
                        // SAFETY: element i of row r is inside the input.
                        let x = unsafe { src.at(rows.input[r] + i as isize * rows.stride, e).cast::<T>().read_unaligned() };
                        let key = key(x);
                        (if largest { !key } else { key }, i as u64)
                    })
                    .collect();
                if k < pairs.len() {
                    pairs.select_nth_unstable(k - 1);
                    pairs.truncate(k);
                }
                pairs.sort_unstable();
                for (j, &(_, i)) in pairs.iter().enumerate() {
                    // SAFETY: positions j < k and i of row r are inside their tensors.
                    unsafe {
                        std::ptr::copy_nonoverlapping(src.at(rows.input[r] + i as isize * rows.stride, e), vp.at(rows.outputs[0][r] + j as isize * vstride, e), e);
                        ip.at(rows.outputs[1][r] + j as isize * istride, 8).cast::<i64>().write_unaligned(i as i64);
                    }
                }
            }), else unreachable!());
            Ok(())
        })
    })
}

/// Which element of a sorted row a selection op writes.
#[derive(Clone, Copy)]
pub enum Select {
    /// The k-th smallest (0-based).
    Kth(usize),
    /// The lower median; the first NaN when there is one.
    Median,
    /// The lower median of the non-NaN values.
    NanMedian,
    /// The most frequent value (the smallest of equally frequent ones, NaN first), at its last
    /// index.
    Mode,
}

impl Select {
    /// The position in the sorted pairs, and whether the index is that of the first NaN.
    fn pick(self, pairs: &[(u64, u64)]) -> usize {
        let n = pairs.len();
        match self {
            Select::Kth(k) => k,
            Select::Median => match pairs.iter().position(|p| p.0 == NAN_KEY) {
                Some(first_nan) => first_nan,
                None => (n - 1) / 2,
            },
            Select::NanMedian => {
                let valid = pairs.iter().take_while(|p| p.0 != NAN_KEY).count() as i64;
                ((valid - 1) / 2).max(0) as usize
            }
            Select::Mode => {
                let (mut best, mut best_freq, mut run) = (0usize, 0usize, 0usize);
                for i in 0..n {
                    run += 1;
                    if i == n - 1 || pairs[i].0 != pairs[i + 1].0 {
                        if run > best_freq {
                            best = i;
                            best_freq = run;
                        }
                        run = 0;
                    }
                }
                best
            }
        }
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
            let e = dtype.size();
            crate::dispatch!(dtype, [Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| for_rows(&rows, |r| {
                let mut pairs = sorted_row::<T>(src.0 as *const u8, &rows, r, false);
                if matches!(select, Select::Mode) && pairs.last().is_some_and(|p| p.0 == NAN_KEY) {
                    // CPU's mode orders NaN first (and NaNs as one value): key 0 is no number's.
                    pairs.iter_mut().filter(|p| p.0 == NAN_KEY).for_each(|p| p.0 = 0);
                    pairs.sort_unstable();
                }
                let i = pairs[select.pick(&pairs)].1 as isize;
                // SAFETY: position i of row r and the row's output element are inside their tensors.
                unsafe {
                    std::ptr::copy_nonoverlapping(src.at(rows.input[r] + i * rows.stride, e), vp.at(rows.outputs[0][r], e), e);
                    ip.at(rows.outputs[1][r], 8).cast::<i64>().write_unaligned(i as i64);
                }
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
    // The elements as one row: a contiguous copy when the tensor is not one already.
    let flat;
    let t = if regen_runtime::view::is_contiguous(t.sizes(), t.strides()) {
        t
    } else {
        flat = regen_runtime::host::empty_strided(t.sizes(), &contiguous_strides(t.sizes()), dtype.code())?;
        super::copy::copy_(flat.as_ref(), t)?;
        flat.as_ref()
    };
    let n = t.numel() as usize;
    let rows = Rows { len: n, stride: 1, input: vec![0], outputs: vec![vec![0]] };
    let e = dtype.size();
    let (src, vp) = (Ptr::of(&t), Ptr::of(&out.as_ref()));
    crate::dispatch!(dtype, [U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| {
        let pairs = sorted_row::<T>(src.0 as *const u8, &rows, 0, false);
        let i = pairs[select.pick(&pairs)].1 as isize;
        // SAFETY: element i is inside the input; the output holds one element.
        unsafe { std::ptr::copy_nonoverlapping(src.at(i, e), vp.at(0, e), e) };
    }, else unreachable!());
    Ok(out)
}

/// The `Kernels` methods of this module, for `backend.rs`'s impl.
#[macro_export]
macro_rules! sort_methods {
    () => {
        fn sort_values_stable(
            &self,
            self_: TensorRef<'_>,
            _stable: Option<bool>,
            dim: i64,
            descending: bool,
            values: TensorRef<'_>,
            indices: TensorRef<'_>,
        ) -> Result<()> {
            $crate::kernels::sort::sort(self_, dim, descending, values, indices)
        }
        fn topk_values(
            &self,
            self_: TensorRef<'_>,
            k: i64,
            dim: i64,
            largest: bool,
            _sorted: bool,
            values: TensorRef<'_>,
            indices: TensorRef<'_>,
        ) -> Result<()> {
            $crate::kernels::sort::topk(self_, k, dim, largest, values, indices)
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
            use $crate::kernels::sort::{Select, select_dim};
            let n = self_.sizes().get($crate::kernels::shape::wrap_dim(dim, self_.dim())?).copied().unwrap_or(1);
            if (k < 1 || k > n) && n > 0 {
                let d = $crate::kernels::shape::wrap_dim(dim, self_.dim())?;
                return Err(regen_runtime::Error::runtime(format!(
                    "kthvalue(): selected number k out of range for dimension {d}"
                )));
            }
            select_dim(self_, dim, keepdim, Select::Kth((k - 1).max(0) as usize), "kthvalue", values, indices)
        }
        fn median(&self, self_: TensorRef<'_>) -> Result<Tensor> {
            $crate::kernels::sort::select_all(self_, $crate::kernels::sort::Select::Median)
        }
        fn median_dim_values(
            &self,
            self_: TensorRef<'_>,
            dim: i64,
            keepdim: bool,
            values: TensorRef<'_>,
            indices: TensorRef<'_>,
        ) -> Result<()> {
            use $crate::kernels::sort::{Select, select_dim};
            select_dim(self_, dim, keepdim, Select::Median, "median", values, indices)
        }
        fn nanmedian(&self, self_: TensorRef<'_>) -> Result<Tensor> {
            $crate::kernels::sort::select_all(self_, $crate::kernels::sort::Select::NanMedian)
        }
        fn nanmedian_dim_values(
            &self,
            self_: TensorRef<'_>,
            dim: i64,
            keepdim: bool,
            values: TensorRef<'_>,
            indices: TensorRef<'_>,
        ) -> Result<()> {
            use $crate::kernels::sort::{Select, select_dim};
            select_dim(self_, dim, keepdim, Select::NanMedian, "nanmedian", values, indices)
        }
        fn mode(&self, self_: TensorRef<'_>, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
            use $crate::kernels::sort::{Select, select_dim};
            let dtype = $crate::kernels::dtype::DType::from_scalar_type(self_.dtype())?;
            let values = regen_runtime::host::empty_strided(&[0], &[1], dtype.code())?;
            let indices = regen_runtime::host::empty_strided(&[0], &[1], $crate::kernels::dtype::DType::I64.code())?;
            select_dim(self_, dim, keepdim, Select::Mode, "mode", values.as_ref(), indices.as_ref())?;
            Ok((values, indices))
        }
    };
}
