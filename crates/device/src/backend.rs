//! The "regen" device's native kernels: the generated `Kernels` trait implemented on host memory.
//!
//! The bootstrap ops come from regen-runtime's defaults; each compute method checks what PyTorch
//! checks (shapes, dtypes), sizes its output through the host services, and runs a loop from
//! [`crate::ops`]. The generated entry points count every call, so tests can tell a native kernel
//! from the CPU fallback.

use regen_runtime::bootstrap::{scalar_value, with_size};
use regen_runtime::host;
use regen_runtime::view::{DType, Value, View, broadcast_shapes, check_can_cast, contiguous_strides, result_type};
use regen_runtime::{Error, Result, Scalar, ScalarType, Tensor, TensorRef};

use crate::generated::Kernels;
use crate::ops::{self, Binary, Unary};

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
        if op == Binary::Div && result.category() != regen_runtime::view::Category::Floating {
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
        let result = if op.is_floating() && va.dtype.category() != regen_runtime::view::Category::Floating {
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

impl Kernels for Backend {
    regen_runtime::host_memory_bootstrap!();

    fn add_out(&self, self_: TensorRef<'_>, other: TensorRef<'_>, alpha: Scalar, out: TensorRef<'_>) -> Result<()> {
        self.binary(Binary::Add, self_, other, scalar_value(alpha), out, "add")
    }

    fn sub_out(&self, self_: TensorRef<'_>, other: TensorRef<'_>, alpha: Scalar, out: TensorRef<'_>) -> Result<()> {
        self.binary(Binary::Sub, self_, other, scalar_value(alpha), out, "sub")
    }

    fn mul_out(&self, self_: TensorRef<'_>, other: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        self.binary(Binary::Mul, self_, other, Value::Int(1), out, "mul")
    }

    fn div_out(&self, self_: TensorRef<'_>, other: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        self.binary(Binary::Div, self_, other, Value::Int(1), out, "div")
    }

    fn neg_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        self.unary(Unary::Neg, self_, out, "neg")
    }

    fn abs_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        self.unary(Unary::Abs, self_, out, "abs")
    }

    fn exp_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        self.unary(Unary::Exp, self_, out, "exp")
    }

    fn log_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        self.unary(Unary::Log, self_, out, "log")
    }

    fn sqrt_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        self.unary(Unary::Sqrt, self_, out, "sqrt")
    }

    fn sigmoid_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        self.unary(Unary::Sigmoid, self_, out, "sigmoid")
    }

    fn tanh_out(&self, self_: TensorRef<'_>, out: TensorRef<'_>) -> Result<()> {
        self.unary(Unary::Tanh, self_, out, "tanh")
    }

    fn relu(&self, self_: TensorRef<'_>) -> Result<Tensor> {
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
