//! The "{{ device }}" device's hardware, as regen-runtime's device layer: the one file to fill for
//! an accelerator. Each method below is a call into your driver; until you write it, it does what a
//! host-memory device does (regen_runtime::device::HostMemory), so the crate builds, installs and
//! passes its tests from the start. Replace one group at a time: memory (`allocate`, `free`,
//! `memory_info`, then `host_addressable` false), copies, kernel launch (`run`), streams, events.
//! The runtime builds the rest on these: the caching allocator (`torch.{{ device }}.memory_stats`,
//! `empty_cache`, `record_stream`), the current device and stream per thread, copies between CPU
//! and device tensors, and PyTorch's allocator, device guard, streams and events (no C++ of yours).
//! regen's crates/sim/src/layer.rs is a complete example: memory the host cannot touch and a
//! worker thread per stream.

use std::ptr::NonNull;

use regen_runtime::Result;
use regen_runtime::device::layer::{HostMemory, host_allocate, host_free};
use regen_runtime::device::{CopyKind, DeviceLayer, EventHandle, Properties, Stream};

/// The "{{ device }}" hardware.
pub struct {{ layer_type }};

impl DeviceLayer for {{ layer_type }} {
    /// Memory on `device`, at least 64-byte aligned (your driver's malloc); None when it is full.
    fn allocate(&self, device: usize, nbytes: usize) -> Option<NonNull<u8>> {
        let _ = device;
        host_allocate(nbytes)
    }

    /// Memory `allocate` gave (your driver's free).
    unsafe fn free(&self, device: usize, ptr: NonNull<u8>, nbytes: usize) {
        let _ = device;
        // SAFETY: per the trait's contract, from allocate(nbytes), freed once.
        unsafe { host_free(ptr, nbytes) }
    }

    /// (free, total) bytes of `device`'s memory.
    fn memory_info(&self, device: usize) -> (u64, u64) {
        HostMemory.memory_info(device)
    }

    /// What `torch.{{ device }}.get_device_properties(d)` says.
    fn properties(&self, device: usize) -> Properties {
        HostMemory.properties(device)
    }

    /// false once `allocate` returns memory the host cannot read: copies then cross with `copy`.
    fn host_addressable(&self) -> bool {
        true
    }

    /// Copies `nbytes` in `stream`'s order (your driver's async memcpy of `kind`).
    unsafe fn copy(&self, dst: *mut u8, src: *const u8, nbytes: usize, kind: CopyKind, stream: Stream) -> Result<()> {
        // SAFETY: per the trait's contract, both ranges are valid for nbytes.
        unsafe { HostMemory.copy(dst, src, nbytes, kind, stream) }
    }

    /// Runs a kernel on `stream` (your driver's launch, or your device's context for it).
    fn run(&self, stream: Stream, kernel: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        HostMemory.run(stream, kernel)
    }

    /// Whether `launch` may return before the kernel ran (true once your launches are
    /// asynchronous: the runtime then hands it kernels that own their arguments).
    fn queues_kernels(&self) -> bool {
        HostMemory.queues_kernels()
    }

    /// Queues an in-place kernel on `stream`; report its error at the device's next call that
    /// queues or waits for work, as CUDA reports a kernel's failure.
    fn launch(&self, stream: Stream, kernel: Box<dyn FnOnce() -> Result<()> + Send>) -> Result<()> {
        HostMemory.launch(stream, kernel)
    }

    /// A new stream on `device` (a lower priority number runs first); its id, never 0.
    fn create_stream(&self, device: usize, priority: i32) -> Result<u64> {
        HostMemory.create_stream(device, priority)
    }

    fn query_stream(&self, stream: Stream) -> bool {
        HostMemory.query_stream(stream)
    }

    fn synchronize_stream(&self, stream: Stream) -> Result<()> {
        HostMemory.synchronize_stream(stream)
    }

    fn synchronize_device(&self, device: usize) -> Result<()> {
        HostMemory.synchronize_device(device)
    }

    // Events: the handle is yours (replace all of these together).
    fn create_event(&self, device: usize, timing: bool) -> Result<EventHandle> {
        HostMemory.create_event(device, timing)
    }

    fn record_event(&self, event: EventHandle, stream: Stream) -> Result<()> {
        HostMemory.record_event(event, stream)
    }

    fn wait_event(&self, event: EventHandle, stream: Stream) -> Result<()> {
        HostMemory.wait_event(event, stream)
    }

    fn query_event(&self, event: EventHandle) -> bool {
        HostMemory.query_event(event)
    }

    fn synchronize_event(&self, event: EventHandle) -> Result<()> {
        HostMemory.synchronize_event(event)
    }

    fn elapsed_ms(&self, start: EventHandle, end: EventHandle) -> Result<f64> {
        HostMemory.elapsed_ms(start, end)
    }

    unsafe fn destroy_event(&self, event: EventHandle) {
        // SAFETY: per the trait's contract, from create_event, destroyed once.
        unsafe { HostMemory.destroy_event(event) }
    }
}
