//! The reference "regen" device: PyTorch's PrivateUse1 backend with Rust kernels on host memory.
//!
//! Built exactly like any regen backend: regen-build generates `kernels.rs` and the C++ (from the
//! pinned torch header and `regen.toml`). Its kernels are the reference kernels (the
//! regen-kernels crate, every group of which regen.toml's `[reference]` takes: the generated entry
//! points call them directly) and its own custom ops ([`custom`]), which [`backend::Backend`]
//! implements; [`regen_runtime::export_kernels!`] hands it to the host glue at load time.

// Every unsafe block says why it is sound (CI's clippy runs with -D warnings).
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod backend;
pub mod custom;

/// Generated from the pinned torch header and `regen.toml` (checked in under `generated/`).
pub mod generated {
    regen_runtime::include_kernels!();
}

// Two devices, as torch_openreg has, so that code written for several accelerators (`.to("regen:1")`,
// `torch.regen.device(1)`, per-device memory and random state) runs against the reference device;
// REGEN_DEVICE_COUNT sets another number.
regen_runtime::export_kernels!(generated, backend::Backend, devices = 2);

/// The vector tier the device's kernels run ([`regen_kernels::engine::capability`],
/// `REGEN_CPU_CAPABILITY`), as a C string (`default`, `avx2` or `avx512`), for the tests' report of
/// each run.
#[unsafe(no_mangle)]
pub extern "C" fn regen_device_cpu_capability() -> *const std::ffi::c_char {
    regen_kernels::engine::capability().name().as_ptr()
}
