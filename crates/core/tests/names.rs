//! Argument and op names that are legal in a schema but reserved in Rust or C++ come out escaped
//! (through `rust_name`, the one naming module) in every generated file, and the files stay valid.

use regen_core::config::{Config, parse_config};
use regen_core::emit::emit_all;
use regen_core::load_header;
use regen_core::rust_name::{cpp_param, rust_binding};

/// Two required ops whose names are legal in a schema and awkward in the generated code. The
/// regen-kernels-check crate compiles what regen generates from this header, so the escaping is
/// proven by rustc, not by text alone.
const HEADER: &str = include_str!("../../kernels-check/awkward/RegistrationDeclarations.h");

fn generate(config: &Config) -> Vec<(String, String)> {
    let loaded = load_header(HEADER.as_bytes()).unwrap_or_else(|e| panic!("{e:?}"));
    let selection = config.select(&loaded.model).unwrap_or_else(|e| panic!("{e:?}"));
    emit_all(&loaded.model, &selection, config, "note")
        .into_iter()
        .map(|f| (f.name, String::from_utf8(f.contents).unwrap()))
        .collect()
}

fn file<'a>(files: &'a [(String, String)], name: &str) -> &'a str {
    &files.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no {name}")).1
}

fn cpp(files: &[(String, String)]) -> String {
    files.iter().filter(|(n, _)| n.starts_with("register_")).map(|(_, t)| t.as_str()).collect()
}

#[test]
fn reserved_argument_names_are_escaped_in_rust_and_cpp() {
    let files = generate(&Config::default());
    let rust = file(&files, "kernels.rs");
    assert!(
        rust.contains(
            "fn f(int: TensorRef<'_> = abi::regen_tensor, kernels_: TensorRef<'_> = abi::regen_tensor, regen_a0_: i64 = i64, n: i64 = i64, n_4: i64 = i64, tensor: f64 = f64, null: i64 = i64, my_f: i64 = i64) -> Tensor"
        ),
        "{rust}"
    );
    assert!(
        rust.contains(
            "fn type_op(self_: TensorRef<'_> = abi::regen_tensor, unsafe_: TensorRef<'_> = abi::regen_tensor, __: TensorRef<'_> = abi::regen_tensor) -> () {};"
        ),
        "{rust}"
    );
    let cpp = cpp(&files);
    assert!(
        cpp.contains(
            "at::Tensor wrap_f(const at::Tensor & int_, const at::Tensor & kernels, int64_t regen_a0_, int64_t N, int64_t n, double Tensor_, int64_t NULL_, int64_t my_f) {"
        ),
        "{cpp}"
    );
    assert!(cpp.contains("auto regen_a0 = ::regen::lift_tensor(int_, \"aten::f argument 'int'\");"), "{cpp}");
    assert!(cpp.contains("regen_kernel_f(regen_tensor int_, regen_tensor kernels, int64_t regen_a0_,"), "{cpp}");
    // The in-place op returns its own argument, by its C++ name.
    assert!(
        cpp.contains("at::Tensor & wrap_type_op(at::Tensor & self, const at::Tensor & unsafe, const at::Tensor & _) {"),
        "{cpp}"
    );
    assert!(cpp.contains("  return self;\n"), "{cpp}");
}

#[test]
fn a_parameter_never_hides_the_entry_point_its_wrapper_calls() {
    let config = parse_config("symbol_prefix = \"my\"\n").unwrap();
    let cpp = cpp(&generate(&config));
    assert!(cpp.contains("int64_t my_f_) {"), "{cpp}");
    assert!(cpp.contains("::regen::check(my_f(regen_a0, "), "{cpp}");
}

#[test]
fn escaping_leaves_every_real_argument_name_alone() {
    for release in ["1.13.1", "2.4.1", "2.7.1", "2.10.0", "2.13.0", "2.15.0"] {
        let path = format!("{}/../../fixtures/torch-{release}/RegistrationDeclarations.h", env!("CARGO_MANIFEST_DIR"));
        let model = load_header(&std::fs::read(path).unwrap()).unwrap().model;
        for op in &model.ops {
            for a in &op.schema.arguments {
                assert_eq!(cpp_param(&a.name), a.name.as_str(), "torch {release}: {}", op.key);
                let binding = rust_binding(&a.name);
                assert!(binding == regen_core::rust_name::snake_case(&a.name) || binding.ends_with('_'), "{binding}");
            }
        }
    }
}

/// A required op declared by `schema` with one Tensor argument and one result.
fn line(schema_name: &str, cpp_name: &str) -> String {
    format!(
        r#"at::Tensor {cpp_name}(const at::Tensor & self); // {{"schema": "aten::{schema_name}(Tensor self) -> Tensor", "dispatch": "True", "default": "False"}}"#
    )
}

#[test]
fn ops_that_mangle_to_one_name_are_an_error_at_the_second_name() {
    for (first, second, rust) in [
        ("f.Tensor", "f.tensor", "f_tensor"),
        ("f.out_", "f.out__", "f_out_underscore"),
        ("__and__", "dunder_and", "dunder_and"),
        ("where", "where_op", "where_op"),
        ("a_b", "a__b", "a_b"),
    ] {
        let text = format!("{}\n{}\n", line(first, "f"), line(second, "f"));
        let errors = load_header(text.as_bytes()).expect_err("the clash is an error");
        let second_line = text.lines().nth(1).unwrap();
        let col = second_line.find(&format!("aten::{second}(")).unwrap() + "aten::".len() + 1;
        assert_eq!(
            errors[0].render("h").lines().next().unwrap(),
            format!("h:2:{col}: error: op `{second}` gets Rust name `{rust}`, already taken by `{first}` (line 1)")
        );
    }
}

#[test]
fn custom_op_arguments_named_like_the_autograd_nodes_locals_are_escaped() {
    let config = parse_config(include_str!("../../kernels-check/awkward/regen.toml")).unwrap();
    let files = generate(&config);
    let cpp = file(&files, "register_custom.cpp");
    for line in [
        "at::Tensor cpu_mydev_f(const at::Tensor & result_, const at::Tensor & op_, int64_t ctx_) {",
        "  return as_cpu(wrap_mydev_f(result_, op_, ctx_));",
        "    auto result = op.call(result_, op_, ctx_);",
        "    ctx->saved_data[\"ctx\"] = ctx_;",
        "    ctx->save_for_backward({op_});",
        "  auto outputs = Autograd_mydev_f::apply(result_, op_, ctx_);",
    ] {
        assert!(cpp.lines().any(|l| l == line), "missing {line:?} in\n{cpp}");
    }
    assert!(
        file(&files, "kernels.rs").contains(
            "fn mydev_f(result: TensorRef<'_> = abi::regen_tensor, op: TensorRef<'_> = abi::regen_tensor, ctx: i64 = i64) -> Tensor"
        ),
        "{}",
        file(&files, "kernels.rs")
    );
}
