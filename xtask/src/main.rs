//! Project chores: `cargo xtask fixture --torch X.Y.Z`, `cargo xtask ci`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const USAGE: &str = "usage: cargo xtask <command>
  fixture --torch X.Y.Z   fetch that release's RegistrationDeclarations.h into fixtures/torch-X.Y.Z/
  ci                      everything CI checks: fmt, clippy, then all tests";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["fixture", "--torch", version] => fixture(version),
        ["ci"] => ci(),
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

fn ci() -> Result<(), String> {
    run(cargo().args(["fmt", "--all", "--check"]))?;
    run(cargo().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))?;
    // nextest closes with one summary line for the whole workspace (cargo test closes on the
    // last binary's count, often an empty doc-test run); the machine image ships it.
    let has_nextest = cargo().args(["nextest", "--version"]).output().is_ok_and(|o| o.status.success());
    if has_nextest {
        run(cargo().args(["nextest", "run", "--workspace", "--no-fail-fast"]))
    } else {
        run(cargo().args(["test", "--workspace", "--no-fail-fast"]))
    }
}

/// Downloads the torch wheel (without dependencies) and extracts the one header from it.
fn fixture(version: &str) -> Result<(), String> {
    if version.is_empty() || !version.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(format!("expected a release number like 2.15.0, got {version:?}"));
    }
    let root = root();
    let download = root.join("target").join("torch-wheels").join(version);
    std::fs::create_dir_all(&download).map_err(|e| e.to_string())?;
    run(Command::new(python())
        .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d"])
        .arg(&download)
        .arg(format!("torch=={version}")))?;
    let dest_dir = root.join("fixtures").join(format!("torch-{version}"));
    std::fs::create_dir_all(&dest_dir).map_err(|e| e.to_string())?;
    let dest = dest_dir.join("RegistrationDeclarations.h");
    // Python's zipfile reads one member without unpacking the whole (large) wheel.
    let script = "import sys, zipfile, glob\n\
        wheels = sorted(glob.glob(sys.argv[1] + '/torch-*.whl'))\n\
        if not wheels: sys.exit('no torch wheel was downloaded')\n\
        with zipfile.ZipFile(wheels[-1]) as z, open(sys.argv[2], 'wb') as out:\n\
        \x20   out.write(z.read('torch/include/ATen/RegistrationDeclarations.h'))\n";
    run(Command::new(python()).args(["-c", script]).arg(&download).arg(&dest))?;
    eprintln!("xtask: wrote {}", dest.display());
    Ok(())
}

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}
