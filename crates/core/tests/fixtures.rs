//! The real headers of six torch releases (four format eras) parse into the model, and the
//! model agrees with independent, naive readings of the same files.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use regen_core::ir::{BaseType, Model, OpClass, OpKind};
use regen_core::load_header;

const RELEASES: &[&str] = &["1.13.1", "2.4.1", "2.7.1", "2.10.0", "2.13.0", "2.15.0"];

fn fixture_path(release: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../fixtures/torch-{release}/RegistrationDeclarations.h"))
}

fn fixture_text(release: &str) -> String {
    std::fs::read_to_string(fixture_path(release)).expect("fixture header")
}

fn load(release: &str) -> Model {
    let loaded = load_header(fixture_text(release).as_bytes()).unwrap_or_else(|errors| {
        panic!("torch {release}: {}", errors.iter().map(|d| d.render("header")).collect::<String>())
    });
    assert!(loaded.warnings.is_empty(), "torch {release}: {:?}", loaded.warnings);
    loaded.model
}

/// Lines carrying metadata, found without the parser: the oracle for counts.
fn naive_decl_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.contains("; // {\"schema\": ")).collect()
}

#[test]
fn every_fixture_parses_and_counts_match_a_naive_scan() {
    for release in RELEASES {
        let text = fixture_text(release);
        let model = load(release);
        let lines = naive_decl_lines(&text);
        assert_eq!(model.ops.len(), lines.len(), "torch {release}");
        let naive_required = lines.iter().filter(|l| l.contains(r#""dispatch": "True", "default": "False""#)).count();
        assert_eq!(model.required().count(), naive_required, "torch {release}");
    }
    // The figure PyTorch's own docs and the issue give for 2.15.0 (the release pinned then).
    assert_eq!(load("2.15.0").required().count(), 861);
}

#[test]
fn printing_every_schema_gives_back_the_header_text() {
    for release in RELEASES {
        let text = fixture_text(release);
        let model = load(release);
        let lines = naive_decl_lines(&text);
        for (op, line) in model.ops.iter().zip(&lines) {
            let printed = op.schema.to_string();
            assert_eq!(printed, op.schema_text, "torch {release} line {}", op.line);
            // And the header holds that text, JSON-escaped.
            let escaped = serde_json::to_string(&printed).unwrap();
            assert!(line.contains(&escaped), "torch {release} line {}: {escaped} not in {line}", op.line);
        }
    }
}

#[test]
fn cpp_parameters_line_up_with_schema_arguments() {
    for release in RELEASES {
        let text = fixture_text(release);
        let lines: Vec<&str> = text.lines().collect();
        for op in load(release).ops {
            assert_eq!(op.cpp.params.len(), op.schema.arguments.len(), "{}", op.key);
            for (p, a) in op.cpp.params.iter().zip(&op.schema.arguments) {
                assert_eq!(p.name, a.name, "{}", op.key);
            }
            // The declaration text is the spellings joined back together.
            let line = lines[op.line as usize - 1];
            let params: Vec<String> = op.cpp.params.iter().map(|p| format!("{} {}", p.ty.spelling, p.name)).collect();
            let decl = format!("{} {}({});", op.cpp.return_type.spelling, op.cpp.name, params.join(", "));
            assert!(line.starts_with(&decl), "{decl}\n{line}");
        }
    }
}

#[test]
fn format_eras_are_read() {
    let old = load("1.13.1");
    let add_out = old.find("add.out").unwrap();
    assert_eq!(add_out.cpp.return_type.spelling, "Tensor &");
    assert_eq!(add_out.cpp.params[0].ty.spelling, "const Tensor &");
    let optional = |m: &Model| {
        m.find("_embedding_bag")
            .unwrap()
            .cpp
            .params
            .iter()
            .find(|p| p.name == "per_sample_weights")
            .unwrap()
            .ty
            .spelling
            .clone()
    };
    assert_eq!(optional(&old), "const c10::optional<Tensor> &");
    assert_eq!(optional(&load("2.4.1")), "const ::std::optional<Tensor> &");
    assert_eq!(optional(&load("2.7.1")), "const ::std::optional<at::Tensor> &");
    assert_eq!(load("2.7.1").find("add.out").unwrap().cpp.return_type.spelling, "at::Tensor &");

    // 2.10+ wrap the file in #if/#else/#error/#endif; the first op is still found.
    assert!(fixture_text("2.10.0").starts_with("#if "));
    assert_eq!(load("2.10.0").ops[0].key, "_cast_Byte");

    // SymBool arrived in 2.9; every Dimname overload left in 2.13.
    let uses = |m: &Model, t: BaseType| {
        m.ops.iter().any(|op| {
            op.schema.arguments.iter().any(|a| *a.ty.base() == t)
                || op.schema.returns.items.iter().any(|r| *r.ty.base() == t)
        })
    };
    assert!(!uses(&old, BaseType::SymBool));
    assert!(uses(&load("2.10.0"), BaseType::SymBool));
    assert!(uses(&load("2.10.0"), BaseType::Dimname));
    assert!(!uses(&load("2.13.0"), BaseType::Dimname));
}

#[test]
fn ops_are_keyed_by_name_and_overload_not_cpp_name() {
    for release in RELEASES {
        let model = load(release);
        let keys: BTreeSet<&str> = model.ops.iter().map(|op| op.key.as_str()).collect();
        assert_eq!(keys.len(), model.ops.len(), "torch {release}: keys are unique");
        let mut per_cpp_name: BTreeMap<&str, usize> = BTreeMap::new();
        for op in &model.ops {
            *per_cpp_name.entry(op.cpp.name.as_str()).or_default() += 1;
        }
        let shared = per_cpp_name.values().filter(|&&n| n > 1).count();
        assert!((400..=500).contains(&shared), "torch {release}: {shared} C++ names are shared by overloads");
    }
}

#[test]
fn rust_names_are_unique_across_all_releases() {
    let mut by_name: BTreeMap<String, String> = BTreeMap::new();
    for release in RELEASES {
        for op in load(release).ops {
            let name = &op.rust_name;
            assert!(!regen_core::rust_name::is_rust_keyword(name), "{name}");
            assert!(name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'), "{name}");
            assert!(!name.trim_start_matches('_').contains("__"), "{name} is not snake_case");
            if let Some(other) = by_name.insert(name.clone(), op.key.clone()) {
                assert_eq!(other, op.key, "`{name}` names two ops");
            }
        }
    }
}

#[test]
fn classification_and_kinds() {
    let model = load("2.15.0");
    let op = |k: &str| model.find(k).unwrap_or_else(|| panic!("{k}"));
    assert_eq!(op("add.out").class(), OpClass::Required);
    assert_eq!(op("add.Tensor").class(), OpClass::HasDefault);
    assert_eq!(op("_cast_Byte").class(), OpClass::CompositeImplicit);
    assert_eq!(op("add.out").kind, OpKind::Out);
    assert_eq!(op("add_.Tensor").kind, OpKind::InPlace);
    assert_eq!(op("__iand__.Tensor").kind, OpKind::InPlace);
    assert_eq!(op("__and__.Tensor").kind, OpKind::Functional);
    assert_eq!(op("view").kind, OpKind::View);
    assert_eq!(op("add.Tensor").kind, OpKind::Functional);
    assert_eq!(op("_fused_moving_avg_obs_fq_helper").kind, OpKind::Mutable);
    // Every out op writes through kwarg-only arguments that come last.
    for op in model.ops.iter().filter(|op| op.kind == OpKind::Out) {
        let first_out =
            op.schema.arguments.iter().position(|a| a.kwarg_only && a.annotation.as_ref().is_some_and(|x| x.is_write));
        let tail = &op.schema.arguments[first_out.unwrap()..];
        assert!(tail.iter().all(|a| a.annotation.as_ref().is_some_and(|x| x.is_write)), "{}", op.key);
    }
}

#[test]
fn families_tag_about_a_quarter_of_the_required_ops() {
    let model = load("2.15.0");
    let tagged: Vec<_> = model.required().filter(|op| op.family.is_some()).collect();
    let mut by_family: BTreeMap<&str, usize> = BTreeMap::new();
    for op in &tagged {
        *by_family.entry(op.family.unwrap().as_str()).or_default() += 1;
    }
    eprintln!("{} of {} required ops tagged: {by_family:?}", tagged.len(), model.required().count());
    assert!((150..=260).contains(&tagged.len()), "{}", tagged.len());
    for family in ["cudnn", "miopen", "mkldnn", "mps", "sparse", "quantized", "nested"] {
        assert!(by_family.get(family).is_some_and(|&n| n > 0), "{family}");
    }
    // The core compute ops a host-memory backend implements stay untagged.
    for key in ["add.out", "mm.out", "empty.memory_format", "_copy_from", "sum.IntList_out", "view", "as_strided"] {
        assert_eq!(model.find(key).unwrap().family, None, "{key}");
    }
}

#[test]
fn every_op_of_every_release_crosses_the_abi() {
    for release in RELEASES {
        for op in load(release).ops {
            let abi =
                regen_core::abi::lower_abi(&op).unwrap_or_else(|u| panic!("torch {release} {}: {}", op.key, u.reason));
            assert_eq!(abi.args.len(), op.schema.arguments.len());
        }
    }
}

#[test]
fn the_cpu_fallback_never_answers_an_op_cpu_has_no_kernel_for() {
    use regen_core::config::parse_config;
    use regen_core::policy::NO_CPU_KERNEL;
    use regen_core::select::CpuLessAnswer;
    for release in RELEASES {
        let model = load(release);
        // Left to the CPU fallback, each such op is an error at the `fallback` setting.
        let config = parse_config("implement = [\"add.out\"]\nfallback = \"cpu\"\n").unwrap();
        let selection = config.select(&model).unwrap();
        let errors = config.check_served(&selection).expect_err("CPU-less ops left to the fallback");
        let rendered: String = errors.iter().map(|d| d.render("regen.toml")).collect();
        assert!(
            rendered.starts_with("regen.toml:2:12: error: fallback = \"cpu\" cannot serve `")
                && rendered.contains("cannot serve `_thnn_fused_lstm_cell`: CPU has no kernel for it"),
            "torch {release}: {rendered}"
        );
        // Excluded, every one of them (keys of other releases included) is reported as skipped;
        // implemented, native; with the error fallback, the fallback's.
        let keys: Vec<String> = NO_CPU_KERNEL.iter().map(|c| format!("{:?}", c.key)).collect();
        let all = keys.join(", ");
        let config =
            parse_config(&format!("implement = [\"add.out\"]\nexclude = [{all}]\nfallback = \"cpu\"\n")).unwrap();
        let selection = config.select(&model).unwrap();
        // Required ops and those whose default only raises (convolution_overrideable) alike.
        let listed = NO_CPU_KERNEL.iter().filter(|c| model.find(c.key).is_some()).count();
        let got: Vec<&str> = selection.cpu_less.iter().map(|(op, _, _)| op.key.as_str()).collect();
        assert_eq!(got.len(), listed, "torch {release}: {got:?}");
        assert!(selection.cpu_less.iter().all(|(_, _, a)| matches!(a, CpuLessAnswer::Skipped(_))));
        let config = parse_config("implement = [\"convolution_overrideable\"]\nfallback = \"error\"\n").unwrap();
        let selection = config.select(&model).unwrap();
        for (op, _, answer) in &selection.cpu_less {
            let want =
                if op.key == "convolution_overrideable" { CpuLessAnswer::Native } else { CpuLessAnswer::ErrorFallback };
            assert_eq!(*answer, want, "torch {release}: {}", op.key);
        }
    }
}

#[test]
fn in_place_ops_run_by_their_registered_out_kernels() {
    use regen_core::config::parse_config;
    for release in RELEASES {
        let model = load(release);
        let config = parse_config(
            "implement = [\"add.out\", \"abs.out\", \"relu_\", \"relu\", \"index_add.out\", \"mm.out\", \
             \"clamp.Tensor_out\", \"addcmul.out\"]\nexclude = [\"addcmul_\"]\n",
        )
        .unwrap();
        let selection = config.select(&model).unwrap();
        let routes: BTreeMap<&str, (&str, &[usize])> = selection
            .in_place
            .iter()
            .map(|r| (r.op.key.as_str(), (selection.selected[r.out].op.key.as_str(), r.args.as_slice())))
            .collect();
        // add.out(self, other, *, alpha, out) takes add_.Tensor(self, other, *, alpha) with out = self.
        let mut want = BTreeMap::from([
            ("add_.Tensor", ("add.out", &[0, 1, 2, 0][..])),
            ("abs_", ("abs.out", &[0, 0][..])),
            ("clamp_.Tensor", ("clamp.Tensor_out", &[0, 1, 2, 0][..])),
        ]);
        if model.find("index_add_").is_some_and(|op| op.class() == OpClass::HasDefault) {
            // index_add.out(self, dim, index, source, *, alpha, out)
            want.insert("index_add_", ("index_add.out", &[0, 1, 2, 3, 4, 0][..]));
        }
        // Not routed: relu_ is implemented, addcmul_ excluded, mm has no in-place form, add_.Scalar
        // has no registered `.out` of its arguments.
        assert_eq!(routes, want, "torch {release}");
    }
}

/// A whole header is parsed in two halves on two threads: an error in either half, and the
/// model, must come out as from one pass (line numbers counted from the header's first line,
/// errors in line order, ops in header order).
#[test]
fn parsing_in_two_halves_keeps_line_numbers_and_order() {
    let text = fixture_text(&common::pinned());
    let model = regen_core::load_header(text.as_bytes()).unwrap().model;
    let lines: Vec<&str> = text.lines().collect();
    // Header order, and each op's line is its own declaration.
    assert!(model.ops.windows(2).all(|w| w[0].line < w[1].line));
    for op in [&model.ops[0], &model.ops[model.ops.len() / 2], model.ops.last().unwrap()] {
        assert!(lines[op.line as usize - 1].contains(&format!("\"schema\": \"{}\"", op.schema_text)), "{}", op.key);
    }
    // One broken declaration near the start and one near the end: both reported, in order, at
    // their own lines.
    let (early, late) = (model.ops[3].line as usize, model.ops[model.ops.len() - 3].line as usize);
    let mut broken: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    for n in [early, late] {
        broken[n - 1] = broken[n - 1].replacen("); //", ") //", 1);
    }
    let errors = regen_core::load_header(broken.join("\n").as_bytes()).unwrap_err();
    let at: Vec<String> = errors.iter().map(|e| e.render("h").lines().next().unwrap().to_owned()).collect();
    assert_eq!(at.len(), 2, "{at:?}");
    assert!(at[0].starts_with(&format!("h:{early}:")) && at[1].starts_with(&format!("h:{late}:")), "{at:?}");
}

/// The two halves split at a line break found from the middle byte: a header whose middle byte is
/// inside a multi-byte character (a comment in another script) still parses, and does not panic.
#[test]
fn a_multibyte_character_at_the_middle_of_a_header_does_not_break_the_split() {
    let header = fixture_text(&common::pinned());
    let expected = regen_core::load_header(header.as_bytes()).unwrap().model.ops.len();
    let mut inside = 0;
    for pad in 0..2 {
        // A comment line of 'é' (two bytes each) across the middle, with the middle byte inside one.
        let comment = format!("// {}\n", "é".repeat(4000));
        let half = header.len() / 2;
        let at = header[..half].rfind('\n').unwrap() + 1;
        let mut text = format!("{}{}{}", &header[..at], " ".repeat(pad), comment);
        text.push_str(&header[at..]);
        inside += usize::from(!text.is_char_boundary(text.len() / 2));
        let model = regen_core::load_header(text.as_bytes()).unwrap_or_else(|e| panic!("{e:?}")).model;
        assert_eq!(model.ops.len(), expected);
    }
    // One of the two paddings puts the middle byte inside an 'é'.
    assert_eq!(inside, 1);
}
