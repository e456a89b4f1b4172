//! The op families: one file per family, each implementing its kernel group's trait (regen.toml's
//! `[implement]` groups) for [`crate::Reference`]; and [`spatial`], what the `[batch,] channel,
//! spatial...` families (pool, resample, resample_aa) share. It uses copy's and norm's helpers, so
//! it lives beside them, not in the engine, which imports nothing from here.

pub mod amp;
pub mod attention;
pub mod binary;
pub mod conv;
pub mod copy;
pub mod embedding;
pub mod index;
pub mod loss;
pub mod matmul;
pub mod norm;
pub mod optim;
pub mod pointwise;
pub mod pool;
pub mod random;
pub mod reduce;
pub mod resample;
pub mod resample_aa;
pub mod rnn;
pub mod samplers;
pub mod scan;
pub mod shape;
pub mod sort;
pub mod spatial;
pub mod unary;
pub mod unique;
