//! Services the C++ host glue provides to Rust over tensors (`cpp/regen_host.h`): creating device
//! tensors, the metadata changes only c10 can make, and torch.autocast's state. The table itself,
//! installed once at load, is [`crate::glue`]'s.

use std::ffi::{c_char, c_void};

use crate::abi::regen_tensor;
use crate::args::{Storage, Tensor, TensorRef};
use crate::error::{Error, Result};
pub use crate::glue::{Host, host, init, num_threads, parallel_for, set_host};
use crate::glue::{installed, status};

fn impl_of(t: &TensorRef<'_>) -> Result<*mut c_void> {
    if t.is_defined() {
        Ok(t.raw().impl_)
    } else {
        Err(Error::runtime("an undefined tensor where a tensor is required"))
    }
}

/// Calls a service that describes a tensor into its last argument.
/// A service that failed while the allocator refused memory on this thread (the glue raised
/// c10::OutOfMemoryError for it) fails as out of memory, so that Python sees
/// torch.OutOfMemoryError for a tensor a kernel makes, as for one PyTorch makes.
fn describe(call: impl FnOnce(&Host, *mut regen_tensor) -> *const c_char) -> Result<regen_tensor> {
    let host = installed()?;
    let mut out = regen_tensor::NONE;
    let refused = crate::device::cache::refused_on_this_thread();
    status(call(host, &mut out)).map_err(|e| {
        if crate::device::cache::refused_on_this_thread() != refused { Error::out_of_memory(e.message()) } else { e }
    })?;
    Ok(out)
}

thread_local! {
    /// The tensor (its TensorImpl) the in-place op running on this thread writes; null for none.
    static IN_PLACE: std::cell::Cell<*const c_void> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// Marks `impl_` as the tensor the in-place op now running on this thread writes (null: none)
/// and returns the previous mark, to be restored when the op returns. The generated wrappers of
/// an in-place op that runs its `.out` kernel with `out` = `self` set it, so that the kernel's
/// resize of `out` to a broadcast shape fails as PyTorch's in-place ops do (`x.add_(y)` never
/// changes `x`'s shape) instead of resizing `self`.
pub fn in_place(impl_: *const c_void) -> *const c_void {
    IN_PLACE.replace(impl_)
}

/// Takes the reference a service handed over.
fn owned(raw: regen_tensor) -> Tensor {
    // SAFETY: the services that create tensors hand over exactly one reference.
    unsafe { Tensor::from_raw(raw) }
}

/// A new contiguous-or-strided tensor on the device.
pub fn empty_strided(sizes: &[i64], strides: &[i64], dtype: i32) -> Result<Tensor> {
    // SAFETY: the slices live for the call; `out` is writable.
    describe(|h, out| unsafe { (h.empty_strided)(sizes.as_ptr(), strides.as_ptr(), sizes.len() as i64, dtype, out) })
        .map(owned)
}

/// Resizes `t` in place to contiguous `sizes`; returns its new description. The tensor an
/// in-place op writes ([`in_place`]) keeps its shape: resizing it fails with PyTorch's message.
pub fn resize(t: &TensorRef<'_>, sizes: &[i64]) -> Result<regen_tensor> {
    let target = impl_of(t)?;
    if IN_PLACE.get() == target.cast_const() && t.sizes() != sizes {
        return Err(Error::runtime(format!(
            "output with shape {:?} doesn't match the broadcast shape {sizes:?}",
            t.sizes()
        )));
    }
    let t = target;
    // SAFETY: as above; `t` is a live TensorImpl.
    describe(|h, out| unsafe { (h.resize)(t, sizes.as_ptr(), sizes.len() as i64, out) })
}

/// A new view of `t`'s storage.
pub fn as_strided(t: &TensorRef<'_>, sizes: &[i64], strides: &[i64], storage_offset: i64) -> Result<Tensor> {
    let t = impl_of(t)?;
    // SAFETY: as above.
    describe(|h, out| unsafe {
        (h.as_strided)(t, sizes.as_ptr(), strides.as_ptr(), sizes.len() as i64, storage_offset, out)
    })
    .map(owned)
}

/// A new view of `t`'s storage as `dtype` (`view_as_real`, `view_as_complex`), with geometry in
/// elements of `dtype`.
pub fn view_dtype(
    t: &TensorRef<'_>,
    dtype: i32,
    sizes: &[i64],
    strides: &[i64],
    storage_offset: i64,
) -> Result<Tensor> {
    let t = impl_of(t)?;
    // SAFETY: as above.
    describe(|h, out| unsafe {
        (h.view_dtype)(t, dtype, sizes.as_ptr(), strides.as_ptr(), sizes.len() as i64, storage_offset, out)
    })
    .map(owned)
}

/// Points `t` at `storage` (None: a new empty storage) with the given geometry, checked as CPU's
/// `set_` checks it (the storage's device, the offset, the bounds); `strides` None: contiguous.
pub fn set_storage(
    t: &TensorRef<'_>,
    storage: Option<Storage>,
    storage_offset: i64,
    sizes: &[i64],
    strides: Option<&[i64]>,
) -> Result<regen_tensor> {
    // The glue reads `sizes.len()` strides; CPU's message for a mismatch.
    if let Some(s) = strides.filter(|s| s.len() != sizes.len()) {
        return Err(Error::runtime(format!("unequal size length ({}) and stride length ({})", sizes.len(), s.len())));
    }
    let t = impl_of(t)?;
    let storage = storage.map_or(std::ptr::null_mut(), |s| s.0.as_ptr());
    let strides = strides.map_or(std::ptr::null(), <[i64]>::as_ptr);
    // SAFETY: as above; `storage` is a live StorageImpl or NULL; `strides` is NULL or holds
    // `sizes.len()` values (checked above).
    describe(|h, out| unsafe {
        (h.set_storage)(t, storage, storage_offset, sizes.as_ptr(), strides, sizes.len() as i64, out)
    })
}

/// Points `t` at `source`'s storage and geometry.
pub fn set_tensor(t: &TensorRef<'_>, source: &TensorRef<'_>) -> Result<regen_tensor> {
    let (t, source) = (impl_of(t)?, impl_of(source)?);
    // SAFETY: as above.
    describe(|h, out| unsafe { (h.set_tensor)(t, source, out) })
}

/// `Tensor.record_stream(stream)`: `t`'s storage block is not reused after its free until the
/// work queued on `stream` (an id on the storage's device) by then is done.
pub fn record_stream(t: &TensorRef<'_>, stream: i64) -> Result<()> {
    let t = impl_of(t)?;
    // SAFETY: `t` is a live TensorImpl.
    status(unsafe { (installed()?.record_stream)(t, stream) })
}

/// A new dense CPU tensor (`pinned`: page-locked through the backend's pinned allocator), for
/// copies between host and device memory.
pub fn empty_cpu(sizes: &[i64], dtype: crate::ScalarType, pinned: bool) -> Result<Tensor> {
    // SAFETY: `sizes` lives for the call; `out` is writable.
    describe(|h, out| unsafe { (h.empty_cpu)(sizes.as_ptr(), sizes.len() as i64, dtype.0, pinned, out) }).map(owned)
}

/// `dst.copy_(src)` of two CPU tensors, by ATen's CPU copy.
pub fn cpu_copy(dst: &TensorRef<'_>, src: &TensorRef<'_>) -> Result<()> {
    let (dst, src) = (impl_of(dst)?, impl_of(src)?);
    // SAFETY: both are live TensorImpls.
    status(unsafe { (installed()?.cpu_copy)(dst, src) })
}

/// Whether host memory at `ptr` is pinned (false without the host services).
pub fn is_pinned(ptr: *const u8) -> bool {
    // SAFETY: the glue only compares the address with its blocks.
    crate::glue::host().is_some_and(|h| unsafe { (h.is_pinned)(ptr.cast()) })
}

/// torch.autocast's state for the device: whether it is on, and the dtype it casts to (a
/// c10::ScalarType number).
pub fn autocast_state() -> Result<(bool, i32)> {
    let host = installed()?;
    let (mut enabled, mut dtype) = (false, 0);
    // SAFETY: both pointers are writable for the call.
    status(unsafe { (host.autocast_state)(&mut enabled, &mut dtype) })?;
    Ok((enabled, dtype))
}

pub fn set_autocast_enabled(enabled: bool) -> Result<()> {
    // SAFETY: a plain value.
    status(unsafe { (installed()?.set_autocast_enabled)(enabled) })
}

/// Sets the dtype autocast casts to (a c10::ScalarType number); the glue refuses a
/// non-floating one.
pub fn set_autocast_dtype(dtype: i32) -> Result<()> {
    // SAFETY: a plain value; the glue checks it.
    status(unsafe { (installed()?.set_autocast_dtype)(dtype) })
}
