//! Generates the registrations and `kernels.rs` for the torch of the active Python (its own
//! RegistrationDeclarations.h, so they always match) from regen.toml, and compiles the C++
//! against it. pip builds find torch through the Python running pip.

fn main() {
    regen_build::Builder::new().run();
}
