//! The device's kernels: one dtype table and one TensorIterator; one row per elementwise op
//! (unary, binary, pointwise), and one engine per family with a small struct or row per op
//! (copy, reduce, scan, index, shape, sort, unique, matmul, conv, norm, rnn, loss, pool, resample,
//! embedding, optim, random), with `stl` the unstable sorting algorithms of CPU's C++ library for
//! sort's. Each family's `Kernels` methods are a macro
//! that [`crate::backend`] invokes in one line.

pub mod binary;
pub mod conv;
pub mod copy;
pub mod dtype;
pub mod embedding;
pub mod index;
pub mod iter;
pub mod loops;
pub mod loss;
pub mod matmul;
pub mod norm;
pub mod optim;
pub mod pointwise;
pub mod pool;
pub mod random;
pub mod reduce;
pub mod resample;
pub mod rnn;
pub mod scalar;
pub mod scan;
pub mod shape;
pub mod sort;
pub mod special;
pub mod stl;
pub mod unary;
pub mod unique;
pub mod vmath;
