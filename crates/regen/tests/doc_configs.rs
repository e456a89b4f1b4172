//! Every ```toml block of README.md and docs/ is a regen.toml that works as written (issue 13:
//! the README's example failed on `my_op`): `regen` generates with it from the real header of the
//! pinned release (crates/kernels/torch-version), so each parses and every op it names is
//! selected. (`/path/to/regen` is this checkout; a block headed `# Cargo.toml` is a manifest, and
//! skipped.)

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The ```toml blocks of a Markdown file, each with the line its text starts on.
fn toml_blocks(markdown: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (k, line) in markdown.lines().enumerate() {
        match open.take() {
            None if line.trim_start().starts_with("```toml") => open = Some((k + 2, String::new())),
            None => {}
            Some(block) if line.trim_start().starts_with("```") => blocks.push(block),
            Some((start, mut text)) => {
                text.push_str(line);
                text.push('\n');
                open = Some((start, text));
            }
        }
    }
    assert!(open.is_none(), "a ```toml block is not closed");
    blocks
}

#[test]
fn every_toml_example_in_the_docs_generates_from_the_real_header() {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let header = root().join(format!("fixtures/torch-{}/RegistrationDeclarations.h", common::pinned()));
    let dir = tempfile::tempdir().unwrap();
    let mut checked = Vec::new();
    for file in &files {
        let name = file.strip_prefix(root()).unwrap().display().to_string();
        for (line, text) in toml_blocks(&std::fs::read_to_string(file).unwrap()) {
            // A block headed `# Cargo.toml` is a crate's manifest, not a regen.toml.
            if text.starts_with("# Cargo.toml") {
                continue;
            }
            // `/path/to/regen` stands for the reader's checkout (the guide's `[reference]`).
            let text = text.replace("/path/to/regen", &root().canonicalize().unwrap().display().to_string());
            let config = dir.path().join("regen.toml");
            std::fs::write(&config, &text).unwrap();
            let output = Command::new(env!("CARGO_BIN_EXE_regen"))
                .args(["--header".as_ref(), header.as_os_str(), "--config".as_ref(), config.as_os_str()])
                .args(["--out".as_ref(), dir.path().join("out").as_os_str()])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(
                output.status.success() && !stderr.contains("warning:"),
                "the ```toml block at {name}:{line} does not work as written:\n{text}\n{stderr}"
            );
            checked.push(format!("{name}:{line}"));
        }
    }
    // The README's full example, the guide's custom ops and ARCHITECTURE's added op at least.
    assert!(checked.iter().any(|c| c.starts_with("README.md:")), "{checked:?}");
    assert!(checked.len() >= 3, "{checked:?}");
}

#[test]
fn blocks_are_found_with_their_first_line() {
    let markdown = "text\n```toml\na = 1\nb = 2\n```\n```rust\nfn f() {}\n```\n  ```toml\nc = 3\n  ```\n";
    assert_eq!(toml_blocks(markdown), [(3, "a = 1\nb = 2\n".to_owned()), (10, "c = 3\n".to_owned())]);
}
