//! Every fixture release's generated `kernels.rs`, compiled as a module of a crate that depends
//! on regen-runtime: `torch_2_15_0`, ..., `configured` (2.15.0 with `regen.toml`) and `awkward`
//! (names reserved in Rust, custom ops: `awkward/`) and `grouped` (kernel groups: `grouped/`).
//! Building this crate is the test that generated Rust compiles, warning-free, for each release.

include!(concat!(env!("OUT_DIR"), "/mods.rs"));
