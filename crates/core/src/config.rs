//! The backend config, `regen.toml`, and the selection it makes from the op model.
//!
//! Every field is optional. Without a config, every required op is generated as a skeleton:
//! a trait method with a default body that raises NotImplementedError, registered for the
//! device. With `implement = [...]`, those ops get required trait methods and registrations,
//! and every other op goes to the `fallback` policy. Ops that only some of the releases a
//! backend builds for have are listed in `optional` too: where the header lacks one, it is
//! reported as absent (selection.json, a build warning) instead of being an unknown name.

use std::ops::Range;

use rustc_hash::FxHashSet;
use serde::Deserialize;
use toml::Spanned;

use crate::diagnostic::{Diagnostic, column_at};
use crate::emit_manifest::JsonLayout;
use crate::ir::{Model, Op, OpClass};
use crate::policy;
use crate::rust_name::is_c_name;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// Run ops without a kernel on CPU (`at::native::cpu_fallback`) and copy results back.
    Cpu,
    /// Raise NotImplementedError naming the op.
    Error,
}

impl Fallback {
    /// The spelling in regen.toml.
    pub fn as_str(self) -> &'static str {
        match self {
            Fallback::Cpu => "cpu",
            Fallback::Error => "error",
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    device: Option<Spanned<String>>,
    dispatch_key: Option<Spanned<String>>,
    namespace: Option<Spanned<String>>,
    symbol_prefix: Option<Spanned<String>>,
    implement: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    exclude: Vec<Spanned<String>>,
    #[serde(default)]
    exclude_families: Vec<Spanned<String>>,
    fallback: Option<Spanned<String>>,
    #[serde(default)]
    autograd: Vec<Spanned<String>>,
    #[serde(default)]
    optional: Vec<Spanned<String>>,
    autocast: Option<Spanned<String>>,
    #[serde(default)]
    custom_op: Vec<crate::custom::RawCustomOp>,
    ops_json: Option<Spanned<String>>,
}

/// An op name as written in the config, with its position for diagnostics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub name: String,
    pub span: Range<usize>,
}

/// A parsed `regen.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The device name PrivateUse1 is renamed to (`torch.ones(2, device="regen")`).
    pub device: String,
    pub dispatch_key: String,
    /// The C++ namespace of the generated wrappers.
    pub namespace: String,
    /// Prefix of the Rust entry-point symbols (`{prefix}_{rust_name}`); distinct prefixes let
    /// two generated backends live in one process.
    pub symbol_prefix: String,
    /// `None`: skeleton mode, every selected op is registered.
    pub implement: Option<Vec<Named>>,
    pub exclude: Vec<Named>,
    pub exclude_families: Vec<Named>,
    pub fallback: Fallback,
    /// Where `fallback` is set, for diagnostics about what it cannot serve.
    fallback_span: Option<Range<usize>>,
    pub autograd: Vec<Named>,
    /// Ops of `implement` that some supported releases lack (a newer overload, a removed op):
    /// absent from the header, they are reported, not errors.
    pub optional: Vec<Named>,
    /// Whose autocast op lists the device registers (crate::autocast), if any.
    pub autocast: Option<crate::autocast::Autocast>,
    /// The backend's own ops (`[[custom_op]]`), in the order declared.
    pub custom_ops: Vec<crate::custom::CustomOp>,
    /// How ops.json is laid out (`ops_json = "compact"`, the default, or `"pretty"`).
    pub ops_json: JsonLayout,
    /// The config's text, for positions in diagnostics.
    source: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            device: "regen".into(),
            dispatch_key: "PrivateUse1".into(),
            namespace: "regen_generated".into(),
            symbol_prefix: default_symbol_prefix("regen"),
            implement: None,
            exclude: Vec::new(),
            exclude_families: Vec::new(),
            fallback: Fallback::Error,
            fallback_span: None,
            autograd: Vec::new(),
            optional: Vec::new(),
            autocast: None,
            custom_ops: Vec::new(),
            ops_json: JsonLayout::Compact,
            source: String::new(),
        }
    }
}

/// The entry-point prefix when regen.toml names none: `{device}_kernel`.
pub fn default_symbol_prefix(device: &str) -> String {
    format!("{device}_kernel")
}

pub(crate) fn diag_at(source: &str, span: &Range<usize>, message: String) -> Diagnostic {
    let start = span.start.min(source.len());
    let line_start = source[..start].rfind('\n').map_or(0, |k| k + 1);
    let line_end = source[start..].find('\n').map_or(source.len(), |k| start + k);
    // The line as shown, without a CRLF's `\r`; a position on that `\r` is the line's end.
    let line = source[line_start..line_end].trim_end_matches('\r');
    let line_no = source[..start].matches('\n').count() as u32 + 1;
    Diagnostic::error(line_no, column_at(line, start - line_start), message, line)
}

fn named(v: Vec<Spanned<String>>) -> Vec<Named> {
    v.into_iter().map(|s| Named { span: s.span(), name: s.into_inner() }).collect()
}

/// Names the generated C++ already uses at global scope: the C ABI's types and the marshalling
/// namespace. A config namespace equal to one of them would not compile.
pub const RESERVED_CPP_NAMES: &[&str] = &[
    "regen",
    "regen_tensor",
    "regen_tensor_list",
    "regen_scalar",
    "regen_scalar_list",
    "regen_opt_i64",
    "regen_opt_f64",
    "regen_opt_bool",
    "regen_i64_list",
    "regen_f64_list",
    "regen_bool_list",
    "regen_str",
    "regen_str_list",
    "regen_device",
    "regen_stream",
    "regen_tensor_sink",
    "regen_i64_sink",
    "regen_error",
    "at",
    "c10",
    "std",
    "torch",
];

fn is_c_identifier(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses `regen.toml`; every error is positioned in the config.
pub fn parse_config(source: &str) -> Result<Config, Vec<Diagnostic>> {
    let raw: RawConfig = toml::from_str(source).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        vec![diag_at(source, &span, e.message().trim_end().to_owned())]
    })?;
    let mut errors = Vec::new();
    let defaults = Config::default();
    let mut identifier = |v: Option<Spanned<String>>, default: String, what: &str| match v {
        Some(s) if is_c_name(s.get_ref()) => s.into_inner(),
        Some(s) if is_c_identifier(s.get_ref()) => {
            errors.push(diag_at(
                source,
                &s.span(),
                format!(
                    "{what} {:?} is a C++ keyword or a name C++ reserves; it names things in the generated C++",
                    s.get_ref()
                ),
            ));
            default
        }
        Some(s) => {
            errors.push(diag_at(source, &s.span(), format!("{what} must be a C identifier, found {:?}", s.get_ref())));
            default
        }
        None => default,
    };
    let prefix_span = raw.symbol_prefix.as_ref().or(raw.device.as_ref()).map_or(0..0, |s| s.span());
    let device = identifier(raw.device, defaults.device, "device");
    let dispatch_key = identifier(raw.dispatch_key, defaults.dispatch_key, "dispatch_key");
    let namespace_span = raw.namespace.as_ref().map(|n| n.span());
    let namespace = identifier(raw.namespace, defaults.namespace, "namespace");
    // Each device's entry points get their own prefix, so two backends never share a symbol.
    let symbol_prefix = identifier(raw.symbol_prefix, default_symbol_prefix(&device), "symbol_prefix");
    // The entry points are global C symbols (`{prefix}_{rust_name}`), where C reserves a leading `_`.
    if symbol_prefix.starts_with('_') {
        errors.push(diag_at(
            source,
            &prefix_span,
            format!(
                "the entry-point prefix {symbol_prefix:?} (symbol_prefix, else `{{device}}_kernel`) must start with a \
                 letter: entry points are global C symbols, where names starting with `_` are reserved"
            ),
        ));
    }
    if let Some(span) = namespace_span.filter(|_| RESERVED_CPP_NAMES.contains(&namespace.as_str())) {
        errors.push(diag_at(
            source,
            &span,
            format!(
                "namespace {namespace:?} is already a name in the generated C++ (the C ABI or a library namespace)"
            ),
        ));
    }

    let fallback_span = raw.fallback.as_ref().map(|f| f.span());
    let fallback = match raw.fallback {
        None => Fallback::Error,
        Some(s) => match s.get_ref().as_str() {
            "cpu" => Fallback::Cpu,
            "error" => Fallback::Error,
            other => {
                errors.push(diag_at(
                    source,
                    &s.span(),
                    format!("fallback must be \"cpu\" or \"error\", found {other:?}"),
                ));
                Fallback::Error
            }
        },
    };
    let autocast = raw.autocast.and_then(|s| {
        let parsed = crate::autocast::Autocast::parse(s.get_ref());
        if parsed.is_none() {
            errors.push(diag_at(source, &s.span(), format!("autocast must be \"cpu\", found {:?}", s.get_ref())));
        } else if dispatch_key != "PrivateUse1" {
            // ATen has an autocast key for PrivateUse1, not for a renamed dispatch key.
            errors.push(diag_at(
                source,
                &s.span(),
                format!("autocast needs dispatch_key = \"PrivateUse1\" (AutocastPrivateUse1), found {dispatch_key:?}"),
            ));
        }
        parsed
    });
    let exclude_families = named(raw.exclude_families);
    let families = policy::families();
    for f in &exclude_families {
        if !families.contains(&f.name.as_str()) {
            errors.push(diag_at(
                source,
                &f.span,
                format!("unknown family {:?}; the families are: {}", f.name, families.join(", ")),
            ));
        }
    }
    let optional = named(raw.optional);
    let implemented: Vec<&str> = raw.implement.iter().flatten().map(|s| s.get_ref().as_str()).collect();
    for n in optional.iter().filter(|n| !implemented.contains(&n.name.as_str())) {
        errors.push(diag_at(
            source,
            &n.span,
            format!("`optional` names `{}`, which `implement` does not: optional only marks implemented ops", n.name),
        ));
    }
    let custom_ops = crate::custom::resolve(raw.custom_op, source, &mut errors);
    let ops_json = raw.ops_json.map_or(JsonLayout::Compact, |s| {
        JsonLayout::parse(s.get_ref()).unwrap_or_else(|| {
            errors.push(diag_at(
                source,
                &s.span(),
                format!("ops_json must be \"compact\" or \"pretty\", found {:?}", s.get_ref()),
            ));
            JsonLayout::Compact
        })
    });
    if !errors.is_empty() {
        crate::diagnostic::sort(&mut errors);
        return Err(errors);
    }
    Ok(Config {
        device,
        dispatch_key,
        namespace,
        symbol_prefix,
        implement: raw.implement.map(named),
        exclude: named(raw.exclude),
        exclude_families,
        fallback,
        fallback_span,
        autograd: named(raw.autograd),
        optional,
        autocast,
        custom_ops,
        ops_json,
        source: source.to_owned(),
    })
}

/// Why a required op is not generated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    ExcludedFamily(&'static str),
    Excluded,
    /// Its types cannot cross the ABI (only types no release has used yet).
    Unsupported(String),
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipReason::ExcludedFamily(family) => write!(f, "family `{family}` is excluded by the config"),
            SkipReason::Excluded => f.write_str("excluded by the config"),
            SkipReason::Unsupported(why) => write!(f, "unsupported: {why}"),
        }
    }
}

/// One op the backend gets code for.
#[derive(Debug, Clone)]
pub struct Selected<'m> {
    pub op: &'m Op,
    pub abi: crate::abi::AbiOp,
    /// Named in `implement`: the trait method has no default body.
    pub implemented: bool,
    /// Registered for the dispatch key (else it reaches the fallback).
    pub registered: bool,
    /// Also registered for the autograd key.
    pub autograd: bool,
}

impl Selected<'_> {
    /// Whether the op gets a C++ wrapper, and so a Rust entry point and trait method: it is
    /// registered for the dispatch key or for the autograd key.
    pub fn is_wrapped(&self) -> bool {
        self.registered || self.autograd
    }
}

/// What answers a required op that CPU has no kernel for (`policy::NO_CPU_KERNEL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuLessAnswer {
    /// The backend registers its own kernel.
    Native,
    /// Not generated; calling it fails.
    Skipped(SkipReason),
    /// `fallback = "error"`: calling it raises NotImplementedError.
    ErrorFallback,
    /// `fallback = "cpu"` would answer it and fail: generation refuses ([`Config::check_served`]).
    Unserved,
}

impl std::fmt::Display for CpuLessAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CpuLessAnswer::Native => f.write_str("native"),
            CpuLessAnswer::Skipped(why) => write!(f, "skipped: {why}"),
            CpuLessAnswer::ErrorFallback => f.write_str("the error fallback"),
            CpuLessAnswer::Unserved => f.write_str("unserved: the CPU fallback cannot run it"),
        }
    }
}

/// The ops to generate, in header order, and the required ops skipped with their reasons.
#[derive(Debug, Clone)]
pub struct Selection<'m> {
    pub selected: Vec<Selected<'m>>,
    pub skipped: Vec<(&'m Op, SkipReason)>,
    /// Required ops CPU has no kernel for, with why and what answers them.
    pub cpu_less: Vec<(&'m Op, &'static str, CpuLessAnswer)>,
    /// `optional` ops this header does not have, or has only as a composite PyTorch decomposes
    /// (not registrable: see [`Config::select_reporting`]), in config order.
    pub absent: Vec<String>,
    /// The backend's own ops (`[[custom_op]]`): implemented and registered, in declared order.
    pub custom: Vec<Selected<'m>>,
    /// The autocast registrations the config asks for over this header, and the listed ops it lacks.
    pub autocast: crate::autocast::AutocastPlan,
}

impl<'m> Selection<'m> {
    /// The ops with a C++ wrapper and a Rust entry point, in header order.
    pub fn wrapped(&self) -> impl Iterator<Item = &Selected<'m>> {
        self.selected.iter().filter(|s| s.is_wrapped())
    }

    /// Every op with a Rust entry point: the wrapped aten ops, then the custom ops.
    pub fn entry_points(&self) -> impl Iterator<Item = &Selected<'m>> {
        self.wrapped().chain(&self.custom)
    }
}

impl Config {
    /// Resolves the config's op names against the model; unknown names are errors with
    /// suggestions.
    pub fn select<'m>(&'m self, model: &'m Model) -> Result<Selection<'m>, Vec<Diagnostic>> {
        let (selection, errors) = self.select_reporting(model);
        if errors.is_empty() { Ok(selection) } else { Err(errors) }
    }

    /// The selection [`Config::select`] makes, made in spite of its errors, which come with it
    /// (sorted by position): a name the header lacks selects nothing, an op both implemented and
    /// excluded is excluded, a custom op whose Rust name clashes is left out. `regen diff` judges
    /// a header the config does not fit by what generation selects from it, so this is that
    /// selection rather than a second one.
    pub fn select_reporting<'m>(&'m self, model: &'m Model) -> (Selection<'m>, Vec<Diagnostic>) {
        let mut errors = Vec::new();
        // Looked up once per op of the header: sets, not the lists (hundreds of names each).
        let set = |list: &'m [Named]| list.iter().map(|n| n.name.as_str()).collect::<FxHashSet<&str>>();
        let (implement, exclude, autograd) =
            (set(self.implement.as_deref().unwrap_or_default()), set(&self.exclude), set(&self.autograd));
        // A kernel registered for an op PyTorch decomposes (CompositeImplicitAutograd) takes the
        // decomposition's place under autograd too: the op loses its gradient, and before torch
        // 2.5 (no autograd fallback for PrivateUse1) cannot be called at all. Such a release has
        // no op to implement.
        let decomposed = |key: &str| {
            model.find(key).is_some_and(|op| op.class == OpClass::CompositeImplicit && !autograd.contains(key))
        };
        let absent: Vec<String> = self
            .optional
            .iter()
            .filter(|n| model.find(&n.name).is_none() || decomposed(&n.name))
            .map(|n| n.name.clone())
            .collect();
        for n in self.unknown_names(model) {
            errors.push(diag_at(&self.source, &n.span, unknown_op_message(&n.name, model)));
        }
        if let Some(list) = &self.implement {
            for n in list.iter().filter(|n| exclude.contains(n.name.as_str())) {
                errors.push(diag_at(&self.source, &n.span, format!("`{}` is both implemented and excluded", n.name)));
            }
            for n in list.iter().filter(|n| decomposed(&n.name) && !absent.contains(&n.name)) {
                errors.push(diag_at(
                    &self.source,
                    &n.span,
                    format!(
                        "`{}` is composite in this header (PyTorch decomposes it): a device kernel for it would \
                         take the decomposition's place under autograd too, losing its gradient (before torch \
                         2.5: leaving it uncallable); list it in `optional` to build without it for this \
                         release, or in `autograd` to register your kernel for the autograd key too",
                        n.name
                    ),
                ));
            }
        }
        let mut selected = Vec::new();
        let mut skipped = Vec::new();
        for op in &model.ops {
            let implemented = implement.contains(op.key.as_str());
            if !op.is_required() && (!implemented || absent.contains(&op.key)) {
                continue;
            }
            let family = op.family.filter(|f| self.exclude_families.iter().any(|n| n.name == *f));
            let reason = if exclude.contains(op.key.as_str()) {
                Some(SkipReason::Excluded)
            } else if let (Some(f), false) = (family, implemented) {
                Some(SkipReason::ExcludedFamily(f))
            } else {
                None
            };
            if let Some(reason) = reason {
                skipped.push((op, reason));
                continue;
            }
            match crate::abi::lower_abi(op) {
                Ok(abi) => selected.push(Selected {
                    op,
                    abi,
                    implemented,
                    registered: self.implement.is_none() || implemented,
                    autograd: autograd.contains(op.key.as_str()),
                }),
                Err(u) => skipped.push((op, SkipReason::Unsupported(u.reason))),
            }
        }
        let cpu_less = self.cpu_less_answers(model, &selected, &skipped);
        let custom = self.select_custom(&selected, &mut errors);
        let autocast = crate::autocast::plan(model, self);
        crate::diagnostic::sort(&mut errors);
        (Selection { selected, skipped, cpu_less, absent, custom, autocast }, errors)
    }

    /// The entries of `implement`, `exclude` and `autograd` that name no op of the header, in
    /// that order: errors for generation. An `optional` op is absent rather than unknown, and
    /// excluding an op CPU has no kernel for is never an error, as those ops differ by release.
    pub fn unknown_names<'c>(&'c self, model: &Model) -> impl Iterator<Item = &'c Named> {
        let keys: FxHashSet<&str> = model.ops.iter().map(|op| op.key.as_str()).collect();
        let known_exclude = self.exclude.iter().filter(|n| policy::cpu_less(&n.name).is_none());
        let optional = |n: &Named| self.optional.iter().any(|o| o.name == n.name);
        let unknown: Vec<&Named> = self
            .implement
            .iter()
            .flatten()
            .chain(known_exclude)
            .chain(&self.autograd)
            .filter(|n| !keys.contains(n.name.as_str()) && !optional(n))
            .collect();
        unknown.into_iter()
    }

    /// The custom ops as selected ops; a Rust name an aten op's entry point already has is an
    /// error at the custom op, which is left out.
    fn select_custom<'m>(&'m self, selected: &[Selected<'m>], errors: &mut Vec<Diagnostic>) -> Vec<Selected<'m>> {
        let mut custom = Vec::new();
        for c in &self.custom_ops {
            let at = |message: String| diag_at(&self.source, &c.span, message);
            if let Some(s) = selected.iter().find(|s| s.is_wrapped() && s.op.rust_name == c.op.rust_name) {
                errors.push(at(format!(
                    "custom op `{}` gets the Rust name `{}` of `{}`",
                    c.op.key, c.op.rust_name, s.op.key
                )));
                continue;
            }
            match crate::abi::lower_abi(&c.op) {
                Ok(abi) => {
                    custom.push(Selected { op: &c.op, abi, implemented: true, registered: true, autograd: false })
                }
                Err(u) => errors.push(at(format!("custom op `{}`: {}", c.op.key, u.reason))),
            }
        }
        custom
    }

    /// How each op that CPU has no kernel for is answered: required ones, and ones whose default
    /// kernel only raises (`convolution_overrideable`), which the device must implement as well.
    fn cpu_less_answers<'m>(
        &self,
        model: &'m Model,
        selected: &[Selected<'m>],
        skipped: &[(&'m Op, SkipReason)],
    ) -> Vec<(&'m Op, &'static str, CpuLessAnswer)> {
        let mut answers = Vec::new();
        for op in &model.ops {
            let Some(c) = policy::cpu_less(&op.key) else { continue };
            let answer = if selected.iter().any(|s| s.registered && std::ptr::eq(s.op, op)) {
                CpuLessAnswer::Native
            } else if let Some((_, why)) = skipped.iter().find(|(o, _)| std::ptr::eq(*o, op)) {
                CpuLessAnswer::Skipped(why.clone())
            } else if self.exclude.iter().any(|n| n.name == op.key) {
                CpuLessAnswer::Skipped(SkipReason::Excluded)
            } else if self.fallback == Fallback::Cpu {
                CpuLessAnswer::Unserved
            } else {
                CpuLessAnswer::ErrorFallback
            };
            answers.push((op, c.reason, answer));
        }
        answers
    }

    /// Generation's check that the CPU fallback answers no op CPU has no kernel for: one error per
    /// such op, at the `fallback` setting.
    pub fn check_served(&self, selection: &Selection<'_>) -> Result<(), Vec<Diagnostic>> {
        let span = self.fallback_span.clone().unwrap_or(0..0);
        let errors: Vec<Diagnostic> = selection
            .cpu_less
            .iter()
            .filter(|(_, _, answer)| *answer == CpuLessAnswer::Unserved)
            .map(|(op, why, _)| {
                diag_at(
                    &self.source,
                    &span,
                    format!(
                        "fallback = \"cpu\" cannot serve `{}`: CPU has no kernel for it ({why}); implement it or \
                         add it to `exclude`",
                        op.key
                    ),
                )
            })
            .collect();
        if errors.is_empty() { Ok(()) } else { Err(errors) }
    }
}

fn unknown_op_message(name: &str, model: &Model) -> String {
    let mut scored: Vec<(f64, &str)> =
        model.ops.iter().map(|op| (strsim::jaro_winkler(name, &op.key), op.key.as_str())).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    let best: Vec<&str> = scored.iter().take(3).filter(|(s, _)| *s > 0.8).map(|(_, k)| *k).collect();
    if best.is_empty() {
        format!("no op `{name}` in this header")
    } else {
        format!("no op `{name}` in this header; did you mean {}?", best.join(", "))
    }
}
