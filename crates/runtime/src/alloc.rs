//! Device memory: 64-byte-aligned host memory owned by Rust, with a count of the bytes in use and
//! of their peak (what `torch.NAME.memory_allocated` and `max_memory_allocated` report).

use std::alloc::{Layout, alloc, dealloc};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

/// Alignment of every device allocation (a cache line; enough for any SIMD load).
pub const ALIGN: usize = 64;

static BYTES_IN_USE: AtomicU64 = AtomicU64::new(0);
static PEAK_BYTES: AtomicU64 = AtomicU64::new(0);

/// Bytes currently allocated on the device.
pub fn bytes_in_use() -> u64 {
    BYTES_IN_USE.load(Ordering::Relaxed)
}

/// The most bytes allocated at once since the start or the last [`reset_peak_bytes`].
pub fn peak_bytes() -> u64 {
    PEAK_BYTES.load(Ordering::Relaxed)
}

/// Starts the peak over from the bytes allocated now.
pub fn reset_peak_bytes() {
    PEAK_BYTES.store(bytes_in_use(), Ordering::Relaxed);
}

/// Each block starts with a header of ALIGN bytes holding its size, so `free` needs only the pointer.
pub fn allocate(nbytes: usize) -> *mut c_void {
    let Some(total) = nbytes.checked_add(ALIGN) else { return std::ptr::null_mut() };
    let Ok(layout) = Layout::from_size_align(total, ALIGN) else { return std::ptr::null_mut() };
    // SAFETY: the layout has a non-zero size.
    let base = unsafe { alloc(layout) };
    if base.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the block is at least ALIGN bytes; the header holds the size.
    unsafe {
        base.cast::<usize>().write(nbytes);
        let now = BYTES_IN_USE.fetch_add(nbytes as u64, Ordering::Relaxed) + nbytes as u64;
        PEAK_BYTES.fetch_max(now, Ordering::Relaxed);
        base.add(ALIGN).cast()
    }
}

/// # Safety
/// `ptr` came from [`allocate`] and is freed once (NULL is ignored).
pub unsafe fn free(ptr: *mut c_void) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: per the contract, the header precedes `ptr`.
    unsafe {
        let base = ptr.cast::<u8>().sub(ALIGN);
        let nbytes = base.cast::<usize>().read();
        BYTES_IN_USE.fetch_sub(nbytes as u64, Ordering::Relaxed);
        dealloc(base, Layout::from_size_align_unchecked(nbytes + ALIGN, ALIGN));
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_device_alloc(nbytes: usize) -> *mut c_void {
    allocate(nbytes)
}

/// # Safety
/// As [`free`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_device_free(ptr: *mut c_void) {
    // SAFETY: forwarded contract.
    unsafe { free(ptr) }
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_bytes_in_use() -> u64 {
    bytes_in_use()
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_peak_bytes() -> u64 {
    peak_bytes()
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_reset_peak_bytes() {
    reset_peak_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_counted() {
        let before = bytes_in_use();
        let p = allocate(1000);
        assert_eq!(p as usize % ALIGN, 0);
        assert!(bytes_in_use() >= before + 1000);
        // SAFETY: from allocate, freed once.
        unsafe { free(p) };
        let q = allocate(24);
        // SAFETY: as above.
        unsafe { free(q) };
    }

    #[test]
    fn peak_holds_the_largest_total() {
        // Other tests allocate concurrently, but only this one resets the peak, and a peak
        // never falls otherwise.
        reset_peak_bytes();
        let p = allocate(1 << 20);
        assert!(peak_bytes() >= bytes_in_use().max(1 << 20));
        // SAFETY: from allocate, freed once.
        unsafe { free(p) };
        assert!(peak_bytes() >= 1 << 20, "freeing keeps the peak");
    }
}
