//! Inputs for one execution: a few real header lines (the "old" header), a mutated copy of them
//! (the header under test) and, often, a regen.toml built from the old header's ops.
//!
//! Mutations are aimed at names, since that is where later phases meet the header's text as
//! identifiers: an identifier is renamed everywhere in its line (so the C++ parameters and the
//! schema arguments still line up and the line reaches emission) to a keyword of either language,
//! `_`, a generated local's name, another name of the same line (a duplicate), or itself spliced
//! with odd characters and JSON escapes. Byte flips, token swaps, truncation, duplication and
//! splices from other lines cover the rest of the grammar.

use std::path::{Path, PathBuf};

use crate::rng::Rng;

/// Header lines to draw from: every line of the fixture headers of six releases.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// Declaration lines (with `// {json}` metadata).
    pub decls: Vec<String>,
    /// Comments, preprocessor lines, blanks.
    pub other: Vec<String>,
}

impl Corpus {
    /// The repository's fixtures directory.
    pub fn fixtures_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
    }

    /// Every `*/RegistrationDeclarations.h` under `dir`, in path order (deterministic).
    pub fn load(dir: &Path) -> std::io::Result<Corpus> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(|e| e.ok().map(|e| e.path().join("RegistrationDeclarations.h")))
            .filter(|p| p.is_file())
            .collect();
        paths.sort();
        let mut decls = Vec::new();
        let mut other = Vec::new();
        for path in paths {
            for line in std::fs::read_to_string(&path)?.lines() {
                if line.contains("; // {") { decls.push(line.to_owned()) } else { other.push(line.to_owned()) }
            }
        }
        decls.sort();
        decls.dedup();
        other.sort();
        other.dedup();
        if decls.is_empty() {
            return Err(std::io::Error::other(format!("no declaration lines under {}", dir.display())));
        }
        Ok(Corpus { decls, other })
    }
}

/// One execution's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// The unmutated lines, the `old` side of the diff.
    pub old: String,
    /// The header under test.
    pub header: Vec<u8>,
    /// A regen.toml, or none (the default config: every required op as a skeleton).
    pub config: Option<String>,
}

/// Names later phases must survive: keywords of Rust and C++ (and `_`), names the generated code
/// declares or calls, reserved C++ identifiers, macros, type names, digits first, non-ASCII.
pub const NAMES: &[&str] = &[
    "_",
    "__",
    "___",
    "____",
    "_1",
    "1",
    "1abc",
    "a1",
    "self",
    "Self",
    "super",
    "crate",
    "type",
    "where",
    "fn",
    "gen",
    "async",
    "unsafe",
    "union",
    "static",
    "int",
    "float",
    "bool",
    "class",
    "template",
    "this",
    "and",
    "not",
    "or_eq",
    "default",
    "delete",
    "new",
    "operator",
    "namespace",
    "void",
    "auto",
    "NULL",
    "EOF",
    "errno",
    "unix",
    "__LINE__",
    "__x",
    "_X",
    "_Pragma",
    "regen_a0",
    "regen_r0",
    "regen_v0",
    "regen_r1",
    "regen_tensor",
    "regen_kernel_add",
    "regen_kernel_f",
    "regen",
    "kernels",
    "abi",
    "Ok",
    "Err",
    "CALLS",
    "OPS",
    "install",
    "native_calls",
    "Tensor",
    "Scalar",
    "int64_t",
    "optional",
    "N",
    "std",
    "at",
    "c10",
    "torch",
    "aten",
    "ctx",
    "result",
    "outputs",
    "op",
    "guard",
    "grads",
    "saved",
    "gradients",
    "backward_op",
    "as_cpu",
    "wrap_f",
    "Autograd_f",
    "out",
    "out_",
    "Tensor_",
    "tensor",
    "add",
    "add_",
    "__and__",
    "__iand__",
    "dunder_and",
    "where_op",
    "type_op",
    "my_f",
    "f",
    "F",
    "dimI",
    "HxW",
    "é",
    "ü_x",
    "x\u{200b}",
    "😀",
    "aé",
    "averyveryveryveryveryveryveryveryveryveryveryveryveryverylongname",
];

/// Text spliced into names and values: separators of both grammars, quotes, JSON escapes
/// (which the schema is unescaped through), control characters, non-ASCII.
const ODD: &[&str] = &[
    "_",
    "__",
    "0",
    "9",
    "é",
    "😀",
    "$",
    "-",
    ".",
    ":",
    "::",
    "'",
    "\\\"",
    "\\\\",
    " ",
    "  ",
    "\t",
    "(",
    ")",
    "[]",
    "[3]",
    "?",
    "!",
    "*",
    "<",
    ">",
    ",",
    ", ",
    " -> ",
    "=",
    "=1",
    "\\n",
    "\\r",
    "\\t",
    "\\u0000",
    "\\u001b",
    "\\u005f",
    "\\u00e9",
    "\\ud83d\\ude00",
    "\\u2028",
    "\u{7f}",
    "\u{85}",
    "a!",
    "(a)",
    "(a!)",
    "(a -> *)",
    "|",
];

/// Bytes set in place of another.
const BYTES: &[u8] = b"()[]<>,.:;\"'\\ _!?*=&-019aZ\t\n\r\x00\x7f\xc3\xa9\xff";

/// Byte ranges of the ASCII identifiers of `s`.
fn idents(s: &str) -> Vec<(usize, usize)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut k = 0;
    while k < b.len() {
        if b[k].is_ascii_alphabetic() || b[k] == b'_' {
            let start = k;
            while k < b.len() && (b[k].is_ascii_alphanumeric() || b[k] == b'_') {
                k += 1;
            }
            out.push((start, k));
        } else {
            k += 1;
        }
    }
    out
}

/// `line` with every whole-identifier occurrence of `from` replaced by `to`.
fn replace_ident(line: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(line.len() + 16);
    let mut last = 0;
    for (a, b) in idents(line) {
        if &line[a..b] == from {
            out.push_str(&line[last..a]);
            out.push_str(to);
            last = b;
        }
    }
    out.push_str(&line[last..]);
    out
}

/// The nearest char boundary at or before `k`.
fn floor(s: &str, mut k: usize) -> usize {
    k = k.min(s.len());
    while !s.is_char_boundary(k) {
        k -= 1;
    }
    k
}

/// A new name for identifier `old` of `line`.
fn new_name(rng: &mut Rng, line: &str, old: &str) -> String {
    match rng.below(10) {
        0..=5 => (*rng.pick(NAMES)).to_owned(),
        6 | 7 => {
            let ids = idents(line);
            let (a, b) = *rng.pick(&ids);
            line[a..b].to_owned()
        }
        _ => {
            let at = floor(old, rng.below(old.len() + 1));
            format!("{}{}{}", &old[..at], rng.pick(ODD), &old[at..])
        }
    }
}

/// The metadata's own words: renaming them only breaks the JSON, which byte-level damage covers.
const METADATA_WORDS: &[&str] = &["schema", "dispatch", "default", "True", "False"];

/// One structured mutation of one line.
fn mutate_line(rng: &mut Rng, corpus: &Corpus, line: &str) -> String {
    let ids = idents(line);
    if ids.is_empty() {
        return format!("{line}{}", rng.pick(ODD));
    }
    let names: Vec<(usize, usize)> =
        ids.iter().copied().filter(|&(a, b)| !METADATA_WORDS.contains(&&line[a..b])).collect();
    let names = if names.is_empty() { &ids } else { &names };
    match rng.below(14) {
        // Rename an identifier everywhere in the line (C++ and schema stay aligned).
        0..=5 => {
            let (a, b) = *rng.pick(names);
            let old = &line[a..b];
            replace_ident(line, old, &new_name(rng, line, old))
        }
        // Rename one occurrence.
        6 => {
            let (a, b) = *rng.pick(names);
            let name = new_name(rng, line, &line[a..b]);
            format!("{}{name}{}", &line[..a], &line[b..])
        }
        // The op name or overload of the schema.
        7 => {
            let Some(k) = line.find("\"aten::") else { return line.to_owned() };
            let start = k + "\"aten::".len();
            let end = line[start..].find('(').map_or(line.len(), |e| start + e);
            let (name, overload) = match line[start..end].split_once('.') {
                Some((n, o)) => (n.to_owned(), Some(o.to_owned())),
                None => (line[start..end].to_owned(), None),
            };
            let replaced = match rng.below(4) {
                0 => format!("{}.{}", rng.pick(NAMES), overload.unwrap_or_default()),
                1 => name,
                2 => format!("{name}.{}", rng.pick(NAMES)),
                _ => format!("{name}.{}", new_name(rng, line, overload.as_deref().unwrap_or("out"))),
            };
            format!("{}{replaced}{}", &line[..start], &line[end..])
        }
        // Splice odd text into or next to an identifier.
        8 => {
            let (a, b) = *rng.pick(&ids);
            let at = a + rng.below(b - a + 1);
            format!("{}{}{}", &line[..at], rng.pick(ODD), &line[at..])
        }
        // Swap two identifiers.
        9 => {
            let (a, b) = *rng.pick(&ids);
            let (c, d) = *rng.pick(&ids);
            if b <= c {
                format!("{}{}{}{}{}", &line[..a], &line[c..d], &line[b..c], &line[a..b], &line[d..])
            } else if d <= a {
                format!("{}{}{}{}{}", &line[..c], &line[a..b], &line[d..a], &line[c..d], &line[b..])
            } else {
                line.to_owned()
            }
        }
        // Flip a flag.
        10 => {
            let flags: Vec<usize> =
                line.match_indices("\"True\"").chain(line.match_indices("\"False\"")).map(|(k, _)| k).collect();
            if flags.is_empty() {
                return line.to_owned();
            }
            let k = *rng.pick(&flags);
            let (old, new) =
                if line[k..].starts_with("\"True\"") { ("\"True\"", "\"False\"") } else { ("\"False\"", "\"True\"") };
            format!("{}{new}{}", &line[..k], &line[k + old.len()..])
        }
        // Duplicate a piece of the line (an argument, a type suffix, a quote).
        11 => {
            let a = floor(line, rng.below(line.len()));
            let b = floor(line, a + 1 + rng.below(40));
            format!("{}{}", &line[..b], &line[a..])
        }
        // Truncate.
        12 => line[..floor(line, rng.below(line.len() + 1))].to_owned(),
        // Splice a piece of another real line.
        _ => {
            let other = rng.pick(&corpus.decls);
            let a = floor(other, rng.below(other.len()));
            let b = floor(other, a + 1 + rng.below(60));
            let at = floor(line, rng.below(line.len() + 1));
            let cut = floor(line, at + rng.below(20));
            format!("{}{}{}", &line[..at], &other[a..b], &line[cut..])
        }
    }
}

/// Keys (`name.overload`) of the declaration lines of `text`, read without regen's parser.
pub fn keys_of(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let start = l.find("\"aten::")? + "\"aten::".len();
            let end = start + l[start..].find('(')?;
            Some(l[start..end].to_owned())
        })
        .collect()
}

/// A TOML basic string holding `s`.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn toml_list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| toml_string(s)).collect();
    format!("[{}]", quoted.join(", "))
}

const FAMILIES: &[&str] =
    &["cudnn", "miopen", "mkldnn", "mps", "sparse", "quantized", "nested", "attention", "cuda", "test"];

/// A regen.toml naming some of `keys`, or declaring custom ops with names from [`NAMES`].
fn config_for(rng: &mut Rng, keys: &[String], schemas: &[String]) -> String {
    let mut c = String::new();
    let some = |rng: &mut Rng| -> Vec<String> { keys.iter().filter(|_| rng.chance(50)).cloned().collect() };
    let name = |rng: &mut Rng| toml_string(rng.pick::<&str>(NAMES));
    if rng.chance(20) {
        c.push_str(&format!("symbol_prefix = {}\n", name(rng)));
    }
    if rng.chance(10) {
        c.push_str(&format!("device = {}\nnamespace = {}\n", name(rng), name(rng)));
    }
    if rng.chance(70) {
        let implement = some(rng);
        let autograd: Vec<String> = implement.iter().filter(|_| rng.chance(40)).cloned().collect();
        let optional: Vec<String> = implement.iter().filter(|_| rng.chance(20)).cloned().collect();
        let exclude: Vec<String> = keys.iter().filter(|k| !implement.contains(k) && rng.chance(30)).cloned().collect();
        if rng.chance(30) {
            // Kernel groups, as an inline table (the keys that follow stay top-level), each op in
            // one of up to three groups, named plainly or from NAMES (awkward names are errors).
            let groups: Vec<String> = (0..3)
                .map(|g| if rng.chance(80) { format!("group_{g}") } else { (*rng.pick(NAMES)).to_owned() })
                .collect();
            let mut members: Vec<Vec<String>> = vec![Vec::new(); groups.len()];
            for op in &implement {
                members[rng.below(groups.len())].push(op.clone());
            }
            let tables: Vec<String> = groups
                .iter()
                .zip(&members)
                .map(|(g, ops)| format!("{} = {}", toml_string(g), toml_list(ops)))
                .collect();
            c.push_str(&format!("implement = {{ {} }}\n", tables.join(", ")));
        } else {
            c.push_str(&format!("implement = {}\n", toml_list(&implement)));
        }
        c.push_str(&format!(
            "autograd = {}\noptional = {}\nexclude = {}\n",
            toml_list(&autograd),
            toml_list(&optional),
            toml_list(&exclude)
        ));
    }
    if rng.chance(50) {
        let families: Vec<String> = FAMILIES.iter().filter(|_| rng.chance(50)).map(|f| (*f).to_owned()).collect();
        c.push_str(&format!("exclude_families = {}\n", toml_list(&families)));
    }
    if rng.chance(40) {
        c.push_str(if rng.chance(50) { "fallback = \"cpu\"\n" } else { "fallback = \"error\"\n" });
    }
    if rng.chance(15) {
        c.push_str("autocast = \"cpu\"\n");
    }
    if rng.chance(40) {
        // A forward/backward pair whose names come from NAMES (the autograd node's locals among them).
        let (op, a, b) = (rng.pick(NAMES), rng.pick(NAMES), rng.pick(NAMES));
        let ns = if rng.chance(80) { "mydev" } else { *rng.pick(NAMES) };
        c.push_str(&format!(
            "[[custom_op]]\nschema = {}\nbackward = {}\ndifferentiable = [{}]\ncpu = {}\n",
            toml_string(&format!("{ns}::{op}(Tensor {a}, Tensor index, int {b}) -> Tensor")),
            toml_string(&format!("{ns}::{op}_backward")),
            toml_string(a),
            rng.chance(50)
        ));
        c.push_str(&format!(
            "[[custom_op]]\nschema = {}\n",
            toml_string(&format!("{ns}::{op}_backward(Tensor grad, Tensor index, int {b}) -> Tensor"))
        ));
    }
    if rng.chance(30) && !schemas.is_empty() {
        // A header schema (mutated or not) as a custom op of its own namespace.
        let schema = rng.pick(schemas).replacen("aten::", "mydev::", 1);
        c.push_str(&format!("[[custom_op]]\nschema = {}\ncpu = {}\n", toml_string(&schema), rng.chance(50)));
    }
    c
}

/// Schema strings of `text`'s lines, JSON-unescaped; lines whose metadata does not parse are left out.
fn schemas_of(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let json = &l[l.find("// {")? + 3..];
            let v: serde_json::Value = serde_json::from_str(json).ok()?;
            v.get("schema")?.as_str().map(str::to_owned)
        })
        .collect()
}

/// Byte-level damage to the whole text.
fn mutate_bytes(rng: &mut Rng, bytes: &mut Vec<u8>) {
    if bytes.is_empty() {
        bytes.push(*rng.pick(BYTES));
        return;
    }
    match rng.below(6) {
        0 => {
            let k = rng.below(bytes.len());
            bytes[k] ^= 1 << rng.below(8);
        }
        1 => {
            let k = rng.below(bytes.len());
            bytes[k] = *rng.pick(BYTES);
        }
        2 => {
            let k = rng.below(bytes.len() + 1);
            bytes.insert(k, *rng.pick(BYTES));
        }
        3 => {
            let k = rng.below(bytes.len());
            bytes.remove(k);
        }
        4 => bytes.truncate(rng.below(bytes.len() + 1)),
        _ => {
            let a = rng.below(bytes.len());
            let b = (a + 1 + rng.below(32)).min(bytes.len());
            let piece = bytes[a..b].to_vec();
            let at = rng.below(bytes.len() + 1);
            bytes.splice(at..at, piece);
        }
    }
}

/// The input of one execution.
pub fn generate(corpus: &Corpus, rng: &mut Rng) -> Input {
    let n = *rng.pick(&[1, 1, 1, 2, 2, 3, 4, 6]);
    let mut lines: Vec<String> = (0..n).map(|_| rng.pick(&corpus.decls).clone()).collect();
    // Only required ops reach the emitters without a config: make them so, on both sides.
    if rng.chance(60) {
        for l in &mut lines {
            *l = l
                .replace("\"dispatch\": \"False\"", "\"dispatch\": \"True\"")
                .replace("\"default\": \"True\"", "\"default\": \"False\"");
        }
    }
    if rng.chance(10) && !corpus.other.is_empty() {
        let k = rng.below(lines.len() + 1);
        lines.insert(k, rng.pick(&corpus.other).clone());
    }
    let old = lines.join("\n") + "\n";
    let mut new = lines;
    let structured = *rng.pick(&[0, 1, 1, 1, 1, 2, 2, 2, 3, 4]);
    for _ in 0..structured {
        match rng.below(12) {
            0 if new.len() > 1 => {
                let k = rng.below(new.len());
                new.remove(k);
            }
            1 => {
                let k = rng.below(new.len());
                new.insert(k, new[k].clone());
            }
            2 if new.len() > 1 => {
                let (a, b) = (rng.below(new.len()), rng.below(new.len()));
                new.swap(a, b);
            }
            3 => {
                let k = rng.below(new.len() + 1);
                new.insert(k, (*rng.pick(&["", "// x", "#if 0", "#endif", "   ", "\t", "//"])).to_owned());
            }
            _ => {
                let k = rng.below(new.len());
                new[k] = mutate_line(rng, corpus, &new[k]);
            }
        }
    }
    let crlf = rng.chance(5);
    let mut text = new.join(if crlf { "\r\n" } else { "\n" });
    if rng.chance(90) {
        text.push('\n');
    }
    if rng.chance(3) {
        text.insert(0, '\u{feff}');
    }
    let mut header = text.into_bytes();
    if structured == 0 || rng.chance(10) {
        for _ in 0..1 + rng.below(3) {
            mutate_bytes(rng, &mut header);
        }
    }
    let config = match rng.below(10) {
        0..=3 => None,
        k => {
            let schemas = schemas_of(&String::from_utf8_lossy(&header));
            let mut c = config_for(rng, &keys_of(&old), &schemas);
            if k == 9 {
                let mut bytes = c.into_bytes();
                for _ in 0..1 + rng.below(3) {
                    mutate_bytes(rng, &mut bytes);
                }
                c = String::from_utf8_lossy(&bytes).into_owned();
            }
            Some(c)
        }
    };
    Input { old, header, config }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renaming_keeps_cpp_and_schema_aligned() {
        let line = r#"at::Tensor f(const at::Tensor & self, int64_t dim); // {"schema": "aten::f(Tensor self, int dim) -> Tensor", "dispatch": "True", "default": "False"}"#;
        let renamed = replace_ident(line, "dim", "int");
        assert!(renamed.contains("int64_t int)") && renamed.contains("int int)"), "{renamed}");
        // Whole identifiers only: `self` is not renamed inside `myself`.
        assert_eq!(replace_ident("self myself self_", "self", "x"), "x myself self_");
    }

    #[test]
    fn generation_is_deterministic() {
        let corpus = Corpus::load(&Corpus::fixtures_dir()).unwrap();
        for k in 0..50 {
            assert_eq!(generate(&corpus, &mut Rng::for_exec(7, k)), generate(&corpus, &mut Rng::for_exec(7, k)));
        }
        assert_ne!(generate(&corpus, &mut Rng::for_exec(7, 1)), generate(&corpus, &mut Rng::for_exec(7, 2)));
    }
}
