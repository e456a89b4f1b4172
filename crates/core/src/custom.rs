//! A backend's own ops, declared in regen.toml as `[[custom_op]]` tables: a namespace of their own,
//! a full schema, optionally a backward op and the CPU registration.
//!
//! Each declaration becomes an [`Op`] like the header's: its C++ declaration is written from the
//! schema with torchgen's spellings (one table, [`TYPES`]) and parsed by the header's own C++
//! parser, so `abi::lower_abi`, the trait method, the entry point and the wrapper come out of the
//! same code as for aten ops. `emit_custom` adds what only custom ops have: the `TORCH_LIBRARY`
//! definitions, their registrations and, for an op with a backward, the autograd node.
//!
//! The backward convention: the backward op's arguments are, by name, `grad` (the gradient of
//! the only output) or `grad_<output>` (of a named output), and any forward argument or output
//! it needs (the node saves exactly these); it returns one gradient per name in
//! `differentiable` (forward `Tensor` arguments; all of them when not given), in that order.
//! Outputs without a `grad_` argument are not differentiable.

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use crate::diagnostic::{Diagnostic, diag_at};
use crate::ir::{Op, SchemaType, qualified_name};
use crate::lower::kind_of;
use crate::rust_name::{custom_rust_name, is_c_name};

/// A `[[custom_op]]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCustomOp {
    schema: Spanned<String>,
    backward: Option<Spanned<String>>,
    differentiable: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    cpu: bool,
}

/// A schema type custom ops may use: its C++ parameter and return spellings (torchgen's), and
/// the `IValue` accessor that reads it back when the autograd node saves it (`None`: a tensor,
/// saved with `save_for_backward`; types without a row entry cannot be saved).
pub struct TypeRow {
    pub schema: &'static str,
    pub param: &'static str,
    pub ret: Option<&'static str>,
    pub saved: Saved,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    /// `ctx->save_for_backward`.
    Tensor,
    /// `ctx->saved_data[name]`, read back with this `IValue` method.
    Value(&'static str),
    /// Not kept for a backward.
    No,
}

#[rustfmt::skip]
pub const TYPES: &[TypeRow] = &[
    TypeRow { schema: "Tensor", param: "const at::Tensor &", ret: Some("at::Tensor"), saved: Saved::Tensor },
    TypeRow { schema: "Tensor?", param: "const ::std::optional<at::Tensor> &", ret: None, saved: Saved::Value("toOptional<at::Tensor>()") },
    TypeRow { schema: "Tensor[]", param: "at::TensorList", ret: Some("::std::vector<at::Tensor>"), saved: Saved::No },
    TypeRow { schema: "int", param: "int64_t", ret: Some("int64_t"), saved: Saved::Value("toInt()") },
    TypeRow { schema: "int?", param: "::std::optional<int64_t>", ret: None, saved: Saved::Value("toOptional<int64_t>()") },
    TypeRow { schema: "int[]", param: "at::IntArrayRef", ret: None, saved: Saved::Value("toIntVector()") },
    TypeRow { schema: "float", param: "double", ret: Some("double"), saved: Saved::Value("toDouble()") },
    TypeRow { schema: "float?", param: "::std::optional<double>", ret: None, saved: Saved::Value("toOptional<double>()") },
    TypeRow { schema: "bool", param: "bool", ret: Some("bool"), saved: Saved::Value("toBool()") },
    TypeRow { schema: "Scalar", param: "const at::Scalar &", ret: None, saved: Saved::Value("toScalar()") },
    TypeRow { schema: "str", param: "c10::string_view", ret: None, saved: Saved::No },
];

/// The row of a schema type, if custom ops may use it.
pub fn type_row(ty: &SchemaType) -> Option<&'static TypeRow> {
    let spelled = ty.to_string();
    TYPES.iter().find(|r| r.schema == spelled)
}

/// What one argument of a backward op receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackwardInput {
    /// The gradient of forward output `.0`.
    Grad(usize),
    /// Forward argument `.0`, saved.
    Arg(usize),
    /// Forward output `.0`, saved.
    Output(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backward {
    /// The backward op's key (`ns::name.overload`), itself a custom op.
    pub key: String,
    /// One per argument of the backward op, in order.
    pub inputs: Vec<BackwardInput>,
    /// The forward argument each of the backward's returns is the gradient of, in order.
    pub differentiable: Vec<usize>,
}

/// One declared op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomOp {
    /// Keyed `ns::name.overload` (what `native_calls` and `selection.json` show); its Rust name is
    /// `ns_name_overload`, so it never meets an aten op's.
    pub op: Op,
    /// Also registered for CPU tensors: the kernel reads host memory, so it serves both.
    pub cpu: bool,
    pub backward: Option<Backward>,
    /// Where its `schema` string stands in regen.toml, for diagnostics found later (selection).
    pub span: Range<usize>,
}

/// Namespaces PyTorch itself defines ops in.
const TORCH_NAMESPACES: &[&str] = &["aten", "prim", "prims", "_c10d_functional", "_quantized", "quantized"];

/// Builds one op from its schema, or says what is wrong (message, byte offset in the schema).
fn lower_one(text: &str, line: u32) -> Result<Op, (String, usize)> {
    let schema = match crate::parse::schema::parse_schema(text) {
        Ok((_, s)) => s,
        Err(nom::Err::Error(e) | nom::Err::Failure(e)) => {
            return Err((format!("in schema: {}", e.message), text.len() - e.at.len()));
        }
        Err(nom::Err::Incomplete(_)) => return Err(("in schema: unexpected end".into(), text.len())),
    };
    if TORCH_NAMESPACES.contains(&schema.namespace.as_str()) {
        return Err((
            format!(
                "custom ops need a namespace of their own; `{}` is PyTorch's (e.g. `mydev::{}`)",
                schema.namespace, schema.name
            ),
            0,
        ));
    }
    let ns = schema.namespace.as_str();
    if !is_c_name(ns) {
        return Err((
            format!("namespace `{ns}` cannot name a C++ library (TORCH_LIBRARY): it is a C++ keyword or reserved name"),
            0,
        ));
    }
    let at = |needle: &str| text.find(needle).unwrap_or(0);
    let mut params = Vec::new();
    for a in &schema.arguments {
        if a.annotation.is_some() {
            return Err((
                format!(
                    "argument `{}`: custom ops with alias annotations (views, in-place, out=) are not supported",
                    a.name
                ),
                at(&a.to_string()),
            ));
        }
        let row = type_row(&a.ty).ok_or_else(|| (unsupported(&a.ty), at(&a.to_string())))?;
        params.push(format!("{} {}", row.param, a.name));
    }
    let mut rets = Vec::new();
    for r in &schema.returns.items {
        if r.annotation.is_some() {
            return Err(("custom ops with aliased returns (views, in-place) are not supported".into(), at(" -> ") + 4));
        }
        let ret = type_row(&r.ty).and_then(|row| row.ret);
        rets.push(
            ret.ok_or_else(|| (format!("return type `{}` is not supported in custom ops", r.ty), at(" -> ") + 4))?,
        );
    }
    let ret = match rets.len() {
        0 => "void".to_owned(),
        1 if !schema.returns.parenthesized => rets[0].to_owned(),
        _ => format!("::std::tuple<{}>", rets.join(",")),
    };
    let rust = custom_rust_name(&schema.namespace, &schema.name, &schema.overload);
    let decl = format!("{ret} {rust}({})", params.join(", "));
    let mut cache = crate::parse::cpp::CppTypeCache::default();
    let cpp = match crate::parse::cpp::parse_cpp_decl(&decl, &mut cache) {
        Ok((_, cpp)) => cpp,
        Err(_) => return Err((format!("regen cannot spell this schema in C++ (`{decl}`)"), 0)),
    };
    Ok(Op {
        key: qualified_name(&schema.namespace, &schema.key()),
        schema_text: schema.to_string(),
        kind: kind_of(&schema),
        cpp,
        dispatch: true,
        default: false,
        family: None,
        rust_name: rust,
        line,
        schema,
    })
}

fn unsupported(ty: &SchemaType) -> String {
    let known: Vec<&str> = TYPES.iter().map(|r| r.schema).collect();
    format!("type `{ty}` is not supported in custom ops (supported: {})", known.join(", "))
}

/// Resolves every `[[custom_op]]`; errors go to `errors`, positioned in `source`.
pub(crate) fn resolve(raw: Vec<RawCustomOp>, source: &str, errors: &mut Vec<Diagnostic>) -> Vec<CustomOp> {
    let line_of = |span: &Range<usize>| source[..span.start.min(source.len())].matches('\n').count() as u32 + 1;
    // Inside the quoted schema: the opening quote, then the offset (schemas rarely need escapes).
    let inside = |span: &Range<usize>, offset: usize| (span.start + 1 + offset)..span.end;
    let mut ops: Vec<(CustomOp, &RawCustomOp)> = Vec::new();
    for r in &raw {
        let span = r.schema.span();
        match lower_one(r.schema.get_ref(), line_of(&span)) {
            Ok(op) => {
                if let Some((first, _)) = ops.iter().find(|(c, _)| c.op.key == op.key || c.op.rust_name == op.rust_name)
                {
                    let message = if first.op.key == op.key {
                        format!("custom op `{}` is declared twice (first on line {})", op.key, first.op.line)
                    } else {
                        format!(
                            "custom op `{}` gets the Rust name `{}`, already `{}`'s",
                            op.key, op.rust_name, first.op.key
                        )
                    };
                    errors.push(diag_at(source, &span, message));
                    continue;
                }
                ops.push((CustomOp { op, cpu: r.cpu, backward: None, span }, r));
            }
            Err((message, offset)) => errors.push(diag_at(source, &inside(&span, offset), message)),
        }
    }
    let backwards: Vec<Option<Backward>> = ops
        .iter()
        .map(|(c, r)| {
            let differentiable = r.differentiable.as_deref();
            match (&r.backward, differentiable) {
                (Some(b), _) => resolve_backward(c, b, differentiable, &ops, source, errors),
                (None, Some(d)) => {
                    let span = d.first().map_or(0..0, Spanned::span);
                    errors.push(diag_at(
                        source,
                        &span,
                        format!("`differentiable` needs a `backward` op (`{}`)", c.op.key),
                    ));
                    None
                }
                (None, None) => None,
            }
        })
        .collect();
    ops.into_iter().zip(backwards).map(|((c, _), backward)| CustomOp { backward, ..c }).collect()
}

fn resolve_backward(
    forward: &CustomOp,
    name: &Spanned<String>,
    differentiable: Option<&[Spanned<String>]>,
    ops: &[(CustomOp, &RawCustomOp)],
    source: &str,
    errors: &mut Vec<Diagnostic>,
) -> Option<Backward> {
    let mut error = |span: &Range<usize>, message: String| errors.push(diag_at(source, span, message));
    let fwd = &forward.op.schema;
    let Some((bwd, raw)) = ops.iter().find(|(c, _)| c.op.key == *name.get_ref()) else {
        let known: Vec<&str> = ops.iter().map(|(c, _)| c.op.key.as_str()).collect();
        error(
            &name.span(),
            format!(
                "backward `{}` is not a declared custom op (declare it in its own [[custom_op]]; declared: {})",
                name.get_ref(),
                known.join(", ")
            ),
        );
        return None;
    };
    if bwd.op.key == forward.op.key {
        error(&name.span(), format!("`{}` cannot be its own backward", forward.op.key));
        return None;
    }
    let bspan = raw.schema.span();
    let at = |needle: String| {
        let offset = raw.schema.get_ref().find(&needle).unwrap_or(0);
        (bspan.start + 1 + offset)..bspan.end
    };
    let tensor = |ty: &SchemaType| ty.to_string() == "Tensor";
    let mut inputs = Vec::new();
    let mut ok = true;
    for a in &bwd.op.schema.arguments {
        let name = a.name.as_str();
        let output = |n: &str| fwd.returns.items.iter().position(|r| r.name.as_deref() == Some(n));
        let input = if name == "grad" && fwd.returns.items.len() == 1 {
            Some((BackwardInput::Grad(0), true))
        } else if let Some(j) = name.strip_prefix("grad_").and_then(output) {
            Some((BackwardInput::Grad(j), tensor(&fwd.returns.items[j].ty)))
        } else if let Some(i) = fwd.arguments.iter().position(|f| f.name == name) {
            let same = fwd.arguments[i].ty == a.ty;
            let savable = type_row(&a.ty).is_some_and(|r| r.saved != Saved::No);
            Some((BackwardInput::Arg(i), same && savable))
        } else {
            output(name).map(|j| (BackwardInput::Output(j), tensor(&fwd.returns.items[j].ty) && tensor(&a.ty)))
        };
        match input {
            Some((input, true)) if tensor(&a.ty) || matches!(input, BackwardInput::Arg(_)) => inputs.push(input),
            Some(_) => {
                ok = false;
                error(
                    &at(a.to_string()),
                    format!(
                        "backward argument `{name}` must have the type of what it receives from `{}` (a gradient or output: Tensor; an argument: its own type, one that can be saved)",
                        forward.op.key
                    ),
                );
            }
            None => {
                ok = false;
                let grads = if fwd.returns.items.len() == 1 {
                    "`grad`".to_owned()
                } else {
                    fwd.returns
                        .items
                        .iter()
                        .filter_map(|r| r.name.as_ref().map(|n| format!("`grad_{n}`")))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                error(
                    &at(a.to_string()),
                    format!(
                        "backward argument `{name}` is neither a gradient ({grads}) nor an argument or named output of `{}`",
                        forward.op.key
                    ),
                );
            }
        }
    }
    if ok && !inputs.iter().any(|i| matches!(i, BackwardInput::Grad(_))) {
        ok = false;
        error(
            &bspan,
            format!("backward `{}` takes no gradient (an argument named `grad` or `grad_<output>`)", bwd.op.key),
        );
    }
    let mut targets = Vec::new();
    match differentiable {
        Some(list) => {
            for d in list {
                match fwd.arguments.iter().position(|a| a.name == *d.get_ref() && tensor(&a.ty)) {
                    Some(i) => targets.push(i),
                    None => {
                        ok = false;
                        error(&d.span(), format!("`{}` is not a Tensor argument of `{}`", d.get_ref(), forward.op.key));
                    }
                }
            }
        }
        None => targets.extend(fwd.arguments.iter().enumerate().filter(|(_, a)| tensor(&a.ty)).map(|(i, _)| i)),
    }
    let returns = &bwd.op.schema.returns.items;
    if ok && (returns.len() != targets.len() || !returns.iter().all(|r| tensor(&r.ty))) {
        ok = false;
        let names: Vec<&str> = targets.iter().map(|&i| fwd.arguments[i].name.as_str()).collect();
        error(
            &at(" -> ".into()),
            format!(
                "backward `{}` must return one Tensor per differentiable argument of `{}` ({}), in that order",
                bwd.op.key,
                forward.op.key,
                names.join(", ")
            ),
        );
    }
    ok.then(|| Backward { key: bwd.op.key.clone(), inputs, differentiable: targets })
}

#[cfg(test)]
mod tests {
    use crate::config::parse_config;
    use crate::emit_custom::emit_custom;
    use crate::ir::Model;

    const SCATTER: &str = r#"device = "mydev"
[[custom_op]]
schema = "mydev::scatter_sum(Tensor src, Tensor index, int dim, int dim_size) -> Tensor"
backward = "mydev::scatter_sum_backward"
differentiable = ["src"]
cpu = true

[[custom_op]]
schema = "mydev::scatter_sum_backward(Tensor grad, Tensor index, int dim) -> Tensor"
"#;

    /// The first error of `config`, rendered against regen.toml.
    fn error(config: &str) -> String {
        let errors = parse_config(config).expect_err("the config is rejected");
        errors[0].render("regen.toml")
    }

    #[test]
    fn a_rust_name_an_aten_entry_point_has_is_an_error_at_the_schema() {
        // `add::out` gets the Rust name `add_out`, which the implemented aten `add.out` has.
        let text = "implement = [\"add.out\"]\n\n[[custom_op]]\nschema = \"add::out(Tensor self) -> Tensor\"\n";
        let config = parse_config(text).unwrap();
        let path = format!("{}/../../fixtures/torch-2.15.0/RegistrationDeclarations.h", env!("CARGO_MANIFEST_DIR"));
        let model = crate::load_header(&std::fs::read(path).unwrap()).unwrap().model;
        let errors = config.select(&model).expect_err("the clash is rejected");
        let rendered = errors[0].render("regen.toml");
        assert!(
            rendered
                .starts_with("regen.toml:4:10: error: custom op `add::out` gets the Rust name `add_out` of `add.out`"),
            "{rendered}"
        );
    }

    #[test]
    fn a_custom_op_is_an_op_like_the_headers() {
        let config = parse_config(SCATTER).unwrap();
        let [fwd, bwd] = &config.custom_ops[..] else { panic!("two ops") };
        assert_eq!(fwd.op.key, "mydev::scatter_sum");
        assert_eq!(fwd.op.rust_name, "mydev_scatter_sum");
        assert_eq!(fwd.op.qualified(), "mydev::scatter_sum");
        assert_eq!(fwd.op.cpp.params[0].ty.spelling, "const at::Tensor &");
        assert_eq!(fwd.op.cpp.return_type.spelling, "at::Tensor");
        assert!(fwd.cpu && !bwd.cpu);
        let b = fwd.backward.as_ref().unwrap();
        assert_eq!(b.key, "mydev::scatter_sum_backward");
        assert_eq!(
            b.inputs,
            [super::BackwardInput::Grad(0), super::BackwardInput::Arg(1), super::BackwardInput::Arg(2)]
        );
        assert_eq!(b.differentiable, [0]);
        assert!(bwd.backward.is_none());
    }

    #[test]
    fn generated_registrations_trait_and_autograd_node() {
        let config = parse_config(SCATTER).unwrap();
        let model = Model { ops: Vec::new() };
        let selection = config.select(&model).unwrap();
        let cpp = String::from_utf8(emit_custom(&selection, &config, "note").remove(0).contents).unwrap();
        for line in [
            "TORCH_LIBRARY(mydev, m) {",
            "  m.def(\"mydev::scatter_sum(Tensor src, Tensor index, int dim, int dim_size) -> Tensor\");",
            "TORCH_LIBRARY_IMPL(mydev, PrivateUse1, m) {",
            "  m.impl(\"scatter_sum\", TORCH_FN(regen_generated::wrap_mydev_scatter_sum));",
            "  m.impl(\"scatter_sum\", TORCH_FN(regen_generated::cpu_mydev_scatter_sum));",
            "TORCH_LIBRARY_IMPL(mydev, AutogradPrivateUse1, m) {",
            "TORCH_LIBRARY_IMPL(mydev, AutogradCPU, m) {",
            "    at::AutoDispatchBelowADInplaceOrView guard;",
            "    ctx->saved_data[\"dim\"] = dim;",
            "    ctx->save_for_backward({index});",
            "    auto result = backward_op.call(grads[0], saved[0], ctx->saved_data[\"dim\"].toInt());",
            "    torch::autograd::variable_list gradients(4);",
            "    gradients[0] = result;",
        ] {
            assert!(cpp.lines().any(|l| l == line), "missing {line:?} in\n{cpp}");
        }
        // The backward op has no CPU registration of its own (cpu = false there).
        assert!(!cpp.contains("cpu_mydev_scatter_sum_backward"));
        let rust = crate::emit_rust::emit_rust(&selection, &config, "note");
        // Custom ops are keyed by their qualified name, which is also what the entry point reports.
        assert!(rust.contains("    0 kernel \"mydev::scatter_sum\" \"mydev::scatter_sum\" mydev_kernel_mydev_scatter_sum\n        fn mydev_scatter_sum(src: TensorRef<'_> = abi::regen_tensor, "), "{rust}");
        assert!(
            rust.contains("    1 kernel \"mydev::scatter_sum_backward\" \"mydev::scatter_sum_backward\" "),
            "{rust}"
        );
        // Without custom ops there is no file.
        let plain = parse_config("device = \"mydev\"\n").unwrap();
        assert!(emit_custom(&plain.select(&model).unwrap(), &plain, "note").is_empty());
    }

    #[test]
    fn two_outputs_and_saved_outputs() {
        let config = parse_config(
            r#"[[custom_op]]
schema = "ns::smax(Tensor src, Tensor index, int dim) -> (Tensor out, Tensor argmax)"
backward = "ns::smax_backward"
differentiable = ["src"]
[[custom_op]]
schema = "ns::smax_backward(Tensor grad_out, Tensor src, Tensor argmax, int dim) -> Tensor"
"#,
        )
        .unwrap();
        let b = config.custom_ops[0].backward.as_ref().unwrap();
        assert_eq!(
            b.inputs,
            [
                super::BackwardInput::Grad(0),
                super::BackwardInput::Arg(0),
                super::BackwardInput::Output(1),
                super::BackwardInput::Arg(2)
            ]
        );
        let model = Model { ops: Vec::new() };
        let selection = config.select(&model).unwrap();
        let cpp = String::from_utf8(emit_custom(&selection, &config, "note").remove(0).contents).unwrap();
        assert!(cpp.contains("ctx->save_for_backward({src, outputs[1]});"), "{cpp}");
        assert!(cpp.contains("ctx->mark_non_differentiable({outputs[1]});"), "{cpp}");
        assert!(cpp.contains("return ::std::tuple<at::Tensor,at::Tensor>(outputs[0], outputs[1]);"), "{cpp}");
        assert!(!cpp.contains("TORCH_LIBRARY_IMPL(ns, CPU, m)"), "{cpp}");
    }

    #[test]
    fn config_errors_point_into_the_config() {
        let bad_schema = "[[custom_op]]\nschema = \"mydev::f(Tensor x -> Tensor\"\n";
        assert!(
            error(bad_schema).starts_with("regen.toml:2:28: error: in schema: expected ', ' or ')' after an argument"),
            "{}",
            error(bad_schema)
        );
        let aten = "[[custom_op]]\nschema = \"aten::f(Tensor x) -> Tensor\"\n";
        assert!(error(aten).starts_with("regen.toml:2:11: error: custom ops need a namespace of their own; `aten`"));
        let unknown =
            SCATTER.replace("backward = \"mydev::scatter_sum_backward\"", "backward = \"mydev::scatter_sum_bw\"");
        assert!(
            error(&unknown)
                .starts_with("regen.toml:4:12: error: backward `mydev::scatter_sum_bw` is not a declared custom op"),
            "{}",
            error(&unknown)
        );
        let not_tensor = SCATTER.replace("differentiable = [\"src\"]", "differentiable = [\"src\", \"dim\"]");
        assert!(
            error(&not_tensor)
                .starts_with("regen.toml:5:26: error: `dim` is not a Tensor argument of `mydev::scatter_sum`"),
            "{}",
            error(&not_tensor)
        );
        let unknown_arg = SCATTER.replace("(Tensor grad, Tensor index, int dim)", "(Tensor grad, Tensor idx, int dim)");
        assert!(
            error(&unknown_arg).contains(
                "error: backward argument `idx` is neither a gradient (`grad`) nor an argument or named output of `mydev::scatter_sum`"
            ),
            "{}",
            error(&unknown_arg)
        );
        let wrong_type =
            SCATTER.replace("(Tensor grad, Tensor index, int dim)", "(Tensor grad, Tensor index, float dim)");
        assert!(
            error(&wrong_type).contains("error: backward argument `dim` must have the type"),
            "{}",
            error(&wrong_type)
        );
        let count = SCATTER.replace("differentiable = [\"src\"]\n", "");
        assert!(
            error(&count)
                .contains("must return one Tensor per differentiable argument of `mydev::scatter_sum` (src, index)"),
            "{}",
            error(&count)
        );
        let no_grad = SCATTER.replace("(Tensor grad, Tensor index, int dim)", "(Tensor index, int dim)");
        assert!(error(&no_grad).contains("takes no gradient"), "{}", error(&no_grad));
        let own = SCATTER.replace("backward = \"mydev::scatter_sum_backward\"", "backward = \"mydev::scatter_sum\"");
        assert!(error(&own).contains("cannot be its own backward"), "{}", error(&own));
        let orphan = "[[custom_op]]\nschema = \"ns::f(Tensor x) -> Tensor\"\ndifferentiable = [\"x\"]\n";
        assert!(
            error(orphan).starts_with("regen.toml:3:19: error: `differentiable` needs a `backward` op"),
            "{}",
            error(orphan)
        );
        let view = "[[custom_op]]\nschema = \"ns::f(Tensor(a!) x) -> Tensor(a!)\"\n";
        assert!(error(view).contains("alias annotations"), "{}", error(view));
        let ty = "[[custom_op]]\nschema = \"ns::f(Tensor x, Generator? g) -> Tensor\"\n";
        assert!(error(ty).contains("type `Generator?` is not supported in custom ops"), "{}", error(ty));
        let twice = "[[custom_op]]\nschema = \"ns::f(Tensor x) -> Tensor\"\n[[custom_op]]\nschema = \"ns::f(Tensor y) -> Tensor\"\n";
        assert!(
            error(twice).starts_with("regen.toml:4:10: error: custom op `ns::f` is declared twice (first on line 2)"),
            "{}",
            error(twice)
        );
        let clash = "[[custom_op]]\nschema = \"ns::a_b(Tensor x) -> Tensor\"\n[[custom_op]]\nschema = \"ns_a::b(Tensor y) -> Tensor\"\n";
        assert!(
            error(clash).contains("custom op `ns_a::b` gets the Rust name `ns_a_b`, already `ns::a_b`'s"),
            "{}",
            error(clash)
        );
        let field = "[[custom_op]]\nschema = \"ns::f(Tensor x) -> Tensor\"\nbackwards = \"ns::g\"\n";
        assert!(error(field).contains("unknown field `backwards`"), "{}", error(field));
    }
}
