//! Emits `ops.json`: the op model as JSON, in header order, for tooling.
//!
//! Field names are a contract with tools (see the README); new fields may be added freely. The
//! default layout is compact with one op per line (57% of the pretty size for 2.15.0; a version bump
//! still diffs op by op); `ops_json = "pretty"` in regen.toml asks for serde_json's pretty form.

use serde::Serialize;

use crate::ir::{Annotation, Model, Op, SchemaType};

/// JSON has no comments, so the `@generated` note is the manifest's first field.
#[derive(Serialize)]
struct Manifest<'a, Ops> {
    #[serde(rename = "@generated")]
    generated: &'a str,
    op_count: usize,
    required_count: usize,
    ops: Ops,
}

/// How `ops.json` is laid out (`ops_json` in regen.toml).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum JsonLayout {
    /// No spaces, one op per line.
    #[default]
    Compact,
    /// serde_json's pretty printer: one field per line, two-space indents.
    Pretty,
}

impl JsonLayout {
    /// Every layout with its regen.toml spelling.
    pub const ALL: [(&'static str, JsonLayout); 2] = [("compact", JsonLayout::Compact), ("pretty", JsonLayout::Pretty)];

    pub fn parse(s: &str) -> Option<JsonLayout> {
        Self::ALL.iter().find(|(n, _)| *n == s).map(|(_, l)| *l)
    }
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

/// A value serialized as the string its `Display` prints, written straight into the output
/// (no `String` per argument type and annotation: ~30,000 of them in a release).
struct Shown<'a, T>(&'a T);

impl<T: std::fmt::Display> Serialize for Shown<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self.0)
    }
}

#[derive(Serialize)]
struct ManifestArg<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    ty: Shown<'a, SchemaType>,
    default: Option<&'a str>,
    kwarg_only: bool,
    annotation: Option<Shown<'a, Annotation>>,
}

#[derive(Serialize)]
struct ManifestReturn<'a> {
    name: Option<&'a str>,
    #[serde(rename = "type")]
    ty: Shown<'a, SchemaType>,
    annotation: Option<Shown<'a, Annotation>>,
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
                ty: Shown(&a.ty),
                default: a.default.as_deref(),
                kwarg_only: a.kwarg_only,
                annotation: a.annotation.as_ref().map(Shown),
            })
            .collect(),
        returns: op
            .schema
            .returns
            .items
            .iter()
            .map(|r| ManifestReturn {
                name: r.name.as_deref(),
                ty: Shown(&r.ty),
                annotation: r.annotation.as_ref().map(Shown),
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

/// The manifest text in `layout`, with a final newline.
pub fn emit_manifest(model: &Model, note: &str, layout: JsonLayout) -> Vec<u8> {
    let (op_count, required_count) = (model.ops.len(), model.required().count());
    // About 1 KB per op compact (995 bytes in 2.15.0): one allocation, no growth by doubling.
    let mut out = Vec::with_capacity(model.ops.len() * 1100 + 1024);
    match layout {
        JsonLayout::Pretty => {
            let ops: Vec<ManifestOp<'_>> = model.ops.iter().map(manifest_op).collect();
            let manifest = Manifest { generated: note, op_count, required_count, ops };
            serde_json::to_writer_pretty(&mut out, &manifest).expect("the manifest serializes");
        }
        JsonLayout::Compact => {
            // Written op by op, so no op list is held besides the model (peak memory is a goal).
            let head = Manifest { generated: note, op_count, required_count, ops: [(); 0] };
            serde_json::to_writer(&mut out, &head).expect("the manifest serializes");
            out.truncate(out.len() - "[]}".len());
            for (k, op) in model.ops.iter().enumerate() {
                out.extend_from_slice(if k == 0 { b"[\n" } else { b",\n" });
                serde_json::to_writer(&mut out, &manifest_op(op)).expect("an op serializes");
            }
            out.extend_from_slice(if model.ops.is_empty() { b"[]}" } else { b"\n]}" });
        }
    }
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_layouts_hold_the_same_json_and_compact_puts_one_op_per_line() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/torch-2.15.0/RegistrationDeclarations.h");
        let model = crate::load_header(&std::fs::read(path).unwrap()).unwrap().model;
        let compact = emit_manifest(&model, "note", JsonLayout::Compact);
        let pretty = emit_manifest(&model, "note", JsonLayout::Pretty);
        let value = |b: &[u8]| serde_json::from_slice::<serde_json::Value>(b).unwrap();
        assert_eq!(value(&compact), value(&pretty));
        assert_eq!(value(&compact)["ops"].as_array().unwrap().len(), 3110);
        let text = String::from_utf8(compact).unwrap();
        assert_eq!(text.lines().count(), 3110 + 2, "a head line, one line per op, the closing line");
        assert!(text.lines().nth(1).unwrap().starts_with("{\"name\":"), "{}", &text[..300]);
        assert!(text.len() * 3 < pretty.len() * 2, "compact {} bytes, pretty {}", text.len(), pretty.len());

        let empty = crate::ir::Model { ops: Vec::new() };
        let empty = emit_manifest(&empty, "note", JsonLayout::Compact);
        assert_eq!(value(&empty)["ops"], serde_json::json!([]));
    }
}
