//! The `regen` binary on the real header of the pinned release (crates/kernels/torch-version) and
//! on corrupted copies of it: exit status, `file:line:col` diagnostics, an untouched output
//! folder, and byte-identical outputs.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ADD_OUT: &str =
    r#""schema": "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)""#;

fn fixture(release: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../fixtures/torch-{release}/RegistrationDeclarations.h"))
}

/// The pinned release's header.
fn header_text() -> String {
    std::fs::read_to_string(fixture(&common::pinned())).unwrap()
}

/// 0-based index of the line declaring `add.out` in a real header's `text`.
fn add_out_index(text: &str) -> usize {
    text.lines().position(|l| l.contains(ADD_OUT)).expect("add.out is declared")
}

fn regen(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_regen")).args(args).output().expect("regen runs")
}

struct Run {
    dir: tempfile::TempDir,
    header: PathBuf,
    out: PathBuf,
    output: Output,
}

impl Run {
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
    fn code(&self) -> i32 {
        self.output.status.code().expect("exited")
    }
}

/// Runs regen on `bytes` with an output folder already holding a previous `ops.json`.
fn run_on(bytes: &[u8]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let header = dir.path().join("RegistrationDeclarations.h");
    std::fs::write(&header, bytes).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("ops.json"), "previous run").unwrap();
    let output = regen(&["--header".as_ref(), header.as_os_str(), "--out".as_ref(), out.as_os_str()]);
    Run { dir, header, out, output }
}

/// The header with line `index` (0-based) replaced by `f(line)` (which may hold several lines).
fn with_line(index: usize, f: impl Fn(&str) -> String) -> String {
    let text = header_text();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[index] = f(&lines[index]);
    lines.join("\n") + "\n"
}

fn assert_untouched(run: &Run) {
    let names: Vec<_> = std::fs::read_dir(&run.out).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("ops.json")], "only the old file remains");
    assert_eq!(std::fs::read_to_string(run.out.join("ops.json")).unwrap(), "previous run");
}

/// Exit 2, the first diagnostic at `line`, optionally at `col`, with `message` in it,
/// the line quoted and a caret under it, and nothing written.
fn assert_error(run: &Run, line: usize, col: Option<usize>, message: &str) {
    let stderr = run.stderr();
    assert_eq!(run.code(), 2, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let first = stderr.lines().next().unwrap();
    let prefix = format!("{}:{line}:", run.header.display());
    assert!(first.starts_with(&prefix), "expected {prefix} in {first}");
    let rest = &first[prefix.len()..];
    let (col_text, msg) = rest.split_once(": error: ").unwrap_or_else(|| panic!("{first}"));
    if let Some(col) = col {
        assert_eq!(col_text, col.to_string(), "{first}");
    }
    assert!(msg.contains(message), "expected {message:?} in {first}");
    let mut lines = stderr.lines().skip(1);
    assert!(lines.next().unwrap().starts_with(&format!("{line} | ")), "{stderr}");
    assert!(lines.next().unwrap().trim_end().ends_with('^'), "{stderr}");
    assert_untouched(run);
}

#[test]
fn writes_ops_json_for_the_real_header() {
    // 2.15.0's header, whatever the pin: the figures below (861 required ops, `_cast_Byte`) are its.
    let text = std::fs::read_to_string(fixture("2.15.0")).unwrap();
    let run = run_on(text.as_bytes());
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(run.out.join("ops.json")).unwrap()).unwrap();
    let ops = json["ops"].as_array().unwrap();
    assert_eq!(ops.iter().filter(|op| op["required"] == true).count(), 861);
    let add = ops.iter().find(|op| op["name"] == "add" && op["overload"] == "out").unwrap();
    let expected_line = add_out_index(&text) + 1;
    assert_eq!(add["line"], expected_line);
    assert_eq!(
        add["schema"],
        "aten::add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)"
    );
    assert_eq!(add["dispatch"], true);
    assert_eq!(add["default"], false);
    assert_eq!(add["rust_name"], "add_out");
    let args = add["arguments"].as_array().unwrap();
    assert_eq!(
        args[2],
        serde_json::json!({"name": "alpha", "type": "Scalar", "default": "1", "kwarg_only": true, "annotation": null})
    );
    assert_eq!(args[3]["annotation"], "a!");
    assert_eq!(add["returns"], serde_json::json!([{"name": null, "type": "Tensor", "annotation": "a!"}]));
    assert_eq!(add["cpp"]["return_type"], "at::Tensor &");
    assert_eq!(add["cpp"]["params"][2], serde_json::json!({"type": "const at::Scalar &", "name": "alpha"}));
    let unnamed = ops.iter().find(|op| op["name"] == "_cast_Byte").unwrap();
    assert_eq!(unnamed["overload"], "");
    let view_list = ops.iter().find(|op| op["name"] == "split_with_sizes_copy" && op["overload"] == "out").unwrap();
    assert_eq!(view_list["arguments"][3]["type"], "Tensor[]");
    assert_eq!(view_list["arguments"][3]["annotation"], "a!");
    drop(run.dir);
}

#[test]
fn output_is_byte_identical_across_runs_and_working_directories() {
    let first = run_on(header_text().as_bytes());
    let second = run_on(header_text().as_bytes());
    let a = std::fs::read(first.out.join("ops.json")).unwrap();
    assert_eq!(a, std::fs::read(second.out.join("ops.json")).unwrap());
    // Relative paths from another working directory name the same command as absolute ones.
    let cwd = tempfile::tempdir().unwrap();
    std::fs::copy(fixture(&common::pinned()), cwd.path().join("RegistrationDeclarations.h")).unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_regen"))
        .current_dir(cwd.path())
        .args(["--header", "RegistrationDeclarations.h", "--out", "out"])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(a, std::fs::read(cwd.path().join("out/ops.json")).unwrap());
    let text = String::from_utf8(a).unwrap();
    assert!(text.contains("@generated"));
    assert!(!text.contains(cwd.path().to_str().unwrap()) && !text.contains("/tmp"));
}

/// The model in ops.json, without its `@generated` note (which names the input's hash) and,
/// if asked, without `line` fields (which comment insertion legitimately shifts).
fn model_of(run: &Run, keep_lines: bool) -> serde_json::Value {
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.out.join("ops.json")).unwrap()).unwrap();
    json.as_object_mut().unwrap().remove("@generated");
    for op in json["ops"].as_array_mut().unwrap().iter_mut().filter(|_| !keep_lines) {
        op.as_object_mut().unwrap().remove("line");
    }
    json
}

#[test]
fn harmless_variations_give_the_same_model() {
    let text = header_text();
    let baseline = model_of(&run_on(text.as_bytes()), true);
    let same_model = |variant: String, what: &str| {
        let run = run_on(variant.as_bytes());
        assert_eq!(run.code(), 0, "{what}: {}", run.stderr());
        assert!(model_of(&run, true) == baseline, "{what}");
    };
    same_model(text.replace('\n', "\r\n"), "CRLF line endings");
    same_model(text.trim_end().to_owned(), "no final newline");
    same_model(text.lines().map(|l| format!("{l}  \t\n")).collect(), "trailing spaces");
    same_model(
        text.replace(r#", "default": "#, r#", "python_module": "nn", "tags": ["core"], "default": "#),
        "extra JSON keys",
    );
    let commented: String = text.lines().map(|l| format!("// a comment\n\n{l}\n")).collect();
    assert!(model_of(&run_on(commented.as_bytes()), false) == model_of(&run_on(text.as_bytes()), false));
}

/// The line fuzzing found (issue 13): its schema names the op `_`, which became the Rust method
/// `_`, and `regen` panicked (exit 101) formatting kernels.rs.
const UNDERSCORE_OP: &str = r#"Tensor & add_(const Tensor & self, const Tensor & other); // {"schema": "aten::_(Tensor(a!) self, Tensor other) -> Tensor(a!)", "dispatch": "True", "default": "False"}"#;

#[test]
fn an_op_named_underscore_is_an_error_at_its_name() {
    let col = UNDERSCORE_OP.find("aten::_(").unwrap() + "aten::".len() + 1;
    assert_eq!(col, 80);
    let run = run_on(format!("{UNDERSCORE_OP}\n").as_bytes());
    assert_error(&run, 1, Some(col), "op name `_` has no letter or digit, so it cannot name the op's Rust method");
    // In the real header, in place of add.out.
    let index = add_out_index(&header_text());
    let run = run_on(with_line(index, |_| UNDERSCORE_OP.to_owned()).as_bytes());
    assert_error(&run, index + 1, Some(col), "op name `_` has no letter or digit");
}

#[test]
fn missing_semicolon() {
    let i = add_out_index(&header_text());
    let text = with_line(i, |l| l.replacen("); // {", ") // {", 1));
    let col = text.lines().nth(i).unwrap().find(") // {").unwrap() + 2;
    assert_error(&run_on(text.as_bytes()), i + 1, Some(col), "expected ';' after the declaration");
}

#[test]
fn truncated_json() {
    let i = add_out_index(&header_text());
    let text = with_line(i, |l| l[..l.len() - 25].to_owned());
    assert_error(&run_on(text.as_bytes()), i + 1, None, "invalid metadata: EOF while parsing");
}

#[test]
fn missing_dispatch_key() {
    let i = add_out_index(&header_text());
    let text = with_line(i, |l| l.replacen(r#" "dispatch": "True","#, "", 1));
    assert_error(&run_on(text.as_bytes()), i + 1, None, "missing field `dispatch`");
}

#[test]
fn flag_that_is_not_true_or_false() {
    let i = add_out_index(&header_text());
    let text = with_line(i, |l| l.replacen(r#""dispatch": "True""#, r#""dispatch": "true""#, 1));
    let col = text.lines().nth(i).unwrap().find(r#""true""#).unwrap() + 1;
    assert_error(&run_on(text.as_bytes()), i + 1, Some(col), r#""dispatch" must be "True" or "False", found "true""#);
}

#[test]
fn unbalanced_parentheses_in_schema() {
    let i = add_out_index(&header_text());
    let text = with_line(i, |l| l.replacen("Tensor(a!) out) -> Tensor(a!)", "Tensor(a!) out -> Tensor(a!)", 1));
    let col = text.lines().nth(i).unwrap().find(" -> Tensor(a!)").unwrap() + 1;
    assert_error(&run_on(text.as_bytes()), i + 1, Some(col), "in schema: expected ', ' or ')' after an argument");
}

#[test]
fn cpp_and_schema_argument_counts_differ() {
    let i = add_out_index(&header_text());
    let text = with_line(i, |l| l.replacen(", const at::Scalar & alpha", "", 1));
    let col = text.lines().nth(i).unwrap().find('(').unwrap() + 1;
    assert_error(&run_on(text.as_bytes()), i + 1, Some(col), "has 3 parameter(s) but the schema of `add.out` has 4");
}

#[test]
fn same_name_and_overload_twice() {
    let i = add_out_index(&header_text());
    let text = with_line(i, |l| format!("{l}\n{l}"));
    assert_error(
        &run_on(text.as_bytes()),
        i + 2,
        None,
        &format!("duplicate op `add.out` (first declared on line {})", i + 1),
    );
}

#[test]
fn invalid_utf8() {
    let i = add_out_index(&header_text());
    let text = with_line(i, |l| l.replacen("alpha=1", "alpha=\u{1}", 1));
    let mut bytes = text.into_bytes();
    let k = bytes.iter().position(|&b| b == 1).unwrap();
    bytes[k] = 0xff;
    let line_start = bytes[..k].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    assert_error(&run_on(&bytes), i + 1, Some(k - line_start + 1), "invalid UTF-8 (byte 0xff)");
}

#[test]
fn empty_file() {
    assert_error(&run_on(b""), 1, Some(1), "no op declarations found");
}

#[test]
fn garbage_line_between_declarations() {
    let i = add_out_index(&header_text());
    let text = with_line(i, |l| format!("{l}\nthis is not a declaration"));
    assert_error(&run_on(text.as_bytes()), i + 2, Some(1), "expected a C++ declaration");
}

#[test]
fn schema_without_arrow() {
    let i = add_out_index(&header_text());
    let text = with_line(i, |l| l.replacen(" -> Tensor(a!)\"", "\"", 1));
    assert_error(&run_on(text.as_bytes()), i + 1, None, "in schema: expected ' -> ' and the returns");
}

#[test]
fn empty_default() {
    let i = add_out_index(&header_text());
    let text = with_line(i, |l| l.replacen("alpha=1", "alpha=", 1));
    let col = text.lines().nth(i).unwrap().find("alpha=,").unwrap() + "alpha=".len() + 1;
    assert_error(&run_on(text.as_bytes()), i + 1, Some(col), "in schema: empty default value");
}

#[test]
fn type_nested_200000_levels_deep() {
    let i = add_out_index(&header_text());
    let deep = format!("Scalar{} alpha=1", "[]".repeat(200_000));
    let text = with_line(i, |l| l.replacen("Scalar alpha=1", &deep, 1));
    assert_error(&run_on(text.as_bytes()), i + 1, None, "in schema: type nested too deeply");
    let deep_cpp = format!("{}at::Scalar{} & alpha", "c10::optional<".repeat(200_000), ">".repeat(200_000));
    let text = with_line(i, |l| l.replacen("const at::Scalar & alpha", &deep_cpp, 1));
    assert_error(&run_on(text.as_bytes()), i + 1, None, "C++ type nested too deeply");
}

#[test]
fn every_error_of_a_phase_is_reported_in_order() {
    let text = header_text();
    let i = add_out_index(&text);
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[i + 3] = lines[i + 3].replacen(r#""default": "False""#, r#""default": "Maybe""#, 1);
    lines[i] = lines[i].replacen("); // {", ") // {", 1);
    let run = run_on((lines.join("\n") + "\n").as_bytes());
    let stderr = run.stderr();
    let headlines: Vec<&str> = stderr.lines().filter(|l| l.contains(": error: ")).collect();
    assert_eq!(headlines.len(), 2, "{stderr}");
    assert!(
        headlines[0].contains(&format!(":{}:", i + 1)) && headlines[1].contains(&format!(":{}:", i + 4)),
        "{stderr}"
    );
    assert!(stderr.ends_with("regen: 2 error(s); nothing was written\n"), "{stderr}");
    assert_untouched(&run);
}

#[test]
fn unknown_schema_type_is_a_warning_not_an_error() {
    let i = add_out_index(&header_text());
    let text = with_line(i, |l| l.replacen("Scalar alpha=1", "FutureType alpha=1", 1));
    let run = run_on(text.as_bytes());
    let stderr = run.stderr();
    assert_eq!(run.code(), 0, "{stderr}");
    let col = text.lines().nth(i).unwrap().find("FutureType").unwrap() + 1;
    let expected = format!(
        "{}:{}:{col}: warning: op `add.out` uses schema type `FutureType`, which regen does not know",
        run.header.display(),
        i + 1
    );
    assert!(stderr.starts_with(&expected), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(run.out.join("ops.json")).unwrap()).unwrap();
    let add = json["ops"].as_array().unwrap().iter().find(|op| op["key"] == "add.out").unwrap();
    assert_eq!(add["arguments"][2]["type"], "FutureType");
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    assert_eq!(regen(&["--out".as_ref(), "x".as_ref()]).status.code(), Some(2));
    assert_eq!(regen(&["--help".as_ref()]).status.code(), Some(0));
    let missing = regen(&["--header".as_ref(), "/nonexistent/h.h".as_ref(), "--out".as_ref(), "x".as_ref()]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).starts_with("/nonexistent/h.h: error: cannot read the header"));
    assert!(!Path::new("x").exists());
}

/// `--out` naming a file (issue 13): said in words, exit 2, nothing written, in both modes.
#[test]
fn out_naming_a_file_is_not_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let readme = dir.path().join("README.md");
    std::fs::write(&readme, "# mine\n").unwrap();
    let header = fixture(&common::pinned());
    for out in [readme.clone(), readme.join("generated")] {
        for check in [false, true] {
            let mut args = vec!["--header".as_ref(), header.as_os_str(), "--out".as_ref(), out.as_os_str()];
            if check {
                args.push("--check".as_ref());
            }
            let output = regen(&args);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{stderr}");
            assert_eq!(
                stderr,
                format!("{}: error: {} is not a directory\n", out.display(), readme.display()),
                "check: {check}"
            );
        }
    }
    let new = regen(&["new".as_ref(), "mydev".as_ref(), "--path".as_ref(), readme.as_os_str()]);
    assert_eq!(new.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&new.stderr),
        format!("{}: error: {} is not a directory\n", readme.display(), readme.display())
    );
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), "# mine\n");
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["README.md"], "nothing else was written");
}

/// Errors about a whole file (issue 13), in two classes: a file regen cannot read has no position
/// (`PATH: error: ...`, as a compiler reports a missing source file); an error in a file's
/// contents, even one about the file as a whole, is at `PATH:LINE:COL:` with the line and a caret.
#[test]
fn whole_file_errors_have_a_position_exactly_when_they_are_about_contents() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let header = fixture(&common::pinned());
    let run = |header: &Path, config: Option<&Path>| {
        let mut args = vec!["--header".as_ref(), header.as_os_str(), "--out".as_ref(), out.as_os_str()];
        if let Some(c) = config {
            args.extend(["--config".as_ref(), c.as_os_str()]);
        }
        let output = regen(&args);
        assert!(!out.exists(), "nothing written");
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };

    // Cannot be read: no position.
    let missing = dir.path().join("missing.toml");
    let (code, stderr) = run(&header, Some(&missing));
    assert_eq!(code, Some(2));
    assert!(stderr.starts_with(&format!("{}: error: cannot read the config: ", missing.display())), "{stderr}");
    let (code, stderr) = run(dir.path(), None);
    assert_eq!(code, Some(2));
    assert!(stderr.starts_with(&format!("{}: error: cannot read the header: ", dir.path().display())), "{stderr}");

    // The contents: a position, the line, a caret.
    let config = dir.path().join("regen.toml");
    let mut bytes = b"device = \"mydev\"\nimplement = [\"add.out\", \"mm.out\"]\n".to_vec();
    let bad = bytes.windows(6).position(|w| w == b"mm.out").unwrap() + 2;
    bytes[bad] = 0xff;
    std::fs::write(&config, &bytes).unwrap();
    let col = bad - (bytes.iter().position(|&b| b == b'\n').unwrap() + 1) + 1;
    let (code, stderr) = run(&header, Some(&config));
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        format!(
            "{}:2:{col}: error: invalid UTF-8 (byte 0xff)\n2 | implement = [\"add.out\", \"mm\u{fffd}out\"]\n  | {}^\n",
            config.display(),
            " ".repeat(col - 1)
        )
    );
    let comments_only = dir.path().join("comments.h");
    std::fs::write(&comments_only, "// @generated by torchgen\n").unwrap();
    let (code, stderr) = run(&comments_only, None);
    assert_eq!(code, Some(2));
    assert!(
        stderr.starts_with(&format!(
            "{}:1:1: error: no op declarations found (expected RegistrationDeclarations.h)\n1 | // @generated",
            comments_only.display()
        )),
        "{stderr}"
    );
    // An empty config is a valid one: every field is optional.
    std::fs::write(&config, "").unwrap();
    let output = regen(&[
        "--header".as_ref(),
        header.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
        "--config".as_ref(),
        config.as_os_str(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
}

/// Every file under `dir`, relative to it, `/`-separated, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path.strip_prefix(dir).unwrap().to_string_lossy().replace('\\', "/"));
            }
        }
    }
    files.sort();
    files
}

/// What building, installing and testing a `regen new` crate leaves in it is git-ignored (issue
/// 13): git sees the crate's own files and the Cargo.lock cargo writes (a Python extension's
/// lock file is meant to be committed), nothing else. The build outputs are those a real
/// `pip wheel --no-build-isolation ./mydev` left with torch 2.15.0 (build/, the egg-info, cargo's
/// target/; the generated code goes to target/'s OUT_DIR, so there is no generated/), plus an
/// editable install's extension module and `python -m pytest tests`'s caches.
#[test]
fn a_new_crate_ignores_what_its_build_and_tests_write() {
    let dir = tempfile::tempdir().unwrap();
    let crate_dir = dir.path().join("mydev");
    let new = regen(&["new".as_ref(), "mydev".as_ref(), "--path".as_ref(), crate_dir.as_os_str()]);
    assert!(new.status.success(), "{}", String::from_utf8_lossy(&new.stderr));
    let scaffold = files_under(&crate_dir);
    assert!(scaffold.contains(&".gitignore".to_owned()), "{scaffold:?}");
    for artifact in [
        "Cargo.lock",
        "target/release/build/mydev-0123/out/regen/kernels.rs",
        "target/release/libmydev.so",
        "build/lib.linux-x86_64-cpython-311/mydev/_mydev.cpython-311-x86_64-linux-gnu.so",
        "build/bdist.linux-x86_64/wheel/mydev/__init__.py",
        "python/mydev.egg-info/PKG-INFO",
        "python/mydev/_mydev.cpython-311-x86_64-linux-gnu.so",
        "python/mydev/__pycache__/__init__.cpython-311.pyc",
        "tests/__pycache__/test_smoke.cpython-311-pytest-8.3.4.pyc",
        ".pytest_cache/v/cache/nodeids",
    ] {
        let path = crate_dir.join(artifact);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "built\n").unwrap();
    }
    let git = |args: &[&str]| {
        let output = Command::new("git").current_dir(&crate_dir).args(args).output().expect("git runs");
        assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    };
    git(&["init", "-q"]);
    let status = git(&["status", "--porcelain", "--untracked-files=all"]);
    let mut seen: Vec<&str> = status.lines().map(|l| l.strip_prefix("?? ").unwrap_or(l)).collect();
    seen.sort();
    let mut expected: Vec<&str> = scaffold.iter().map(String::as_str).chain(["Cargo.lock"]).collect();
    expected.sort();
    assert_eq!(seen, expected);
}

/// `regen new --reference` starts from the checkout's reference kernels: its regen.toml takes
/// every group of crates/kernels/regen.toml, excludes none of the ops they serve, and generates
/// against a real header as written, each reference op's entry point calling `regen_kernels`.
#[test]
fn a_new_crate_can_start_from_the_reference_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let crate_dir = dir.path().join("mydev");
    let new =
        regen(&["new".as_ref(), "mydev".as_ref(), "--path".as_ref(), crate_dir.as_os_str(), "--reference".as_ref()]);
    assert!(new.status.success(), "{}", String::from_utf8_lossy(&new.stderr));
    let text = |name: &str| std::fs::read_to_string(crate_dir.join(name)).unwrap();
    assert!(text("Cargo.toml").contains("/crates/kernels\", features = [\"torch\"] }"), "{}", text("Cargo.toml"));
    assert!(text("src/lib.rs").contains("impl kernels::Kernels for MydevDevice {}"));
    assert!(!crate_dir.join("tests/test_add.py").exists() && crate_dir.join("tests/test_smoke.py").exists());
    // The reference serves the convolution and the fused RNN cells CPU has no kernel for.
    let config = text("regen.toml");
    assert!(config.contains("[reference]\ncrate = \"regen_kernels\"\n"), "{config}");
    assert!(!config.contains("\"convolution_overrideable\"") && !config.contains("\"_thnn_fused_lstm_cell\""));
    let header = fixture(&common::pinned());
    let out = dir.path().join("out");
    let generated = regen(&[
        "--header".as_ref(),
        header.as_os_str(),
        "--config".as_ref(),
        crate_dir.join("regen.toml").as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert!(generated.status.success(), "{}", String::from_utf8_lossy(&generated.stderr));
    let kernels = std::fs::read_to_string(out.join("kernels.rs")).unwrap();
    assert!(kernels.contains("call <regen_kernels::Reference as regen_kernels::BinaryKernels> {"), "{kernels}");
    let selection: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("selection.json")).unwrap()).unwrap();
    let implemented = selection["implemented"].as_array().unwrap();
    assert!(implemented.len() > 500 && implemented.contains(&serde_json::json!("add.out")), "{}", implemented.len());
}

/// `regen new --accelerator` is `--reference` plus the device layer to fill: src/layer.rs with
/// every method of regen_runtime's `DeviceLayer`, installed by src/lib.rs, named in the README.
#[test]
fn a_new_accelerator_crate_has_a_device_layer_to_fill() {
    let dir = tempfile::tempdir().unwrap();
    let crate_dir = dir.path().join("npu");
    let new =
        regen(&["new".as_ref(), "npu".as_ref(), "--path".as_ref(), crate_dir.as_os_str(), "--accelerator".as_ref()]);
    assert!(new.status.success(), "{}", String::from_utf8_lossy(&new.stderr));
    let text = |name: &str| std::fs::read_to_string(crate_dir.join(name)).unwrap();
    assert!(text("regen.toml").contains("[reference]\ncrate = \"regen_kernels\"\n"));
    let lib = text("src/lib.rs");
    assert!(lib.contains("pub mod layer;") && lib.contains("layer = layer::NpuLayer);"), "{lib}");
    let layer = text("src/layer.rs");
    for method in [
        "fn allocate(",
        "unsafe fn free(",
        "fn host_addressable(",
        "unsafe fn copy(",
        "fn run(",
        "fn create_stream(",
        "fn wait_event(",
        "fn elapsed_ms(",
    ] {
        assert!(layer.contains(method), "src/layer.rs lacks {method}");
    }
    assert!(text("README.md").contains("## The hardware: `src/layer.rs`"));
}
