//! Every fixture release's generated `kernels.rs`, compiled as a module of a crate that depends
//! on regen-runtime: `torch_2_15_0`, ..., `configured` (the pinned release of
//! crates/kernels/torch-version with `regen.toml`) and `awkward` (names reserved in Rust, custom
//! ops: `awkward/`), `grouped` (kernel groups: `grouped/`), and `library` (a kernel library's
//! group traits: `library/`) with `referencing`, a backend that calls that library's kernels
//! (`referencing/`). `grouped`, `library` and `referencing` generate from the pinned release too.
//! Building this crate is the test that generated Rust compiles, warning-free, for each release.

include!(concat!(env!("OUT_DIR"), "/mods.rs"));

/// The kernel library `referencing/regen.toml` names in `[reference]`: its generated group traits
/// and the type that implements them, as a kernel library crate such as regen-kernels has them.
pub mod reference_library {
    pub use crate::library::*;
    use regen_runtime::{Error, Result, Scalar, TensorList, TensorRef};

    /// The library's kernels.
    #[derive(Default)]
    pub struct Reference;

    impl ArithKernels for Reference {
        fn add_out(&self, _: TensorRef<'_>, _: TensorRef<'_>, _: Scalar, _: TensorRef<'_>) -> Result<()> {
            Err(Error::value("the library's add.out"))
        }
        fn _local_scalar_dense(&self, _: TensorRef<'_>) -> Result<Scalar> {
            Err(Error::value("the library's _local_scalar_dense, which the backend replaces"))
        }
    }

    impl ShapeKernels for Reference {
        fn split_with_sizes_copy_out(&self, _: TensorRef<'_>, _: &[i64], dim: i64, _: TensorList<'_>) -> Result<()> {
            Err(Error::index(format!("the library's split, dim {dim}")))
        }
    }
}
