//! The C functions the C++ glue (and the Python device module) call for device memory, streams,
//! events and properties (`cpp/regen_host.h`): each checks nothing the glue already checked (the
//! device index), maps C values to the device layer's types and forwards to the caching allocator
//! ([`super::cache`]) or the installed layer ([`mod@super::layer`]).

use std::ffi::{c_char, c_void};
use std::ptr::NonNull;

use super::cache::{self, Block, NO_LIMIT, Stats};
use super::launch::drain;
use super::layer::{CopyKind, EventHandle, Stream, layer};
use crate::c_status;

/// A C device index as an index into the per-device tables; a negative one is past them all
/// (allocations on it are refused, its counters read 0).
fn index(device: i32) -> usize {
    usize::try_from(device).unwrap_or(usize::MAX)
}

fn stream(device: i32, id: i64) -> Stream {
    Stream { device: index(device), id: id as u64 }
}

/// A block of `nbytes` (> 0) on `device` for its current stream: the memory, with the block's
/// handle in `*block` (the DataPtr's context, for [`regen_device_free`] and
/// [`regen_device_record_stream`]); NULL when out of memory.
///
/// # Safety
/// `block` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_device_alloc(device: i32, nbytes: usize, block: *mut *mut c_void) -> *mut c_void {
    let d = index(device);
    match cache::allocate(d, nbytes, super::current_stream(d).id) {
        Some(b) => {
            // SAFETY: per the contract; `b` is a live block.
            unsafe {
                *block = b.as_ptr().cast();
                b.as_ref().ptr().as_ptr().cast()
            }
        }
        None => std::ptr::null_mut(),
    }
}

/// # Safety
/// `block` is NULL or a handle from [`regen_device_alloc`], freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_device_free(block: *mut c_void) {
    if let Some(b) = NonNull::new(block.cast::<Block>()) {
        // SAFETY: per the contract.
        unsafe { cache::free(b) }
    }
}

/// `Tensor.record_stream(s)` for the storage whose DataPtr context is `block`.
///
/// # Safety
/// `block` is NULL or a live handle from [`regen_device_alloc`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_device_record_stream(block: *mut c_void, stream: i64) {
    if let Some(b) = NonNull::new(block.cast::<Block>()) {
        // SAFETY: per the contract.
        unsafe { cache::record_stream(b, stream as u64) }
    }
}

/// `torch.NAME.empty_cache()`.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_empty_cache() {
    // What finished kernels kept goes first, so its blocks are cached and emptied too.
    drain();
    cache::empty_cache();
}

/// `device`'s allocator counters into `*out` (`regen_memory_stats`).
///
/// # Safety
/// `out` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_runtime_memory_stats(device: i32, out: *mut Stats) {
    // Tensors only finished kernels still held are not counted.
    drain();
    // SAFETY: per the contract.
    unsafe { *out = cache::stats(index(device)) };
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_reset_peak_stats(device: i32) {
    cache::reset_peak(index(device));
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_reset_accumulated_stats(device: i32) {
    cache::reset_accumulated(index(device));
}

/// The device of device memory at `ptr` ([`cache::device_of`]); -1 when it cannot be told.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_device_of_ptr(ptr: *const c_void) -> i32 {
    cache::device_of(ptr.cast()).map_or(-1, |d| d as i32)
}

/// The memory limit in bytes; `u64::MAX` ([`NO_LIMIT`]) when there is none.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_memory_limit() -> u64 {
    cache::limit().unwrap_or(NO_LIMIT)
}

/// Sets the memory limit in bytes (`u64::MAX`: none); returns the previous one, as above.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_set_memory_limit(limit: u64) -> u64 {
    cache::set_limit(Some(limit).filter(|&l| l != NO_LIMIT)).unwrap_or(NO_LIMIT)
}

/// `(free, total)` bytes of `device` (`mem_get_info`): under a memory limit, what the limit
/// leaves beside the reserved bytes, and the limit; otherwise the layer's figures.
pub fn memory_info(device: usize) -> (u64, u64) {
    match cache::limit() {
        Some(limit) => {
            let reserved = cache::stats(device).reserved_bytes.current.max(0) as u64;
            (limit.saturating_sub(reserved), limit)
        }
        None => layer().memory_info(device),
    }
}

/// # Safety
/// `free` and `total` are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_runtime_memory_info(device: i32, free: *mut u64, total: *mut u64) {
    let (f, t) = memory_info(index(device));
    // SAFETY: per the contract.
    unsafe {
        *free = f;
        *total = t;
    }
}

/// `device`'s properties: its memory and compute units into `*total_memory` and
/// `*multi_processor_count`, its name into `name` (up to `cap` bytes, not NUL-terminated);
/// returns the name's length (call again with a larger buffer when it is more).
///
/// # Safety
/// The pointers are writable (`name` for `cap` bytes, or NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_runtime_device_properties(
    device: i32,
    total_memory: *mut u64,
    multi_processor_count: *mut u32,
    name: *mut u8,
    cap: usize,
) -> usize {
    let p = layer().properties(index(device));
    // SAFETY: per the contract.
    unsafe {
        *total_memory = p.total_memory;
        *multi_processor_count = p.multi_processor_count;
        crate::write_report(&p.name, name, cap)
    }
}

/// Copies `n` bytes from `src` to `dst` in the order of stream `id` on `device` (`kind`: 0 host to
/// device, 1 device to host, 2 device to device, as `REGEN_COPY_*`). NULL, or an error message.
///
/// # Safety
/// As [`DeviceLayer::copy`](super::DeviceLayer::copy).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_runtime_copy(
    dst: *mut c_void,
    src: *const c_void,
    n: usize,
    kind: i32,
    device: i32,
    id: i64,
) -> *const c_char {
    let kind = match kind {
        0 => CopyKind::HostToDevice,
        1 => CopyKind::DeviceToHost,
        2 => CopyKind::DeviceToDevice,
        _ => return c_status(Err(crate::Error::runtime(format!("copy: no copy kind {kind}")))),
    };
    // SAFETY: per the contract.
    c_status(unsafe { layer().copy(dst.cast(), src.cast(), n, kind, stream(device, id)) })
}

/// This thread's current stream on `device`.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_current_stream(device: i32) -> i64 {
    super::current_stream(index(device)).id as i64
}

/// Makes stream `id` this thread's current one on `device`.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_set_current_stream(device: i32, id: i64) {
    super::set_current_stream(stream(device, id));
}

/// A new stream on `device` with `priority`, its id in `*id`. NULL, or an error message.
///
/// # Safety
/// `id` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_runtime_stream_new(device: i32, priority: i32, id: *mut i64) -> *const c_char {
    c_status(layer().create_stream(index(device), priority).map(|s| {
        // SAFETY: per the contract.
        unsafe { *id = s as i64 };
    }))
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_stream_query(device: i32, id: i64) -> bool {
    layer().query_stream(stream(device, id))
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_stream_synchronize(device: i32, id: i64) -> *const c_char {
    let status = c_status(layer().synchronize_stream(stream(device, id)));
    drain();
    status
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_device_synchronize(device: i32) -> *const c_char {
    let status = c_status(layer().synchronize_device(index(device)));
    drain();
    status
}

/// A new event on `device`, its handle in `*handle`. NULL, or an error message.
///
/// # Safety
/// `handle` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_runtime_event_new(device: i32, timing: bool, handle: *mut u64) -> *const c_char {
    c_status(layer().create_event(index(device), timing).map(|e| {
        // SAFETY: per the contract.
        unsafe { *handle = e.0 };
    }))
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_event_record(event: u64, device: i32, id: i64) -> *const c_char {
    c_status(layer().record_event(EventHandle(event), stream(device, id)))
}

/// Makes stream `id` of `device` wait for `event`.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_event_block(event: u64, device: i32, id: i64) -> *const c_char {
    c_status(layer().wait_event(EventHandle(event), stream(device, id)))
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_event_query(event: u64) -> bool {
    layer().query_event(EventHandle(event))
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_event_synchronize(event: u64) -> *const c_char {
    let status = c_status(layer().synchronize_event(EventHandle(event)));
    drain();
    status
}

/// Milliseconds from `start` to `end` into `*ms`. NULL, or the message of a ValueError (an event
/// not recorded, or without timing).
///
/// # Safety
/// `ms` is writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_runtime_event_elapsed(start: u64, end: u64, ms: *mut f64) -> *const c_char {
    c_status(layer().elapsed_ms(EventHandle(start), EventHandle(end)).map(|t| {
        // SAFETY: per the contract.
        unsafe { *ms = t };
    }))
}

/// # Safety
/// `event` is a handle from [`regen_runtime_event_new`], destroyed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_runtime_event_destroy(event: u64) {
    // SAFETY: per the contract.
    unsafe { layer().destroy_event(EventHandle(event)) }
}
