//! The whole generation of the pinned release (crates/kernels/torch-version) in memory (parse,
//! lower, select, and every emitter), then each phase alone. The whole-process comparison with
//! torchgen's gen_backend_stubs (goal: at least 50x faster, at most 16 MiB peak RSS) is
//! `cargo xtask footprint` (benches/footprint.py).

use criterion::{Criterion, criterion_group, criterion_main};
use regen_core::config::Config;
use regen_core::emit::{emit_all, generated_note};

#[path = "../tests/common/mod.rs"]
mod common;

fn bench_generate(c: &mut Criterion) {
    let pinned = common::pinned();
    let path = format!("{}/../../fixtures/torch-{pinned}/RegistrationDeclarations.h", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(path).expect("fixture header");
    let config = Config::default();
    let mut group = c.benchmark_group(format!("generate-{pinned}"));
    group.sample_size(20);
    group.bench_function("all outputs", |b| {
        b.iter(|| {
            let loaded = regen_core::load_header(&bytes).unwrap();
            let selection = config.select(&loaded.model).unwrap();
            let note = generated_note(&bytes, "bench");
            emit_all(&loaded.model, &selection, &config, &note)
        })
    });
    let loaded = regen_core::load_header(&bytes).unwrap();
    let selection = config.select(&loaded.model).unwrap();
    group.bench_function("parse and lower", |b| b.iter(|| regen_core::load_header(&bytes).unwrap()));
    group.bench_function("select", |b| b.iter(|| config.select(&loaded.model).unwrap()));
    group.bench_function("ops.json only", |b| {
        b.iter(|| regen_core::emit_manifest::emit_manifest(&loaded.model, "bench", config.ops_json))
    });
    group.bench_function("C++ only", |b| b.iter(|| regen_core::emit_cpp::emit_cpp(&selection, &config, "bench")));
    group.bench_function("kernels.rs only", |b| {
        b.iter(|| regen_core::emit_rust::emit_rust(&selection, &config, "bench"))
    });
    group.finish();
}

criterion_group!(benches, bench_generate);
criterion_main!(benches);
