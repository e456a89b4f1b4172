//! Emits `kernels.rs`: one row of `regen_runtime::kernels!` per op with a C++ wrapper (its schema,
//! counter, names, argument and result types). The macro spells the trait, the `extern "C"` entry
//! points, the call counters and `install` once, in regen-runtime, so the file holds only what
//! differs between ops and is written as text, without a Rust parser or formatter.
//!
//! Only ops with a C++ wrapper (registered, or registered for autograd) get a row: a method
//! nothing can call would only cost the backend crate compile time. The file has no inner
//! attributes, so it can be mounted with `#[path]` or pulled in with `include!`.

use std::fmt::Write as _;

use rustc_hash::FxHashMap;

use crate::config::{Config, KernelGroup};
use crate::rust_name::{kernel_symbol, rust_bindings};
use crate::select::{Selected, Selection};

/// The types kernel signatures name, imported where the rows expand.
const IMPORTS: &str = "// Kernel signatures use only some of these types.
#[allow(unused_imports)]
use regen_runtime::{
    Device, Error, Generator, Layout, MemoryFormat, OptionalTensorList, QScheme, Result, Scalar, ScalarType, Storage,
    Stream, Tensor, TensorList, TensorRef, abi,
};
";

/// A Rust string literal of `s`.
fn literal(out: &mut String, s: &str) {
    out.push('"');
    out.extend(s.chars().flat_map(char::escape_debug));
    out.push('"');
}

/// One `kernels!` row: the schema as the method's doc, then counter, state, names and types.
fn row(out: &mut String, k: usize, s: &Selected<'_>, config: &Config) {
    let op = s.op;
    if op.schema_text.contains(['\n', '\r']) {
        out.push_str("    #[doc = ");
        literal(out, &format!(" `{}`", op.schema_text));
        out.push_str("]\n");
    } else {
        let _ = writeln!(out, "    /// `{}`", op.schema_text);
    }
    let _ = write!(out, "    {k} {} ", if s.implemented { "kernel" } else { "stub" });
    literal(out, &op.key);
    out.push(' ');
    literal(out, &op.qualified());
    let _ = write!(out, " {}\n        fn {}(", kernel_symbol(&config.symbol_prefix, &op.rust_name), op.rust_name);
    let names = rust_bindings(s.abi.args.iter().map(|a| a.name.as_str()));
    for (j, (a, name)) in s.abi.args.iter().zip(&names).enumerate() {
        let _ = write!(out, "{}{name}: {} = {}", if j > 0 { ", " } else { "" }, a.kind.rust_safe(), a.kind.rust_abi());
    }
    out.push_str(") -> ");
    let crossing: Vec<(usize, &str, &str)> = s
        .abi
        .returns
        .iter()
        .enumerate()
        .filter_map(|(k, r)| Some((k, r.kind.rust_safe_type()?, r.kind.rust_slot_type()?)))
        .collect();
    match crossing.as_slice() {
        [(_, ty, _)] => out.push_str(ty),
        many => {
            out.push('(');
            for (j, (_, ty, _)) in many.iter().enumerate() {
                let _ = write!(out, "{}{ty}", if j > 0 { ", " } else { "" });
            }
            out.push(')');
        }
    }
    out.push_str(" {");
    for (j, (k, _, slot)) in crossing.iter().enumerate() {
        let _ = write!(out, "{}regen_v{j} => regen_r{k}: {slot}", if j > 0 { ", " } else { " " });
    }
    out.push_str(if crossing.is_empty() { "};\n" } else { " };\n" });
}

/// The head of a `group XKernels {` block, a group of the config's own `[implement]` (in a
/// backend's kernels.rs and a library's groups.rs alike).
fn own_group_head(out: &mut String, group: &KernelGroup) {
    let _ = writeln!(
        out,
        "/// The kernels of group `{}` (regen.toml `[implement]`).\ngroup {} {{",
        group.name.name,
        group.trait_name()
    );
}

/// Each grouped op's group (its index in `config.groups`).
fn group_of(config: &Config) -> FxHashMap<&str, usize> {
    config.groups.iter().enumerate().flat_map(|(g, group)| group.ops.iter().map(move |op| (op.as_str(), g))).collect()
}

/// The whole `kernels.rs` text, starting with its `@generated` line. With kernel groups, the rows
/// come in blocks: `Kernels`' own (ops in no group: stubs, custom ops), then each group's, in the
/// config's order, counted through in that order.
pub fn emit_rust(selection: &Selection<'_>, config: &Config, note: &str) -> String {
    let rows: Vec<&Selected<'_>> = selection.entry_points().collect();
    let mut out = String::with_capacity(512 + rows.len() * 320);
    let _ = write!(out, "// {note}\n\n{IMPORTS}\nregen_runtime::kernels! {{\n");
    if config.groups.is_empty() {
        for (k, s) in rows.iter().enumerate() {
            row(&mut out, k, s, config);
        }
        out.push_str("}\n");
        return out;
    }
    let group_of = group_of(config);
    // A custom op's key (`ns::name`) is never an `implement` name: it stays in `Kernels`.
    let group = |s: &Selected<'_>| group_of.get(s.op.key.as_str()).copied();
    let mut k = 0;
    out.push_str("kernels {\n");
    for s in rows.iter().filter(|s| group(s).is_none()) {
        row(&mut out, k, s, config);
        k += 1;
    }
    out.push_str("}\n");
    // The backend's own groups come first (add_reference appends a library's), as the macro reads them.
    for (g, kernel_group) in config.groups.iter().enumerate() {
        match &kernel_group.from {
            None => own_group_head(&mut out, kernel_group),
            Some(krate) => {
                let _ = writeln!(
                    out,
                    // A comment, not a doc: the library documents its traits (and a doc here would
                    // make the macro's blocks ambiguous to match).
                    "// The kernels of group `{}` of the kernel library `{krate}` (regen.toml `[reference]`).\n\
                     call <{krate}::{LIBRARY_IMPLEMENTOR} as {}> {{",
                    kernel_group.name.name,
                    kernel_group.trait_path()
                );
            }
        }
        for s in rows.iter().filter(|s| group(s) == Some(g)) {
            row(&mut out, k, s, config);
            k += 1;
        }
        out.push_str("}\n");
    }
    out.push_str("}\n");
    out
}

/// The type a kernel library implements its group traits for (`regen_kernels::Reference`): a
/// unit struct with `Default`, which the entry points of its groups call.
pub const LIBRARY_IMPLEMENTOR: &str = "Reference";

/// A kernel library's `groups.rs`: the traits of its kernel groups only, one per group of its
/// `[implement]`, for `regen_runtime::kernel_groups!`. The library implements them; a backend that
/// names it in `[reference]` calls them from its own entry points. The rows are those a backend's
/// `kernels.rs` has for the same ops, so the two agree on every signature.
pub fn emit_groups(selection: &Selection<'_>, config: &Config, note: &str) -> String {
    let rows: Vec<&Selected<'_>> = selection.entry_points().collect();
    let mut out = String::with_capacity(512 + rows.len() * 320);
    let _ = write!(out, "// {note}\n\n{IMPORTS}\nregen_runtime::kernel_groups! {{\n");
    let group_of = group_of(config);
    let mut k = 0;
    for (g, group) in config.groups.iter().enumerate() {
        own_group_head(&mut out, group);
        for s in rows.iter().filter(|s| group_of.get(s.op.key.as_str()) == Some(&g)) {
            row(&mut out, k, s, config);
            k += 1;
        }
        out.push_str("}\n");
    }
    out.push_str("}\n");
    out
}
