//! REGEN_MEMORY_LIMIT sets the allocator's limit when it is first asked. Its own test binary with
//! one test: the variable is read once per process, before anything else here allocates.

use regen_runtime::device::cache::{allocate, bytes_in_use, free, limit, set_limit};

#[test]
fn regen_memory_limit_is_read_at_the_first_allocation() {
    // SAFETY: the only test in this binary, so no other thread reads the environment now.
    unsafe { std::env::set_var("REGEN_MEMORY_LIMIT", "64K") };
    assert_eq!(bytes_in_use(0), 0, "nothing allocated before the variable is set");
    assert!(allocate(0, 65 << 10, 0).is_none(), "65 KiB is over REGEN_MEMORY_LIMIT=64K");
    let p = allocate(0, 64 << 10, 0).expect("64 KiB is the limit exactly");
    // SAFETY: from allocate, freed once.
    unsafe { free(p) };
    assert_eq!(limit(), Some(64 << 10));

    // Read once: a later change of the variable is not seen; set_limit overrides it.
    // SAFETY: as above.
    unsafe { std::env::set_var("REGEN_MEMORY_LIMIT", "1K") };
    assert_eq!(limit(), Some(64 << 10));
    assert_eq!(set_limit(None), Some(64 << 10));
    assert_eq!(limit(), None);
}
