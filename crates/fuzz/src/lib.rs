//! regen-fuzz: a deterministic mutation fuzzer for regen's pipeline on stable Rust (no
//! cargo-fuzz, no nightly). Each execution takes a few real header lines, mutates them
//! ([`mutate`]), and drives `load_header` → `Config::select` (with and without a regen.toml)
//! → every emitter → `diff` of the old and mutated headers, checking the results ([`oracle`]).
//!
//! Execution `i` of a run seeded `s` depends on `(s, i)` alone, so any finding is replayed with
//! `regen-fuzz --seed s --replay i`. Two entry points: a bounded run in the default test suite
//! (tests/fuzz.rs) and long runs, `cargo xtask fuzz --execs N --seed S`.

pub mod cpp_check;
pub mod mutate;
pub mod oracle;
pub mod rng;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub use mutate::{Corpus, Input};
pub use oracle::{Finding, Outcome, exec};
use rng::Rng;

/// The input of execution `index` of a run seeded `seed`.
pub fn input(corpus: &Corpus, seed: u64, index: u64) -> Input {
    mutate::generate(corpus, &mut Rng::for_exec(seed, index))
}

/// A finding, with the first execution that showed it.
#[derive(Debug, Clone)]
pub struct Found {
    pub index: u64,
    pub finding: Finding,
    pub input: Input,
    /// Executions with the same signature.
    pub count: u64,
}

#[derive(Debug, Clone, Default)]
pub struct Report {
    pub execs: u64,
    pub elapsed: Duration,
    /// Executions per outcome (`generated`, `rejected by header`, ...).
    pub outcomes: BTreeMap<String, u64>,
    /// Rejections per phase and first message (its shape: no numbers or quoted names).
    pub rejections: BTreeMap<String, u64>,
    /// One entry per finding signature, in order of first execution.
    pub findings: Vec<Found>,
}

impl Report {
    pub fn execs_per_sec(&self) -> f64 {
        self.execs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn summary(&self) -> String {
        let outcomes: Vec<String> = self.outcomes.iter().map(|(k, v)| format!("{k} {v}")).collect();
        format!(
            "{} executions in {:.1} s ({:.0}/s); {}; {} finding(s)",
            self.execs,
            self.elapsed.as_secs_f64(),
            self.execs_per_sec(),
            outcomes.join(", "),
            self.findings.len()
        )
    }
}

fn outcome_name(o: &Outcome) -> String {
    match o {
        Outcome::Generated => "generated".into(),
        Outcome::Rejected(phase, _) => format!("rejected by {phase}"),
    }
}

/// Runs executions `0..execs` of `seed` on `threads` threads; `progress` is called about every
/// `every` with the executions done so far.
pub fn run(
    corpus: &Corpus,
    seed: u64,
    execs: u64,
    threads: usize,
    every: Duration,
    progress: &(dyn Fn(u64, &Report) + Sync),
) -> Report {
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let start = Instant::now();
    let shared = Mutex::new(Report::default());
    let record = |index: u64, input: &Input, result: Result<Outcome, Finding>| {
        let mut report = shared.lock().unwrap_or_else(|p| p.into_inner());
        match result {
            Ok(o) => {
                *report.outcomes.entry(outcome_name(&o)).or_default() += 1;
                if let Outcome::Rejected(phase, message) = &o {
                    *report.rejections.entry(format!("{phase}: {}", oracle::shape(message))).or_default() += 1;
                }
            }
            Err(finding) => {
                *report.outcomes.entry("finding".into()).or_default() += 1;
                let signature = finding.signature();
                match report.findings.iter_mut().find(|f| f.finding.signature() == signature) {
                    Some(f) => {
                        f.count += 1;
                        if index < f.index {
                            (f.index, f.finding, f.input) = (index, finding, input.clone());
                        }
                    }
                    None => report.findings.push(Found { index, finding, input: input.clone(), count: 1 }),
                }
            }
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                loop {
                    // Small batches keep the counter cheap and the order of work stable.
                    let first = next.fetch_add(16, Ordering::Relaxed);
                    if first >= execs {
                        break;
                    }
                    for index in first..(first + 16).min(execs) {
                        let input = input(corpus, seed, index);
                        record(index, &input, exec(&input));
                    }
                    done.fetch_add((first + 16).min(execs) - first, Ordering::Relaxed);
                }
            });
        }
        let mut last = Instant::now();
        while done.load(Ordering::Relaxed) < execs {
            std::thread::sleep(Duration::from_millis(50));
            if last.elapsed() >= every {
                last = Instant::now();
                let mut snapshot = shared.lock().unwrap_or_else(|p| p.into_inner()).clone();
                snapshot.execs = done.load(Ordering::Relaxed);
                snapshot.elapsed = start.elapsed();
                progress(snapshot.execs, &snapshot);
            }
        }
    });
    let mut report = shared.into_inner().unwrap_or_else(|p| p.into_inner());
    report.execs = execs;
    report.elapsed = start.elapsed();
    report.findings.sort_by_key(|f| f.index);
    report
}
