//! The device's own ops (regen.toml's `[[custom_op]]`, `torch.ops.regen.*`): PyG's scatter sum and
//! scatter max with their backward ops, on the index engine's scatter and gather. The same
//! kernels serve CPU tensors (`cpu = true`): both are host memory.
//!
//! `index` has the shape of `src`, or is 1-d with `src.size(dim)` entries (PyG's broadcast: one
//! target per slice along `dim`). The output has `src`'s shape with `dim_size` at `dim`.

use regen_runtime::{Error, Result, Tensor, TensorRef};

use regen_kernels::engine::dtype::{DType, dtype_of};
use regen_kernels::engine::iter::{fmt_sizes, new_tensor, wrap_dim};
use regen_kernels::ops::copy;
use regen_kernels::ops::index::{self as ix, Reduce, Source};

fn same_device(op: &str, a: &TensorRef<'_>, b: &TensorRef<'_>) -> Result<()> {
    let (x, y) = (a.device(), b.device());
    if (x.device_type, x.index) != (y.device_type, y.index) {
        return Err(Error::runtime(format!("{op}(): Expected all tensors to be on the same device")));
    }
    Ok(())
}

/// A new contiguous tensor of zeros (all-zero bytes are zero in every dtype).
fn zeros(sizes: &[i64], dtype: DType) -> Result<Tensor> {
    let t = new_tensor(sizes, dtype)?;
    let n = sizes.iter().product::<i64>().max(0) as usize * dtype.size();
    if n > 0 {
        // SAFETY: a new contiguous tensor of exactly `n` bytes.
        unsafe { std::ptr::write_bytes(t.as_ref().data_ptr().cast::<u8>(), 0, n) };
    }
    Ok(t)
}

/// `index` with the shape `sizes`: itself, or a 1-d index of `sizes[dim]` entries expanded along
/// every other dimension (a view, no copy).
fn broadcast(op: &str, index: TensorRef<'_>, sizes: &[i64], dim: usize, what: &str) -> Result<Tensor> {
    if index.sizes() == sizes {
        return index.retain();
    }
    if index.dim() == 1 && sizes.get(dim) == Some(&index.sizes()[0]) {
        let strides: Vec<i64> = (0..sizes.len()).map(|d| if d == dim { index.strides()[0] } else { 0 }).collect();
        return regen_runtime::host::as_strided(&index, sizes, &strides, index.storage_offset());
    }
    Err(Error::runtime(format!(
        "{op}(): index must have the shape of {what} {} or be 1-d with {} entries, got {}",
        fmt_sizes(sizes),
        sizes.get(dim).copied().unwrap_or(1),
        fmt_sizes(index.sizes())
    )))
}

/// The checks both forward ops share: devices, `dim`, `dim_size`; the output's sizes and the
/// broadcast index.
fn prepare(
    op: &str,
    src: TensorRef<'_>,
    index: TensorRef<'_>,
    dim: i64,
    dim_size: i64,
) -> Result<(usize, Vec<i64>, Tensor)> {
    same_device(op, &src, &index)?;
    if src.dim() == 0 {
        return Err(Error::runtime(format!("{op}(): src must have at least one dimension")));
    }
    let d = wrap_dim(dim, src.dim())?;
    if dim_size < 0 {
        return Err(Error::runtime(format!("{op}(): dim_size must be non-negative, got {dim_size}")));
    }
    let index = broadcast(op, index, src.sizes(), d, "src")?;
    let mut sizes = src.sizes().to_vec();
    sizes[d] = dim_size;
    Ok((d, sizes, index))
}

/// `regen::scatter_sum`: zeros, then `out.scatter_add_(dim, index, src)` (the engine's order, so
/// CPU's sums bit for bit).
pub fn scatter_sum(src: TensorRef<'_>, index: TensorRef<'_>, dim: i64, dim_size: i64) -> Result<Tensor> {
    let (d, sizes, index) = prepare("scatter_sum", src, index, dim, dim_size)?;
    let out = zeros(&sizes, dtype_of(&src)?)?;
    ix::scatter(out.as_ref(), d as i64, index.as_ref(), Source::Tensor(src), Reduce::Add, true, out.as_ref())?;
    Ok(out)
}

/// `regen::scatter_sum_backward`: `grad.gather(dim, index)`, in the shape of the forward's `src`.
pub fn scatter_sum_backward(grad: TensorRef<'_>, index: TensorRef<'_>, dim: i64) -> Result<Tensor> {
    same_device("scatter_sum_backward", &grad, &index)?;
    let d = wrap_dim(dim, grad.dim())?;
    let mut sizes = grad.sizes().to_vec();
    if index.dim() == 1 && !sizes.is_empty() {
        sizes[d] = index.sizes()[0];
    } else {
        sizes = index.sizes().to_vec();
    }
    let index = broadcast("scatter_sum_backward", index, &sizes, d, "the source")?;
    let out = new_tensor(&sizes, dtype_of(&grad)?)?;
    ix::gather(grad, d as i64, index.as_ref(), out.as_ref())?;
    Ok(out)
}

/// A contiguous copy of `t` in `dtype`.
fn contiguous(t: TensorRef<'_>, dtype: DType) -> Result<Tensor> {
    let c = new_tensor(t.sizes(), dtype)?;
    copy::copy_(c.as_ref(), t)?;
    Ok(c)
}

/// Elements of a contiguous tensor.
///
/// # Safety
/// `t` is contiguous with elements of type `T`, and nothing writes it while the slice lives.
unsafe fn elements<T>(t: &Tensor) -> &[T] {
    let n = t.as_ref().numel().max(0) as usize;
    if n == 0 {
        return &[];
    }
    // SAFETY: per the contract.
    unsafe { std::slice::from_raw_parts(t.as_ref().data_ptr().cast::<T>(), n) }
}

/// `(outer, n, inner)`: `sizes` around dimension `d`.
fn split(sizes: &[i64], d: usize) -> (usize, usize, usize) {
    let p = |s: &[i64]| s.iter().product::<i64>().max(0) as usize;
    (p(&sizes[..d]), sizes[d].max(0) as usize, p(&sizes[d + 1..]))
}

/// The first position along `dim` whose element equals its target's maximum (NaN matching NaN),
/// or `n` where nothing reached the target: PyG's `argmax`.
fn first_max<T: Copy + PartialEq>(
    src: &[T],
    index: &[i64],
    out: &[T],
    (outer, n, inner): (usize, usize, usize),
    dim_size: usize,
) -> Vec<i64> {
    let mut arg = vec![n as i64; outer * dim_size * inner];
    #[allow(clippy::eq_op)]
    let same = |a: T, b: T| a == b || (a != a && b != b);
    for o in 0..outer {
        for e in 0..n {
            for i in 0..inner {
                let k = (o * n + e) * inner + i;
                let t = (o * dim_size + index[k] as usize) * inner + i;
                if arg[t] == n as i64 && same(src[k], out[t]) {
                    arg[t] = e as i64;
                }
            }
        }
    }
    arg
}

/// `regen::scatter_max`: the maximum per target (`scatter_reduce_(amax, include_self=False)` on
/// zeros: targets nothing reaches stay 0) and the position along `dim` it came from.
pub fn scatter_max(src: TensorRef<'_>, index: TensorRef<'_>, dim: i64, dim_size: i64) -> Result<(Tensor, Tensor)> {
    let (d, sizes, index) = prepare("scatter_max", src, index, dim, dim_size)?;
    let dtype = dtype_of(&src)?;
    let out = zeros(&sizes, dtype)?;
    ix::scatter(out.as_ref(), d as i64, index.as_ref(), Source::Tensor(src), Reduce::Max, false, out.as_ref())?;
    let shape = split(src.sizes(), d);
    let idx = contiguous(index.as_ref(), DType::I64)?;
    // Compared exactly: integers as i64, floats (f16/bf16/f32 exactly) as f64.
    let arg = if dtype.is_floating() {
        let (s, o) = (contiguous(src, DType::F64)?, contiguous(out.as_ref(), DType::F64)?);
        // SAFETY: contiguous copies made above, of these element types, read only.
        unsafe { first_max(elements::<f64>(&s), elements::<i64>(&idx), elements::<f64>(&o), shape, dim_size as usize) }
    } else {
        let (s, o) = (contiguous(src, DType::I64)?, contiguous(out.as_ref(), DType::I64)?);
        // SAFETY: as above.
        unsafe { first_max(elements::<i64>(&s), elements::<i64>(&idx), elements::<i64>(&o), shape, dim_size as usize) }
    };
    let argmax = new_tensor(&sizes, DType::I64)?;
    if !arg.is_empty() {
        // SAFETY: a new contiguous i64 tensor of `arg.len()` elements.
        unsafe { std::ptr::copy_nonoverlapping(arg.as_ptr(), argmax.as_ref().data_ptr().cast::<i64>(), arg.len()) };
    }
    Ok((out, argmax))
}

/// `regen::scatter_max_backward`: each target's gradient to the source element that was its
/// maximum; zeros elsewhere.
pub fn scatter_max_backward(
    grad_out: TensorRef<'_>,
    src: TensorRef<'_>,
    argmax: TensorRef<'_>,
    dim: i64,
) -> Result<Tensor> {
    same_device("scatter_max_backward", &grad_out, &argmax)?;
    same_device("scatter_max_backward", &grad_out, &src)?;
    if src.dim() == 0 {
        return Err(Error::runtime("scatter_max_backward(): src must have at least one dimension"));
    }
    let d = wrap_dim(dim, src.dim())?;
    let mut expected = src.sizes().to_vec();
    expected[d] = grad_out.sizes().get(d).copied().unwrap_or(-1);
    if grad_out.sizes() != expected.as_slice() || argmax.sizes() != expected.as_slice() {
        return Err(Error::runtime(format!(
            "scatter_max_backward(): grad_out and argmax must have the sizes {}, got {} and {}",
            fmt_sizes(&expected),
            fmt_sizes(grad_out.sizes()),
            fmt_sizes(argmax.sizes())
        )));
    }
    let dtype = dtype_of(&grad_out)?;
    let grad_src = zeros(src.sizes(), dtype)?;
    let (outer, n, inner) = split(src.sizes(), d);
    let dim_size = expected[d].max(0) as usize;
    let (g, a) = (contiguous(grad_out, dtype)?, contiguous(argmax, DType::I64)?);
    // SAFETY: `a` is a contiguous i64 copy, read only.
    let arg = unsafe { elements::<i64>(&a) };
    regen_kernels::dispatch_all!(dtype, |T| {
        // SAFETY: `g` is a contiguous copy of this dtype, read only.
        let g = unsafe { elements::<T>(&g) };
        let dst = grad_src.as_ref().data_ptr().cast::<T>();
        for o in 0..outer {
            for j in 0..dim_size {
                for i in 0..inner {
                    let t = (o * dim_size + j) * inner + i;
                    let e = arg[t];
                    if (0..n as i64).contains(&e) {
                        // SAFETY: inside the new contiguous `grad_src` (o < outer, e < n, i < inner).
                        unsafe { *dst.add((o * n + e as usize) * inner + i) = g[t] };
                    }
                }
            }
        }
    });
    Ok(grad_src)
}

/// The device's own ops (regen.toml's `[[custom_op]]`): the `Kernels` trait's own methods.
impl crate::generated::Kernels for crate::backend::Backend {
    fn regen_scatter_sum(&self, src: TensorRef<'_>, index: TensorRef<'_>, dim: i64, dim_size: i64) -> Result<Tensor> {
        scatter_sum(src, index, dim, dim_size)
    }
    fn regen_scatter_sum_backward(&self, grad: TensorRef<'_>, index: TensorRef<'_>, dim: i64) -> Result<Tensor> {
        scatter_sum_backward(grad, index, dim)
    }
    fn regen_scatter_max(
        &self,
        src: TensorRef<'_>,
        index: TensorRef<'_>,
        dim: i64,
        dim_size: i64,
    ) -> Result<(Tensor, Tensor)> {
        scatter_max(src, index, dim, dim_size)
    }
    fn regen_scatter_max_backward(
        &self,
        grad_out: TensorRef<'_>,
        src: TensorRef<'_>,
        argmax: TensorRef<'_>,
        dim: i64,
    ) -> Result<Tensor> {
        scatter_max_backward(grad_out, src, argmax, dim)
    }
}
