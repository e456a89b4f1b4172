//! The device's kernel engine (being built; issue 9): one dtype table, one TensorIterator, one
//! row per elementwise op, vectorised math. Modules land here one by one and are wired into
//! [`crate::backend`] once each is tested.

pub mod binary;
pub mod copy;
pub mod dtype;
pub mod index;
pub mod iter;
pub mod loops;
pub mod matmul;
pub mod pointwise;
pub mod reduce;
pub mod scalar;
pub mod scan;
pub mod shape;
pub mod sort;
pub mod special;
pub mod unary;
pub mod vmath;
