//! The `regen` command line: reads a RegistrationDeclarations.h and writes the generated outputs.
//!
//! Exit status: 0 on success, 2 on bad input or usage (1 is kept for "differences found").

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use regen_core::emit_manifest::emit_manifest;
use regen_core::write::{OutputFile, write_outputs};

/// Generate what an out-of-tree PyTorch backend needs from RegistrationDeclarations.h.
#[derive(Parser, Debug)]
#[command(name = "regen", version)]
struct Cli {
    /// The header, as found in a torch wheel at torch/include/ATen/RegistrationDeclarations.h.
    #[arg(long, value_name = "PATH")]
    header: PathBuf,
    /// The output directory; nothing in it changes unless the whole run succeeds.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let shown = cli.header.display().to_string();
    let bytes = match std::fs::read(&cli.header) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{shown}: error: cannot read the header: {e}");
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let loaded = match regen_core::load_header(&bytes) {
        Ok(loaded) => loaded,
        Err(errors) => {
            for d in &errors {
                eprint!("{}", d.render(&shown));
            }
            eprintln!("regen: {} error(s); nothing was written", errors.len());
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    for w in &loaded.warnings {
        eprint!("{}", w.render(&shown));
    }
    let files = [OutputFile { name: "ops.json".into(), contents: emit_manifest(&loaded.model).into_bytes() }];
    if let Err(e) = write_outputs(&cli.out, &files) {
        eprintln!("{}: error: cannot write the outputs: {e}", cli.out.display());
        return ExitCode::from(EXIT_BAD_INPUT);
    }
    let model = &loaded.model;
    eprintln!(
        "regen: {} ops ({} required) from {shown} -> {}",
        model.ops.len(),
        model.required().count(),
        cli.out.join("ops.json").display()
    );
    ExitCode::SUCCESS
}
