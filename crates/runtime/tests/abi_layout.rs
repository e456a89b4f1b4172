//! The Rust mirror has the same layout as the C header regen emits: a C program built from
//! `templates/regen_abi.h` prints every struct's size and every field's offset.

use std::mem::{offset_of, size_of};
use std::path::Path;
use std::process::Command;

use regen_runtime::abi::*;

macro_rules! layout {
    ($out:ident, $t:ident { $($field:ident $(as $c:ident)?),* }) => {{
        $out.push(format!("{} size {}", stringify!($t), size_of::<$t>()));
        $( $out.push(format!("{}.{} {}", stringify!($t), layout!(@c $field $($c)?), offset_of!($t, $field))); )*
        let c_fields: &[&str] = &[$( layout!(@c $field $($c)?) ),*];
        $out.push(String::new());
        (stringify!($t), c_fields)
    }};
    (@c $field:ident $c:ident) => { stringify!($c) };
    (@c $field:ident) => { stringify!($field) };
}

#[test]
fn rust_mirror_matches_the_c_header() {
    let mut rust = Vec::new();
    let structs = [
        layout!(rust, regen_tensor { impl_ as impl, data, sizes, strides, dim, storage_offset, dtype, device_type, device_index, flags }),
        layout!(rust, regen_tensor_list { ptr, len }),
        layout!(rust, regen_scalar { tag, reserved, f, imag, i }),
        layout!(rust, regen_scalar_list { ptr, len }),
        layout!(rust, regen_opt_i64 { has_value, value }),
        layout!(rust, regen_opt_f64 { has_value, value }),
        layout!(rust, regen_opt_bool { has_value, value }),
        layout!(rust, regen_i64_list { ptr, len, has_value }),
        layout!(rust, regen_f64_list { ptr, len, has_value }),
        layout!(rust, regen_bool_list { ptr, len }),
        layout!(rust, regen_str { ptr, len }),
        layout!(rust, regen_str_list { ptr, len, has_value }),
        layout!(rust, regen_device { type_ as type, index }),
        layout!(rust, regen_stream { id, device_type, device_index }),
        layout!(rust, regen_tensor_sink { ctx, push }),
        layout!(rust, regen_i64_sink { ctx, push }),
    ];
    let mut program = String::from("#include <stdio.h>\n#include \"regen_abi.h\"\nint main(void) {\n");
    for (name, fields) in structs {
        program.push_str(&format!("  printf(\"{name} size %zu\\n\", sizeof({name}));\n"));
        for f in fields {
            program.push_str(&format!("  printf(\"{name}.{f} %zu\\n\", offsetof({name}, {f}));\n"));
        }
        program.push_str("  printf(\"\\n\");\n");
    }
    program.push_str(
        "  printf(\"%d %d %d %d %d %d %d %d %d %d %d %d %d\\n\", REGEN_ABI_VERSION, REGEN_SCALAR_NONE, REGEN_SCALAR_FLOAT, \
         REGEN_SCALAR_INT, REGEN_SCALAR_BOOL, REGEN_SCALAR_COMPLEX, REGEN_ERROR_RUNTIME, REGEN_ERROR_NOT_IMPLEMENTED, \
         REGEN_ERROR_VALUE, REGEN_ERROR_TYPE, REGEN_ERROR_INDEX, REGEN_ERROR_OUT_OF_MEMORY, \
         REGEN_TENSOR_WRAPPED_NUMBER);\n  return 0;\n}\n",
    );
    rust.push(format!(
        "{REGEN_ABI_VERSION} {REGEN_SCALAR_NONE} {REGEN_SCALAR_FLOAT} {REGEN_SCALAR_INT} {REGEN_SCALAR_BOOL} \
         {REGEN_SCALAR_COMPLEX} {REGEN_ERROR_RUNTIME} {REGEN_ERROR_NOT_IMPLEMENTED} {REGEN_ERROR_VALUE} {REGEN_ERROR_TYPE} \
         {REGEN_ERROR_INDEX} {REGEN_ERROR_OUT_OF_MEMORY} {REGEN_TENSOR_WRAPPED_NUMBER}"
    ));

    let dir = tempfile::tempdir().unwrap();
    let templates = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates");
    std::fs::write(dir.path().join("layout.c"), program).unwrap();
    let exe = dir.path().join("layout");
    let status = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Werror", "-I"])
        .arg(&templates)
        .arg(dir.path().join("layout.c"))
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("a C compiler (cc) is installed");
    assert!(status.success());
    let out = Command::new(&exe).output().unwrap();
    let c = String::from_utf8(out.stdout).unwrap();
    assert_eq!(c.trim_end(), rust.join("\n").trim_end());
}
