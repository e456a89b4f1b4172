//! regen-build: the build.rs API of a regen backend crate (in the manner of prost-build).
//!
//! A backend's `build.rs` is one call in `fn main`:
//!
//! ```no_run
//! regen_build::Builder::new().run();
//! ```
//!
//! [`Builder::build`] finds torch through the active Python (`REGEN_PYTHON`, else the
//! interpreter setuptools-rust or PyO3 name, else `python3`), reads that torch's own
//! `RegistrationDeclarations.h` (or a pinned header), generates everything into
//! `$OUT_DIR/regen` with regen-core (writing only files whose bytes changed), optionally checks a
//! checked-in copy with `regen --check` semantics, compiles the generated C++ and
//! regen-runtime's host glue against that torch (its C++ standard and `_GLIBCXX_USE_CXX11_ABI`),
//! caching each object by the hash of its inputs so a regeneration recompiles only the
//! translation units that changed, and links them whole-archive with `-ltorch_cpu -lc10` and an
//! rpath into the crate's cdylib only (the library torch loads): the crate's test binaries get no
//! C++ and no libtorch, so `cargo test` runs its kernels as plain Rust. The crate then mounts the
//! Rust side with `regen_runtime::include_kernels!()`.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use regen_core::generate::{generate, generate_groups};
use regen_core::write::{Mode, OutputFile, ensure};
use sha2::{Digest, Sha256};

/// A failed build step, with everything the author needs to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

fn error(message: impl Into<String>) -> Error {
    Error(message.into())
}

/// What the build learned about the torch it builds against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Torch {
    /// The interpreter that imported it.
    pub python: String,
    /// `torch.__version__` without a local suffix (`2.15.0`).
    pub version: String,
    pub major: u32,
    pub minor: u32,
    /// `torch.utils.cpp_extension.include_paths()` (or, where that module cannot be imported, the
    /// two directories it lists first).
    pub include_paths: Vec<PathBuf>,
    /// The directory of libtorch_cpu.so and libc10.so.
    pub lib_dir: PathBuf,
    /// `torch.compiled_with_cxx11_abi()`.
    pub cxx11_abi: bool,
}

impl Torch {
    /// Asks `python` about its torch.
    pub fn from_python(python: &str) -> Result<Torch, Error> {
        // torch 2.1's cpp_extension imports pkg_resources, which current setuptools no longer
        // ships (`cargo xtask releases`); its include_paths() is then the two directories every
        // release from 2.1 to 2.15 lists first (the others it adds, TH and THC, regen never uses).
        const QUERY: &str = "import os, torch\n\
            try:\n\
            \x20   from torch.utils.cpp_extension import include_paths\n\
            \x20   includes = include_paths()\n\
            except ImportError:\n\
            \x20   inc = os.path.join(os.path.dirname(torch.__file__), 'include')\n\
            \x20   includes = [inc, os.path.join(inc, 'torch', 'csrc', 'api', 'include')]\n\
            print(torch.__version__.split('+')[0])\n\
            print(os.pathsep.join(includes))\n\
            print(os.path.join(os.path.dirname(torch.__file__), 'lib'))\n\
            print(int(torch.compiled_with_cxx11_abi()))\n";
        let out = Command::new(python).args(["-c", QUERY]).output().map_err(|e| {
            error(format!("regen-build: cannot run {python}: {e}\n  set REGEN_PYTHON to a Python that has torch"))
        })?;
        if !out.status.success() {
            return Err(error(format!(
                "regen-build: {python} cannot import torch:\n{}\n  set REGEN_PYTHON to a Python that has torch \
                 (pip builds: install with `pip install --no-build-isolation`, so the build sees the environment's torch)",
                String::from_utf8_lossy(&out.stderr).trim_end()
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = text.lines().collect();
        let [version, includes, lib_dir, abi] = lines[..] else {
            return Err(error(format!("regen-build: unexpected answer from {python}: {text}")));
        };
        let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        Ok(Torch {
            python: python.to_owned(),
            version: version.to_owned(),
            major: parts.next().unwrap_or(0),
            minor: parts.next().unwrap_or(0),
            include_paths: std::env::split_paths(includes).collect(),
            lib_dir: PathBuf::from(lib_dir),
            cxx11_abi: abi == "1",
        })
    }

    /// The torch of the active Python: `REGEN_PYTHON`, else `PYO3_PYTHON` or
    /// `PYTHON_SYS_EXECUTABLE` (set by setuptools-rust and maturin to the Python running the
    /// build), else `python3`.
    pub fn find() -> Result<Torch, Error> {
        Torch::from_python(&active_python())
    }

    /// This torch's own RegistrationDeclarations.h.
    pub fn header(&self) -> Result<PathBuf, Error> {
        self.include_paths.iter().map(|p| p.join("ATen/RegistrationDeclarations.h")).find(|p| p.is_file()).ok_or_else(
            || error(format!("regen-build: torch {} ships no ATen/RegistrationDeclarations.h", self.version)),
        )
    }

    /// The C++ standard the release was built with and its headers ask for: C++20 from 2.14 on
    /// (2.14's ATen.h has `#error C++20 or later`), C++17 before.
    pub fn cpp_std(&self) -> &'static str {
        if (self.major, self.minor) >= (2, 14) { "c++20" } else { "c++17" }
    }
}

const PYTHON_VARS: [&str; 3] = ["REGEN_PYTHON", "PYO3_PYTHON", "PYTHON_SYS_EXECUTABLE"];

fn active_python() -> String {
    PYTHON_VARS.iter().find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty())).unwrap_or_else(|| "python3".into())
}

/// Where the header comes from.
#[derive(Debug, Clone)]
enum HeaderSource {
    /// The found torch's own.
    Torch,
    /// A pinned file (relative paths: to the crate's manifest directory).
    File(PathBuf),
    /// A pinned release's file, unless `find_torch` and the found torch is another release: then
    /// that torch's own ([`Builder::pinned`]).
    Pinned { release: String, file: PathBuf, find_torch: bool },
}

/// Configures and runs the build of a backend crate.
#[derive(Debug, Clone)]
pub struct Builder {
    manifest_dir: PathBuf,
    config: PathBuf,
    header: HeaderSource,
    checked_in: Option<PathBuf>,
    compile: bool,
    library: bool,
    command: String,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// Defaults: `regen.toml` beside Cargo.toml, the found torch's header, C++ compiled.
    pub fn new() -> Self {
        let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| ".".into()));
        Builder {
            manifest_dir,
            config: PathBuf::from("regen.toml"),
            header: HeaderSource::Torch,
            checked_in: None,
            compile: true,
            library: false,
            command: "cargo build (regen-build regenerates it)".into(),
        }
    }

    /// The backend config (relative to the manifest directory).
    pub fn config(mut self, path: impl Into<PathBuf>) -> Self {
        self.config = path.into();
        self
    }

    /// Generate from this header instead of the found torch's (e.g. a pinned release's).
    pub fn header(mut self, path: impl Into<PathBuf>) -> Self {
        self.header = HeaderSource::File(path.into());
        self
    }

    /// Also compare the generated files with a checked-in copy in `dir`: the build fails with a
    /// diff and `command` when it is stale (`regen --check` semantics; nothing is written there).
    pub fn check_against(mut self, dir: impl Into<PathBuf>, command: impl Into<String>) -> Self {
        self.checked_in = Some(dir.into());
        self.command = command.into();
        self
    }

    /// Generate from the pinned release `release`'s `header` (checked against
    /// [`check_against`](Self::check_against)'s copy), unless `find_torch` and the active Python's
    /// torch is another release: then from that torch's own header, with a cargo warning and no
    /// check (the checked-in copy is the pinned release's). The reference device and kernels build
    /// so: their generated code is checked in for the pinned release, and builds for any other.
    pub fn pinned(mut self, release: impl Into<String>, header: impl Into<PathBuf>, find_torch: bool) -> Self {
        self.header = HeaderSource::Pinned { release: release.into(), file: header.into(), find_torch };
        self
    }

    /// Build a kernel library, a crate of kernel groups other backends take through their
    /// regen.toml's `[reference]`: generate its `groups.rs` only (one trait per group of its
    /// `[implement]`, mounted with `regen_runtime::include_kernel_groups!()`), and compile nothing.
    pub fn kernel_library(mut self) -> Self {
        self.library = true;
        self.compile = false;
        self
    }

    /// Whether to compile and link the C++ (default: yes). Off, nothing needs torch unless the
    /// header comes from it: the crate's Rust builds and tests without PyTorch.
    pub fn compile_cpp(mut self, compile: bool) -> Self {
        self.compile = compile;
        self
    }

    fn resolve(&self, path: &Path) -> PathBuf {
        if path.is_absolute() { path.to_owned() } else { self.manifest_dir.join(path) }
    }

    /// The torch to build against, when one is needed.
    fn torch(&self) -> Result<Option<Torch>, Error> {
        for var in PYTHON_VARS {
            println!("cargo::rerun-if-env-changed={var}");
        }
        match (&self.header, self.compile) {
            (HeaderSource::Pinned { find_torch: false, .. } | HeaderSource::File(_), false) => Ok(None),
            _ => Torch::find().map(Some),
        }
    }

    /// Whether the build is for another release than the pinned one (so its checked-in copy does
    /// not apply).
    fn other_release(&self, torch: Option<&Torch>) -> bool {
        match (&self.header, torch) {
            (HeaderSource::Pinned { release, find_torch: true, .. }, Some(t)) => t.version != *release,
            _ => false,
        }
    }

    fn header_path(&self, torch: Option<&Torch>) -> Result<PathBuf, Error> {
        match (&self.header, torch) {
            (HeaderSource::File(p), _) => Ok(self.resolve(p)),
            (HeaderSource::Pinned { file, .. }, _) if !self.other_release(torch) => Ok(self.resolve(file)),
            (HeaderSource::Torch | HeaderSource::Pinned { .. }, Some(t)) => t.header(),
            (HeaderSource::Torch | HeaderSource::Pinned { .. }, None) => {
                unreachable!("a torch is found whenever the header comes from it")
            }
        }
    }

    /// Every generated file, in memory (nothing is written).
    pub fn generate(&self) -> Result<Vec<OutputFile>, Error> {
        let torch = self.torch()?;
        Ok(self.generate_with(torch.as_ref())?.files)
    }

    fn generate_with(&self, torch: Option<&Torch>) -> Result<regen_core::generate::Generated, Error> {
        let header = self.header_path(torch)?;
        let config = self.resolve(&self.config);
        println!("cargo::rerun-if-changed={}", header.display());
        println!("cargo::rerun-if-changed={}", config.display());
        let generated = if self.library {
            generate_groups(&header, &config, &self.command)
        } else {
            generate(&header, Some(&config), &self.command)
        }
        .map_err(error)?;
        if let Some(reference) = &generated.config.reference {
            // The kernel library's regen.toml decides which ops are registered too (the reference
            // device's own config lists none): without this a kernel added there was not
            // registered until something else reran the script.
            let library = config.parent().unwrap_or(Path::new("")).join(&reference.config.name);
            println!("cargo::rerun-if-changed={}", library.display());
        }
        for line in generated.warnings.lines() {
            println!("cargo::warning={line}");
        }
        Ok(generated)
    }

    /// Runs the whole build-script flow: generate, check, write, compile, link.
    pub fn build(self) -> Result<(), Error> {
        let out_dir = PathBuf::from(
            std::env::var_os("OUT_DIR")
                .ok_or_else(|| error("regen-build: OUT_DIR is not set (run it from build.rs)"))?,
        );
        let torch = self.torch()?;
        let generated = self.generate_with(torch.as_ref())?;
        let other_release = self.other_release(torch.as_ref());
        if let (HeaderSource::Pinned { release, .. }, Some(t), true) = (&self.header, &torch, other_release) {
            println!(
                "cargo::warning=building for torch {}, not the pinned {release}: generated from its own header (the \
                 checked-in copy is the pinned release's)",
                t.version
            );
        }
        if let Some(dir) = self.checked_in.as_ref().filter(|_| !other_release) {
            let dir = self.resolve(dir);
            let ensured =
                ensure(&dir, &generated.files, Mode::Check).map_err(|e| error(format!("{}: {e}", dir.display())))?;
            if !ensured.is_fresh() {
                return Err(error(format!(
                    "{}regen-build: {} file(s) stale, missing or extra in {}; to regenerate, run:\n  {}",
                    ensured.report,
                    ensured.problem_count(),
                    dir.display(),
                    self.command
                )));
            }
        }
        declare_optional_ops(&generated);
        let gen_dir = out_dir.join("regen");
        ensure(&gen_dir, &generated.files, Mode::Write).map_err(|e| error(format!("{}: {e}", gen_dir.display())))?;
        if let Some(torch) = torch.filter(|_| self.compile) {
            compile_and_link(&torch, &gen_dir, &out_dir, &generated.config.device)?;
        }
        Ok(())
    }

    /// [`build`](Self::build), printing the error and failing the build script without a panic
    /// backtrace.
    pub fn run(self) {
        if let Err(e) = self.build() {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}

/// `#[cfg(regen_has_op = "KEY")]` for each `optional` op of the config this release has: the
/// backend's trait methods for them compile only where the generated trait declares them.
fn declare_optional_ops(generated: &regen_core::generate::Generated) {
    let quoted: Vec<String> = generated.config.optional.iter().map(|n| format!("{:?}", n.name)).collect();
    if quoted.is_empty() {
        println!("cargo::rustc-check-cfg=cfg(regen_has_op, values(none()))");
        return;
    }
    println!("cargo::rustc-check-cfg=cfg(regen_has_op, values({}))", quoted.join(", "));
    for n in generated.config.optional.iter().filter(|n| !generated.absent.contains(&n.name)) {
        println!("cargo::rustc-cfg=regen_has_op={:?}", n.name);
    }
}

/// The C++ host glue regen-runtime ships (`DEP_REGEN_RUNTIME_CPP`, from its `links` key).
fn glue_dir() -> Result<PathBuf, Error> {
    std::env::var_os("DEP_REGEN_RUNTIME_CPP").map(PathBuf::from).ok_or_else(|| {
        error("regen-build: DEP_REGEN_RUNTIME_CPP is not set: the crate must depend on regen-runtime (the host glue ships with it)")
    })
}

/// The files of `dir` named `*.{extension}`, sorted (so the build's inputs have one order).
fn files_with_extension(dir: &Path, extension: &str) -> Result<Vec<PathBuf>, Error> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| error(format!("{}: {e}", dir.display())))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == extension))
        .collect();
    files.sort();
    Ok(files)
}

/// Compiles each translation unit unless an object of the same inputs exists, archives them and
/// links the archive whole (static registrations would otherwise be dropped), plus torch.
fn compile_and_link(torch: &Torch, gen_dir: &Path, out_dir: &Path, device: &str) -> Result<(), Error> {
    let glue = glue_dir()?;
    // The generated registrations, then the glue's units (one per role: allocators, guard,
    // generator, hooks, services, init).
    let mut sources = files_with_extension(gen_dir, "cpp")?;
    sources.extend(files_with_extension(&glue, "cpp")?);
    // Every unit may include these; their bytes are part of each object's key.
    let mut headers = vec![gen_dir.join("regen_abi.h"), gen_dir.join("regen_marshal.h")];
    headers.extend(files_with_extension(&glue, "h")?);
    // The glue is an input; the generated files are outputs of inputs already watched (the
    // header, regen.toml), and watching them would rerun this script after every write.
    println!("cargo::rerun-if-changed={}", glue.display());

    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std(torch.cpp_std())
        .define("_GLIBCXX_USE_CXX11_ABI", if torch.cxx11_abi { "1" } else { "0" })
        .define("REGEN_DEVICE_NAME", format!("\"{device}\"").as_str())
        .include(gen_dir)
        .include(&glue)
        .flag_if_supported("-Wno-unused-parameter")
        // Nothing C++ here is called from outside the library (Rust calls through extern "C"
        // and the host table), so nothing is exported: two backends never share a symbol.
        .flag("-fvisibility=hidden")
        .flag("-fvisibility-inlines-hidden")
        .cargo_warnings(false);
    for i in &torch.include_paths {
        build.flag("-isystem").flag(i.to_str().ok_or_else(|| error("regen-build: a non-UTF-8 torch include path"))?);
    }
    let compiler = build.get_compiler();
    let mut key_base = Sha256::new();
    for arg in compiler.args() {
        key_base.update(arg.as_encoded_bytes());
        key_base.update([0]);
    }
    key_base.update(compiler.path().as_os_str().as_encoded_bytes());
    key_base.update(torch.version.as_bytes());
    for h in &headers {
        key_base.update(std::fs::read(h).unwrap_or_default());
    }

    let obj_dir = out_dir.join("regen-obj");
    std::fs::create_dir_all(&obj_dir).map_err(|e| error(format!("{}: {e}", obj_dir.display())))?;
    let mut objects = Vec::new();
    let mut todo = Vec::new();
    for src in &sources {
        let bytes = std::fs::read(src).map_err(|e| error(format!("{}: {e}", src.display())))?;
        let mut key = key_base.clone();
        key.update(&bytes);
        let hex: String = key.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
        let stem = src.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let obj = obj_dir.join(format!("{stem}-{hex}.o"));
        if !obj.is_file() {
            todo.push((src.clone(), obj.clone()));
        }
        objects.push(obj);
    }
    compile_all(&compiler, &todo)?;
    // Objects of older inputs are never used again.
    if let Ok(entries) = std::fs::read_dir(&obj_dir) {
        for e in entries.filter_map(Result::ok) {
            if !objects.contains(&e.path()) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    // Not a cargo directive: recorded in the build script's output file, for tests and the curious.
    println!("regen-build: compiled {} of {} C++ units against torch {}", todo.len(), objects.len(), torch.version);

    let mut archive = cc::Build::new();
    // No `rustc-link-lib` from cc: `link_cdylib` below says where the archive goes.
    archive.cargo_warnings(false).cargo_metadata(false);
    for o in &objects {
        archive.object(o);
    }
    archive.try_compile("regen_backend").map_err(|e| error(format!("regen-build: cannot archive the objects: {e}")))?;
    for arg in cdylib_link_args(&out_dir.join("libregen_backend.a"), &torch.lib_dir) {
        println!("cargo::rustc-link-arg-cdylib={arg}");
    }
    Ok(())
}

/// The linker arguments that put the C++ into the crate's cdylib, the library torch loads, and
/// nowhere else. A shared library may leave the C++ runtime's symbols (`operator delete`,
/// `__cxa_begin_catch`) to the process that loads it, torch's; an executable may not, so with
/// `rustc-link-lib` (which every target of the crate gets) the crate's unit-test binary failed
/// to link, and would have started libtorch to test a Rust kernel. The archive goes in whole:
/// static registrations would otherwise be dropped.
fn cdylib_link_args(archive: &Path, torch_lib: &Path) -> Vec<String> {
    vec![
        "-Wl,--whole-archive".to_owned(),
        archive.display().to_string(),
        "-Wl,--no-whole-archive".to_owned(),
        format!("-L{}", torch_lib.display()),
        "-ltorch_cpu".to_owned(),
        "-lc10".to_owned(),
        format!("-Wl,-rpath,{}", torch_lib.display()),
    ]
}

/// Compiles `(source, object)` pairs, as many at once as the machine has cores.
fn compile_all(compiler: &cc::Tool, todo: &[(PathBuf, PathBuf)]) -> Result<(), Error> {
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get()).max(1);
    for batch in todo.chunks(jobs) {
        let mut children = Vec::new();
        for (src, obj) in batch {
            let tmp = obj.with_extension("o.tmp");
            let mut cmd = compiler.to_command();
            cmd.arg("-c").arg(src).arg("-o").arg(&tmp);
            let child = cmd.spawn().map_err(|e| error(format!("regen-build: cannot start the C++ compiler: {e}")))?;
            children.push((src, obj, tmp, child));
        }
        let mut failed = Vec::new();
        for (src, obj, tmp, child) in children {
            let out = child.wait_with_output().map_err(|e| error(e.to_string()))?;
            if out.status.success() {
                std::fs::rename(&tmp, obj).map_err(|e| error(format!("{}: {e}", obj.display())))?;
            } else {
                failed.push(src.display().to_string());
            }
        }
        if !failed.is_empty() {
            return Err(error(format!("regen-build: C++ compilation failed: {}", failed.join(", "))));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Python whose `torch` is a stub under `dir`, with `cpp_extension` as given.
    fn fake_python(dir: &Path, cpp_extension: &str) -> String {
        let torch = dir.join("torch");
        std::fs::create_dir_all(torch.join("utils")).unwrap();
        std::fs::write(
            torch.join("__init__.py"),
            "__version__ = '2.1.2+cpu'\ndef compiled_with_cxx11_abi():\n    return False\n",
        )
        .unwrap();
        std::fs::write(torch.join("utils/__init__.py"), "").unwrap();
        std::fs::write(torch.join("utils/cpp_extension.py"), cpp_extension).unwrap();
        let python = dir.join("python");
        std::fs::write(&python, format!("#!/bin/sh\nPYTHONPATH={} exec python3 \"$@\"\n", dir.display())).unwrap();
        std::process::Command::new("chmod").arg("+x").arg(&python).status().unwrap();
        python.to_string_lossy().into_owned()
    }

    #[test]
    fn include_paths_come_from_cpp_extension() {
        let dir = tempfile::tempdir().unwrap();
        let python = fake_python(dir.path(), "def include_paths():\n    return ['/a', '/b/c']\n");
        let torch = Torch::from_python(&python).unwrap();
        assert_eq!((torch.version.as_str(), torch.major, torch.minor, torch.cxx11_abi), ("2.1.2", 2, 1, false));
        assert_eq!(torch.include_paths, [PathBuf::from("/a"), PathBuf::from("/b/c")]);
    }

    #[test]
    fn a_cpp_extension_that_cannot_import_leaves_the_two_standard_include_dirs() {
        // torch 2.1's cpp_extension with a setuptools that has no pkg_resources.
        let dir = tempfile::tempdir().unwrap();
        let python = fake_python(dir.path(), "from pkg_resources_that_is_gone import packaging\n");
        let torch = Torch::from_python(&python).unwrap();
        let include = dir.path().join("torch").join("include");
        assert_eq!(torch.include_paths, [include.clone(), include.join("torch/csrc/api/include")]);
        assert_eq!(torch.lib_dir, dir.path().join("torch").join("lib"));
    }
}
