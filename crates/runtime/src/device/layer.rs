//! The device layer: what a backend's hardware does, as one trait. Memory (allocate and free on a
//! device), copies (host to device, device to host, device to device, in stream order), running a
//! kernel on a stream, streams (create, query, synchronize), events (record, wait, query,
//! synchronize, time) and the device's properties. Every method has a default body, and the
//! defaults are a synchronous device whose memory is host memory ([`HostMemory`]), so a backend
//! overrides only what its hardware does differently, as torch_openreg's `csrc/runtime/` puts
//! PyTorch's side over its fake accelerator's driver calls.
//!
//! regen-runtime builds the rest on top: the caching allocator ([`super::cache`]: per device,
//! per stream, `record_stream`, the `torch.cuda` statistics), the current device and stream per
//! thread ([`super`]), and the C functions the C++ glue's allocator, device guard and hooks call
//! ([`super::streams`]). A backend installs its layer with `export_kernels!(gen, Backend, layer =
//! MyLayer)`; without one it gets [`HostMemory`].

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use crate::error::{Error, Result};

/// A stream: its device and its id there (0 is the device's default stream, which always
/// exists; the others come from [`DeviceLayer::create_stream`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Stream {
    pub device: usize,
    pub id: u64,
}

impl Stream {
    /// The default stream of `device`.
    pub const fn default_of(device: usize) -> Self {
        Stream { device, id: 0 }
    }
}

/// Which memories a copy reads and writes (CUDA's `cudaMemcpyKind`): a layer whose memory the host
/// cannot address needs to know which side is which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyKind {
    HostToDevice,
    DeviceToHost,
    DeviceToDevice,
}

/// An event's handle, as [`DeviceLayer::create_event`] made it (the layer decides what it means;
/// the default layer's is a boxed host timestamp). Never 0: the glue keeps it where c10 keeps an
/// event, a pointer whose NULL means "not created yet".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventHandle(pub u64);

/// What `torch.NAME.get_device_properties(d)` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Properties {
    /// `get_device_name(d)`.
    pub name: String,
    /// Bytes of memory the device has (`total_memory`).
    pub total_memory: u64,
    /// How many kernels can compute at once (`multi_processor_count`).
    pub multi_processor_count: u32,
}

/// What a backend's hardware does. Every method has a default: the host-memory synchronous device
/// (see [`HostMemory`]). A layer that overrides one method of a group overrides the group:
/// memory (`allocate`, `free`), events (all the `*_event` methods; handles are the layer's).
///
/// The runtime calls these from any thread, with the device index checked (below the backend's
/// [`super::count`]).
pub trait DeviceLayer: Send + Sync + 'static {
    /// `nbytes` (> 0) of memory on `device`, aligned to [`ALIGN`] bytes; `None` when the device has
    /// no memory for it (the caching allocator then frees what it caches and asks again).
    fn allocate(&self, device: usize, nbytes: usize) -> Option<NonNull<u8>> {
        let _ = device;
        host_allocate(nbytes)
    }

    /// Gives back memory [`allocate`](Self::allocate) returned. The caching allocator calls it for
    /// cached blocks (`empty_cache`, a retry before out-of-memory) without synchronizing streams
    /// first; a layer whose copies run after `copy` returns waits for them here, as `cudaFree`
    /// does (sim defers the free to a task on each of its streams instead of blocking).
    ///
    /// # Safety
    /// `ptr` came from `allocate(device, nbytes)` and is freed once; no tensor holds it.
    unsafe fn free(&self, device: usize, ptr: NonNull<u8>, nbytes: usize) {
        let _ = device;
        // SAFETY: per the contract, from host_allocate(nbytes).
        unsafe { host_free(ptr, nbytes) }
    }

    /// `(free, total)` bytes of `device`'s memory (`torch.NAME.mem_get_info`).
    fn memory_info(&self, device: usize) -> (u64, u64) {
        let _ = device;
        host_memory_info()
    }

    /// The properties of `device`; by default its name is the backend's with the index and "host
    /// memory" (`regen:1 (host memory)`), its memory [`memory_info`](Self::memory_info)'s total and
    /// its compute units the host's threads.
    fn properties(&self, device: usize) -> Properties {
        Properties {
            name: format!("{}:{device} (host memory)", super::name()),
            total_memory: self.memory_info(device).1,
            multi_processor_count: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        }
    }

    /// Whether the host can read and write this layer's memory at its addresses (host memory). The
    /// runtime then copies between CPU and device tensors directly; otherwise every copy crosses
    /// with [`copy`](Self::copy) ([`super::copies`]) and nothing on the host dereferences device
    /// memory.
    fn host_addressable(&self) -> bool {
        true
    }

    /// Copies `nbytes` from `src` to `dst` in `stream`'s order: after the work queued on it so
    /// far, before the work queued after. A layer may return before the copy is done; the caller
    /// synchronizes the stream when it needs the bytes (a blocking `.to()`, `.item()`).
    ///
    /// # Safety
    /// `src` and `dst` hold `nbytes` on the sides `kind` names (host memory for the host side,
    /// this layer's for the device side) and stay valid until the copy is done.
    unsafe fn copy(&self, dst: *mut u8, src: *const u8, nbytes: usize, kind: CopyKind, stream: Stream) -> Result<()> {
        let _ = (kind, stream);
        // SAFETY: per the contract; host memory on both sides.
        unsafe { std::ptr::copy(src, dst, nbytes) };
        Ok(())
    }

    /// Runs a kernel on `stream` (the current stream of the op's device). The default runs it on
    /// the calling thread, now; a layer may run it on the stream's own thread, or with its memory
    /// readable only while it runs. The kernel reads and writes device memory.
    fn run(&self, stream: Stream, kernel: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        let _ = stream;
        kernel()
    }

    /// Whether [`launch`](Self::launch) may return before the kernel ran. When it may, the runtime
    /// hands it kernels that own their arguments ([`super::launch`]); when not (the default), it
    /// never builds them.
    fn queues_kernels(&self) -> bool {
        false
    }

    /// Queues an in-place kernel on `stream` ([`super::launch::launches`]: the host reads nothing
    /// it computes): it may run after `launch` returns, in the stream's order. An error it returns
    /// (already naming its op) is the layer's to report at a later call on the device: the next
    /// `run`, `launch` or synchronization, as CUDA reports a kernel's failure. Called only when
    /// [`queues_kernels`](Self::queues_kernels) says so; the default runs it now.
    fn launch(&self, stream: Stream, kernel: Box<dyn FnOnce() -> Result<()> + Send>) -> Result<()> {
        super::run_once(self, stream, kernel)
    }

    /// A new stream on `device` (`torch.NAME.Stream(priority=...)`, a lower number a higher
    /// priority, as CUDA's); its id, never 0 (the default stream's).
    fn create_stream(&self, device: usize, priority: i32) -> Result<u64> {
        let _ = (device, priority);
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Ok(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// Whether all the work queued on `stream` is done.
    fn query_stream(&self, stream: Stream) -> bool {
        let _ = stream;
        true
    }

    /// Waits until all the work queued on `stream` is done.
    fn synchronize_stream(&self, stream: Stream) -> Result<()> {
        let _ = stream;
        Ok(())
    }

    /// Waits until all the work queued on every stream of `device` is done.
    fn synchronize_device(&self, device: usize) -> Result<()> {
        let _ = device;
        Ok(())
    }

    /// A new event on `device`, not yet recorded; `timing`: it will be asked for elapsed time. Its
    /// handle is never 0.
    fn create_event(&self, device: usize, timing: bool) -> Result<EventHandle> {
        let _ = device;
        let event = Box::new(HostEvent { timing, when: Mutex::new(None) });
        Ok(EventHandle(Box::into_raw(event) as u64))
    }

    /// Records `event` on `stream`: it completes when the work queued there so far is done (a
    /// recorded event is recorded again by a later call).
    fn record_event(&self, event: EventHandle, stream: Stream) -> Result<()> {
        let _ = stream;
        // SAFETY: handles of this layer's events are HostEvent boxes (the group rule above).
        let event = unsafe { host_event(event) };
        // Recording again moves the timestamp.
        *event.when.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        Ok(())
    }

    /// Makes work queued on `stream` after this call wait until `event` completes.
    fn wait_event(&self, event: EventHandle, stream: Stream) -> Result<()> {
        let _ = (event, stream);
        Ok(())
    }

    /// Whether `event` completed (an event never recorded counts as complete, as CUDA's).
    fn query_event(&self, event: EventHandle) -> bool {
        let _ = event;
        true
    }

    /// Waits until `event` completes.
    fn synchronize_event(&self, event: EventHandle) -> Result<()> {
        let _ = event;
        Ok(())
    }

    /// Milliseconds from `start` to `end`, both recorded with timing.
    fn elapsed_ms(&self, start: EventHandle, end: EventHandle) -> Result<f64> {
        // SAFETY: as in record_event.
        let (a, b) = unsafe { (host_event(start), host_event(end)) };
        if !a.timing || !b.timing {
            return Err(Error::value("Both events must be created with argument 'enable_timing=True'."));
        }
        match (a.recorded(), b.recorded()) {
            (Some(a), Some(b)) => Ok(signed_ms(a, b)),
            _ => Err(Error::value("Both events must be recorded before calculating elapsed time.")),
        }
    }

    /// Frees `event`.
    ///
    /// # Safety
    /// `event` came from this layer's [`create_event`](Self::create_event) and is destroyed once.
    unsafe fn destroy_event(&self, event: EventHandle) {
        // SAFETY: per the contract, a HostEvent box from create_event.
        drop(unsafe { Box::from_raw(event.0 as *mut HostEvent) });
    }
}

/// The default layer: device memory is 64-byte-aligned host memory, copies are `memcpy`, kernels
/// run on the calling thread, every stream is idle and events hold host timestamps.
#[derive(Debug, Default, Clone, Copy)]
pub struct HostMemory;

impl DeviceLayer for HostMemory {}

/// Alignment of the default layer's memory (a cache line; enough for any SIMD load), and the least
/// alignment a layer's [`DeviceLayer::allocate`] gives.
pub const ALIGN: usize = 64;

/// `nbytes` of host memory aligned to [`ALIGN`]; `None` when the host has none for it.
pub fn host_allocate(nbytes: usize) -> Option<NonNull<u8>> {
    let layout = Layout::from_size_align(nbytes.max(1), ALIGN).ok()?;
    // SAFETY: the layout has a non-zero size.
    NonNull::new(unsafe { std::alloc::alloc(layout) })
}

/// # Safety
/// `ptr` came from [`host_allocate`]`(nbytes)` and is freed once.
pub unsafe fn host_free(ptr: NonNull<u8>, nbytes: usize) {
    // SAFETY: per the contract, the layout host_allocate used.
    unsafe { std::alloc::dealloc(ptr.as_ptr(), Layout::from_size_align_unchecked(nbytes.max(1), ALIGN)) }
}

/// `(free, total)`: what the host has available and its physical memory.
pub fn host_memory_info() -> (u64, u64) {
    // SAFETY: sysconf reads system constants.
    let (page, free, total) =
        unsafe { (libc_sysconf(SC_PAGESIZE), libc_sysconf(SC_AVPHYS_PAGES), libc_sysconf(SC_PHYS_PAGES)) };
    let bytes = |pages: i64| (pages.max(0) as u64).saturating_mul(page.max(0) as u64);
    (bytes(free), bytes(total))
}

// sysconf's names on Linux (unistd.h / bits/confname.h); the crate has no libc dependency.
const SC_PAGESIZE: i32 = 30;
const SC_PHYS_PAGES: i32 = 85;
const SC_AVPHYS_PAGES: i32 = 86;

unsafe extern "C" {
    #[link_name = "sysconf"]
    fn libc_sysconf(name: i32) -> i64;
}

/// The default layer's event: whether it times, and when it was last recorded.
struct HostEvent {
    timing: bool,
    when: Mutex<Option<Instant>>,
}

impl HostEvent {
    fn recorded(&self) -> Option<Instant> {
        *self.when.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// # Safety
/// `event` is a live handle from the default `create_event`.
unsafe fn host_event<'a>(event: EventHandle) -> &'a HostEvent {
    // SAFETY: per the contract.
    unsafe { &*(event.0 as *const HostEvent) }
}

/// Milliseconds from `a` to `b` (negative when `b` is earlier, as CUDA's elapsed time can be).
pub fn signed_ms(a: Instant, b: Instant) -> f64 {
    match b.checked_duration_since(a) {
        Some(d) => d.as_secs_f64() * 1e3,
        None => -(a.duration_since(b).as_secs_f64() * 1e3),
    }
}

static LAYER: OnceLock<&'static dyn DeviceLayer> = OnceLock::new();

/// Installs the backend's layer (`export_kernels!` does, when the library loads, before any
/// device is used); the first installation wins (returns false after).
pub fn install(layer: &'static dyn DeviceLayer) -> bool {
    LAYER.set(layer).is_ok()
}

/// The backend's layer: the installed one, or [`HostMemory`].
pub fn layer() -> &'static dyn DeviceLayer {
    *LAYER.get_or_init(|| &HostMemory)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_layer_is_a_synchronous_host_device() {
        let layer = HostMemory;
        let p = layer.allocate(0, 100).expect("host memory");
        assert_eq!(p.as_ptr() as usize % ALIGN, 0);
        let src = [7u8; 100];
        let s = Stream::default_of(0);
        // SAFETY: 100 bytes each side.
        unsafe { layer.copy(p.as_ptr(), src.as_ptr(), 100, CopyKind::HostToDevice, s) }.unwrap();
        // SAFETY: host memory, 100 bytes, copied into.
        assert_eq!(unsafe { std::slice::from_raw_parts(p.as_ptr(), 100) }, &src);
        // SAFETY: from allocate(0, 100), once.
        unsafe { layer.free(0, p, 100) };

        let a = layer.create_stream(0, 0).unwrap();
        assert_ne!(a, 0);
        assert_ne!(layer.create_stream(0, -1).unwrap(), a);
        assert!(layer.query_stream(Stream { device: 0, id: a }));

        let (start, end) = (layer.create_event(0, true).unwrap(), layer.create_event(0, true).unwrap());
        let err = layer.elapsed_ms(start, end).unwrap_err().to_string();
        assert!(err.contains("must be recorded"), "{err}");
        layer.record_event(start, s).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
        layer.record_event(end, s).unwrap();
        assert!(layer.elapsed_ms(start, end).unwrap() >= 2.0);
        assert!(layer.elapsed_ms(end, start).unwrap() <= -2.0, "reversed events give a negative time");
        let untimed = layer.create_event(0, false).unwrap();
        layer.record_event(untimed, s).unwrap();
        assert!(layer.elapsed_ms(start, untimed).unwrap_err().to_string().contains("enable_timing"));
        // SAFETY: each from create_event, destroyed once.
        unsafe {
            for e in [start, end, untimed] {
                layer.destroy_event(e);
            }
        }
        let (free, total) = layer.memory_info(0);
        assert!(total > 0 && free <= total);
    }
}
