//! With the `torch` feature: compiles the generated registrations (generated/*.cpp) and the host
//! glue (cpp/host.cpp) against the torch installed in the active Python environment, the way
//! torch-sys does, and links them whole-archive so their static registrations survive.
//! Without it, nothing: the crate builds and tests without PyTorch.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    #[cfg(feature = "torch")]
    torch::build();
}

#[cfg(feature = "torch")]
mod torch {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    const QUERY: &str = "import os, torch\n\
        from torch.utils import cpp_extension as c\n\
        print(os.pathsep.join(c.include_paths()))\n\
        print(os.path.join(os.path.dirname(torch.__file__), 'lib'))\n\
        print(int(torch.compiled_with_cxx11_abi()))\n";

    pub fn build() {
        println!("cargo::rerun-if-env-changed=REGEN_PYTHON");
        let python = std::env::var("REGEN_PYTHON").unwrap_or_else(|_| "python3".into());
        let out =
            Command::new(&python).args(["-c", QUERY]).output().unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
        assert!(out.status.success(), "{python} cannot import torch:\n{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).expect("UTF-8 paths");
        let mut lines = text.lines();
        let includes: Vec<PathBuf> = std::env::split_paths(lines.next().expect("include paths")).collect();
        let lib_dir = lines.next().expect("library dir").to_owned();
        let abi = lines.next().expect("cxx11 abi").to_owned();

        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let generated = root.join("generated");
        let mut sources: Vec<PathBuf> = std::fs::read_dir(&generated)
            .expect("generated/")
            .map(|e| e.expect("dir entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "cpp"))
            .collect();
        sources.sort();
        sources.push(root.join("cpp/host.cpp"));
        for s in &sources {
            println!("cargo::rerun-if-changed={}", s.display());
        }
        for h in ["cpp/regen_host.h", "generated/regen_marshal.h", "generated/regen_abi.h", "generated/regen_kernels.h"]
        {
            println!("cargo::rerun-if-changed={}", root.join(h).display());
        }
        let mut build = cc::Build::new();
        build
            .cpp(true)
            .std("c++20")
            .define("_GLIBCXX_USE_CXX11_ABI", abi.as_str())
            .include(&generated)
            .include(root.join("cpp"))
            .files(&sources)
            .flag_if_supported("-Wno-unused-parameter")
            // Static registrations (TORCH_LIBRARY_IMPL, REGISTER_ALLOCATOR) must not be dropped.
            .link_lib_modifier("+whole-archive");
        for i in &includes {
            build.flag("-isystem").flag(i.to_str().expect("UTF-8 include path"));
        }
        build.compile("regen_host");
        println!("cargo::rustc-link-search=native={lib_dir}");
        println!("cargo::rustc-link-lib=dylib=torch_cpu");
        println!("cargo::rustc-link-lib=dylib=c10");
        println!("cargo::rustc-cdylib-link-arg=-Wl,-rpath,{lib_dir}");
    }
}
