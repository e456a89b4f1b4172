//! The caching allocator every backend's device memory goes through, as CUDA's: memory comes from
//! the device layer ([`mod@super::layer`]) in blocks of a rounded size, and a freed block is kept for
//! the next request of that size on the same device and stream instead of going back. Work queued
//! on a stream runs in order, so a block freed on its stream can be handed out there again at
//! once; a block another stream used (`Tensor.record_stream`) waits, after its free, for an event
//! recorded on each such stream. The counters are `torch.cuda.memory_stats`': allocated, reserved,
//! active and requested bytes, blocks and segments (current, peak, totals), allocation retries and
//! out-of-memory refusals.
//!
//! A limit on each device's reserved bytes (`REGEN_MEMORY_LIMIT`, read once at the first
//! allocation, or [`set_limit`] at run time) plays a device's memory size, so a host-memory device
//! can show what a program does when a GPU's memory runs out: an allocation that would pass it
//! first frees the cached blocks (a retry), then fails as out of memory does.
//! `REGEN_CACHING_ALLOCATOR=0` turns caching off (every free goes back to the layer at once), as
//! `PYTORCH_NO_CUDA_MEMORY_CACHING` does for CUDA.

use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, Once, OnceLock};

use super::MAX_DEVICES;
use super::layer::{self, EventHandle, Stream};

/// One block of device memory: what the layer allocated (a rounded size), whole. Its address is
/// the handle the C++ allocator keeps as the DataPtr's context and passes back to [`free`].
#[derive(Debug)]
pub struct Block {
    ptr: NonNull<u8>,
    size: usize,
    /// What the tensor asked for (`requested_bytes`).
    requested: usize,
    device: usize,
    /// The stream it was allocated on: its pool.
    stream: u64,
    /// Other streams that used it (`record_stream`), each to be waited for after its free.
    uses: Vec<u64>,
}

// SAFETY: a block is device memory's address and bookkeeping, owned by one tensor's storage or by
// the pool, never shared.
unsafe impl Send for Block {}

impl Block {
    /// The device memory.
    pub fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }
    pub fn size(&self) -> usize {
        self.size
    }
    pub fn device(&self) -> usize {
        self.device
    }
}

/// A counter as `memory_stats` reports it: now, the most at once since the last reset, and the
/// totals added and taken away.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub current: i64,
    pub peak: i64,
    pub allocated: i64,
    pub freed: i64,
}

impl Stat {
    fn add(&mut self, n: i64) {
        self.current += n;
        self.allocated += n;
        self.peak = self.peak.max(self.current);
    }
    fn sub(&mut self, n: i64) {
        self.current -= n;
        self.freed += n;
    }
}

/// One device's counters, under `torch.cuda.memory_stats`' names (the `.all` figures; there is
/// one pool, so `small_pool`/`large_pool` are not kept apart). Mirrored by `regen_memory_stats`
/// in `cpp/regen_host.h`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Bytes of blocks held by tensors.
    pub allocated_bytes: Stat,
    /// Bytes of blocks the allocator holds from the layer (held by tensors, waiting, or cached).
    pub reserved_bytes: Stat,
    /// Bytes of blocks held by tensors or waiting for a stream that used them.
    pub active_bytes: Stat,
    /// Bytes the tensors asked for (before rounding).
    pub requested_bytes: Stat,
    /// Blocks held by tensors.
    pub allocation: Stat,
    /// Blocks the allocator holds from the layer.
    pub segment: Stat,
    /// Blocks held by tensors or waiting.
    pub active: Stat,
    /// Allocations that freed the cache and asked the layer again.
    pub num_alloc_retries: i64,
    /// Allocations refused for want of memory.
    pub num_ooms: i64,
    /// Calls of the layer's allocate and free.
    pub num_device_alloc: i64,
    pub num_device_free: i64,
}

/// One device's blocks and counters.
struct Pool {
    /// Cached blocks by (stream, size). Boxed: a block's address is its handle, and stays the same
    /// while it moves between the cache and a tensor.
    #[allow(clippy::vec_box)]
    free: BTreeMap<(u64, usize), Vec<Box<Block>>>,
    /// Freed blocks other streams used, with the events recorded on them at the free.
    pending: Vec<(Box<Block>, Vec<EventHandle>)>,
    stats: Stats,
}

impl Pool {
    const fn new() -> Self {
        Pool { free: BTreeMap::new(), pending: Vec::new(), stats: STATS_ZERO }
    }
}

const STAT_ZERO: Stat = Stat { current: 0, peak: 0, allocated: 0, freed: 0 };
const STATS_ZERO: Stats = Stats {
    allocated_bytes: STAT_ZERO,
    reserved_bytes: STAT_ZERO,
    active_bytes: STAT_ZERO,
    requested_bytes: STAT_ZERO,
    allocation: STAT_ZERO,
    segment: STAT_ZERO,
    active: STAT_ZERO,
    num_alloc_retries: 0,
    num_ooms: 0,
    num_device_alloc: 0,
    num_device_free: 0,
};

static POOLS: [Mutex<Pool>; MAX_DEVICES] = [const { Mutex::new(Pool::new()) }; MAX_DEVICES];

fn pool(device: usize) -> MutexGuard<'static, Pool> {
    // A panic while the lock was held cannot leave a pool half-changed in a way that matters more
    // than losing the device's memory; go on with it.
    POOLS[device].lock().unwrap_or_else(|e| e.into_inner())
}

/// The least block (CUDA's kMinBlockSize).
const MIN_BLOCK: usize = 512;

/// The size of the block that serves `n` bytes: a multiple of 512 up to 1 MiB; above, a multiple
/// of a sixteenth of the next power of two, so at most 1/8 is lost to rounding and requests of
/// nearly the same size share blocks.
pub fn round_size(n: usize) -> usize {
    let step = if n <= 1 << 20 { MIN_BLOCK } else { (n.next_power_of_two() >> 4).max(MIN_BLOCK) };
    n.div_ceil(step).max(1).saturating_mul(step)
}

/// The most reserved bytes per device; [`NO_LIMIT`] when there is none.
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

/// The most bytes of device memory each device may reserve, if limited.
pub fn limit() -> Option<u64> {
    read_env_once();
    Some(LIMIT.load(Ordering::Relaxed)).filter(|&l| l != NO_LIMIT)
}

/// Sets (or with `None` removes) the limit, over `REGEN_MEMORY_LIMIT`; returns the previous one.
/// Memory already reserved stays so even over the new limit: only later allocations fail.
pub fn set_limit(limit: Option<u64>) -> Option<u64> {
    read_env_once();
    let previous = LIMIT.swap(limit.unwrap_or(NO_LIMIT), Ordering::Relaxed);
    Some(previous).filter(|&l| l != NO_LIMIT)
}

/// Whether freed blocks are cached (`REGEN_CACHING_ALLOCATOR=0` turns it off).
pub fn caching() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("REGEN_CACHING_ALLOCATOR").map_or(true, |v| v.trim() != "0"))
}

/// A block of at least `nbytes` (> 0) on `device` for `stream` (its device's current stream for
/// the C++ allocator), from the cache or the layer; `None` when neither has the memory (counted
/// as refused on this thread, and as an out-of-memory in the device's statistics).
pub fn allocate(device: usize, nbytes: usize, stream: u64) -> Option<NonNull<Block>> {
    if device >= MAX_DEVICES || nbytes == 0 {
        return refuse(None);
    }
    let size = round_size(nbytes);
    let mut pool = pool(device);
    process_pending(&mut pool);
    let block = match take_cached(&mut pool, stream, size) {
        Some(block) => block,
        None => match new_block(&mut pool, device, size, stream) {
            Some(block) => block,
            None => {
                pool.stats.num_ooms += 1;
                return refuse(None);
            }
        },
    };
    let mut block = block;
    block.requested = nbytes;
    let stats = &mut pool.stats;
    stats.allocated_bytes.add(size as i64);
    stats.active_bytes.add(size as i64);
    stats.requested_bytes.add(nbytes as i64);
    stats.allocation.add(1);
    stats.active.add(1);
    Some(NonNull::from(Box::leak(block)))
}

fn refuse<T>(value: Option<T>) -> Option<T> {
    REFUSED.with(|r| r.set(r.get() + 1));
    value
}

/// A cached block of this stream and size. Its list stays in the map when it empties (with its
/// capacity), so a tensor allocated and freed over and over moves a block in and out of one list
/// instead of removing and inserting a map entry and its vector each time.
fn take_cached(pool: &mut Pool, stream: u64, size: usize) -> Option<Box<Block>> {
    pool.free.get_mut(&(stream, size))?.pop()
}

/// Whether any block is cached or waiting (the map keeps emptied lists).
fn holds_blocks(pool: &Pool) -> bool {
    !pool.pending.is_empty() || pool.free.values().any(|list| !list.is_empty())
}

/// A block from the layer, within the limit: when the limit or the layer refuses, the cached
/// blocks of every stream go back to the layer and it is asked once more (a retry).
fn new_block(pool: &mut Pool, device: usize, size: usize, stream: u64) -> Option<Box<Block>> {
    let fits = |pool: &Pool| (pool.stats.reserved_bytes.current as u64).saturating_add(size as u64) <= limit_bytes();
    let mut ptr = fits(pool).then(|| layer::layer().allocate(device, size)).flatten();
    if ptr.is_none() && holds_blocks(pool) {
        pool.stats.num_alloc_retries += 1;
        release_cached(pool);
        ptr = fits(pool).then(|| layer::layer().allocate(device, size)).flatten();
    }
    let ptr = ptr?;
    pool.stats.reserved_bytes.add(size as i64);
    pool.stats.segment.add(1);
    pool.stats.num_device_alloc += 1;
    Some(Box::new(Block { ptr, size, requested: 0, device, stream, uses: Vec::new() }))
}

fn limit_bytes() -> u64 {
    limit().unwrap_or(NO_LIMIT)
}

/// Hands a block back: to its stream's cache, or, when other streams used it, to wait for them.
///
/// # Safety
/// `block` came from [`allocate`] and is freed once.
pub unsafe fn free(block: NonNull<Block>) {
    // SAFETY: per the contract, a leaked Box from allocate.
    let block = unsafe { Box::from_raw(block.as_ptr()) };
    let mut pool = pool(block.device);
    let stats = &mut pool.stats;
    stats.allocated_bytes.sub(block.size as i64);
    stats.requested_bytes.sub(block.requested as i64);
    stats.allocation.sub(1);
    if block.uses.is_empty() {
        cache(&mut pool, block);
        return;
    }
    // Record an event on each stream that used it: the block is free once they all complete.
    let layer = layer::layer();
    let events = block
        .uses
        .iter()
        .filter_map(|&id| {
            let stream = Stream { device: block.device, id };
            let event = layer.create_event(block.device, false).ok()?;
            match layer.record_event(event, stream) {
                Ok(()) => Some(event),
                Err(_) => {
                    // The stream cannot be waited for; it is synchronized instead.
                    let _ = layer.synchronize_stream(stream);
                    // SAFETY: created above, destroyed once.
                    unsafe { layer.destroy_event(event) };
                    None
                }
            }
        })
        .collect();
    pool.pending.push((block, events));
    process_pending(&mut pool);
}

/// A block no tensor holds and no stream uses any more: cached, or back to the layer.
fn cache(pool: &mut Pool, mut block: Box<Block>) {
    pool.stats.active_bytes.sub(block.size as i64);
    pool.stats.active.sub(1);
    block.uses.clear();
    if caching() {
        pool.free.entry((block.stream, block.size)).or_default().push(block);
    } else {
        give_back(pool, &block);
    }
}

fn give_back(pool: &mut Pool, block: &Block) {
    pool.stats.reserved_bytes.sub(block.size as i64);
    pool.stats.segment.sub(1);
    pool.stats.num_device_free += 1;
    // SAFETY: the block came from the layer's allocate(device, size) and nothing uses it now.
    unsafe { layer::layer().free(block.device, block.ptr, block.size) };
}

/// Moves waiting blocks whose streams have passed their events into the cache.
fn process_pending(pool: &mut Pool) {
    if pool.pending.is_empty() {
        return;
    }
    let layer = layer::layer();
    let waiting = std::mem::take(&mut pool.pending);
    for (block, events) in waiting {
        if events.iter().all(|&e| layer.query_event(e)) {
            for e in events {
                // SAFETY: recorded by free, destroyed once.
                unsafe { layer.destroy_event(e) };
            }
            cache(pool, block);
        } else {
            pool.pending.push((block, events));
        }
    }
}

/// Frees every cached block of `device` to the layer; blocks still waiting for streams are waited
/// for first.
fn release_cached(pool: &mut Pool) {
    let layer = layer::layer();
    for (_, events) in &pool.pending {
        for &e in events {
            let _ = layer.synchronize_event(e);
        }
    }
    process_pending(pool);
    let free = std::mem::take(&mut pool.free);
    for block in free.into_values().flatten() {
        give_back(pool, &block);
    }
}

/// Marks `block` as used by `stream` too (`Tensor.record_stream`): after its free it is not reused
/// until the work queued on `stream` by then is done. Its own stream needs no mark.
///
/// # Safety
/// `block` is live (from [`allocate`], not yet freed).
pub unsafe fn record_stream(block: NonNull<Block>, stream: u64) {
    // SAFETY: per the contract; the block belongs to a live storage, whose owner is the caller.
    let device = unsafe { block.as_ref() }.device;
    let _pool = pool(device);
    // SAFETY: as above; the pool's lock orders this against a concurrent free of another block.
    let block = unsafe { &mut *block.as_ptr() };
    if block.stream != stream && !block.uses.contains(&stream) {
        block.uses.push(stream);
    }
}

/// Gives every cached block of every device back to the layer (`torch.NAME.empty_cache()`).
pub fn empty_cache() {
    for device in 0..MAX_DEVICES {
        let mut pool = pool(device);
        if holds_blocks(&pool) {
            release_cached(&mut pool);
        }
    }
}

/// `device`'s counters (all zero past [`MAX_DEVICES`]).
pub fn stats(device: usize) -> Stats {
    if device >= MAX_DEVICES {
        return Stats::default();
    }
    pool(device).stats
}

impl Stats {
    /// Every counter with a current value, a peak and totals.
    fn counters(&mut self) -> [&mut Stat; 7] {
        [
            &mut self.allocated_bytes,
            &mut self.reserved_bytes,
            &mut self.active_bytes,
            &mut self.requested_bytes,
            &mut self.allocation,
            &mut self.segment,
            &mut self.active,
        ]
    }
}

/// Starts every peak of `device` over from its current value.
pub fn reset_peak(device: usize) {
    if device < MAX_DEVICES {
        pool(device).stats.counters().into_iter().for_each(|stat| stat.peak = stat.current);
    }
}

/// Zeroes the totals of `device` (allocated and freed, retries, out-of-memory refusals, layer
/// calls), as `torch.cuda.reset_accumulated_memory_stats`.
pub fn reset_accumulated(device: usize) {
    if device < MAX_DEVICES {
        let mut pool = pool(device);
        let s = &mut pool.stats;
        s.counters().into_iter().for_each(|stat| (stat.allocated, stat.freed) = (0, 0));
        s.num_alloc_retries = 0;
        s.num_ooms = 0;
        s.num_device_alloc = 0;
        s.num_device_free = 0;
    }
}

/// Bytes held by tensors on `device` now (`memory_allocated`).
pub fn bytes_in_use(device: usize) -> u64 {
    stats(device).allocated_bytes.current as u64
}

/// The most bytes held at once on `device` (`max_memory_allocated`).
pub fn peak_bytes(device: usize) -> u64 {
    stats(device).allocated_bytes.peak as u64
}

/// The device of device memory at `ptr`, when it can be told: with one device, device 0; with
/// several, `None` (the allocator keeps no table from addresses to blocks: that would cost every
/// allocation), so callers name the device (`torch.from_blob(..., device=...)`).
pub fn device_of(_ptr: *const u8) -> Option<usize> {
    (super::count() == 1).then_some(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_to_few_classes() {
        assert_eq!(round_size(1), 512);
        assert_eq!(round_size(512), 512);
        assert_eq!(round_size(513), 1024);
        assert_eq!(round_size(1 << 20), 1 << 20);
        // Just over 1 MiB: steps of 2 MiB / 16 = 128 KiB.
        assert_eq!(round_size((1 << 20) + 1), (1 << 20) + (128 << 10));
        for n in [3000, 1 << 20 | 7, 5 << 20, 123_456_789] {
            let r = round_size(n);
            assert!(r >= n && (r - n) as f64 <= n as f64 / 8.0 + 512.0, "{n} -> {r}");
        }
    }
}
