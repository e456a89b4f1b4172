//! Diffing two full headers (2.13.0 -> 2.15.0): the comparison of loaded models (with the default
//! config's selection from each, or the device's), and the whole job including parsing both
//! headers. Goal: under 20 ms.

use criterion::{Criterion, criterion_group, criterion_main};
use regen_core::diff::{diff_models, diff_with_config};

fn bench_diff(c: &mut Criterion) {
    let read = |r: &str| {
        std::fs::read(format!("{}/../../fixtures/torch-{r}/RegistrationDeclarations.h", env!("CARGO_MANIFEST_DIR")))
            .expect("fixture header")
    };
    let (old_bytes, new_bytes) = (read("2.13.0"), read("2.15.0"));
    let old = regen_core::load_header(&old_bytes).unwrap().model;
    let new = regen_core::load_header(&new_bytes).unwrap().model;
    let mut group = c.benchmark_group("diff-2.13.0-2.15.0");
    group.bench_function("models", |b| b.iter(|| diff_models(&old, &new)));
    let device = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../device/regen.toml");
    let config = regen_core::generate::load_config_file(Some(&device)).expect("the device's config");
    group.bench_function("models, device config", |b| b.iter(|| diff_with_config(&old, &new, &config)));
    group.bench_function("parse both + diff", |b| {
        b.iter(|| {
            let old = regen_core::load_header(&old_bytes).unwrap().model;
            let new = regen_core::load_header(&new_bytes).unwrap().model;
            diff_models(&old, &new)
        })
    });
    // As `regen diff` runs it: the two headers parse on two threads.
    group.bench_function("parse both in parallel + diff", |b| {
        b.iter(|| {
            let (old, new) = std::thread::scope(|s| {
                let old = s.spawn(|| regen_core::load_header(&old_bytes).unwrap().model);
                let new = regen_core::load_header(&new_bytes).unwrap().model;
                (old.join().unwrap(), new)
            });
            diff_models(&old, &new)
        })
    });
    group.finish();
}

criterion_group!(benches, bench_diff);
criterion_main!(benches);
