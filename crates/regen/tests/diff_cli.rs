//! `regen diff` from the command line: formats, `--fail-on` exit codes, errors, and what a
//! bump means for a backend's regen.toml.

use std::path::PathBuf;
use std::process::{Command, Output};

fn fixture(release: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../fixtures/torch-{release}/RegistrationDeclarations.h"))
}

fn diff(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_regen")).arg("diff").args(args).output().expect("regen runs")
}

fn pair(old: &str, new: &str, extra: &[&str]) -> Output {
    let (o, n) = (fixture(old), fixture(new));
    let mut args: Vec<&std::ffi::OsStr> = vec![o.as_os_str(), n.as_os_str()];
    args.extend(extra.iter().map(|s| std::ffi::OsStr::new(*s)));
    diff(&args)
}

#[test]
fn json_has_the_documented_keys_sorted() {
    let out = pair("2.13.0", "2.15.0", &["--format", "json", "--fail-on", "never"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in ["added", "removed", "became_required", "no_longer_required"] {
        let list: Vec<&str> = json[key].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        let mut sorted = list.clone();
        sorted.sort();
        assert_eq!(list, sorted, "{key}");
    }
    assert_eq!(json["removed"], serde_json::json!(["cholesky", "cholesky.out", "qr", "qr.Q"]));
    let changed = json["changed"].as_array().unwrap();
    assert!(!changed.is_empty());
    for c in changed {
        assert!(c["old"].as_str().unwrap().starts_with("aten::") && c["new"].as_str().unwrap().starts_with("aten::"));
        assert!(c["op"].is_string());
    }
}

#[test]
fn markdown_and_text_reports() {
    let md =
        String::from_utf8(pair("2.13.0", "2.15.0", &["--format", "markdown", "--fail-on", "never"]).stdout).unwrap();
    assert!(md.contains("## regen diff:") && md.contains("### Removed (4)\n\n- `cholesky`\n"), "{md}");
    let text = String::from_utf8(pair("2.4.1", "2.7.1", &["--fail-on", "never"]).stdout).unwrap();
    assert!(!text.contains('\x1b'), "no colour when stdout is not a terminal");
    assert!(text.contains("re-spelled only"), "{text}");
    assert!(text.contains("rrelu_with_noise [breaking]: `noise`: annotation none → b!"), "{text}");
}

#[test]
fn fail_on_thresholds_and_errors() {
    assert_eq!(pair("2.13.0", "2.15.0", &[]).status.code(), Some(1), "breaking changes fail by default");
    assert_eq!(pair("2.13.0", "2.15.0", &["--fail-on", "never"]).status.code(), Some(0));
    assert_eq!(pair("2.15.0", "2.15.0", &["--fail-on", "any"]).status.code(), Some(0));
    assert_eq!(pair("2.13.0", "2.15.0", &["--fail-on", "any"]).status.code(), Some(1));
    let missing = diff(&[fixture("2.15.0").as_os_str(), "/nonexistent.h".as_ref()]);
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(pair("2.13.0", "2.15.0", &["--fail-on", "sometimes"]).status.code(), Some(2));
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.h");
    std::fs::write(&bad, "garbage\n").unwrap();
    let out = diff(&[fixture("2.15.0").as_os_str(), bad.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.h:1:1: error:"));
}

#[test]
fn config_impact_names_broken_kernels_missing_entries_and_likely_renames() {
    // Simulate the known rename random_.from -> random_.from_int in a copy of the new header.
    let dir = tempfile::tempdir().unwrap();
    let renamed =
        std::fs::read_to_string(fixture("2.15.0")).unwrap().replace("aten::random_.from(", "aten::random_.from_int(");
    let new = dir.path().join("new.h");
    std::fs::write(&new, renamed).unwrap();
    let config = dir.path().join("regen.toml");
    std::fs::write(&config, "implement = [\"qr\", \"add.out\", \"random_.from\"]\nfallback = \"cpu\"\n").unwrap();
    let out = diff(&[
        fixture("2.13.0").as_os_str(),
        new.as_os_str(),
        "--config".as_ref(),
        config.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        json["renamed"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!({"old": "random_.from", "new": "random_.from_int"}))
    );
    let impact = &json["config"];
    assert_eq!(impact["implemented_breaking"], serde_json::json!(["qr", "random_.from"]));
    assert_eq!(
        impact["missing_entries"],
        serde_json::json!([{"op": "qr", "likely": null}, {"op": "random_.from", "likely": "random_.from_int"}])
    );
    assert_eq!(impact["fallback"], "cpu");
    let text = String::from_utf8(
        diff(&[fixture("2.13.0").as_os_str(), new.as_os_str(), "--config".as_ref(), config.as_os_str()]).stdout,
    )
    .unwrap();
    assert!(
        text.contains("CONFIG regen.toml names random_.from, which is gone (likely renamed to random_.from_int)"),
        "{text}"
    );
}

#[test]
fn config_impact_separates_rust_breaks_from_cpp_only_changes_and_optional_ops() {
    // 2.15.0 -> 2.4.1: tril.out's `diagonal` and bincount's `minlength` are `SymInt` then `int`,
    // `i64` in Rust either way; `mm.dtype` does not exist yet.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("regen.toml");
    std::fs::write(
        &config,
        "implement = [\"tril.out\", \"mm.dtype\", \"add.out\", \"bincount\"]\noptional = [\"mm.dtype\"]\n\
         exclude = [\"_fused_rms_norm_backward\"]\nfallback = \"cpu\"\n",
    )
    .unwrap();
    let args = |format: &'static str| {
        diff(&[
            fixture("2.15.0").as_os_str(),
            fixture("2.4.1").as_os_str(),
            "--config".as_ref(),
            config.as_os_str(),
            "--format".as_ref(),
            format.as_ref(),
        ])
    };
    let json: serde_json::Value = serde_json::from_slice(&args("json").stdout).unwrap();
    let impact = &json["config"];
    assert_eq!(impact["implemented_breaking"], serde_json::json!([]));
    assert_eq!(impact["implemented_regenerate"], serde_json::json!(["bincount", "tril.out"]));
    assert_eq!(impact["optional_absent"], serde_json::json!(["mm.dtype"]));
    // An excluded op CPU has no kernel for may be absent, as in generation.
    assert_eq!(impact["missing_entries"], serde_json::json!([]));
    let text = String::from_utf8(args("text").stdout).unwrap();
    assert!(
        text.contains("REGEN tril.out: its C++ signature changed, your Rust kernel's did not")
            && text.contains("ABSENT mm.dtype is not in this release (optional: not generated)"),
        "{text}"
    );
}

#[test]
fn a_reader_that_stops_reading_is_not_a_crash() {
    // `regen diff A B | head -1`: stdout's reader is gone before regen writes the report, which
    // used to panic in print! (exit 101). The exit status still says what was found.
    let (o, n) = (fixture("1.13.1"), fixture("2.15.0"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_regen"))
        .arg("diff")
        .args([o.as_os_str(), n.as_os_str()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("regen runs");
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
