//! The Rust identifier of an op, derived only from its name and overload.
//!
//! Because the rule looks at nothing else, an op keeps its Rust name across releases.
//! The rule (also in docs/ARCHITECTURE.md):
//! 1. A dunder name `__x__` becomes `dunder_x`.
//! 2. Otherwise leading underscores become one `_`, and a trailing `_` (PyTorch's in-place
//!    marker) becomes the word `_inplace`.
//! 3. camelCase becomes snake_case, everything is lowercased, and runs of `_` collapse to one.
//! 4. A non-empty overload is appended after `_`, converted the same way; a trailing `_` on
//!    the overload (as in `range.out_`) becomes `_underscore`.
//! 5. A result that is a Rust keyword (`where`) gets the suffix `_op`.
//!
//! Uniqueness within a release is checked when the model is built (a collision is an error
//! naming both ops); the tests check it over the union of all fixture releases.

use crate::policy::is_rust_keyword;

pub fn rust_name(name: &str, overload: &str) -> String {
    let mut out = String::with_capacity(name.len() + overload.len() + 8);
    match name.strip_prefix("__").and_then(|n| n.strip_suffix("__")) {
        Some(core) if !core.is_empty() => {
            out.push_str("dunder_");
            push_snake(&mut out, core);
        }
        _ => {
            let core = name.trim_start_matches('_');
            if core.len() < name.len() {
                out.push('_');
            }
            let trimmed = core.trim_end_matches('_');
            push_snake(&mut out, trimmed);
            if trimmed.len() < core.len() {
                push_word(&mut out, "inplace");
            }
        }
    }
    if !overload.is_empty() {
        let trimmed = overload.trim_end_matches('_');
        out.push('_');
        push_snake(&mut out, trimmed);
        if trimmed.len() < overload.len() {
            push_word(&mut out, "underscore");
        }
    }
    if is_rust_keyword(&out) {
        push_word(&mut out, "op");
    }
    out
}

/// `s` in snake_case (for argument bindings: `N` → `n`, `dimI` → `dim_i`).
pub fn snake_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    let core = s.trim_start_matches('_');
    if core.len() < s.len() {
        out.push('_');
    }
    push_snake(&mut out, core);
    out
}

fn push_word(out: &mut String, word: &str) {
    if !out.ends_with('_') {
        out.push('_');
    }
    out.push_str(word);
}

/// Appends `s` in snake_case: `ScalarOpt_dim` -> `scalar_opt_dim`, `dimI` -> `dim_i`.
fn push_snake(out: &mut String, s: &str) {
    let mut prev: Option<char> = None;
    for c in s.chars() {
        if c == '_' {
            if !out.ends_with('_') {
                out.push('_');
            }
        } else if c.is_ascii_uppercase() {
            if prev.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit()) && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
        prev = Some(c);
    }
}

#[cfg(test)]
mod tests {
    use super::rust_name;

    #[test]
    fn the_documented_rule() {
        assert_eq!(rust_name("add", "out"), "add_out");
        assert_eq!(rust_name("add_", "Tensor"), "add_inplace_tensor");
        assert_eq!(rust_name("add", "Tensor"), "add_tensor");
        assert_eq!(rust_name("_add_relu_", "Scalar"), "_add_relu_inplace_scalar");
        assert_eq!(rust_name("__and__", "Tensor"), "dunder_and_tensor");
        assert_eq!(rust_name("__iand__", ""), "dunder_iand");
        assert_eq!(rust_name("range", "out_"), "range_out_underscore");
        assert_eq!(rust_name("range", "out"), "range_out");
        assert_eq!(rust_name("_dimI", ""), "_dim_i");
        assert_eq!(rust_name("native_norm", "ScalarOpt_dim_dtype"), "native_norm_scalar_opt_dim_dtype");
        assert_eq!(rust_name("linalg__powsum", ""), "linalg_powsum");
        assert_eq!(rust_name("where", ""), "where_op");
        assert_eq!(rust_name("where", "self"), "where_self");
        assert_eq!(rust_name("type", ""), "type_op");
    }
}
