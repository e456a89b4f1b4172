//! Several devices: how many the backend has, and each thread's current device (CUDA's
//! `cudaGetDevice` / `cudaSetDevice`). The C++ glue's device guard, allocator and hooks and the
//! Python device module all read and set the one per-thread state kept here, so `with
//! torch.NAME.device(1)`, a `DeviceGuard` set by a generated wrapper and a kernel asking where its
//! new tensors go agree.
//!
//! The count is the backend's (`export_kernels!(kernels, Backend, devices = 2)`; 1 when it says
//! nothing), or `REGEN_DEVICE_COUNT` when set, read once at the first question. Each thread also
//! has a current stream on each device (CUDA's `getCurrentCUDAStream(d)`), set by the device
//! guard (`torch.NAME.set_stream`, `with torch.NAME.stream(s)`): kernels run on it, and the
//! caching allocator keeps a pool per stream.
//!
//! What the hardware does is the backend's device layer ([`mod@layer`]: memory, copies, streams,
//! events; host memory by default); on top of it the runtime keeps the caching allocator
//! ([`cache`]) and the C functions the C++ glue calls ([`streams`]).

pub mod cache;
pub mod copies;
pub mod host_ops;
pub mod launch;
pub mod layer;
pub mod streams;

pub use layer::{CopyKind, DeviceLayer, EventHandle, HostMemory, Properties, Stream, layer};

use std::cell::Cell;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The most devices a backend may have (the allocator keeps counters per device).
pub const MAX_DEVICES: usize = 16;

/// The backend's own count, before `REGEN_DEVICE_COUNT` is read.
static DEFAULT_COUNT: AtomicUsize = AtomicUsize::new(1);
static COUNT: OnceLock<usize> = OnceLock::new();

thread_local! {
    /// This thread's current device (0 on a new thread, as CUDA's).
    static CURRENT: Cell<usize> = const { Cell::new(0) };
    /// This thread's current stream on each device (0, the default stream, until one is set).
    static CURRENT_STREAMS: [Cell<u64>; MAX_DEVICES] = const { [const { Cell::new(0) }; MAX_DEVICES] };
}

/// Sets how many devices the backend has, unless `REGEN_DEVICE_COUNT` says otherwise; called
/// by `export_kernels!` when the library loads, before any device is used. Clamped to
/// `1..=MAX_DEVICES`.
pub fn set_default_count(n: usize) {
    DEFAULT_COUNT.store(n.clamp(1, MAX_DEVICES), Ordering::Relaxed);
}

/// Reads `REGEN_DEVICE_COUNT`: a number from 1 to [`MAX_DEVICES`]; `None` when it is not one.
pub fn parse_count(value: &str) -> Option<usize> {
    value.trim().parse().ok().filter(|n| (1..=MAX_DEVICES).contains(n))
}

/// How many devices there are.
pub fn count() -> usize {
    *COUNT.get_or_init(|| {
        let default = DEFAULT_COUNT.load(Ordering::Relaxed);
        match std::env::var("REGEN_DEVICE_COUNT") {
            Err(_) => default,
            Ok(value) => parse_count(&value).unwrap_or_else(|| {
                // Loading cannot fail for a bad setting; say so once and use the backend's count.
                eprintln!(
                    "regen: REGEN_DEVICE_COUNT={value:?} is not a device count from 1 to {MAX_DEVICES}; using {default}"
                );
                default
            }),
        }
    })
}

/// The device's name as torch prints it (`regen` in `regen:1`); `privateuseone` before the glue
/// installed its services (in Rust unit tests).
pub fn name() -> &'static str {
    crate::glue::host()
        // SAFETY: the glue's table holds a static NUL-terminated string.
        .and_then(|h| unsafe { std::ffi::CStr::from_ptr(h.device_name) }.to_str().ok())
        .unwrap_or("privateuseone")
}

/// This thread's current device.
pub fn current() -> usize {
    CURRENT.with(Cell::get)
}

/// The error for a device index the backend does not have, worded as the glue's check and the
/// Python device module word it (torch_openreg's "out of range", then the devices there are).
pub fn invalid(index: i64) -> crate::Error {
    let n = count();
    let have = if n == 1 { "one device (index 0)".to_owned() } else { format!("{n} devices (indices 0 to {})", n - 1) };
    let name = name();
    crate::Error::runtime(format!(
        "The device index is out of range: {name} has {have}, not {name}:{index} (invalid device index)"
    ))
}

/// This thread's current stream on `device` (below [`MAX_DEVICES`]; the default stream otherwise).
pub fn current_stream(device: usize) -> Stream {
    let id = CURRENT_STREAMS.with(|s| s.get(device).map_or(0, Cell::get));
    Stream { device, id }
}

/// Makes `stream` this thread's current stream on its device; returns the one it replaces.
pub fn set_current_stream(stream: Stream) -> Stream {
    let previous = current_stream(stream.device);
    CURRENT_STREAMS.with(|s| {
        if let Some(current) = s.get(stream.device) {
            current.set(stream.id);
        }
    });
    previous
}

/// The stream a kernel runs on: the current device's current stream (a generated wrapper made the
/// op's device current).
pub fn kernel_stream() -> Stream {
    current_stream(current())
}

/// Runs `kernel` through the device layer on `stream` ([`DeviceLayer::run`] takes a `FnMut`; a
/// kernel runs once).
pub fn run_on(stream: Stream, kernel: impl FnOnce() -> crate::Result<()>) -> crate::Result<()> {
    run_once(layer(), stream, kernel)
}

/// Runs `kernel` through `layer`'s [`DeviceLayer::run`] (the one adapter of a `FnOnce` to its
/// `FnMut`; DeviceLayer::launch's default uses it on its own layer).
pub(crate) fn run_once<L: DeviceLayer + ?Sized>(
    layer: &L,
    stream: Stream,
    kernel: impl FnOnce() -> crate::Result<()>,
) -> crate::Result<()> {
    let mut kernel = Some(kernel);
    layer.run(stream, &mut || match kernel.take() {
        Some(k) => k(),
        None => Err(crate::Error::runtime("the device layer ran a kernel twice")),
    })
}

/// Makes `index` this thread's current device.
pub fn set_current(index: usize) -> crate::Result<()> {
    if index >= count() {
        return Err(invalid(index as i64));
    }
    CURRENT.with(|c| c.set(index));
    Ok(())
}

/// Makes a device this thread's current one until dropped, when the previous one comes back
/// (CUDA's `DeviceGuard`, for Rust code that allocates on a tensor's device).
#[must_use = "the device is current only while the guard lives"]
pub struct DeviceGuard {
    previous: usize,
}

impl DeviceGuard {
    pub fn set(index: usize) -> crate::Result<Self> {
        let previous = current();
        if index != previous {
            set_current(index)?;
        }
        Ok(DeviceGuard { previous })
    }
}

impl Drop for DeviceGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

/// The number of devices, for the glue and the Python device module.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_device_count() -> i32 {
    count() as i32
}

/// This thread's current device.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_current_device() -> i32 {
    current() as i32
}

/// Makes `index` this thread's current device; false (nothing changed) when there is no such
/// device. The glue checks the index first, with its own message.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_set_device(index: i32) -> bool {
    usize::try_from(index).is_ok_and(|i| set_current(i).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_parse_within_the_limit() {
        assert_eq!(parse_count("2"), Some(2));
        assert_eq!(parse_count(" 16 "), Some(16));
        assert_eq!(parse_count("0"), None);
        assert_eq!(parse_count("17"), None);
        assert_eq!(parse_count("two"), None);
    }

    #[test]
    fn the_current_device_is_per_thread_and_checked() {
        // The test binary has the default count, 1 (REGEN_DEVICE_COUNT unset in tests).
        assert_eq!(count(), 1);
        assert_eq!(current(), 0);
        assert!(set_current(0).is_ok());
        let err = set_current(1).unwrap_err().to_string();
        assert!(
            err.ends_with(
                "out of range: privateuseone has one device (index 0), not privateuseone:1 (invalid device index)"
            ),
            "{err}"
        );
        assert!(!regen_runtime_set_device(-1));
        assert_eq!(std::thread::spawn(current).join().unwrap(), 0);
    }
}
