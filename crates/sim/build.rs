//! Builds `sim` as `regen new` builds a backend: its code generated from a torch header and
//! regen.toml into OUT_DIR. For the pinned release (crates/kernels/torch-version) without the
//! `torch` feature the header is that fixture's, so the Rust builds and tests without torch;
//! with it, the installed torch's own header, as any backend does.

fn main() {
    println!("cargo::rerun-if-changed=../kernels/torch-version");
    let pinned = std::fs::read_to_string("../kernels/torch-version").expect("crates/kernels/torch-version");
    let pinned = pinned.trim();
    let compile = std::env::var_os("CARGO_FEATURE_TORCH").is_some();
    regen_build::Builder::new()
        .compile_cpp(compile)
        .pinned(pinned, format!("../../fixtures/torch-{pinned}/RegistrationDeclarations.h"), compile)
        .run();
}
