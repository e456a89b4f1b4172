//! Generates kernels.rs for every fixture header (and one configured variant) into OUT_DIR, and
//! a `mods.rs` that mounts each as a module with `#[path]`, exactly as a backend crate would.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use regen_core::config::{Config, parse_config};

use regen_core::emit_rust::emit_rust;

fn generate(header: &Path, config: &Config, out: &Path) {
    let bytes = std::fs::read(header).expect("fixture header");
    let loaded = regen_core::load_header(&bytes).expect("fixture headers are valid");
    let selection = config.select(&loaded.model).expect("the config names existing ops");
    let note = regen_core::emit::generated_note(&bytes, "cargo build -p regen-kernels-check");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    std::fs::write(out, emit_rust(&selection, config, &note)).unwrap();
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let mut mods = String::new();
    let mut releases: Vec<PathBuf> = std::fs::read_dir(root.join("fixtures"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("RegistrationDeclarations.h").is_file())
        .collect();
    releases.sort();
    for dir in releases {
        let release = dir.file_name().unwrap().to_string_lossy().replace(['.', '-'], "_");
        let header = dir.join("RegistrationDeclarations.h");
        println!("cargo::rerun-if-changed={}", header.display());
        let out = out_dir.join(&release).join("kernels.rs");
        // Each module exports its own entry points, so each needs its own symbol prefix.
        let config = parse_config(&format!("symbol_prefix = \"k_{release}\"")).unwrap();
        generate(&header, &config, &out);
        writeln!(mods, "#[path = {:?}]\npub mod {release};", out.display().to_string()).unwrap();
    }
    // A backend that implements a few ops natively: their methods have no default body.
    let config_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("regen.toml");
    println!("cargo::rerun-if-changed={}", config_path.display());
    let config = parse_config(&std::fs::read_to_string(&config_path).unwrap()).expect("a valid config");
    let out = out_dir.join("configured").join("kernels.rs");
    generate(&root.join("fixtures/torch-2.15.0/RegistrationDeclarations.h"), &config, &out);
    writeln!(mods, "#[path = {:?}]\npub mod configured;", out.display().to_string()).unwrap();
    std::fs::write(out_dir.join("mods.rs"), mods).unwrap();
}
