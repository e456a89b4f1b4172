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
    assert!(md.contains("## regen diff:") && md.contains("### Removed (4)\n\n- `cholesky` (required)\n"), "{md}");
    let text = String::from_utf8(pair("2.4.1", "2.7.1", &["--fail-on", "never"]).stdout).unwrap();
    assert!(!text.contains('\x1b'), "no colour when stdout is not a terminal");
    assert!(text.contains("re-spelled only"), "{text}");
    assert!(text.contains("rrelu_with_noise [C++ signature changed]: `noise`: annotation none → b!"), "{text}");
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
    std::fs::write(&config, "implement = [\"qr\", \"add.out\", \"random_.from\"]\nfallback = \"error\"\n").unwrap();
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
    let backend = &json["backend"];
    assert_eq!(
        backend["gone"],
        serde_json::json!([
            {"op": "qr", "why": "removed from the header"},
            {"op": "random_.from", "why": "removed from the header", "likely": "random_.from_int"}
        ])
    );
    // Generation with this config fails on the new header: the same errors, positioned.
    let errors: Vec<&str> =
        backend["errors"]["new"].as_array().unwrap().iter().map(|e| e["message"].as_str().unwrap()).collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].starts_with("no op `qr` in this header") && errors[1].starts_with("no op `random_.from` in"));
    assert_eq!(
        (backend["errors"]["new"][1]["line"].as_u64(), backend["errors"]["new"][1]["column"].as_u64()),
        (Some(1), Some(31))
    );
    assert_eq!(backend["fallback"], "error");
    assert_eq!(json["verdict"]["breaking"], serde_json::json!(["qr", "random_.from"]));
    let text = String::from_utf8(
        diff(&[fixture("2.13.0").as_os_str(), new.as_os_str(), "--config".as_ref(), config.as_os_str()]).stdout,
    )
    .unwrap();
    assert!(
        text.contains(
            "GONE random_.from: removed from the header (likely renamed to random_.from_int); its trait method is gone"
        ),
        "{text}"
    );
    assert!(text.contains(&format!("CONFIG {}:1:31: no op `random_.from` in this header", config.display())), "{text}");
    assert!(
        text.ends_with(&format!(
            "exit 1: 2 kernel(s) of your backend break: qr, random_.from; generation with {} fails on {}: 2 config error(s)\n",
            config.display(),
            new.display()
        )),
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
         exclude = [\"_fused_rms_norm_backward\"]\n",
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
    let backend = &json["backend"];
    assert_eq!(backend["breaks"], serde_json::json!([]));
    assert_eq!(backend["regenerate"], serde_json::json!(["bincount", "tril.out"]));
    assert_eq!(backend["absent"], serde_json::json!(["mm.dtype"]));
    // An excluded op CPU has no kernel for may be absent, as in generation.
    assert_eq!(backend["errors"]["new"], serde_json::json!([]));
    assert_eq!(json["verdict"]["exit"], 0);
    let text = String::from_utf8(args("text").stdout).unwrap();
    assert!(
        text.contains("REGEN tril.out: its C++ signature changed, your Rust kernel's did not")
            && text.contains("ABSENT mm.dtype is not in this release (optional: not generated)"),
        "{text}"
    );
}
