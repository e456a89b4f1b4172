//! regen-kernels: the reference kernels, PyTorch's ops as Rust on host memory, for any regen
//! backend whose kernels can read their tensors' memory from the thread that runs them. A backend
//! takes them with `[reference]` in its regen.toml (`crate = "regen_kernels"`, `config` this
//! crate's regen.toml): its generated entry points call [`Reference`]'s methods directly, and each
//! op it lists in its own `[implement]` replaces the reference's kernel for that op, one at a time.
//! The reference "regen" device (crates/device) is such a backend, taking every group.
//!
//! Each group of this crate's regen.toml `[implement]` is a trait ([`UnaryKernels`],
//! [`PoolKernels`], ...), generated for the header of the release it builds for (`groups.rs`,
//! checked in under `generated/` for the pinned one), and implemented for [`Reference`] in its
//! family's file. Three folders by role:
//!
//! - [`engine`]: what every family runs on — one dtype table with PyTorch's type promotion, one
//!   TensorIterator with its operands and inner loops, the one dtype -> loop dispatch, the scalar
//!   math of the op tables, and the vector tier in force (`REGEN_CPU_CAPABILITY`). It imports
//!   nothing from `ops`.
//! - [`math`]: the math libraries the op families are written in — the special functions, the
//!   vectorised transcendental functions, and the unstable sorting algorithms of CPU's C++ library.
//! - [`ops`]: one file per op family, each implementing its kernel group's trait for
//!   [`Reference`]: one row per elementwise op (unary, binary, pointwise), and one engine per
//!   family with a small struct or row per op (copy, reduce, scan, index, shape, sort, unique,
//!   matmul, conv, norm, rnn, loss, pool, resample, embedding, optim, amp, random), and `spatial`,
//!   what pool, resample and resample_aa share.

// Every unsafe block says why it is sound (CI's clippy runs with -D warnings).
#![warn(clippy::undocumented_unsafe_blocks)]

/// The kernel groups' traits, generated from the header and this crate's regen.toml.
pub mod groups {
    regen_runtime::include_kernel_groups!();
}
pub use groups::*;

// The runtime's dtype dispatch, under the path the family files and backends already use.
pub use regen_runtime::{dispatch, dispatch_all};

/// The reference kernels: every group trait of this crate is implemented for it, in the file of
/// its family (`ops/unary.rs`: [`UnaryKernels`]). Backends call it through their generated entry
/// points (`<regen_kernels::Reference as regen_kernels::UnaryKernels>::abs_out`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Reference;

pub mod engine;
pub mod math;
pub mod ops;
