//! Copies through the engine: `copy_`, `_copy_from` and `_copy_from_and_resize` of any layout
//! and between any two dtypes, typed and split over PyTorch's threads like every elementwise op
//! (regen-runtime's default bootstrap converts element by element through a generic value).
//! PyTorch's lazy conjugate and negative bits are resolved as ATen's `copy_impl` does.

use regen_runtime::bootstrap::{copy_into, with_size};
use regen_runtime::view::broadcast_shapes;
use regen_runtime::{Error, Result, Tensor, TensorRef};

use super::dtype::DType;
use super::iter::{Operand, copy_cast};
use super::unary::{self, ops};

/// `dst.copy_(src)`.
pub fn copy_(dst: TensorRef<'_>, src: TensorRef<'_>) -> Result<()> {
    let same_data = dst.data_ptr() == src.data_ptr()
        && dst.sizes() == src.sizes()
        && dst.strides() == src.strides()
        && dst.dtype() == src.dtype()
        && dst.is_conj() == src.is_conj()
        && dst.is_neg() == src.is_neg();
    if same_data {
        return Ok(());
    }
    let shape = broadcast_shapes(&[dst.sizes(), src.sizes()])?;
    if shape != dst.sizes() {
        return Err(Error::runtime(format!(
            "output with shape {:?} doesn't match the broadcast shape {shape:?}",
            dst.sizes()
        )));
    }
    match (Operand::of(&src), Operand::of(&dst)) {
        // SAFETY: both describe live tensors for the call; `dst` is writable.
        (Ok(s), Ok(d)) => unsafe { copy_cast(&s, &d) },
        // Dtypes the engine does not compute in (float8, ...) still move bytewise.
        _ => copy_into(&src, &dst)?,
    }
    // The memory of `dst` now holds `src`'s memory: conjugate or negate where the bits differ.
    let complex = DType::from_scalar_type(dst.dtype()).is_ok_and(DType::is_complex);
    if dst.is_conj() != src.is_conj() && complex {
        unary::run::<ops::ConjPhysical>(dst, dst)?;
    }
    if dst.is_neg() != src.is_neg() {
        unary::run::<ops::Neg>(dst, dst)?;
    }
    Ok(())
}

/// `self._copy_from(dst)`: copies `self` into `dst` and returns `dst`.
pub fn copy_from(src: TensorRef<'_>, dst: TensorRef<'_>) -> Result<Tensor> {
    copy_(dst, src)?;
    dst.retain()
}

/// `self._copy_from_and_resize(dst)`: `dst` resized to `self`'s shape first.
pub fn copy_from_and_resize(src: TensorRef<'_>, dst: TensorRef<'_>) -> Result<Tensor> {
    with_size(&dst, src.sizes(), |d| copy_(*d, src))?;
    dst.retain()
}
