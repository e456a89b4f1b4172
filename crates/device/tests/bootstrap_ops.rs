//! The bootstrap ops are one list, `regen_core::scaffold::BOOTSTRAP_OPS`: `regen new` writes it
//! into a new crate's regen.toml (whose build then checks it against the runtime's
//! `host_memory_bootstrap!`, method for method), and the kernel library's `bootstrap` group, which
//! this device takes through `[reference]`, must begin with it.

use regen_core::config::parse_config;
use regen_core::scaffold::BOOTSTRAP_OPS;

fn implemented(config: regen_core::config::Config) -> Vec<String> {
    config.implement.unwrap().into_iter().map(|n| n.name).collect()
}

#[test]
fn the_scaffold_and_the_kernel_library_list_the_bootstrap_ops() {
    let library = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../kernels/regen.toml"));
    let config = parse_config(&std::fs::read_to_string(library).unwrap()).unwrap();
    let bootstrap = &config.groups.iter().find(|g| g.name.name == "bootstrap").unwrap().ops;
    assert_eq!(&bootstrap[..BOOTSTRAP_OPS.len()], BOOTSTRAP_OPS, "crates/kernels/regen.toml's bootstrap group");

    let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/regen.toml"));
    let device = implemented(regen_core::generate::load_config_file(Some(path)).unwrap());
    for op in BOOTSTRAP_OPS {
        assert!(device.iter().any(|i| i == op), "crates/device/regen.toml does not implement {op}");
    }

    let files = regen_core::scaffold::new_backend("mydev", "/regen", None).unwrap();
    let toml = files.iter().find(|f| f.name == "regen.toml").unwrap();
    let scaffold = implemented(parse_config(std::str::from_utf8(&toml.contents).unwrap()).unwrap());
    assert_eq!(&scaffold[..scaffold.len() - 1], BOOTSTRAP_OPS);
    assert_eq!(scaffold.last().map(String::as_str), Some("add.out"));
}
