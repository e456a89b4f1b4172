//! The "{{ device }}" device: PyTorch's PrivateUse1 backend whose kernels are Rust, on host memory.
//!
//! regen-build (build.rs) generates `kernels.rs` from regen.toml: a `Kernels` trait with one
//! method per op listed under `implement`. This file implements it and hands it to the C++ host
//! glue, which calls `regen_backend_init` when torch loads the library.

use regen_runtime::bootstrap::with_size;
use regen_runtime::view::{Value, View, broadcast_shapes, check_can_cast, for_each_offset, load, result_type, store};
use regen_runtime::{Result, Scalar, TensorRef};

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

    /// `out = self + alpha * other`, broadcasting, in any real dtype (through f64 or i64).
    fn add_out(&self, self_: TensorRef<'_>, other: TensorRef<'_>, alpha: Scalar, out: TensorRef<'_>) -> Result<()> {
        let (a, b) = (View::of(&self_)?, View::of(&other)?);
        check_can_cast(result_type(&[&a, &b]), View::of(&out)?.dtype)?;
        let shape = broadcast_shapes(&[&a.sizes, &b.sizes])?;
        with_size(&out, &shape, |out| {
            let o = View::of(out)?;
            let (sa, sb) = (a.broadcast_strides(&shape), b.broadcast_strides(&shape));
            let size = |v: &View| v.dtype.size() as isize;
            let alpha = alpha.to_f64();
            for_each_offset(&shape, [&sa, &sb, &o.strides], |[ia, ib, io]| {
                // SAFETY: the views describe live tensors; every offset is inside them.
                unsafe {
                    let x = load(a.dtype, a.data.offset(ia * size(&a))).as_f64();
                    let y = load(b.dtype, b.data.offset(ib * size(&b))).as_f64();
                    store(o.dtype, o.data.offset(io * size(&o)), Value::Float(x + alpha * y));
                }
            });
            Ok(())
        })
    }
}

regen_runtime::export_kernels!(kernels, {{ type_name }});
