//! Compares two op models (an old and a new PyTorch release), keyed by `name.overload`: added
//! and removed ops, likely renames, schema changes at argument level, C++-only changes (with
//! pure re-spellings told apart), flag flips, and what it all means for a backend's config.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::abi::normalize;
use crate::config::Config;
use crate::ir::{Argument, CppIndirection, CppType, Model, Op};

/// One argument-level difference between two schemas of an op.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum ArgChange {
    Added { name: String, r#type: String, default: Option<String> },
    Removed { name: String, r#type: String },
    Renamed { old: String, new: String },
    Retyped { name: String, old: String, new: String },
    DefaultChanged { name: String, old: Option<String>, new: Option<String> },
    AnnotationChanged { name: String, old: Option<String>, new: Option<String> },
    KwargOnlyChanged { name: String, kwarg_only: bool },
    Moved { name: String, old_position: usize, new_position: usize },
    ReturnsChanged { old: String, new: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SchemaChange {
    pub op: String,
    pub old: String,
    pub new: String,
    pub details: Vec<ArgChange>,
    /// The C++ signature a kernel must have changed (beyond spelling).
    pub breaking: bool,
    pub required: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CppChange {
    pub op: String,
    pub old: String,
    pub new: String,
    /// Only the spelling changed (`c10::optional` → `::std::optional`, `Tensor` → `at::Tensor`).
    pub spelling_only: bool,
    pub required: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rename {
    pub old: String,
    pub new: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Flip {
    pub op: String,
    pub old: bool,
    pub new: bool,
}

/// What a version bump means for a backend with a `regen.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ConfigImpact {
    /// Ops the backend implements whose kernel signature changed, or that are gone.
    pub implemented_breaking: Vec<String>,
    /// Newly required ops the backend does not implement (they need a kernel or the fallback).
    pub newly_required_unimplemented: Vec<String>,
    /// Ops the backend implements whose C++ signature changed while the Rust method the backend
    /// writes did not (`SymInt` → `int`, `Tensor &` → `const Tensor &`): regenerating is enough.
    pub implemented_regenerate: Vec<String>,
    /// Ops of `optional` the new header does not have: not generated there, not an error.
    pub optional_absent: Vec<String>,
    /// Config entries naming ops the new header no longer has, with the likely replacement.
    pub missing_entries: Vec<MissingEntry>,
    /// The config's fallback policy (`cpu` or `error`).
    pub fallback: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MissingEntry {
    pub op: String,
    pub likely: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Diff {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub became_required: Vec<String>,
    pub no_longer_required: Vec<String>,
    pub changed: Vec<SchemaChange>,
    pub cpp_changed: Vec<CppChange>,
    pub dispatch_flipped: Vec<Flip>,
    pub renamed: Vec<Rename>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<ConfigImpact>,
}

/// What the generated Rust method of an op looks like to the kernel that implements it: the
/// kinds of its parameters and results (names are the implementor's own). `None` when the op does
/// not cross the ABI.
fn rust_signature(op: &Op) -> Option<(Vec<crate::abi::ArgKind>, Vec<crate::abi::RetKind>)> {
    let abi = crate::abi::lower_abi(op).ok()?;
    Some((abi.args.iter().map(|a| a.kind).collect(), abi.returns.into_iter().map(|r| r.kind).collect()))
}

/// `const` + the type without namespaces + `&`/`*`: equal for pure re-spellings only.
fn canonical(ty: &CppType) -> String {
    let mut s = String::new();
    if ty.is_const {
        s.push_str("const ");
    }
    s.push_str(&normalize(ty));
    match ty.indirection {
        CppIndirection::Reference => s.push_str(" &"),
        CppIndirection::Pointer => s.push_str(" *"),
        CppIndirection::None => {}
    }
    s
}

fn cpp_text(op: &Op) -> String {
    let params: Vec<String> = op.cpp.params.iter().map(|p| format!("{} {}", p.ty.spelling, p.name)).collect();
    format!("{} {}({})", op.cpp.return_type.spelling, op.cpp.name, params.join(", "))
}

/// The C++ signature up to spelling (parameter names excluded: they do not affect registration).
fn cpp_canonical(op: &Op) -> Vec<String> {
    std::iter::once(canonical(&op.cpp.return_type)).chain(op.cpp.params.iter().map(|p| canonical(&p.ty))).collect()
}

fn arg_type(a: &Argument) -> String {
    a.ty.display_with(a.annotation.as_ref()).to_string()
}

fn arg_changes(old: &Op, new: &Op) -> Vec<ArgChange> {
    let (oa, na) = (&old.schema.arguments, &new.schema.arguments);
    let mut out = Vec::new();
    let find = |args: &[Argument], name: &str| args.iter().position(|a| a.name == name);
    let mut renamed_new: Vec<usize> = Vec::new();
    for (i, a) in oa.iter().enumerate() {
        match find(na, &a.name) {
            Some(j) => {
                let b = &na[j];
                if a.ty != b.ty {
                    out.push(ArgChange::Retyped {
                        name: a.name.to_string(),
                        old: a.ty.to_string(),
                        new: b.ty.to_string(),
                    });
                }
                if a.annotation != b.annotation {
                    out.push(ArgChange::AnnotationChanged {
                        name: a.name.to_string(),
                        old: a.annotation.as_ref().map(ToString::to_string),
                        new: b.annotation.as_ref().map(ToString::to_string),
                    });
                }
                if a.default != b.default {
                    out.push(ArgChange::DefaultChanged {
                        name: a.name.to_string(),
                        old: a.default.as_ref().map(ToString::to_string),
                        new: b.default.as_ref().map(ToString::to_string),
                    });
                }
                if a.kwarg_only != b.kwarg_only {
                    out.push(ArgChange::KwargOnlyChanged { name: a.name.to_string(), kwarg_only: b.kwarg_only });
                }
                if i != j {
                    out.push(ArgChange::Moved { name: a.name.to_string(), old_position: i, new_position: j });
                }
            }
            // Same position, same type, new name: a rename rather than a removal and an addition.
            None => match na.get(i).filter(|b| find(oa, &b.name).is_none() && arg_type(b) == arg_type(a)) {
                Some(b) => {
                    renamed_new.push(i);
                    out.push(ArgChange::Renamed { old: a.name.to_string(), new: b.name.to_string() });
                }
                None => out.push(ArgChange::Removed { name: a.name.to_string(), r#type: arg_type(a) }),
            },
        }
    }
    for (j, b) in na.iter().enumerate() {
        if find(oa, &b.name).is_none() && !renamed_new.contains(&j) {
            out.push(ArgChange::Added {
                name: b.name.to_string(),
                r#type: arg_type(b),
                default: b.default.as_ref().map(ToString::to_string),
            });
        }
    }
    if old.schema.returns != new.schema.returns {
        let text = |op: &Op| op.schema_text.rsplit_once(" -> ").map_or(String::new(), |(_, r)| r.to_owned());
        out.push(ArgChange::ReturnsChanged { old: text(old), new: text(new) });
    }
    out
}

/// Removed ops whose overload was renamed: an added op with the same name and the same
/// argument and return types.
fn renames(old: &Model, new: &Model, removed: &[String], added: &[String]) -> Vec<Rename> {
    let shape = |op: &Op| {
        let args: Vec<String> = op.schema.arguments.iter().map(arg_type).collect();
        (op.schema.name.to_string(), args, op.schema.returns.items.iter().map(|r| r.ty.to_string()).collect::<Vec<_>>())
    };
    let mut out = Vec::new();
    for r in removed {
        let Some(old_op) = old.find(r) else { continue };
        let wanted = shape(old_op);
        if let Some(a) = added.iter().find(|a| new.find(a).is_some_and(|op| shape(op) == wanted)) {
            out.push(Rename { old: r.clone(), new: a.clone() });
        }
    }
    out
}

/// Compares two models; every list is sorted by op key.
pub fn diff_models(old: &Model, new: &Model) -> Diff {
    let old_ops: BTreeMap<&str, &Op> = old.ops.iter().map(|op| (op.key.as_str(), op)).collect();
    let new_ops: BTreeMap<&str, &Op> = new.ops.iter().map(|op| (op.key.as_str(), op)).collect();
    let mut d = Diff {
        added: new_ops.keys().filter(|k| !old_ops.contains_key(*k)).map(|k| k.to_string()).collect(),
        removed: old_ops.keys().filter(|k| !new_ops.contains_key(*k)).map(|k| k.to_string()).collect(),
        ..Diff::default()
    };
    for (key, o) in &old_ops {
        let Some(n) = new_ops.get(key) else { continue };
        let required = o.is_required() || n.is_required();
        if !o.is_required() && n.is_required() {
            d.became_required.push(key.to_string());
        }
        if o.is_required() && !n.is_required() {
            d.no_longer_required.push(key.to_string());
        }
        if o.dispatch != n.dispatch {
            d.dispatch_flipped.push(Flip { op: key.to_string(), old: o.dispatch, new: n.dispatch });
        }
        // Most ops are unchanged between releases: compare spellings before building any text.
        let cpp_identical = o.cpp.return_type.spelling == n.cpp.return_type.spelling
            && o.cpp.name == n.cpp.name
            && o.cpp.params.len() == n.cpp.params.len()
            && o.cpp.params.iter().zip(&n.cpp.params).all(|(a, b)| a.name == b.name && a.ty.spelling == b.ty.spelling);
        if cpp_identical && o.schema_text == n.schema_text {
            continue;
        }
        let cpp_same_up_to_spelling = cpp_identical || cpp_canonical(o) == cpp_canonical(n);
        if o.schema_text != n.schema_text {
            d.changed.push(SchemaChange {
                op: key.to_string(),
                old: o.schema_text.clone(),
                new: n.schema_text.clone(),
                details: arg_changes(o, n),
                breaking: !cpp_same_up_to_spelling,
                required,
            });
        } else {
            d.cpp_changed.push(CppChange {
                op: key.to_string(),
                old: cpp_text(o),
                new: cpp_text(n),
                spelling_only: cpp_same_up_to_spelling,
                required,
            });
        }
    }
    d.renamed = renames(old, new, &d.removed, &d.added);
    d
}

impl Diff {
    /// Changes that break a backend built for the old release: a required op removed or its
    /// kernel signature changed, or an op that became required.
    pub fn breaking_count(&self, old: &Model) -> usize {
        let removed_required = self.removed.iter().filter(|k| old.find(k).is_some_and(Op::is_required)).count();
        removed_required
            + self.changed.iter().filter(|c| c.breaking && c.required).count()
            + self.cpp_changed.iter().filter(|c| !c.spelling_only && c.required).count()
            + self.became_required.len()
            + self.config.as_ref().map_or(0, |c| c.implemented_breaking.len() + c.missing_entries.len())
    }

    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.cpp_changed.is_empty()
            && self.became_required.is_empty()
            && self.no_longer_required.is_empty()
            && self.dispatch_flipped.is_empty()
    }

    /// Fills in what the bump means for a backend configured by `config`. Its kernels are Rust
    /// methods of the generated trait, so a changed C++ signature breaks one only when the method's
    /// signature changes with it; the C++ wrapper is regenerated from the new header either way.
    pub fn with_config(mut self, config: &Config, old: &Model, new: &Model) -> Self {
        let implemented: Vec<&str> =
            config.implement.as_ref().map(|l| l.iter().map(|n| n.name.as_str()).collect()).unwrap_or_default();
        let optional = |op: &str| config.optional.iter().any(|n| n.name == op);
        let mut impact = ConfigImpact { fallback: config.fallback.as_str().into(), ..ConfigImpact::default() };
        for op in &implemented {
            let signature_changed = self.changed.iter().any(|c| c.op == *op && c.breaking)
                || self.cpp_changed.iter().any(|c| c.op == *op && !c.spelling_only);
            // An implemented op is in the old header unless it is optional (the config was
            // checked against it).
            if new.find(op).is_none() {
                if optional(op) {
                    impact.optional_absent.push(op.to_string());
                } else {
                    impact.implemented_breaking.push(op.to_string());
                }
            } else if signature_changed {
                let same_rust = match (old.find(op), new.find(op)) {
                    (Some(o), Some(n)) => rust_signature(o).is_some_and(|sig| Some(sig) == rust_signature(n)),
                    _ => false,
                };
                if same_rust {
                    impact.implemented_regenerate.push(op.to_string());
                } else {
                    impact.implemented_breaking.push(op.to_string());
                }
            }
        }
        let newly_required =
            self.became_required.iter().chain(self.added.iter().filter(|k| new.find(k).is_some_and(Op::is_required)));
        impact.newly_required_unimplemented =
            newly_required.filter(|k| !implemented.contains(&k.as_str())).cloned().collect();
        impact.newly_required_unimplemented.sort();
        // As in generation: excluding an op CPU has no kernel for is never an unknown name, as
        // those differ by release.
        let excluded = config.exclude.iter().filter(|n| crate::policy::cpu_less(&n.name).is_none());
        let entries = config.implement.iter().flatten().chain(excluded).chain(&config.autograd);
        for n in entries {
            if new.find(&n.name).is_none() && !optional(&n.name) {
                let likely = self.renamed.iter().find(|r| r.old == n.name).map(|r| r.new.clone());
                impact.missing_entries.push(MissingEntry { op: n.name.clone(), likely });
            }
        }
        impact.implemented_breaking.sort();
        impact.implemented_regenerate.sort();
        self.config = Some(impact);
        self
    }

    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("the diff serializes");
        text.push('\n');
        text
    }

    /// A report for terminals (`color`: ANSI colours) or pull requests (`markdown`).
    pub fn to_report(&self, old_name: &str, new_name: &str, markdown: bool, color: bool) -> String {
        let paint = |code: &str, s: &str| if color { format!("\x1b[{code}m{s}\x1b[0m") } else { s.to_owned() };
        let mut out = String::new();
        let heading = |out: &mut String, title: &str, n: usize| {
            if markdown {
                let _ = writeln!(out, "\n### {title} ({n})\n");
            } else {
                let _ = writeln!(out, "\n{} ({n})", paint("1", title));
            }
        };
        let item = |out: &mut String, s: &str| {
            if markdown {
                let _ = writeln!(out, "- {s}");
            } else {
                let _ = writeln!(out, "  {s}");
            }
        };
        let code = |s: &str| if markdown { format!("`{s}`") } else { s.to_owned() };
        if markdown {
            let _ = writeln!(out, "## regen diff: {old_name} → {new_name}");
        } else {
            let _ = writeln!(out, "regen diff: {old_name} -> {new_name}");
        }
        let breaking_changes: Vec<&SchemaChange> = self.changed.iter().filter(|c| c.breaking && c.required).collect();
        let _ = writeln!(
            out,
            "{} added, {} removed, {} schema changes ({} breaking for required ops), {} C++-only changes ({} spelling only), {} became required, {} no longer required",
            self.added.len(),
            self.removed.len(),
            self.changed.len(),
            breaking_changes.len(),
            self.cpp_changed.len(),
            self.cpp_changed.iter().filter(|c| c.spelling_only).count(),
            self.became_required.len(),
            self.no_longer_required.len()
        );
        if let Some(c) = &self.config {
            heading(&mut out, "Your backend", c.implemented_breaking.len() + c.missing_entries.len());
            for op in &c.implemented_breaking {
                item(&mut out, &format!("{} your kernel for {} must change", paint("31", "BREAKS"), code(op)));
            }
            for op in &c.implemented_regenerate {
                item(
                    &mut out,
                    &format!(
                        "{} {}: its C++ signature changed, your Rust kernel's did not (regenerated from the header)",
                        paint("33", "REGEN"),
                        code(op)
                    ),
                );
            }
            for op in &c.optional_absent {
                item(
                    &mut out,
                    &format!("{} {} is not in this release (optional: not generated)", paint("33", "ABSENT"), code(op)),
                );
            }
            for m in &c.missing_entries {
                let hint = m.likely.as_ref().map(|l| format!(" (likely renamed to {})", code(l))).unwrap_or_default();
                item(
                    &mut out,
                    &format!("{} regen.toml names {}, which is gone{hint}", paint("31", "CONFIG"), code(&m.op)),
                );
            }
            let fate = if c.fallback == "cpu" { "run through the CPU fallback" } else { "raise NotImplementedError" };
            let _ = writeln!(
                out,
                "{} newly required op(s) you do not implement will {fate}",
                c.newly_required_unimplemented.len()
            );
            for op in &c.newly_required_unimplemented {
                item(&mut out, &code(op));
            }
        }
        let list = |out: &mut String, title: &str, keys: &[String]| {
            if !keys.is_empty() {
                heading(out, title, keys.len());
                for k in keys {
                    item(out, &code(k));
                }
            }
        };
        list(&mut out, "Became required", &self.became_required);
        list(&mut out, "No longer required", &self.no_longer_required);
        if !self.renamed.is_empty() {
            heading(&mut out, "Likely renamed", self.renamed.len());
            for r in &self.renamed {
                item(&mut out, &format!("{} → {}", code(&r.old), code(&r.new)));
            }
        }
        list(&mut out, "Removed", &self.removed);
        list(&mut out, "Added", &self.added);
        if !self.changed.is_empty() {
            heading(&mut out, "Schema changes", self.changed.len());
            for c in &self.changed {
                let tag = if c.breaking && c.required { paint("31", " [breaking]") } else { String::new() };
                let details: Vec<String> = c.details.iter().map(describe).collect();
                item(&mut out, &format!("{}{tag}: {}", code(&c.op), details.join("; ")));
            }
        }
        let real: Vec<&CppChange> = self.cpp_changed.iter().filter(|c| !c.spelling_only).collect();
        if !real.is_empty() {
            heading(&mut out, "C++ signature changes with the same schema", real.len());
            for c in real {
                item(&mut out, &format!("{}: {} → {}", code(&c.op), code(&c.old), code(&c.new)));
            }
        }
        let spelling = self.cpp_changed.len() - self.cpp_changed.iter().filter(|c| !c.spelling_only).count();
        if spelling > 0 {
            let _ = writeln!(
                out,
                "\n{spelling} declaration(s) re-spelled only (e.g. c10::optional → ::std::optional); no kernel changes needed."
            );
        }
        if !self.dispatch_flipped.is_empty() {
            heading(&mut out, "Dispatch flag flipped", self.dispatch_flipped.len());
            for f in &self.dispatch_flipped {
                item(&mut out, &format!("{}: dispatch {} → {}", code(&f.op), f.old, f.new));
            }
        }
        out
    }
}

fn describe(c: &ArgChange) -> String {
    let opt = |s: &Option<String>| s.clone().unwrap_or_else(|| "none".into());
    match c {
        ArgChange::Added { name, r#type, default } => match default {
            Some(d) => format!("added `{type} {name}={d}`"),
            None => format!("added `{type} {name}`"),
        },
        ArgChange::Removed { name, r#type } => format!("removed `{type} {name}`"),
        ArgChange::Renamed { old, new } => format!("renamed `{old}` to `{new}`"),
        ArgChange::Retyped { name, old, new } => format!("`{name}`: type {old} → {new}"),
        ArgChange::DefaultChanged { name, old, new } => format!("`{name}`: default {} → {}", opt(old), opt(new)),
        ArgChange::AnnotationChanged { name, old, new } => format!("`{name}`: annotation {} → {}", opt(old), opt(new)),
        ArgChange::KwargOnlyChanged { name, kwarg_only } => {
            format!("`{name}` is {}keyword-only", if *kwarg_only { "now " } else { "no longer " })
        }
        ArgChange::Moved { name, old_position, new_position } => {
            format!("`{name}` moved {old_position} → {new_position}")
        }
        ArgChange::ReturnsChanged { old, new } => format!("returns {old} → {new}"),
    }
}
