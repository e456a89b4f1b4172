//! Suggestions for a name the header lacks: the ops a config probably meant.

use crate::ir::Model;

/// At most this many suggestions follow "did you mean".
const MAX_SUGGESTIONS: usize = 6;
/// Similar names (Jaro-Winkler) are offered while fewer than this many suggestions are found.
const SIMILAR: usize = 3;

/// The error for an op name `model` lacks, with the ops it probably meant: when `name` is an op's
/// name without its overload (`add`), that op's overloads first, in header order (`add.Tensor`,
/// `add.out`, ...); then, up to three suggestions in all, the most similar keys.
pub(crate) fn unknown_op_message(name: &str, model: &Model) -> String {
    let mut best: Vec<&str> = model
        .ops
        .iter()
        .filter(|op| !op.overload().is_empty() && op.name() == name)
        .map(|op| op.key.as_str())
        .take(MAX_SUGGESTIONS)
        .collect();
    if best.len() < SIMILAR {
        let mut scored: Vec<(f64, &str)> =
            model.ops.iter().map(|op| (strsim::jaro_winkler(name, &op.key), op.key.as_str())).collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        let room = SIMILAR - best.len();
        let similar: Vec<&str> =
            scored.iter().filter(|(s, k)| *s > 0.8 && !best.contains(k)).map(|(_, k)| *k).take(room).collect();
        best.extend(similar);
    }
    if best.is_empty() {
        format!("no op `{name}` in this header")
    } else {
        format!("no op `{name}` in this header; did you mean {}?", best.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(version: &str) -> Model {
        let path = format!("{}/../../fixtures/torch-{version}/RegistrationDeclarations.h", env!("CARGO_MANIFEST_DIR"));
        crate::load_header(&std::fs::read(path).expect("fixture header")).expect("the fixture loads").model
    }

    #[test]
    fn a_bare_name_suggests_its_overloads_first() {
        let m = model("2.15.0");
        assert_eq!(
            unknown_op_message("add", &m),
            "no op `add` in this header; did you mean add.Tensor, add.out, add.Scalar, add.Scalar_out?"
        );
        // One overload (`conv_transpose2d.input`) leaves room for similar names after it.
        let msg = unknown_op_message("conv_transpose2d", &m);
        assert!(
            msg.starts_with("no op `conv_transpose2d` in this header; did you mean conv_transpose2d.input, "),
            "{msg}"
        );
        assert_eq!(msg.matches(", ").count(), 2, "{msg}");
    }

    #[test]
    fn a_misspelling_suggests_similar_keys() {
        let m = model("2.15.0");
        // Not a bare name: the closest key first, three in all.
        let msg = unknown_op_message("random_.from_int", &m);
        assert!(msg.starts_with("no op `random_.from_int` in this header; did you mean random_.from, "), "{msg}");
        assert_eq!(msg.matches(", ").count(), 2, "{msg}");
        assert_eq!(unknown_op_message("zzzz", &m), "no op `zzzz` in this header");
    }
}
