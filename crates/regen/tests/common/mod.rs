//! What the test files share.

/// The torch release the project is pinned to (crates/kernels/torch-version, one line X.Y.Z,
/// which `cargo xtask bump` moves): the release whose fixture header a test means by "the real
/// header" when it is about no particular release.
pub fn pinned() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../kernels/torch-version");
    std::fs::read_to_string(path).expect("crates/kernels/torch-version").trim().to_owned()
}
