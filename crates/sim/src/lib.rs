//! `sim`: a simulated accelerator behind PyTorch, built like any regen backend, that proves
//! regen-runtime's device layer. Its memory is address space the host cannot touch
//! ([`memory`]: `PROT_NONE` but while device work runs), its streams are worker threads that run
//! work in order ([`queue`]), its events complete when a worker reaches them and keep the time, and
//! [`layer::SimLayer`] puts these behind [`regen_runtime::device::DeviceLayer`]. Its kernels are
//! the reference kernels (regen-kernels, every group of which regen.toml's `[reference]` takes),
//! run on the stream workers; copies between host and device cross with the layer's copies, so any
//! code path that reads device memory on the host faults instead of passing.

// Every unsafe block says why it is sound (CI's clippy runs with -D warnings).
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod layer;
pub mod memory;
pub mod queue;

/// Generated from the pinned torch header (or the installed torch's) and `regen.toml`.
pub mod kernels {
    regen_runtime::include_kernels!();
}

/// The device's own kernels: none, every native op is a reference kernel.
pub struct Sim;

impl kernels::Kernels for Sim {}

/// Two devices, as torch_openreg has (REGEN_DEVICE_COUNT sets another number).
const DEVICES: usize = 2;

regen_runtime::export_kernels!(
    kernels,
    Sim,
    devices = DEVICES,
    layer = layer::SimLayer::new(regen_runtime::device::count())
);
