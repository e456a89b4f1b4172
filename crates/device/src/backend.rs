//! The "regen" device's backend: the type the generated `Kernels` trait is implemented for. Its
//! only methods of its own are the device's custom ops ([`crate::custom`]); every other native op
//! is a reference kernel (regen.toml `[reference]`), which the generated entry points call on
//! `regen_kernels::Reference` directly. This file imports nothing, so every module may name it.
//!
//! The generated entry points count every call, so tests can tell a native kernel from the CPU
//! fallback.

/// The reference device's kernels.
pub struct Backend;
