//! regen-core: reads PyTorch's RegistrationDeclarations.h into the op model every emitter shares.
//!
//! The pipeline runs one way: [`parse`] (lines -> C++ and schema ASTs) -> [`lower`] (checks
//! and classification -> [`ir::Model`]) -> emitters (`emit_*`) -> [`write`](mod@write). Each phase reports all
//! of its errors, sorted by position, and the next phase does not start after an error.

pub mod abi;
pub mod autocast;
pub mod config;
pub mod custom;
pub mod diagnostic;
pub mod diff;
pub mod emit;
pub mod emit_autocast;
pub mod emit_cpp;
pub mod emit_custom;
pub mod emit_manifest;
pub mod emit_rust;
pub mod generate;
pub mod ir;
pub mod lower;
mod parallel;
pub mod parse;
pub mod policy;
pub mod rust_name;
pub mod scaffold;
pub mod select;
pub mod suggest;
pub mod write;

use diagnostic::Diagnostic;

/// A model and the warnings met while building it.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub model: ir::Model,
    pub warnings: Vec<Diagnostic>,
}

/// Runs parse and lower over the bytes of a header.
pub fn load_header(bytes: &[u8]) -> Result<Loaded, Vec<Diagnostic>> {
    let text = parse::decode_header(bytes).map_err(|d| vec![d])?;
    let parsed = parse::parse_header(text)?;
    let model = lower::lower_model(parsed.decls, text)?;
    Ok(Loaded { model, warnings: parsed.warnings })
}
