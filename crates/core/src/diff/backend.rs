//! What a bump means for one backend: generation's own selection ([`Config::select_reporting`])
//! from each header, compared op by op. The ops registered for the device are the backend's
//! kernels; each one in both headers is judged by its Rust method, the only thing the backend
//! writes (the C++ wrapper is regenerated from the header).

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use super::{Diff, Sides, rust_method};
use crate::config::Config;
use crate::diagnostic::Diagnostic;
use crate::ir::Model;
use crate::select::{Selection, SkipReason};

/// How the config makes its kernels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendMode {
    /// No `implement` list: every required op is registered, its trait method a default body
    /// that raises NotImplementedError until the backend overrides it (the default config).
    #[default]
    Skeleton,
    /// The ops of `implement` are registered (trait methods without a default body); every
    /// other required op reaches the fallback.
    Implement,
}

/// A kernel whose Rust method changed: the backend's code must change with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Break {
    pub op: String,
    pub old: String,
    pub new: String,
}

/// An op and why it is listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpNote {
    pub op: String,
    pub why: String,
    /// For an op the new header lacks: the added op it was likely renamed to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub likely: Option<String>,
}

/// An error generation reports for the config over a header (a name the header lacks, an op the
/// CPU fallback cannot serve, ...), at its position in the config.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigError {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

/// What the bump means for the backend a config generates. Every list is sorted by op key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Backend {
    /// The config's path as the caller names it; `None`: the default config.
    pub config: Option<String>,
    pub mode: BackendMode,
    /// The config's fallback policy (`cpu` or `error`).
    pub fallback: &'static str,
    /// How many ops generation registers for the device (the backend's kernels) in each header.
    pub kernels: Sides<usize>,
    /// Kernels in both headers whose Rust method changed.
    pub breaks: Vec<Break>,
    /// Kernels in both headers whose C++ signature changed while their Rust method did not
    /// (`SymInt` → `int`, `Tensor &` → `const Tensor &` outs): regenerating is enough.
    pub regenerate: Vec<String>,
    /// Kernels of the old header generation no longer registers: the trait method is gone.
    pub gone: Vec<OpNote>,
    /// `optional` ops the new header lacks or has only as a composite PyTorch decomposes: not
    /// generated there, not an error.
    pub absent: Vec<String>,
    /// Ops registered in the new header and not in the old one.
    pub arrived: Vec<OpNote>,
    /// Required ops of the new header that reach the fallback and did not before.
    pub newly_fallback: Vec<OpNote>,
    /// Required ops of the new header that generation skips (an excluded family or name, a type
    /// that cannot cross the ABI) and did not skip before: not the backend's.
    pub newly_skipped: Vec<OpNote>,
    /// What generation with the config reports as errors over each header (it writes nothing then).
    pub errors: Sides<Vec<ConfigError>>,
}

impl Backend {
    /// The ops whose kernels break: a changed Rust method, or gone.
    pub fn breaking_ops(&self) -> Vec<&str> {
        let mut ops: Vec<&str> =
            self.breaks.iter().map(|b| b.op.as_str()).chain(self.gone.iter().map(|g| g.op.as_str())).collect();
        ops.sort_unstable();
        ops
    }
}

/// One header's selection by key (hash sets: the lists come out sorted by key anyway).
#[derive(Default)]
struct Side<'s> {
    registered: FxHashSet<&'s str>,
    /// Selected, not registered: answered by the fallback.
    fallback: FxHashSet<&'s str>,
    skipped: FxHashMap<&'s str, &'s SkipReason>,
}

impl<'s> Side<'s> {
    fn of(selection: &'s Selection<'_>) -> Self {
        let mut side = Side::default();
        for s in &selection.selected {
            if s.registered {
                side.registered.insert(s.op.key.as_str());
            } else {
                side.fallback.insert(s.op.key.as_str());
            }
        }
        side.skipped = selection.skipped.iter().map(|(op, why)| (op.key.as_str(), why)).collect();
        side
    }
}

/// The keys of `set` that `keep` accepts, sorted.
fn sorted<'s>(set: impl IntoIterator<Item = &'s &'s str>, keep: impl Fn(&str) -> bool) -> Vec<&'s str> {
    let mut keys: Vec<&str> = set.into_iter().copied().filter(|k| keep(k)).collect();
    keys.sort_unstable();
    keys
}

/// Generation's selection from `model` and its errors: those of `select` and of `check_served`.
fn generation<'m>(config: &'m Config, model: &'m Model) -> (Selection<'m>, Vec<ConfigError>) {
    let (selection, mut errors) = config.select_reporting(model);
    errors.extend(config.check_served(&selection).err().unwrap_or_default());
    crate::diagnostic::sort(&mut errors);
    let errors = errors
        .into_iter()
        .map(|d: Diagnostic| ConfigError { line: d.line, column: d.col, message: d.message })
        .collect();
    (selection, errors)
}

pub(super) fn judge(d: &Diff, config: &Config, old: &Model, new: &Model) -> Backend {
    let (old_selection, old_errors) = generation(config, old);
    let (new_selection, new_errors) = generation(config, new);
    let (o, n) = (Side::of(&old_selection), Side::of(&new_selection));
    // Per changed op: (C++ signature changed beyond spelling, Rust method changed).
    let mut changes: FxHashMap<&str, (bool, bool)> = FxHashMap::default();
    for c in &d.changed {
        changes.insert(&c.op, (c.cpp_signature_changed, c.rust_signature_changed));
    }
    for c in &d.cpp_changed {
        changes.insert(&c.op, (!c.spelling_only, c.rust_signature_changed));
    }
    let (old_ops, new_ops): (FxHashMap<&str, _>, FxHashMap<&str, _>) = (
        old.ops.iter().map(|op| (op.key.as_str(), op)).collect(),
        new.ops.iter().map(|op| (op.key.as_str(), op)).collect(),
    );
    let mut b = Backend {
        config: None,
        mode: if config.implement.is_some() { BackendMode::Implement } else { BackendMode::Skeleton },
        fallback: config.fallback.as_str(),
        kernels: Sides { old: o.registered.len(), new: n.registered.len() },
        absent: new_selection.absent.clone(),
        errors: Sides { old: old_errors, new: new_errors },
        ..Backend::default()
    };
    b.absent.sort();
    for key in sorted(&o.registered, |k| n.registered.contains(k)) {
        match changes.get(key) {
            Some((_, true)) => b.breaks.push(Break {
                op: key.to_string(),
                old: old_ops.get(key).and_then(|op| rust_method(op)).unwrap_or_default(),
                new: new_ops.get(key).and_then(|op| rust_method(op)).unwrap_or_default(),
            }),
            Some((true, false)) => b.regenerate.push(key.to_string()),
            _ => {}
        }
    }
    // Where an op was before, for ops that reach a list of the new header.
    let before = |key: &str| -> String {
        match old_ops.get(key) {
            None => "new in this release".into(),
            Some(_) if o.registered.contains(key) => "registered before".into(),
            Some(_) if o.fallback.contains(key) => "answered by the fallback before".into(),
            Some(_) => match o.skipped.get(key) {
                Some(why) => format!("skipped before ({why})"),
                None => "became required".into(),
            },
        }
    };
    for key in sorted(&o.registered, |k| !n.registered.contains(k)) {
        if b.absent.iter().any(|a| a == key) {
            continue;
        }
        let (why, likely) = match new_ops.get(key) {
            None => {
                ("removed from the header".to_owned(), d.renamed.iter().find(|r| r.old == *key).map(|r| r.new.clone()))
            }
            Some(op) => match n.skipped.get(key) {
                Some(reason) => (format!("not generated: {reason}"), None),
                None if n.fallback.contains(key) => ("reaches the fallback".to_owned(), None),
                None if !op.is_required() => ("no longer required, so no longer generated".to_owned(), None),
                None => ("not registered".to_owned(), None),
            },
        };
        b.gone.push(OpNote { op: key.to_string(), why, likely });
    }
    for key in sorted(&n.registered, |k| !o.registered.contains(k)) {
        b.arrived.push(OpNote { op: key.to_string(), why: before(key), likely: None });
    }
    for key in sorted(&n.fallback, |k| !o.fallback.contains(k)) {
        b.newly_fallback.push(OpNote { op: key.to_string(), why: before(key), likely: None });
    }
    for key in sorted(n.skipped.keys(), |k| !o.skipped.contains_key(k) && !o.registered.contains(k)) {
        let why = format!("{}; {}", before(key), n.skipped[key]);
        b.newly_skipped.push(OpNote { op: key.to_string(), why, likely: None });
    }
    b
}
