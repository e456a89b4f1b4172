//! Generates kernels.rs for every fixture header (and a configured variant, and awkward names) into OUT_DIR with
//! regen-core's library call (the one the CLI and regen-build make), and a `mods.rs` that mounts
//! each as a module with `#[path]`, as a backend crate with checked-in code would.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use regen_core::generate::{generate, generate_groups};

/// Generates with `config` (a regen.toml path) and writes kernels.rs into `out`.
fn kernels(header: &Path, config: &Path, out: &Path) {
    let generated =
        generate(header, Some(config), "cargo build -p regen-kernels-check").unwrap_or_else(|e| panic!("{e}"));
    let file = generated.files.iter().find(|f| f.name == "kernels.rs").expect("kernels.rs is generated");
    std::fs::create_dir_all(out).unwrap();
    std::fs::write(out.join("kernels.rs"), &file.contents).unwrap();
}

/// The torch release the project is pinned to (crates/kernels/torch-version, one line X.Y.Z).
fn pinned() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/torch-version");
    println!("cargo::rerun-if-changed={}", path.display());
    std::fs::read_to_string(&path).expect("crates/kernels/torch-version").trim().to_owned()
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // The configured variants generate from the pinned release's header, which their configs name
    // ops of.
    let pinned_header = root.join(format!("fixtures/torch-{}/RegistrationDeclarations.h", pinned()));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let mut mods = String::new();
    let mut releases: Vec<PathBuf> = std::fs::read_dir(root.join("fixtures"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("RegistrationDeclarations.h").is_file())
        .collect();
    releases.sort();
    let mut mount = |name: &str, dir: &Path| {
        writeln!(mods, "#[path = {:?}]\npub mod {name};", dir.join("kernels.rs").display().to_string()).unwrap();
    };
    for dir in releases {
        let release = dir.file_name().unwrap().to_string_lossy().replace(['.', '-'], "_");
        let header = dir.join("RegistrationDeclarations.h");
        println!("cargo::rerun-if-changed={}", header.display());
        // The full skeleton: every required op. Each module exports its own entry points, so
        // each needs its own symbol prefix.
        let out = out_dir.join(&release);
        let config = out_dir.join(format!("{release}.toml"));
        std::fs::write(&config, format!("symbol_prefix = \"k_{release}\"\n")).unwrap();
        kernels(&header, &config, &out);
        mount(&release, &out);
    }
    // A backend that implements a few ops natively: only they get methods and entry points.
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("regen.toml");
    println!("cargo::rerun-if-changed={}", config.display());
    let out = out_dir.join("configured");
    kernels(&pinned_header, &config, &out);
    mount("configured", &out);
    // Names legal in a schema and reserved in Rust (`type`, `unsafe`, `_`, a parameter named like
    // the module's items), and custom ops (crates/core/tests/names.rs checks their text).
    let awkward = Path::new(env!("CARGO_MANIFEST_DIR")).join("awkward");
    println!("cargo::rerun-if-changed={}", awkward.display());
    let out = out_dir.join("awkward");
    kernels(&awkward.join("RegistrationDeclarations.h"), &awkward.join("regen.toml"), &out);
    mount("awkward", &out);
    // Kernel groups: a trait per group, and `Kernels` their sum with the ungrouped custom op.
    let grouped = Path::new(env!("CARGO_MANIFEST_DIR")).join("grouped/regen.toml");
    println!("cargo::rerun-if-changed={}", grouped.display());
    let out = out_dir.join("grouped");
    kernels(&pinned_header, &grouped, &out);
    mount("grouped", &out);
    // A kernel library's group traits (groups.rs), and a backend that calls them (`[reference]`).
    let header = &pinned_header;
    let library = Path::new(env!("CARGO_MANIFEST_DIR")).join("library/regen.toml");
    println!("cargo::rerun-if-changed={}", library.display());
    let generated =
        generate_groups(header, &library, "cargo build -p regen-kernels-check").unwrap_or_else(|e| panic!("{e}"));
    let out = out_dir.join("library");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("groups.rs"), &generated.files[0].contents).unwrap();
    writeln!(mods, "#[path = {:?}]\npub mod library;", out.join("groups.rs").display().to_string()).unwrap();
    let referencing = Path::new(env!("CARGO_MANIFEST_DIR")).join("referencing/regen.toml");
    println!("cargo::rerun-if-changed={}", referencing.display());
    let out = out_dir.join("referencing");
    kernels(header, &referencing, &out);
    writeln!(mods, "#[path = {:?}]\npub mod referencing;", out.join("kernels.rs").display().to_string()).unwrap();
    std::fs::write(out_dir.join("mods.rs"), mods).unwrap();
}
