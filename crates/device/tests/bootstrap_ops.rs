//! The bootstrap ops are listed in three places that must agree: the runtime's kernels
//! (`regen_runtime::bootstrap::OPS`, what `host_memory_bootstrap!` implements), the regen.toml
//! `regen new` writes, and this device's regen.toml (whose `[reference]` takes the reference
//! kernels' `bootstrap` group).

use regen_core::config::parse_config;

#[test]
fn runtime_scaffold_and_device_agree_on_the_bootstrap_ops() {
    assert_eq!(regen_runtime::bootstrap::OPS, regen_core::scaffold::BOOTSTRAP_OPS);
    let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/regen.toml"));
    let config = regen_core::generate::load_config_file(Some(path)).unwrap();
    let implemented: Vec<String> = config.implement.unwrap().into_iter().map(|n| n.name).collect();
    for op in regen_runtime::bootstrap::OPS {
        assert!(implemented.iter().any(|i| i == op), "crates/device/regen.toml does not implement {op}");
    }
    let files = regen_core::scaffold::new_backend("mydev", "/regen", None).unwrap();
    let toml = files.iter().find(|f| f.name == "regen.toml").unwrap();
    let config = parse_config(std::str::from_utf8(&toml.contents).unwrap()).unwrap();
    let implemented: Vec<String> = config.implement.unwrap().into_iter().map(|n| n.name).collect();
    assert_eq!(&implemented[..implemented.len() - 1], regen_runtime::bootstrap::OPS);
    assert_eq!(implemented.last().map(String::as_str), Some("add.out"));
}
