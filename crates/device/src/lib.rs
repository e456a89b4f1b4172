//! The reference "regen" device: PyTorch's PrivateUse1 backend with Rust kernels on host memory.
//!
//! Built exactly like any regen backend: regen-build generates `kernels.rs` and the C++ (from the
//! pinned torch header and `regen.toml`), [`backend::Backend`] implements the generated trait
//! with the runtime's default bootstrap kernels plus its own compute kernels (the table-driven
//! engines in [`kernels`]), and
//! [`regen_runtime::export_kernels!`] hands it to the host glue at load time.

pub mod backend;
pub mod kernels;

/// Generated from the pinned torch header and `regen.toml` (checked in under `generated/`).
pub mod generated {
    regen_runtime::include_kernels!();
}

regen_runtime::export_kernels!(generated, backend::Backend);
