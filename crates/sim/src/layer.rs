//! `sim`'s device layer: regen-runtime's [`DeviceLayer`] over the simulated hardware, memory the
//! host cannot touch ([`crate::memory`]) and streams that run work on their own threads
//! ([`crate::queue`]). This file is what a backend for a real accelerator writes: each method is a
//! call into its driver (allocate, copy on a stream, launch, record an event).

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use regen_runtime::device::layer::signed_ms;
use regen_runtime::device::{self as rdevice, CopyKind, DeviceLayer, EventHandle, Properties, Stream};
use regen_runtime::{Error, Result};

use crate::memory::{Access, Arena};
use crate::queue::{Event, Streams, Task};

/// Bytes of memory each device has (`REGEN_SIM_MEMORY`, bytes or with a K/M/G/T suffix; 8 GiB by
/// default). It is address space only until written.
fn memory_size() -> usize {
    std::env::var("REGEN_SIM_MEMORY")
        .ok()
        .and_then(|v| regen_runtime::device::cache::parse_limit(&v).flatten())
        .map_or(8 << 30, |n| n as usize)
}

/// The simulated accelerator.
pub struct SimLayer {
    arenas: Vec<&'static Arena>,
    access: Arc<Access>,
    streams: Streams,
    /// Per device, the first error of a queued kernel not reported yet.
    failed: Arc<Vec<Mutex<Option<Error>>>>,
}

impl SimLayer {
    /// `devices` devices, each with its arena.
    pub fn new(devices: usize) -> SimLayer {
        let size = memory_size();
        let arenas: Vec<&'static Arena> = (0..devices)
            .map(|d| {
                let arena =
                    Arena::reserve(size).unwrap_or_else(|| panic!("sim: cannot reserve {size} bytes for device {d}"));
                &*Box::leak(Box::new(arena))
            })
            .collect();
        let access = Arc::new(Access::new(arenas.clone()));
        let open = Arc::clone(&access);
        let streams = Streams::new(Arc::new(move |task: Task| open.with_open(task)));
        let failed = Arc::new((0..devices).map(|_| Mutex::new(None)).collect());
        // SAFETY: registers a handler that only stores to an atomic.
        unsafe { libc::pthread_atfork(None, None, Some(forked_child)) };
        SimLayer { arenas, access, streams, failed }
    }

    /// An error once this process is a fork of the one that made the device: the workers that run
    /// its streams are threads of the parent, so work queued here would wait forever. CUDA refuses
    /// the same ("Cannot re-initialize CUDA in forked subprocess").
    fn in_parent(&self) -> Result<()> {
        if FORKED.load(Ordering::Relaxed) {
            return Err(Error::runtime(format!(
                "{}: the device cannot be used in a forked subprocess (its streams run on the parent's \
                 threads); to use it with multiprocessing, you must use the 'spawn' start method",
                rdevice::name()
            )));
        }
        Ok(())
    }

    /// Reports (once) the error of a kernel queued earlier on `device`, as an accelerator reports
    /// an asynchronous failure at the next call that waits for or queues work.
    fn failure(&self, device: usize) -> Result<()> {
        let Some(slot) = self.failed.get(device) else { return Ok(()) };
        match slot.lock().unwrap_or_else(|e| e.into_inner()).take() {
            None => Ok(()),
            Some(e) => Err(Error::new(
                e.kind(),
                format!(
                    "{} (a kernel queued earlier on {}:{device} failed; reported at the next call that queues or waits for work)",
                    e.message(),
                    rdevice::name()
                ),
            )),
        }
    }

    /// Queues `task` on `stream`'s worker after the checks every queuing call makes (not in a
    /// fork; no failure of earlier work left to report); the task runs with the stream's device
    /// and stream current, so a kernel allocates its outputs on that device and pool.
    fn enqueue(&self, stream: Stream, task: impl FnOnce() + Send + 'static) -> Result<()> {
        self.in_parent()?;
        self.failure(stream.device)?;
        self.streams.worker(stream).push(Box::new(move || {
            let _ = rdevice::set_current(stream.device);
            rdevice::set_current_stream(stream);
            task()
        }));
        Ok(())
    }

    fn arena(&self, device: usize) -> &'static Arena {
        self.arenas[device]
    }

    /// The access to device memory every worker task has (for a test that wants to look).
    pub fn access(&self) -> &Access {
        &self.access
    }
}

/// The result of a task the host waits for: a value or a panic to carry back.
type Outcome = std::thread::Result<Result<()>>;

impl DeviceLayer for SimLayer {
    fn allocate(&self, device: usize, nbytes: usize) -> Option<NonNull<u8>> {
        self.arena(device).allocate(nbytes)
    }

    /// Work queued before the free may still use the block (a copy the host did not wait for), so
    /// the arena takes it back only once every stream of the device has passed this point, as
    /// `cudaFree` waits for the device: a task on each worker counts down and the last one frees.
    /// Nothing blocks here (the caching allocator calls this under its lock, which a worker's
    /// kernel may be waiting for).
    unsafe fn free(&self, device: usize, ptr: NonNull<u8>, nbytes: usize) {
        let arena = self.arena(device);
        let addr = ptr.as_ptr() as usize;
        let release = move || {
            // SAFETY: per the contract, from this arena's allocate(nbytes), freed once (by the
            // last task below, or here when no stream exists).
            unsafe { arena.free(NonNull::new_unchecked(addr as *mut u8), nbytes) }
        };
        let workers = self.streams.of_device(device);
        if workers.is_empty() {
            return release();
        }
        let left = Arc::new(AtomicUsize::new(workers.len()));
        for worker in workers {
            let left = Arc::clone(&left);
            worker.push(Box::new(move || {
                if left.fetch_sub(1, Ordering::AcqRel) == 1 {
                    release();
                }
            }));
        }
    }

    fn memory_info(&self, device: usize) -> (u64, u64) {
        let arena = self.arena(device);
        (arena.free_bytes() as u64, arena.size() as u64)
    }

    fn properties(&self, device: usize) -> Properties {
        Properties {
            name: format!("{}:{device} (simulated accelerator)", rdevice::name()),
            total_memory: self.arena(device).size() as u64,
            multi_processor_count: WORKER_UNITS,
        }
    }

    fn host_addressable(&self) -> bool {
        false
    }

    unsafe fn copy(&self, dst: *mut u8, src: *const u8, nbytes: usize, kind: CopyKind, stream: Stream) -> Result<()> {
        let _ = kind;
        self.in_parent()?;
        let (dst, src) = (dst as usize, src as usize);
        self.streams.worker(stream).push(Box::new(move || {
            // SAFETY: the caller keeps both ranges valid until the copy is done (it synchronizes
            // the stream, or its pinned memory outlives the copy); device memory is open here.
            unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, nbytes) }
        }));
        Ok(())
    }

    /// The kernel runs on the stream's worker, in order after the work queued there, with device
    /// memory open; the host waits for it (the kernel borrows its arguments for the call).
    fn run(&self, stream: Stream, kernel: &mut dyn FnMut() -> Result<()>) -> Result<()> {
        // Device work a task starts (a kernel that runs another) runs where it is, in order.
        if crate::queue::on_worker() {
            return kernel();
        }
        let slot: Arc<(Mutex<Option<Outcome>>, Condvar)> = Arc::new((Mutex::new(None), Condvar::new()));
        let filled = Arc::clone(&slot);
        // SAFETY: `run` waits below until the task has finished with `kernel`, so the borrow
        // outlives its use on the worker; the pointer only crosses as an address.
        let kernel: &'static mut dyn FnMut() -> Result<()> = unsafe { std::mem::transmute(kernel) };
        let kernel = SendPtr(kernel);
        self.enqueue(stream, move || {
            let kernel = kernel;
            let outcome = catch_unwind(AssertUnwindSafe(|| (kernel.0)()));
            *filled.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
            filled.1.notify_all();
        })?;
        let mut done = slot.0.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match done.take() {
                Some(Ok(result)) => return result,
                Some(Err(panic)) => resume_unwind(panic),
                None => done = slot.1.wait(done).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }

    fn queues_kernels(&self) -> bool {
        true
    }

    /// The kernel is queued on the stream's worker and the host goes on, as a CUDA launch returns;
    /// its error is kept for the device's next call that queues or waits for work.
    fn launch(&self, stream: Stream, kernel: Box<dyn FnOnce() -> Result<()> + Send>) -> Result<()> {
        if crate::queue::on_worker() {
            return kernel();
        }
        let failed = Arc::clone(&self.failed);
        self.enqueue(stream, move || {
            if let Err(e) = kernel()
                && let Some(slot) = failed.get(stream.device)
            {
                slot.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
            }
        })
    }

    fn create_stream(&self, device: usize, priority: i32) -> Result<u64> {
        let _ = (device, priority);
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Ok(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    fn query_stream(&self, stream: Stream) -> bool {
        self.streams.worker(stream).idle()
    }

    fn synchronize_stream(&self, stream: Stream) -> Result<()> {
        self.in_parent()?;
        self.streams.worker(stream).synchronize();
        self.failure(stream.device)
    }

    fn synchronize_device(&self, device: usize) -> Result<()> {
        self.in_parent()?;
        self.streams.of_device(device).iter().for_each(|w| w.synchronize());
        self.failure(device)
    }

    fn create_event(&self, device: usize, timing: bool) -> Result<EventHandle> {
        let _ = device;
        Ok(EventHandle(Box::into_raw(Box::new(Event::new(timing))) as u64))
    }

    fn record_event(&self, event: EventHandle, stream: Stream) -> Result<()> {
        self.in_parent()?;
        event_of(event).record(&self.streams.worker(stream));
        Ok(())
    }

    fn wait_event(&self, event: EventHandle, stream: Stream) -> Result<()> {
        self.in_parent()?;
        event_of(event).block(&self.streams.worker(stream));
        Ok(())
    }

    fn query_event(&self, event: EventHandle) -> bool {
        event_of(event).complete()
    }

    fn synchronize_event(&self, event: EventHandle) -> Result<()> {
        self.in_parent()?;
        event_of(event).wait();
        // An event does not know its device: any device's failure is reported.
        (0..self.arenas.len()).try_for_each(|d| self.failure(d))
    }

    fn elapsed_ms(&self, start: EventHandle, end: EventHandle) -> Result<f64> {
        let (a, b) = (event_of(start), event_of(end));
        if !a.timing || !b.timing {
            return Err(Error::value("Both events must be created with argument 'enable_timing=True'."));
        }
        // CUDA raises for an event not yet reached; waiting for both is what a caller does next.
        self.in_parent()?;
        a.wait();
        b.wait();
        match (a.when(), b.when()) {
            (Some(a), Some(b)) => Ok(signed_ms(a, b)),
            _ => Err(Error::value("Both events must be recorded before calculating elapsed time.")),
        }
    }

    unsafe fn destroy_event(&self, event: EventHandle) {
        // SAFETY: per the contract, a box from create_event, destroyed once.
        drop(unsafe { Box::from_raw(event.0 as *mut Arc<Event>) });
    }
}

/// Set in a child process after `fork`: see [`SimLayer::in_parent`].
static FORKED: AtomicBool = AtomicBool::new(false);

extern "C" fn forked_child() {
    FORKED.store(true, Ordering::Relaxed);
}

/// What `get_device_properties(d).multi_processor_count` says: one worker runs one task at a time.
const WORKER_UNITS: u32 = 1;

fn event_of<'a>(event: EventHandle) -> &'a Arc<Event> {
    // SAFETY: handles are boxes from create_event, alive until destroy_event (the glue's rule).
    unsafe { &*(event.0 as *const Arc<Event>) }
}

/// A kernel's address, sent to the worker that runs it while its owner waits.
struct SendPtr(&'static mut dyn FnMut() -> Result<()>);
// SAFETY: the owner waits on the worker's result and does not touch the kernel meanwhile.
unsafe impl Send for SendPtr {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_launched_kernel_runs_after_launch_returns_and_its_error_comes_once_at_the_next_wait() {
        let layer: &'static SimLayer = Box::leak(Box::new(SimLayer::new(1)));
        let stream = Stream { device: 0, id: 7 };
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let ran = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&ran);
        // The kernel waits for the host, which it could not do if launch waited for the kernel.
        layer
            .launch(
                stream,
                Box::new(move || {
                    rx.recv().unwrap();
                    seen.store(true, Ordering::SeqCst);
                    Err(Error::index("aten::f_: index 9 is out of bounds"))
                }),
            )
            .unwrap();
        assert!(!layer.query_stream(stream) && !ran.load(Ordering::SeqCst));
        tx.send(()).unwrap();
        let err = layer.synchronize_stream(stream).unwrap_err();
        assert!(ran.load(Ordering::SeqCst));
        assert_eq!(err.kind(), regen_runtime::ErrorKind::Index);
        assert!(err.message().starts_with("aten::f_: index 9 is out of bounds (a kernel queued earlier on"), "{err}");
        assert!(layer.synchronize_stream(stream).is_ok(), "reported once");
    }

    #[test]
    fn a_block_goes_back_to_the_arena_after_the_work_queued_before_its_free() {
        let layer: &'static SimLayer = Box::leak(Box::new(SimLayer::new(1)));
        let total = layer.memory_info(0).0;
        let p = layer.allocate(0, 4096).unwrap();
        let stream = Stream { device: 0, id: 5 };
        // A kernel that is still running on the stream when the block is freed.
        let busy = std::thread::spawn(move || {
            layer.run(stream, &mut || {
                std::thread::sleep(Duration::from_millis(100));
                Ok(())
            })
        });
        std::thread::sleep(Duration::from_millis(20));
        // SAFETY: from allocate(0, 4096), freed once.
        unsafe { layer.free(0, p, 4096) };
        assert!(layer.memory_info(0).0 < total, "the stream's work is not done: the block is still the device's");
        busy.join().unwrap().unwrap();
        layer.synchronize_device(0).unwrap();
        assert_eq!(layer.memory_info(0).0, total, "back in the arena once every stream passed the free");
    }
}
