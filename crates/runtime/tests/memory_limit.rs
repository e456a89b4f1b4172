//! The allocator's memory limit: an allocation that would pass it returns NULL and counts
//! nothing, allocations under it go on, and removing it lifts the cap. Its own test binary, since
//! the limit is process-wide and would fail the library's unit tests that allocate concurrently;
//! one test function, so nothing in this binary allocates while the limit is set.

use regen_runtime::alloc::{
    NO_LIMIT, allocate, bytes_in_use, free, limit, parse_limit, peak_bytes, refused_on_this_thread,
    regen_runtime_memory_limit, regen_runtime_set_memory_limit, reset_peak_bytes, set_limit,
};

#[test]
fn an_allocation_over_the_limit_fails_and_counts_nothing() {
    assert_eq!(set_limit(None), None, "no REGEN_MEMORY_LIMIT in the test's environment, so no limit at start");
    let base = bytes_in_use(0);
    assert_eq!(set_limit(Some(base + 4096)), None);
    assert_eq!(limit(), Some(base + 4096));

    let a = allocate(0, 3000);
    assert!(!a.is_null(), "3000 bytes fit under a limit 4096 over what is in use");
    assert_eq!(bytes_in_use(0), base + 3000);
    reset_peak_bytes(0);
    let peak = peak_bytes(0);

    // 3000 + 2000 > 4096: refused, and neither the bytes in use nor the peak moves; the refusal
    // is counted on this thread (what tells host services that they failed for want of memory).
    let refused = refused_on_this_thread();
    assert!(allocate(0, 2000).is_null());
    assert_eq!(bytes_in_use(0), base + 3000);
    assert_eq!(peak_bytes(0), peak, "a refused allocation is no peak");
    assert_eq!(refused_on_this_thread(), refused + 1);
    let other_thread = std::thread::spawn(refused_on_this_thread).join().unwrap();
    assert_eq!(other_thread, 0, "counted per thread");

    // Exactly up to the limit is allowed (the limit is the most in use, not a bound to stay under).
    let b = allocate(0, 1096);
    assert!(!b.is_null(), "3000 + 1096 is the limit exactly");
    assert_eq!(refused_on_this_thread(), refused + 1, "an allocation that succeeds is not counted");
    assert!(allocate(0, 1).is_null(), "one byte more is over");

    // A lower limit than what is in use keeps what is allocated; freeing makes room again.
    assert_eq!(set_limit(Some(base + 1000)), Some(base + 4096));
    // SAFETY: a and b came from allocate, each is freed once.
    unsafe {
        free(a);
        free(b);
    }
    assert_eq!(bytes_in_use(0), base);
    let c = allocate(0, 1000);
    assert!(!c.is_null());
    // SAFETY: from allocate, freed once.
    unsafe { free(c) };

    // The C functions: u64::MAX is "none" both ways.
    assert_eq!(regen_runtime_set_memory_limit(NO_LIMIT), base + 1000);
    assert_eq!(regen_runtime_memory_limit(), NO_LIMIT);
    assert_eq!(limit(), None);
    let big = allocate(0, 8 << 20);
    assert!(!big.is_null(), "no limit: 8 MiB is the host's to give");
    // SAFETY: from allocate, freed once.
    unsafe { free(big) };
    assert_eq!(regen_runtime_set_memory_limit(0), NO_LIMIT);
    assert!(allocate(0, 1).is_null(), "a limit of 0 refuses everything while nothing more is freed");
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
