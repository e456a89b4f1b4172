//! Project chores: `cargo xtask fixture --torch X.Y.Z`, `cargo xtask ci`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use regen_core::write::{Mode, ensure};

const USAGE: &str = "usage: cargo xtask <command>
  fixture --torch X.Y.Z       fetch that release's RegistrationDeclarations.h into fixtures/torch-X.Y.Z/
  compile-cpp --torch X.Y.Z   generate the full required set for that fixture and compile the C++
                              against the release's own torch headers (repeat --torch for several)
  e2e                         create or reuse .venv (torch==2.15.0, numpy, pytest), build the regen
                              extension against it, install regen_runtime into it, run the pytest suite
  bump --torch X.Y.Z          fetch that release's header, report `regen diff` against the pinned release
                              (crates/runtime/torch-version) for the runtime's regen.toml, move the pin
                              and regenerate the runtime's checked-in code
  regen [--check]             regenerate (or check) the runtime's checked-in code in crates/runtime/generated
  ci                          everything CI checks: fmt, clippy, the C++ compile check of the oldest
                              and newest fixtures, then all tests";

/// What CI compiles: the full skeleton of the oldest and newest fixtures, and the newest with a
/// config (implemented ops, autograd registrations, the CPU fallback).
const CI_COMPILE: &[(&str, Option<&str>)] =
    &[("1.13.1", None), ("2.15.0", None), ("2.15.0", Some("crates/kernels-check/regen.toml"))];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["fixture", "--torch", version] => fixture(version),
        ["ci"] => ci(),
        ["e2e"] => e2e(),
        ["bump", "--torch", version] => bump(version),
        ["regen"] => regen(false),
        ["regen", "--check"] => regen(true),
        ["compile-cpp", rest @ ..] if !rest.is_empty() && rest.len() % 2 == 0 => {
            let releases: Option<Vec<&str>> =
                rest.chunks(2).map(|pair| (pair[0] == "--torch").then_some(pair[1])).collect();
            releases.ok_or_else(|| USAGE.to_owned()).and_then(|r| r.iter().try_for_each(|v| compile_cpp(v, None)))
        }
        _ => Err(USAGE.to_owned()),
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

fn run(cmd: &mut Command) -> Result<(), String> {
    eprintln!("xtask: running {cmd:?}");
    let status = cmd.status().map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("{cmd:?} failed with {status}")) }
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

/// The torch release the reference device is generated for and tested against (one line, X.Y.Z).
const PIN_FILE: &str = "crates/device/torch-version";
const DEVICE_CONFIG: &str = "crates/device/regen.toml";
const DEVICE_GENERATED: &str = "crates/device/generated";

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
    eprintln!("xtask: what moving from torch {old} to {version} means for crates/runtime/regen.toml:");
    run(cargo().args(["run", "--quiet", "-p", "regen", "--", "diff"]).args([
        &fixture_header(&old),
        &fixture_header(version),
        "--config",
        "crates/runtime/regen.toml",
        "--fail-on",
        "never",
    ]))?;
    std::fs::write(root().join(PIN_FILE), format!("{version}\n")).map_err(|e| e.to_string())?;
    regen(false)?;
    eprintln!(
        "xtask: pinned torch {version}; review `git diff crates/runtime/generated`, then run `cargo xtask ci` (e2e installs torch=={version})"
    );
    Ok(())
}

/// The device's generated code: the pinned release's header with crates/device/regen.toml,
/// written (or checked) in process by the same library call the CLI and regen-build make.
fn regen(check: bool) -> Result<(), String> {
    let root = root();
    let header = root.join(fixture_header(&pinned()?));
    let generated = regen_core::generate::generate(&header, Some(&root.join(DEVICE_CONFIG)), "cargo xtask regen")?;
    eprint!("{}", generated.warnings);
    let dir = root.join(DEVICE_GENERATED);
    let mode = if check { Mode::Check } else { Mode::Write };
    let ensured = ensure(&dir, &generated.files, mode).map_err(|e| format!("{}: {e}", dir.display()))?;
    if check && !ensured.is_fresh() {
        eprint!("{}", ensured.report);
        return Err(format!(
            "{DEVICE_GENERATED} is stale ({} file(s)); run `cargo xtask regen`",
            ensured.problem_count()
        ));
    }
    let verb = if check { "is fresh" } else { "written" };
    eprintln!("xtask: {DEVICE_GENERATED} {verb}: {}", generated.summary);
    // The device's Python package and pyproject.toml are `regen new`'s, rendered for it.
    let mut files = regen_core::scaffold::python_package("regen", "regen_device");
    files.push(regen_core::scaffold::pyproject("regen", "regen_device", &["torch"]));
    let dir = root.join("crates/device");
    let ensured = ensure(&dir, &files, mode).map_err(|e| format!("{}: {e}", dir.display()))?;
    if check && !ensured.is_fresh() {
        eprint!("{}", ensured.report);
        return Err(
            "crates/device's Python package differs from `regen new`'s templates; run `cargo xtask regen`".into()
        );
    }
    Ok(())
}

fn ci() -> Result<(), String> {
    run(cargo().args(["fmt", "--all", "--check"]))?;
    regen(true)?;
    run(cargo().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
    for (release, config) in CI_COMPILE {
        compile_cpp(release, *config)?;
    }
    // nextest closes with one summary line for the whole workspace (cargo test closes on the
    // last binary's count, often an empty doc-test run); the machine image ships it.
    let has_nextest = cargo().args(["nextest", "--version"]).output().is_ok_and(|o| o.status.success());
    if has_nextest {
        run(cargo().args(["nextest", "run", "--workspace", "--no-fail-fast"]))?;
    } else {
        run(cargo().args(["test", "--workspace", "--no-fail-fast"]))?;
    }
    // Last, so the run closes on pytest's summary of the end-to-end tests.
    e2e()
}

/// Creates (or reuses) .venv with the pinned torch and the build tools, installs the reference
/// device into it the way any backend installs (`pip install --no-build-isolation crates/device`),
/// and runs its end-to-end tests.
fn e2e() -> Result<(), String> {
    let root = root();
    let python = venv(&pinned()?)?;
    pip_install(&python, &root.join("crates/device"))?;
    run(Command::new(&python)
        .current_dir(std::env::temp_dir())
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(root.join("crates/device/python/tests")))
}

/// `.venv` (for the pinned release) or `.venv-X.Y.Z` with that torch, numpy, pytest and
/// setuptools-rust; returns its Python. Reused when it already has them.
fn venv(torch: &str) -> Result<PathBuf, String> {
    let root = root();
    let venv = if torch == pinned()? { root.join(".venv") } else { root.join(format!(".venv-{torch}")) };
    let python = venv.join("bin").join("python");
    let check = format!(
        "import torch, numpy, pytest, setuptools_rust; assert torch.__version__.split('+')[0] == '{torch}'"
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
            "setuptools-rust",
        ]))?;
    }
    Ok(python)
}

fn release_of(version: &str) -> (u32, u32) {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// Builds and installs the backend crate at `dir` into the environment of `python`.
fn pip_install(python: &Path, dir: &Path) -> Result<(), String> {
    // Without build isolation the build sees the environment's torch; --no-deps keeps pip from
    // walking torch's dependency tree again.
    run(Command::new(python)
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
    let mut regen = cargo();
    regen.args(["run", "--quiet", "--release", "-p", "regen", "--", "--header"]).arg(&header).arg("--out").arg(&out);
    if let Some(config) = config {
        regen.arg("--config").arg(root.join(config));
    }
    run(&mut regen)?;
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
