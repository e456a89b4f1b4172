//! The `regen` command line: reads a RegistrationDeclarations.h (and optionally a regen.toml)
//! and writes, or with `--check` compares, everything a backend needs.
//!
//! Exit status: 0 on success, 1 when `--check` finds differences, 2 on bad input or usage; never
//! a panic's 101 (output goes through [`to_stdout`] and [`to_stderr`], which do not panic on a closed pipe).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use regen_core::diff::{self, HeaderId};
use regen_core::generate::{generate, generate_groups, load_config_file, load_header_file};
use regen_core::write::{Mode, ensure};

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
    /// Generate a kernel library's groups.rs only (the traits of its `[implement]` groups, which
    /// backends take through `[reference]`); needs --config.
    #[arg(long, requires = "config")]
    kernel_library: bool,
    /// The command named in the @generated line (default: this invocation, without absolute paths).
    #[arg(long, value_name = "TEXT", hide = true)]
    command: Option<String>,
}

#[derive(Subcommand, Debug)]
enum Sub {
    /// Compare two releases' headers: what a version bump means for a backend.
    Diff(DiffArgs),
    /// Write a new backend crate that builds and loads as it is (then: pip install --no-build-isolation DIR).
    New(NewArgs),
}

#[derive(clap::Args, Debug)]
struct NewArgs {
    /// The device name (`torch.ones(2, device="NAME")`), also its Python package and crate.
    name: String,
    /// Where to write it (default: ./NAME); must not exist or be empty.
    #[arg(long, value_name = "DIR")]
    path: Option<PathBuf>,
    /// The regen checkout whose crates the new Cargo.toml points at (default: the one this
    /// regen was built from).
    #[arg(long, value_name = "DIR")]
    regen_path: Option<PathBuf>,
    /// Start from regen's reference kernels (every group of the checkout's crates/kernels, taken
    /// through regen.toml's `[reference]`) instead of one example kernel, and replace them one op
    /// at a time.
    #[arg(long)]
    reference: bool,
    /// For an accelerator with memory, streams and events of its own: as --reference, plus
    /// src/layer.rs, regen-runtime's device layer with every method written out (host memory's
    /// behaviour until you put your driver's calls there).
    #[arg(long)]
    accelerator: bool,
}

#[derive(clap::Args, Debug)]
struct DiffArgs {
    /// The header of the release the backend is built for.
    old: PathBuf,
    /// The header of the release to move to.
    new: PathBuf,
    /// The backend's regen.toml: its kernels are the ops generation registers with it (default:
    /// every required op, as a skeleton); the report judges each.
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Exit 1 when: `breaking`, a kernel of the backend breaks or generation fails on NEW; `any`,
    /// that or any difference; `never`, never. The report's last line says which and why.
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
        Some(Sub::New(args)) => run_new(args),
        None => run(&cli),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            to_stderr(&message);
            ExitCode::from(EXIT_BAD_INPUT)
        }
    }
}

/// Prints a report to stdout. A reader that stopped reading (`regen diff ... | head`) is not an
/// error: the exit status still tells what was found. Any other failure is.
fn to_stdout(text: &str) -> Result<(), String> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("error: cannot write to stdout: {e}\n")),
        _ => Ok(()),
    }
}

/// Prints diagnostics to stderr; if stderr itself is gone there is nowhere to say so.
fn to_stderr(text: &str) {
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// `path` made absolute (symlinks resolved where it exists, so `..` means what the shell means).
fn absolute(path: &Path) -> PathBuf {
    let path = std::env::current_dir().map_or_else(|_| path.to_owned(), |cwd| cwd.join(path));
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    // An output directory not created yet: resolve its parent.
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => absolute(parent).join(name),
        _ => path,
    }
}

/// `path` relative to the directory `base` (`..` up to their common ancestor), so the
/// @generated line's command runs from the directory of the generated files and does not
/// depend on where the tree lives.
fn relative_to(path: &Path, base: &Path) -> String {
    let (path, base) = (absolute(path), absolute(base));
    let common = path.components().zip(base.components()).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in base.components().skip(common) {
        rel.push("..");
    }
    rel.extend(path.components().skip(common));
    if rel.as_os_str().is_empty() { ".".into() } else { rel.display().to_string() }
}

fn invocation(cli: &Cli, header: &Path, out: &Path, show: impl Fn(&Path) -> String) -> String {
    let mut command = format!("regen --header {} --out {}", show(header), show(out));
    if let Some(c) = &cli.config {
        command.push_str(&format!(" --config {}", show(c)));
    }
    if cli.kernel_library {
        command.push_str(" --kernel-library");
    }
    command
}

/// Loads a header for `regen diff`, printing its warnings; with its identity.
fn load(path: &Path) -> Result<(regen_core::Loaded, HeaderId), String> {
    let (bytes, loaded, warnings) = load_header_file(path)?;
    to_stderr(&warnings);
    Ok((loaded, HeaderId::of(path, &bytes)))
}

fn run_diff(args: &DiffArgs) -> Result<ExitCode, String> {
    // The two headers parse independently: one per core.
    let (old, new) = std::thread::scope(|scope| {
        let old = scope.spawn(|| load(&args.old));
        let new = load(&args.new);
        let old =
            old.join().unwrap_or_else(|_| Err(format!("{}: error: regen failed reading it\n", args.old.display())));
        (old, new)
    });
    let ((old, old_id), (new, new_id)) = (old?, new?);
    // Without --config, the backend is the default config's: every required op, as a skeleton.
    let config = load_config_file(args.config.as_deref())?;
    let mut diff = diff::diff_with_config(&old.model, &new.model, &config).with_headers(old_id, new_id);
    diff.backend.config = args.config.as_ref().map(|p| p.display().to_string());
    let fail_on = match args.fail_on {
        FailOn::Breaking => diff::FailOn::Breaking,
        FailOn::Any => diff::FailOn::Any,
        FailOn::Never => diff::FailOn::Never,
    };
    let (format, color) = match args.format {
        Format::Json => (diff::Format::Json, diff::Color::Plain),
        Format::Markdown => (diff::Format::Markdown, diff::Color::Plain),
        Format::Text => {
            use std::io::IsTerminal;
            let color = if std::io::stdout().is_terminal() { diff::Color::Ansi } else { diff::Color::Plain };
            (diff::Format::Text, color)
        }
    };
    to_stdout(&diff.render(format, color, fail_on))?;
    let verdict = diff.verdict(fail_on);
    // Text and Markdown end with the verdict's line; JSON carries it as a field, so a CI log
    // still says why.
    if format == diff::Format::Json {
        to_stderr(&format!("regen diff: {}\n", verdict.reason));
    }
    Ok(ExitCode::from(verdict.exit))
}

/// An output directory that cannot be used, as an error line. A file standing where the
/// directory should be is said in words (`README.md: error: README.md is not a directory`)
/// rather than as the OS's "File exists".
fn output_error(dir: &Path, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotADirectory => format!("{}: error: {e}\n", dir.display()),
        _ => format!("{}: error: cannot write the outputs: {e}\n", dir.display()),
    }
}

/// The checkout this binary was built from (crates/regen is two levels below its root).
fn own_checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run_new(args: &NewArgs) -> Result<ExitCode, String> {
    let dir = args.path.clone().unwrap_or_else(|| PathBuf::from(&args.name));
    let regen_root = args.regen_path.clone().unwrap_or_else(own_checkout);
    let regen_root =
        regen_root.canonicalize().ok().filter(|r| r.join("crates/runtime/Cargo.toml").is_file()).ok_or_else(|| {
            format!(
                "{}: error: not a regen checkout (no crates/runtime/Cargo.toml); pass --regen-path DIR\n",
                regen_root.display()
            )
        })?;
    if std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(format!("{}: error: the directory exists and is not empty\n", dir.display()));
    }
    let root_text = regen_root.to_str().ok_or_else(|| "error: the regen checkout's path is not UTF-8\n".to_string())?;
    let reference = match args.reference || args.accelerator {
        // The ops the reference kernels serve, so the new regen.toml excludes none of them.
        true => Some(
            load_config_file(Some(&regen_root.join("crates/kernels/regen.toml")))?
                .groups
                .into_iter()
                .flat_map(|g| g.ops)
                .collect::<Vec<String>>(),
        ),
        false => None,
    };
    let files = match reference.as_deref() {
        Some(ops) if args.accelerator => regen_core::scaffold::new_accelerator(&args.name, root_text, ops),
        reference => regen_core::scaffold::new_backend(&args.name, root_text, reference),
    }
    .map_err(|e| format!("error: {e}\n"))?;
    ensure(&dir, &files, Mode::Write).map_err(|e| output_error(&dir, &e))?;
    // pip takes a bare name for a project on PyPI, not a directory.
    let shown = if dir.is_relative() && dir.components().count() == 1 {
        format!("./{}", dir.display())
    } else {
        dir.display().to_string()
    };
    to_stdout(&format!(
        "Created the backend crate {shown} (device \"{name}\"). In a Python environment that has torch:\n\n  \
         python -m pip install \"setuptools>=70.1\" setuptools-rust && python -m pip install --no-build-isolation {shown}\n  \
         python -c \"import torch, {name}; x = torch.ones(3, device='{name}'); print((x + x).cpu())\"\n",
        name = args.name
    ))?;
    Ok(ExitCode::SUCCESS)
}

fn run(cli: &Cli) -> Result<ExitCode, String> {
    // clap requires both when no subcommand is given.
    let (Some(header), Some(out)) = (cli.header.as_deref(), cli.out.as_deref()) else {
        return Err("error: --header and --out are required (see regen --help)\n".into());
    };
    // The note's command names every path from the output directory, where the generated files
    // are, and says so: a path as given only works from wherever regen happened to run.
    let command = cli
        .command
        .clone()
        .unwrap_or_else(|| invocation(cli, header, out, |p| relative_to(p, out)) + " (run in this file's directory)");
    let generated = match cli.config.as_deref().filter(|_| cli.kernel_library) {
        Some(config) => generate_groups(header, config, &command)?,
        None => generate(header, cli.config.as_deref(), &command)?,
    };
    to_stderr(&generated.warnings);
    let mode = if cli.check { Mode::Check } else { Mode::Write };
    let ensured = ensure(out, &generated.files, mode).map_err(|e| output_error(out, &e))?;
    if cli.check {
        to_stderr(&ensured.report);
        if ensured.is_fresh() {
            to_stderr(&format!("regen: {} is up to date ({} files)\n", out.display(), generated.files.len()));
            return Ok(ExitCode::SUCCESS);
        }
        to_stderr(&format!(
            "regen: {} file(s) stale, missing or extra in {}; to regenerate, run:\n  {}\n",
            ensured.problem_count(),
            out.display(),
            invocation(cli, header, out, |p| p.display().to_string())
        ));
        return Ok(ExitCode::from(EXIT_DIFFERENT));
    }
    to_stderr(&format!(
        "regen: {}; {} file(s) written, {} unchanged -> {}\n",
        generated.summary,
        ensured.changed.len() + ensured.missing.len(),
        generated.files.len() - ensured.changed.len() - ensured.missing.len(),
        out.display()
    ));
    // The process ends here: freeing the model and the files one allocation at a time would be
    // about a twentieth of the run, for memory the OS takes back at exit anyway.
    std::mem::forget(generated);
    Ok(ExitCode::SUCCESS)
}
