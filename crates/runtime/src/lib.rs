//! regen-runtime: the library every regen backend depends on.
//!
//! [`abi`] mirrors the generated `regen_abi.h` field for field; [`args`] turns ABI values into
//! safe, typed kernel arguments and results; [`error`] carries failures back to C++, where they
//! become Python exceptions; [`ffi`] runs a kernel call so that neither an error nor a panic
//! crosses the C boundary as anything but a returned error, and counts calls; [`fallback`] counts
//! what the CPU fallback served and warns or raises when asked; [`glue`] holds the table of
//! services the C++ host glue installs (`cpp/`, compiled into each backend by regen-build) and
//! [`host`] the typed services over tensors; [`device`] the devices (how many, each thread's
//! current device and stream), the device layer a backend's hardware implements (memory, copies,
//! streams, events; host memory by default) and the caching allocator over it; [`pool`] the host
//! threads kernels run their parallel loops on; [`rng`] the devices' random generators (PyTorch's CPU generator, state
//! for state); [`dtype`] the one dtype system (table, promotion, `dispatch!`); [`view`] and
//! [`bootstrap`] are the views and default kernels a host-memory device starts from; [`element`]
//! the typed elements and the binary loop that make a generic kernel exact in every dtype.
//!
//! A backend crate mounts its generated `kernels.rs` (rows that [`kernels!`] expands) with
//! [`include_kernels!`], implements the generated `Kernels` trait, and exports it with
//! [`export_kernels!`]. This crate has no device and no kernel symbols of its own; it builds and
//! tests without PyTorch.

// Every unsafe block says why it is sound (CI's clippy runs with -D warnings).
#![warn(clippy::undocumented_unsafe_blocks)]

// Generated kernels.rs files name this crate by its external name, as in a backend crate.
extern crate self as regen_runtime;

pub mod abi;
pub mod args;
pub mod bootstrap;
pub mod device;
pub mod dtype;
pub mod element;
pub mod error;
pub mod fallback;
pub mod ffi;
pub mod glue;
pub mod host;
pub mod kernels;
pub mod pool;
pub mod rng;
pub mod view;

pub use args::{
    Device, Generator, Layout, MemoryFormat, OptionalTensorList, QScheme, Scalar, ScalarType, Storage, Stream, Tensor,
    TensorList, TensorRef,
};
pub use error::{Error, ErrorKind, Result};
// The element crates, so that `dispatch!`'s types resolve in any backend (and one version of
// each is used throughout).
pub use {half, num_complex};

/// Mounts the `kernels.rs` regen-build generated into `OUT_DIR` (write it inside a module:
/// `pub mod kernels { regen_runtime::include_kernels!(); }`).
#[macro_export]
macro_rules! include_kernels {
    () => {
        include!(concat!(env!("OUT_DIR"), "/regen/kernels.rs"));
    };
}

/// Mounts a kernel library's `groups.rs` regen-build generated into `OUT_DIR` (its group traits;
/// `regen_build::Builder::kernel_library`).
#[macro_export]
macro_rules! include_kernel_groups {
    () => {
        include!(concat!(env!("OUT_DIR"), "/regen/groups.rs"));
    };
}

/// Exports `regen_backend_init`, which the C++ host glue calls once when the library loads: it
/// sets the number of devices (`devices = N`; 1 when omitted; `REGEN_DEVICE_COUNT` overrides it,
/// [`device`]) and the device layer (`layer = MyLayer`, a [`device::DeviceLayer`]; host memory when
/// omitted), installs the host services, then `$kernels` as the backend's kernels.
/// `$generated` is the module holding the generated kernels.rs.
#[macro_export]
macro_rules! export_kernels {
    ($($generated:ident)::+, $kernels:expr $(, devices = $devices:expr)? $(, layer = $layer:expr)? $(,)?) => {
        /// Called once by the C++ host glue when the library loads.
        ///
        /// # Safety
        /// `host` points to the glue's `regen_host` table, which lives as long as the process.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn regen_backend_init(host: *const $crate::host::Host) {
            $($crate::device::set_default_count($devices);)?
            $($crate::device::layer::install(::std::boxed::Box::leak(::std::boxed::Box::new($layer)));)?
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

/// How many times the Rust kernel of `op` (e.g. `add.out`) ran; `u64::MAX` when this backend
/// has no kernel for `op` (the Python side then tells an op torch lacks from one the fallback
/// serves).
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_native_calls(op: *const u8, len: usize) -> u64 {
    ffi::native_calls(text_arg(op, len)).unwrap_or(u64::MAX)
}

/// Called by the generated CPU fallback before it runs `op` on CPU: counts it and says what to do
/// (0 run, 1 warn and run, 2 raise: [`fallback::Action`]).
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_fallback_called(op: *const u8, len: usize) -> i32 {
    fallback::called(text_arg(op, len)) as i32
}

/// How many calls of `op` the CPU fallback served.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_fallback_calls(op: *const u8, len: usize) -> u64 {
    fallback::calls(text_arg(op, len))
}

/// Writes `op count` lines, one per op the CPU fallback served, into `buf` (up to `cap` bytes);
/// returns the length of the whole report (call again with a larger buffer when it is more).
///
/// # Safety
/// `buf` is NULL or writable for `cap` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_runtime_fallback_report(buf: *mut u8, cap: usize) -> usize {
    let text: String = fallback::report().iter().map(|(op, n)| format!("{op} {n}\n")).collect();
    // SAFETY: per the contract.
    unsafe { write_report(&text, buf, cap) }
}

/// # Safety
/// `buf` is NULL or writable for `cap` bytes.
pub(crate) unsafe fn write_report(text: &str, buf: *mut u8, cap: usize) -> usize {
    if !buf.is_null() && text.len() <= cap {
        // SAFETY: per the contract, `cap >= text.len()` bytes are writable.
        unsafe { std::ptr::copy_nonoverlapping(text.as_ptr(), buf, text.len()) };
    }
    text.len()
}

/// Asked by the generated registrations before each op's kernel is registered: true when the
/// environment variable `var` (`<DEVICE>_FALLBACK_OPS`) routes `op` to the CPU fallback
/// ([`fallback::routed`]).
///
/// # Safety
/// `var` and `op` have `var_len` and `op_len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_runtime_fallback_routed(
    var: *const u8,
    var_len: usize,
    op: *const u8,
    op_len: usize,
) -> bool {
    fallback::routed(text_arg(var, var_len), text_arg(op, op_len))
}

/// Called by the generated wrapper of an in-place op run by its `.out` kernel (`out` = `self`)
/// before and after the call: marks the TensorImpl the op writes in place on this thread and
/// returns the previous mark ([`host::in_place`]).
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_in_place(impl_: *const std::ffi::c_void) -> *const std::ffi::c_void {
    host::in_place(impl_)
}

/// Writes what became of the names of `<DEVICE>_FALLBACK_OPS`: its first line is the variable
/// (empty when no registration asked), then `name routed`, `name refused <why>` or `name unasked`
/// lines; returns the
/// length of the whole report, as [`regen_runtime_fallback_report`].
///
/// # Safety
/// `buf` is NULL or writable for `cap` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_runtime_fallback_routes(buf: *mut u8, cap: usize) -> usize {
    let (var, names) = fallback::routes().unwrap_or_default();
    let mut text = format!("{var}\n");
    for (name, routing) in names {
        let state = match routing {
            fallback::Routing::Routed => "routed".to_owned(),
            fallback::Routing::Refused => {
                let why = fallback::NEVER_ROUTED.iter().find(|(op, _)| *op == name).map_or("", |(_, why)| why);
                format!("refused {why}")
            }
            fallback::Routing::Unasked => "unasked".to_owned(),
        };
        text.push_str(&format!("{name} {state}\n"));
    }
    // SAFETY: per the contract.
    unsafe { write_report(&text, buf, cap) }
}

/// Sets the fallback's mode by name (`quiet`, `warn`, `raise`; empty: leave it) and returns the
/// mode now in force (1 quiet, 2 warn, 3 raise: [`fallback::Mode`]), or -1 for an unknown name.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_fallback_mode(name: *const u8, len: usize) -> i32 {
    let name = text_arg(name, len);
    if name.is_empty() {
        return fallback::mode() as i32;
    }
    match fallback::Mode::parse(name) {
        Some(mode) => {
            fallback::set_mode(mode);
            mode as i32
        }
        None => -1,
    }
}

/// Forgets the fallback's counts.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_fallback_reset() {
    fallback::reset();
}

/// Test hook: make the Rust kernel of `op` panic (an empty name stops it).
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_set_panic_on(op: *const u8, len: usize) {
    let op = text_arg(op, len);
    ffi::set_panic_on((!op.is_empty()).then(|| op.to_owned()));
}

/// NULL for Ok, else the error's message, valid until the next such call on this thread.
pub(crate) fn c_status(result: error::Result<()>) -> *const std::ffi::c_char {
    thread_local! {
        static MESSAGE: std::cell::RefCell<std::ffi::CString> = std::cell::RefCell::new(std::ffi::CString::default());
    }
    match result {
        Ok(()) => std::ptr::null(),
        Err(err) => MESSAGE.with(|m| {
            *m.borrow_mut() = std::ffi::CString::new(err.message().replace('\0', " ")).unwrap_or_default();
            m.borrow().as_ptr()
        }),
    }
}

/// torch.autocast's state for the device (the host glue's, at::autocast's), for the device
/// module's `is_autocast_enabled` and `get_autocast_dtype`: torch 2.1 to 2.3 keep it through
/// them. The dtype is a c10::ScalarType number. NULL, or an error message.
///
/// # Safety
/// `enabled` and `dtype` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_runtime_autocast_state(enabled: *mut bool, dtype: *mut i32) -> *const std::ffi::c_char {
    c_status(host::autocast_state().map(|(on, number)| {
        // SAFETY: per the contract.
        unsafe {
            *enabled = on;
            *dtype = number;
        }
    }))
}

/// The device module's `set_autocast_enabled`. NULL, or an error message.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_set_autocast_enabled(enabled: bool) -> *const std::ffi::c_char {
    c_status(host::set_autocast_enabled(enabled))
}

/// The device module's `set_autocast_dtype` (a c10::ScalarType number; the glue refuses a
/// non-floating one). NULL, or an error message.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_set_autocast_dtype(dtype: i32) -> *const std::ffi::c_char {
    c_status(host::set_autocast_dtype(dtype))
}
