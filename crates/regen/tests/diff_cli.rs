//! `regen diff` from the command line: formats, `--fail-on` exit codes, errors, and what a
//! bump means for a backend's regen.toml.

mod common;

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
    let pinned = common::pinned();
    assert_eq!(pair(&pinned, &pinned, &["--fail-on", "any"]).status.code(), Some(0));
    assert_eq!(pair("2.13.0", "2.15.0", &["--fail-on", "any"]).status.code(), Some(1));
    let missing = diff(&[fixture(&pinned).as_os_str(), "/nonexistent.h".as_ref()]);
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(pair("2.13.0", "2.15.0", &["--fail-on", "sometimes"]).status.code(), Some(2));
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.h");
    std::fs::write(&bad, "garbage\n").unwrap();
    let out = diff(&[fixture(&pinned).as_os_str(), bad.as_os_str()]);
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
            && text.contains("ABSENT mm.dtype is not in this release, or is composite there (optional: not generated)"),
        "{text}"
    );
}

fn device_config() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../device/regen.toml")
}

fn last_line(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().to_owned()
}

#[test]
fn the_last_line_says_why_it_exits() {
    // Without --config the backend is every required op: 2.15 removed cholesky, stopped requiring
    // _scaled_mm_v2 and _scaled_grouped_mm_v2, and added arguments to _cudnn_attention_forward.
    let out = pair("2.13.0", "2.15.0", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        last_line(&out),
        "exit 1: 5 kernel(s) of your backend break: _cudnn_attention_forward, _scaled_grouped_mm_v2, _scaled_mm_v2, \
         cholesky, cholesky.out"
    );
    let out = pair("2.13.0", "2.15.0", &["--fail-on", "never"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(last_line(&out).starts_with("exit 0: --fail-on never (5 kernel(s) of your backend break: "));
    // The device's config excludes the cudnn family and implements none of the others.
    let config = device_config();
    let config_arg = config.to_str().unwrap();
    let out = pair("2.13.0", "2.15.0", &["--config", config_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        last_line(&out),
        format!("exit 0: none of your backend's 649 kernel(s) breaks and {config_arg} generates for 2.15.0")
    );
    let out = pair("2.13.0", "2.15.0", &["--config", config_arg, "--fail-on", "any"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(last_line(&out).starts_with("exit 1: --fail-on any and the headers differ (13 added, 4 removed, "));
    let pinned = common::pinned();
    let out = pair(&pinned, &pinned, &["--fail-on", "any"]);
    assert_eq!(
        (out.status.code(), last_line(&out).as_str()),
        (Some(0), "exit 0: the headers declare the same ops, schemas, C++ signatures and flags")
    );
    // 1.13.1 lacks ops the device implements (_fused_sdp_choice too: SDPA is 2.0's): generation
    // refuses it, and so does the verdict.
    let out = pair("2.15.0", "1.13.1", &["--config", config_arg]);
    assert_eq!(out.status.code(), Some(1));
    assert!(last_line(&out).contains(&format!("generation with {config_arg} fails on 1.13.1: 17 config error(s)")));
    // Markdown ends the same way; JSON carries the verdict and says it on stderr.
    let md = pair("2.13.0", "2.15.0", &["--format", "markdown"]);
    assert_eq!(last_line(&md), last_line(&pair("2.13.0", "2.15.0", &[])));
    let json = pair("2.13.0", "2.15.0", &["--format", "json"]);
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(value["verdict"]["exit"].as_i64(), json.status.code().map(i64::from));
    let reason = value["verdict"]["reason"].as_str().unwrap();
    assert!(String::from_utf8_lossy(&json.stderr).contains(&format!("regen diff: {reason}\n")), "{reason}");
}

#[test]
fn json_names_both_headers_and_counts_what_it_lists() {
    let config = device_config();
    let out = pair("2.13.0", "2.15.0", &["--format", "json", "--config", config.to_str().unwrap()]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["old"]["release"], "2.13.0");
    assert_eq!(json["new"]["release"], "2.15.0");
    assert!(json["old"]["path"].as_str().unwrap().ends_with("torch-2.13.0/RegistrationDeclarations.h"));
    assert_eq!(json["new"]["sha256"].as_str().unwrap().len(), 64);
    // The digest of the pinned release's header is the one the device's generated files name.
    let pinned = common::pinned();
    let same = pair(&pinned, &pinned, &["--format", "json"]);
    let same: serde_json::Value = serde_json::from_slice(&same.stdout).unwrap();
    let selection =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../device/generated/selection.json"))
            .unwrap();
    let sha = same["new"]["sha256"].as_str().unwrap();
    assert_eq!(sha.len(), 64);
    assert!(selection.contains(&format!("(sha256 {sha})")), "{sha}");
    // Every count of the summary is the length of the list it counts.
    let s = &json["summary"];
    let len = |v: &serde_json::Value| v.as_array().unwrap().len();
    for key in ["added", "added_required", "removed", "removed_required", "became_required", "no_longer_required"] {
        assert_eq!(s[key].as_u64().unwrap() as usize, len(&json[key]), "{key}");
    }
    let respelled = json["cpp_changed"].as_array().unwrap().iter().filter(|c| c["spelling_only"] == true).count();
    assert_eq!(s["cpp_respelled"].as_u64().unwrap() as usize, respelled);
    assert_eq!(s["cpp_changed"].as_u64().unwrap() as usize + respelled, len(&json["cpp_changed"]));
    let b = &json["backend"];
    for key in ["breaks", "gone", "regenerate", "absent", "arrived", "newly_fallback", "newly_skipped"] {
        assert_eq!(s["backend"][key].as_u64().unwrap() as usize, len(&b[key]), "{key}");
    }
    assert_eq!(s["backend"]["kernels"], serde_json::json!({"old": 649, "new": 649}));
    assert_eq!((s["added_required"].as_u64(), s["became_required"].as_u64()), (Some(7), Some(0)));
    assert_eq!(
        json["verdict"],
        serde_json::json!({
            "exit": 0,
            "fail_on": "breaking",
            "breaking": [],
            "reason": format!("exit 0: none of your backend's 649 kernel(s) breaks and {} generates for 2.15.0", config.display()),
        })
    );
    // _scaled_mm_v2's declaration changed and it is no longer required: its one entry says both.
    let entry = json["cpp_changed"].as_array().unwrap().iter().find(|c| c["op"] == "_scaled_mm_v2").unwrap();
    assert_eq!(entry["required"], serde_json::json!({"old": true, "new": false}));
}

#[test]
fn a_header_in_an_installed_torch_is_named_by_its_version_py() {
    let dir = tempfile::tempdir().unwrap();
    let aten = dir.path().join("site-packages/torch/include/ATen");
    std::fs::create_dir_all(&aten).unwrap();
    std::fs::copy(fixture("2.15.0"), aten.join("RegistrationDeclarations.h")).unwrap();
    std::fs::write(
        dir.path().join("site-packages/torch/version.py"),
        "__version__ = '2.15.0+cpu'\ngit_version = 'abc'\n",
    )
    .unwrap();
    let elsewhere = dir.path().join("RegistrationDeclarations.h");
    std::fs::copy(fixture("2.13.0"), &elsewhere).unwrap();
    let out = diff(&[
        elsewhere.as_os_str(),
        aten.join("RegistrationDeclarations.h").as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
        "--fail-on".as_ref(),
        "never".as_ref(),
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["new"]["release"], "2.15.0+cpu");
    assert_eq!(json["old"]["release"], serde_json::Value::Null);
    let text = String::from_utf8(
        diff(&[
            elsewhere.as_os_str(),
            aten.join("RegistrationDeclarations.h").as_os_str(),
            "--fail-on".as_ref(),
            "never".as_ref(),
        ])
        .stdout,
    )
    .unwrap();
    assert!(text.starts_with(&format!("regen diff: {} -> 2.15.0+cpu\n", elsewhere.display())), "{text}");
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
