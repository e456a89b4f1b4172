//! The "regen" device's backend: the type the generated kernel traits are implemented for, on host
//! memory. Each family of [`crate::kernels::ops`] implements its own group of regen.toml's
//! `[implement]` in its own file (`kernels/ops/unary.rs` the `UnaryKernels` trait,
//! `kernels/ops/pool.rs` `PoolKernels`, `kernels/ops/copy.rs` the `bootstrap` group: tensors on the
//! device, views and copies); [`crate::custom`] (`custom.rs`) the `Kernels` trait's own methods.
//! This file imports nothing, so every family may name it.
//!
//! The generated entry points count every call, so tests can tell a native kernel from the CPU
//! fallback.

/// The reference device's kernels.
pub struct Backend;
