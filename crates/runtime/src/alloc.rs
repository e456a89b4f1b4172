//! Device memory: 64-byte-aligned host memory owned by Rust, with a count of the bytes in use.

use std::alloc::{Layout, alloc, dealloc};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

/// Alignment of every device allocation (a cache line; enough for any SIMD load).
pub const ALIGN: usize = 64;

static BYTES_IN_USE: AtomicU64 = AtomicU64::new(0);

/// Bytes currently allocated on the device.
pub fn bytes_in_use() -> u64 {
    BYTES_IN_USE.load(Ordering::Relaxed)
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
        BYTES_IN_USE.fetch_add(nbytes as u64, Ordering::Relaxed);
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
}
