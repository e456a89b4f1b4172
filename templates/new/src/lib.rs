//! The "{{ device }}" device: PyTorch's PrivateUse1 backend whose kernels are Rust, on host memory.
//!
//! regen-build (build.rs) generates `kernels.rs` from regen.toml: a `Kernels` trait with one
//! method per op listed under `implement`. This file implements it and hands it to the C++ host
//! glue, which calls `regen_backend_init` when torch loads the library.

use regen_runtime::dtype::{Category, DType};
use regen_runtime::element::{Element, binary};
use regen_runtime::view::{View, result_type};
use regen_runtime::{Error, Result, Scalar, TensorRef};

/// The generated trait and entry points.
pub mod kernels {
    regen_runtime::include_kernels!();
}

/// The device's kernels.
pub struct {{ type_name }};

impl kernels::Kernels for {{ type_name }} {
    // Creating tensors, views, copies to and from CPU, resize_, set_, fill_, item(): the
    // runtime's host-memory defaults. A device with memory of its own writes these instead.
    regen_runtime::host_memory_bootstrap!();

    /// `out = self + alpha * other`, broadcasting, exactly as CPU computes it: in the operands'
    /// promoted dtype, then cast to `out`'s. Dtypes without an arm here (float8, uint16,
    /// complex32, ...) are refused by `View::of`, with their name.
    fn add_out(&self, self_: TensorRef<'_>, other: TensorRef<'_>, alpha: Scalar, out: TensorRef<'_>) -> Result<()> {
        let dtype = result_type(&[&View::of(&self_)?, &View::of(&other)?]);
        check_alpha(dtype, alpha)?;
        // One arm per dtype of the runtime's table, with `T` its Rust type.
        regen_runtime::dispatch_all!(dtype, |T| add::<T>(&self_, &other, alpha, &out))
    }
}

/// The kernel, once for every dtype: `x + alpha * y` in `T`'s arithmetic (`T::Math`: integers
/// wrap around as CPU's do, float16 and bfloat16 compute in float and round once).
fn add<T: Element>(a: &TensorRef<'_>, b: &TensorRef<'_>, alpha: Scalar, out: &TensorRef<'_>) -> Result<()> {
    let alpha = T::scalar(alpha)?;
    binary::<T>(a, b, out, |x, y| x + alpha * y)
}

/// ATen's `alpha_check`: alpha may not be of a kind the result's dtype cannot hold.
fn check_alpha(dtype: DType, alpha: Scalar) -> Result<()> {
    let message = match (alpha, dtype.category()) {
        (Scalar::Bool(_), c) if c != Category::Bool => "Boolean alpha only supported for Boolean results.",
        (Scalar::Float(_), Category::Bool | Category::Integral) => {
            "For integral input tensors, argument alpha must not be a floating point number."
        }
        (Scalar::Complex(..), c) if c != Category::Complex => {
            "For non-complex input tensors, argument alpha must not be a complex number."
        }
        _ => return Ok(()),
    };
    Err(Error::runtime(message))
}

regen_runtime::export_kernels!(kernels, {{ type_name }});

/// Kernels are plain Rust: `cargo test` runs them on Rust buffers, without torch or Python.
#[cfg(test)]
mod tests {
    use super::*;
    use kernels::Kernels;
    use regen_runtime::abi::regen_tensor;
    use regen_runtime::element::Complex;
    use regen_runtime::view::contiguous_strides;

    /// A contiguous tensor over `data` (the kernels see only what `regen_tensor` describes).
    fn tensor<T: Element>(data: &mut [T], sizes: &[i64], strides: &[i64]) -> regen_tensor {
        regen_tensor {
            // Any non-null pointer: the kernel never touches the TensorImpl of a correctly sized out.
            impl_: std::ptr::NonNull::<u8>::dangling().as_ptr().cast(),
            data: data.as_mut_ptr().cast(),
            sizes: sizes.as_ptr(),
            strides: strides.as_ptr(),
            dim: sizes.len() as i64,
            dtype: T::DTYPE.scalar_type().0,
            ..regen_tensor::NONE
        }
    }

    fn run_add<T: Element>(a: &mut [T], a_sizes: &[i64], b: &mut [T], b_sizes: &[i64], alpha: Scalar, out: &mut [T], out_sizes: &[i64]) -> Result<()> {
        let (sa, sb, so) = (contiguous_strides(a_sizes), contiguous_strides(b_sizes), contiguous_strides(out_sizes));
        let (a, b, o) = (tensor(a, a_sizes, &sa), tensor(b, b_sizes, &sb), tensor(out, out_sizes, &so));
        // SAFETY: each description holds its buffer, which outlives the call.
        let [a, b, o] = [&a, &b, &o].map(|t| unsafe { TensorRef::from_raw(t) });
        {{ type_name }}.add_out(a, b, alpha, o)
    }

    #[test]
    fn add_is_exact_in_int64_and_complex() {
        let big = (1i64 << 62) + 1;
        let mut out = [0i64; 2];
        run_add(&mut [big, i64::MAX], &[2], &mut [1, 1], &[2], Scalar::Int(1), &mut out, &[2]).unwrap();
        assert_eq!(out, [big + 1, i64::MIN], "exact above 2^53, wrapping around like CPU");

        let mut out = [Complex::new(0.0f64, 0.0); 2];
        let mut x = [Complex::new(1.0, 2.0), Complex::new(-0.5, 0.25)];
        run_add(&mut x.clone(), &[2], &mut x, &[2], Scalar::Complex(0.0, 1.0), &mut out, &[2]).unwrap();
        // (1+2j) + 1j*(1+2j) = -1+3j; (-0.5+0.25j) + 1j*(-0.5+0.25j) = -0.75-0.25j
        assert_eq!(out, [Complex::new(-1.0, 3.0), Complex::new(-0.75, -0.25)]);
    }

    #[test]
    fn add_broadcasts_and_checks_alpha() {
        let mut out = [0i32; 6];
        run_add(&mut [1, 2, 3], &[1, 3], &mut [10, 20], &[2, 1], Scalar::Int(-2), &mut out, &[2, 3]).unwrap();
        assert_eq!(out, [-19, -18, -17, -39, -38, -37]);
        let err = run_add(&mut [1i32], &[1], &mut [1], &[1], Scalar::Float(0.5), &mut [0], &[1]).unwrap_err();
        assert!(err.message().contains("alpha must not be a floating point number"), "{err}");
    }
}
