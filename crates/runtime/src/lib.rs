//! regen-runtime: the library every regen backend depends on.
//!
//! [`abi`] mirrors the generated `regen_abi.h` field for field; [`args`] turns ABI values into
//! safe, typed kernel arguments and results; [`error`] carries failures back to C++, where they
//! become Python exceptions; [`ffi`] runs a kernel call so that neither an error nor a panic
//! crosses the C boundary as anything but a returned error, and counts calls; [`host`] holds the
//! services of the C++ host glue (`cpp/`, compiled into each backend by regen-build); [`alloc`]
//! is the default device memory (aligned host memory); [`rng`] the device's random generator
//! (PyTorch's CPU generator, state for state); [`view`] and [`bootstrap`] are the views
//! and default kernels a host-memory device starts from; [`element`] the typed elements and
//! the binary loop that make a generic kernel exact in every dtype.
//!
//! A backend crate mounts its generated `kernels.rs` (rows that [`kernels!`] expands) with
//! [`include_kernels!`], implements the generated `Kernels` trait, and exports it with
//! [`export_kernels!`]. This crate has no device and no kernel symbols of its own; it builds and
//! tests without PyTorch.

// Generated kernels.rs files name this crate by its external name, as in a backend crate.
extern crate self as regen_runtime;

pub mod abi;
pub mod alloc;
pub mod args;
pub mod bootstrap;
pub mod element;
pub mod error;
pub mod ffi;
pub mod host;
pub mod kernels;
pub mod rng;
pub mod view;

pub use args::{
    Device, Generator, Layout, MemoryFormat, OptionalTensorList, QScheme, Scalar, ScalarType, Storage, Stream, Tensor,
    TensorList, TensorRef,
};
pub use error::{Error, ErrorKind, Result};

/// Mounts the `kernels.rs` regen-build generated into `OUT_DIR` (write it inside a module:
/// `pub mod kernels { regen_runtime::include_kernels!(); }`).
#[macro_export]
macro_rules! include_kernels {
    () => {
        include!(concat!(env!("OUT_DIR"), "/regen/kernels.rs"));
    };
}

/// Exports `regen_backend_init`, which the C++ host glue calls once when the library loads: it
/// installs the host services, then `$kernels` as the backend's kernels.
/// `$generated` is the module holding the generated kernels.rs.
#[macro_export]
macro_rules! export_kernels {
    ($($generated:ident)::+, $kernels:expr) => {
        /// Called once by the C++ host glue when the library loads.
        ///
        /// # Safety
        /// `host` points to the glue's `regen_host` table, which lives as long as the process.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn regen_backend_init(host: *const $crate::host::Host) {
            // SAFETY: per the contract.
            unsafe { $crate::host::init(host) };
            $($generated)::+::install($kernels);
        }
    };
}

fn text_arg<'a>(ptr: *const u8, len: usize) -> &'a str {
    if ptr.is_null() {
        return "";
    }
    // SAFETY: callers (Python's ctypes) pass `len` readable bytes.
    std::str::from_utf8(unsafe { std::slice::from_raw_parts(ptr, len) }).unwrap_or("")
}

/// Test hook: how many times the Rust kernel of `op` (e.g. `add.out`) ran.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_native_calls(op: *const u8, len: usize) -> u64 {
    ffi::native_calls(text_arg(op, len))
}

/// Test hook: make the Rust kernel of `op` panic (an empty name stops it).
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_set_panic_on(op: *const u8, len: usize) {
    let op = text_arg(op, len);
    ffi::set_panic_on((!op.is_empty()).then(|| op.to_owned()));
}
