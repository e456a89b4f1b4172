//! regen-runtime: what generated `kernels.rs` files build on.
//!
//! [`abi`] mirrors the generated `regen_abi.h` field for field; [`args`] turns ABI values into
//! safe, typed kernel arguments and results; [`error`] carries failures back to C++, where they
//! become Python exceptions; [`ffi`] runs a kernel call so that neither an error nor a panic
//! crosses the C boundary as anything but a returned error.
//! This crate builds and tests without PyTorch.

pub mod abi;
pub mod args;
pub mod error;
pub mod ffi;
pub mod host;

pub use args::{
    Device, Generator, Layout, MemoryFormat, OptionalTensorList, QScheme, Scalar, ScalarType, Storage, Stream, Tensor,
    TensorList, TensorRef,
};
pub use error::{Error, ErrorKind, Result};
