//! Builds the reference device exactly as `regen new` builds a backend, with two differences:
//! for the pinned release (`torch-version`) the header is that fixture's and the generated code is
//! checked in (`generated/`, refreshed by `cargo xtask regen`): a stale copy fails the build.
//! Built against another installed torch (`cargo xtask e2e --torch X.Y.Z`), it generates from that
//! torch's own header, as any backend does; regen.toml's `optional` ops cover the releases' gaps.
//! Without the `torch` feature nothing is compiled against torch, so the Rust builds and tests
//! without it.

fn main() {
    println!("cargo::rerun-if-changed=torch-version");
    let pinned = std::fs::read_to_string("torch-version").expect("torch-version");
    let pinned = pinned.trim();
    let compile = std::env::var_os("CARGO_FEATURE_TORCH").is_some();
    let builder = regen_build::Builder::new().compile_cpp(compile);
    let other_release = match compile.then(regen_build::Torch::find) {
        Some(Ok(torch)) => (torch.version != pinned).then_some(torch.version),
        Some(Err(e)) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
        None => None,
    };
    match other_release {
        Some(version) => {
            println!(
                "cargo::warning=building for torch {version}, not the pinned {pinned}: generated from its own header \
                 (generated/ is the pinned release's)"
            );
            builder.run();
        }
        None => builder
            .header(format!("../../fixtures/torch-{pinned}/RegistrationDeclarations.h"))
            .check_against("generated", "cargo xtask regen")
            .run(),
    }
}
