//! The host threads device kernels run their parallel loops on: one pool for the process, shared by
//! every thread that runs kernels (Python's, autograd's thread for the device, a device layer's
//! worker), with `torch.get_num_threads() - 1` workers; the calling thread works too.
//!
//! Why not PyTorch's own pool (`at::parallel_for`, which the device used first): with OpenMP each
//! thread that starts a parallel loop gets a team of its own, and autograd runs a device's backward
//! on a thread of its own, so a training step alternated between two teams whose idle workers spin
//! after each loop: at 2 threads on 2 cores the forward's spinning worker took a core from the
//! backward (a ResNet-18 step sped up 1.25× from 1 to 2 threads where CPU's sped up 1.82×). Why not
//! rayon (tried before that): a thread outside its pool does not take part in the work, and its
//! workers fall asleep within microseconds, so waking them cost more than loops under 256K
//! elements gained. Here the workers spin for a while (`SPIN`) after each loop, as OpenMP's do, then park.
//!
//! Chunks are those of `at::parallel_for` (`min(threads, ⌈n / grain⌉)` equal chunks), so a kernel
//! that sums per chunk as CPU does (histc) adds in CPU's order; they are claimed, not assigned,
//! so a worker that is late (parked, descheduled, or absent in a forked child) leaves its chunk to
//! the others. A loop started inside another (from a chunk), or while another thread's loop is
//! running, runs on its own thread, as `at::parallel_for` runs a nested loop; so does every loop
//! of a child process `fork` made (the workers are the parent's).

use std::any::Any;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How long an idle worker spins for the next loop before it parks: a training step's parallel
/// loops follow each other within tens of microseconds, and waking a parked thread costs about
/// as much as a small loop.
const SPIN: Duration = Duration::from_micros(300);

/// One parallel loop: `f` over `chunks` chunks of `chunk` indices covering `0..n`.
struct Job<'a> {
    f: &'a (dyn Fn(usize, usize) + Sync),
    n: usize,
    chunk: usize,
    chunks: usize,
    /// How many workers take part (the first `helpers`).
    helpers: usize,
    /// The next chunk to claim.
    next: AtomicUsize,
    /// Chunks finished.
    done: AtomicUsize,
    /// The first panic of a chunk, carried back to the caller.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

impl Job<'_> {
    /// Claims and runs chunks until none is left.
    fn work(&self) {
        loop {
            let c = self.next.fetch_add(1, SeqCst);
            if c >= self.chunks {
                return;
            }
            let begin = c * self.chunk;
            let end = (begin + self.chunk).min(self.n);
            IN_LOOP.set(true);
            let run = std::panic::AssertUnwindSafe(|| (self.f)(begin, end));
            if let Err(payload) = std::panic::catch_unwind(run) {
                self.panic.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(payload);
            }
            IN_LOOP.set(false);
            self.done.fetch_add(1, SeqCst);
        }
    }
}

/// A worker: its thread (to unpark) and whether it is parked.
struct Worker {
    thread: Thread,
    parked: AtomicBool,
}

struct Pool {
    /// The running loop (a `Job` on its caller's stack), null between loops.
    job: AtomicPtr<Job<'static>>,
    /// Counts loops started, so a worker knows a new one from the one it did.
    epoch: AtomicU64,
    /// Workers that may be reading `job`; its caller returns only when none is.
    busy: AtomicUsize,
    /// Held by the thread whose loop is running.
    running: AtomicBool,
    /// Only the running caller adds workers.
    workers: Mutex<Vec<&'static Worker>>,
    /// The process the workers run in: a child `fork` made has none of them (and maybe a copy of
    /// the counters mid-loop), so its loops run on its own thread.
    pid: u32,
}

thread_local! {
    /// Whether this thread is inside a chunk of a loop.
    static IN_LOOP: Cell<bool> = const { Cell::new(false) };
}

/// The process's pool.
fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(Pool::new)
}

impl Pool {
    fn new() -> Pool {
        Pool {
            job: AtomicPtr::new(std::ptr::null_mut()),
            epoch: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
            running: AtomicBool::new(false),
            workers: Mutex::new(Vec::new()),
            pid: std::process::id(),
        }
    }

    /// Worker `index`'s life: wait for a loop it takes part in, work on it, again.
    fn serve(&'static self, index: usize, me: &'static Worker) {
        let mut seen = self.epoch.load(SeqCst);
        // Since this worker last worked: a loop it takes no part in (fewer threads than workers,
        // after torch.set_num_threads lowered the count) does not restart its spinning, so only
        // as many threads as the count spin.
        let mut worked = Instant::now();
        loop {
            let mut spins = 0u32;
            while self.epoch.load(SeqCst) == seen {
                spins = spins.wrapping_add(1);
                if !spins.is_multiple_of(64) || worked.elapsed() < SPIN {
                    std::hint::spin_loop();
                    continue;
                }
                // Parked only if no loop started since: the caller bumps `epoch`, then unparks the
                // workers it sees parked, so one of the two sees the other.
                me.parked.store(true, SeqCst);
                if self.epoch.load(SeqCst) == seen {
                    std::thread::park();
                }
                me.parked.store(false, SeqCst);
            }
            seen = self.epoch.load(SeqCst);
            self.busy.fetch_add(1, SeqCst);
            let job = self.job.load(SeqCst);
            // SAFETY: the caller keeps its job alive until `busy` is back to 0, and clears `job`
            // before it waits, so a worker counted in `busy` after that sees null.
            if let Some(job) = unsafe { job.as_ref() }
                && index < job.helpers
            {
                job.work();
                worked = Instant::now();
            }
            self.busy.fetch_sub(1, SeqCst);
        }
    }

    /// The workers, after starting as many as make `want` (fewer if a thread cannot start).
    fn grow(&'static self, want: usize) -> MutexGuard<'static, Vec<&'static Worker>> {
        let mut workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        while workers.len() < want {
            let index = workers.len();
            let (tx, rx) = std::sync::mpsc::channel::<&'static Worker>();
            let spawned = std::thread::Builder::new().name(format!("regen-pool-{index}")).spawn(move || {
                if let Ok(me) = rx.recv() {
                    self.serve(index, me);
                }
            });
            let Ok(handle) = spawned else { break };
            let worker: &'static Worker =
                Box::leak(Box::new(Worker { thread: handle.thread().clone(), parked: AtomicBool::new(false) }));
            if tx.send(worker).is_err() {
                break;
            }
            workers.push(worker);
        }
        workers
    }

    /// [`run`] on this pool.
    fn run<F: Fn(usize, usize) + Sync>(&'static self, n: usize, grain: usize, threads: usize, f: F) {
        if n == 0 {
            return;
        }
        let tasks = threads.min(n.div_ceil(grain.max(1)));
        if tasks < 2
            || IN_LOOP.get()
            || self.pid != std::process::id()
            || self.running.compare_exchange(false, true, SeqCst, SeqCst).is_err()
        {
            return f(0, n);
        }
        let workers = self.grow(tasks - 1);
        let chunk = n.div_ceil(tasks);
        let job = Job {
            f: &f,
            n,
            chunk,
            chunks: n.div_ceil(chunk),
            helpers: tasks - 1,
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            panic: Mutex::new(None),
        };
        // SAFETY: only the lifetime is erased; the job outlives every worker's use of it (below).
        self.job.store(std::ptr::from_ref(&job).cast_mut().cast(), SeqCst);
        self.epoch.fetch_add(1, SeqCst);
        for w in workers.iter().take(tasks - 1) {
            if w.parked.load(SeqCst) {
                w.thread.unpark();
            }
        }
        drop(workers);
        job.work();
        while job.done.load(SeqCst) < job.chunks {
            std::hint::spin_loop();
        }
        self.job.store(std::ptr::null_mut(), SeqCst);
        while self.busy.load(SeqCst) != 0 {
            std::hint::spin_loop();
        }
        self.running.store(false, SeqCst);
        if let Some(payload) = job.panic.into_inner().unwrap_or_else(|e| e.into_inner()) {
            std::panic::resume_unwind(payload);
        }
    }
}

/// Runs `f(begin, end)` over chunks covering `0..n`, each at least `grain` long (one call with
/// `0..n` when `n <= grain`), on `threads` threads: the caller and `threads - 1` workers of the
/// pool. A panic in `f` is resumed on the caller's thread.
pub fn run<F: Fn(usize, usize) + Sync>(n: usize, grain: usize, threads: usize, f: F) {
    pool().run(n, grain, threads, f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A pool of the test's own: the tests run side by side in one process under `cargo test`,
    /// and a loop that finds the pool running another's runs on its caller's thread.
    fn own() -> &'static Pool {
        Box::leak(Box::new(Pool::new()))
    }

    #[test]
    fn chunks_cover_the_range_once_as_at_parallel_for_splits_it() {
        for (n, grain, threads) in [(10, 1, 4), (7, 3, 4), (100, 32, 2), (5, 10, 4), (1, 1, 3), (1000, 1, 3)] {
            let seen: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            let chunks = Mutex::new(Vec::new());
            own().run(n, grain, threads, |b, e| {
                chunks.lock().unwrap().push((b, e));
                for s in &seen[b..e] {
                    s.fetch_add(1, SeqCst);
                }
            });
            assert!(seen.iter().all(|s| s.load(SeqCst) == 1), "n {n} grain {grain} threads {threads}");
            let tasks = threads.min(n.div_ceil(grain));
            let mut got = chunks.into_inner().unwrap();
            got.sort();
            let expected: Vec<_> = if tasks < 2 {
                vec![(0, n)]
            } else {
                let c = n.div_ceil(tasks);
                (0..n.div_ceil(c)).map(|i| (i * c, ((i + 1) * c).min(n))).collect()
            };
            assert_eq!(got, expected, "n {n} grain {grain} threads {threads}");
        }
    }

    #[test]
    fn a_nested_loop_runs_on_its_callers_thread() {
        let total = AtomicUsize::new(0);
        let p = own();
        p.run(8, 1, 4, |b, e| {
            let me = std::thread::current().id();
            p.run(e - b, 1, 4, |bb, ee| {
                assert_eq!(std::thread::current().id(), me);
                total.fetch_add(ee - bb, SeqCst);
            });
        });
        assert_eq!(total.load(SeqCst), 8);
    }

    #[test]
    fn a_panic_in_a_chunk_reaches_the_caller_and_the_pool_goes_on() {
        let p = own();
        let caught = std::panic::catch_unwind(|| p.run(64, 1, 4, |b, _| assert!(b != 16 * 2, "chunk at {b}")));
        assert!(caught.is_err());
        let sum = AtomicUsize::new(0);
        p.run(64, 1, 4, |b, e| {
            sum.fetch_add((b..e).sum::<usize>(), SeqCst);
        });
        assert_eq!(sum.load(SeqCst), (0..64).sum::<usize>());
    }

    #[test]
    fn loops_from_several_threads_all_finish() {
        let sum = AtomicUsize::new(0);
        let p = own();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..200 {
                        p.run(1000, 10, 3, |b, e| {
                            sum.fetch_add(e - b, SeqCst);
                        });
                    }
                });
            }
        });
        assert_eq!(sum.load(SeqCst), 4 * 200 * 1000);
    }
}
