//! What the CPU fallback served: a count per op (`name.overload`), so a user can find the ops
//! that leave the device, and an opt-in mode that warns on the first fallback of each op or
//! raises on every one (`REGEN_FALLBACK=warn|raise`, read at the first fallback, or
//! [`set_mode`] at run time). The generated fallback (templates/fallback.cpp) asks [`called`]
//! before it runs an op on CPU and warns or raises as told. And ops a user routes to the fallback
//! although they have a kernel (`<DEVICE>_FALLBACK_OPS`, [`routed`]), to test the tests or to
//! bisect a wrong answer.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};

/// What the fallback does besides counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// Runs the op on CPU and only counts it (the default).
    Quiet = 1,
    /// Warns on the first fallback of each op, then runs it.
    Warn = 2,
    /// Raises instead of running any op on CPU.
    Raise = 3,
}

impl Mode {
    /// The name `REGEN_FALLBACK` and the Python `set_fallback_mode` take.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Quiet => "quiet",
            Mode::Warn => "warn",
            Mode::Raise => "raise",
        }
    }

    pub fn parse(name: &str) -> Option<Mode> {
        match name.trim().to_ascii_lowercase().as_str() {
            "" | "quiet" | "off" => Some(Mode::Quiet),
            "warn" => Some(Mode::Warn),
            "raise" | "error" => Some(Mode::Raise),
            _ => None,
        }
    }

    fn from_u8(v: u8) -> Option<Mode> {
        [Mode::Quiet, Mode::Warn, Mode::Raise].into_iter().find(|m| *m as u8 == v)
    }
}

/// 0 until the first fallback (or [`set_mode`]) reads `REGEN_FALLBACK`.
static MODE: AtomicU8 = AtomicU8::new(0);
static CALLS: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

/// The mode in force: `REGEN_FALLBACK` until [`set_mode`] changes it. An unknown value is
/// reported once on stderr and read as `quiet`: the fallback itself cannot fail for it.
pub fn mode() -> Mode {
    if let Some(mode) = Mode::from_u8(MODE.load(Ordering::Relaxed)) {
        return mode;
    }
    let value = std::env::var("REGEN_FALLBACK").unwrap_or_default();
    let mode = Mode::parse(&value).unwrap_or_else(|| {
        eprintln!("regen: REGEN_FALLBACK={value:?} is not one of quiet, warn, raise; the CPU fallback stays quiet");
        Mode::Quiet
    });
    // A concurrent set_mode wins over the environment.
    let _ = MODE.compare_exchange(0, mode as u8, Ordering::Relaxed, Ordering::Relaxed);
    Mode::from_u8(MODE.load(Ordering::Relaxed)).unwrap_or(mode)
}

/// Sets the mode; returns the previous one.
pub fn set_mode(mode: Mode) -> Mode {
    let previous = self::mode();
    MODE.store(mode as u8, Ordering::Relaxed);
    previous
}

/// What the fallback should do about one call of `op` it is about to serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Action {
    Run = 0,
    /// Run it, after a warning: the first fallback of this op in `warn` mode.
    WarnThenRun = 1,
    Raise = 2,
}

/// Counts a fallback of `op` and says what to do: in `raise` mode the call is refused (and not
/// counted, since nothing ran on CPU).
pub fn called(op: &str) -> Action {
    let mode = mode();
    if mode == Mode::Raise {
        return Action::Raise;
    }
    let Ok(mut calls) = CALLS.lock() else { return Action::Run };
    let count = calls.entry(op.to_owned()).or_insert(0);
    *count += 1;
    if mode == Mode::Warn && *count == 1 { Action::WarnThenRun } else { Action::Run }
}

/// How many calls of `op` the CPU fallback served.
pub fn calls(op: &str) -> u64 {
    CALLS.lock().map(|c| c.get(op).copied().unwrap_or(0)).unwrap_or(0)
}

/// Every op the CPU fallback served, with its count, by name.
pub fn report() -> Vec<(String, u64)> {
    CALLS.lock().map(|c| c.iter().map(|(k, v)| (k.clone(), *v)).collect()).unwrap_or_default()
}

/// Forgets the counts (a test or a profiling run starts from zero).
pub fn reset() {
    if let Ok(mut c) = CALLS.lock() {
        c.clear();
    }
}

/// Ops the CPU fallback itself runs on the device to move tensors between CPU and the device:
/// routed to the fallback, one would call the fallback from inside itself. Each with why.
pub const NEVER_ROUTED: &[(&str, &str)] = &[
    ("empty.memory_format", "the fallback makes the device's results with it"),
    ("empty_strided", "the fallback makes the device's results with it (Tensor.to)"),
    ("copy_", "the fallback copies inputs to CPU and results back with it"),
    ("_copy_from", "copy_ between CPU and the device runs it"),
    ("_copy_from_and_resize", "the fallback writes in-place and out= results back with it"),
    ("resize_", "the fallback resizes out= tensors with it"),
];

/// What became of one name of `<DEVICE>_FALLBACK_OPS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routing {
    /// The generated registrations asked about it and registered the fallback for it.
    Routed,
    /// One of [`NEVER_ROUTED`]: its kernel stays.
    Refused,
    /// Nothing asked: the backend registers no kernel of that name (or none was loaded yet).
    Unasked,
}

struct Routes {
    /// The environment variable read.
    var: String,
    names: Mutex<BTreeMap<String, Routing>>,
}

static ROUTES: OnceLock<Routes> = OnceLock::new();

/// The names of a `<DEVICE>_FALLBACK_OPS` value: `name.overload` keys separated by commas or
/// white space, `aten::` optional.
pub fn parse_routes(value: &str) -> Vec<String> {
    value
        .split(|c: char| c == ',' || c.is_whitespace())
        .map(|n| n.trim().trim_start_matches("aten::"))
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Asked by the generated registrations (templates/register.cpp) for each op before they register
/// its kernel, with the variable that names the ops to route (`<DEVICE>_FALLBACK_OPS`, read at the
/// first call): true when `op` is named there, so the fallback is registered for it in place of
/// its kernel. [`NEVER_ROUTED`] ops keep their kernels.
pub fn routed(var: &str, op: &str) -> bool {
    let routes = ROUTES.get_or_init(|| {
        let names = parse_routes(&std::env::var(var).unwrap_or_default());
        Routes { var: var.to_owned(), names: Mutex::new(names.into_iter().map(|n| (n, Routing::Unasked)).collect()) }
    });
    let Ok(mut names) = routes.names.lock() else { return false };
    let Some(state) = names.get_mut(op) else { return false };
    *state = if NEVER_ROUTED.iter().any(|(name, _)| *name == op) { Routing::Refused } else { Routing::Routed };
    *state == Routing::Routed
}

/// The variable read and each name it held with what became of it; None before any registration
/// asked (a backend without registered ops).
pub fn routes() -> Option<(String, Vec<(String, Routing)>)> {
    let routes = ROUTES.get()?;
    let names = routes.names.lock().map(|n| n.iter().map(|(k, v)| (k.clone(), *v)).collect()).unwrap_or_default();
    Some((routes.var.clone(), names))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_count_as_documented() {
        assert_eq!(Mode::parse("WARN"), Some(Mode::Warn));
        assert_eq!(Mode::parse("raise"), Some(Mode::Raise));
        assert_eq!(Mode::parse(""), Some(Mode::Quiet));
        assert_eq!(Mode::parse("loud"), None);
        for m in [Mode::Quiet, Mode::Warn, Mode::Raise] {
            assert_eq!(Mode::parse(m.name()), Some(m));
        }
        // One test drives the process-wide state, in order.
        set_mode(Mode::Warn);
        assert_eq!(called("test_only.a"), Action::WarnThenRun);
        assert_eq!(called("test_only.a"), Action::Run);
        assert_eq!(called("test_only.b"), Action::WarnThenRun);
        assert_eq!(set_mode(Mode::Raise), Mode::Warn);
        assert_eq!(called("test_only.a"), Action::Raise);
        set_mode(Mode::Quiet);
        assert_eq!(called("test_only.a"), Action::Run);
        assert_eq!(calls("test_only.a"), 3);
        assert_eq!(calls("test_only.c"), 0);
        assert!(report().contains(&("test_only.b".to_owned(), 1)));
        reset();
        assert_eq!(calls("test_only.a"), 0);
    }

    #[test]
    fn routes_parse_and_leave_the_fallbacks_own_ops_alone() {
        assert_eq!(
            parse_routes(" relu_, aten::native_layer_norm\tadd.out ,,"),
            ["relu_", "native_layer_norm", "add.out"]
        );
        assert!(parse_routes("").is_empty());
        // One test owns the process-wide table; the variable is this test's own.
        // SAFETY: no other thread of this test binary reads this variable.
        unsafe { std::env::set_var("REGEN_TEST_ONLY_FALLBACK_OPS", "relu_,copy_,no_such.op") };
        assert!(routed("REGEN_TEST_ONLY_FALLBACK_OPS", "relu_"));
        assert!(!routed("REGEN_TEST_ONLY_FALLBACK_OPS", "copy_"));
        assert!(!routed("REGEN_TEST_ONLY_FALLBACK_OPS", "add.out"));
        let (var, names) = routes().unwrap();
        assert_eq!(var, "REGEN_TEST_ONLY_FALLBACK_OPS");
        assert_eq!(
            names,
            [
                ("copy_".to_owned(), Routing::Refused),
                ("no_such.op".to_owned(), Routing::Unasked),
                ("relu_".to_owned(), Routing::Routed)
            ]
        );
    }
}
