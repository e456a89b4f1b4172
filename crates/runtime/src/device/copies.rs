//! Copies between the host's memory and a device's, for a device layer whose memory the host
//! cannot address ([`DeviceLayer::host_addressable`](super::DeviceLayer::host_addressable) false):
//! the bytes cross with the layer's copies, in stream order, and every conversion (strides,
//! broadcasting, dtypes, PyTorch's lazy conjugate and negative bits) happens on one side: on the
//! host through ATen's CPU copy, on the device through the backend's own same-device copy kernel
//! run on the current stream, as CUDA's `copy_` stages a cross-device copy (ATen's `Copy.cpp`). A
//! copy is blocking unless `non_blocking` asks otherwise and the host side is pinned memory the
//! bytes cross straight from or into (then the caller synchronizes before it reads or reuses it).

use super::layer::{CopyKind, Stream, layer};
use super::{DeviceGuard, current_stream, run_on};
use crate::args::{Scalar, ScalarType, Tensor, TensorRef};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::host;
use crate::view::{contiguous_strides, element_size, is_contiguous, load};

/// c10::DeviceType::PrivateUse1: this backend's tensors.
const PRIVATE_USE1: i32 = 20;

/// A copy between two tensors on the same memory (both on one device, or both on the host),
/// with `copy_`'s semantics: broadcast, dtype conversion, conjugate and negative bits.
pub type SameMemoryCopy<'a> = &'a dyn Fn(&TensorRef<'_>, &TensorRef<'_>) -> Result<()>;

fn on_device(t: &TensorRef<'_>) -> bool {
    t.device().device_type == PRIVATE_USE1
}

fn device_of(t: &TensorRef<'_>) -> usize {
    t.device().index.max(0) as usize
}

/// Whether `t`'s elements are one dense run of `other`'s dtype and shape with no lazy bits: its
/// bytes are the copy.
fn plain_like(t: &TensorRef<'_>, other: &TensorRef<'_>) -> bool {
    t.dtype() == other.dtype() && t.sizes() == other.sizes() && plain(t)
}

fn plain(t: &TensorRef<'_>) -> bool {
    is_contiguous(t.sizes(), t.strides()) && !t.is_conj() && !t.is_neg()
}

fn nbytes(t: &TensorRef<'_>) -> Result<usize> {
    let elem = element_size(t.dtype())
        .ok_or_else(|| Error::not_implemented(format!("copies of dtype {} between memories", t.dtype())))?;
    Ok(t.numel().max(0) as usize * elem)
}

/// The bytes of `t`'s first element: its storage's data at its offset.
fn data(t: &TensorRef<'_>) -> *mut u8 {
    t.data_ptr().cast()
}

/// `dst.copy_(src)` with at least one side on this backend's devices; `same_memory` copies
/// between two tensors of one memory (it runs on the device through the layer's `run`).
pub fn copy(
    dst: &TensorRef<'_>,
    src: &TensorRef<'_>,
    non_blocking: bool,
    same_memory: SameMemoryCopy<'_>,
) -> Result<()> {
    match (on_device(src), on_device(dst)) {
        (true, true) if device_of(src) == device_of(dst) => on_device_run(device_of(dst), || same_memory(dst, src)),
        (true, true) => device_to_device(dst, src, same_memory),
        (false, true) => host_to_device(dst, src, non_blocking, same_memory),
        (true, false) => device_to_host(dst, src, non_blocking, same_memory),
        (false, false) => host::cpu_copy(dst, src),
    }
}

/// Runs `kernel` on `device`'s current stream through the layer.
fn on_device_run(device: usize, kernel: impl FnOnce() -> Result<()>) -> Result<()> {
    let _guard = DeviceGuard::set(device)?;
    run_on(current_stream(device), kernel)
}

/// A new dense device tensor of `sizes` and `dtype` on `device`.
fn device_temp(device: usize, sizes: &[i64], dtype: ScalarType) -> Result<Tensor> {
    let _guard = DeviceGuard::set(device)?;
    host::empty_strided(sizes, &contiguous_strides(sizes), dtype.0)
}

/// # Safety
/// As [`DeviceLayer::copy`](super::DeviceLayer::copy).
unsafe fn layer_copy(dst: *mut u8, src: *const u8, n: usize, kind: CopyKind, stream: Stream) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    // SAFETY: per the contract.
    unsafe { layer().copy(dst, src, n, kind, stream) }
}

fn host_to_device(
    dst: &TensorRef<'_>,
    src: &TensorRef<'_>,
    non_blocking: bool,
    same: SameMemoryCopy<'_>,
) -> Result<()> {
    let device = device_of(dst);
    let stream = current_stream(device);
    // The host side as the bytes the device needs: src itself, or converted into a dense CPU tensor.
    let staged = if plain_like(src, dst) {
        None
    } else {
        let t = host::empty_cpu(dst.sizes(), dst.dtype(), false)?;
        host::cpu_copy(&t.as_ref(), src)?;
        Some(t)
    };
    let host_side = staged.as_ref().map_or(*src, Tensor::as_ref);
    let n = nbytes(dst)?;
    let device_side = if plain(dst) { None } else { Some(device_temp(device, dst.sizes(), dst.dtype())?) };
    let target = device_side.as_ref().map_or(*dst, Tensor::as_ref);
    // SAFETY: both hold n bytes of one dtype and shape, dense; the host side lives until the copy
    // is done (synchronized below unless it is the caller's pinned memory).
    unsafe { layer_copy(data(&target), data(&host_side), n, CopyKind::HostToDevice, stream)? };
    if let Some(t) = &device_side {
        on_device_run(device, || same(dst, &t.as_ref()))?;
    }
    let pinned_source = staged.is_none() && host::is_pinned(data(src));
    if !(non_blocking && pinned_source) {
        layer().synchronize_stream(stream)?;
    }
    Ok(())
}

fn device_to_host(
    dst: &TensorRef<'_>,
    src: &TensorRef<'_>,
    non_blocking: bool,
    same: SameMemoryCopy<'_>,
) -> Result<()> {
    let device = device_of(src);
    let stream = current_stream(device);
    // The device side as dense bytes without lazy bits: src itself, or a copy made on the device.
    let device_side = if plain(src) {
        None
    } else {
        let t = device_temp(device, src.sizes(), src.dtype())?;
        on_device_run(device, || same(&t.as_ref(), src))?;
        Some(t)
    };
    let from = device_side.as_ref().map_or(*src, Tensor::as_ref);
    let direct = plain_like(dst, &from);
    let landing = if direct { None } else { Some(host::empty_cpu(from.sizes(), from.dtype(), false)?) };
    let into = landing.as_ref().map_or(*dst, Tensor::as_ref);
    let n = nbytes(&from)?;
    // SAFETY: both hold n bytes of one dtype and shape, dense; synchronized below unless the caller
    // asked not to wait and reads its pinned memory only after synchronizing.
    unsafe { layer_copy(data(&into), data(&from), n, CopyKind::DeviceToHost, stream)? };
    if !(non_blocking && direct && host::is_pinned(data(dst))) {
        layer().synchronize_stream(stream)?;
    }
    if let Some(t) = &landing {
        host::cpu_copy(dst, &t.as_ref())?;
    }
    Ok(())
}

/// Between two devices: the bytes straight across when they need no conversion (after the
/// source's stream has done its work), else through the host.
fn device_to_device(dst: &TensorRef<'_>, src: &TensorRef<'_>, same: SameMemoryCopy<'_>) -> Result<()> {
    if plain_like(src, dst) && plain(dst) {
        layer().synchronize_stream(current_stream(device_of(src)))?;
        let stream = current_stream(device_of(dst));
        // SAFETY: both hold the same dense bytes; synchronized after.
        unsafe { layer_copy(data(dst), data(src), nbytes(src)?, CopyKind::DeviceToDevice, stream)? };
        return layer().synchronize_stream(stream);
    }
    let t = host::empty_cpu(src.sizes(), src.dtype(), false)?;
    device_to_host(&t.as_ref(), src, false, same)?;
    host_to_device(dst, &t.as_ref(), false, same)
}

/// `t.item()`: its one element, read with a device-to-host copy.
pub fn read_scalar(t: &TensorRef<'_>) -> Result<Scalar> {
    if t.numel() != 1 {
        return Err(Error::runtime(format!("a Tensor with {} elements cannot be converted to Scalar", t.numel())));
    }
    let dtype = DType::from_scalar_type(t.dtype())?;
    let stream = current_stream(device_of(t));
    let mut bytes = [0u64; 2];
    // SAFETY: one element (at most 16 bytes) each side; synchronized before it is read.
    unsafe { layer_copy(bytes.as_mut_ptr().cast(), data(t), dtype.size(), CopyKind::DeviceToHost, stream)? };
    layer().synchronize_stream(stream)?;
    // SAFETY: the element's bytes, aligned for any dtype.
    let value = unsafe { load(dtype, bytes.as_ptr().cast()) };
    Ok(value.to_scalar())
}
