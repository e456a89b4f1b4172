//! `regen diff` on the real headers: the known facts of PyTorch's history that the fixture
//! pairs contain, and every pair diffed without error.

mod common;

use std::collections::BTreeSet;

use regen_core::config::Config;
use regen_core::diff::{ArgChange, Color, FailOn, Format, diff_models, diff_with_config};
use regen_core::ir::{BaseType, Model};

const RELEASES: &[&str] = &["1.13.1", "2.4.1", "2.7.1", "2.10.0", "2.13.0", "2.15.0"];

fn load(release: &str) -> Model {
    let path = format!("{}/../../fixtures/torch-{release}/RegistrationDeclarations.h", env!("CARGO_MANIFEST_DIR"));
    regen_core::load_header(&std::fs::read(path).unwrap()).unwrap().model
}

#[test]
fn every_pair_of_fixtures_diffs_consistently() {
    let models: Vec<Model> = RELEASES.iter().map(|r| load(r)).collect();
    for (i, old) in models.iter().enumerate() {
        for new in &models[i + 1..] {
            let d = diff_models(old, new);
            // Added/removed agree with the key sets; every list is sorted.
            let old_keys: std::collections::BTreeSet<&str> = old.ops.iter().map(|o| o.key.as_str()).collect();
            let new_keys: std::collections::BTreeSet<&str> = new.ops.iter().map(|o| o.key.as_str()).collect();
            assert_eq!(d.added, new_keys.difference(&old_keys).map(|s| s.to_string()).collect::<Vec<_>>());
            assert_eq!(d.removed, old_keys.difference(&new_keys).map(|s| s.to_string()).collect::<Vec<_>>());
            for list in [&d.became_required, &d.no_longer_required] {
                assert!(list.windows(2).all(|w| w[0] < w[1]));
            }
            assert!(d.changed.windows(2).all(|w| w[0].op < w[1].op));
            // A diff with itself is empty.
            assert!(diff_models(new, new).is_empty());
        }
    }
}

#[test]
fn release_2_13_removed_every_dimname_overload() {
    let (old, new) = (load("2.10.0"), load("2.13.0"));
    let dimname_ops: Vec<&str> = old
        .ops
        .iter()
        .filter(|op| op.schema.arguments.iter().any(|a| *a.ty.base() == BaseType::Dimname))
        .map(|op| op.key.as_str())
        .collect();
    assert!(dimname_ops.len() > 100, "{}", dimname_ops.len());
    let d = diff_models(&old, &new);
    for op in &dimname_ops {
        assert!(d.removed.iter().any(|r| r == op), "{op} should be removed");
    }
}

#[test]
fn release_2_14_removed_cholesky_and_qr() {
    let d = diff_models(&load("2.13.0"), &load("2.15.0"));
    for op in ["cholesky", "cholesky.out", "qr", "qr.Q"] {
        assert!(d.removed.iter().any(|r| r == op), "{op}");
    }
}

#[test]
fn rrelu_with_noise_changed_a_const_in_2_7() {
    let d = diff_models(&load("2.4.1"), &load("2.7.1"));
    let c = d.changed.iter().find(|c| c.op == "rrelu_with_noise").expect("rrelu_with_noise changed");
    assert!(c.cpp_signature_changed, "const at::Tensor & -> at::Tensor & changes the C++ signature");
    assert!(!c.rust_signature_changed, "both are TensorRef in Rust");
    assert!(c.details.contains(&ArgChange::AnnotationChanged {
        name: "noise".into(),
        old: None,
        new: Some("b!".into())
    }));
}

#[test]
fn respellings_are_reported_as_such_and_not_as_breaking() {
    // 2.4 spelled c10::optional as ::std::optional; 2.7 qualified Tensor as at::Tensor.
    // (1.13 to 2.4 also changed ~300 schemas, e.g. int[] to SymInt[], which re-spelled them too.)
    for (old, new, at_least) in [("1.13.1", "2.4.1", 500), ("2.4.1", "2.7.1", 3000)] {
        let d = diff_models(&load(old), &load(new));
        let spelling: Vec<_> = d.cpp_changed.iter().filter(|c| c.spelling_only).collect();
        assert!(spelling.len() >= at_least, "{old}->{new}: {}", spelling.len());
    }
    // A re-spelling keeps the Rust method (diff_models does not compute it for them).
    let (old, new) = (load("2.4.1"), load("2.7.1"));
    let d = diff_models(&old, &new);
    for c in d.cpp_changed.iter().filter(|c| c.spelling_only) {
        assert!(!c.rust_signature_changed);
        let method = |m: &Model| regen_core::diff::rust_method(m.find(&c.op).unwrap());
        assert_eq!(method(&old), method(&new), "{}", c.op);
    }
    let d = diff_models(&load("1.13.1"), &load("2.4.1"));
    let embedding_bag = d.cpp_changed.iter().find(|c| c.op == "_embedding_bag").expect("re-spelled");
    assert!(embedding_bag.spelling_only);
    assert!(
        embedding_bag.old.contains("c10::optional<Tensor>") && embedding_bag.new.contains("::std::optional<Tensor>")
    );
    assert!(!d.changed.iter().any(|c| c.op == "_embedding_bag"), "the schema did not change");
}

#[test]
fn argument_level_details() {
    let old = load("2.15.0");
    let mut new = old.clone();
    let op = new.ops.iter_mut().find(|op| op.key == "softplus_backward").unwrap();
    // Simulate the historical change: a parameter added, a default changed, a rename.
    let mut extra = op.schema.arguments[1].clone();
    extra.name = "output".into();
    op.schema.arguments.push(extra);
    op.schema.arguments[2].default = Some("2".into());
    op.schema.arguments[0].name = "grad".into();
    op.schema_text = op.schema.to_string();
    let d = diff_models(&old, &new);
    let c = d.changed.iter().find(|c| c.op == "softplus_backward").unwrap();
    assert_eq!(
        c.details,
        vec![
            ArgChange::Renamed { old: "grad_output".into(), new: "grad".into() },
            ArgChange::DefaultChanged { name: "beta".into(), old: None, new: Some("2".into()) },
            ArgChange::Added { name: "output".into(), r#type: "Tensor".into(), default: None },
        ]
    );
}

// ---- The backend: the device's regen.toml over every ordered pair, judged as generation selects.

fn fixture(release: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../fixtures/torch-{release}/RegistrationDeclarations.h"))
}

fn device_config_path() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../device/regen.toml")
}

fn device_config() -> Config {
    regen_core::generate::load_config_file(Some(&device_config_path())).unwrap()
}

/// What generation with the device's config writes for a release: the keys `selection.json`
/// registers and skips, or the errors it stops with.
struct Generated {
    registered: BTreeSet<String>,
    skipped: BTreeSet<String>,
}

fn generation(release: &str) -> Result<Generated, String> {
    let generated = regen_core::generate::generate(&fixture(release), Some(&device_config_path()), "test")?;
    let file = generated.files.iter().find(|f| f.name == "selection.json").expect("selection.json");
    let json: serde_json::Value = serde_json::from_slice(&file.contents).unwrap();
    let keys = |v: &serde_json::Value| v.as_str().unwrap().to_owned();
    Ok(Generated {
        registered: json["registered"].as_array().unwrap().iter().map(keys).collect(),
        skipped: json["skipped"].as_array().unwrap().iter().map(|s| keys(&s["op"])).collect(),
    })
}

/// Every `Title (n)` heading of a text report is followed by n items, and every tag the summary
/// line counts (`3 BREAKS`) leads that many lines.
fn assert_report_counts_agree(report: &str, what: &str) {
    let lines: Vec<&str> = report.lines().collect();
    for (k, line) in lines.iter().enumerate() {
        let Some((title, n)) = line.strip_suffix(')').and_then(|l| l.rsplit_once(" (")) else { continue };
        let (Ok(n), false) = (n.parse::<usize>(), line.starts_with(' ')) else { continue };
        let items = lines[k + 1..].iter().take_while(|l| l.starts_with("  ")).count();
        assert_eq!(items, n, "{what}: heading {title:?}");
    }
    let summary = lines.iter().find(|l| l.starts_with("your backend: ")).expect("a backend summary line");
    for tag in ["BREAKS", "GONE", "REGEN", "ABSENT", "NEW", "FALLBACK", "SKIPPED", "CONFIG"] {
        let counted: usize = summary
            .split(", ")
            .find_map(|part| {
                part.trim_start_matches("your backend: ")
                    .strip_suffix(&format!(" {tag}"))
                    .or_else(|| part.split_once(&format!(" {tag} error(s)")).map(|(n, _)| n))
            })
            .unwrap_or_else(|| panic!("{what}: {tag} in {summary}"))
            .parse()
            .unwrap();
        let shown = lines.iter().filter(|l| l.starts_with(&format!("  {tag} "))).count();
        assert_eq!(shown, counted, "{what}: {tag}");
    }
}

#[test]
fn every_pair_agrees_with_generation_under_the_device_config() {
    let config = device_config();
    let models: Vec<Model> = RELEASES.iter().map(|r| load(r)).collect();
    let generated: Vec<Result<Generated, String>> = RELEASES.iter().map(|r| generation(r)).collect();
    // The fixture the device is pinned to generates; 1.13.1 lacks ops it implements (not `optional`).
    let pinned = common::pinned();
    let error = match RELEASES.iter().position(|r| *r == pinned) {
        Some(k) => generated[k].as_ref().err().cloned(),
        None => generation(&pinned).err(),
    };
    assert_eq!(error, None, "torch {pinned}");
    assert!(generated[0].is_err(), "1.13.1 lacks _fused_adagrad_ and others");
    let mut pairs = 0;
    for (i, old) in models.iter().enumerate() {
        for (j, new) in models.iter().enumerate() {
            if i == j {
                continue;
            }
            pairs += 1;
            let what = format!("{} -> {}", RELEASES[i], RELEASES[j]);
            let d = diff_with_config(old, new, &config);
            let b = &d.backend;
            let verdict = d.verdict(FailOn::Breaking);
            match &generated[j] {
                Ok(g) => {
                    assert!(b.errors.new.is_empty(), "{what}: {:?}", b.errors.new);
                    // The kernels the report says the new release has: the old ones, less those
                    // gone or absent, plus those that arrived. Generation's selection.json agrees.
                    let old_kernels: BTreeSet<String> = match &generated[i] {
                        Ok(g) => g.registered.clone(),
                        // Generation refuses the old release: what the config's valid entries select.
                        Err(_) => config
                            .select_reporting(old)
                            .0
                            .selected
                            .iter()
                            .filter(|s| s.registered)
                            .map(|s| s.op.key.clone())
                            .collect(),
                    };
                    assert_eq!(b.kernels.old, old_kernels.len(), "{what}");
                    let mut new_kernels = old_kernels.clone();
                    for g in &b.gone {
                        assert!(new_kernels.remove(&g.op), "{what}: gone {} was not a kernel", g.op);
                    }
                    for a in &b.absent {
                        new_kernels.remove(a);
                    }
                    for a in &b.arrived {
                        assert!(new_kernels.insert(a.op.clone()), "{what}: arrived {} was a kernel", a.op);
                    }
                    assert_eq!(new_kernels, g.registered, "{what}");
                    assert_eq!(b.kernels.new, g.registered.len(), "{what}");
                    // Nothing the report calls the fallback's or skipped is registered; what it
                    // calls skipped, generation skips.
                    for f in &b.newly_fallback {
                        assert!(!g.registered.contains(&f.op) && !g.skipped.contains(&f.op), "{what}: {}", f.op);
                    }
                    for s in &b.newly_skipped {
                        assert!(g.skipped.contains(&s.op), "{what}: {}", s.op);
                    }
                    // Exit 1 exactly when a kernel breaks.
                    assert_eq!(verdict.exit == 1, !b.breaks.is_empty() || !b.gone.is_empty(), "{what}");
                }
                Err(errors) => {
                    // Generation refuses the new release; the report says so with its errors.
                    assert!(!b.errors.new.is_empty(), "{what}");
                    for e in &b.errors.new {
                        assert!(
                            errors.contains(&format!(":{}:{}: error: {}", e.line, e.column, e.message)),
                            "{what}: {e:?} not in\n{errors}"
                        );
                    }
                    assert_eq!(verdict.exit, 1, "{what}");
                    assert!(verdict.reason.contains("config error(s)"), "{what}: {}", verdict.reason);
                }
            }
            // An excluded family or name is never the backend's: no kernel, break or fallback.
            let excluded: Vec<&str> = b
                .newly_skipped
                .iter()
                .map(|s| s.op.as_str())
                .chain(config.exclude.iter().map(|n| n.name.as_str()))
                .collect();
            for op in excluded {
                assert!(!b.breaks.iter().any(|x| x.op == op), "{what}: {op}");
                assert!(!b.newly_fallback.iter().any(|x| x.op == op), "{what}: {op}");
                assert!(!b.arrived.iter().any(|x| x.op == op), "{what}: {op}");
            }
            assert_report_counts_agree(&d.render(Format::Text, Color::Plain, FailOn::Breaking), &what);
            assert!(d.render(Format::Text, Color::Plain, FailOn::Breaking).ends_with(&format!("{}\n", verdict.reason)));
        }
    }
    assert_eq!(pairs, 30);
}

#[test]
fn an_op_of_an_excluded_family_is_not_the_backends() {
    // 2.15 added _cudnn_attention_forward_no_dropout_inplace (required; family cudnn, which the
    // device excludes) and changed _cudnn_attention_forward's Rust method.
    let d = diff_with_config(&load("2.13.0"), &load("2.15.0"), &device_config());
    let b = &d.backend;
    let skipped = b.newly_skipped.iter().find(|s| s.op == "_cudnn_attention_forward_no_dropout_inplace").unwrap();
    assert!(skipped.why.contains("family `cudnn` is excluded by the config"), "{}", skipped.why);
    assert!(!b.newly_fallback.iter().any(|f| f.op.starts_with("_cudnn")), "{:?}", b.newly_fallback);
    assert!(b.breaks.is_empty() && b.gone.is_empty(), "{:?} {:?}", b.breaks, b.gone);
    let fallback: Vec<&str> = b.newly_fallback.iter().map(|f| f.op.as_str()).collect();
    assert_eq!(fallback, ["_philox_key_fold_in.Tensor", "_philox_randint_", "linalg_matrix_sqrth", "linalg_polar.out"]);
    let verdict = d.verdict(FailOn::Breaking);
    assert_eq!(verdict.exit, 0, "{}", verdict.reason);
    // Summary and sections agree: 7 required ops were added, none became required.
    let s = d.summary();
    assert_eq!((s.added_required, s.became_required, s.backend.newly_fallback, s.backend.newly_skipped), (7, 0, 4, 3));
    // The default config (every required op) has the cudnn op as its own, and its change breaks.
    let d = diff_models(&load("2.13.0"), &load("2.15.0"));
    assert!(d.backend.breaks.iter().any(|x| x.op == "_cudnn_attention_forward"));
    assert!(d.backend.arrived.iter().any(|x| x.op == "_cudnn_attention_forward_no_dropout_inplace"));
    assert_eq!(d.verdict(FailOn::Breaking).exit, 1);
}

#[test]
fn downgrading_the_device_to_2_4_breaks_one_kernel_the_kernels_keep_both_ways() {
    // Per kernel, by its Rust method: SymInt -> int and the like only regenerate, and the ops
    // of `optional` 2.4 lacks are absent, not gone. One breaks: _fused_sdp_choice has no
    // enable_gqa before 2.5, which the reference kernels take as a parameter cfg'd on the 2.5 op
    // `_scaled_dot_product_fused_attention_overrideable` (regen_has_op), so they build for both.
    let d = diff_with_config(&load("2.15.0"), &load("2.4.1"), &device_config());
    let b = &d.backend;
    let breaks: Vec<&str> = b.breaks.iter().map(|x| x.op.as_str()).collect();
    assert_eq!(breaks, ["_fused_sdp_choice"], "{b:?}");
    assert!(b.gone.is_empty() && b.errors.new.is_empty(), "{b:?}");
    assert!(b.regenerate.iter().any(|r| r == "tril.out") && b.regenerate.iter().any(|r| r == "bincount"));
    // The nine newer overloads, the two overrideable attention ops (2.5), and
    // _embedding_bag_backward, which 2.4 decomposes.
    assert_eq!(b.absent.len(), 12, "{:?}", b.absent);
    assert!(b.absent.iter().any(|a| a == "_embedding_bag_backward"));
    let verdict = d.verdict(FailOn::Breaking);
    assert_eq!(verdict.exit, 1, "{}", verdict.reason);
    assert!(verdict.reason.contains("_fused_sdp_choice"), "{}", verdict.reason);
    // Schema changes of required ops still change C++ signatures: facts of the header, not breaks.
    assert!(d.changed.iter().any(|c| c.cpp_signature_changed && c.required.old));
}

#[test]
fn a_changed_op_that_is_no_longer_required_says_both() {
    let d = diff_models(&load("2.13.0"), &load("2.15.0"));
    let c = d.cpp_changed.iter().find(|c| c.op == "_scaled_mm_v2").expect("re-declared in 2.15");
    assert!(d.no_longer_required.iter().any(|k| k == "_scaled_mm_v2"));
    assert_eq!((c.required.old, c.required.new), (true, false));
    let text = d.render(Format::Text, Color::Plain, FailOn::Breaking);
    assert!(text.contains("_scaled_mm_v2 [no longer required]: "), "{text}");
    // Over every pair: each change entry's flags are the two headers' own.
    let models: Vec<Model> = RELEASES.iter().map(|r| load(r)).collect();
    let required = |m: &Model| -> std::collections::HashMap<String, bool> {
        m.ops.iter().map(|op| (op.key.clone(), op.is_required())).collect()
    };
    for old in &models {
        for new in &models {
            let d = diff_models(old, new);
            let (old_required, new_required) = (required(old), required(new));
            let no_longer: BTreeSet<&String> = d.no_longer_required.iter().collect();
            let entries =
                d.changed.iter().map(|c| (&c.op, c.required)).chain(d.cpp_changed.iter().map(|c| (&c.op, c.required)));
            for (op, required) in entries {
                assert_eq!((required.old, required.new), (old_required[op], new_required[op]), "{op}");
                assert_eq!(no_longer.contains(op), required.old && !required.new, "{op}");
            }
        }
    }
}

#[test]
fn formats_and_colour_are_separate() {
    let d = diff_models(&load("2.13.0"), &load("2.15.0"));
    let ansi = d.render(Format::Text, Color::Ansi, FailOn::Breaking);
    let plain = d.render(Format::Text, Color::Plain, FailOn::Breaking);
    assert!(ansi.contains("\x1b[31mBREAKS\x1b[0m _cudnn_attention_forward: "), "{ansi}");
    assert!(!plain.contains('\x1b') && plain.contains("\n  BREAKS _cudnn_attention_forward: "));
    let markdown = d.render(Format::Markdown, Color::Ansi, FailOn::Breaking);
    assert!(!markdown.contains('\x1b') && markdown.contains("\n- **BREAKS** `_cudnn_attention_forward`: "));
    let json: serde_json::Value =
        serde_json::from_str(&d.render(Format::Json, Color::Ansi, FailOn::Never)).expect("JSON");
    assert_eq!(json["verdict"]["exit"], 0);
    assert_eq!(json["verdict"]["fail_on"], "never");
    // Every rendering ends with (or carries) the same verdict.
    let reason = d.verdict(FailOn::Breaking).reason;
    for text in [&ansi, &plain, &markdown] {
        assert!(text.ends_with(&format!("{reason}\n")));
    }
}
