//! The "regen" device's backend: the generated kernel traits implemented on host memory. Each
//! family of [`crate::kernels`] implements its own group of regen.toml's `[implement]` (`unary.rs`
//! the `UnaryKernels` trait, `pool.rs` `PoolKernels`, ...); this file the `bootstrap` group:
//! tensors on the device, views and copies.
//!
//! The generated entry points count every call, so tests can tell a native kernel from the CPU
//! fallback.

use regen_runtime::{Error, Result, Tensor, TensorRef};

use crate::generated::BootstrapKernels;
use crate::kernels::copy;

pub struct Backend;

impl BootstrapKernels for Backend {
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

    fn record_stream(&self, _self_: TensorRef<'_>, s: regen_runtime::Stream) -> Result<()> {
        // A stream of this device (PrivateUse1, 20) only: CUDA's kernel rejects other devices' too.
        if s.device.device_type != 20 {
            return Err(Error::runtime(format!(
                "record_stream: expected a stream of this device, got one of device type {}",
                s.device.device_type
            )));
        }
        Ok(())
    }

    fn view_as_real(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        copy::view_as_real(self_)
    }

    fn view_as_complex(&self, self_: TensorRef<'_>) -> Result<Tensor> {
        copy::view_as_complex(self_)
    }
}
