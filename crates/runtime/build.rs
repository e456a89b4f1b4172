//! Tells the build scripts of crates depending on regen-runtime where its C++ host glue is:
//! `DEP_REGEN_RUNTIME_CPP` (from `links = "regen_runtime"`), read by regen-build. The glue
//! belongs with this crate because it fills the `regen_host` table that `host.rs` mirrors.

fn main() {
    let cpp = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("cpp");
    println!("cargo::metadata=cpp={}", cpp.display());
    println!("cargo::rerun-if-changed=build.rs");
}
