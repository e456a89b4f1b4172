//! Generates the kernel groups' traits (`groups.rs`) from this crate's regen.toml: for the pinned
//! release (`torch-version`) from that fixture's header, checked against `generated/` (refreshed
//! by `cargo xtask regen`); with the `torch` feature and another installed torch, from that
//! torch's own header, so the traits have the signatures the backend built with it calls.

fn main() {
    println!("cargo::rerun-if-changed=torch-version");
    let pinned = std::fs::read_to_string("torch-version").expect("torch-version");
    let pinned = pinned.trim();
    regen_build::Builder::new()
        .kernel_library()
        .pinned(
            pinned,
            format!("../../fixtures/torch-{pinned}/RegistrationDeclarations.h"),
            std::env::var_os("CARGO_FEATURE_TORCH").is_some(),
        )
        .check_against("generated", "cargo xtask regen")
        .run();
}
