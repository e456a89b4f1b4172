//! The "regen" device's native kernels: the generated `Kernels` trait implemented on host memory.
//!
//! The bootstrap ops come from regen-runtime's defaults, the copies from the engine; elementwise
//! ops are the rows of the op tables in [`crate::kernels`]; sum, mm and addmm still run the older
//! loops of [`crate::ops`].
//! The generated entry points count every call, so tests can tell a native kernel from the CPU
//! fallback.

use regen_runtime::bootstrap::with_size;
use regen_runtime::view::{View, broadcast_shapes};
use regen_runtime::{Error, Result, Scalar, ScalarType, Tensor, TensorRef};

use crate::generated::Kernels;
use crate::kernels::dtype::Num;
use crate::kernels::iter::{self, Input};
use crate::kernels::pointwise::{self, ops as pw};
use crate::kernels::{binary, copy, unary};
use crate::ops;

/// `out` resized to `shape` if needed, as a view.
fn sized_output(out: &TensorRef<'_>, shape: &[i64]) -> Result<View> {
    with_size(out, shape, View::of)
}

pub struct Backend;

impl Kernels for Backend {
    // Views, allocation and fill_ from regen-runtime; the copies through the engine below.
    regen_runtime::host_memory_bootstrap!(own_copies);

    fn copy_inplace(&self, self_: TensorRef<'_>, src: TensorRef<'_>, _non_blocking: bool) -> Result<()> {
        copy::copy_(self_, src)
    }

    fn _copy_from(&self, self_: TensorRef<'_>, dst: TensorRef<'_>, _non_blocking: bool) -> Result<Tensor> {
        copy::copy_from(self_, dst)
    }

    fn _copy_from_and_resize(&self, self_: TensorRef<'_>, dst: TensorRef<'_>) -> Result<Tensor> {
        copy::copy_from_and_resize(self_, dst)
    }

    fn view_as_real(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        copy::view_as_real(self_)
    }

    fn view_as_complex(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        copy::view_as_complex(self_)
    }

    fn relu(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        let dtype = crate::kernels::dtype::DType::from_scalar_type(self_.dtype())?;
        let out = iter::new_output(dtype, &[Input::Tensor(self_)])?;
        unary::relu(self_, out.as_ref())?;
        Ok(out)
    }

    fn relu_inplace(&self, self_: TensorRef<'_>) -> Result<()> {
        unary::relu(self_, self_)
    }

    // Every row of the unary and binary tables (kernels/unary.rs, kernels/binary.rs).
    crate::unary_table!(unary_methods);
    crate::binary_table!(binary_methods);
    // Ternary, parameterised and predicate ops (kernels/pointwise.rs).
    crate::pointwise_methods!();
    // Shape, copy and factory ops (kernels/shape.rs).
    crate::shape_methods!();
    // Sorting and selection (kernels/sort.rs).
    crate::sort_methods!();

    fn angle(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        let input = crate::kernels::dtype::DType::from_scalar_type(self_.dtype())?;
        let dtype = if input.is_complex() {
            input.to_real()
        } else {
            iter::result_dtype(iter::Config::FLOATING, &[Input::Tensor(self_)])?
        };
        let out = iter::new_output(dtype, &[Input::Tensor(self_)])?;
        unary::run::<unary::ops::Angle>(self_, out.as_ref())?;
        Ok(out)
    }

    // Not derived from `.out` by PyTorch: registered as they are.
    fn floor_divide(&self, self_: TensorRef<'_>, other: TensorRef<'_>) -> Result<Tensor> {
        binary::functional::<binary::ops::FloorDivide>(Input::Tensor(self_), Input::Tensor(other))
    }

    fn floor_divide_inplace_tensor(&self, self_: TensorRef<'_>, other: TensorRef<'_>) -> Result<()> {
        binary::run::<binary::ops::FloorDivide>(Input::Tensor(self_), Input::Tensor(other), None, self_)
    }

    fn remainder_scalar_tensor(&self, self_: Scalar, other: TensorRef<'_>) -> Result<Tensor> {
        binary::functional::<binary::ops::Remainder>(Input::Scalar(self_), Input::Tensor(other))
    }

    fn div_out_mode(
        &self,
        self_: TensorRef<'_>,
        other: TensorRef<'_>,
        rounding_mode: Option<&str>,
        out: TensorRef<'_>,
    ) -> Result<()> {
        binary::div_mode(self_, other, rounding_mode, out)
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
        // PyTorch hands matrix products lazily conjugated operands (BLAS conjugates on the fly):
        // resolve them first.
        let (ra, rb) = (copy::resolved(self_)?, copy::resolved(mat2)?);
        let (self_, mat2) = (ra.as_ref().map_or(self_, Tensor::as_ref), rb.as_ref().map_or(mat2, Tensor::as_ref));
        let (a, b) = (View::of(&self_)?, View::of(&mat2)?);
        check_matmul(&a, &b, "mm")?;
        let vo = sized_output(&out, &[a.sizes[0], b.sizes[1]])?;
        // SAFETY: as above.
        unsafe { ops::addmm(None, &a, &b, complex(Scalar::Int(0)), complex(Scalar::Int(1)), &vo) };
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
        let (r0, r1, r2) = (copy::resolved(self_)?, copy::resolved(mat1)?, copy::resolved(mat2)?);
        let self_ = r0.as_ref().map_or(self_, Tensor::as_ref);
        let (mat1, mat2) = (r1.as_ref().map_or(mat1, Tensor::as_ref), r2.as_ref().map_or(mat2, Tensor::as_ref));
        let (bias, a, b) = (View::of(&self_)?, View::of(&mat1)?, View::of(&mat2)?);
        check_matmul(&a, &b, "addmm")?;
        let shape = [a.sizes[0], b.sizes[1]];
        broadcast_shapes(&[&bias.sizes, &shape])?;
        let vo = sized_output(&out, &shape)?;
        // SAFETY: as above.
        unsafe { ops::addmm(Some(&bias), &a, &b, complex(beta), complex(alpha), &vo) };
        Ok(())
    }
}

/// A Scalar as a complex number (real Scalars with no imaginary part).
fn complex(s: Scalar) -> num_complex::Complex64 {
    match s {
        Scalar::Complex(re, im) => num_complex::Complex64::new(re, im),
        other => num_complex::Complex64::new(other.to_f64(), 0.0),
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
