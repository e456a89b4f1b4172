//! The `regen` command line: reads a RegistrationDeclarations.h (and optionally a regen.toml)
//! and writes, or with `--check` compares, everything a backend needs.
//!
//! Exit status: 0 on success, 1 when `--check` finds differences, 2 on bad input or usage.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use regen_core::config::{Config, SkipReason, parse_config};
use regen_core::diagnostic::Diagnostic;
use regen_core::emit::{emit_all, generated_note};
use regen_core::write::{OutputFile, write_outputs};

/// Generate what an out-of-tree PyTorch backend needs from RegistrationDeclarations.h.
#[derive(Parser, Debug)]
#[command(name = "regen", version, args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct Cli {
    #[command(subcommand)]
    subcommand: Option<Sub>,
    /// The header, as found in a torch wheel at torch/include/ATen/RegistrationDeclarations.h.
    #[arg(long, value_name = "PATH", required = true)]
    header: Option<PathBuf>,
    /// The output directory; nothing in it changes unless the whole run succeeds.
    #[arg(long, value_name = "DIR", required = true)]
    out: Option<PathBuf>,
    /// The backend config (regen.toml); without one, every required op is generated as a skeleton.
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Compare DIR with what would be generated; exit 1 with a diff if anything differs. Never writes.
    #[arg(long)]
    check: bool,
    /// The command named in the @generated line (default: this invocation, without absolute paths).
    #[arg(long, value_name = "TEXT", hide = true)]
    command: Option<String>,
}

#[derive(Subcommand, Debug)]
enum Sub {
    /// Compare two releases' headers: what a version bump means for a backend.
    Diff(DiffArgs),
}

#[derive(clap::Args, Debug)]
struct DiffArgs {
    /// The header of the release the backend is built for.
    old: PathBuf,
    /// The header of the release to move to.
    new: PathBuf,
    /// The backend's regen.toml: report which of its own ops break.
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Exit 1 when changes reach this level.
    #[arg(long, value_enum, default_value_t = FailOn::Breaking)]
    fail_on: FailOn,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Text,
    Markdown,
    Json,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum FailOn {
    Breaking,
    Any,
    Never,
}

const EXIT_DIFFERENT: u8 = 1;
const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.subcommand {
        Some(Sub::Diff(args)) => run_diff(args),
        None => run(&cli),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprint!("{message}");
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

fn render_all(diags: &[Diagnostic], path: &str) -> String {
    diags.iter().map(|d| d.render(path)).collect()
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{}: error: cannot read the {what}: {e}\n", path.display()))
}

/// A path as the @generated line shows it: as given when relative, else just its file name,
/// so the output does not depend on where the repository lives.
fn shown(path: &Path) -> String {
    if path.is_relative() {
        path.display().to_string()
    } else {
        path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
    }
}

fn invocation(cli: &Cli, show: impl Fn(&Path) -> String) -> String {
    let mut command = format!("regen --header {} --out {}", show(header_of(cli)), show(out_of(cli)));
    if let Some(c) = &cli.config {
        command.push_str(&format!(" --config {}", show(c)));
    }
    command
}

// clap enforces both when no subcommand is given.
fn header_of(cli: &Cli) -> &Path {
    cli.header.as_deref().expect("--header is required")
}

fn out_of(cli: &Cli) -> &Path {
    cli.out.as_deref().expect("--out is required")
}

/// Reads and loads a header, rendering its errors against its path.
fn load(path: &Path) -> Result<(Vec<u8>, regen_core::Loaded), String> {
    let shown = path.display().to_string();
    let bytes = read(path, "header")?;
    let loaded = regen_core::load_header(&bytes).map_err(|errors| {
        format!("{}regen: {} error(s); nothing was written\n", render_all(&errors, &shown), errors.len())
    })?;
    eprint!("{}", render_all(&loaded.warnings, &shown));
    Ok((bytes, loaded))
}

fn load_config(path: Option<&Path>) -> Result<Config, String> {
    let Some(path) = path else { return Ok(Config::default()) };
    let text = String::from_utf8(read(path, "config")?)
        .map_err(|_| format!("{}: error: the config is not UTF-8\n", path.display()))?;
    parse_config(&text).map_err(|errors| render_all(&errors, &path.display().to_string()))
}

fn run_diff(args: &DiffArgs) -> Result<ExitCode, String> {
    // The two headers parse independently: one per core.
    let (old, new) = std::thread::scope(|scope| {
        let old = scope.spawn(|| load(&args.old));
        let new = load(&args.new);
        (old.join().expect("the parse thread does not panic"), new)
    });
    let ((_, old), (_, new)) = (old?, new?);
    let mut diff = regen_core::diff::diff_models(&old.model, &new.model);
    if let Some(path) = &args.config {
        let config = load_config(Some(path))?;
        // The config was written for the old release: its names must resolve there.
        config.select(&old.model).map_err(|errors| render_all(&errors, &path.display().to_string()))?;
        diff = diff.with_config(&config, &new.model);
    }
    let name = |p: &Path| p.display().to_string();
    let text = match args.format {
        Format::Json => diff.to_json(),
        Format::Markdown => diff.to_report(&name(&args.old), &name(&args.new), true, false),
        Format::Text => {
            use std::io::IsTerminal;
            diff.to_report(&name(&args.old), &name(&args.new), false, std::io::stdout().is_terminal())
        }
    };
    print!("{text}");
    let failed = match args.fail_on {
        FailOn::Never => false,
        FailOn::Any => !diff.is_empty(),
        FailOn::Breaking => diff.breaking_count(&old.model) > 0,
    };
    Ok(if failed { ExitCode::from(EXIT_DIFFERENT) } else { ExitCode::SUCCESS })
}

fn run(cli: &Cli) -> Result<ExitCode, String> {
    let header_path = header_of(cli).display().to_string();
    let (bytes, loaded) = load(header_of(cli))?;
    let config = load_config(cli.config.as_deref())?;
    let model = &loaded.model;
    let selection = config.select(model).map_err(|errors| {
        let path = cli.config.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        render_all(&errors, &path)
    })?;
    report_skips(&selection, &header_path);

    let command = cli.command.clone().unwrap_or_else(|| invocation(cli, shown));
    let note = generated_note(&bytes, &command);
    let files = emit_all(model, &selection, &config, &note);
    if cli.check {
        return Ok(check(out_of(cli), &files, &invocation(cli, |p| p.display().to_string())));
    }
    write_outputs(out_of(cli), &files)
        .map_err(|e| format!("{}: error: cannot write the outputs: {e}\n", out_of(cli).display()))?;
    eprintln!(
        "regen: {} ops ({} required), {} generated, {} registered, {} skipped -> {}",
        model.ops.len(),
        model.required().count(),
        selection.selected.len(),
        selection.selected.iter().filter(|s| s.registered).count(),
        selection.skipped.len(),
        out_of(cli).display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Ops skipped for a type reason are warnings at their header line; excluded ones are counted
/// (selection.json lists every one with its reason).
fn report_skips(selection: &regen_core::config::Selection<'_>, header_path: &str) {
    let mut excluded = 0;
    for (op, reason) in &selection.skipped {
        match reason {
            SkipReason::Unsupported(_) => {
                eprintln!("{header_path}:{}:1: warning: op `{}` skipped: {reason}", op.line, op.key)
            }
            _ => excluded += 1,
        }
    }
    if excluded > 0 {
        eprintln!("regen: {excluded} required op(s) excluded by the config (listed in selection.json)");
    }
}

/// Compares `dir` with `files` without writing; prints a unified diff per stale file.
fn check(dir: &Path, files: &[OutputFile], command: &str) -> ExitCode {
    let mut problems = 0;
    for f in files {
        let path = dir.join(&f.name);
        match std::fs::read(&path) {
            Err(_) => {
                eprintln!("regen: missing: {}", path.display());
                problems += 1;
            }
            Ok(old) if old != f.contents => {
                let (old, new) = (String::from_utf8_lossy(&old), String::from_utf8_lossy(&f.contents));
                let diff = similar::TextDiff::from_lines(old.as_ref(), new.as_ref());
                let a = format!("{} (checked in)", path.display());
                let b = format!("{} (generated)", path.display());
                eprint!("{}", diff.unified_diff().context_radius(3).header(&a, &b));
                problems += 1;
            }
            Ok(_) => {}
        }
    }
    let expected: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
    if let Ok(entries) = std::fs::read_dir(dir) {
        let mut extra: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !expected.contains(&n.as_str()) && !n.starts_with('.'))
            .collect();
        extra.sort();
        for name in extra {
            eprintln!("regen: extra file not generated by regen: {}", dir.join(name).display());
            problems += 1;
        }
    }
    if problems == 0 {
        eprintln!("regen: {} is up to date ({} files)", dir.display(), files.len());
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "regen: {problems} file(s) stale, missing or extra in {}; to regenerate, run:\n  {command}",
            dir.display()
        );
        ExitCode::from(EXIT_DIFFERENT)
    }
}
