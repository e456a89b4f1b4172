//! Device memory: 64-byte-aligned host memory owned by Rust, with a count per device of the bytes
//! in use and of their peak (what `torch.NAME.memory_allocated(d)` and `max_memory_allocated(d)`
//! report), and an optional limit on each device's bytes in use (`REGEN_MEMORY_LIMIT`, read once
//! at the first allocation, or [`set_limit`] at run time): an allocation that would pass it fails
//! as out of memory does, so a host-memory device can show what a program does when a GPU's memory
//! runs out. Each block's header records its size and device ([`crate::device`]).

use std::alloc::{Layout, alloc, dealloc};
use std::ffi::c_void;
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::device::{self, MAX_DEVICES};

/// Alignment of every device allocation (a cache line; enough for any SIMD load).
pub const ALIGN: usize = 64;

static BYTES_IN_USE: [AtomicU64; MAX_DEVICES] = [const { AtomicU64::new(0) }; MAX_DEVICES];
static PEAK_BYTES: [AtomicU64; MAX_DEVICES] = [const { AtomicU64::new(0) }; MAX_DEVICES];

/// The most bytes that may be in use at once; [`NO_LIMIT`] when there is none.
static LIMIT: AtomicU64 = AtomicU64::new(NO_LIMIT);
static READ_ENV: Once = Once::new();

/// [`limit`]'s and the C functions' "no limit".
pub const NO_LIMIT: u64 = u64::MAX;

thread_local! {
    /// Allocations refused on this thread: a host service that failed while this count rose
    /// failed for want of memory ([`crate::host`] raises that as out of memory, not a runtime error).
    static REFUSED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many allocations [`allocate`] has refused on this thread.
pub fn refused_on_this_thread() -> u64 {
    REFUSED.with(|r| r.get())
}

fn refuse() -> *mut c_void {
    REFUSED.with(|r| r.set(r.get() + 1));
    std::ptr::null_mut()
}

/// Bytes currently allocated on `device` (0 for an index past [`MAX_DEVICES`]).
pub fn bytes_in_use(device: usize) -> u64 {
    BYTES_IN_USE.get(device).map_or(0, |b| b.load(Ordering::Relaxed))
}

/// The most bytes allocated at once on `device` since the start or the last [`reset_peak_bytes`].
pub fn peak_bytes(device: usize) -> u64 {
    PEAK_BYTES.get(device).map_or(0, |b| b.load(Ordering::Relaxed))
}

/// Starts `device`'s peak over from the bytes allocated now.
pub fn reset_peak_bytes(device: usize) {
    if let Some(peak) = PEAK_BYTES.get(device) {
        peak.store(bytes_in_use(device), Ordering::Relaxed);
    }
}

/// The device of device memory at `ptr`, when it can be told: with one device, device 0; with
/// several, `None`, since host memory carries no device and keeping every live block in a table
/// for this one question would cost every allocation (CUDA asks its driver). Callers then need the
/// device named (`torch.from_blob(..., device=...)`).
pub fn device_of(_ptr: *const c_void) -> Option<usize> {
    (device::count() == 1).then_some(0)
}

/// Reads `value` as `REGEN_MEMORY_LIMIT` does: bytes, optionally with a binary suffix `K`, `M`,
/// `G` or `T` (KiB, MiB, GiB, TiB; `512M`, `2G`), case-insensitive, an optional `B` after it
/// (`512MB`, `2GiB` too); empty or `none` is no limit. `None` when it is none of these.
pub fn parse_limit(value: &str) -> Option<Option<u64>> {
    let value = value.trim();
    if value.is_empty() || value.eq_ignore_ascii_case("none") {
        return Some(None);
    }
    let upper = value.to_ascii_uppercase();
    let number = upper.strip_suffix("IB").or_else(|| upper.strip_suffix('B')).unwrap_or(&upper);
    let (digits, shift) = match number.chars().last()? {
        'K' => (&number[..number.len() - 1], 10),
        'M' => (&number[..number.len() - 1], 20),
        'G' => (&number[..number.len() - 1], 30),
        'T' => (&number[..number.len() - 1], 40),
        _ if upper.ends_with("IB") => return None, // "IB" needs a prefix: "512iB" is a typo
        _ => (number, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    let bytes = n.checked_mul(1u64 << shift)?;
    // u64::MAX is NO_LIMIT's sentinel; a limit that large is no limit anyway.
    Some(Some(bytes).filter(|&b| b != NO_LIMIT))
}

fn read_env_once() {
    READ_ENV.call_once(|| {
        let Ok(value) = std::env::var("REGEN_MEMORY_LIMIT") else { return };
        match parse_limit(&value) {
            Some(limit) => LIMIT.store(limit.unwrap_or(NO_LIMIT), Ordering::Relaxed),
            // The allocator cannot fail for a bad setting; say so once and run without a limit.
            None => eprintln!(
                "regen: REGEN_MEMORY_LIMIT={value:?} is not a number of bytes (e.g. 1073741824, 512M, 2G); no memory limit"
            ),
        }
    });
}

/// The most bytes of device memory that may be in use at once, if limited.
pub fn limit() -> Option<u64> {
    read_env_once();
    Some(LIMIT.load(Ordering::Relaxed)).filter(|&l| l != NO_LIMIT)
}

/// Sets (or with `None` removes) the limit, over `REGEN_MEMORY_LIMIT`; returns the previous one.
/// Memory already in use stays allocated even when it is over the new limit: only later
/// allocations fail.
pub fn set_limit(limit: Option<u64>) -> Option<u64> {
    read_env_once();
    let previous = LIMIT.swap(limit.unwrap_or(NO_LIMIT), Ordering::Relaxed);
    Some(previous).filter(|&l| l != NO_LIMIT)
}

/// Counts `nbytes` as in use on `device` unless that would pass the limit (then None, and nothing
/// counted); returns the bytes in use with them. A compare-and-swap loop, so two threads
/// allocating at once cannot both pass the check and end over the limit together.
fn reserve(device: usize, nbytes: u64) -> Option<u64> {
    let limit = limit().unwrap_or(NO_LIMIT);
    let in_use = &BYTES_IN_USE[device];
    let mut now = in_use.load(Ordering::Relaxed);
    loop {
        let after = now.checked_add(nbytes).filter(|&after| after <= limit)?;
        match in_use.compare_exchange_weak(now, after, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return Some(after),
            Err(actual) => now = actual,
        }
    }
}

/// `nbytes` on `device` (which the caller checked is below [`device::count`]). Each block starts
/// with a header of ALIGN bytes holding its size and device, so `free` needs only the pointer.
/// NULL when the host has no memory for it or it would pass the [`limit`]; then nothing is counted.
pub fn allocate(device: usize, nbytes: usize) -> *mut c_void {
    if device >= MAX_DEVICES {
        return refuse();
    }
    let Some(total) = nbytes.checked_add(ALIGN) else { return refuse() };
    let Ok(layout) = Layout::from_size_align(total, ALIGN) else { return refuse() };
    let Some(in_use) = reserve(device, nbytes as u64) else { return refuse() };
    // SAFETY: the layout has a non-zero size.
    let base = unsafe { alloc(layout) };
    if base.is_null() {
        // The host refused: give back what reserve counted.
        BYTES_IN_USE[device].fetch_sub(nbytes as u64, Ordering::Relaxed);
        return refuse();
    }
    // Only memory handed out makes a peak: a refused allocation leaves memory_stats as it was.
    PEAK_BYTES[device].fetch_max(in_use, Ordering::Relaxed);
    // SAFETY: the block is at least ALIGN bytes; the header holds the size and the device.
    unsafe {
        base.cast::<[usize; 2]>().write([nbytes, device]);
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
        let [nbytes, device] = base.cast::<[usize; 2]>().read();
        BYTES_IN_USE[device].fetch_sub(nbytes as u64, Ordering::Relaxed);
        dealloc(base, Layout::from_size_align_unchecked(nbytes + ALIGN, ALIGN));
    }
}

/// `nbytes` on `device` (the glue passes the current device, checked).
#[unsafe(no_mangle)]
pub extern "C" fn regen_device_alloc(device: i32, nbytes: usize) -> *mut c_void {
    allocate(index(device), nbytes)
}

/// # Safety
/// As [`free`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_device_free(ptr: *mut c_void) {
    // SAFETY: forwarded contract.
    unsafe { free(ptr) }
}

/// A C device index as an index into the per-device counters; a negative one is past them all
/// (allocations on it are refused, its counters read 0).
fn index(device: i32) -> usize {
    usize::try_from(device).unwrap_or(usize::MAX)
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_bytes_in_use(device: i32) -> u64 {
    bytes_in_use(index(device))
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_peak_bytes(device: i32) -> u64 {
    peak_bytes(index(device))
}

#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_reset_peak_bytes(device: i32) {
    reset_peak_bytes(index(device))
}

/// The device of device memory at `ptr` ([`device_of`]); -1 when it cannot be told.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_device_of_ptr(ptr: *const c_void) -> i32 {
    device_of(ptr).map_or(-1, |d| d as i32)
}

/// The memory limit in bytes; `u64::MAX` ([`NO_LIMIT`]) when there is none.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_memory_limit() -> u64 {
    limit().unwrap_or(NO_LIMIT)
}

/// Sets the memory limit in bytes (`u64::MAX`: none); returns the previous one, as above.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_set_memory_limit(limit: u64) -> u64 {
    set_limit(Some(limit).filter(|&l| l != NO_LIMIT)).unwrap_or(NO_LIMIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_counted() {
        let before = bytes_in_use(0);
        let p = allocate(0, 1000);
        assert_eq!(p as usize % ALIGN, 0);
        assert!(bytes_in_use(0) >= before + 1000);
        assert_eq!(device_of(p), Some(0));
        // SAFETY: from allocate, freed once.
        unsafe { free(p) };
        let q = allocate(0, 24);
        // SAFETY: as above.
        unsafe { free(q) };
    }

    #[test]
    fn peak_holds_the_largest_total() {
        // Other tests allocate concurrently, but only this one resets the peak, and a peak
        // never falls otherwise.
        reset_peak_bytes(0);
        let p = allocate(0, 1 << 20);
        assert!(peak_bytes(0) >= bytes_in_use(0).max(1 << 20));
        // SAFETY: from allocate, freed once.
        unsafe { free(p) };
        assert!(peak_bytes(0) >= 1 << 20, "freeing keeps the peak");
    }
}
