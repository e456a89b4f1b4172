//! Embedding ops as ATen's CPU kernels (`Embedding.cpp`, `EmbeddingBag.cpp`) compute them:
//! `embedding_dense_backward` (rows of the weight split over the pool, each row adding the
//! gradient rows of its indices in index order, `grad_weight[k] += scale · grad[i]`),
//! `embedding_renorm_` (the unique indices in sorted order, each row scaled to `max_norm`), and
//! `embedding_bag` forward (sum, mean, max) with its dense backward ops.
//!
//! embedding_bag's extra outputs are CPU's exactly, since its backward consumes them:
//! `offset2bag` is left empty on CPU's "fast path" (sum or mean of a float, half or bfloat16
//! weight with unit column stride and no padding index, where bags are read from `offsets`),
//! `bag_size` counts each bag's non-padding indices (zeros under sum), and `max_indices` holds
//! the winning row per bag and column under max (else a copy of `bag_size`). Bags sum in index
//! order in f32 (f64 for double), per-sample weights as CPU's fast path (fused multiply-add) or
//! slow path (product, then sum) do, so results equal CPU's bit for bit.

use regen_runtime::{Error, Result, Tensor, TensorRef};

use half::{bf16, f16};

use crate::engine::dtype::{DType, Element, not_implemented};
use crate::engine::iter::{fmt_sizes, new_tensor};
use crate::engine::scalar::Real;
use crate::ops::binary::ScaledAdd;
use crate::ops::norm::dense;

/// `embedding_dense_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq)`.
pub fn dense_backward(
    grad: TensorRef<'_>,
    indices: TensorRef<'_>,
    num_weights: i64,
    padding_idx: i64,
    scale_grad_by_freq: bool,
) -> Result<Tensor> {
    let idt = DType::from_scalar_type(indices.dtype())?;
    if idt != DType::I64 && idt != DType::I32 {
        return Err(Error::runtime(format!(
            "Expected tensor for argument #2 'indices' to have one of the following scalar types: Long, Int; but got {} instead (while checking arguments for embedding_backward)",
            crate::engine::dtype::torch_name(idt)
        )));
    }
    let dtype = DType::from_scalar_type(grad.dtype())?;
    if grad.dim() == 0 {
        return Err(Error::index("Dimension specified as -1 but tensor has no dimensions"));
    }
    let width = grad.sizes()[grad.dim() - 1].max(0) as usize;
    let n = indices.numel().max(0) as usize;
    if grad.numel().max(0) as usize != n * width {
        return Err(Error::runtime(format!("shape '[{n}, {width}]' is invalid for input of size {}", grad.numel())));
    }
    if num_weights < 0 {
        return Err(Error::runtime(format!(
            "Trying to create tensor with negative dimension {num_weights}: [{num_weights}, {width}]"
        )));
    }
    let rows = num_weights as usize;
    let idx: Vec<i64> = {
        let d = dense(&indices)?;
        // SAFETY: the dense indices hold n elements of their dtype.
        unsafe {
            if idt == DType::I64 {
                std::slice::from_raw_parts(d.ptr as *const i64, n).to_vec()
            } else {
                std::slice::from_raw_parts(d.ptr as *const i32, n).iter().map(|&v| v as i64).collect()
            }
        }
    };
    // CPU would index out of bounds; the device refuses.
    if let Some(&bad) = idx.iter().find(|&&k| k != padding_idx && !(0..num_weights).contains(&k)) {
        return Err(Error::index(format!("index {bad} is out of bounds for dimension 0 with size {num_weights}")));
    }
    let out = new_tensor(&[num_weights, width as i64], dtype)?;
    let g = dense(&grad)?;
    let op = out.as_ref().data_ptr() as usize;
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        run::<T>(g.ptr, op, &idx, rows, width, padding_idx, scale_grad_by_freq);
        Ok(out)
    }, else Err(not_implemented("embedding_dense_backward_cpu", dtype)))
}

/// Rows of the gradient added to their index's row of a zeroed output, each as CPU's
/// `grad_weight[k].add_(grad[i], scale)` rounds it ([`ScaledAdd`]).
fn run<T: ScaledAdd>(gp: usize, op: usize, idx: &[i64], rows: usize, width: usize, padding_idx: i64, by_freq: bool) {
    // SAFETY: the new output holds rows·width elements; all-zero bits are 0.0 in every float.
    unsafe { std::ptr::write_bytes(op as *mut T, 0, rows * width) };
    let mut counts = vec![0u64; if by_freq { rows } else { 0 }];
    if by_freq {
        for &k in idx.iter().filter(|&&k| k != padding_idx) {
            counts[k as usize] += 1;
        }
    }
    let size = std::mem::size_of::<T>() as isize;
    regen_runtime::host::parallel_for(rows, 1000, |start, end| {
        for (i, &k) in idx.iter().enumerate() {
            if k == padding_idx || !(start as i64..end as i64).contains(&k) {
                continue;
            }
            let scale = if by_freq { 1.0 / counts[k as usize] as f64 } else { 1.0 };
            // SAFETY: row k (< rows) of the output, owned by this task, updated in place; row i
            // of the gradient.
            unsafe {
                let (dst, src) = ((op as *mut T).add(k as usize * width), (gp as *const T).add(i * width));
                T::run_one(dst, [dst.cast_const(), src], &[size; 3], width, scale, false);
            }
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Index tensors
// ---------------------------------------------------------------------------------------------

/// `torch.FloatTensor` and the like, as `TensorArg` messages name a tensor's type.
fn legacy(d: DType) -> String {
    format!("torch.{}Tensor", d.name())
}

/// An index tensor's elements in row-major order as i64, and its dtype (int64 or int32).
fn read_index(t: &TensorRef<'_>) -> Result<(Vec<i64>, DType)> {
    let dtype = DType::from_scalar_type(t.dtype())?;
    let n = t.numel().max(0) as usize;
    let d = dense(t)?;
    // SAFETY: the dense data holds the tensor's n elements of its dtype.
    let v = unsafe {
        match dtype {
            DType::I64 => std::slice::from_raw_parts(d.ptr as *const i64, n).to_vec(),
            DType::I32 => std::slice::from_raw_parts(d.ptr as *const i32, n).iter().map(|&v| v as i64).collect(),
            _ => Vec::new(),
        }
    };
    Ok((v, dtype))
}

fn check_index_type(d: DType, arg: &str, op: &str) -> Result<()> {
    if d != DType::I64 && d != DType::I32 {
        return Err(Error::runtime(format!(
            "Expected tensor for {arg} to have one of the following scalar types: Long, Int; but got {} instead (while checking arguments for {op})",
            legacy(d)
        )));
    }
    Ok(())
}

/// A new tensor of `sizes` holding `v` (row-major) as `dtype` (int64 or int32).
fn index_tensor(v: &[i64], sizes: &[i64], dtype: DType) -> Result<Tensor> {
    let t = new_tensor(sizes, dtype)?;
    let p = t.as_ref().data_ptr();
    for (i, &x) in v.iter().enumerate() {
        // SAFETY: the new tensor holds v.len() elements of dtype.
        unsafe {
            if dtype == DType::I64 { (p as *mut i64).add(i).write(x) } else { (p as *mut i32).add(i).write(x as i32) }
        }
    }
    Ok(t)
}

/// `offset2bag` from `offsets` (`make_offset2bag`): a one at each offset (accumulating, as
/// `index_add_` does), the first decremented, then the running sum; `n` entries.
fn make_offset2bag(offsets: &[i64], n: usize) -> Result<Vec<i64>> {
    let mut o = vec![0i64; n + 1];
    for &k in offsets {
        if !(0..=n as i64).contains(&k) {
            return Err(Error::index("index out of range in self"));
        }
        o[k as usize] += 1;
    }
    o[0] -= 1;
    let mut acc = 0;
    for v in o.iter_mut() {
        acc += *v;
        *v = acc;
    }
    o.truncate(n);
    Ok(o)
}

// ---------------------------------------------------------------------------------------------
// embedding_bag forward
// ---------------------------------------------------------------------------------------------

const SUM: i64 = 0;
const MEAN: i64 = 1;
const MAX: i64 = 2;

/// A float element of embedding_bag: [`Element`] (loaded into and stored from its op-math type
/// `Acc`, the accumulator: f32, f64 for double) extended with embedding_bag's own operations.
trait Bag: Element<Acc: Real> + PartialOrd {
    /// The start of a sum.
    #[inline(always)]
    fn acc_zero() -> Self::Acc {
        num_traits::Zero::zero()
    }
    #[inline(always)]
    fn fma(a: Self::Acc, b: Self::Acc, c: Self::Acc) -> Self::Acc {
        num_traits::Float::mul_add(a, b, c)
    }
    #[inline(always)]
    fn from_f64(x: f64) -> Self::Acc {
        Real::from_f64(x)
    }
    #[inline(always)]
    fn to_f64(a: Self::Acc) -> f64 {
        Real::to_f64(a)
    }
    /// `a / b` in the element type, as `output /= bag_size` computes it. Not forced inline:
    /// mean's pass over the output calls it out of line.
    fn div(a: Self, b: f64) -> Self {
        // The divisor is first converted to the element type, as `.to(output.options())`.
        Self::from_acc(a.to_acc() / Self::from_acc(Self::from_f64(b)).to_acc())
    }
    /// fbgemm's conversion of its f32 sums (round to nearest even, but half away from zero
    /// for bfloat16: `(bits + 0x8000) >> 16`).
    #[inline(always)]
    fn st_fbgemm(a: Self::Acc) -> Self {
        Self::from_acc(a)
    }
}

impl Bag for f32 {}
impl Bag for f64 {}
impl Bag for f16 {}

impl Bag for bf16 {
    fn st_fbgemm(a: f32) -> bf16 {
        if a.is_nan() {
            return bf16::from_f32(a);
        }
        bf16::from_bits((a.to_bits().wrapping_add(0x8000) >> 16) as u16)
    }
}

/// The checked arguments of `_embedding_bag` and its forward-only twin.
struct BagArgs {
    dtype: DType,
    index_dtype: DType,
    idx: Vec<i64>,
    offs: Vec<i64>,
    psw: Option<Tensor>,
    bags: usize,
    rows: usize,
    width: usize,
}

fn bag_args(
    weight: &TensorRef<'_>,
    indices: &TensorRef<'_>,
    offsets: &TensorRef<'_>,
    mode: i64,
    psw: Option<&TensorRef<'_>>,
    include_last_offset: bool,
) -> Result<BagArgs> {
    if indices.dim() != 1 && indices.dim() != 2 {
        return Err(Error::runtime(format!(
            "input has to be a 1D or 2D Tensor, but got Tensor of dimension {}",
            indices.dim()
        )));
    }
    if indices.dim() == 1 && offsets.dim() != 1 {
        return Err(Error::runtime(format!(
            "offsets has to be a 1D Tensor, but got Tensor of dimension {}",
            offsets.dim()
        )));
    }
    let (idx, idt) = read_index(indices)?;
    let (offs, odt) = read_index(offsets)?;
    let both_int = |d: DType| d == DType::I64 || d == DType::I32;
    // Indices and offsets are promoted to a common type before the checks name it.
    let common = if both_int(idt) && both_int(odt) {
        if idt == DType::I64 || odt == DType::I64 { DType::I64 } else { DType::I32 }
    } else if !both_int(idt) {
        idt
    } else {
        odt
    };
    check_index_type(common, "argument #1 'indices'", "embedding_bag")?;
    let dtype = DType::from_scalar_type(weight.dtype())?;
    if !matches!(dtype, DType::F16 | DType::BF16 | DType::F32 | DType::F64) {
        return Err(Error::runtime(format!(
            "Expected tensor for argument #1 'weight' to have one of the following scalar types: Half, BFloat16, Float, Double; but got {} instead (while checking arguments for embedding_bag)",
            legacy(dtype)
        )));
    }
    if weight.dim() != 2 {
        return Err(Error::runtime(format!(
            "weight has to be a 2D Tensor, but got Tensor of dimension {}",
            weight.dim()
        )));
    }
    if indices.dim() == 2 {
        return Err(Error::runtime(
            "Expected select_indices.numel() == add_indices.numel() to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)",
        ));
    }
    let n = idx.len() as i64;
    if let (Some(&first), Some(&last)) = (offs.first(), offs.last()) {
        if first != 0 {
            return Err(Error::runtime(format!(
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got {first}"
            )));
        }
        if last > n {
            return Err(Error::runtime(format!(
                "offsets[-1] can not be greater than input's length {n} but got offsets[-1] of {last}"
            )));
        }
    }
    let psw = match psw {
        Some(p) if p.is_defined() => {
            if mode != SUM {
                return Err(Error::runtime("embedding_bag: per_sample_weights only supported with mode='sum'"));
            }
            let pd = DType::from_scalar_type(p.dtype())?;
            if pd != dtype {
                return Err(Error::runtime(format!(
                    "Expected tensor for argument #1 'weight' to have the same type as tensor for argument #1 'per_sample_weights'; but type {} does not equal {} (while checking arguments for embedding_bag)",
                    legacy(dtype),
                    legacy(pd)
                )));
            }
            if p.dim() != 1 {
                return Err(Error::runtime(
                    "Expected per_sample_weights.value().dim() == 1 to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)",
                ));
            }
            if p.numel() != n {
                return Err(Error::runtime(
                    "Expected per_sample_weights.value().numel() == indices.numel() to be true, but got false.  (Could this error message be improved?  If so, please report an enhancement request to PyTorch.)",
                ));
            }
            let c = new_tensor(p.sizes(), dtype)?;
            crate::ops::copy::copy_(c.as_ref(), *p)?;
            Some(c)
        }
        _ => None,
    };
    if include_last_offset && offs.is_empty() {
        return Err(Error::runtime("include_last_offset: number of offset should be at least 1"));
    }
    let bags = offs.len() - usize::from(include_last_offset);
    let (rows, width) = (weight.sizes()[0].max(0) as usize, weight.sizes()[1].max(0) as usize);
    Ok(BagArgs { dtype, index_dtype: common, idx, offs, psw, bags, rows, width })
}

fn out_of_vocab(idx: i64) -> Error {
    Error::runtime(format!("embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be {idx}"))
}

/// `_embedding_bag` (`requires_grad`) and `_embedding_bag_forward_only`.
#[allow(clippy::too_many_arguments)]
pub fn embedding_bag(
    weight: TensorRef<'_>,
    indices: TensorRef<'_>,
    offsets: TensorRef<'_>,
    mode: i64,
    per_sample_weights: Option<TensorRef<'_>>,
    include_last_offset: bool,
    padding_idx: i64,
    requires_grad: bool,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    let a = bag_args(&weight, &indices, &offsets, mode, per_sample_weights.as_ref(), include_last_offset)?;
    let n = a.idx.len();
    let (bags, width) = (a.bags, a.width);
    let psw_unit = a.psw.as_ref().is_none_or(|p| p.as_ref().strides()[0] == 1);
    let fast = matches!(a.dtype, DType::F32 | DType::F16 | DType::BF16)
        && weight.strides()[1] == 1
        && psw_unit
        && padding_idx < 0;
    let offset2bag = if mode == MEAN || mode == MAX || !fast {
        // The bags of include_last_offset end at the last offset but one.
        Some(make_offset2bag(&a.offs[..bags.min(a.offs.len())], n)?)
    } else {
        None
    };
    let mut bag_size: Vec<i64> = if requires_grad || mode == MEAN || mode == MAX {
        (0..bags).map(|b| if b + 1 < bags { a.offs[b + 1] - a.offs[b] } else { n as i64 - a.offs[b] }).collect()
    } else {
        vec![0; a.offs.len()]
    };
    let out = new_tensor(&[bags as i64, width as i64], a.dtype)?;
    let op = out.as_ref().data_ptr() as usize;
    let mut max_idx = vec![0i64; if mode == MAX { bags * width } else { 0 }];
    let w = crate::ops::norm::dense(&weight)?;
    let wp = w.ptr;
    crate::dispatch!(a.dtype, [F16, BF16, F32, F64], |T| {
        // SAFETY: the dense weight holds rows·width elements.
        let wt = unsafe { std::slice::from_raw_parts(wp as *const T, a.rows * width) };
        // SAFETY: the new output holds bags·width elements.
        let o = unsafe { std::slice::from_raw_parts_mut(op as *mut T, bags * width) };
        if mode == MAX {
            bag_max::<T>(&a, wt, o, offset2bag.as_deref().unwrap_or_default(), &mut bag_size, &mut max_idx, padding_idx)?;
        } else {
            let psw: Option<&[T]> = a.psw.as_ref().map(|p| {
                // SAFETY: the contiguous copy holds n elements of the weight's dtype.
                unsafe { std::slice::from_raw_parts(p.as_ref().data_ptr() as *const T, n) }
            });
            let o2b = if fast { None } else { offset2bag.as_deref() };
            bag_sum::<T>(&a, wt, o, o2b, psw, &mut bag_size, padding_idx)?;
            if mode == MEAN {
                for (row, &bs) in o.chunks_mut(width.max(1)).zip(&bag_size) {
                    for v in row.iter_mut() {
                        *v = <T as Bag>::div(*v, bs.max(1) as f64);
                    }
                }
            } else {
                bag_size.iter_mut().for_each(|v| *v = 0);
            }
        }
        Ok(())
    }, else Err(not_implemented("embedding_bag_no_grad_cpu_out", a.dtype)))?;
    let o2b = offset2bag.unwrap_or_default();
    let o2b_t = index_tensor(&o2b, &[o2b.len() as i64], a.index_dtype)?;
    let bs_t = index_tensor(&bag_size, &[bag_size.len() as i64], a.index_dtype)?;
    let mi_t = if mode == MAX {
        index_tensor(&max_idx, &[bags as i64, width as i64], a.index_dtype)?
    } else {
        index_tensor(&bag_size, &[bag_size.len() as i64], a.index_dtype)?
    };
    Ok((out, o2b_t, bs_t, mi_t))
}

/// Sum (and mean's sum) of the bags. CPU's fast path (fbgemm; `offset2bag` is `None` here)
/// reads bag `b` from `offsets[b]` to the next offset (the indices' end for the last bag), fuses
/// per-sample weights into a multiply-add and rounds bfloat16 results half away from zero;
/// its slow path adds each index to bag `offset2bag[i]`, multiplying first. Bags are
/// independent, so they run in parallel, each in index order.
fn bag_sum<T: Bag>(
    a: &BagArgs,
    wt: &[T],
    o: &mut [T],
    offset2bag: Option<&[i64]>,
    psw: Option<&[T]>,
    bag_size: &mut [i64],
    padding_idx: i64,
) -> Result<()> {
    let (n, width) = (a.idx.len(), a.width);
    // Each bag's indices (positions into `idx`) in order.
    let members: Vec<Vec<usize>> = match offset2bag {
        None => (0..a.bags)
            .map(|b| {
                let lo = a.offs[b].max(0) as usize;
                let hi = if b + 1 < a.offs.len() { a.offs[b + 1] } else { n as i64 };
                (lo..(hi.max(0) as usize).min(n)).collect()
            })
            .collect(),
        Some(o2b) => {
            let mut m = vec![Vec::new(); a.bags];
            for (i, &b) in o2b.iter().enumerate() {
                let Some(list) = m.get_mut(b.max(0) as usize) else {
                    return Err(Error::index("index out of range in self"));
                };
                list.push(i);
            }
            m
        }
    };
    for (b, list) in members.iter().enumerate() {
        for &i in list {
            let k = a.idx[i];
            if !(0..a.rows as i64).contains(&k) {
                return Err(if offset2bag.is_none() {
                    Error::runtime(format!("Index {i} is out of bounds: {k}, range 0 to {}", a.rows))
                } else {
                    out_of_vocab(k)
                });
            }
            if k == padding_idx
                && let Some(s) = bag_size.get_mut(b)
            {
                *s -= 1;
            }
        }
    }
    let fused = offset2bag.is_none();
    let idx = &a.idx[..];
    let op = o.as_mut_ptr() as usize;
    regen_runtime::host::parallel_for(a.bags, (1usize << 14) / width.max(1) + 1, |start, end| {
        let mut acc = vec![T::acc_zero(); width];
        for (b, list) in members.iter().enumerate().take(end).skip(start) {
            acc.fill(T::acc_zero());
            for &i in list {
                let k = idx[i];
                if k == padding_idx {
                    continue;
                }
                let row = &wt[k as usize * width..(k as usize + 1) * width];
                match psw {
                    None => acc.iter_mut().zip(row).for_each(|(s, &x)| *s = *s + x.to_acc()),
                    Some(p) if fused => {
                        let wgt = p[i].to_acc();
                        acc.iter_mut().zip(row).for_each(|(s, &x)| *s = T::fma(wgt, x.to_acc(), *s));
                    }
                    Some(p) => {
                        let wgt = p[i].to_acc();
                        acc.iter_mut().zip(row).for_each(|(s, &x)| *s = *s + x.to_acc() * wgt);
                    }
                }
            }
            // SAFETY: row b of the output, owned by this task.
            let dst = unsafe { std::slice::from_raw_parts_mut((op as *mut T).add(b * width), width) };
            if fused {
                dst.iter_mut().zip(&acc).for_each(|(d, &s)| *d = T::st_fbgemm(s));
            } else {
                dst.iter_mut().zip(&acc).for_each(|(d, &s)| *d = T::from_acc(s));
            }
        }
    });
    Ok(())
}

/// Max of the bags, as `embedding_bag_cpu_max_out`: each index in order updates its bag's
/// columns where it is the bag's first or strictly greater, recording the row.
fn bag_max<T: Bag>(
    a: &BagArgs,
    wt: &[T],
    o: &mut [T],
    offset2bag: &[i64],
    bag_size: &mut [i64],
    max_idx: &mut [i64],
    padding_idx: i64,
) -> Result<()> {
    let width = a.width;
    o.iter_mut().for_each(|v| *v = T::from_acc(T::acc_zero()));
    let mut empty = vec![true; a.bags];
    for (&k, &b) in a.idx.iter().zip(offset2bag) {
        if !(0..a.rows as i64).contains(&k) {
            return Err(out_of_vocab(k));
        }
        let b = b.max(0) as usize;
        if b >= a.bags {
            return Err(Error::index("index out of range in self"));
        }
        if k == padding_idx {
            bag_size[b] -= 1;
            continue;
        }
        let row = &wt[k as usize * width..(k as usize + 1) * width];
        let first = empty[b];
        for (d, &x) in row.iter().enumerate() {
            let cur = &mut o[b * width + d];
            if first || x > *cur {
                *cur = x;
                max_idx[b * width + d] = k;
            }
        }
        empty[b] = false;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// embedding_bag backward
// ---------------------------------------------------------------------------------------------

/// `offset2bag` as the backward ops take it: CPU's fast path leaves it empty, so it is rebuilt
/// from every offset.
fn backward_offset2bag(
    indices: &[i64],
    offsets: Option<&TensorRef<'_>>,
    offset2bag: &TensorRef<'_>,
) -> Result<Vec<i64>> {
    if !indices.is_empty() && offset2bag.numel() == 0 {
        let Some(offsets) = offsets else { return Ok(Vec::new()) };
        let (offs, _) = read_index(offsets)?;
        return make_offset2bag(&offs, indices.len());
    }
    let (o2b, d) = read_index(offset2bag)?;
    check_index_type(d, "argument #1 'offset2bag'", "embedding_bag")?;
    Ok(o2b)
}

fn check_grad_dtype(grad: &TensorRef<'_>) -> Result<DType> {
    let dtype = DType::from_scalar_type(grad.dtype())?;
    if !matches!(dtype, DType::F16 | DType::BF16 | DType::F32 | DType::F64) {
        return Err(Error::runtime(format!(
            "Expected tensor for argument #1 'grad_' to have one of the following scalar types: Half, BFloat16, Float, Double; but got {} instead (while checking arguments for embedding_bag)",
            legacy(dtype)
        )));
    }
    if grad.dim() != 2 {
        return Err(Error::runtime(format!("grad has to be a 2D Tensor, but got Tensor of dimension {}", grad.dim())));
    }
    Ok(dtype)
}

/// `_embedding_bag_backward`: offset2bag rebuilt when empty, then the dense backward. Sparse
/// gradients are not supported on this device (its sparse family is excluded). Before 2.5
/// PyTorch decomposes the op into `_embedding_bag_dense_backward`, and this is unused.
#[allow(clippy::too_many_arguments)]
#[cfg_attr(not(regen_has_op = "_embedding_bag_backward"), allow(dead_code))]
pub fn bag_backward(
    grad: TensorRef<'_>,
    indices: TensorRef<'_>,
    offsets: TensorRef<'_>,
    offset2bag: TensorRef<'_>,
    bag_size: TensorRef<'_>,
    maximum_indices: TensorRef<'_>,
    num_weights: i64,
    scale_grad_by_freq: bool,
    mode: i64,
    sparse: bool,
    per_sample_weights: Option<TensorRef<'_>>,
    padding_idx: i64,
) -> Result<Tensor> {
    let (idx, idt) = read_index(&indices)?;
    check_index_type(idt, "argument #1 'indices'", "embedding_bag")?;
    check_index_type(DType::from_scalar_type(offsets.dtype())?, "argument #1 'offsets'", "embedding_bag")?;
    if sparse {
        return Err(Error::runtime(
            "embedding_bag: sparse gradients (sparse=True) are not supported on the regen device; use sparse=False",
        ));
    }
    let o2b = backward_offset2bag(&idx, Some(&offsets), &offset2bag)?;
    dense_bag_backward(
        grad,
        &idx,
        &o2b,
        bag_size,
        maximum_indices,
        num_weights,
        scale_grad_by_freq,
        mode,
        per_sample_weights,
        padding_idx,
    )
}

/// `_embedding_bag_dense_backward`.
#[allow(clippy::too_many_arguments)]
pub fn bag_dense_backward(
    grad: TensorRef<'_>,
    indices: TensorRef<'_>,
    offset2bag: TensorRef<'_>,
    bag_size: TensorRef<'_>,
    maximum_indices: TensorRef<'_>,
    num_weights: i64,
    scale_grad_by_freq: bool,
    mode: i64,
    per_sample_weights: Option<TensorRef<'_>>,
    padding_idx: i64,
) -> Result<Tensor> {
    let (idx, idt) = read_index(&indices)?;
    check_index_type(idt, "argument #1 'indices'", "embedding_bag")?;
    let (o2b, _) = read_index(&offset2bag)?;
    dense_bag_backward(
        grad,
        &idx,
        &o2b,
        bag_size,
        maximum_indices,
        num_weights,
        scale_grad_by_freq,
        mode,
        per_sample_weights,
        padding_idx,
    )
}

/// The weight's gradient: under max, each non-empty bag's gradient added at its winning rows
/// (`index_add_`, bag order, element-type sums); under sum and mean, as
/// `_embedding_bag_dense_backward_cpu_sum_mean`: indices stably sorted, each distinct row adding
/// `scale · grad[bag]` for its occurrences in order (`axpy`; the scale is the per-sample weight,
/// over the row's count under scale_grad_by_freq, over the bag's size under mean).
#[allow(clippy::too_many_arguments)]
fn dense_bag_backward(
    grad: TensorRef<'_>,
    idx: &[i64],
    o2b: &[i64],
    bag_size: TensorRef<'_>,
    maximum_indices: TensorRef<'_>,
    num_weights: i64,
    scale_grad_by_freq: bool,
    mode: i64,
    per_sample_weights: Option<TensorRef<'_>>,
    padding_idx: i64,
) -> Result<Tensor> {
    let dtype = check_grad_dtype(&grad)?;
    if num_weights < 0 {
        return Err(Error::runtime(format!("Trying to create tensor with negative dimension {num_weights}")));
    }
    let (nbags, width) = (grad.sizes()[0].max(0) as usize, grad.sizes()[1].max(0) as usize);
    let rows = num_weights as usize;
    let out = new_tensor(&[num_weights, width as i64], dtype)?;
    let op = out.as_ref().data_ptr() as usize;
    let g = dense(&grad)?;
    let (bs, _) = read_index(&bag_size)?;
    let oob = |k: i64| Error::index(format!("index {k} is out of bounds for dimension 0 with size {num_weights}"));
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        // SAFETY: the new output holds rows·width elements; the dense gradient nbags·width.
        let (o, gr) = unsafe {
            (
                std::slice::from_raw_parts_mut(op as *mut T, rows * width),
                std::slice::from_raw_parts(g.ptr as *const T, nbags * width),
            )
        };
        o.iter_mut().for_each(|v| *v = T::from_acc(<T as Bag>::acc_zero()));
        let max_mode = || -> Result<()> {
            let (mi, _) = read_index(&maximum_indices)?;
            for (b, &size) in bs.iter().enumerate() {
                if size == 0 {
                    continue;
                }
                if b >= nbags || mi.len() < (b + 1) * width {
                    return Err(Error::index("index out of range in self"));
                }
                for d in 0..width {
                    let k = mi[b * width + d];
                    if !(0..num_weights).contains(&k) {
                        return Err(Error::index("index out of range in self"));
                    }
                    // SAFETY: element (k, d) of the output (k < rows checked above).
                    let dst = unsafe { &mut *(op as *mut T).add(k as usize * width + d) };
                    *dst = T::from_acc((*dst).to_acc() + gr[b * width + d].to_acc());
                }
            }
            Ok(())
        };
        if mode == MAX {
            max_mode()?;
            return Ok(out);
        }
        if o2b.len() != idx.len() {
            return Err(Error::runtime("offset2bag must have one entry per index"));
        }
        let psw: Option<Vec<T>> = match per_sample_weights.as_ref() {
            Some(p) if p.is_defined() => {
                if p.numel() as usize != idx.len() || DType::from_scalar_type(p.dtype())? != dtype {
                    return Err(Error::runtime("per_sample_weights must have one element per index and the gradient's dtype"));
                }
                let d = dense(p)?;
                // SAFETY: the dense weights hold idx.len() elements of the gradient's dtype.
                Some(unsafe { std::slice::from_raw_parts(d.ptr as *const T, idx.len()) }.to_vec())
            }
            _ => None,
        };
        let mut counts = vec![0i64; rows];
        for &k in idx {
            if !(0..num_weights).contains(&k) {
                return Err(oob(k));
            }
            counts[k as usize] += 1;
        }
        // Occurrences per row in index order (the stable sort's order within a row).
        let mut order: Vec<usize> = (0..idx.len()).collect();
        order.sort_by_key(|&i| idx[i]);
        let mut groups: Vec<(usize, usize)> = Vec::new();
        let mut s = 0;
        while s < order.len() {
            let mut e = s + 1;
            while e < order.len() && idx[order[e]] == idx[order[s]] {
                e += 1;
            }
            groups.push((s, e));
            s = e;
        }
        for &j in &order {
            let b = o2b[j];
            if !(0..nbags as i64).contains(&b) || (mode == MEAN && !(0..bs.len() as i64).contains(&b)) {
                return Err(Error::index("index out of range in self"));
            }
        }
        let orp = o.as_mut_ptr() as usize;
        regen_runtime::host::parallel_for(groups.len(), if idx.len() > 1000 { 1 } else { groups.len().max(1) }, |start, end| {
            for &(s, e) in &groups[start..end] {
                let k = idx[order[s]];
                if k == padding_idx {
                    continue;
                }
                // SAFETY: row k of the output, owned by this task (rows are distinct per group).
                let dst = unsafe { std::slice::from_raw_parts_mut((orp as *mut T).add(k as usize * width), width) };
                for &j in &order[s..e] {
                    let b = o2b[j] as usize;
                    let mut scale = 1.0f64;
                    if let Some(p) = &psw {
                        scale = <T as Bag>::to_f64(p[j].to_acc());
                    }
                    if scale_grad_by_freq {
                        scale /= counts[k as usize] as f64;
                    }
                    if mode == MEAN && bs[b] != 0 {
                        scale /= bs[b] as f64;
                    }
                    let src = &gr[b * width..(b + 1) * width];
                    axpy::<T>(dst, src, scale);
                }
            }
        });
        Ok(())
    }, else Err(not_implemented("embedding_bag_backward", dtype)))?;
    Ok(out)
}

/// `y += (scalar_t)alpha · x` as `cpublas::axpy`: exact adds for alpha 1, a fused multiply-add
/// for float and double (BLAS), each operation rounded for float16 and bfloat16.
fn axpy<T: Bag>(y: &mut [T], x: &[T], alpha: f64) {
    let half = std::mem::size_of::<T>() == 2;
    let a = T::from_f64(alpha);
    let a = T::from_acc(a).to_acc();
    for (d, &s) in y.iter_mut().zip(x) {
        *d = if alpha == 1.0 {
            T::from_acc(d.to_acc() + s.to_acc())
        } else if half {
            T::from_acc(d.to_acc() + T::from_acc(a * s.to_acc()).to_acc())
        } else {
            T::from_acc(T::fma(a, s.to_acc(), d.to_acc()))
        };
    }
}

/// `_embedding_bag_per_sample_weights_backward`: per index, the dot product of its bag's
/// gradient with its weight row (0 for the padding index).
#[allow(clippy::too_many_arguments)]
pub fn per_sample_weights_backward(
    grad: TensorRef<'_>,
    weight: TensorRef<'_>,
    indices: TensorRef<'_>,
    offsets: TensorRef<'_>,
    offset2bag: TensorRef<'_>,
    mode: i64,
    padding_idx: i64,
) -> Result<Tensor> {
    if mode != SUM {
        return Err(Error::runtime("embedding_bag_backward: per_sample_weights only supported for mode='sum'"));
    }
    let dtype = check_grad_dtype(&grad)?;
    let (idx, idt) = read_index(&indices)?;
    check_index_type(idt, "argument #1 'indices'", "embedding_bag")?;
    let o2b = backward_offset2bag(&idx, Some(&offsets), &offset2bag)?;
    let width = grad.sizes()[1].max(0) as usize;
    let nbags = grad.sizes()[0].max(0) as usize;
    if weight.dim() != 2 || weight.sizes()[1] as usize != width || DType::from_scalar_type(weight.dtype())? != dtype {
        return Err(Error::runtime("weight must be 2-D with the gradient's width and dtype"));
    }
    let rows = weight.sizes()[0].max(0) as usize;
    let out = new_tensor(&[idx.len() as i64], dtype)?;
    let op = out.as_ref().data_ptr() as usize;
    let (g, w) = (dense(&grad)?, dense(&weight)?);
    crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
        // SAFETY: the new output holds idx.len() elements; the dense gradient and weight theirs.
        let (o, gr, wt) = unsafe {
            (
                std::slice::from_raw_parts_mut(op as *mut T, idx.len()),
                std::slice::from_raw_parts(g.ptr as *const T, nbags * width),
                std::slice::from_raw_parts(w.ptr as *const T, rows * width),
            )
        };
        for (s, v) in o.iter_mut().enumerate() {
            *v = T::from_acc(<T as Bag>::acc_zero());
            let (k, b) = (idx[s], o2b.get(s).copied().unwrap_or(-1));
            if k == padding_idx {
                continue;
            }
            if !(0..rows as i64).contains(&k) || !(0..nbags as i64).contains(&b) {
                return Err(Error::index("index out of range in self"));
            }
            let (gb, wk) = (&gr[b as usize * width..(b as usize + 1) * width], &wt[k as usize * width..(k as usize + 1) * width]);
            let mut acc = <T as Bag>::acc_zero();
            for (&x, &y) in gb.iter().zip(wk) {
                acc += x.to_acc() * y.to_acc();
            }
            *v = T::from_acc(acc);
        }
        Ok(())
    }, else Err(not_implemented("_embedding_bag_per_sample_weights_backward_cpu", dtype)))?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// embedding_renorm_
// ---------------------------------------------------------------------------------------------

/// `embedding_renorm_`: each distinct index (in sorted order) whose row's `norm_type`-norm
/// exceeds `max_norm` has its row scaled by `max_norm / (norm + 1e-7)`, the norm and the scale
/// rounded to the element type as CPU's `row.norm(p).item()` and `row *= scale` round them.
pub fn renorm_(self_: TensorRef<'_>, indices: TensorRef<'_>, max_norm: f64, norm_type: f64) -> Result<()> {
    if self_.dim() != 2 {
        return Err(Error::runtime(format!(
            "Expected 2-dimensional tensor, but got {}-dimensional tensor for argument #1 'self' (while checking arguments for embedding_renorm_)",
            self_.dim()
        )));
    }
    let (mut idx, idt) = read_index(&indices)?;
    check_index_type(idt, "argument #2 'indices'", "embedding_renorm_")?;
    let dtype = DType::from_scalar_type(self_.dtype())?;
    idx.sort_unstable();
    idx.dedup();
    let (rows, width) = (self_.sizes()[0], self_.sizes()[1].max(0) as usize);
    let (s0, s1) = (self_.strides()[0] as isize, self_.strides()[1] as isize);
    let base = self_.data_ptr() as usize;
    for &k in &idx {
        if !(-rows..rows).contains(&k) {
            return Err(Error::index(format!(
                "select(): index {k} out of range for tensor of size {} at dimension 0",
                fmt_sizes(self_.sizes())
            )));
        }
        let k = if k < 0 { k + rows } else { k } as isize;
        crate::dispatch!(dtype, [F16, BF16, F32, F64], |T| {
            // SAFETY: row k of self through its strides.
            let at = |j: usize| unsafe { (base as *mut T).offset(k * s0 + j as isize * s1) };
            // SAFETY: j < width and k was wrapped into 0..rows above, so at(j) is element (k, j) of
            // self, a live 2-d tensor of the dispatched dtype T.
            let norm = row_norm((0..width).map(|j| <T as Bag>::to_f64(unsafe { *at(j) }.to_acc())), norm_type);
            let norm = <T as Bag>::to_f64(T::from_acc(<T as Bag>::from_f64(norm)).to_acc());
            if norm > max_norm {
                // `row *= scale` casts the scalar to the element type, then multiplies in op-math.
                let scale = T::from_acc(<T as Bag>::from_f64(max_norm / (norm + 1e-7))).to_acc();
                for j in 0..width {
                    // SAFETY: as above.
                    unsafe { *at(j) = T::from_acc((*at(j)).to_acc() * scale) };
                }
            }
            Ok(())
        }, else Err(not_implemented("norm_cpu", dtype)))?;
    }
    Ok(())
}

/// A vector norm of order `p` in double, as `linalg_vector_norm` defines it.
fn row_norm(v: impl Iterator<Item = f64>, p: f64) -> f64 {
    if p == f64::INFINITY {
        return v.fold(0.0, |m, x| if x.abs() > m || x.is_nan() { x.abs() } else { m });
    }
    if p == f64::NEG_INFINITY {
        return v.fold(f64::INFINITY, |m, x| if x.abs() < m || x.is_nan() { x.abs() } else { m });
    }
    if p == 0.0 {
        return v.filter(|x| *x != 0.0).count() as f64;
    }
    let s: f64 = v
        .map(|x| {
            if p == 1.0 {
                x.abs()
            } else if p == 2.0 {
                x * x
            } else {
                x.abs().powf(p)
            }
        })
        .sum();
    if p == 1.0 {
        s
    } else if p == 2.0 {
        s.sqrt()
    } else {
        s.powf(1.0 / p)
    }
}

/// This family's kernels: group `embedding` of regen.toml's `[implement]`.
impl crate::EmbeddingKernels for crate::Reference {
    fn embedding_dense_backward(
        &self,
        grad_output: TensorRef<'_>,
        indices: TensorRef<'_>,
        num_weights: i64,
        padding_idx: i64,
        scale_grad_by_freq: bool,
    ) -> Result<Tensor> {
        dense_backward(grad_output, indices, num_weights, padding_idx, scale_grad_by_freq)
    }
    fn embedding_renorm_inplace(
        &self,
        self_: TensorRef<'_>,
        indices: TensorRef<'_>,
        max_norm: f64,
        norm_type: f64,
    ) -> Result<()> {
        renorm_(self_, indices, max_norm, norm_type)
    }
    fn _embedding_bag_forward_only(
        &self,
        weight: TensorRef<'_>,
        indices: TensorRef<'_>,
        offsets: TensorRef<'_>,
        _scale_grad_by_freq: bool,
        mode: i64,
        _sparse: bool,
        per_sample_weights: Option<TensorRef<'_>>,
        include_last_offset: bool,
        padding_idx: i64,
    ) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
        use embedding_bag;
        embedding_bag(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx, false)
    }
    fn _embedding_bag(
        &self,
        weight: TensorRef<'_>,
        indices: TensorRef<'_>,
        offsets: TensorRef<'_>,
        _scale_grad_by_freq: bool,
        mode: i64,
        _sparse: bool,
        per_sample_weights: Option<TensorRef<'_>>,
        include_last_offset: bool,
        padding_idx: i64,
    ) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
        use embedding_bag;
        embedding_bag(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx, true)
    }
    #[cfg(regen_has_op = "_embedding_bag_backward")]
    fn _embedding_bag_backward(
        &self,
        grad: TensorRef<'_>,
        indices: TensorRef<'_>,
        offsets: TensorRef<'_>,
        offset2bag: TensorRef<'_>,
        bag_size: TensorRef<'_>,
        maximum_indices: TensorRef<'_>,
        num_weights: i64,
        scale_grad_by_freq: bool,
        mode: i64,
        sparse: bool,
        per_sample_weights: Option<TensorRef<'_>>,
        padding_idx: i64,
    ) -> Result<Tensor> {
        bag_backward(
            grad,
            indices,
            offsets,
            offset2bag,
            bag_size,
            maximum_indices,
            num_weights,
            scale_grad_by_freq,
            mode,
            sparse,
            per_sample_weights,
            padding_idx,
        )
    }
    fn _embedding_bag_dense_backward(
        &self,
        grad: TensorRef<'_>,
        indices: TensorRef<'_>,
        offset2bag: TensorRef<'_>,
        bag_size: TensorRef<'_>,
        maximum_indices: TensorRef<'_>,
        num_weights: i64,
        scale_grad_by_freq: bool,
        mode: i64,
        per_sample_weights: Option<TensorRef<'_>>,
        padding_idx: i64,
    ) -> Result<Tensor> {
        bag_dense_backward(
            grad,
            indices,
            offset2bag,
            bag_size,
            maximum_indices,
            num_weights,
            scale_grad_by_freq,
            mode,
            per_sample_weights,
            padding_idx,
        )
    }
    fn _embedding_bag_per_sample_weights_backward(
        &self,
        grad: TensorRef<'_>,
        weight: TensorRef<'_>,
        indices: TensorRef<'_>,
        offsets: TensorRef<'_>,
        offset2bag: TensorRef<'_>,
        mode: i64,
        padding_idx: i64,
    ) -> Result<Tensor> {
        use per_sample_weights_backward;
        per_sample_weights_backward(grad, weight, indices, offsets, offset2bag, mode, padding_idx)
    }
}
