//! Loads a header N times (for profilers): `cargo run --release --example profile_load -- PATH N`.
fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("header path");
    let n: usize = args.next().map_or(1, |s| s.parse().expect("a count"));
    let bytes = std::fs::read(path).expect("readable header");
    for _ in 0..n {
        std::hint::black_box(regen_core::load_header(&bytes).expect("a valid header"));
    }
}
