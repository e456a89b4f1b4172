//! Parse and lower the pinned release's header (crates/kernels/torch-version; goal: the whole file
//! in under 5 ms).

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench_parse(c: &mut Criterion) {
    let pinned = common::pinned();
    let path = format!("{}/../../fixtures/torch-{pinned}/RegistrationDeclarations.h", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(path).expect("fixture header");
    let mut group = c.benchmark_group(format!("header-{pinned}"));
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("parse", |b| {
        b.iter(|| {
            let text = regen_core::parse::decode_header(&bytes).unwrap();
            regen_core::parse::parse_header(text).unwrap()
        })
    });
    group.bench_function("parse+lower", |b| b.iter(|| regen_core::load_header(&bytes).unwrap()));
    group.finish();
}

criterion_group!(benches, bench_parse);
criterion_main!(benches);
