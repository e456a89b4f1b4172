//! Builds the reference device exactly as `regen new` builds a backend, with two differences:
//! for the pinned release (crates/kernels/torch-version, the release the reference kernels' traits
//! are checked in for) the header is that fixture's and the generated code is checked in
//! (`generated/`, refreshed by `cargo xtask regen`): a stale copy fails the build. Built against
//! another installed torch (`cargo xtask e2e --torch X.Y.Z`), it generates from that torch's own
//! header, as any backend does (and so do the reference kernels, through the `torch` feature);
//! their regen.toml's `optional` ops cover the releases' gaps. Without the `torch` feature nothing
//! is compiled against torch, so the Rust builds and tests without it.

fn main() {
    println!("cargo::rerun-if-changed=../kernels/torch-version");
    let pinned = std::fs::read_to_string("../kernels/torch-version").expect("crates/kernels/torch-version");
    let pinned = pinned.trim();
    let compile = std::env::var_os("CARGO_FEATURE_TORCH").is_some();
    regen_build::Builder::new()
        .compile_cpp(compile)
        .pinned(pinned, format!("../../fixtures/torch-{pinned}/RegistrationDeclarations.h"), compile)
        .check_against("generated", "cargo xtask regen")
        .run();
}
