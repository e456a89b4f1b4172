//! Calls generated `extern "C"` entry points the way the C++ wrappers do, with ABI values
//! built by hand: arguments arrive typed, results land in their slots, and errors and panics
//! come back as `regen_error*` naming the op.

use std::ffi::c_void;
use std::sync::Mutex;

use regen_kernels_check::configured as generated;
use regen_runtime::abi::*;
use regen_runtime::error::regen_error;
use regen_runtime::{Error, Result, Scalar, TensorList, TensorRef};

/// What the kernels saw, for the test to inspect.
static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Backend;

impl generated::Kernels for Backend {
    fn add_out(&self, self_: TensorRef<'_>, other: TensorRef<'_>, alpha: Scalar, out: TensorRef<'_>) -> Result<()> {
        SEEN.lock().unwrap().push(format!(
            "add.out {:?} {:?} {alpha:?} {:?}",
            self_.sizes(),
            other.strides(),
            out.dtype()
        ));
        Ok(())
    }
    fn max_dim_max(&self, _: TensorRef<'_>, dim: i64, keepdim: bool, _: TensorRef<'_>, _: TensorRef<'_>) -> Result<()> {
        Err(Error::index(format!("dim {dim} out of range (keepdim={keepdim})")))
    }
    fn _local_scalar_dense(&self, self_: TensorRef<'_>) -> Result<Scalar> {
        Ok(Scalar::Float(self_.numel() as f64 + 0.5))
    }
    fn split_with_sizes_copy_out(
        &self,
        _: TensorRef<'_>,
        split_sizes: &[i64],
        dim: i64,
        out: TensorList<'_>,
    ) -> Result<()> {
        SEEN.lock().unwrap().push(format!("split {split_sizes:?} {dim} {}", out.len()));
        Ok(())
    }
    fn sym_numel(&self, _: TensorRef<'_>) -> Result<i64> {
        panic!("deliberate panic")
    }
}

/// A fake tensor: `impl_` is a dangling but non-NULL marker (the kernels never dereference it).
fn tensor(sizes: &'static [i64], strides: &'static [i64], dtype: i32) -> regen_tensor {
    regen_tensor {
        impl_: std::ptr::NonNull::<u8>::dangling().as_ptr().cast::<c_void>(),
        sizes: sizes.as_ptr(),
        strides: strides.as_ptr(),
        dim: sizes.len() as i64,
        dtype,
        ..regen_tensor::NONE
    }
}

fn take_error(e: *mut regen_error) -> Option<(i32, String)> {
    if e.is_null() {
        return None;
    }
    let mut len = 0;
    // SAFETY: a live error from an entry point, freed after reading.
    unsafe {
        let kind = regen_runtime::error::regen_error_kind(e);
        let ptr = regen_runtime::error::regen_error_message(e, &mut len);
        let text = String::from_utf8_lossy(std::slice::from_raw_parts(ptr.cast::<u8>(), len)).into_owned();
        regen_runtime::error::regen_error_free(e);
        Some((kind, text))
    }
}

#[test]
fn entry_points_marshal_arguments_results_and_errors() {
    let a = tensor(&[2, 3], &[3, 1], 6);
    let b = tensor(&[3], &[1], 6);
    let alpha = regen_scalar { tag: REGEN_SCALAR_INT, reserved: 0, f: 0.0, imag: 0.0, i: 2 };

    // Before install, every call is a clear error rather than a crash.
    // SAFETY: arguments are valid for the call, as the C++ wrapper guarantees.
    let before = take_error(unsafe { generated::k_configured_add_out(a, b, alpha, a) });
    assert_eq!(
        before,
        Some((REGEN_ERROR_RUNTIME, "aten::add.out: no kernels installed: call install() at load time".into()))
    );

    assert!(generated::install(Backend));
    assert!(!generated::install(Backend), "the first installation wins");

    // SAFETY: as above.
    assert_eq!(take_error(unsafe { generated::k_configured_add_out(a, b, alpha, a) }), None);
    assert_eq!(SEEN.lock().unwrap().last().unwrap(), "add.out [2, 3] [1] Int(2) ScalarType(6)");

    let mut slot = regen_scalar { tag: REGEN_SCALAR_NONE, reserved: 0, f: 0.0, imag: 0.0, i: 0 };
    // SAFETY: as above; `slot` is writable.
    assert_eq!(take_error(unsafe { generated::k_configured__local_scalar_dense(a, &mut slot) }), None);
    assert_eq!((slot.tag, slot.f), (REGEN_SCALAR_FLOAT, 6.5));

    let sizes = [1i64, 2];
    let outs = [b, b];
    let split = regen_i64_list { ptr: sizes.as_ptr(), len: 2, has_value: true };
    let out_list = regen_tensor_list { ptr: outs.as_ptr(), len: 2 };
    // SAFETY: as above.
    assert_eq!(take_error(unsafe { generated::k_configured_split_with_sizes_copy_out(a, split, 0, out_list) }), None);
    assert_eq!(SEEN.lock().unwrap().last().unwrap(), "split [1, 2] 0 2");

    // An error of a chosen kind, prefixed with the op.
    // SAFETY: as above.
    let e = take_error(unsafe { generated::k_configured_max_dim_max(a, 5, true, a, a) });
    assert_eq!(e, Some((REGEN_ERROR_INDEX, "aten::max.dim_max: dim 5 out of range (keepdim=true)".into())));

    // A panic becomes a RuntimeError naming the op; the process goes on.
    let mut numel = 0i64;
    // SAFETY: as above.
    let e = take_error(unsafe { generated::k_configured_sym_numel(a, &mut numel) });
    assert_eq!(e, Some((REGEN_ERROR_RUNTIME, "aten::sym_numel: kernel panicked: deliberate panic".into())));

    // Only registered ops have entry points, and each counts its calls.
    assert_eq!(generated::OPS.len(), 5);
    assert!(!generated::OPS.contains(&"mul.out"));
    assert_eq!(generated::native_calls("mul.out"), None);
    assert_eq!(generated::native_calls("split_with_sizes_copy.out"), Some(1));
}

/// Without a config every required op is registered; a method the backend does not override
/// raises NotImplementedError naming the op.
#[test]
fn skeleton_methods_default_to_not_implemented() {
    use regen_kernels_check::torch_2_15_0 as skeleton;
    struct Skeleton;
    impl skeleton::Kernels for Skeleton {}
    assert!(skeleton::OPS.len() > 800, "{}", skeleton::OPS.len());
    let a = tensor(&[2], &[1], 6);
    // SAFETY: as in the test above.
    let e = take_error(unsafe { skeleton::k_torch_2_15_0_mul_out(a, a, a) });
    assert_eq!(
        e,
        Some((REGEN_ERROR_RUNTIME, "aten::mul.out: no kernels installed: call install() at load time".into()))
    );
    assert!(skeleton::install(Skeleton));
    // SAFETY: as above.
    let e = take_error(unsafe { skeleton::k_torch_2_15_0_mul_out(a, a, a) });
    assert_eq!(
        e,
        Some((
            REGEN_ERROR_NOT_IMPLEMENTED,
            "aten::mul.out: no kernel in this backend (list `mul.out` under `implement` in regen.toml)".into()
        ))
    );
    assert_eq!(skeleton::native_calls("mul.out"), Some(2));
}

/// With kernel groups, each entry point calls its group's trait method on the installed kernels,
/// the ops in no group (here a custom op) `Kernels`' own.
#[test]
fn grouped_entry_points_call_their_groups_methods() {
    use regen_kernels_check::grouped;
    struct Grouped;
    impl grouped::ArithKernels for Grouped {
        fn add_out(&self, _: TensorRef<'_>, _: TensorRef<'_>, _: Scalar, _: TensorRef<'_>) -> Result<()> {
            Err(Error::value("arith's add.out"))
        }
        fn _local_scalar_dense(&self, self_: TensorRef<'_>) -> Result<Scalar> {
            Ok(Scalar::Int(self_.numel()))
        }
    }
    impl grouped::ShapeKernels for Grouped {
        fn split_with_sizes_copy_out(&self, _: TensorRef<'_>, _: &[i64], dim: i64, _: TensorList<'_>) -> Result<()> {
            Err(Error::index(format!("shape's split, dim {dim}")))
        }
    }
    impl grouped::Kernels for Grouped {
        fn grouped_twice(&self, _: TensorRef<'_>) -> Result<regen_runtime::Tensor> {
            Err(Error::not_implemented("the custom op"))
        }
    }
    assert_eq!(grouped::OPS, ["grouped::twice", "add.out", "_local_scalar_dense", "split_with_sizes_copy.out"]);
    assert!(grouped::install(Grouped));
    let a = tensor(&[2, 3], &[3, 1], 6);
    let alpha = regen_scalar { tag: REGEN_SCALAR_INT, reserved: 0, f: 0.0, imag: 0.0, i: 1 };
    // SAFETY: arguments are valid for the call, as the C++ wrapper guarantees.
    let e = take_error(unsafe { grouped::k_grouped_add_out(a, a, alpha, a) });
    assert_eq!(e, Some((REGEN_ERROR_VALUE, "aten::add.out: arith's add.out".into())));
    let mut slot = regen_scalar { tag: REGEN_SCALAR_NONE, reserved: 0, f: 0.0, imag: 0.0, i: 0 };
    // SAFETY: as above; `slot` is writable.
    assert_eq!(take_error(unsafe { grouped::k_grouped__local_scalar_dense(a, &mut slot) }), None);
    assert_eq!((slot.tag, slot.i), (REGEN_SCALAR_INT, 6));
    let sizes = [1i64];
    let split = regen_i64_list { ptr: sizes.as_ptr(), len: 1, has_value: true };
    let outs = regen_tensor_list { ptr: [a].as_ptr(), len: 1 };
    // SAFETY: as above.
    let e = take_error(unsafe { grouped::k_grouped_split_with_sizes_copy_out(a, split, 1, outs) });
    assert_eq!(e, Some((REGEN_ERROR_INDEX, "aten::split_with_sizes_copy.out: shape's split, dim 1".into())));
    let mut out = regen_tensor::NONE;
    // SAFETY: as above; `out` is writable.
    let e = take_error(unsafe { grouped::k_grouped_grouped_twice(a, &mut out) });
    assert_eq!(e, Some((REGEN_ERROR_NOT_IMPLEMENTED, "grouped::twice: the custom op".into())));
    // Each entry point counts its calls, in the order of OPS.
    assert_eq!(grouped::native_calls("add.out"), Some(1));
    assert_eq!(grouped::native_calls("split_with_sizes_copy.out"), Some(1));
    assert_eq!(grouped::native_calls("grouped::twice"), Some(1));
}

/// A backend that takes a kernel library's groups (`[reference]`): their entry points call the
/// library's `Reference` directly, and an op the backend lists itself calls the backend's kernel.
#[test]
fn a_librarys_entry_points_call_its_reference_and_the_backends_own_ops_the_backend() {
    use regen_kernels_check::referencing;
    struct Referencing;
    impl referencing::OwnKernels for Referencing {
        fn _local_scalar_dense(&self, self_: TensorRef<'_>) -> Result<Scalar> {
            Ok(Scalar::Int(self_.numel() * 10))
        }
    }
    impl referencing::Kernels for Referencing {}
    assert_eq!(referencing::OPS, ["_local_scalar_dense", "add.out", "split_with_sizes_copy.out"]);
    let a = tensor(&[2, 3], &[3, 1], 6);
    let alpha = regen_scalar { tag: REGEN_SCALAR_INT, reserved: 0, f: 0.0, imag: 0.0, i: 1 };
    // The library's kernels need no installed backend: they are called on its own type.
    // SAFETY: arguments are valid for the call, as the C++ wrapper guarantees.
    let e = take_error(unsafe { referencing::k_referencing_add_out(a, a, alpha, a) });
    assert_eq!(e, Some((REGEN_ERROR_VALUE, "aten::add.out: the library's add.out".into())));
    assert!(referencing::install(Referencing));
    let sizes = [1i64];
    let split = regen_i64_list { ptr: sizes.as_ptr(), len: 1, has_value: true };
    let outs = regen_tensor_list { ptr: [a].as_ptr(), len: 1 };
    // SAFETY: as above.
    let e = take_error(unsafe { referencing::k_referencing_split_with_sizes_copy_out(a, split, 1, outs) });
    assert_eq!(e, Some((REGEN_ERROR_INDEX, "aten::split_with_sizes_copy.out: the library's split, dim 1".into())));
    let mut slot = regen_scalar { tag: REGEN_SCALAR_NONE, reserved: 0, f: 0.0, imag: 0.0, i: 0 };
    // SAFETY: as above; `slot` is writable.
    assert_eq!(take_error(unsafe { referencing::k_referencing__local_scalar_dense(a, &mut slot) }), None);
    assert_eq!((slot.tag, slot.i), (REGEN_SCALAR_INT, 60));
    assert_eq!(referencing::native_calls("add.out"), Some(1));
    assert_eq!(referencing::native_calls("split_with_sizes_copy.out"), Some(1));
    assert_eq!(referencing::native_calls("_local_scalar_dense"), Some(1));
}
