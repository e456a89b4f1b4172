//! The bounded fuzz run of the default test suite (fixed seed, a few thousand executions), and
//! the inputs fuzzing found, each kept as a regression test through the same oracle.

use regen_fuzz::{Corpus, Input, Outcome, exec, run};

fn header_only(header: &str) -> Input {
    Input { old: header.to_owned(), header: header.as_bytes().to_vec(), config: None }
}

#[test]
fn bounded_run_finds_nothing() {
    let corpus = Corpus::load(&Corpus::fixtures_dir()).expect("the fixture headers");
    let report = run(&corpus, 13, 3000, 2, std::time::Duration::from_secs(3600), &|_, _| {});
    let shown: Vec<String> = report
        .findings
        .iter()
        .map(|f| format!("execution {} ({}): {}", f.index, f.finding.kind, f.finding.message))
        .collect();
    assert!(report.findings.is_empty(), "{}\n{}", report.summary(), shown.join("\n"));
    // The run reaches the emitters, not only the parser's errors.
    assert!(report.outcomes.get("generated").is_some_and(|&n| n > 300), "{}", report.summary());
}

/// Issue 13's line: the op `_` became the Rust method `_` and emit_rust panicked.
#[test]
fn an_op_named_underscore_is_rejected_at_its_name() {
    let line = r#"Tensor & add_(const Tensor & self, const Tensor & other); // {"schema": "aten::_(Tensor(a!) self, Tensor other) -> Tensor(a!)", "dispatch": "True", "default": "False"}"#;
    let outcome = exec(&header_only(&format!("{line}\n"))).expect("no finding");
    assert!(matches!(outcome, Outcome::Rejected("header", ref m) if m.contains("op name `_`")), "{outcome:?}");
}

/// Found by the fuzzer (seed 1): `symbol_prefix = "_"` made entry points such as `__acos_inplace`,
/// reserved names at global scope.
#[test]
fn a_symbol_prefix_starting_with_an_underscore_is_rejected() {
    let line = r#"Tensor & acos_(Tensor & self); // {"schema": "aten::acos_(Tensor(a!) self) -> Tensor(a!)", "dispatch": "True", "default": "False"}"#;
    let input = Input { config: Some("symbol_prefix = \"_\"\nimplement = [\"acos_\"]\n".into()), ..header_only(line) };
    let outcome = exec(&input).expect("no finding");
    assert!(
        matches!(outcome, Outcome::Rejected("config", ref m) if m.contains("must start with a letter")),
        "{outcome:?}"
    );
}

/// Found by the fuzzer (seed 1): a position on a lone `\r` in regen.toml got a column past its
/// line, and the "no op declarations" error quoted a line with its trailing tab.
#[test]
fn positions_on_blank_lines_are_on_the_line() {
    let input = Input {
        config: Some("\r".into()),
        ..header_only(
            "at::Tensor f(const at::Tensor & self); // {\"schema\": \"aten::f(Tensor self) -> Tensor\", \"dispatch\": \"True\", \"default\": \"False\"}\n",
        )
    };
    assert!(matches!(exec(&input), Ok(Outcome::Rejected("config", _))), "{:?}", exec(&input));
    assert!(
        matches!(exec(&header_only("\t\n")), Ok(Outcome::Rejected("header", _))),
        "{:?}",
        exec(&header_only("\t\n"))
    );
}

/// Names legal in a schema and reserved in Rust or C++ get through to valid outputs.
#[test]
fn keyword_names_are_generated_escaped() {
    let line = r#"at::Tensor & type(at::Tensor & self, const at::Tensor & int, int64_t kernels, int64_t regen_a0, double _); // {"schema": "aten::type(Tensor(a!) self, Tensor int, int kernels, int regen_a0, float _) -> Tensor(a!)", "dispatch": "True", "default": "False"}"#;
    assert_eq!(exec(&header_only(&format!("{line}\n"))), Ok(Outcome::Generated));
}

/// Kernel groups (an inline `implement` table, as the mutator writes them) reach the emitters, and
/// the oracle reads the grouped `kernels!` blocks; a group name that is no snake_case identifier
/// is the config's error.
#[test]
fn grouped_configs_are_generated_and_checked() {
    let line = r#"Tensor & add_out(const Tensor & self, const Tensor & other, const Scalar & alpha, Tensor & out); // {"schema": "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)", "dispatch": "True", "default": "False"}"#;
    let with = |config: &str| Input { config: Some(config.to_owned()), ..header_only(&format!("{line}\n")) };
    let outcome = exec(&with("implement = { arith = [\"add.out\"], empty = [] }\n")).expect("no finding");
    assert!(matches!(outcome, Outcome::Generated), "{outcome:?}");
    let outcome = exec(&with("implement = { \"fn\" = [\"add.out\"], \"Bad\" = [] }\n")).expect("no finding");
    assert!(matches!(outcome, Outcome::Rejected("config", ref m) if m.contains("snake_case")), "{outcome:?}");
}
