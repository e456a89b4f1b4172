//! The backend config, `regen.toml`: parsed and checked on its own (names of ops are resolved
//! against a header by [`crate::select`]).
//!
//! Every field is optional. Without a config, every required op is generated as a skeleton:
//! a trait method with a default body that raises NotImplementedError, registered for the
//! device. With `implement = [...]`, those ops get required trait methods and registrations,
//! and every other op goes to the `fallback` policy; `[implement]` as a table of groups
//! (`unary = [...]`, `pool = [...]`) gives each group's ops a trait of their own
//! (`UnaryKernels`, `PoolKernels`), which a backend implements in the file of that family. Ops that only some of the releases a
//! backend builds for have are listed in `optional` too: where the header lacks one, it is
//! reported as absent (selection.json, a build warning) instead of being an unknown name.

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use crate::diagnostic::{Diagnostic, diag_at};
use crate::emit_manifest::JsonLayout;
use crate::policy::Family;
use crate::rust_name::{default_symbol_prefix, is_c_identifier, is_c_name};

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
    implement: Option<RawImplement>,
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
    autocast_ops: Option<Spanned<RawAutocastOps>>,
    #[serde(default)]
    custom_op: Vec<crate::custom::RawCustomOp>,
    ops_json: Option<Spanned<String>>,
    reference: Option<RawReference>,
}

/// `[autocast_ops]` as written: a list of ops for each policy.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAutocastOps {
    #[serde(default)]
    lower_precision_fp: Vec<Spanned<String>>,
    #[serde(default)]
    fp32: Vec<Spanned<String>>,
    #[serde(default)]
    promote: Vec<Spanned<String>>,
    #[serde(default)]
    banned: Vec<Spanned<String>>,
}

/// `[reference]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReference {
    #[serde(rename = "crate")]
    krate: Spanned<String>,
    config: Spanned<String>,
    groups: Option<Vec<Spanned<String>>>,
}

/// `implement` as written: a list of ops, or a table of groups, each a list of ops (in the
/// config's order). Read by hand, not with `#[serde(untagged)]`, which would lose the positions.
enum RawImplement {
    Flat(Vec<Spanned<String>>),
    Groups(Vec<(Spanned<String>, Vec<Spanned<String>>)>),
}

impl<'de> Deserialize<'de> for RawImplement {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RawImplement;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of op names, or a table of kernel groups, each a list of op names")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<RawImplement, A::Error> {
                let mut ops = Vec::new();
                while let Some(op) = seq.next_element()? {
                    ops.push(op);
                }
                Ok(RawImplement::Flat(ops))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<RawImplement, A::Error> {
                let mut groups = Vec::new();
                while let Some(group) = map.next_entry()? {
                    groups.push(group);
                }
                Ok(RawImplement::Groups(groups))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// A kernel group of `[implement]`: its ops are the required methods of the trait
/// [`KernelGroup::trait_name`] in the generated `kernels.rs`; or a group of a kernel library's
/// (`[reference]`), whose trait and implementation are that crate's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelGroup {
    /// As written (`resample_aa`), with its position (a library's group: that of `[reference]`'s
    /// `config`).
    pub name: Named,
    /// The group's ops, in the config's order.
    pub ops: Vec<String>,
    /// The kernel library the group comes from (its Rust crate name, `regen_kernels`); `None` for
    /// the backend's own groups.
    pub from: Option<String>,
}

impl KernelGroup {
    /// The trait as the generated code names it: `UnaryKernels`, or `regen_kernels::UnaryKernels`
    /// for a library's group.
    pub fn trait_path(&self) -> String {
        match &self.from {
            Some(krate) => format!("{krate}::{}", self.trait_name()),
            None => self.trait_name(),
        }
    }

    /// The group's trait: `resample_aa` -> `ResampleAaKernels`.
    pub fn trait_name(&self) -> String {
        let mut out = String::new();
        for word in self.name.name.split('_').filter(|w| !w.is_empty()) {
            let mut chars = word.chars();
            out.extend(chars.next().map(|c| c.to_ascii_uppercase()));
            out.push_str(chars.as_str());
        }
        out + "Kernels"
    }
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
    /// `None`: skeleton mode, every selected op is registered. With groups, every group's ops.
    pub implement: Option<Vec<Named>>,
    /// The kernel groups of `[implement]`, in the config's order; empty for a flat list.
    pub groups: Vec<KernelGroup>,
    pub exclude: Vec<Named>,
    pub exclude_families: Vec<Family>,
    pub fallback: Fallback,
    /// Where `fallback` is set, for diagnostics about what it cannot serve.
    pub(crate) fallback_span: Option<Range<usize>>,
    pub autograd: Vec<Named>,
    /// Ops of `implement` that some supported releases lack (a newer overload, a removed op):
    /// absent from the header, they are reported, not errors.
    pub optional: Vec<Named>,
    /// Whose autocast op lists the device registers (crate::autocast), if any.
    pub autocast: Option<crate::autocast::Autocast>,
    /// `[autocast_ops]`: the backend's own autocast policy for these ops, in place of the base
    /// lists', in the config's order.
    pub autocast_ops: Vec<crate::autocast::OwnOp>,
    /// The backend's own ops (`[[custom_op]]`), in the order declared.
    pub custom_ops: Vec<crate::custom::CustomOp>,
    /// How ops.json is laid out (`ops_json = "compact"`, the default, or `"pretty"`).
    pub ops_json: JsonLayout,
    /// `[reference]`: the kernel library whose groups the backend takes (merged in by
    /// [`Config::add_reference`]).
    pub reference: Option<Reference>,
    /// The config's text, for positions in diagnostics.
    pub(crate) source: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            device: "regen".into(),
            dispatch_key: "PrivateUse1".into(),
            namespace: "regen_generated".into(),
            symbol_prefix: default_symbol_prefix("regen"),
            implement: None,
            groups: Vec::new(),
            exclude: Vec::new(),
            exclude_families: Vec::new(),
            fallback: Fallback::Error,
            fallback_span: None,
            autograd: Vec::new(),
            optional: Vec::new(),
            autocast: None,
            autocast_ops: Vec::new(),
            custom_ops: Vec::new(),
            ops_json: JsonLayout::Compact,
            reference: None,
            source: String::new(),
        }
    }
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

/// Parses `regen.toml`; every error is positioned in the config.
pub fn parse_config(source: &str) -> Result<Config, Vec<Diagnostic>> {
    let mut raw: RawConfig = toml::from_str(source).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        vec![diag_at(source, &span, e.message().trim_end().to_owned())]
    })?;
    let mut errors = Vec::new();
    let names = parse_names(&mut raw, source, &mut errors);
    let fallback_span = raw.fallback.as_ref().map(|f| f.span());
    let fallback = parse_fallback(raw.fallback, source, &mut errors);
    let autocast_set = raw.autocast.is_some();
    let autocast = parse_autocast(raw.autocast, &names.dispatch_key, source, &mut errors);
    let autocast_ops = parse_autocast_ops(raw.autocast_ops, autocast_set, source, &mut errors);
    let exclude_families = parse_families(raw.exclude_families, source, &mut errors);
    let (implement, groups) = match raw.implement {
        None => (None, Vec::new()),
        Some(RawImplement::Flat(ops)) => (Some(named(ops)), Vec::new()),
        Some(RawImplement::Groups(raw_groups)) => {
            let (implement, groups) = resolve_groups(raw_groups, source, &mut errors);
            (Some(implement), groups)
        }
    };
    let optional = named(raw.optional);
    check_optional(&optional, implement.as_deref(), source, &mut errors);
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
    let reference = raw.reference.map(|r| Reference {
        krate: rust_crate_name(r.krate, source, &mut errors),
        config: Named { span: r.config.span(), name: r.config.into_inner() },
        groups: r.groups.map(named),
        resolved: false,
    });
    if !errors.is_empty() {
        crate::diagnostic::sort(&mut errors);
        return Err(errors);
    }
    let Names { device, dispatch_key, namespace, symbol_prefix } = names;
    Ok(Config {
        device,
        dispatch_key,
        namespace,
        symbol_prefix,
        implement,
        groups,
        exclude: named(raw.exclude),
        exclude_families,
        fallback,
        fallback_span,
        autograd: named(raw.autograd),
        optional,
        autocast,
        autocast_ops,
        custom_ops,
        ops_json,
        reference,
        source: source.to_owned(),
    })
}

/// The names regen.toml gives the generated code.
struct Names {
    device: String,
    dispatch_key: String,
    namespace: String,
    symbol_prefix: String,
}

/// `device`, `dispatch_key`, `namespace` and `symbol_prefix`: C identifiers that C++ does not
/// reserve (the default where one is not), the entry-point prefix a name C allows for a global
/// symbol, and the namespace none the generated C++ already uses.
fn parse_names(raw: &mut RawConfig, source: &str, errors: &mut Vec<Diagnostic>) -> Names {
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
    let device = identifier(raw.device.take(), defaults.device, "device");
    let dispatch_key = identifier(raw.dispatch_key.take(), defaults.dispatch_key, "dispatch_key");
    let namespace_span = raw.namespace.as_ref().map(|n| n.span());
    let namespace = identifier(raw.namespace.take(), defaults.namespace, "namespace");
    // Each device's entry points get their own prefix, so two backends never share a symbol.
    let symbol_prefix = identifier(raw.symbol_prefix.take(), default_symbol_prefix(&device), "symbol_prefix");
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
    Names { device, dispatch_key, namespace, symbol_prefix }
}

/// `fallback`: "cpu" or "error" (the default).
fn parse_fallback(raw: Option<Spanned<String>>, source: &str, errors: &mut Vec<Diagnostic>) -> Fallback {
    let Some(s) = raw else { return Fallback::Error };
    match s.get_ref().as_str() {
        "cpu" => Fallback::Cpu,
        "error" => Fallback::Error,
        other => {
            errors.push(diag_at(source, &s.span(), format!("fallback must be \"cpu\" or \"error\", found {other:?}")));
            Fallback::Error
        }
    }
}

/// `autocast`: a policy name, for the PrivateUse1 key only (ATen has an autocast key for
/// PrivateUse1, not for a renamed dispatch key).
fn parse_autocast(
    raw: Option<Spanned<String>>,
    dispatch_key: &str,
    source: &str,
    errors: &mut Vec<Diagnostic>,
) -> Option<crate::autocast::Autocast> {
    let s = raw?;
    let parsed = crate::autocast::Autocast::parse(s.get_ref());
    if parsed.is_none() {
        errors.push(diag_at(source, &s.span(), format!("autocast must be \"cpu\", found {:?}", s.get_ref())));
    } else if dispatch_key != "PrivateUse1" {
        errors.push(diag_at(
            source,
            &s.span(),
            format!("autocast needs dispatch_key = \"PrivateUse1\" (AutocastPrivateUse1), found {dispatch_key:?}"),
        ));
    }
    parsed
}

/// `[autocast_ops]`: each op under one policy, in the config's order. The table changes the base
/// lists of `autocast`, so it needs `autocast`; an op has one policy, so it is listed once.
fn parse_autocast_ops(
    raw: Option<Spanned<RawAutocastOps>>,
    autocast_set: bool,
    source: &str,
    errors: &mut Vec<Diagnostic>,
) -> Vec<crate::autocast::OwnOp> {
    use crate::autocast::{CastPolicy, OpPolicy, OwnOp};
    let Some(raw) = raw else { return Vec::new() };
    let span = raw.span();
    let raw = raw.into_inner();
    let lists = [
        (OpPolicy::Cast(CastPolicy::LowerPrecisionFp), raw.lower_precision_fp),
        (OpPolicy::Cast(CastPolicy::Fp32), raw.fp32),
        (OpPolicy::Cast(CastPolicy::Promote), raw.promote),
        (OpPolicy::Banned, raw.banned),
    ];
    let mut ops: Vec<OwnOp> = lists
        .into_iter()
        .flat_map(|(policy, ops)| named(ops).into_iter().map(move |op| OwnOp { op, policy }))
        .collect();
    // The toml crate hands a table's keys over in its own order; the positions give the config's.
    ops.sort_by_key(|o| o.op.span.start);
    if !autocast_set {
        errors.push(diag_at(
            source,
            &span,
            "`[autocast_ops]` changes the policies of `autocast`'s base lists: set `autocast = \"cpu\"` too".to_owned(),
        ));
    }
    let mut seen: Vec<&OwnOp> = Vec::new();
    for o in &ops {
        match seen.iter().find(|s| s.op.name == o.op.name) {
            Some(first) => errors.push(diag_at(
                source,
                &o.op.span,
                format!(
                    "`{}` is already in `[autocast_ops]`'s `{}`: an op has one autocast policy",
                    o.op.name,
                    first.policy.as_str()
                ),
            )),
            None => seen.push(o),
        }
    }
    ops
}

/// `exclude_families`: each a [`Family`] name.
fn parse_families(raw: Vec<Spanned<String>>, source: &str, errors: &mut Vec<Diagnostic>) -> Vec<Family> {
    let mut families = Vec::new();
    for f in raw {
        match Family::from_name(f.get_ref()) {
            Some(family) => families.push(family),
            None => {
                let all: Vec<&str> = Family::ALL.iter().map(|f| f.as_str()).collect();
                errors.push(diag_at(
                    source,
                    &f.span(),
                    format!("unknown family {:?}; the families are: {}", f.get_ref(), all.join(", ")),
                ));
            }
        }
    }
    families
}

/// `optional` only marks ops `implement` lists.
fn check_optional(optional: &[Named], implement: Option<&[Named]>, source: &str, errors: &mut Vec<Diagnostic>) {
    let implemented: Vec<&str> = implement.into_iter().flatten().map(|n| n.name.as_str()).collect();
    for n in optional.iter().filter(|n| !implemented.contains(&n.name.as_str())) {
        errors.push(diag_at(
            source,
            &n.span,
            format!("`optional` names `{}`, which `implement` does not: optional only marks implemented ops", n.name),
        ));
    }
}

/// `[reference]`: a kernel library (a crate of kernel groups, such as the reference kernels,
/// `regen_kernels`) whose groups a backend takes instead of writing them. The library's own
/// regen.toml lists its groups; the generated entry points of those ops call
/// `<crate::Reference as crate::GroupKernels>::method` directly. An op the backend lists in its
/// own `[implement]` is its own, so its kernels replace the library's one op at a time; an op it
/// lists in `exclude` is not registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The library's Rust crate name, as the backend's code names it (`regen_kernels`).
    pub krate: Named,
    /// The library's regen.toml, relative to this config's directory.
    pub config: Named,
    /// The groups taken (`groups = [...]`); `None`: every group of the library.
    pub groups: Option<Vec<Named>>,
    /// Whether the library's groups are merged in ([`Config::add_reference`]).
    pub resolved: bool,
}

/// `crate` of `[reference]`: the library crate's name as Rust code names it (`regen_kernels`, not
/// `regen-kernels`), or a path to a module that holds its traits and `Reference`
/// (`crate::library`).
fn rust_crate_name(s: Spanned<String>, source: &str, errors: &mut Vec<Diagnostic>) -> Named {
    let name = Named { span: s.span(), name: s.into_inner() };
    // Rust identifiers have C's shape.
    if !name.name.split("::").all(is_c_identifier) {
        errors.push(diag_at(
            source,
            &name.span,
            format!(
                "`crate` must be the library's Rust crate name as code names it (`regen_kernels`, with `_` for \
                 `-`) or a Rust path to its module, found {:?}",
                name.name
            ),
        ));
    }
    name
}

impl Config {
    /// Merges in the groups of the kernel library `[reference]` names, whose regen.toml is
    /// `library`: each taken group (all, or `groups`) becomes a group of this config from that
    /// crate, less the ops this config implements (its own kernels) or excludes (not registered),
    /// and the library's `optional` marks its ops here too. Positions of what came from the library are that of `config`.
    pub fn add_reference(&mut self, library: Config) -> Result<(), Vec<Diagnostic>> {
        let Some(mut reference) = self.reference.take() else { return Ok(()) };
        let result = self.merge_library(&reference, library);
        reference.resolved = result.is_ok();
        self.reference = Some(reference);
        result
    }

    fn merge_library(&mut self, reference: &Reference, library: Config) -> Result<(), Vec<Diagnostic>> {
        let at = reference.config.span.clone();
        let mut errors = Vec::new();
        if library.groups.is_empty() {
            errors.push(diag_at(
                &self.source,
                &at,
                format!(
                    "the kernel library's config {:?} has no kernel groups: its `[implement]` must be a table of \
                     groups, each the trait of a family of its kernels",
                    reference.config.name
                ),
            ));
        }
        if library.reference.is_some() {
            errors.push(diag_at(
                &self.source,
                &at,
                format!(
                    "{:?} has a `[reference]` of its own: a kernel library is not a backend",
                    reference.config.name
                ),
            ));
        }
        let names: Vec<&str> = library.groups.iter().map(|g| g.name.name.as_str()).collect();
        for wanted in reference.groups.iter().flatten().filter(|w| !names.contains(&w.name.as_str())) {
            errors.push(diag_at(
                &self.source,
                &wanted.span,
                format!("the kernel library has no group `{}`; its groups are: {}", wanted.name, names.join(", ")),
            ));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        // The backend's own kernels replace the library's; an op it excludes is not registered at all.
        let not_taken: std::collections::HashSet<String> =
            self.implement.iter().flatten().chain(&self.exclude).map(|n| n.name.clone()).collect();
        let taken = |g: &KernelGroup| reference.groups.as_ref().is_none_or(|w| w.iter().any(|w| w.name == g.name.name));
        let implement = self.implement.get_or_insert_with(Vec::new);
        let mut taken_ops = std::collections::HashSet::new();
        for group in library.groups.into_iter().filter(|g| taken(g)) {
            let ops: Vec<String> = group.ops.into_iter().filter(|op| !not_taken.contains(op)).collect();
            if ops.is_empty() {
                continue;
            }
            implement.extend(ops.iter().map(|op| Named { name: op.clone(), span: at.clone() }));
            taken_ops.extend(ops.iter().cloned());
            let name = Named { name: group.name.name, span: at.clone() };
            self.groups.push(KernelGroup { name, ops, from: Some(reference.krate.name.clone()) });
        }
        for n in library.optional.into_iter().filter(|n| taken_ops.contains(&n.name)) {
            if !self.optional.iter().any(|o| o.name == n.name) {
                self.optional.push(Named { name: n.name, span: at.clone() });
            }
        }
        Ok(())
    }
}

/// The groups of `[implement]` and all their ops: a group's name must read as a Rust identifier in
/// snake case (its trait's name is made from it), and an op may be in one group only (its method
/// belongs to one trait).
fn resolve_groups(
    mut raw: Vec<(Spanned<String>, Vec<Spanned<String>>)>,
    source: &str,
    errors: &mut Vec<Diagnostic>,
) -> (Vec<Named>, Vec<KernelGroup>) {
    // The toml crate hands a table's keys over sorted; their positions give the config's order.
    raw.sort_by_key(|(name, _)| name.span().start);
    let mut implement: Vec<Named> = Vec::new();
    let mut group_of: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut groups = Vec::new();
    for (name, ops) in raw {
        let name = Named { span: name.span(), name: name.into_inner() };
        let snake = name.name.starts_with(|c: char| c.is_ascii_lowercase())
            && name.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !snake {
            errors.push(diag_at(
                source,
                &name.span,
                format!(
                    "kernel group {:?} must be a snake_case name (a lowercase letter, then lowercase letters, digits \
                     and `_`): it names the group's trait",
                    name.name
                ),
            ));
        }
        let mut group = KernelGroup { name, ops: Vec::new(), from: None };
        if let Some(other) = groups.iter().find(|g: &&KernelGroup| g.trait_name() == group.trait_name()) {
            errors.push(diag_at(
                source,
                &group.name.span,
                format!(
                    "kernel groups `{}` and `{}` would both be the trait {}",
                    other.name.name,
                    group.name.name,
                    group.trait_name()
                ),
            ));
        }
        for op in named(ops) {
            if let Some(first) = group_of.get(&op.name) {
                errors.push(diag_at(
                    source,
                    &op.span,
                    format!("`{}` is already in kernel group `{first}`: an op's method belongs to one trait", op.name),
                ));
                continue;
            }
            group_of.insert(op.name.clone(), group.name.name.clone());
            group.ops.push(op.name.clone());
            implement.push(op);
        }
        groups.push(group);
    }
    (implement, groups)
}
