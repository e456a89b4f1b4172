//! The whole 2.15.0 generation in memory: parse, lower, select, and every emitter (ops.json,
//! C++ headers and registrations, kernels.rs). torchgen's gen_backend_stubs takes about 1.1 s
//! for its 858 ops on this machine; the goal is at least 100x faster.

use criterion::{Criterion, criterion_group, criterion_main};
use regen_core::config::Config;
use regen_core::emit::{emit_all, generated_note};

fn bench_generate(c: &mut Criterion) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/torch-2.15.0/RegistrationDeclarations.h");
    let bytes = std::fs::read(path).expect("fixture header");
    let config = Config::default();
    let mut group = c.benchmark_group("generate-2.15.0");
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
    group.bench_function("kernels.rs only", |b| {
        b.iter(|| regen_core::emit_rust::emit_rust(&selection, &config, "bench"))
    });
    group.finish();
}

criterion_group!(benches, bench_generate);
criterion_main!(benches);
