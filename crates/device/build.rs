//! Builds the reference device exactly as `regen new` builds a backend, with two differences:
//! the header is the pinned release's (`torch-version`), and the generated code is checked in
//! (`generated/`, refreshed by `cargo xtask regen`): a stale copy fails the build. Without the
//! `torch` feature nothing is compiled against torch, so the Rust builds and tests without it.

fn main() {
    println!("cargo::rerun-if-changed=torch-version");
    let pinned = std::fs::read_to_string("torch-version").expect("torch-version");
    regen_build::Builder::new()
        .header(format!("../../fixtures/torch-{}/RegistrationDeclarations.h", pinned.trim()))
        .check_against("generated", "cargo xtask regen")
        .compile_cpp(std::env::var_os("CARGO_FEATURE_TORCH").is_some())
        .run();
}
