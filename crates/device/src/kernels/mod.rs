//! The device's compute kernels, in three folders by role:
//!
//! - [`engine`]: what every family runs on — one dtype table with PyTorch's type promotion, one
//!   TensorIterator with its operands and inner loops, the scalar math of the op tables, what the
//!   spatial families share, and the vector tier in force (`REGEN_CPU_CAPABILITY`).
//! - [`math`]: the math libraries the op families are written in — the special functions, the
//!   vectorised transcendental functions, and the unstable sorting algorithms of CPU's C++ library.
//! - [`ops`]: one file per op family, each implementing its kernel group's trait of the generated
//!   code for [`crate::backend::Backend`]: one row per elementwise op (unary, binary, pointwise),
//!   and one engine per family with a small struct or row per op (copy, reduce, scan, index, shape,
//!   sort, unique, matmul, conv, norm, rnn, loss, pool, resample, embedding, optim, amp, random).
//!
//! The device's own custom ops are not here: they are [`crate::custom`].

pub mod engine;
pub mod math;
pub mod ops;
