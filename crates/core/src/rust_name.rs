//! Every name regen derives for generated code, in one place: an op's Rust name, its entry-point
//! symbol and C++ wrapper name, a custom op's Rust name, CPU wrapper and autograd node, argument
//! bindings in Rust and parameter names in C++, and the one keyword-escaping rule all of them
//! share. (An op's qualified name, `aten::add.out`, is the IR's: `ir::qualified_name`.)
//!
//! An op's Rust name is derived only from its name and overload, so an op keeps it across
//! releases. The rule (also in docs/ARCHITECTURE.md):
//! 1. A dunder name `__x__` becomes `dunder_x`.
//! 2. Otherwise leading underscores become one `_`, and a trailing `_` (PyTorch's in-place
//!    marker) becomes the word `_inplace`.
//! 3. camelCase becomes snake_case, everything is lowercased, and runs of `_` collapse to one.
//! 4. A non-empty overload is appended after `_`, converted the same way; a trailing `_` on
//!    the overload (as in `range.out_`) becomes `_underscore`.
//! 5. A result that is a Rust keyword (`where`) is escaped with [`Escape::Op`] (`where_op`).
//!
//! Escaping is one rule: a name the target language reserves gets a suffix. The suffix is `_op`
//! for an op's Rust name (a bare `_` would read as the in-place marker: `where_` is not
//! `where`'s in-place form) and `_` for arguments (`self` → `self_`), as published trait methods
//! and kernel signatures already spell them. The parser guarantees what escaping cannot mend:
//! an op name has a letter or digit (so its Rust name is never `_`), and no argument name is a
//! name C++ compilers reserve for macros (`__x`, `_X`) or appears twice.
//!
//! Uniqueness of Rust names within a release is checked when the model is built (a collision is an
//! error naming both ops); the tests check it over the union of all fixture releases.

/// Strict and reserved Rust keywords (2024 edition, including `gen`), and `_`, which is not an
/// identifier either: a generated name equal to one of these is escaped.
pub const RUST_KEYWORDS: &[&str] = &[
    "_", "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
    "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self", "Self",
    "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract", "become",
    "box", "do", "final", "gen", "macro", "override", "priv", "try", "typeof", "unsized", "virtual", "yield", "union",
];

/// C++20 keywords and alternative tokens (`and`, `not_eq`, ...), which are keywords too.
pub const CPP_KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char8_t",
    "char16_t",
    "char32_t",
    "class",
    "compl",
    "concept",
    "const",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
];

/// Object-like macros of the C library and of GNU mode that could pass for argument names: a
/// parameter spelled like one would be replaced by the preprocessor.
pub const CPP_MACROS: &[&str] = &["NULL", "EOF", "errno", "unix", "linux", "stdin", "stdout", "stderr"];

/// Names the generated Rust entry points call unqualified: an argument binding spelled like one
/// would shadow it.
const RUST_LOCALS: &[&str] = &["kernels"];

/// The prefix of the generated code's own locals, C ABI types and default symbols
/// (`regen_a0`, `regen_tensor`, `regen_kernel_add_out`): argument names with it are escaped.
pub const GENERATED_PREFIX: &str = "regen_";

pub fn is_rust_keyword(s: &str) -> bool {
    RUST_KEYWORDS.contains(&s)
}

pub fn is_cpp_keyword(s: &str) -> bool {
    CPP_KEYWORDS.contains(&s)
}

/// A C or C++ identifier the implementation uses for macros and builtins (`__LINE__`,
/// `__attribute__`, `_Pragma`, `_Bool`): it starts with a double underscore, or with an underscore
/// and a capital letter. (The standard also reserves `__` inside a name, which no compiler or
/// library defines anything with; regen's own symbols have it: `regen_kernel__foo`.)
pub fn is_cpp_reserved(s: &str) -> bool {
    s.starts_with("__") || (s.starts_with('_') && s[1..].starts_with(|c: char| c.is_ascii_uppercase()))
}

/// A C identifier by its characters alone: a letter or `_`, then letters, digits and `_`.
pub fn is_c_identifier(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An identifier that C++ code may declare as it is: not a keyword, a listed macro or reserved.
pub fn is_c_name(s: &str) -> bool {
    is_c_identifier(s) && !is_cpp_keyword(s) && !CPP_MACROS.contains(&s) && !is_cpp_reserved(s)
}

/// What a reserved name stands for, which decides its escape suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// An op's Rust name: `where` → `where_op`.
    Op,
    /// An argument, in Rust or C++: `self` → `self_`, `int` → `int_`.
    Arg,
}

/// `name` with the suffix of `kind` when `reserved`, else unchanged.
fn escape(mut name: String, reserved: bool, kind: Escape) -> String {
    if reserved {
        match kind {
            Escape::Op => push_word(&mut name, "op"),
            Escape::Arg => name.push('_'),
        }
    }
    name
}

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
    let reserved = is_rust_keyword(&out);
    escape(out, reserved, Escape::Op)
}

/// The Rust name of a backend's own op (`[[custom_op]]`): its namespace joins its name
/// (`mydev::scatter_sum` → `mydev_scatter_sum`), so it never meets an aten op's.
pub fn custom_rust_name(namespace: &str, name: &str, overload: &str) -> String {
    rust_name(&format!("{namespace}_{name}"), overload)
}

/// The entry-point prefix when regen.toml names none: `{device}_kernel`.
pub fn default_symbol_prefix(device: &str) -> String {
    format!("{device}_kernel")
}

/// The symbol of an op's Rust entry point, which its C++ wrapper calls.
pub fn kernel_symbol(symbol_prefix: &str, rust_name: &str) -> String {
    format!("{symbol_prefix}_{rust_name}")
}

/// The C++ wrapper registered for an op.
pub fn wrapper_name(rust_name: &str) -> String {
    format!("wrap_{rust_name}")
}

/// The function an op banned under autocast is registered with (`[autocast_ops]`): a suffix, as
/// ATen's `binary_cross_entropy_banned`, since a Rust name may start with `_` and a prefix would
/// make a `__` C++ reserves.
pub fn banned_name(rust_name: &str) -> String {
    format!("{rust_name}_banned")
}

/// A custom op's registration for CPU tensors (its wrapper, results handed back as CPU tensors).
pub fn cpu_wrapper_name(rust_name: &str) -> String {
    format!("cpu_{rust_name}")
}

/// A custom op's autograd node (a `torch::autograd::Function`).
pub fn autograd_node_name(rust_name: &str) -> String {
    format!("Autograd_{rust_name}")
}

/// A custom op's kernel for the autograd keys, which applies its node.
pub fn autograd_kernel_name(rust_name: &str) -> String {
    format!("autograd_{rust_name}")
}

/// `s` in snake_case (`N` → `n`, `dimI` → `dim_i`).
pub fn snake_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    let core = s.trim_start_matches('_');
    if core.len() < s.len() {
        out.push('_');
    }
    push_snake(&mut out, core);
    out
}

/// The Rust binding of one argument: snake_case, escaped when it is a keyword, `_`, a name the
/// entry point calls, or has the generated prefix.
pub fn rust_binding(name: &str) -> String {
    let s = snake_case(name);
    let reserved = is_rust_keyword(&s) || RUST_LOCALS.contains(&s.as_str()) || s.starts_with(GENERATED_PREFIX);
    escape(s, reserved, Escape::Arg)
}

/// The C++ parameter name of one argument: the header's own, escaped when it is a C++ keyword, a
/// macro, a type name the wrappers spell unqualified (`Tensor` under `using namespace at`), or has
/// the generated prefix.
pub fn cpp_param(name: &str) -> String {
    let reserved = is_cpp_keyword(name)
        || CPP_MACROS.contains(&name)
        || is_cpp_type_name(name)
        || name.starts_with(GENERATED_PREFIX);
    escape(name.to_owned(), reserved, Escape::Arg)
}

/// The Rust bindings of an op's arguments, in order: [`rust_binding`], then a position suffix
/// should two meet (`N` and `n`).
pub fn rust_bindings<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    unique(names.into_iter().map(rust_binding))
}

/// The C++ parameter names of an op's arguments, in order: [`cpp_param`], also escaping the names
/// in `taken` (what the function's body calls or declares), made unique the same way as bindings
/// (an escaped `int` meets an `int_`).
pub fn cpp_params<'a>(names: impl IntoIterator<Item = &'a str>, taken: &[&str]) -> Vec<String> {
    unique(names.into_iter().map(|n| if taken.contains(&n) { format!("{n}_") } else { cpp_param(n) }))
}

/// Appends `_K` (K the position, then K+1, ...) to a name already taken, until it is not; after
/// an escaped name's `_`, just `K` (no `__`, which C++ reserves).
fn unique(names: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for (k, name) in names.enumerate() {
        let sep = if name.ends_with('_') { "" } else { "_" };
        let mut candidate = name.clone();
        let mut n = k;
        while seen.contains(&candidate) {
            candidate = format!("{name}{sep}{n}");
            n += 1;
        }
        seen.push(candidate);
    }
    seen
}

/// A name that is (part of) a C++ type of the ABI table or of a return, as the header may spell
/// it without a namespace.
fn is_cpp_type_name(name: &str) -> bool {
    const RETURN_TYPES: &[&str] = &["void", "tuple", "vector", "QScheme"];
    // The words of the table's spellings, split once: this runs for every parameter of every op
    // (splitting the table each time was a tenth of a whole generation).
    static WORDS: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
        let mut words: Vec<&'static str> = crate::abi::ARG_TYPES
            .iter()
            .flat_map(|(spelling, _)| spelling.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
            // `N` is the table's placeholder for an array size, not a name.
            .filter(|w| !w.is_empty() && *w != "N")
            .collect();
        words.sort_unstable();
        words.dedup();
        words
    });
    RETURN_TYPES.contains(&name) || WORDS.binary_search(&name).is_ok()
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
    use super::*;

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
        assert_eq!(rust_name("Self", ""), "self_op");
        // The parser rejects names without a letter or digit; were one to get here, it would
        // still be an identifier.
        assert_eq!(rust_name("_", ""), "_op");
    }

    #[test]
    fn argument_names_in_rust() {
        assert_eq!(rust_bindings(["self", "other", "unsafe", "N", "n"]), ["self_", "other", "unsafe_", "n", "n_4"]);
        assert_eq!(
            rust_bindings(["_", "kernels", "regen_r0", "Regen_v0", "gen"]),
            ["__", "kernels_", "regen_r0_", "regen_v0_", "gen_"]
        );
        // A position suffix that is itself taken moves on to the next number.
        assert_eq!(rust_bindings(["a", "a_2", "A"]), ["a", "a_2", "a_3"]);
    }

    #[test]
    fn argument_names_in_cpp() {
        assert_eq!(
            cpp_params(["self", "int", "int_", "NULL", "Tensor", "regen_a0", "std", "result"], &["result"]),
            ["self", "int_", "int_2", "NULL_", "Tensor_", "regen_a0_", "std", "result_"]
        );
        assert!(is_cpp_reserved("__LINE__") && is_cpp_reserved("_Pragma") && is_cpp_reserved("__x"));
        assert!(!is_cpp_reserved("_random_samples") && !is_cpp_reserved("_") && !is_cpp_reserved("_1"));
        assert!(!is_cpp_reserved("a__b") && !is_cpp_reserved("regen_kernel__foo"));
    }
}
