//! Emits `ops.json`: the op model as JSON, in header order, for tooling.
//!
//! Field names are a contract with tools (see the README); new fields may be added freely.

use serde::Serialize;

use crate::ir::{Model, Op};

/// JSON has no comments, so the `@generated` note is the manifest's first field.
#[derive(Serialize)]
struct Manifest<'a> {
    #[serde(rename = "@generated")]
    generated: &'a str,
    op_count: usize,
    required_count: usize,
    ops: Vec<ManifestOp<'a>>,
}

#[derive(Serialize)]
struct ManifestOp<'a> {
    name: &'a str,
    overload: &'a str,
    key: &'a str,
    schema: &'a str,
    dispatch: bool,
    default: bool,
    required: bool,
    class: &'static str,
    kind: &'static str,
    family: Option<&'static str>,
    arguments: Vec<ManifestArg<'a>>,
    returns: Vec<ManifestReturn<'a>>,
    cpp: ManifestCpp<'a>,
    rust_name: &'a str,
    line: u32,
}

#[derive(Serialize)]
struct ManifestArg<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    ty: String,
    default: Option<&'a str>,
    kwarg_only: bool,
    annotation: Option<String>,
}

#[derive(Serialize)]
struct ManifestReturn<'a> {
    name: Option<&'a str>,
    #[serde(rename = "type")]
    ty: String,
    annotation: Option<String>,
}

#[derive(Serialize)]
struct ManifestCpp<'a> {
    name: &'a str,
    return_type: &'a str,
    params: Vec<ManifestParam<'a>>,
}

#[derive(Serialize)]
struct ManifestParam<'a> {
    #[serde(rename = "type")]
    ty: &'a str,
    name: &'a str,
}

fn manifest_op(op: &Op) -> ManifestOp<'_> {
    ManifestOp {
        name: op.name(),
        overload: op.overload(),
        key: &op.key,
        schema: &op.schema_text,
        dispatch: op.dispatch,
        default: op.default,
        required: op.is_required(),
        class: op.class().as_str(),
        kind: op.kind.as_str(),
        family: op.family.map(|f| f.as_str()),
        arguments: op
            .schema
            .arguments
            .iter()
            .map(|a| ManifestArg {
                name: &a.name,
                ty: a.ty.to_string(),
                default: a.default.as_deref(),
                kwarg_only: a.kwarg_only,
                annotation: a.annotation.as_ref().map(ToString::to_string),
            })
            .collect(),
        returns: op
            .schema
            .returns
            .items
            .iter()
            .map(|r| ManifestReturn {
                name: r.name.as_deref(),
                ty: r.ty.to_string(),
                annotation: r.annotation.as_ref().map(ToString::to_string),
            })
            .collect(),
        cpp: ManifestCpp {
            name: &op.cpp.name,
            return_type: &op.cpp.return_type.spelling,
            params: op.cpp.params.iter().map(|p| ManifestParam { ty: &p.ty.spelling, name: &p.name }).collect(),
        },
        rust_name: &op.rust_name,
        line: op.line,
    }
}

/// The manifest text, pretty-printed with a final newline.
pub fn emit_manifest(model: &Model, note: &str) -> String {
    let manifest = Manifest {
        generated: note,
        op_count: model.ops.len(),
        required_count: model.required().count(),
        ops: model.ops.iter().map(manifest_op).collect(),
    };
    let mut text = serde_json::to_string_pretty(&manifest).expect("the manifest serializes");
    text.push('\n');
    text
}
