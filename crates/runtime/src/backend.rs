//! The "regen" device's native kernels: the generated `Kernels` trait implemented on host memory.
//!
//! Each method checks what PyTorch checks (shapes, dtypes), sizes its output through the host
//! services, and runs a loop from [`crate::ops`]. Every call is counted, so tests can tell a
//! native kernel from the CPU fallback.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::args::{Device, Layout, MemoryFormat, Scalar, ScalarType, Storage, Tensor, TensorRef};
use crate::error::{Error, Result};
use crate::generated::Kernels;
use crate::host;
use crate::ops::{self, Binary, Unary};
use crate::view::{DType, Value, View, broadcast_shapes, check_can_cast, contiguous_strides, result_type};

static CALLS: Mutex<BTreeMap<&'static str, u64>> = Mutex::new(BTreeMap::new());
static PANIC_ON: Mutex<Option<String>> = Mutex::new(None);

/// Calls of each native kernel so far, by op key.
pub fn native_calls(op: &str) -> u64 {
    CALLS.lock().map(|c| c.get(op).copied().unwrap_or(0)).unwrap_or(0)
}

/// Makes the kernel of `op` panic (a test hook for error propagation); `None` to stop.
pub fn set_panic_on(op: Option<String>) {
    if let Ok(mut p) = PANIC_ON.lock() {
        *p = op;
    }
}

fn enter(op: &'static str) {
    if let Ok(mut calls) = CALLS.lock() {
        *calls.entry(op).or_default() += 1;
    }
    let panics = PANIC_ON.lock().map(|p| p.as_deref() == Some(op)).unwrap_or(false);
    if panics {
        panic!("test hook: {op} was asked to panic");
    }
}

fn scalar_value(s: Scalar) -> Value {
    match s {
        Scalar::Float(f) | Scalar::Complex(f, _) => Value::Float(f),
        Scalar::Int(i) => Value::Int(i),
        Scalar::Bool(b) => Value::Bool(b),
    }
}

/// Resizes `out` to `shape` when it differs (as `resize_output` does) and runs `f` on it after.
fn with_size<T>(out: &TensorRef<'_>, shape: &[i64], f: impl FnOnce(&TensorRef<'_>) -> Result<T>) -> Result<T> {
    if out.sizes() == shape {
        return f(out);
    }
    let desc = host::resize(out, shape)?;
    // SAFETY: the host describes the live, resized tensor, unchanged while `f` runs.
    f(&unsafe { TensorRef::from_raw(&desc) })
}

/// `out` resized to `shape` if needed, as a view.
fn sized_output(out: &TensorRef<'_>, shape: &[i64]) -> Result<View> {
    with_size(out, shape, View::of)
}

fn check_device(t: &TensorRef<'_>, op: &str) -> Result<()> {
    // CPU (0) zero-dimensional tensors are wrapped scalars (`x + 1`); PrivateUse1 is 20.
    const CPU: i32 = 0;
    const PRIVATE_USE1: i32 = 20;
    let device = t.device();
    if device.device_type == PRIVATE_USE1 || (device.device_type == CPU && t.dim() == 0) {
        Ok(())
    } else {
        Err(Error::runtime(format!(
            "{op}: expected all tensors on the regen device (or CPU scalars), found a tensor of device type {}",
            device.device_type
        )))
    }
}

/// Copies `src` into `dst` (same shape, or broadcastable): raw bytes when the dtypes match,
/// so any dtype moves between CPU and the device; converting otherwise.
fn copy_into(src: &TensorRef<'_>, dst: &TensorRef<'_>) -> Result<()> {
    // Device memory is host memory: CPU and device tensors copy the same way.
    if src.dtype() == dst.dtype()
        && let Some(elem) = crate::view::element_size(src.dtype())
    {
        let geometry = |t: &TensorRef<'_>| View {
            data: t.data_ptr().cast(),
            sizes: t.sizes().to_vec(),
            strides: t.strides().to_vec(),
            dtype: DType::U8,
        };
        // SAFETY: both describe live tensors of `elem`-byte elements.
        unsafe { ops::copy_bytes(&geometry(src), &geometry(dst), elem) };
        return Ok(());
    }
    let (s, d) = (View::of(src)?, View::of(dst)?);
    // SAFETY: both views describe live tensors.
    unsafe { ops::copy(&s, &d) };
    Ok(())
}

pub struct Backend;

impl Backend {
    fn binary(
        &self,
        op: Binary,
        a: TensorRef<'_>,
        b: TensorRef<'_>,
        alpha: Value,
        out: TensorRef<'_>,
        name: &str,
    ) -> Result<()> {
        for t in [&a, &b, &out] {
            check_device(t, name)?;
        }
        let (va, vb) = (View::of(&a)?, View::of(&b)?);
        let mut result = result_type(&[&va, &vb]);
        if op == Binary::Div && result.category() != crate::view::Category::Floating {
            result = DType::F32;
        }
        let out_dtype = DType::from_scalar_type(out.dtype())?;
        check_can_cast(result, out_dtype)?;
        let shape = broadcast_shapes(&[&va.sizes, &vb.sizes])?;
        let vo = sized_output(&out, &shape)?;
        // SAFETY: the views describe live tensors for the duration of the call.
        unsafe { ops::binary(op, &va, &vb, alpha, &vo) }
    }

    fn unary(&self, op: Unary, a: TensorRef<'_>, out: TensorRef<'_>, name: &str) -> Result<()> {
        check_device(&a, name)?;
        let va = View::of(&a)?;
        if op == Unary::Abs && va.dtype == DType::Bool {
            return Err(Error::runtime("\"abs_cpu\" not implemented for 'Bool'"));
        }
        let out_dtype = DType::from_scalar_type(out.dtype())?;
        let result = if op.is_floating() && va.dtype.category() != crate::view::Category::Floating {
            DType::F32
        } else {
            va.dtype
        };
        check_can_cast(result, out_dtype)?;
        let vo = sized_output(&out, &va.sizes)?;
        // SAFETY: as above.
        unsafe { ops::unary(op, &va, &vo) }
    }

    fn new_like(&self, v: &View) -> Result<Tensor> {
        host::empty_strided(&v.sizes, &contiguous_strides(&v.sizes), v.dtype.scalar_type().0)
    }
}

/// Strides for `memory_format` (channels-last for 4-d and 5-d; contiguous otherwise).
fn strides_for(size: &[i64], memory_format: Option<MemoryFormat>) -> Vec<i64> {
    let order: Option<Vec<usize>> = match (memory_format, size.len()) {
        (Some(MemoryFormat::CHANNELS_LAST), 4) => Some(vec![1, 3, 2, 0]),
        (Some(MemoryFormat::CHANNELS_LAST_3D), 5) => Some(vec![1, 4, 3, 2, 0]),
        _ => None,
    };
    let Some(order) = order else { return contiguous_strides(size) };
    let mut strides = vec![0; size.len()];
    let mut next = 1;
    for d in order {
        strides[d] = next;
        next *= size[d].max(1);
    }
    strides
}

/// PyTorch's `computeStride`: strides for viewing `t` as `size`, if the view is possible.
fn view_strides(old_sizes: &[i64], old_strides: &[i64], size: &[i64]) -> Option<Vec<i64>> {
    let numel: i64 = old_sizes.iter().product();
    if numel == 0 {
        return Some(contiguous_strides(size));
    }
    let mut new_strides = vec![0i64; size.len()];
    let mut view_d = size.len() as isize - 1;
    let mut chunk_base_stride = *old_strides.last().unwrap_or(&1);
    let mut tensor_numel = 1i64;
    let mut view_numel = 1i64;
    for tensor_d in (0..old_sizes.len()).rev() {
        tensor_numel *= old_sizes[tensor_d];
        if tensor_d == 0
            || (old_sizes[tensor_d - 1] != 1 && old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)
        {
            while view_d >= 0 && (view_numel < tensor_numel || size[view_d as usize] == 1) {
                new_strides[view_d as usize] = view_numel * chunk_base_stride;
                view_numel *= size[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base_stride = old_strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    (view_d == -1).then_some(new_strides)
}

/// Resolves a `-1` in a view's size from the number of elements.
fn infer_size(size: &[i64], numel: i64) -> Result<Vec<i64>> {
    let mut out = size.to_vec();
    let known: i64 = size.iter().filter(|&&s| s != -1).product();
    match size.iter().filter(|&&s| s == -1).count() {
        0 if known == numel => Ok(out),
        1 if known != 0 && numel % known == 0 => {
            let k = size.iter().position(|&s| s == -1).expect("one -1");
            out[k] = numel / known;
            Ok(out)
        }
        _ => Err(Error::runtime(format!("shape '{size:?}' is invalid for input of size {numel}"))),
    }
}

impl Kernels for Backend {
    fn empty_memory_format(
        &self,
        size: &[i64],
        dtype: Option<ScalarType>,
        layout: Option<Layout>,
        _device: Option<Device>,
        _pin_memory: Option<bool>,
        memory_format: Option<MemoryFormat>,
    ) -> Result<Tensor> {
        enter("empty.memory_format");
        if layout.is_some_and(|l| l != Layout::STRIDED) {
            return Err(Error::not_implemented("regen tensors are strided only"));
        }
        if let Some(s) = size.iter().find(|&&s| s < 0) {
            return Err(Error::runtime(format!("Trying to create tensor with negative dimension {s}: {size:?}")));
        }
        let dtype = dtype.unwrap_or(ScalarType::FLOAT);
        host::empty_strided(size, &strides_for(size, memory_format), dtype.0)
    }

    fn empty_strided(
        &self,
        size: &[i64],
        stride: &[i64],
        dtype: Option<ScalarType>,
        _layout: Option<Layout>,
        _device: Option<Device>,
        _pin_memory: Option<bool>,
    ) -> Result<Tensor> {
        enter("empty_strided");
        host::empty_strided(size, stride, dtype.unwrap_or(ScalarType::FLOAT).0)
    }

    fn as_strided(
        &self,
        self_: TensorRef<'_>,
        size: &[i64],
        stride: &[i64],
        storage_offset: Option<i64>,
    ) -> Result<Tensor> {
        enter("as_strided");
        host::as_strided(&self_, size, stride, storage_offset.unwrap_or(self_.storage_offset()))
    }

    fn view(&self, self_: TensorRef<'_>, size: &[i64]) -> Result<Tensor> {
        enter("view");
        let size = infer_size(size, self_.numel())?;
        let strides = view_strides(self_.sizes(), self_.strides(), &size).ok_or_else(|| {
            Error::runtime(
                "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
            )
        })?;
        host::as_strided(&self_, &size, &strides, self_.storage_offset())
    }

    fn _reshape_alias(&self, self_: TensorRef<'_>, size: &[i64], stride: &[i64]) -> Result<Tensor> {
        enter("_reshape_alias");
        host::as_strided(&self_, size, stride, self_.storage_offset())
    }

    fn resize_inplace(&self, self_: TensorRef<'_>, size: &[i64], _memory_format: Option<MemoryFormat>) -> Result<()> {
        enter("resize_");
        host::resize(&self_, size).map(|_| ())
    }

    fn _copy_from(&self, self_: TensorRef<'_>, dst: TensorRef<'_>, _non_blocking: bool) -> Result<Tensor> {
        enter("_copy_from");
        broadcast_shapes(&[self_.sizes(), dst.sizes()])?;
        copy_into(&self_, &dst)?;
        dst.retain()
    }

    fn _copy_from_and_resize(&self, self_: TensorRef<'_>, dst: TensorRef<'_>) -> Result<Tensor> {
        enter("_copy_from_and_resize");
        with_size(&dst, self_.sizes(), |d| copy_into(&self_, d))?;
        dst.retain()
    }

    fn _local_scalar_dense(&self, self_: TensorRef<'_>) -> Result<Scalar> {
        enter("_local_scalar_dense");
        let v = View::of(&self_)?;
        if v.numel() != 1 {
            return Err(Error::runtime(format!("a Tensor with {} elements cannot be converted to Scalar", v.numel())));
        }
        // SAFETY: one live element at `data`.
        Ok(match unsafe { crate::view::load(v.dtype, v.data) } {
            Value::Bool(b) => Scalar::Bool(b),
            Value::Int(i) => Scalar::Int(i),
            Value::Float(f) => Scalar::Float(f),
        })
    }

    fn set_inplace_source_storage(&self, self_: TensorRef<'_>, source: Storage) -> Result<()> {
        enter("set_.source_Storage");
        // A negative dimension count asks the host for the whole storage as one dimension.
        host::set_storage(&self_, Some(source), 0, &[-1], &[1]).map(|_| ())
    }

    fn set_inplace_source_storage_storage_offset(
        &self,
        self_: TensorRef<'_>,
        source: Storage,
        storage_offset: i64,
        size: &[i64],
        stride: &[i64],
    ) -> Result<()> {
        enter("set_.source_Storage_storage_offset");
        host::set_storage(&self_, Some(source), storage_offset, size, stride).map(|_| ())
    }

    fn set_inplace_source_tensor(&self, self_: TensorRef<'_>, source: TensorRef<'_>) -> Result<()> {
        enter("set_.source_Tensor");
        host::set_tensor(&self_, &source).map(|_| ())
    }

    fn set_inplace(&self, self_: TensorRef<'_>) -> Result<()> {
        enter("set_");
        host::set_storage(&self_, None, 0, &[0], &[1]).map(|_| ())
    }

    fn fill_inplace_scalar(&self, self_: TensorRef<'_>, value: Scalar) -> Result<()> {
        enter("fill_.Scalar");
        let v = View::of(&self_)?;
        // SAFETY: a live, writable tensor.
        unsafe { ops::fill(&v, scalar_value(value)) };
        Ok(())
    }

    fn add_out(&self, self_: TensorRef<'_>, other: TensorRef<'_>, alpha: Scalar, out: TensorRef<'_>) -> Result<()> {
        enter("add.out");
        self.binary(Binary::Add, self_, other, scalar_value(alpha), out, "add")
    }

    fn sub_out(&self, self_: TensorRef<'_>, other: TensorRef<'_>, alpha: Scalar, out: TensorRef<'_>) -> Result<()> {
        enter("sub.out");
        self.binary(Binary::Sub, self_, other, scalar_value(alpha), out, "sub")
    }

    fn mul_out(&self, self_: TensorRef<'_>, other: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        enter("mul.out");
        self.binary(Binary::Mul, self_, other, Value::Int(1), out, "mul")
    }

    fn div_out(&self, self_: TensorRef<'_>, other: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        enter("div.out");
        self.binary(Binary::Div, self_, other, Value::Int(1), out, "div")
    }

    fn neg_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        enter("neg.out");
        self.unary(Unary::Neg, self_, out, "neg")
    }

    fn abs_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        enter("abs.out");
        self.unary(Unary::Abs, self_, out, "abs")
    }

    fn exp_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        enter("exp.out");
        self.unary(Unary::Exp, self_, out, "exp")
    }

    fn log_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        enter("log.out");
        self.unary(Unary::Log, self_, out, "log")
    }

    fn sqrt_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        enter("sqrt.out");
        self.unary(Unary::Sqrt, self_, out, "sqrt")
    }

    fn sigmoid_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        enter("sigmoid.out");
        self.unary(Unary::Sigmoid, self_, out, "sigmoid")
    }

    fn tanh_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        enter("tanh.out");
        self.unary(Unary::Tanh, self_, out, "tanh")
    }

    fn relu(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        enter("relu");
        let v = View::of(&self_)?;
        if v.dtype == DType::Bool {
            return Err(Error::runtime("Boolean inputs not supported for relu"));
        }
        let out = self.new_like(&v)?;
        let vo = View::of(&out.as_ref())?;
        // SAFETY: as above; `out` is a fresh contiguous tensor.
        unsafe { ops::unary(Unary::Relu, &v, &vo)? };
        Ok(out)
    }

    fn relu_inplace(&self, self_: TensorRef<'_>) -> Result<()> {
        enter("relu_");
        let v = View::of(&self_)?;
        if v.dtype == DType::Bool {
            return Err(Error::runtime("Boolean inputs not supported for relu"));
        }
        // SAFETY: elementwise in place: each element is read before it is written.
        unsafe { ops::unary(Unary::Relu, &v, &v) }
    }

    fn sum_int_list_out(
        &self,
        self_: TensorRef<'_>,
        dim: Option<&[i64]>,
        keepdim: bool,
        _dtype: Option<ScalarType>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        enter("sum.IntList_out");
        let v = View::of(&self_)?;
        let ndim = v.dim() as i64;
        let mut dims: Vec<usize> = Vec::new();
        match dim {
            None | Some([]) => dims.extend(0..v.dim()),
            Some(list) => {
                for &d in list {
                    let wrapped = if d < 0 { d + ndim.max(1) } else { d };
                    if !(0..ndim.max(1)).contains(&wrapped) {
                        return Err(Error::index(format!(
                            "Dimension out of range (expected to be in range of [{}, {}], but got {d})",
                            -ndim.max(1),
                            ndim.max(1) - 1
                        )));
                    }
                    if (wrapped as usize) < v.dim() && !dims.contains(&(wrapped as usize)) {
                        dims.push(wrapped as usize);
                    }
                }
            }
        }
        let shape: Vec<i64> = (0..v.dim())
            .filter_map(|d| match (dims.contains(&d), keepdim) {
                (true, true) => Some(1),
                (true, false) => None,
                (false, _) => Some(v.sizes[d]),
            })
            .collect();
        let vo = sized_output(&out, &shape)?;
        // SAFETY: as above.
        unsafe { ops::sum(&v, &dims, &vo) };
        Ok(())
    }

    fn mm_out(&self, self_: TensorRef<'_>, mat2: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        enter("mm.out");
        let (a, b) = (View::of(&self_)?, View::of(&mat2)?);
        check_matmul(&a, &b, "mm")?;
        let vo = sized_output(&out, &[a.sizes[0], b.sizes[1]])?;
        // SAFETY: as above.
        unsafe { ops::addmm(None, &a, &b, 0.0, 1.0, &vo) };
        Ok(())
    }

    fn addmm_out(
        &self,
        self_: TensorRef<'_>,
        mat1: TensorRef<'_>,
        mat2: TensorRef<'_>,
        beta: Scalar,
        alpha: Scalar,
        out: TensorRef<'_>,
    ) -> Result<()> {
        enter("addmm.out");
        let (bias, a, b) = (View::of(&self_)?, View::of(&mat1)?, View::of(&mat2)?);
        check_matmul(&a, &b, "addmm")?;
        let shape = [a.sizes[0], b.sizes[1]];
        broadcast_shapes(&[&bias.sizes, &shape])?;
        let vo = sized_output(&out, &shape)?;
        // SAFETY: as above.
        unsafe { ops::addmm(Some(&bias), &a, &b, beta.to_f64(), alpha.to_f64(), &vo) };
        Ok(())
    }
}

fn check_matmul(a: &View, b: &View, op: &str) -> Result<()> {
    if a.dim() != 2 || b.dim() != 2 {
        return Err(Error::runtime(format!("{op}: expected 2-D matrices, got {}-D and {}-D", a.dim(), b.dim())));
    }
    if a.sizes[1] != b.sizes[0] {
        return Err(Error::runtime(format!(
            "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
            a.sizes[0], a.sizes[1], b.sizes[0], b.sizes[1]
        )));
    }
    if a.dtype != b.dtype {
        return Err(Error::runtime(format!(
            "expected m1 and m2 to have the same dtype, but got: {} != {}",
            a.dtype.name().to_lowercase(),
            b.dtype.name().to_lowercase()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_strides_follow_pytorch() {
        assert_eq!(view_strides(&[2, 3], &[3, 1], &[3, 2]), Some(vec![2, 1]));
        assert_eq!(view_strides(&[2, 3], &[3, 1], &[6]), Some(vec![1]));
        // A transposed matrix cannot be flattened without a copy.
        assert_eq!(view_strides(&[3, 2], &[1, 3], &[6]), None);
        assert_eq!(view_strides(&[3, 2], &[1, 3], &[3, 2, 1]), Some(vec![1, 3, 3]));
        assert_eq!(infer_size(&[-1, 3], 12).unwrap(), vec![4, 3]);
        assert!(infer_size(&[-1, 5], 12).is_err());
        assert_eq!(strides_for(&[2, 3, 4, 5], Some(MemoryFormat::CHANNELS_LAST)), vec![60, 1, 15, 3]);
    }
}
