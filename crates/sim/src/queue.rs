//! The simulated device's streams and events: each stream is a worker thread with a queue; work
//! (kernels, copies, event records, waits on events) runs there in the order it was queued, with
//! device memory open ([`crate::memory::Access`]). Synchronizing waits until a stream's worker has
//! done what was queued before; an event completes when its stream's worker reaches it, and keeps
//! the time it did. `REGEN_SIM_DELAY_US` makes every task wait that long first (a slow device), so
//! a missing synchronization shows as wrong data instead of a race the host usually wins.

use std::collections::HashMap;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use regen_runtime::device::{self as rdevice, Stream};

thread_local! {
    /// Whether this thread is a stream worker (work it queues for itself would wait forever).
    static ON_WORKER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the calling thread is a stream worker.
pub fn on_worker() -> bool {
    ON_WORKER.with(std::cell::Cell::get)
}

/// A unit of device work.
pub type Task = Box<dyn FnOnce() + Send>;

/// Streams share this many workers per device: a stream's worker is its id modulo it (the default
/// stream, id 0, has worker 0 to itself only while fewer streams exist), so programs that ask for
/// streams without end do not make threads without end. Streams sharing a worker are serialized,
/// which stream semantics allow.
const WORKERS_PER_DEVICE: u64 = 32;

/// How many tasks a stream was given and how many it finished.
#[derive(Default)]
struct Progress {
    queued: u64,
    done: u64,
}

/// One worker thread and its queue.
pub struct Worker {
    send: Mutex<Sender<Task>>,
    progress: Arc<(Mutex<Progress>, Condvar)>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The delay before each task (`REGEN_SIM_DELAY_US`, read once).
fn delay() -> Option<Duration> {
    static DELAY: OnceLock<Option<Duration>> = OnceLock::new();
    *DELAY.get_or_init(|| {
        std::env::var("REGEN_SIM_DELAY_US").ok().and_then(|v| v.trim().parse().ok()).map(Duration::from_micros)
    })
}

impl Worker {
    fn spawn(device: usize, slot: u64, run: Arc<dyn Fn(Task) + Send + Sync>) -> Worker {
        let (send, recv) = channel::<Task>();
        let progress = Arc::new((Mutex::new(Progress::default()), Condvar::new()));
        let mine = Arc::clone(&progress);
        std::thread::Builder::new()
            .name(format!("sim{device}-stream{slot}"))
            .spawn(move || {
                ON_WORKER.with(|w| w.set(true));
                // Kernels allocate their outputs on the stream's device and pool.
                let _ = rdevice::set_current(device);
                rdevice::set_current_stream(Stream { device, id: slot });
                while let Ok(task) = recv.recv() {
                    if let Some(d) = delay() {
                        std::thread::sleep(d);
                    }
                    run(task);
                    let (state, done) = &*mine;
                    lock(state).done += 1;
                    done.notify_all();
                }
            })
            .expect("sim: cannot start a stream worker");
        Worker { send: Mutex::new(send), progress }
    }

    /// Queues `task`; returns its place in the stream's order.
    pub fn push(&self, task: Task) -> u64 {
        let (state, _) = &*self.progress;
        let mut state = lock(state);
        state.queued += 1;
        let place = state.queued;
        // The worker lives as long as the process: sending cannot fail.
        let _ = lock(&self.send).send(task);
        place
    }

    /// Whether everything queued so far is done.
    pub fn idle(&self) -> bool {
        let state = lock(&self.progress.0);
        state.done >= state.queued
    }

    /// Waits until everything queued before this call is done.
    pub fn synchronize(&self) {
        let (state, done) = &*self.progress;
        let mut state = lock(state);
        let target = state.queued;
        while state.done < target {
            state = done.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Every stream's worker, made on first use.
pub struct Streams {
    workers: Mutex<HashMap<(usize, u64), Arc<Worker>>>,
    run: Arc<dyn Fn(Task) + Send + Sync>,
}

impl Streams {
    /// `run` runs one task on a worker (with device memory open).
    pub fn new(run: Arc<dyn Fn(Task) + Send + Sync>) -> Streams {
        Streams { workers: Mutex::new(HashMap::new()), run }
    }

    /// The worker of `stream`.
    pub fn worker(&self, stream: Stream) -> Arc<Worker> {
        let slot = if stream.id == 0 { 0 } else { 1 + (stream.id - 1) % (WORKERS_PER_DEVICE - 1) };
        let mut workers = lock(&self.workers);
        Arc::clone(
            workers
                .entry((stream.device, slot))
                .or_insert_with(|| Arc::new(Worker::spawn(stream.device, slot, Arc::clone(&self.run)))),
        )
    }

    /// The workers of `device` made so far.
    pub fn of_device(&self, device: usize) -> Vec<Arc<Worker>> {
        lock(&self.workers).iter().filter(|((d, _), _)| *d == device).map(|(_, w)| Arc::clone(w)).collect()
    }
}

/// An event: recorded on a stream, complete when that stream's worker reaches it.
pub struct Event {
    pub timing: bool,
    state: Mutex<EventState>,
    reached: Condvar,
}

#[derive(Default)]
struct EventState {
    /// How many times it was recorded; a record completes only its own round.
    round: u64,
    /// The round the worker reached last, and when.
    reached: u64,
    when: Option<Instant>,
}

impl Event {
    pub fn new(timing: bool) -> Arc<Event> {
        Arc::new(Event { timing, state: Mutex::new(EventState::default()), reached: Condvar::new() })
    }

    /// Records it on `worker`'s queue.
    pub fn record(self: &Arc<Event>, worker: &Worker) {
        let round = {
            let mut state = lock(&self.state);
            state.round += 1;
            state.round
        };
        let me = Arc::clone(self);
        worker.push(Box::new(move || {
            let mut state = lock(&me.state);
            if round > state.reached {
                state.reached = round;
                state.when = Some(Instant::now());
            }
            me.reached.notify_all();
        }));
    }

    /// Whether the last record completed (an event never recorded has: CUDA's rule).
    pub fn complete(&self) -> bool {
        let state = lock(&self.state);
        state.reached >= state.round
    }

    /// Waits for the record made before this call.
    pub fn wait(&self) {
        let mut state = lock(&self.state);
        let round = state.round;
        while state.reached < round {
            state = self.reached.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Queues on `worker` a wait for the record made before this call (`stream.wait_event`).
    pub fn block(self: &Arc<Event>, worker: &Worker) {
        let round = lock(&self.state).round;
        let me = Arc::clone(self);
        worker.push(Box::new(move || {
            let mut state = lock(&me.state);
            while state.reached < round {
                state = me.reached.wait(state).unwrap_or_else(|e| e.into_inner());
            }
        }));
    }

    /// When the worker reached the last record, if it has.
    pub fn when(&self) -> Option<Instant> {
        let state = lock(&self.state);
        if state.round > 0 && state.reached >= state.round { state.when } else { None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_stream_runs_in_order_and_events_follow_it() {
        let streams = Streams::new(Arc::new(|task: Task| task()));
        let s = streams.worker(Stream { device: 0, id: 5 });
        let log = Arc::new(Mutex::new(Vec::new()));
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let (g, l) = (Arc::clone(&gate), Arc::clone(&log));
        // The first task waits for the gate: everything after it waits too.
        s.push(Box::new(move || {
            let mut open = g.0.lock().unwrap();
            while !*open {
                open = g.1.wait(open).unwrap();
            }
            l.lock().unwrap().push(1);
        }));
        let l = Arc::clone(&log);
        s.push(Box::new(move || l.lock().unwrap().push(2)));
        let e = Event::new(true);
        e.record(&s);
        assert!(!s.idle() && !e.complete() && e.when().is_none());
        // Another stream waiting for the event does not run past it.
        let other = streams.worker(Stream { device: 0, id: 6 });
        e.block(&other);
        let ran = Arc::new(AtomicUsize::new(0));
        let r = Arc::clone(&ran);
        other.push(Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
        }));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(ran.load(Ordering::SeqCst), 0, "blocked on the event");
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        s.synchronize();
        assert_eq!(*log.lock().unwrap(), [1, 2]);
        e.wait();
        assert!(e.complete() && e.when().is_some());
        other.synchronize();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        assert!(Event::new(false).complete(), "never recorded: complete");
    }
}
