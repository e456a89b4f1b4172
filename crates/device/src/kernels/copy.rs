//! Copies through the engine, and the dtype-reinterpreting views of complex tensors: `copy_`, `_copy_from` and `_copy_from_and_resize` of any layout
//! and between any two dtypes, typed and split over PyTorch's threads like every elementwise op
//! (regen-runtime's default bootstrap converts element by element through a generic value).
//! PyTorch's lazy conjugate and negative bits are resolved as ATen's `copy_impl` does.

use regen_runtime::bootstrap::{copy_into, copy_needed, with_size};
use regen_runtime::{Error, Result, Tensor, TensorRef};

use super::dtype::DType;
use super::iter::{Operand, copy_cast};
use super::unary::{self, ops};

/// `dst.copy_(src)`.
pub fn copy_(dst: TensorRef<'_>, src: TensorRef<'_>) -> Result<()> {
    if !copy_needed(&dst, &src)? {
        return Ok(());
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

/// `torch.view_as_real`: a complex tensor's memory as real pairs (a last dimension of 2).
pub fn view_as_real(t: TensorRef<'_>) -> Result<Tensor> {
    let dtype = DType::from_scalar_type(t.dtype())?;
    if !dtype.is_complex() {
        return Err(Error::runtime("view_as_real is only supported for complex tensors"));
    }
    if t.is_conj() {
        return Err(Error::runtime(
            "view_as_real doesn't work on unresolved conjugated tensors.  To resolve the conjugate tensor so you can view it as real, use self.resolve_conj()",
        ));
    }
    let mut sizes = t.sizes().to_vec();
    sizes.push(2);
    let mut strides: Vec<i64> = t.strides().iter().map(|s| s * 2).collect();
    strides.push(1);
    regen_runtime::host::view_dtype(&t, dtype.to_real().code(), &sizes, &strides, t.storage_offset() * 2)
}

/// `torch.view_as_complex`: real pairs (a last dimension of 2, stride 1) as complex numbers.
pub fn view_as_complex(t: TensorRef<'_>) -> Result<Tensor> {
    let dtype = DType::from_scalar_type(t.dtype())?;
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Err(Error::runtime(format!(
            "view_as_complex is only supported for float and double tensors, but got a tensor of scalar type: {}",
            dtype.name()
        )));
    }
    let (sizes, strides) = (t.sizes(), t.strides());
    if sizes.last() != Some(&2) {
        return Err(Error::runtime("Tensor must have a last dimension of size 2"));
    }
    if strides.last() != Some(&1) {
        return Err(Error::runtime("Tensor must have a last dimension with stride 1"));
    }
    let n = sizes.len() - 1;
    if strides[..n].iter().any(|s| s % 2 != 0) {
        return Err(Error::runtime("Tensor must have a stride divisible by 2 for all but last dimension"));
    }
    if t.storage_offset() % 2 != 0 {
        return Err(Error::runtime("Tensor must have a storage_offset divisible by 2"));
    }
    let halved: Vec<i64> = strides[..n].iter().map(|s| s / 2).collect();
    regen_runtime::host::view_dtype(&t, dtype.to_complex().code(), &sizes[..n], &halved, t.storage_offset() / 2)
}

/// `t` with its lazy conjugate / negative bits applied, as a new contiguous tensor, or `None`
/// when it has none (for kernels PyTorch hands such tensors: the matrix products).
pub fn resolved(t: TensorRef<'_>) -> Result<Option<Tensor>> {
    if !t.is_conj() && !t.is_neg() {
        return Ok(None);
    }
    let dtype = DType::from_scalar_type(t.dtype())?;
    let out = regen_runtime::host::empty_strided(
        t.sizes(),
        &regen_runtime::view::contiguous_strides(t.sizes()),
        dtype.code(),
    )?;
    copy_(out.as_ref(), t)?;
    Ok(Some(out))
}
