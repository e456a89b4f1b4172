//! The simulated device memory: one arena per device, reserved with `mmap` and kept `PROT_NONE`
//! while no device work runs, so a host-side read or write of device memory faults (SIGSEGV)
//! instead of silently working, as torch_openreg's fake accelerator protects its memory. The
//! stream workers open every arena while a task runs ([`Access`]); protection is per process, so
//! host code that reads device memory while some task runs is not caught, but the tests' reads
//! between tasks are.
//!
//! Blocks are carved out of the arena first-fit, with neighbours merged on free (the caching
//! allocator above asks for few sizes and keeps what it frees, so this path is rare).

use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::Mutex;

/// Every block starts at a multiple of this (and of the caching allocator's 512-byte sizes).
const ALIGN: usize = 512;

/// One device's memory: `size` bytes at `base`, and the free ranges (offset -> length).
pub struct Arena {
    base: NonNull<u8>,
    size: usize,
    free: Mutex<BTreeMap<usize, usize>>,
}

// SAFETY: the arena's address never changes; its free list is behind a lock.
unsafe impl Send for Arena {}
// SAFETY: as above.
unsafe impl Sync for Arena {}

impl Arena {
    /// Reserves `size` bytes of address space (not memory: pages are committed when first
    /// written), inaccessible. `None` when the host refuses the reservation.
    pub fn reserve(size: usize) -> Option<Arena> {
        let size = size.div_ceil(ALIGN) * ALIGN;
        // SAFETY: an anonymous private mapping at an address the kernel chooses.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let base = NonNull::new(base.cast::<u8>())?;
        Some(Arena { base, size, free: Mutex::new(BTreeMap::from([(0, size)])) })
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Bytes not in any block.
    pub fn free_bytes(&self) -> usize {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).values().sum()
    }

    /// Whether `ptr` is inside this arena.
    pub fn contains(&self, ptr: *const u8) -> bool {
        let at = ptr as usize;
        let base = self.base.as_ptr() as usize;
        at >= base && at < base + self.size
    }

    /// A block of `n` bytes (first fit); `None` when no free range is large enough.
    pub fn allocate(&self, n: usize) -> Option<NonNull<u8>> {
        let n = n.max(1).div_ceil(ALIGN) * ALIGN;
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let (&offset, &len) = free.iter().find(|&(_, &len)| len >= n)?;
        free.remove(&offset);
        if len > n {
            free.insert(offset + n, len - n);
        }
        // SAFETY: offset + n is inside the mapping.
        NonNull::new(unsafe { self.base.as_ptr().add(offset) })
    }

    /// Returns a block, merged with free neighbours.
    ///
    /// # Safety
    /// `ptr` came from [`allocate`](Self::allocate)`(n)` of this arena and is freed once.
    pub unsafe fn free(&self, ptr: NonNull<u8>, n: usize) {
        let n = n.max(1).div_ceil(ALIGN) * ALIGN;
        let mut offset = ptr.as_ptr() as usize - self.base.as_ptr() as usize;
        let mut len = n;
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((&before, &before_len)) = free.range(..offset).next_back()
            && before + before_len == offset
        {
            free.remove(&before);
            offset = before;
            len += before_len;
        }
        if let Some(&after_len) = free.get(&(offset + len)) {
            free.remove(&(offset + len));
            len += after_len;
        }
        free.insert(offset, len);
    }

    /// Makes the whole arena readable and writable (`open`) or inaccessible.
    fn protect(&self, open: bool) {
        let prot = if open { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_NONE };
        // SAFETY: the arena's own mapping.
        let done = unsafe { libc::mprotect(self.base.as_ptr().cast(), self.size, prot) };
        // The mapping is ours and the flags valid: failing means the process is out of kernel
        // memory for page tables, and device memory can no longer be reached safely.
        assert_eq!(done, 0, "sim: mprotect of a device arena failed: {}", std::io::Error::last_os_error());
    }
}

/// Who may touch device memory now: the arenas are open while at least one device task runs.
pub struct Access {
    arenas: Vec<&'static Arena>,
    open: Mutex<usize>,
}

impl Access {
    pub fn new(arenas: Vec<&'static Arena>) -> Access {
        Access { arenas, open: Mutex::new(0) }
    }

    /// Runs `f` with every arena readable and writable (device work: a kernel, a copy).
    pub fn with_open<T>(&self, f: impl FnOnce() -> T) -> T {
        struct Close<'a>(&'a Access);
        impl Drop for Close<'_> {
            fn drop(&mut self) {
                let mut open = self.0.open.lock().unwrap_or_else(|e| e.into_inner());
                *open -= 1;
                if *open == 0 {
                    self.0.arenas.iter().for_each(|a| a.protect(false));
                }
            }
        }
        {
            let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
            if *open == 0 {
                self.arenas.iter().for_each(|a| a.protect(true));
            }
            *open += 1;
        }
        let _close = Close(self);
        f()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_carved_and_merged_back() {
        let arena = Arena::reserve(1 << 20).unwrap();
        let a = arena.allocate(1000).unwrap();
        let b = arena.allocate(512).unwrap();
        assert_eq!(b.as_ptr() as usize - a.as_ptr() as usize, 1024, "first fit, 512-byte steps");
        assert_eq!(arena.free_bytes(), (1 << 20) - 1536);
        assert!(arena.allocate(2 << 20).is_none(), "larger than the arena");
        // SAFETY: each from allocate, freed once.
        unsafe {
            arena.free(a, 1000);
            arena.free(b, 512);
        }
        assert_eq!(arena.free_bytes(), 1 << 20);
        assert_eq!(arena.free.lock().unwrap().len(), 1, "merged into one range");
        assert!(arena.contains(a.as_ptr()) && !arena.contains(std::ptr::null()));
    }

    #[test]
    fn memory_is_reachable_only_while_open() {
        let arena: &'static Arena = Box::leak(Box::new(Arena::reserve(1 << 16).unwrap()));
        let access = Access::new(vec![arena]);
        let p = arena.allocate(64).unwrap();
        access.with_open(|| {
            // SAFETY: open, inside the arena.
            unsafe { p.as_ptr().write(7) };
            access.with_open(|| {
                // SAFETY: nested opening keeps it open.
                assert_eq!(unsafe { p.as_ptr().read() }, 7)
            });
            // SAFETY: still open: the outer task runs.
            assert_eq!(unsafe { p.as_ptr().read() }, 7);
        });
        // Closed now; a read would fault (tested in a child process by the Python tests).
        assert_eq!(*access.open.lock().unwrap(), 0);
    }
}
