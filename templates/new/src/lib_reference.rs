//! The "{{ device }}" device: PyTorch's PrivateUse1 backend whose kernels are regen's reference
//! kernels (the regen-kernels crate), Rust on host memory.
//!
//! regen-build (build.rs) generates `kernels.rs` from regen.toml: the entry points of the ops
//! `[reference]` takes call `regen_kernels::Reference` directly; an op you list under `implement`
//! becomes a method of the generated `Kernels` trait (or of your group's trait), which you write
//! here, and replaces the reference's kernel for that op. This file hands the kernels to the C++
//! host glue, which calls `regen_backend_init` when torch loads the library.

{% if let Some(layer_type) = layer_type %}/// The device's hardware: memory, copies, kernel launch, streams and events (fill it in).
pub mod layer;

{% endif %}/// The generated traits and entry points.
pub mod kernels {
    regen_runtime::include_kernels!();
}

/// The device's kernels.
pub struct {{ type_name }};

/// The device's own kernels: none yet, every native op is a reference kernel.
impl kernels::Kernels for {{ type_name }} {}

{% if let Some(layer_type) = layer_type %}regen_runtime::export_kernels!(kernels, {{ type_name }}, devices = 1, layer = layer::{{ layer_type }});{% else %}regen_runtime::export_kernels!(kernels, {{ type_name }});{% endif %}
