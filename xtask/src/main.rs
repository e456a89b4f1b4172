//! Project chores: `cargo xtask fixture --torch X.Y.Z`, `cargo xtask fuzz`, `cargo xtask releases`, `cargo xtask ci`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use regen_core::write::{Mode, ensure};

const USAGE: &str = "usage: cargo xtask <command>
  fixture --torch X.Y.Z       fetch that release's RegistrationDeclarations.h into fixtures/torch-X.Y.Z/
  compile-cpp --torch X.Y.Z   generate the full required set for that fixture and compile the C++
                              against the release's own torch headers (repeat --torch for several)
  e2e [--torch X.Y.Z]         in .venv (the pinned torch of crates/kernels/torch-version) or .venv-X.Y.Z:
                              build and load the full skeleton (every required op registered), then
                              `regen new` a backend, pip-install it and run its smoke test, then
                              pip-install the reference device and run its tests (and, on the pinned
                              release, torch_openreg's suite: crates/device/python/openreg_tests)
  bump --torch X.Y.Z          fetch that release's header, report `regen diff` against the pinned release
                              (crates/kernels/torch-version) for the device's regen.toml, move the pin
                              and regenerate the device's checked-in code
  regen [--check]             regenerate (or check) the checked-in code of crates/kernels and crates/device
  fuzz [--execs N] [--seed S] [--threads T] [--findings DIR] [--replay I]
                              a long fuzz run of the header pipeline (regen-fuzz, release build):
                              executions, executions/s and findings, each written to DIR
                              (default target/fuzz-findings); --replay re-runs one execution
  footprint [--runs N]        whole-process speed and peak RSS of `regen --header <pinned> --out DIR`
                              against torchgen's gen_backend_stubs for the same required ops, runs
                              alternating (default 15), in .venv (pyyaml added for torchgen)
  capabilities [--only NAME]  the reference device's whole suite (installed in .venv by e2e) once per
                              lowered CPU capability: ATen's, MKL's or oneDNN's kernels forced to
                              AVX2 or ATen's to scalar, the device's own vector code to AVX2 or
                              scalar (REGEN_CPU_CAPABILITY); one line per run, then the failures
  opinfo                      the reference device (installed in .venv by e2e) against every OpInfo of
                              PyTorch's op_db in every dtype (crates/device/python/opinfo/sweep.py):
                              counts per status, then fails on any difference from
                              tests/opinfo_known_failures.txt either way, or an op regen.toml
                              implements served by the CPU fallback; results in target/opinfo (in ci)
  releases [--torch X.Y.Z ...] [--device]
                              for each release (default: the latest patch of every minor release
                              from 2.1 to the pinned one), one at a time: a fresh .venv-X.Y.Z
                              (removed after; the pinned .venv is kept), the full skeleton and a
                              `regen new` backend as in e2e (--device: the reference device and its
                              tests too); prints a markdown table and merges its rows into
                              docs/releases.md. Not in ci
  bench [--quick] [--only NAME,...]
                              build the device (dev-build into target/bench/pkg) and run its
                              benchmarks (crates/device/python/bench: elementwise, conv, norm, pool,
                              reduce, index, matmul, models) against PyTorch's CPU kernels at 1 thread
                              and at every core; per case the ratio device/CPU and the speed-up from 1
                              to N threads of each side, cases where the device scales less than CPU
                              listed; outputs in target/bench. Not in ci (timings belong to benchmarks)
  ci                          everything CI checks: fmt, the device's generated code fresh, clippy, doc,
                              the C++ compile check of the oldest fixture and the pinned one, all
                              tests, then e2e, then opinfo; the last line names the steps passed or
                              the one that failed";

/// What CI compiles: the full skeleton of the oldest fixture and of the pinned release
/// (crates/kernels/torch-version), and the pinned release with a config (implemented ops,
/// autograd registrations, the CPU fallback).
fn ci_compile() -> Result<Vec<(String, Option<&'static str>)>, String> {
    let pinned = pinned()?;
    Ok(vec![("1.13.1".into(), None), (pinned.clone(), None), (pinned, Some("crates/kernels-check/regen.toml"))])
}

/// One command line of xtask, parsed.
#[derive(Debug, PartialEq, Eq)]
enum Task {
    Help,
    Fixture(String),
    CompileCpp(Vec<String>),
    /// `None`: the pinned release.
    E2e(Option<String>),
    Bump(String),
    Regen {
        check: bool,
    },
    Fuzz(Vec<String>),
    Footprint {
        runs: usize,
    },
    /// `None`: every lowered capability; else the one named.
    Capabilities(Option<String>),
    Opinfo,
    /// The releases to measure (every one of [`RELEASES`] when none is named), and whether the
    /// reference device is built and tested too.
    Releases {
        torch: Vec<String>,
        device: bool,
    },
    /// Benchmarks: fewer repeats, and the scripts named (all of [`BENCHES`] when empty).
    Bench {
        quick: bool,
        only: Vec<String>,
    },
    Ci,
}

/// Parses xtask's arguments. The error says what was wrong (the usage follows it), so a typo is
/// not met with the usage alone.
fn parse_args(args: &[&str]) -> Result<Task, String> {
    let torch = |command: &str, rest: &[&str]| match rest {
        ["--torch", version] => check_version(version).map(|()| (*version).to_owned()),
        _ => Err(format!("{command} needs --torch X.Y.Z")),
    };
    match args {
        [] => Err("no command given".into()),
        ["help" | "--help" | "-h"] => Ok(Task::Help),
        ["fixture", rest @ ..] => torch("fixture", rest).map(Task::Fixture),
        ["bump", rest @ ..] => torch("bump", rest).map(Task::Bump),
        ["e2e"] => Ok(Task::E2e(None)),
        ["e2e", rest @ ..] => torch("e2e", rest).map(|v| Task::E2e(Some(v))),
        ["regen"] => Ok(Task::Regen { check: false }),
        ["regen", "--check"] => Ok(Task::Regen { check: true }),
        ["regen", ..] => Err("regen takes only --check".into()),
        ["footprint"] => Ok(Task::Footprint { runs: 15 }),
        ["footprint", "--runs", n] => match n.parse() {
            Ok(runs) if runs > 0 => Ok(Task::Footprint { runs }),
            _ => Err(format!("footprint: --runs needs a positive count, got {n:?}")),
        },
        ["footprint", ..] => Err("footprint takes only --runs N".into()),
        ["capabilities"] => Ok(Task::Capabilities(None)),
        ["capabilities", "--only", name] => match LOWERED.iter().find(|l| l.name == *name) {
            Some(l) => Ok(Task::Capabilities(Some(l.name.to_owned()))),
            None => Err(format!(
                "capabilities: unknown capability {name:?} (one of {})",
                LOWERED.iter().map(|l| l.name).collect::<Vec<_>>().join(", ")
            )),
        },
        ["capabilities", ..] => Err("capabilities takes only --only NAME".into()),
        ["opinfo"] => Ok(Task::Opinfo),
        ["opinfo", ..] => Err("opinfo takes no arguments".into()),
        ["releases", rest @ ..] => {
            let mut torch = Vec::new();
            let mut device = false;
            let mut rest = rest.iter();
            while let Some(arg) = rest.next() {
                match *arg {
                    "--device" => device = true,
                    "--torch" => {
                        let version = rest.next().ok_or("releases: --torch needs X.Y.Z")?;
                        check_version(version)?;
                        torch.push((*version).to_owned());
                    }
                    other => return Err(format!("releases: unknown option {other:?}")),
                }
            }
            if torch.is_empty() {
                torch = RELEASES.iter().map(|v| (*v).to_owned()).collect();
            }
            Ok(Task::Releases { torch, device })
        }
        ["bench", rest @ ..] => {
            let (mut quick, mut only) = (false, Vec::new());
            let mut it = rest.iter();
            while let Some(&arg) = it.next() {
                match arg {
                    "--quick" => quick = true,
                    "--only" => match it.next() {
                        Some(names) => {
                            for name in names.split(',') {
                                if !BENCHES.contains(&name) {
                                    return Err(format!("bench: no benchmark {name:?}; one of {}", BENCHES.join(", ")));
                                }
                                only.push(name.to_owned());
                            }
                        }
                        None => return Err("bench: --only needs NAME[,NAME...]".into()),
                    },
                    other => return Err(format!("bench: unknown option {other:?}")),
                }
            }
            Ok(Task::Bench { quick, only })
        }
        ["ci"] => Ok(Task::Ci),
        ["ci", ..] => Err("ci takes no arguments".into()),
        ["compile-cpp", rest @ ..] => {
            if rest.is_empty() || !rest.len().is_multiple_of(2) || rest.chunks(2).any(|pair| pair[0] != "--torch") {
                return Err("compile-cpp needs --torch X.Y.Z (one or more)".into());
            }
            rest.chunks(2)
                .map(|pair| check_version(pair[1]).map(|()| pair[1].to_owned()))
                .collect::<Result<_, _>>()
                .map(Task::CompileCpp)
        }
        ["fuzz", rest @ ..] => {
            const FLAGS: &[&str] = &["--execs", "--seed", "--threads", "--findings", "--replay"];
            for pair in rest.chunks(2) {
                if !FLAGS.contains(&pair[0]) {
                    return Err(format!("fuzz: unknown option {:?}", pair[0]));
                }
                if pair.len() == 1 {
                    return Err(format!("fuzz: {} needs a value", pair[0]));
                }
            }
            Ok(Task::Fuzz(rest.iter().map(|a| (*a).to_owned()).collect()))
        }
        [other, ..] => Err(format!("unknown command {other:?}")),
    }
}

/// A usage error exits 2, as `regen`'s do; a failed task 1.
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task = match parse_args(&args.iter().map(String::as_str).collect::<Vec<_>>()) {
        Ok(task) => task,
        Err(e) => {
            eprintln!("xtask: {e}\n\n{USAGE}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let result = match task {
        Task::Help => {
            println!("{USAGE}");
            Ok(())
        }
        Task::Fixture(version) => fixture(&version),
        Task::Ci => ci(),
        Task::Bench { quick, only } => bench(quick, &only),
        Task::E2e(None) => pinned().and_then(|v| e2e(&v)),
        Task::E2e(Some(version)) => e2e(&version),
        Task::Bump(version) => bump(&version),
        Task::Fuzz(args) => fuzz(&args),
        Task::Footprint { runs } => footprint(runs),
        Task::Capabilities(only) => capabilities(only.as_deref()),
        Task::Opinfo => opinfo(),
        Task::Releases { torch, device } => releases(&torch, device),
        Task::Regen { check } => regen(check),
        Task::CompileCpp(releases) => releases.iter().try_for_each(|v| compile_cpp(v, None)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives one level below the root").to_owned()
}

/// While `cargo xtask releases` measures a release, the log its commands' output goes to (so the
/// first error line can be found in it); `None` otherwise, when it goes to the terminal.
static LOG: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

fn run(cmd: &mut Command) -> Result<(), String> {
    eprintln!("xtask: running {cmd:?}");
    let log = LOG.lock().map_err(|e| e.to_string())?.clone();
    if let Some(log) = log {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let err = file.try_clone().map_err(|e| e.to_string())?;
        cmd.stdout(file).stderr(err);
    }
    let status = cmd.status().map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("{cmd:?} failed with {status}")) }
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

/// The torch release the reference kernels and device are generated for and tested against (one
/// line, X.Y.Z).
const PIN_FILE: &str = "crates/kernels/torch-version";
const DEVICE_CONFIG: &str = "crates/device/regen.toml";
const DEVICE_GENERATED: &str = "crates/device/generated";
const KERNELS_CONFIG: &str = "crates/kernels/regen.toml";
const KERNELS_GENERATED: &str = "crates/kernels/generated";

fn pinned() -> Result<String, String> {
    let text = std::fs::read_to_string(root().join(PIN_FILE)).map_err(|e| format!("{PIN_FILE}: {e}"))?;
    let version = text.trim().to_owned();
    check_version(&version)?;
    Ok(version)
}

fn fixture_header(version: &str) -> String {
    format!("fixtures/torch-{version}/RegistrationDeclarations.h")
}

/// Moves the runtime to another torch release: fetch, review the diff, regenerate.
fn bump(version: &str) -> Result<(), String> {
    let old = pinned()?;
    if !root().join(fixture_header(version)).is_file() {
        fixture(version)?;
    }
    eprintln!("xtask: what moving from torch {old} to {version} means for crates/device/regen.toml:");
    run(cargo().args(["run", "--quiet", "-p", "regen", "--", "diff"]).args([
        &fixture_header(&old),
        &fixture_header(version),
        "--config",
        DEVICE_CONFIG,
        "--fail-on",
        "never",
    ]))?;
    std::fs::write(root().join(PIN_FILE), format!("{version}\n")).map_err(|e| e.to_string())?;
    regen(false)?;
    eprintln!(
        "xtask: pinned torch {version}; review `git diff crates/kernels/generated crates/device/generated`, then run `cargo xtask ci` (e2e installs torch=={version})"
    );
    Ok(())
}

/// A long fuzz run: regen-fuzz built with optimizations, its own flags (checked by
/// [`parse_args`]) passed through. Its exit status (1 with findings) is this command's.
fn fuzz(args: &[String]) -> Result<(), String> {
    run(cargo().args(["run", "--quiet", "--release", "-p", "regen-fuzz", "--"]).args(args))
}

/// `crates/core/benches/footprint.py` with a release build of regen, the pinned release's header
/// and `.venv`'s Python (torchgen comes with torch; its gen_backend_stubs needs pyyaml).
fn footprint(runs: usize) -> Result<(), String> {
    let root = root();
    run(cargo().args(["build", "--quiet", "--release", "-p", "regen"]))?;
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let release = pinned()?;
    let python = venv(&release)?;
    let has_yaml = Command::new(&python).args(["-c", "import yaml"]).output().is_ok_and(|o| o.status.success());
    if !has_yaml {
        run(Command::new(&python).args(["-m", "pip", "install", "--quiet", "pyyaml"]))?;
    }
    run(Command::new(&python)
        .arg(root.join("crates/core/benches/footprint.py"))
        .arg(root.join(&target).join("release/regen"))
        .arg(root.join(fixture_header(&release)))
        .arg(&python)
        .arg(runs.to_string()))
}

/// The checked-in generated code: the reference kernels' group traits (crates/kernels/regen.toml)
/// and the device's registrations and entry points (crates/device/regen.toml), for the pinned
/// release's header, written (or checked) in process by the same library calls the CLI and
/// regen-build make.
fn regen(check: bool) -> Result<(), String> {
    let root = root();
    let header = root.join(fixture_header(&pinned()?));
    let mode = if check { Mode::Check } else { Mode::Write };
    let kernels = regen_core::generate::generate_groups(&header, &root.join(KERNELS_CONFIG), "cargo xtask regen")?;
    let device = regen_core::generate::generate(&header, Some(&root.join(DEVICE_CONFIG)), "cargo xtask regen")?;
    eprint!("{}", device.warnings);
    for (dir_name, generated) in [(KERNELS_GENERATED, &kernels), (DEVICE_GENERATED, &device)] {
        let dir = root.join(dir_name);
        let ensured = ensure(&dir, &generated.files, mode).map_err(|e| format!("{}: {e}", dir.display()))?;
        if check && !ensured.is_fresh() {
            eprint!("{}", ensured.report);
            return Err(format!("{dir_name} is stale ({} file(s)); run `cargo xtask regen`", ensured.problem_count()));
        }
        let verb = if check { "is fresh" } else { "written" };
        eprintln!("xtask: {dir_name} {verb}: {}", generated.summary);
    }
    // The devices' Python packages and pyproject.toml are `regen new`'s, rendered for them.
    for (device, package, dir_name) in [("regen", "regen_device", "crates/device"), ("sim", "regen_sim", "crates/sim")]
    {
        let mut files = regen_core::scaffold::python_package(device, package);
        files.push(regen_core::scaffold::pyproject(device, package, &["torch"]));
        let dir = root.join(dir_name);
        let ensured = ensure(&dir, &files, mode).map_err(|e| format!("{}: {e}", dir.display()))?;
        if check && !ensured.is_fresh() {
            eprint!("{}", ensured.report);
            return Err(format!(
                "{dir_name}'s Python package differs from `regen new`'s templates; run `cargo xtask regen`"
            ));
        }
    }
    Ok(())
}

/// Everything CI checks, in order, stopping at the first failure; the run closes on one line
/// naming the steps that passed, or the one that failed.
fn ci() -> Result<(), String> {
    let compiled = ci_compile()?;
    let compile = format!("compile-cpp ({})", compiled.len());
    let steps: Vec<Step<'_>> = vec![
        ("fmt", Box::new(|| run(cargo().args(["fmt", "--all", "--check"])))),
        ("regen --check", Box::new(|| regen(true))),
        ("clippy", Box::new(|| run(cargo().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"])))),
        // Every doc link resolves: the kernel groups' traits and their implementations are read there.
        ("doc", Box::new(|| run(cargo().env("RUSTDOCFLAGS", "-D warnings").args(["doc", "--workspace", "--no-deps"])))),
        (&compile, Box::new(move || compiled.iter().try_for_each(|(release, config)| compile_cpp(release, *config)))),
        ("cargo tests", Box::new(cargo_tests)),
        // Last: the end-to-end tests are the slowest.
        ("e2e (skeleton, regen new, device tests)", Box::new(|| pinned().and_then(|v| e2e(&v)))),
        // The device e2e installed, against all of op_db (3-6 minutes on 2 cores).
        ("opinfo (full sweep, strict)", Box::new(opinfo)),
    ];
    eprintln!("{}", run_steps("ci", steps)?);
    Ok(())
}

/// A named step of a run of steps.
type Step<'a> = (&'a str, Box<dyn FnOnce() -> Result<(), String> + 'a>);

/// Runs `steps` in order until one fails. Ok: the closing line naming every step; Err: the
/// step's error, then a closing line naming the step that failed and those that passed.
fn run_steps(what: &str, steps: Vec<Step<'_>>) -> Result<String, String> {
    let mut passed: Vec<&str> = Vec::new();
    for (name, step) in steps {
        if let Err(e) = step() {
            let before = if passed.is_empty() { String::new() } else { format!(" (passed: {})", passed.join(", ")) };
            return Err(format!("{e}\nxtask: {what} failed at {name}{before}"));
        }
        passed.push(name);
    }
    Ok(format!("xtask: {what} passed: {}", passed.join(", ")))
}

fn cargo_tests() -> Result<(), String> {
    // nextest closes with one summary line for the whole workspace (cargo test closes on the
    // last binary's count, often an empty doc-test run); the machine image ships it.
    let has_nextest = cargo().args(["nextest", "--version"]).output().is_ok_and(|o| o.status.success());
    if has_nextest {
        run(cargo().args(["nextest", "run", "--workspace", "--no-fail-fast"]))
    } else {
        run(cargo().args(["test", "--workspace", "--no-fail-fast"]))
    }
}

/// The end-to-end checks in real torch `version`: the full skeleton loads with a PrivateUse1
/// kernel for every registered op; a `regen new` backend installs with pip and passes its smoke
/// test; the reference device passes its tests (last, so a run closes on pytest's summary).
fn e2e(version: &str) -> Result<(), String> {
    let root = root();
    let python = venv(version)?;
    let work = root.join("target").join("e2e").join(version);
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    skeleton_loads(&python, &work)?;
    new_backend_works(&python, &work)?;
    // The reference device too: for another release than the pinned one, its build generates
    // from that torch's header (crates/device/build.rs), in its own target directory.
    let target = (version != pinned()?).then(|| work.join("device-target"));
    pip_install(&python, &root.join("crates/device"), target.as_deref())?;
    // The suite with every CPU vector width lowered at once (about 80 s), so CI proves on its own
    // machine that no test leans on this CPU's summation orders (one capability at a time:
    // `cargo xtask capabilities`); then as the machine is, last, so a run closes on its summary.
    run(&mut device_suite(&python, CI_LOWERED.env))?;
    // PyTorch's own reference PrivateUse1 suite (torch_openreg's tests, adapted only in the device
    // name), strict both ways against its known failures; written for the newest torch, so on
    // the pinned release only (about 80 s).
    if version == pinned()? {
        run(&mut pytest(&python, &root.join("crates/device/python/openreg_tests")))?;
        // sim, the simulated accelerator (device memory the host cannot touch, streams on worker
        // threads): its own tests and torch_openreg's suite again, renamed for it (pinned release).
        pip_install(&python, &root.join("crates/sim"), None)?;
        run(&mut pytest(&python, &root.join("crates/sim/python/tests")))?;
        let suite = openreg_suite_for("sim", "regen_sim", &work.join("openreg-sim"))?;
        run(&mut pytest(&python, &suite))?;
    }
    run(&mut device_suite(&python, &[]))?;
    Ok(())
}

/// torch_openreg's suite as crates/device/python/openreg_tests has it for the "regen" device (and
/// its known failures, less those marked `:reference`, the reference device's own), with the
/// device renamed to `device` and the package to `package`, written into `dest` (the upstream
/// files were adapted the same way, "openreg" to "regen").
fn openreg_suite_for(device: &str, package: &str, dest: &Path) -> Result<PathBuf, String> {
    let source = root().join("crates/device/python/openreg_tests");
    std::fs::create_dir_all(dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    let entries = std::fs::read_dir(&source).map_err(|e| format!("{}: {e}", source.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        if !(name.ends_with(".py") || name == "known_failures.txt") {
            continue;
        }
        let mut text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if name == "known_failures.txt" {
            text = text.lines().filter(|l| !l.contains(" xfail:reference ")).map(|l| format!("{l}\n")).collect();
        }
        let renamed = text.replace("regen_device", "\u{0}").replace("regen", device).replace('\u{0}', package);
        std::fs::write(dest.join(&name), renamed).map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(dest.to_path_buf())
}

/// A run of the device's pytest suite (crates/device/python/tests) with `env` set.
fn device_suite(python: &Path, env: &[(&str, &str)]) -> Command {
    let mut cmd = pytest(python, &root().join("crates/device/python/tests"));
    cmd.envs(env.iter().copied());
    cmd
}

/// `python -m pytest -q` in `dir`, without pytest's cache (the checkout stays clean).
fn pytest(python: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new(python);
    cmd.current_dir(dir).args(["-m", "pytest", "-q", "-p", "no:cacheprovider"]);
    cmd
}

/// A CPU capability lowered for a run of the device suite: ATen reads ATEN_CPU_CAPABILITY, MKL
/// MKL_ENABLE_INSTRUCTIONS and oneDNN ONEDNN_MAX_CPU_ISA when they load, the device
/// REGEN_CPU_CAPABILITY at its first kernel; each changes the vector width, and so the summation
/// order, of one party.
struct Lowered {
    name: &'static str,
    env: &'static [(&'static str, &'static str)],
}

/// Every lowering `cargo xtask capabilities` runs the suite under.
const LOWERED: &[Lowered] = &[
    Lowered { name: "aten-avx2", env: &[("ATEN_CPU_CAPABILITY", "avx2")] },
    Lowered { name: "aten-default", env: &[("ATEN_CPU_CAPABILITY", "default")] },
    Lowered { name: "mkl-avx2", env: &[("MKL_ENABLE_INSTRUCTIONS", "AVX2")] },
    Lowered { name: "onednn-avx2", env: &[("ONEDNN_MAX_CPU_ISA", "AVX2")] },
    Lowered { name: "regen-avx2", env: &[("REGEN_CPU_CAPABILITY", "avx2")] },
    Lowered { name: "regen-default", env: &[("REGEN_CPU_CAPABILITY", "default")] },
];

/// What CI's e2e lowers for one run of the suite: all at once, ATen, MKL and oneDNN to AVX2 and
/// the device to scalar, so CPU and device differ from this machine's widths and from each other's.
const CI_LOWERED: Lowered = Lowered {
    name: "ci",
    env: &[
        ("ATEN_CPU_CAPABILITY", "avx2"),
        ("MKL_ENABLE_INSTRUCTIONS", "AVX2"),
        ("ONEDNN_MAX_CPU_ISA", "AVX2"),
        ("REGEN_CPU_CAPABILITY", "default"),
    ],
};

/// The device's whole suite once per lowered capability ([`LOWERED`], or the one named), with
/// the device as `cargo xtask e2e` installed it in `.venv`; every run is reported, then the
/// command fails if any did.
fn capabilities(only: Option<&str>) -> Result<(), String> {
    let python = root().join(".venv").join("bin").join("python");
    let mut lines = Vec::new();
    for lowered in LOWERED.iter().filter(|l| only.is_none_or(|name| l.name == name)) {
        let start = std::time::Instant::now();
        let out = device_suite(&python, lowered.env).output().map_err(|e| e.to_string())?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let summary = stdout.lines().rev().find(|l| l.contains(" passed") || l.contains(" failed"));
        let failures: Vec<&str> =
            stdout.lines().filter(|l| l.starts_with("FAILED ") || l.starts_with("ERROR ")).collect();
        let env: Vec<String> = lowered.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let passed = out.status.success() && summary.is_some();
        lines.push((
            passed,
            format!(
                "{} ({}): {} in {:.0} s{}",
                lowered.name,
                env.join(" "),
                summary.unwrap_or("no pytest summary").trim_matches('=').trim(),
                start.elapsed().as_secs_f64(),
                failures.iter().map(|f| format!("\n    {f}")).collect::<String>()
            ),
        ));
        eprintln!("xtask: {}", lines.last().expect("just pushed").1);
    }
    let report: Vec<&str> = lines.iter().map(|(_, line)| line.as_str()).collect();
    eprintln!("xtask: capabilities:\n  {}", report.join("\n  "));
    match lines.iter().filter(|(passed, _)| !passed).count() {
        0 => Ok(()),
        n => Err(format!("{n} of {} capability runs failed", lines.len())),
    }
}

/// The device's benchmark scripts (crates/device/python/bench/bench_NAME.py) `cargo xtask bench`
/// runs, in order. bench_device.py (the first survey) and the random, resample and shape ones
/// stay for running by hand.
const BENCHES: &[&str] = &["elementwise", "conv", "norm", "pool", "reduce", "index", "matmul", "models"];

/// Builds the device into target/bench/pkg and runs each benchmark at 1 thread and at every
/// core (bench_models.py does both itself), from target/bench so `import regen_device` finds the
/// fresh build; each output is kept in target/bench/NAME-tN.txt, then joined per case.
fn bench(quick: bool, only: &[String]) -> Result<(), String> {
    let root = root();
    let python = root.join(".venv").join("bin").join("python");
    if !python.is_file() {
        return Err(format!("{} not found: run `cargo xtask e2e` first (it makes the venv)", python.display()));
    }
    let work = root.join("target").join("bench");
    let pkg = work.join("pkg");
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    run(Command::new(root.join("crates/device/python/dev-build")).arg(&pkg).env("PYTHON", &python))?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("{}", machine(cores));
    let mut slower = Vec::new();
    for &name in BENCHES.iter().filter(|&&b| only.is_empty() || only.iter().any(|o| o == b)) {
        let script = root.join(format!("crates/device/python/bench/bench_{name}.py"));
        let thread_counts: Vec<usize> = if name == "models" { vec![cores] } else { vec![1, cores] };
        let mut outputs = Vec::new();
        for &threads in thread_counts.iter().collect::<std::collections::BTreeSet<_>>() {
            let mut cmd = Command::new(&python);
            cmd.current_dir(&work).env("PYTHONPATH", &pkg).arg(&script).arg(format!("--threads={threads}"));
            if quick {
                cmd.arg("--quick");
            }
            eprintln!("xtask: running {cmd:?}");
            let out = cmd.output().map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let log = work.join(format!("{name}-t{threads}.txt"));
            std::fs::write(&log, &text).map_err(|e| format!("{}: {e}", log.display()))?;
            print!("{text}");
            if !out.status.success() {
                return Err(format!("bench_{name}.py failed:\n{}", String::from_utf8_lossy(&out.stderr)));
            }
            outputs.push(text);
        }
        if let [one, all] = &outputs[..] {
            let (table, below) = scaling(&table_rows(one), &table_rows(all), cores);
            print!("{table}");
            slower.extend(below.into_iter().map(|case| format!("{name}: {case}")));
        }
    }
    if !slower.is_empty() {
        println!("cases where the device scales less than CPU from 1 to {cores} threads ({}):", slower.len());
        slower.iter().for_each(|case| println!("  {case}"));
    }
    println!("outputs in {}", work.display());
    Ok(())
}

/// The CPU's model and the vector tier the device picks on it (REGEN_CPU_CAPABILITY lowers it),
/// for the head of a benchmark report: which of the two is faster depends on the CPU.
fn machine(cores: usize) -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |key: &str| {
        info.lines().find(|l| l.starts_with(key)).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_owned())
    };
    let model = field("model name").unwrap_or_else(|| "unknown CPU".into());
    let flags = field("flags").unwrap_or_default();
    let has = |flag: &str| flags.split_whitespace().any(|f| f == flag);
    let tier = if has("avx512f") && has("avx512bw") && has("avx512dq") && has("avx512vl") {
        "avx512"
    } else if has("avx2") && has("fma") {
        "avx2"
    } else {
        "default"
    };
    let lowered =
        std::env::var("REGEN_CPU_CAPABILITY").map(|v| format!(", REGEN_CPU_CAPABILITY={v}")).unwrap_or_default();
    format!("machine: {model}, {cores} cores, device tier {tier}{lowered}")
}

/// The case lines of a benchmark table (`name  regen_ms  cpu_ms  ratio  reps`): name and the two
/// times in ms.
fn table_rows(text: &str) -> Vec<(String, f64, f64)> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [.., dev, cpu, ratio, reps] = fields[..] else { return None };
            let numbers = (dev.parse::<f64>(), cpu.parse::<f64>(), ratio.parse::<f64>(), reps.parse::<u32>());
            let (Ok(dev), Ok(cpu), Ok(_), Ok(_)) = numbers else { return None };
            let name = fields[..fields.len() - 4].join(" ");
            Some((name, dev, cpu))
        })
        .collect()
}

/// Per case present in both runs, the speed-up of each side from 1 to `n` threads; returns the
/// table and the cases where the device's speed-up is below CPU's (by more than 5%, the noise of
/// a quiet machine).
fn scaling(one: &[(String, f64, f64)], all: &[(String, f64, f64)], n: usize) -> (String, Vec<String>) {
    let mut table = format!("{:<40}{:>12}{:>12}\n", format!("speed-up 1 -> {n} threads"), "regen", "cpu");
    let mut below = Vec::new();
    for (name, d1, c1) in one {
        let Some((_, dn, cn)) = all.iter().find(|(other, ..)| other == name) else { continue };
        let (dev, cpu) = (d1 / dn, c1 / cn);
        table.push_str(&format!("{name:<40}{dev:>11.2}x{cpu:>11.2}x\n"));
        if dev < cpu * 0.95 {
            below.push(format!("{name} (regen {dev:.2}x, cpu {cpu:.2}x)"));
        }
    }
    (table, below)
}

/// The full OpInfo sweep of the device as `cargo xtask e2e` installed it in `.venv`, strict both
/// ways against the known-failures list (a listed entry that passes fails it, as does an unlisted
/// failure), in subprocesses two at a time so a crash is one record; the summary is sweep.py's.
fn opinfo() -> Result<(), String> {
    let root = root();
    let python = root.join(".venv").join("bin").join("python");
    if !python.is_file() {
        return Err(format!("{} not found: run `cargo xtask e2e` first (it installs the device)", python.display()));
    }
    let work = root.join("target").join("opinfo");
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let device = root.join("crates/device/python");
    // From target/opinfo, so `import regen_device` finds the installed package, not the source tree.
    run(Command::new(&python)
        .current_dir(&work)
        .arg(device.join("opinfo/sweep.py"))
        .args(["results.json", "--jobs", "2", "--strict"])
        .arg(device.join("tests/opinfo_known_failures.txt")))
}

/// Runs the `regen` CLI of this checkout.
fn regen_cli() -> Command {
    let mut cmd = cargo();
    cmd.args(["run", "--quiet", "--release", "-p", "regen", "--"]);
    cmd
}

/// `regen new NAME` into `work/NAME` (emptied first).
fn new_crate(work: &Path, name: &str) -> Result<PathBuf, String> {
    let dir = work.join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    run(regen_cli().args(["new", name, "--path"]).arg(&dir))?;
    Ok(dir)
}

/// What the issue promises a new author: `regen new`, one pip command, the one-liner, the smoke test.
fn new_backend_works(python: &Path, work: &Path) -> Result<(), String> {
    let dir = new_crate(work, "mydev")?;
    pip_install(python, &dir, Some(&work.join("cargo-target")))?;
    let out = Command::new(python)
        .current_dir(work)
        .args(["-c", "import torch, mydev; x = torch.ones(3, device='mydev'); print((x + x).cpu()); print(mydev.native_calls('add.out'))"])
        .output()
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || stdout != "tensor([2., 2., 2.])\n1\n" {
        return Err(format!(
            "the new backend's one-liner printed {stdout:?}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    eprintln!("xtask: regen new mydev: (x + x).cpu() = tensor([2., 2., 2.]), add.out ran in Rust");
    run(pytest(python, &dir).arg("tests"))?;
    // The kernels unit-test as plain Rust (issue 25: the test binary failed to link the C++).
    // --release and pip's target directory reuse the extension's build: seconds, not a rebuild.
    let out = cargo()
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", work.join("cargo-target"))
        .env("REGEN_PYTHON", python)
        .args(["test", "--release"])
        .output()
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !stdout.contains("test tests::add_is_exact_in_int64_and_complex ... ok") {
        return Err(format!("cargo test in the new backend:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    }
    eprintln!("xtask: regen new mydev: cargo test ran the kernel's Rust unit tests");
    Ok(())
}

/// The `regen new` backend that [`new_backend_works`] installed, under `torch.autocast`: every op
/// its generation registered for AutocastPrivateUse1 has a kernel there, an overloaded op of the
/// fp32 list (`prod.dim_int`) turns bfloat16 into float32 and a plain one of the lower-precision
/// list (`mm`) float32 into bfloat16 (both run through the CPU fallback, as a fresh backend has
/// no kernels for them), and the device module (`torch.mydev.is_autocast_enabled`, ...) sees the
/// state (torch 2.1 to 2.3 keep it through it). Ok: how many ops it registered.
fn new_backend_autocasts(python: &Path, work: &Path) -> Result<usize, String> {
    let (selection_path, _) = selection_of(python, work, "mydev")?;
    let check = "import json, sys, torch, mydev\n\
        casts = json.load(open(sys.argv[1]))['autocast']['registered']\n\
        missing = [c['op'] for c in casts if not torch._C._dispatch_has_kernel_for_dispatch_key('aten::' + c['op'], 'AutocastPrivateUse1')]\n\
        assert not missing, f'no AutocastPrivateUse1 kernel for {len(missing)} of {len(casts)} ops: {missing[:10]}'\n\
        x = torch.ones(3, 2, device='mydev')\n\
        half = x.to(torch.bfloat16)\n\
        with torch.autocast('mydev', dtype=torch.bfloat16):\n\
        \x20   got = (torch.prod(half, 0).dtype, torch.mm(x, x.t()).dtype)\n\
        \x20   state = (torch.mydev.is_autocast_enabled(), torch.mydev.get_autocast_dtype())\n\
        assert got == (torch.float32, torch.bfloat16), f'under autocast prod.dim_int and mm gave {got}'\n\
        assert state == (True, torch.bfloat16), f'under autocast torch.mydev said {state}'\n\
        assert not torch.mydev.is_autocast_enabled(), 'autocast still on in torch.mydev after the block'\n\
        print(len(casts))\n";
    let out = Command::new(python)
        .current_dir(work)
        .args(["-c", check])
        .arg(&selection_path)
        .output()
        .map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match stdout.trim().parse() {
        Ok(n) if out.status.success() => {
            eprintln!("xtask: regen new mydev: {n} ops registered for autocast; prod.dim_int and mm cast");
            Ok(n)
        }
        _ => Err(format!("autocast on the new backend failed:\n{stdout}{}", String::from_utf8_lossy(&out.stderr))),
    }
}

/// What the build of the crate `work/NAME` registered: the same generation, from the header of
/// the torch `python` imports and the crate's regen.toml, as its build made. Its selection.json
/// is written to `work/NAME-selection.json` (for a check run in that Python); returns the path
/// and generation's one-line summary.
fn selection_of(python: &Path, work: &Path, name: &str) -> Result<(PathBuf, String), String> {
    let header = torch_header(python)?;
    let config = work.join(name).join("regen.toml");
    let generated = regen_core::generate::generate(&header, Some(&config), "cargo xtask")?;
    let selection = generated.files.iter().find(|f| f.name == "selection.json").ok_or("no selection.json")?;
    let path = work.join(format!("{name}-selection.json"));
    std::fs::write(&path, &selection.contents).map_err(|e| e.to_string())?;
    Ok((path, generated.summary))
}

/// The RegistrationDeclarations.h of the torch `python` imports.
fn torch_header(python: &Path) -> Result<PathBuf, String> {
    let out = Command::new(python)
        .args(["-c", "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'include', 'ATen', 'RegistrationDeclarations.h'))"])
        .output()
        .map_err(|e| e.to_string())?;
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// A backend with every required op registered (no config: each method raises
/// NotImplementedError) loads into torch without a schema mismatch, and the dispatcher has a
/// PrivateUse1 kernel for every registered op. Ok: how many ops it registered.
fn skeleton_loads(python: &Path, work: &Path) -> Result<usize, String> {
    let dir = new_crate(work, "skel")?;
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).map_err(|e| e.to_string());
    write(
        "regen.toml",
        "# Every required op of the installed torch, as NotImplementedError skeletons.\ndevice = \"skel\"\n",
    )?;
    write(
        "src/lib.rs",
        "//! The full skeleton: every method is the generated default.\n\n\
         pub mod kernels {\n    regen_runtime::include_kernels!();\n}\n\n\
         pub struct Skeleton;\n\nimpl kernels::Kernels for Skeleton {}\n\n\
         regen_runtime::export_kernels!(kernels, Skeleton);\n",
    )?;
    pip_install(python, &dir, Some(&work.join("cargo-target")))?;
    let (selection_path, summary) = selection_of(python, work, "skel")?;
    let registered =
        registered_in(&summary).ok_or_else(|| format!("no registered count in the summary {summary:?}"))?;
    let check = "import json, sys, torch, skel\n\
        ops = json.load(open(sys.argv[1]))['registered']\n\
        missing = [op for op in ops if not torch._C._dispatch_has_kernel_for_dispatch_key('aten::' + op, 'PrivateUse1')]\n\
        assert not missing, f'no PrivateUse1 kernel for {len(missing)} of {len(ops)} ops: {missing[:10]}'\n\
        try:\n    torch.empty(2, device='skel')\nexcept NotImplementedError as e:\n    assert 'aten::empty.memory_format' in str(e), e\n\
        else:\n    sys.exit('a skeleton kernel did not raise NotImplementedError')\n\
        print(f'skeleton: {len(ops)} ops registered for PrivateUse1 in torch {torch.__version__}')\n";
    let out = Command::new(python)
        .current_dir(work)
        .args(["-c", check])
        .arg(&selection_path)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "the full skeleton did not load (status {}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    eprint!("xtask: {}", String::from_utf8_lossy(&out.stdout));
    Ok(registered)
}

/// The count of "N registered" in generation's one-line summary.
fn registered_in(summary: &str) -> Option<usize> {
    let words: Vec<&str> = summary.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    words.windows(2).find(|w| w[1] == "registered").and_then(|w| w[0].parse().ok())
}

/// The latest patch of every minor release from 2.1 to the pinned one (`pip index versions torch`;
/// a test holds the last to crates/kernels/torch-version): what the README's range means, and what
/// `cargo xtask releases` measures by default.
const RELEASES: &[&str] = &[
    "2.1.2", "2.2.2", "2.3.1", "2.4.1", "2.5.1", "2.6.0", "2.7.1", "2.8.0", "2.9.1", "2.10.0", "2.11.0", "2.12.1",
    "2.13.0", "2.14.1", "2.15.0",
];

/// Where `cargo xtask releases` keeps its table; rows of releases not measured in a run stay.
const RELEASES_DOC: &str = "docs/releases.md";

/// What one release gave: the skeleton's registered ops, the `regen new` backend, and the
/// device when asked for; each failure is its first error line.
#[derive(Debug, PartialEq, Eq)]
struct Measured {
    release: String,
    skeleton: Result<usize, String>,
    new_backend: Result<(), String>,
    /// The ops the new backend registered for autocast, when `torch.autocast` casts with them.
    autocast: Result<usize, String>,
    device: Option<Result<(), String>>,
}

impl Measured {
    fn passed(&self) -> bool {
        self.skeleton.is_ok()
            && self.new_backend.is_ok()
            && self.autocast.is_ok()
            && self.device.as_ref().is_none_or(Result::is_ok)
    }

    /// Its row of the table. `commit`: the regen commit measured.
    fn row(&self, commit: &str) -> String {
        let cell = |r: &Result<(), String>| if r.is_ok() { "pass" } else { "FAIL" };
        let count = |r: &Result<usize, String>| r.as_ref().map_or_else(|_| "FAIL".to_owned(), usize::to_string);
        let (skeleton, autocast) = (count(&self.skeleton), count(&self.autocast));
        let device = self.device.as_ref().map_or("not run", cell);
        let mut notes: Vec<String> = Vec::new();
        if let Err(e) = &self.skeleton {
            notes.push(format!("skeleton: {e}"));
        }
        if let Err(e) = &self.new_backend {
            notes.push(format!("regen new: {e}"));
        }
        if let Err(e) = &self.autocast {
            notes.push(format!("autocast: {e}"));
        }
        if let Some(Err(e)) = &self.device {
            notes.push(format!("device: {e}"));
        }
        notes.push(format!("regen {commit}"));
        // A `|` in an error line would split its cell.
        let notes = notes.join("; ").replace('|', "\\|");
        format!("| {} | {skeleton} | {} | {autocast} | {device} | {notes} |", self.release, cell(&self.new_backend))
    }
}

const TABLE_HEAD: &str = "| release | skeleton ops registered | regen new | regen new autocast ops | device | notes |\n\
    |---|---|---|---|---|---|\n";

/// The first line of `log` that says what went wrong: a compiler's `file:line:col: error:` first
/// (pip and cargo print their own generic error lines before the build output they quote), then
/// rustc's `error[E...]`, then any other error line but those generic ones; else the first line
/// of `fallback`, the step's own error.
fn first_error_line(log: &str, fallback: &str) -> String {
    const GENERIC: &[&str] = &[
        "error: subprocess-exited-with-error",
        "error: failed-wheel-build-for-install",
        "error: failed to run custom build command",
        "error: could not compile",
        "error occurred in cc-rs",
        "ERROR: Failed building wheel",
        "ERROR: Could not build wheels",
        "ERROR: Failed to build",
    ];
    let lines: Vec<&str> =
        log.lines().map(|l| l.trim().trim_start_matches("cargo:warning=").trim_start_matches("│").trim()).collect();
    let compiler = |l: &&&str| {
        l.split_once(": error: ").is_some_and(|(at, _)| at.split(':').count() >= 3) || l.contains(": fatal error: ")
    };
    let any_error = |l: &&&str| {
        let lower = l.to_ascii_lowercase();
        (lower.starts_with("error") || lower.contains("error:") || l.starts_with("FAILED "))
            && !GENERIC.iter().any(|g| l.contains(g))
    };
    lines
        .iter()
        .find(compiler)
        .or_else(|| lines.iter().find(|l| l.starts_with("error[E")))
        .or_else(|| lines.iter().find(any_error))
        .map_or_else(|| fallback.lines().next().unwrap_or("failed").to_owned(), |l| (*l).to_owned())
}

/// One release: a venv, the full skeleton, a `regen new` backend, the device if asked; every
/// command's output goes to `log`.
fn measure(version: &str, device: bool, log: &Path) -> Measured {
    let step = |f: &mut dyn FnMut() -> Result<usize, String>| {
        let start = std::fs::read_to_string(log).map_or(0, |t| t.len());
        f().map_err(|e| {
            // The step's own error last: it quotes the output of what ran outside `run`.
            let text = std::fs::read_to_string(log).unwrap_or_default();
            first_error_line(&format!("{}\n{e}", text.get(start..).unwrap_or(&text)), &e)
        })
    };
    let work = root().join("target").join("releases").join(version);
    let python = match step(&mut || {
        std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
        venv(version).map(|_| 0)
    }) {
        Ok(_) => root().join(if Some(version) == pinned().ok().as_deref() {
            ".venv".to_owned()
        } else {
            format!(".venv-{version}")
        }),
        Err(e) => {
            let e = format!("no venv: {e}");
            return Measured {
                release: version.to_owned(),
                skeleton: Err(e.clone()),
                new_backend: Err(e.clone()),
                autocast: Err(e.clone()),
                device: device.then_some(Err(e)),
            };
        }
    };
    let python = python.join("bin").join("python");
    let skeleton = step(&mut || skeleton_loads(&python, &work));
    let new_backend = step(&mut || new_backend_works(&python, &work).map(|()| 0)).map(|_| ());
    let autocast = match &new_backend {
        Ok(()) => step(&mut || new_backend_autocasts(&python, &work)),
        Err(_) => Err("no backend to try".to_owned()),
    };
    let device = device.then(|| {
        step(&mut || {
            let target = (Some(version) != pinned().ok().as_deref()).then(|| work.join("device-target"));
            pip_install(&python, &root().join("crates/device"), target.as_deref())?;
            run(&mut device_suite(&python, &[])).map(|()| 0)
        })
        .map(|_| ())
    });
    Measured { release: version.to_owned(), skeleton, new_backend, autocast, device }
}

/// `cargo xtask releases`: each release measured in turn, its venv and build outputs removed
/// after it (one torch on disk at a time; the pinned `.venv` stays), the table printed and merged
/// into docs/releases.md after every release, so an interrupted sweep keeps what it measured.
fn releases(versions: &[String], device: bool) -> Result<(), String> {
    let root = root();
    let pinned = pinned()?;
    let commit = Command::new("git")
        .current_dir(&root)
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let logs = root.join("target").join("releases");
    std::fs::create_dir_all(&logs).map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for version in versions {
        let log = logs.join(format!("{version}.log"));
        let _ = std::fs::remove_file(&log);
        eprintln!("xtask: torch {version}: measuring (output in {})", log.display());
        *LOG.lock().map_err(|e| e.to_string())? = Some(log.clone());
        let measured = measure(version, device, &log);
        *LOG.lock().map_err(|e| e.to_string())? = None;
        if *version != pinned {
            let venv = root.join(format!(".venv-{version}"));
            if venv.exists() {
                std::fs::remove_dir_all(&venv).map_err(|e| format!("{}: {e}", venv.display()))?;
            }
        }
        // Its build outputs (the skeleton's are GBs); the log stays.
        let work = logs.join(version);
        if work.exists() {
            std::fs::remove_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
        }
        let row = measured.row(&commit);
        eprintln!("xtask: torch {version}: {}", if measured.passed() { "passed" } else { "FAILED" });
        rows.push((measured, row));
        let doc = root.join(RELEASES_DOC);
        let old = std::fs::read_to_string(&doc).unwrap_or_default();
        let text = merge_table(&old, rows.iter().map(|(m, row)| (m.release.as_str(), row.as_str())));
        std::fs::write(&doc, text).map_err(|e| format!("{}: {e}", doc.display()))?;
    }
    let table: String = rows.iter().map(|(_, row)| format!("{row}\n")).collect();
    println!("{TABLE_HEAD}{table}");
    eprintln!("xtask: rows merged into {RELEASES_DOC}");
    match rows.iter().filter(|(m, _)| !m.passed()).count() {
        0 => Ok(()),
        n => Err(format!("{n} of {} release(s) failed; see {RELEASES_DOC} and target/releases/*.log", rows.len())),
    }
}

/// docs/releases.md with `rows` (release, row) replacing those releases' rows of `old` and the
/// other rows kept, all in release order.
fn merge_table<'a>(old: &str, rows: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    let mut all: Vec<(String, String)> = old
        .lines()
        .filter_map(|l| {
            let release = l.strip_prefix("| ")?.split(' ').next()?;
            (check_version(release).is_ok() && release.contains('.')).then(|| (release.to_owned(), l.to_owned()))
        })
        .collect();
    for (release, row) in rows {
        all.retain(|(r, _)| r != release);
        all.push((release.to_owned(), row.to_owned()));
    }
    let key = |v: &str| v.split('.').map(|p| p.parse::<u32>().unwrap_or(0)).collect::<Vec<_>>();
    all.sort_by_key(|(r, _)| key(r));
    let rows: String = all.iter().map(|(_, row)| format!("{row}\n")).collect();
    format!(
        "# Torch releases measured\n\n\
         Generated by `cargo xtask releases` (`--torch X.Y.Z` for some; a run replaces the rows of the\n\
         releases it measures); do not edit. For each release, in a fresh venv with that torch from PyPI:\n\
         the full skeleton (every required op registered, each raising NotImplementedError) built and\n\
         loaded, with the count of ops that have a PrivateUse1 kernel; a `regen new` backend\n\
         pip-installed, its one-liner and its tests; that backend's autocast registrations (the count of\n\
         ops with an AutocastPrivateUse1 kernel), and `torch.autocast` on it casting an overloaded op\n\
         (`prod.dim_int`, to float32) and `mm` (to bfloat16); the reference device and its tests only with\n\
         `--device`. A failure's note is its first error line (the whole output is in\n\
         target/releases/X.Y.Z.log). The notes name the regen commit measured.\n\n\
         {TABLE_HEAD}{rows}"
    )
}

/// `.venv` (for the pinned release) or `.venv-X.Y.Z` with that torch, numpy, pytest, expecttest,
/// psutil and setuptools-rust; returns its Python. Reused when it already has them.
fn venv(torch: &str) -> Result<PathBuf, String> {
    let root = root();
    let venv = if torch == pinned()? { root.join(".venv") } else { root.join(format!(".venv-{torch}")) };
    let python = venv.join("bin").join("python");
    let check = format!(
        "import torch, numpy, pytest, expecttest, psutil, setuptools_rust, setuptools; \
                 assert torch.__version__.split('+')[0] == '{torch}'; \
                 assert tuple(map(int, setuptools.__version__.split('.')[:2])) >= (70, 1)"
    );
    let ready = Command::new(&python).args(["-c", &check]).output().is_ok_and(|o| o.status.success());
    if !ready {
        if !python.exists() {
            run(Command::new(self::python()).args(["-m", "venv"]).arg(&venv))?;
        }
        // torch from PyPI with its dependencies (no CPU-only index is reachable here): ~5 GB.
        // Releases before 2.3 were built against numpy 1.
        let (major, minor) = release_of(torch);
        let numpy = if (major, minor) < (2, 3) { "numpy<2" } else { "numpy" };
        run(Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "--quiet",
            &format!("torch=={torch}"),
            numpy,
            "pytest",
            // PyTorch's OpInfo database (torch.testing._internal) imports it.
            "expecttest",
            // torch_openreg's test_autograd.py reads thread counts with it.
            "psutil",
            // setuptools builds wheels without the `wheel` package from 70.1 on; a venv's own is older.
            "setuptools>=70.1",
            "setuptools-rust",
        ]))?;
    }
    Ok(python)
}

fn release_of(version: &str) -> (u32, u32) {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// Builds and installs the backend crate at `dir` into the environment of `python`, with cargo's
/// target directory in `target` when given (crates made by `regen new` share one, so regen's own
/// crates compile once per release, not once per crate).
fn pip_install(python: &Path, dir: &Path, target: Option<&Path>) -> Result<(), String> {
    let mut cmd = Command::new(python);
    if let Some(target) = target {
        cmd.env("CARGO_TARGET_DIR", target);
    }
    // Without build isolation the build sees the environment's torch; --no-deps keeps pip from
    // walking torch's dependency tree again.
    run(cmd
        .args(["-m", "pip", "install", "--quiet", "--no-build-isolation", "--no-deps", "--force-reinstall"])
        .arg(dir))
}

fn check_version(version: &str) -> Result<(), String> {
    if version.is_empty() || !version.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!("expected a release number like 2.15.0, got {version:?}"));
    }
    Ok(())
}

/// Downloads the torch wheel of `version` (without dependencies) once, into target/torch-wheels.
fn wheel_dir(version: &str) -> Result<PathBuf, String> {
    check_version(version)?;
    let dir = root().join("target").join("torch-wheels").join(version);
    let has_wheel = |dir: &Path| {
        std::fs::read_dir(dir)
            .is_ok_and(|d| d.filter_map(Result::ok).any(|e| e.file_name().to_string_lossy().ends_with(".whl")))
    };
    if has_wheel(&dir) {
        return Ok(dir);
    }
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let download = |extra: &[&str]| {
        run(Command::new(python())
            .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet", "-d"])
            .arg(&dir)
            .args(extra)
            .arg(format!("torch=={version}")))
    };
    // Old releases have no wheel for this machine's Python; their headers are the same in any.
    download(&[]).or_else(|_| {
        download(&[
            "--python-version",
            "3.10",
            "--platform",
            "manylinux1_x86_64",
            "--platform",
            "manylinux_2_17_x86_64",
        ])
    })?;
    Ok(dir)
}

/// Extracts members under `prefix` from the downloaded wheel into `dest` (Python's zipfile reads
/// single members without unpacking the whole, large wheel).
fn extract(version: &str, prefix: &str, dest: &Path) -> Result<(), String> {
    let script = "import sys, zipfile, glob, os\n\
        wheels = sorted(glob.glob(os.path.join(sys.argv[1], 'torch-*.whl')))\n\
        if not wheels: sys.exit('no torch wheel was downloaded')\n\
        with zipfile.ZipFile(wheels[-1]) as z:\n\
        \x20   members = [m for m in z.namelist() if m.startswith(sys.argv[2])]\n\
        \x20   if not members: sys.exit('nothing under ' + sys.argv[2] + ' in ' + wheels[-1])\n\
        \x20   z.extractall(sys.argv[3], members)\n";
    run(Command::new(python()).args(["-c", script]).arg(wheel_dir(version)?).arg(prefix).arg(dest))
}

/// Fetches that release's header out of the torch wheel into fixtures/.
fn fixture(version: &str) -> Result<(), String> {
    let dest_dir = root().join("fixtures").join(format!("torch-{version}"));
    let scratch = root().join("target").join("torch-fixture").join(version);
    extract(version, "torch/include/ATen/RegistrationDeclarations.h", &scratch)?;
    std::fs::create_dir_all(&dest_dir).map_err(|e| e.to_string())?;
    let dest = dest_dir.join("RegistrationDeclarations.h");
    std::fs::copy(scratch.join("torch/include/ATen/RegistrationDeclarations.h"), &dest).map_err(|e| e.to_string())?;
    eprintln!("xtask: wrote {}", dest.display());
    Ok(())
}

/// Generates the full required set for a fixture and compiles every C++ file with `-Wall -Werror`
/// against that release's own torch headers (torch's own headers included as system headers).
fn compile_cpp(version: &str, config: Option<&str>) -> Result<(), String> {
    let root = root();
    let header = root.join("fixtures").join(format!("torch-{version}")).join("RegistrationDeclarations.h");
    if !header.is_file() {
        return Err(format!("no fixture {}; run `cargo xtask fixture --torch {version}` first", header.display()));
    }
    let torch = root.join("target").join("torch-include").join(version);
    let marker = torch.join(".complete");
    if !marker.exists() {
        extract(version, "torch/include/", &torch)?;
        extract(version, "torch/share/cmake/Torch/", &torch)?;
        std::fs::write(&marker, "").map_err(|e| e.to_string())?;
    }
    // The wheel's own build flags say which C++ ABI it was built with.
    let cmake = std::fs::read_to_string(torch.join("torch/share/cmake/Torch/TorchConfig.cmake")).unwrap_or_default();
    let abi = if cmake.contains("_GLIBCXX_USE_CXX11_ABI=0") { "0" } else { "1" };
    let std = if version.starts_with("1.") { "-std=c++17" } else { "-std=c++20" };
    let variant = if config.is_some() { format!("{version}-configured") } else { version.to_owned() };
    let out = root.join("target").join("compile-cpp").join(variant);
    let config = config.map(|c| root.join(c));
    let generated = regen_core::generate::generate(&header, config.as_deref(), "cargo xtask compile-cpp")?;
    ensure(&out, &generated.files, Mode::Write).map_err(|e| format!("{}: {e}", out.display()))?;
    let include = torch.join("torch/include");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(&out)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cpp"))
        .collect();
    sources.sort();
    // Two at a time: the machines have two cores, and each unit parses the torch headers once.
    for pair in sources.chunks(2) {
        let mut children = Vec::new();
        for src in pair {
            let mut cmd = Command::new(std::env::var("CXX").unwrap_or_else(|_| "g++".into()));
            cmd.args([std, &format!("-D_GLIBCXX_USE_CXX11_ABI={abi}"), "-Wall", "-Wextra", "-Werror", "-c", "-o"])
                .arg(src.with_extension("o"))
                .arg("-isystem")
                .arg(&include)
                .arg("-isystem")
                .arg(include.join("torch/csrc/api/include"))
                .arg("-I")
                .arg(&out)
                .arg(src);
            eprintln!("xtask: compiling {} against torch {version} headers", src.display());
            children.push((src.clone(), cmd.spawn().map_err(|e| format!("cannot start the C++ compiler: {e}"))?));
        }
        for (src, mut child) in children {
            let status = child.wait().map_err(|e| e.to_string())?;
            if !status.success() {
                return Err(format!("{} does not compile against torch {version}", src.display()));
            }
        }
    }
    eprintln!("xtask: the generated C++ for torch {version} compiles warning-free ({} units)", sources.len());
    Ok(())
}

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_parses() {
        assert_eq!(parse_args(&["fixture", "--torch", "2.15.0"]), Ok(Task::Fixture("2.15.0".into())));
        assert_eq!(
            parse_args(&["compile-cpp", "--torch", "1.13.1", "--torch", "2.15.0"]),
            Ok(Task::CompileCpp(vec!["1.13.1".into(), "2.15.0".into()]))
        );
        assert_eq!(parse_args(&["e2e"]), Ok(Task::E2e(None)));
        assert_eq!(parse_args(&["e2e", "--torch", "2.4.1"]), Ok(Task::E2e(Some("2.4.1".into()))));
        assert_eq!(parse_args(&["bump", "--torch", "2.16.0"]), Ok(Task::Bump("2.16.0".into())));
        assert_eq!(parse_args(&["regen"]), Ok(Task::Regen { check: false }));
        assert_eq!(parse_args(&["regen", "--check"]), Ok(Task::Regen { check: true }));
        assert_eq!(parse_args(&["fuzz"]), Ok(Task::Fuzz(vec![])));
        assert_eq!(
            parse_args(&["fuzz", "--execs", "10", "--seed", "3"]),
            Ok(Task::Fuzz(["--execs", "10", "--seed", "3"].map(String::from).to_vec()))
        );
        assert_eq!(parse_args(&["ci"]), Ok(Task::Ci));
        assert_eq!(parse_args(&["footprint"]), Ok(Task::Footprint { runs: 15 }));
        assert_eq!(parse_args(&["footprint", "--runs", "3"]), Ok(Task::Footprint { runs: 3 }));
        assert_eq!(parse_args(&["capabilities"]), Ok(Task::Capabilities(None)));
        assert_eq!(parse_args(&["opinfo"]), Ok(Task::Opinfo));
        assert_eq!(
            parse_args(&["capabilities", "--only", "regen-default"]),
            Ok(Task::Capabilities(Some("regen-default".into())))
        );
        assert_eq!(parse_args(&["--help"]), Ok(Task::Help));
        assert_eq!(parse_args(&["bench"]), Ok(Task::Bench { quick: false, only: vec![] }));
        assert_eq!(
            parse_args(&["bench", "--quick", "--only", "conv,models"]),
            Ok(Task::Bench { quick: true, only: vec!["conv".into(), "models".into()] })
        );
        assert!(parse_args(&["bench", "--only", "convolution"]).unwrap_err().contains("no benchmark \"convolution\""));
        assert!(parse_args(&["bench", "--only"]).is_err());
        let every: Vec<String> = RELEASES.iter().map(|v| (*v).to_owned()).collect();
        assert_eq!(parse_args(&["releases"]), Ok(Task::Releases { torch: every.clone(), device: false }));
        assert_eq!(parse_args(&["releases", "--device"]), Ok(Task::Releases { torch: every, device: true }));
        assert_eq!(
            parse_args(&["releases", "--torch", "2.1.2", "--device", "--torch", "2.3.1"]),
            Ok(Task::Releases { torch: vec!["2.1.2".into(), "2.3.1".into()], device: true })
        );
    }

    #[test]
    fn the_default_releases_are_one_per_minor_release_from_2_1_to_the_pin() {
        let minors: Vec<(u32, u32)> = RELEASES.iter().map(|v| release_of(v)).collect();
        let (_, last) = release_of(&pinned().unwrap());
        assert_eq!(minors, (1..=last).map(|m| (2, m)).collect::<Vec<_>>());
        assert_eq!(RELEASES.last().copied(), Some(pinned().unwrap().as_str()), "the newest is the pinned release");
    }

    #[test]
    fn a_bad_command_line_says_what_is_wrong() {
        let error = |args: &[&str]| parse_args(args).unwrap_err();
        assert_eq!(error(&[]), "no command given");
        assert_eq!(error(&["bogus"]), r#"unknown command "bogus""#);
        assert_eq!(error(&["bogus", "--torch", "2.15.0"]), r#"unknown command "bogus""#);
        assert_eq!(error(&["fixture"]), "fixture needs --torch X.Y.Z");
        assert_eq!(error(&["fixture", "--torch"]), "fixture needs --torch X.Y.Z");
        assert_eq!(error(&["fixture", "2.15.0"]), "fixture needs --torch X.Y.Z");
        assert_eq!(error(&["fixture", "--torch", "latest"]), r#"expected a release number like 2.15.0, got "latest""#);
        assert_eq!(error(&["bump"]), "bump needs --torch X.Y.Z");
        assert_eq!(error(&["footprint", "--runs", "0"]), r#"footprint: --runs needs a positive count, got "0""#);
        assert_eq!(error(&["footprint", "3"]), "footprint takes only --runs N");
        assert_eq!(error(&["e2e", "2.4.1"]), "e2e needs --torch X.Y.Z");
        assert_eq!(error(&["compile-cpp"]), "compile-cpp needs --torch X.Y.Z (one or more)");
        assert_eq!(
            error(&["compile-cpp", "--torch", "2.15.0", "--torch"]),
            "compile-cpp needs --torch X.Y.Z (one or more)"
        );
        assert_eq!(error(&["regen", "--write"]), "regen takes only --check");
        assert_eq!(error(&["ci", "--fast"]), "ci takes no arguments");
        assert_eq!(
            error(&["capabilities", "--only", "avx"]),
            r#"capabilities: unknown capability "avx" (one of aten-avx2, aten-default, mkl-avx2, onednn-avx2, regen-avx2, regen-default)"#
        );
        assert_eq!(error(&["capabilities", "avx2"]), "capabilities takes only --only NAME");
        assert_eq!(error(&["opinfo", "--full"]), "opinfo takes no arguments");
        assert_eq!(error(&["fuzz", "--exec", "10"]), r#"fuzz: unknown option "--exec""#);
        assert_eq!(error(&["fuzz", "--seed", "1", "--execs"]), "fuzz: --execs needs a value");
        assert_eq!(error(&["releases", "--torch"]), "releases: --torch needs X.Y.Z");
        assert_eq!(error(&["releases", "2.1.2"]), r#"releases: unknown option "2.1.2""#);
        assert_eq!(error(&["releases", "--torch", "2.x"]), r#"expected a release number like 2.15.0, got "2.x""#);
    }

    #[test]
    fn the_first_error_line_is_the_compilers_not_pips_or_cargos() {
        // What pip prints when a backend's build fails: its own lines, cargo's, then the C++ error.
        let log = "  error: subprocess-exited-with-error\n\
            \x20 × Building wheel for mydev (pyproject.toml) did not run successfully.\n\
            \x20 │ error: failed to run custom build command for `mydev v0.1.0`\n\
            \x20 │ warning: unused variable\n\
            \x20 │ generated/register_autocast.cpp:20:59: error: macro \"KERNEL_PRIVATEUSEONE\" passed 3 arguments, but takes just 2\n\
            \x20 │ generated/register_autocast.cpp:22:59: error: macro \"KERNEL_PRIVATEUSEONE\" passed 3 arguments, but takes just 2\n\
            ERROR: Failed building wheel for mydev\n";
        assert_eq!(
            first_error_line(log, "pip failed"),
            r#"generated/register_autocast.cpp:20:59: error: macro "KERNEL_PRIVATEUSEONE" passed 3 arguments, but takes just 2"#
        );
        let rust = "error: failed to run custom build command for `x`\nerror[E0425]: cannot find value `y`\n";
        assert_eq!(first_error_line(rust, "cargo failed"), "error[E0425]: cannot find value `y`");
        let python =
            "Traceback (most recent call last):\n  File \"<string>\", line 1\nImportError: undefined symbol: _ZN3c10\n";
        assert_eq!(first_error_line(python, "it failed"), "ImportError: undefined symbol: _ZN3c10");
        assert_eq!(
            first_error_line("all fine\n", "pip install failed with exit status: 1\nmore"),
            "pip install failed with exit status: 1"
        );
    }

    #[test]
    fn a_row_names_each_failure_and_rows_merge_by_release() {
        let passed = Measured {
            release: "2.4.1".into(),
            skeleton: Ok(923),
            new_backend: Ok(()),
            autocast: Ok(126),
            device: None,
        };
        assert!(passed.passed());
        assert_eq!(passed.row("abc1234"), "| 2.4.1 | 923 | pass | 126 | not run | regen abc1234 |");
        let failed = Measured {
            release: "2.10.0".into(),
            skeleton: Ok(950),
            new_backend: Err("a.cpp:1:2: error: x | y".into()),
            autocast: Err("no backend to try".into()),
            device: Some(Ok(())),
        };
        assert!(!failed.passed());
        assert_eq!(
            failed.row("abc1234"),
            "| 2.10.0 | 950 | FAIL | FAIL | pass | regen new: a.cpp:1:2: error: x \\| y; autocast: no backend to try; regen abc1234 |"
        );
        let first = merge_table("", [("2.10.0", "| 2.10.0 | old |"), ("2.1.2", "| 2.1.2 | a |")].into_iter());
        assert!(first.starts_with("# Torch releases measured\n"), "{first}");
        // A later run replaces its releases' rows, keeps the others, and orders them by release.
        let second = merge_table(&first, [("2.10.0", "| 2.10.0 | new |"), ("2.9.1", "| 2.9.1 | b |")].into_iter());
        let rows: Vec<&str> = second.lines().filter(|l| l.starts_with("| 2.")).collect();
        assert_eq!(rows, ["| 2.1.2 | a |", "| 2.9.1 | b |", "| 2.10.0 | new |"]);
        assert_eq!(merge_table(&second, std::iter::empty()), second, "merging nothing changes nothing");
    }

    #[test]
    fn the_registered_count_is_read_from_the_summary() {
        let summary = "3039 ops (923 required), 923 generated, 921 registered, 2 skipped (2 excluded by the config; see selection.json)";
        assert_eq!(registered_in(summary), Some(921));
        assert_eq!(registered_in("nothing here"), None);
    }

    #[test]
    fn a_run_of_steps_closes_on_one_line() {
        let ran = std::cell::RefCell::new(Vec::new());
        let step = |name: &'static str, ok: bool| -> Step<'_> {
            let ran = &ran;
            (
                name,
                Box::new(move || {
                    ran.borrow_mut().push(name);
                    if ok { Ok(()) } else { Err(format!("{name} went wrong")) }
                }),
            )
        };
        assert_eq!(
            run_steps("ci", vec![step("fmt", true), step("clippy", true), step("compile-cpp (3)", true)]),
            Ok("xtask: ci passed: fmt, clippy, compile-cpp (3)".to_owned())
        );
        ran.borrow_mut().clear();
        assert_eq!(
            run_steps("ci", vec![step("fmt", true), step("clippy", false), step("tests", true)]),
            Err("clippy went wrong\nxtask: ci failed at clippy (passed: fmt)".to_owned())
        );
        assert_eq!(*ran.borrow(), ["fmt", "clippy"], "no step runs after a failure");
        assert_eq!(
            run_steps("ci", vec![step("fmt", false)]),
            Err("fmt went wrong\nxtask: ci failed at fmt".to_owned())
        );
    }

    #[test]
    fn bench_tables_join_into_speed_ups() {
        let one =
            "torch 2.15.0, 1 torch threads for CPU and device (2 cores), load average 0.11, busy probe 73.0/61.5 ms
case                               regen ms     cpu ms   ratio  reps
exp float32 contiguous                  0.400      0.300    1.33    30
fwd+bwd 16x3->32 64\u{b2} k3               8.000     14.000    0.57    10
only at one thread                      1.000      1.000    1.00    30
220 cases: geomean device/CPU 1.65, 99 above 1.2
";
        let all = "case                               regen ms     cpu ms   ratio  reps
exp float32 contiguous                  0.300      0.150    2.00    30
fwd+bwd 16x3->32 64\u{b2} k3               4.000      8.000    0.50    10
";
        let rows = table_rows(one);
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert_eq!(rows[1], ("fwd+bwd 16x3->32 64\u{b2} k3".to_owned(), 8.0, 14.0));
        let (table, below) = scaling(&rows, &table_rows(all), 2);
        assert!(
            table.contains("exp float32 contiguous") && table.contains("1.33x") && table.contains("2.00x"),
            "{table}"
        );
        assert!(!table.contains("only at one thread"));
        // exp: the device 1.33x against CPU's 2.00x; the convolution 2.00x against 1.75x.
        assert_eq!(below, ["exp float32 contiguous (regen 1.33x, cpu 2.00x)"]);
    }
}
