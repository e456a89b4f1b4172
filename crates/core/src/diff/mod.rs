//! Compares two op models (an old and a new PyTorch release), keyed by `name.overload`: added
//! and removed ops, likely renames, schema changes at argument level, C++-only changes (with
//! pure re-spellings told apart), flag flips, and what it all means for a backend: the ops a
//! config makes generation register, judged by their Rust methods (`backend.rs`), a summary and
//! a verdict (`report.rs`).
//!
//! "Your backend" is what generation selects: [`Config::select_reporting`] runs on both headers,
//! so an op the config excludes (a family, a name) is never yours here either. Without a config
//! it is the default one: every required op registered, as a skeleton.

mod backend;
mod report;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::abi::normalize;
use crate::config::Config;
use crate::ir::{Argument, CppIndirection, CppType, Model, Op};

pub use backend::{Backend, BackendMode, Break, ConfigError, OpNote};
pub use report::{BackendSummary, Color, FailOn, Format, Summary, Verdict};

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

/// A fact about each header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Sides<T> {
    pub old: T,
    pub new: T,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SchemaChange {
    pub op: String,
    pub old: String,
    pub new: String,
    pub details: Vec<ArgChange>,
    /// The C++ signature a kernel is registered with changed (beyond spelling).
    pub cpp_signature_changed: bool,
    /// The generated Rust method (name, parameter and result types) changed.
    pub rust_signature_changed: bool,
    /// Whether the op is required in each header.
    pub required: Sides<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CppChange {
    pub op: String,
    pub old: String,
    pub new: String,
    /// Only the spelling changed (`c10::optional` → `::std::optional`, `Tensor` → `at::Tensor`).
    pub spelling_only: bool,
    /// The generated Rust method changed (`SymInt` → `int` does not: both are `i64`).
    pub rust_signature_changed: bool,
    /// Whether the op is required in each header.
    pub required: Sides<bool>,
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

/// Which header a side of the diff is: where it was read, the torch release when that is known,
/// and the digest of its bytes (the one the `@generated` lines of generated files name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeaderId {
    pub path: String,
    /// From the installed torch's `version.py` next to the header, or a `torch-X.Y.Z` directory
    /// on its path (this repository's fixtures); `None` when neither says.
    pub release: Option<String>,
    pub sha256: String,
}

impl HeaderId {
    /// The identity of the header read from `path` as `bytes`.
    pub fn of(path: &Path, bytes: &[u8]) -> HeaderId {
        let sha256 = Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect();
        HeaderId { path: path.display().to_string(), release: release_of(path), sha256 }
    }

    /// The release, or the path when the release is unknown.
    pub fn name(&self) -> &str {
        self.release.as_deref().unwrap_or(&self.path)
    }
}

/// The torch release a header belongs to, if its location says: a wheel installs it as
/// `torch/include/ATen/RegistrationDeclarations.h` beside `torch/version.py`; `cargo xtask
/// fixture` and `regen`'s docs keep headers in `torch-X.Y.Z/` directories.
fn release_of(path: &Path) -> Option<String> {
    fn dir_named<'p>(p: Option<&'p Path>, name: &str) -> Option<&'p Path> {
        p.filter(|p| p.file_name().is_some_and(|n| n == name))
    }
    let aten = dir_named(path.parent(), "ATen");
    let torch = dir_named(dir_named(aten.and_then(Path::parent), "include").and_then(Path::parent), "torch");
    let installed = torch.and_then(|torch| std::fs::read_to_string(torch.join("version.py")).ok()).and_then(|text| {
        text.lines().find_map(|line| {
            let value = line.strip_prefix("__version__")?.trim_start().strip_prefix('=')?.trim();
            let unquoted = value.trim_matches(|c| c == '\'' || c == '"');
            (unquoted.len() + 2 == value.len() && is_release(unquoted)).then(|| unquoted.to_owned())
        })
    });
    installed.or_else(|| {
        path.ancestors().skip(1).find_map(|dir| {
            let name = dir.file_name()?.to_str()?;
            let version = name.strip_prefix("torch-")?.split('-').next()?;
            is_release(version).then(|| version.to_owned())
        })
    })
}

/// `2.15.0`, `2.15.0+cpu`, `2.16.0a0+git1234`: starts with a digit, no spaces or quotes.
fn is_release(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '_'))
}

/// Everything two headers differ in, and what that means for a backend.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Diff {
    /// The headers compared, when the caller names them ([`Diff::with_headers`]).
    #[serde(skip)]
    pub headers: Option<Sides<HeaderId>>,
    pub added: Vec<String>,
    /// The added ops the new header requires (a subset of `added`).
    pub added_required: Vec<String>,
    pub removed: Vec<String>,
    /// The removed ops the old header required (a subset of `removed`).
    pub removed_required: Vec<String>,
    pub became_required: Vec<String>,
    pub no_longer_required: Vec<String>,
    pub changed: Vec<SchemaChange>,
    pub cpp_changed: Vec<CppChange>,
    pub dispatch_flipped: Vec<Flip>,
    pub renamed: Vec<Rename>,
    /// What the bump means for the backend generation makes with a config (the default one
    /// unless [`Diff::with_config`] names another).
    pub backend: Backend,
}

/// The trait method generation writes for an op, as the kernel implementing it sees it:
/// `fn name(&self, TensorRef<'_>, i64) -> Result<Tensor>` (parameter names are the
/// implementor's own). `None` when the op does not cross the ABI.
pub fn rust_method(op: &Op) -> Option<String> {
    let abi = crate::abi::lower_abi(op).ok()?;
    let params: Vec<&str> = abi.args.iter().map(|a| a.kind.rust_safe()).collect();
    let results: Vec<&str> = abi.returns.iter().filter_map(|r| r.kind.rust_safe_type()).collect();
    let result = match results.as_slice() {
        [one] => (*one).to_owned(),
        many => format!("({})", many.join(", ")),
    };
    let mut text = format!("fn {}(&self", op.rust_name);
    for p in params {
        text.push_str(", ");
        text.push_str(p);
    }
    text.push_str(&format!(") -> Result<{result}>"));
    Some(text)
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
fn renames(old: &BTreeMap<&str, &Op>, new: &BTreeMap<&str, &Op>, removed: &[String], added: &[String]) -> Vec<Rename> {
    let shape = |op: &Op| {
        let args: Vec<String> = op.schema.arguments.iter().map(arg_type).collect();
        (op.schema.name.to_string(), args, op.schema.returns.items.iter().map(|r| r.ty.to_string()).collect::<Vec<_>>())
    };
    // Each added op's shape once: a bump removes and adds hundreds of ops.
    let added: Vec<(&String, _)> = added.iter().filter_map(|a| Some((a, shape(new.get(a.as_str())?)))).collect();
    let mut out = Vec::new();
    for r in removed {
        let Some(old_op) = old.get(r.as_str()) else { continue };
        let wanted = shape(old_op);
        if let Some((a, _)) = added.iter().find(|(_, s)| *s == wanted) {
            out.push(Rename { old: r.clone(), new: (*a).clone() });
        }
    }
    out
}

/// Compares two models; every list is sorted by op key. The backend is the default config's.
pub fn diff_models(old: &Model, new: &Model) -> Diff {
    diff_with_config(old, new, &Config::default())
}

/// Compares two models and judges the backend `config` generates for each.
pub fn diff_with_config(old: &Model, new: &Model, config: &Config) -> Diff {
    let old_ops: BTreeMap<&str, &Op> = old.ops.iter().map(|op| (op.key.as_str(), op)).collect();
    let new_ops: BTreeMap<&str, &Op> = new.ops.iter().map(|op| (op.key.as_str(), op)).collect();
    let mut d = Diff {
        added: new_ops.keys().filter(|k| !old_ops.contains_key(*k)).map(|k| k.to_string()).collect(),
        removed: old_ops.keys().filter(|k| !new_ops.contains_key(*k)).map(|k| k.to_string()).collect(),
        ..Diff::default()
    };
    d.added_required =
        d.added.iter().filter(|k| new_ops.get(k.as_str()).is_some_and(|op| op.is_required())).cloned().collect();
    d.removed_required =
        d.removed.iter().filter(|k| old_ops.get(k.as_str()).is_some_and(|op| op.is_required())).cloned().collect();
    for (key, o) in &old_ops {
        let Some(n) = new_ops.get(key) else { continue };
        let required = Sides { old: o.is_required(), new: n.is_required() };
        if !required.old && required.new {
            d.became_required.push(key.to_string());
        }
        if required.old && !required.new {
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
        // The ABI is read from the schema and the C++ types up to spelling: a re-spelling (most
        // entries of a bump) keeps the Rust method.
        let respelled = cpp_same_up_to_spelling && o.schema_text == n.schema_text;
        let rust_signature_changed = !respelled && rust_method(o) != rust_method(n);
        if o.schema_text != n.schema_text {
            d.changed.push(SchemaChange {
                op: key.to_string(),
                old: o.schema_text.clone(),
                new: n.schema_text.clone(),
                details: arg_changes(o, n),
                cpp_signature_changed: !cpp_same_up_to_spelling,
                rust_signature_changed,
                required,
            });
        } else {
            d.cpp_changed.push(CppChange {
                op: key.to_string(),
                old: cpp_text(o),
                new: cpp_text(n),
                spelling_only: cpp_same_up_to_spelling,
                rust_signature_changed,
                required,
            });
        }
    }
    d.renamed = renames(&old_ops, &new_ops, &d.removed, &d.added);
    d.backend = backend::judge(&d, config, old, new);
    d
}

impl Diff {
    /// The same comparison judged for the backend `config` generates (instead of the default
    /// config's): what generation selects from each header decides which ops are yours.
    pub fn with_config(mut self, config: &Config, old: &Model, new: &Model) -> Self {
        self.backend = backend::judge(&self, config, old, new);
        self
    }

    /// Names the two headers, for the report's title and the JSON's `old`/`new`.
    pub fn with_headers(mut self, old: HeaderId, new: HeaderId) -> Self {
        self.headers = Some(Sides { old, new });
        self
    }

    /// Whether the headers declare the same ops with the same schemas, C++ and flags.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.cpp_changed.is_empty()
            && self.became_required.is_empty()
            && self.no_longer_required.is_empty()
            && self.dispatch_flipped.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_from_directory_names() {
        let release = |p: &str| release_of(Path::new(p));
        assert_eq!(release("torch-2.15.0/RegistrationDeclarations.h").as_deref(), Some("2.15.0"));
        assert_eq!(release("fixtures/torch-2.4.1/RegistrationDeclarations.h").as_deref(), Some("2.4.1"));
        // An unpacked wheel keeps its name's tail out of the release.
        assert_eq!(
            release("/tmp/torch-2.7.1-cp312-cp312-linux_x86_64/torch/include/ATen/RegistrationDeclarations.h")
                .as_deref(),
            Some("2.7.1")
        );
        assert_eq!(release("RegistrationDeclarations.h"), None);
        assert_eq!(release("new/RegistrationDeclarations.h"), None);
        assert_eq!(release("torch-nightly/RegistrationDeclarations.h"), None);
    }
}
