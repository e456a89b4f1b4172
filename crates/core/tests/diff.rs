//! `regen diff` on the real headers: the known facts of PyTorch's history that the fixture
//! pairs contain, and every pair diffed without error.

use regen_core::diff::{ArgChange, diff_models};
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
