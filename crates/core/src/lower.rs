//! Assembles parsed declarations into the op model, checking what spans lines or halves of a line:
//! C++ parameters against schema arguments, unique `name.overload` keys, unique Rust names.

use rustc_hash::FxHashMap;

use crate::diagnostic::{self, Diagnostic};
use crate::ir::{Argument, Ident, Model, Op, OpKind, Schema};
use crate::parse::Decl;
use crate::policy::{Family, family_of};
use crate::rust_name::rust_name;

/// torchgen's `AUGMENTED_ASSIGNMENT_NAMES`: `__iand__` and friends are in-place.
const AUGMENTED_ASSIGNMENT: &[&str] =
    &["add", "sub", "mul", "div", "mod", "pow", "lshift", "rshift", "and", "xor", "or"];

/// Builds the model, or returns every error of this phase sorted by position.
/// `text` is the header, used only to quote lines in diagnostics.
pub fn lower_model(decls: Vec<Decl>, text: &str) -> Result<Model, Vec<Diagnostic>> {
    let line_text = |n: u32| text.lines().nth(n as usize - 1).unwrap_or("").trim_end();
    // Each op's names, worked out on two cores (they are most of this phase's time).
    let names = |part: &[Decl]| -> Vec<(String, String)> {
        part.iter().map(|d| (d.schema.key(), rust_name(&d.schema.name, &d.schema.overload))).collect()
    };
    let (head, tail) = decls.split_at(decls.len() / 2);
    let (rest, mut both) = crate::parallel::join(|| names(tail), || names(head));
    both.extend(rest);
    let (keys, rust_names): (Vec<String>, Vec<String>) = both.into_iter().unzip();
    let mut errors = Vec::new();
    let mut by_key: FxHashMap<&str, u32> = FxHashMap::with_capacity_and_hasher(decls.len(), Default::default());
    let mut by_rust_name: FxHashMap<&str, (&str, u32)> =
        FxHashMap::with_capacity_and_hasher(decls.len(), Default::default());
    for ((decl, key), rust_name) in decls.iter().zip(&keys).zip(&rust_names) {
        let mut error = |message: String, col: u32| {
            errors.push(Diagnostic::error(decl.line, col, message, line_text(decl.line)));
        };
        if let Some(message) = check_alignment(decl) {
            error(message, decl.params_col);
        }
        if let Some(first) = by_key.insert(key, decl.line) {
            error(format!("duplicate op `{key}` (first declared on line {first})"), decl.name_col);
        } else if let Some((other, line)) = by_rust_name.insert(rust_name, (key, decl.line)) {
            error(
                format!("op `{key}` gets Rust name `{rust_name}`, already taken by `{other}` (line {line})"),
                decl.name_col,
            );
        }
    }
    if !errors.is_empty() {
        diagnostic::sort(&mut errors);
        return Err(errors);
    }
    // Overloads of one name are adjacent: look each name's family up once.
    let mut last_family: Option<(Ident, Option<Family>)> = None;
    let mut family = |name: &Ident| match &last_family {
        Some((n, f)) if n == name => *f,
        _ => {
            let f = family_of(name).map(|r| r.family);
            last_family = Some((name.clone(), f));
            f
        }
    };
    let ops = decls
        .into_iter()
        .zip(keys)
        .zip(rust_names)
        .map(|((decl, key), rust_name)| Op {
            key,
            kind: kind_of(&decl.schema),
            family: family(&decl.schema.name),
            rust_name,
            line: decl.line,
            dispatch: decl.dispatch,
            default: decl.default,
            schema_text: decl.schema_text,
            schema: decl.schema,
            cpp: decl.cpp,
        })
        .collect();
    Ok(Model { ops })
}

/// The C++ parameters must line up one-to-one, by name, with the schema arguments.
fn check_alignment(decl: &Decl) -> Option<String> {
    let (params, args) = (&decl.cpp.params, &decl.schema.arguments);
    if params.len() != args.len() {
        return Some(format!(
            "the C++ declaration has {} parameter(s) but the schema of `{}` has {} argument(s)",
            params.len(),
            decl.schema.key(),
            args.len()
        ));
    }
    params.iter().zip(args).position(|(p, a)| p.name != a.name).map(|k| {
        format!(
            "C++ parameter {} is named `{}` but schema argument {} is `{}`",
            k + 1,
            params[k].name,
            k + 1,
            args[k].name
        )
    })
}

fn writes(a: &Argument) -> bool {
    a.annotation.as_ref().is_some_and(|x| x.is_write)
}

/// torchgen's `SchemaKind` (out, inplace, mutable, functional), with views split off functional.
pub fn kind_of(schema: &Schema) -> OpKind {
    if schema.arguments.iter().any(|a| a.kwarg_only && writes(a)) {
        OpKind::Out
    } else if is_inplace_name(&schema.name) {
        OpKind::InPlace
    } else if schema.arguments.iter().any(writes) {
        OpKind::Mutable
    } else if schema.returns.items.iter().any(|r| r.annotation.is_some()) {
        OpKind::View
    } else {
        OpKind::Functional
    }
}

fn is_inplace_name(name: &str) -> bool {
    match name.strip_prefix("__").and_then(|n| n.strip_suffix("__")) {
        Some(dunder) => dunder.strip_prefix('i').is_some_and(|op| AUGMENTED_ASSIGNMENT.contains(&op)),
        None => name.ends_with('_'),
    }
}
