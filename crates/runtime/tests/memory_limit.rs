//! The caching allocator ([`regen_runtime::device::cache`]) over the default layer: what it caches
//! and counts, its memory limit (an allocation that would pass it first frees the cache, then
//! fails and counts nothing but the refusal), and streams (a block is reused on its own stream;
//! one another stream used waits for that stream). Its own test binary, since the counters and the
//! limit are process-wide and the library's unit tests allocate concurrently; one test function
//! for the allocator, so nothing else in this binary allocates meanwhile.

use std::ptr::NonNull;

use regen_runtime::device::cache::{
    Block, NO_LIMIT, allocate, bytes_in_use, empty_cache, free, limit, parse_limit, peak_bytes, record_stream,
    refused_on_this_thread, reset_accumulated, reset_peak, round_size, set_limit, stats,
};
use regen_runtime::device::streams::{regen_runtime_memory_limit, regen_runtime_set_memory_limit};

fn alloc(n: usize) -> Option<NonNull<Block>> {
    allocate(0, n, 0)
}

fn release(b: NonNull<Block>) {
    // SAFETY: every block here comes from allocate and is freed once.
    unsafe { free(b) }
}

#[test]
fn the_allocator_caches_counts_and_keeps_to_its_limit() {
    assert_eq!(set_limit(None), None, "no REGEN_MEMORY_LIMIT in the test's environment, so no limit at start");
    assert_eq!(stats(0), Default::default(), "nothing allocated yet");

    // Rounded blocks, counted allocated, active, reserved; requested counts what was asked.
    let a = alloc(3000).unwrap();
    // SAFETY: a live block.
    let (ptr, size) = unsafe { (a.as_ref().ptr(), a.as_ref().size()) };
    assert_eq!(size, round_size(3000));
    assert_eq!(ptr.as_ptr() as usize % 64, 0);
    let s = stats(0);
    assert_eq!((s.allocated_bytes.current, s.reserved_bytes.current, s.active_bytes.current), (3072, 3072, 3072));
    assert_eq!((s.requested_bytes.current, s.allocation.current, s.segment.current), (3000, 1, 1));
    assert_eq!(s.num_device_alloc, 1);

    // Freed: cached (reserved stays), and the next request of that size gets the same memory
    // without asking the layer.
    release(a);
    let s = stats(0);
    assert_eq!((s.allocated_bytes.current, s.reserved_bytes.current, s.allocated_bytes.peak), (0, 3072, 3072));
    let b = alloc(2900).unwrap();
    // SAFETY: a live block.
    assert_eq!(unsafe { b.as_ref().ptr() }, ptr, "same size class, same stream: the cached block");
    assert_eq!(stats(0).num_device_alloc, 1);
    // Another stream does not take it: its pool is its own.
    release(b);
    let c = allocate(0, 3000, 7).unwrap();
    // SAFETY: a live block.
    assert_ne!(unsafe { c.as_ref().ptr() }, ptr);
    assert_eq!(stats(0).num_device_alloc, 2);
    release(c);

    // empty_cache gives the cached blocks back.
    empty_cache();
    let s = stats(0);
    assert_eq!((s.reserved_bytes.current, s.segment.current, s.num_device_free), (0, 0, 2));
    reset_peak(0);
    assert_eq!(peak_bytes(0), 0);
    reset_accumulated(0);
    assert_eq!((stats(0).num_device_alloc, stats(0).allocated_bytes.allocated), (0, 0));

    // record_stream: the block waits for the other stream's event (the default layer's are
    // complete at once), then returns to its own stream's pool.
    let d = alloc(4096).unwrap();
    // SAFETY: a live block; 3 is another stream.
    unsafe { record_stream(d, 3) };
    release(d);
    assert_eq!(stats(0).active_bytes.current, 0, "the other stream's work is done: no longer active");
    let e = alloc(4096).unwrap();
    assert_eq!(stats(0).num_device_alloc, 1, "reused after the wait");
    release(e);
    empty_cache();

    // The limit bounds reserved bytes: the cache is freed before a refusal (a retry).
    let x = alloc(3000).unwrap();
    release(x);
    assert_eq!(set_limit(Some(4096)), None);
    assert_eq!(limit(), Some(4096));
    let y = alloc(4096).expect("3072 cached + 4096 > 4096: the cache is freed and the layer asked again");
    assert_eq!(stats(0).num_alloc_retries, 1);
    assert_eq!(stats(0).reserved_bytes.current, 4096);
    let refused = refused_on_this_thread();
    let ooms = stats(0).num_ooms;
    assert!(alloc(1).is_none(), "4096 + 512 is over the limit, and nothing is cached");
    assert_eq!(refused_on_this_thread(), refused + 1);
    assert_eq!(stats(0).num_ooms, ooms + 1);
    assert_eq!(bytes_in_use(0), 4096, "a refusal counts nothing");
    let other_thread = std::thread::spawn(refused_on_this_thread).join().unwrap();
    assert_eq!(other_thread, 0, "refusals are counted per thread");

    // A lower limit than what is reserved keeps what is allocated; freeing makes room again.
    assert_eq!(set_limit(Some(1024)), Some(4096));
    release(y);
    let z = alloc(1000).expect("the cached 4096 go back to make room");
    release(z);

    // The C functions: u64::MAX is "none" both ways.
    assert_eq!(regen_runtime_set_memory_limit(NO_LIMIT), 1024);
    assert_eq!(regen_runtime_memory_limit(), NO_LIMIT);
    assert_eq!(limit(), None);
    let big = alloc(8 << 20).expect("no limit: 8 MiB is the host's to give");
    release(big);
    empty_cache();
    assert_eq!(regen_runtime_set_memory_limit(0), NO_LIMIT);
    assert!(alloc(1).is_none(), "a limit of 0 refuses everything");
    set_limit(None);
}

#[test]
fn limits_as_regen_memory_limit_writes_them() {
    assert_eq!(parse_limit("1048576"), Some(Some(1 << 20)));
    assert_eq!(parse_limit(" 512M "), Some(Some(512 << 20)));
    assert_eq!(parse_limit("512mb"), Some(Some(512 << 20)));
    assert_eq!(parse_limit("2G"), Some(Some(2 << 30)));
    assert_eq!(parse_limit("2GiB"), Some(Some(2 << 30)));
    assert_eq!(parse_limit("4k"), Some(Some(4096)));
    assert_eq!(parse_limit("1T"), Some(Some(1 << 40)));
    assert_eq!(parse_limit("0"), Some(Some(0)));
    assert_eq!(parse_limit(""), Some(None));
    assert_eq!(parse_limit("none"), Some(None));
    for bad in ["-1", "1.5G", "G", "12X", "0x100", "1 G", "512iB", "99999999999999999999", "20000000T"] {
        assert_eq!(parse_limit(bad), None, "{bad:?} is not a limit");
    }
}
