//! Generation as a library call: a header and a config on disk in, every output file out
//! (prost-build's `generate()` returns files; writing or checking them is [`crate::write::ensure`]).
//! The `regen` CLI, `cargo xtask`, regen-build and the kernels-check crate all call this, so
//! they cannot drift apart. Errors come back rendered as text: `PATH:LINE:COL: error: ...` for
//! an error in a file's contents (bad bytes, an empty header, a bad line or config key), and
//! `PATH: error: ...` for a file that cannot be read at all, which has no position (as compilers
//! report a missing source file).

use std::path::Path;

use crate::config::{Config, parse_config};
use crate::diagnostic::Diagnostic;
use crate::emit::{emit_all, generated_note};
use crate::select::SkipReason;
use crate::write::OutputFile;

/// What one generation produced.
#[derive(Debug, Clone)]
pub struct Generated {
    /// Every output file, in a fixed order.
    pub files: Vec<OutputFile>,
    /// Rendered warnings: unknown schema types, required ops skipped for a type reason.
    pub warnings: String,
    /// One line: how many ops were read, generated, registered and skipped.
    pub summary: String,
    /// The config the files were generated with.
    pub config: Config,
    /// The config's `optional` ops this header does not have (no trait method, no registration).
    pub absent: Vec<String>,
    /// The op model the files were generated from. (Returned rather than dropped here: a caller
    /// about to exit, like the CLI, may skip freeing it, a twentieth of a whole run.)
    pub model: crate::ir::Model,
}

/// Renders diagnostics against the file they point into.
pub fn render_all(diags: &[Diagnostic], path: &str) -> String {
    diags.iter().map(|d| d.render(path)).collect()
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: error: cannot read the {what}: {e}\n", path.display()))
}

/// Reads and loads a header: its bytes, the model, and the rendered warnings.
pub fn load_header_file(path: &Path) -> Result<(Vec<u8>, crate::Loaded, String), String> {
    let bytes = read(path, "header")?;
    let (loaded, warnings) = load_header_bytes(path, &bytes)?;
    Ok((bytes, loaded, warnings))
}

/// Loads the header read from `path`: the model and the rendered warnings.
fn load_header_bytes(path: &Path, bytes: &[u8]) -> Result<(crate::Loaded, String), String> {
    let shown = path.display().to_string();
    let loaded = crate::load_header(bytes).map_err(|errors| {
        format!("{}regen: {} error(s); nothing was written\n", render_all(&errors, &shown), errors.len())
    })?;
    let warnings = render_all(&loaded.warnings, &shown);
    Ok((loaded, warnings))
}

/// Reads a regen.toml; `None` is the default config (every required op as a skeleton). A
/// `[reference]` kernel library's config is read too and its groups merged in.
pub fn load_config_file(path: Option<&Path>) -> Result<Config, String> {
    let Some(path) = path else { return Ok(Config::default()) };
    let mut config = read_config(path)?;
    if let Some(reference) = &config.reference {
        // Relative to this config's directory. Read as it is (a library has no `[reference]`).
        let library = read_config(&path.parent().unwrap_or(Path::new("")).join(&reference.config.name))?;
        config.add_reference(library).map_err(|errors| render_all(&errors, &path.display().to_string()))?;
    }
    Ok(config)
}

/// Reads and parses one regen.toml.
fn read_config(path: &Path) -> Result<Config, String> {
    let shown = path.display().to_string();
    let bytes = read(path, "config")?;
    // Bad bytes are an error in the file's contents, so it points at them as the header's do.
    let text = crate::parse::decode_header(&bytes).map_err(|d| d.render(&shown))?;
    parse_config(text).map_err(|errors| render_all(&errors, &shown))
}

/// Generates every output for `header` under `config` (a regen.toml, or none). `command` is
/// what the `@generated` line names as the way to regenerate.
pub fn generate(header: &Path, config: Option<&Path>, command: &str) -> Result<Generated, String> {
    generate_with(header, config, command, Emit::Backend)
}

/// Generates a kernel library's one output, `groups.rs` (the traits of its `[implement]` groups,
/// [`crate::emit_rust::emit_groups`]), for `header` under its regen.toml.
pub fn generate_groups(header: &Path, config: &Path, command: &str) -> Result<Generated, String> {
    generate_with(header, Some(config), command, Emit::Library)
}

/// What a generation writes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Emit {
    /// A backend: registrations, ABI, kernels.rs, ops.json, selection.json.
    Backend,
    /// A kernel library: the group traits alone.
    Library,
}

fn generate_with(header: &Path, config: Option<&Path>, command: &str, emit: Emit) -> Result<Generated, String> {
    let header_path = header.display().to_string();
    let bytes = read(header, "header")?;
    // The header is hashed (for the @generated note) while it is parsed.
    let (note, loaded) =
        crate::parallel::join(|| generated_note(&bytes, command), || load_header_bytes(header, &bytes));
    let (loaded, mut warnings) = loaded?;
    // The header's text is not needed past its hash: dropped now, it is not in the peak memory.
    drop(bytes);
    let config_value = load_config_file(config)?;
    let model = &loaded.model;
    let config_path = config.map(|p| p.display().to_string()).unwrap_or_default();
    let selection = config_value.select(model).map_err(|errors| render_all(&errors, &config_path))?;
    config_value.check_served(&selection).map_err(|errors| render_all(&errors, &config_path))?;
    let mut excluded = 0;
    for (op, reason) in &selection.skipped {
        match reason {
            SkipReason::Unsupported(_) => {
                warnings.push_str(&format!("{header_path}:{}:1: warning: op `{}` skipped: {reason}\n", op.line, op.key))
            }
            _ => excluded += 1,
        }
    }
    if !selection.absent.is_empty() {
        warnings.push_str(&format!(
            "{config_path}: warning: {} optional op(s) not in this release or composite there (decomposed by PyTorch), not generated: {}\n",
            selection.absent.len(),
            selection.absent.join(", ")
        ));
    }
    // A listed autocast op this release lacks is reported, so a shorter list is never a surprise.
    for key in &selection.autocast.missing {
        let lists = config_value.autocast.map_or("", |a| a.as_str());
        warnings.push_str(&format!(
            "{config_path}: warning: autocast: `{key}` of {lists}'s autocast lists is not in {header_path}; not registered\n"
        ));
    }
    let files = match emit {
        Emit::Backend => emit_all(model, &selection, &config_value, &note),
        Emit::Library if config_value.reference.is_some() => {
            return Err(format!("{config_path}: error: a kernel library takes no `[reference]`: it is one\n"));
        }
        Emit::Library if config_value.groups.is_empty() => {
            return Err(format!(
                "{config_path}: error: a kernel library's `[implement]` must be a table of kernel groups (its traits)\n"
            ));
        }
        Emit::Library => vec![crate::write::OutputFile {
            name: "groups.rs".into(),
            contents: crate::emit_rust::emit_groups(&selection, &config_value, &note).into_bytes(),
        }],
    };
    let summary = match emit {
        Emit::Backend => format!(
            "{} ops ({} required), {} generated, {} registered, {} skipped ({excluded} excluded by the config; see \
             selection.json)",
            model.ops.len(),
            model.required().count(),
            selection.selected.len(),
            selection.selected.iter().filter(|s| s.registered).count(),
            selection.skipped.len(),
        ),
        Emit::Library => format!(
            "{} ops, {} kernel methods in {} group traits ({} optional op(s) absent)",
            model.ops.len(),
            selection.selected.iter().filter(|s| s.implemented).count(),
            config_value.groups.len(),
            selection.absent.len()
        ),
    };
    let absent = selection.absent.clone();
    drop(selection);
    Ok(Generated { files, warnings, summary, config: config_value, absent, model: loaded.model })
}
