//! `regen new NAME`: the files of a backend crate that builds and loads as it is (Cargo.toml,
//! build.rs, regen.toml, src/lib.rs with its Rust unit tests, a Python package with
//! pyproject.toml, a smoke test, a test of the example kernel against CPU and a README), from the askama templates in `templates/new/`. The reference device's Python
//! package is rendered from the same templates (`cargo xtask regen` writes and checks it), so the
//! template is exercised by the repository's own end-to-end tests.

use askama::Template;

use crate::write::OutputFile;

/// The ops a device needs before any compute runs, which regen-runtime's
/// `host_memory_bootstrap!()` implements for host memory: the one list (`regen new` writes it into
/// regen.toml, so a scaffolded crate does not build if the macro and this list differ; the kernel
/// library's `bootstrap` group is checked against it by crates/device/tests/bootstrap_ops.rs).
pub const BOOTSTRAP_OPS: &[&str] = &[
    "empty.memory_format",
    "empty_strided",
    "as_strided",
    "view",
    "_reshape_alias",
    "resize_",
    "copy_",
    "_copy_from",
    "_copy_from_and_resize",
    "_local_scalar_dense",
    "set_.source_Storage",
    "set_.source_Storage_storage_offset",
    "set_.source_Tensor",
    "set_",
    "fill_.Scalar",
];

#[derive(Template)]
#[template(path = "new/python/__init__.py", escape = "none")]
struct PyInit<'a> {
    device: &'a str,
    package: &'a str,
    /// `<DEVICE>_FALLBACK_OPS` (the generated registrations read it).
    routing_var: &'a str,
}

#[derive(Template)]
#[template(path = "new/python/_device.py", escape = "none")]
struct PyDevice<'a> {
    device: &'a str,
}

#[derive(Template)]
#[template(path = "new/python/autoload.py", escape = "none")]
struct PyAutoload<'a> {
    device: &'a str,
    package: &'a str,
}

#[derive(Template)]
#[template(path = "new/pyproject.toml", escape = "none")]
struct PyProject<'a> {
    device: &'a str,
    package: &'a str,
    features: &'a [&'a str],
}

#[derive(Template)]
#[template(path = "new/Cargo.toml", escape = "none")]
struct CargoToml<'a> {
    package: &'a str,
    regen_root: &'a str,
    /// Depends on regen-kernels, whose groups regen.toml's `[reference]` takes.
    reference: bool,
}

#[derive(Template)]
#[template(path = "new/build.rs", escape = "none")]
struct BuildRs;

#[derive(Template)]
#[template(path = "new/regen.toml", escape = "none")]
struct RegenToml<'a> {
    device: &'a str,
    bootstrap: &'a [&'a str],
    cpu_less: Vec<CpuLessGroup>,
    regen_root: &'a str,
    reference: bool,
}

/// Ops CPU has no kernel for that share a reason: a new backend excludes them until it
/// implements them, since `fallback = "cpu"` cannot answer them.
struct CpuLessGroup {
    reason: &'static str,
    keys: Vec<&'static str>,
}

/// Those of [`crate::policy::NO_CPU_KERNEL`] a new backend does not implement: not the bootstrap
/// ops, nor those `served` (by the reference kernels it takes).
fn cpu_less_groups(served: &[String]) -> Vec<CpuLessGroup> {
    let mut groups: Vec<CpuLessGroup> = Vec::new();
    let implemented = |key: &str| BOOTSTRAP_OPS.contains(&key) || served.iter().any(|s| s == key);
    for c in crate::policy::NO_CPU_KERNEL.iter().filter(|c| !implemented(c.key)) {
        match groups.iter_mut().find(|g| g.reason == c.reason) {
            Some(g) => g.keys.push(c.key),
            None => groups.push(CpuLessGroup { reason: c.reason, keys: vec![c.key] }),
        }
    }
    groups
}

#[derive(Template)]
#[template(path = "new/src/lib.rs", escape = "none")]
struct LibRs<'a> {
    device: &'a str,
    type_name: &'a str,
}

#[derive(Template)]
#[template(path = "new/src/lib_reference.rs", escape = "none")]
struct LibReferenceRs<'a> {
    device: &'a str,
    type_name: &'a str,
    /// `regen new --accelerator`: the device layer of src/layer.rs is installed.
    layer_type: Option<&'a str>,
}

#[derive(Template)]
#[template(path = "new/src/layer.rs", escape = "none")]
struct LayerRs<'a> {
    device: &'a str,
    layer_type: &'a str,
}

#[derive(Template)]
#[template(path = "new/tests/test_smoke.py", escape = "none")]
struct SmokeTest<'a> {
    device: &'a str,
    package: &'a str,
    reference: bool,
}

#[derive(Template)]
#[template(path = "new/tests/test_add.py", escape = "none")]
struct AddTest<'a> {
    device: &'a str,
    package: &'a str,
}

#[derive(Template)]
#[template(path = "new/tests/test_fallback.py", escape = "none")]
struct FallbackTest<'a> {
    device: &'a str,
    package: &'a str,
}

#[derive(Template)]
#[template(path = "new/README.md", escape = "none")]
struct Readme<'a> {
    device: &'a str,
    package: &'a str,
    accelerator: bool,
}

#[derive(Template)]
#[template(path = "new/gitignore", escape = "none")]
struct GitIgnore;

fn render(t: &impl Template) -> Vec<u8> {
    let mut text = t.render().expect("templates render from plain strings");
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.into_bytes()
}

/// Checks a `regen new` name: it becomes the device name (`device="NAME"`, `torch.NAME`), the
/// Python package and the crate, so it must be a lowercase Python identifier that is not a
/// device torch already has.
pub fn check_name(name: &str) -> Result<(), String> {
    const TAKEN: &[&str] = &[
        "cpu",
        "cuda",
        "mps",
        "xpu",
        "xla",
        "meta",
        "hip",
        "ipu",
        "mkldnn",
        "opengl",
        "opencl",
        "ideep",
        "ve",
        "fpga",
        "maia",
        "mtia",
        "vulkan",
        "lazy",
        "hpu",
        "privateuseone",
        "torch",
        "regen",
    ];
    // torch.device() parses a device type as `[a-zA-Z_]+`: no digits.
    let valid =
        name.starts_with(|c: char| c.is_ascii_lowercase()) && name.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    if !valid {
        return Err(format!(
            "`{name}` cannot name a device: use lowercase letters and `_`, starting with a letter (torch.device accepts no digits; it becomes the device, the Python package and the crate)"
        ));
    }
    if TAKEN.contains(&name) {
        return Err(format!("`{name}` is already a device or package name torch or regen uses; choose another"));
    }
    Ok(())
}

/// The Python package of a device: `__init__.py` (loads the library, renames PrivateUse1,
/// registers `torch.DEVICE`) and `_device.py` (the device module), under `python/PACKAGE/`.
pub fn python_package(device: &str, package: &str) -> Vec<OutputFile> {
    let file = |name: String, contents| OutputFile { name, contents };
    let routing_var = &crate::emit_cpp::routing_var(device);
    vec![
        file(format!("python/{package}/__init__.py"), render(&PyInit { device, package, routing_var })),
        file(format!("python/{package}/_device.py"), render(&PyDevice { device })),
        file(format!("python/{package}_autoload.py"), render(&PyAutoload { device, package })),
    ]
}

/// pyproject.toml of a device whose crate is built with `features`.
pub fn pyproject(device: &str, package: &str, features: &[&str]) -> OutputFile {
    OutputFile { name: "pyproject.toml".into(), contents: render(&PyProject { device, package, features }) }
}

/// Every file of a new backend crate named `name`, whose Cargo.toml points at the regen
/// checkout `regen_root`: with an example kernel of its own (`add.out`), or, given `reference`
/// (the ops of the checkout's reference kernels, crates/kernels/regen.toml), starting from those
/// kernels (`regen new --reference`: regen.toml's `[reference]` takes every group, and the
/// author replaces them op by op).
pub fn new_backend(name: &str, regen_root: &str, reference: Option<&[String]>) -> Result<Vec<OutputFile>, String> {
    check_name(name)?;
    let type_name: String =
        name.split('_').filter(|p| !p.is_empty()).map(|p| p[..1].to_ascii_uppercase() + &p[1..]).collect::<String>()
            + "Device";
    let file = |name: &str, contents| OutputFile { name: name.into(), contents };
    let with_reference = reference.is_some();
    // Ops CPU has no kernel for are excluded, less those the reference kernels serve.
    let cpu_less = cpu_less_groups(reference.unwrap_or_default());
    let regen_toml =
        RegenToml { device: name, bootstrap: BOOTSTRAP_OPS, cpu_less, regen_root, reference: with_reference };
    let mut files = vec![
        file("Cargo.toml", render(&CargoToml { package: name, regen_root, reference: with_reference })),
        file("build.rs", render(&BuildRs)),
        file("regen.toml", render(&regen_toml)),
        match reference {
            None => file("src/lib.rs", render(&LibRs { device: name, type_name: &type_name })),
            Some(_) => {
                file("src/lib.rs", render(&LibReferenceRs { device: name, type_name: &type_name, layer_type: None }))
            }
        },
        pyproject(name, name, &[]),
        file("tests/test_smoke.py", render(&SmokeTest { device: name, package: name, reference: with_reference })),
        file("README.md", render(&Readme { device: name, package: name, accelerator: false })),
        file(".gitignore", render(&GitIgnore)),
    ];
    // The example kernel's tests; the reference kernels are tested by regen's own device suite,
    // and serve the ops these use as the fallback's examples.
    if !with_reference {
        files.push(file("tests/test_add.py", render(&AddTest { device: name, package: name })));
        files.push(file("tests/test_fallback.py", render(&FallbackTest { device: name, package: name })));
    }
    files.extend(python_package(name, name));
    Ok(files)
}

/// `regen new --accelerator`: a backend over the reference kernels (as `reference`, the ops of the
/// checkout's crates/kernels) whose hardware is a device layer of its own, `src/layer.rs`: every
/// method of regen_runtime's `DeviceLayer` written out, doing what host memory does until the
/// author puts their driver's calls there; lib.rs installs it, the README says how to fill it.
pub fn new_accelerator(name: &str, regen_root: &str, reference: &[String]) -> Result<Vec<OutputFile>, String> {
    let mut files = new_backend(name, regen_root, Some(reference))?;
    let type_name = files
        .iter()
        .find(|f| f.name == "src/lib.rs")
        .and_then(|f| std::str::from_utf8(&f.contents).ok())
        .and_then(|text| text.split("pub struct ").nth(1))
        .and_then(|rest| rest.split(';').next())
        .map(str::to_owned)
        .ok_or("the scaffold's src/lib.rs names no device type")?;
    let layer_type = format!("{}Layer", type_name.trim_end_matches("Device"));
    for f in &mut files {
        match f.name.as_str() {
            "src/lib.rs" => {
                f.contents =
                    render(&LibReferenceRs { device: name, type_name: &type_name, layer_type: Some(&layer_type) })
            }
            "README.md" => f.contents = render(&Readme { device: name, package: name, accelerator: true }),
            _ => {}
        }
    }
    files.push(OutputFile {
        name: "src/layer.rs".into(),
        contents: render(&LayerRs { device: name, layer_type: &layer_type }),
    });
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accelerator_backend_has_a_device_layer_to_fill() {
        let files = new_accelerator("my_dev", "/src/regen", &["add.out".to_owned()]).unwrap();
        let text = |n: &str| String::from_utf8(files.iter().find(|f| f.name == n).unwrap().contents.clone()).unwrap();
        assert!(text("src/lib.rs").contains("pub mod layer;"));
        assert!(text("src/lib.rs").contains("layer = layer::MyDevLayer"), "{}", text("src/lib.rs"));
        let layer = text("src/layer.rs");
        assert!(layer.contains("impl DeviceLayer for MyDevLayer"));
        for method in [
            "fn allocate",
            "unsafe fn free",
            "fn host_addressable",
            "unsafe fn copy",
            "fn run",
            "fn create_stream",
            "fn record_event",
            "fn elapsed_ms",
        ] {
            assert!(layer.contains(method), "{method}");
        }
        assert!(text("README.md").contains("src/layer.rs") && text("regen.toml").contains("[reference]"));
        assert!(!text("src/lib.rs").contains("{{"), "rendered");
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("mydev").is_ok() && check_name("my_dev").is_ok());
        for bad in ["MyDev", "2dev", "my-dev", "mydev2", "", "cuda", "regen", "dev ice"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_new_backend_names_its_device_everywhere() {
        let files = new_backend("my_dev", "/src/regen", None).unwrap();
        let text = |n: &str| String::from_utf8(files.iter().find(|f| f.name == n).unwrap().contents.clone()).unwrap();
        assert!(text("Cargo.toml").contains("regen-runtime = { path = \"/src/regen/crates/runtime\" }"));
        assert!(text("regen.toml").contains("device = \"my_dev\"") && text("regen.toml").contains("\"add.out\""));
        for op in BOOTSTRAP_OPS {
            assert!(text("regen.toml").contains(&format!("\"{op}\"")), "{op}");
        }
        // Ops the CPU fallback cannot serve are excluded until the author implements them.
        let exclude = text("regen.toml").split("exclude = [").nth(1).unwrap().to_owned();
        assert!(exclude.contains("\"convolution_overrideable\"") && exclude.contains("\"_thnn_fused_lstm_cell\""));
        assert!(!exclude.contains("\"_copy_from\""));
        assert!(text("src/lib.rs").contains("impl kernels::Kernels for MyDevDevice"));
        // The example kernel comes with Rust unit tests (`cargo test`) and a test against CPU.
        assert!(text("src/lib.rs").contains("#[cfg(test)]") && text("src/lib.rs").contains("MyDevDevice.add_out("));
        assert!(
            text("tests/test_add.py").contains("import my_dev")
                && text("tests/test_add.py").contains("DEVICE = \"my_dev\"")
        );
        assert!(text("python/my_dev/__init__.py").contains("torch.utils.rename_privateuse1_backend(\"my_dev\")"));
        assert!(
            text("pyproject.toml").contains("target = \"my_dev._my_dev\"")
                && !text("pyproject.toml").contains("features")
        );
        assert!(pyproject("regen", "regen_device", &["torch"]).contents.ends_with(b"features = [\"torch\"]\n"));
    }
}
