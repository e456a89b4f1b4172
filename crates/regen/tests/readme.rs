//! README.md says what the workspace says: the Rust version it asks for is Cargo.toml's
//! `rust-version` (issue 25: it said 1.85+ while Cargo.toml said 1.89), and every command meant
//! to be copied is in a code block (issue 25: a `.venv/bin/python -c` line directly under a
//! paragraph rendered as part of that paragraph).

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_readme_asks_for_the_workspace_rust_version() {
    let manifest: toml::Table = read("Cargo.toml").parse().unwrap();
    let version = manifest["workspace"]["package"]["rust-version"].as_str().expect("workspace rust-version");
    let readme = read("README.md");
    let asked: Vec<&str> = readme
        .match_indices("Rust toolchain (")
        .map(|(at, m)| readme[at + m.len()..].split(['+', ')']).next().unwrap())
        .collect();
    assert_eq!(asked, [version], "README.md's \"Rust toolchain (X+)\" against Cargo.toml's rust-version");
}

/// Markdown makes an indented line a code block only after a blank line: directly under a
/// paragraph line it continues the paragraph, and the command renders as prose.
#[test]
fn indented_commands_are_code_blocks() {
    let mut docs = vec!["README.md".to_owned()];
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") {
            docs.push(format!("docs/{name}"));
        }
    }
    let mut stray = Vec::new();
    for doc in &docs {
        let text = read(doc);
        let lines: Vec<&str> = text.lines().collect();
        let mut fenced = false;
        for (k, line) in lines.iter().enumerate() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            let indented = |l: &str| l.starts_with("    ") && !l.trim().is_empty();
            let prose = |l: &str| {
                let t = l.trim_start();
                // List items and their continuation lines may be indented.
                let numbered = t.split_once(". ").is_some_and(|(n, _)| n.chars().all(|c| c.is_ascii_digit()));
                !l.trim().is_empty()
                    && !l.starts_with(' ')
                    && !t.starts_with(['-', '*', '|', '#'])
                    && !t.starts_with("```")
                    && !numbered
            };
            if !fenced && k > 0 && indented(line) && prose(lines[k - 1]) {
                stray.push(format!("{doc}:{}: {}", k + 1, line.trim()));
            }
        }
    }
    assert!(
        stray.is_empty(),
        "indented lines that render as paragraph text (add a blank line before):\n{}",
        stray.join("\n")
    );
}
