//! Which ops run on the host instead of through the device layer's
//! [`run`](super::DeviceLayer::run): they change only a tensor's metadata, or move bytes between
//! memories with the layer's copies themselves ([`super::copies`]), putting any device-side part
//! through `run` on their own. Every other kernel reads and writes device memory, so it runs
//! through `run` on the current stream. Policy as data: each op with its reason.

/// `(qualified name, why it runs on the host)`.
pub const HOST_OPS: &[(&str, &str)] = &[
    ("aten::empty.memory_format", "allocates: metadata and the caching allocator"),
    ("aten::empty_strided", "allocates: metadata and the caching allocator"),
    ("aten::as_strided", "a view: metadata"),
    ("aten::view", "a view: metadata"),
    ("aten::_reshape_alias", "a view: metadata"),
    ("aten::view_as_real", "a view of another dtype: metadata"),
    ("aten::view_as_complex", "a view of another dtype: metadata"),
    ("aten::resize_", "metadata; a storage that grows moves its bytes with the allocator's copy_data (a layer copy)"),
    ("aten::set_.source_Storage", "points a tensor at a storage: metadata"),
    ("aten::set_.source_Storage_storage_offset", "points a tensor at a storage: metadata"),
    ("aten::set_.source_Tensor", "points a tensor at another's storage: metadata"),
    ("aten::set_", "points a tensor at a new empty storage: metadata"),
    ("aten::record_stream", "the caching allocator's bookkeeping"),
    ("aten::copy_", "moves bytes with the layer's copies; a device-side conversion runs through run itself"),
    ("aten::_copy_from", "as copy_"),
    ("aten::_copy_from_and_resize", "as copy_, after a resize (metadata)"),
    ("aten::_local_scalar_dense", "reads one element with a device-to-host copy"),
];

/// Whether the kernel of `qualified` (`aten::name.overload`) runs on the host ([`HOST_OPS`]).
/// A `const fn`, so the generated entry points decide it when they are compiled.
pub const fn runs_on_host(qualified: &str) -> bool {
    listed(HOST_OPS, qualified)
}

/// Whether `qualified` is one of a policy list's ops, in a `const fn`.
pub(crate) const fn listed(list: &[(&str, &str)], qualified: &str) -> bool {
    let mut i = 0;
    while i < list.len() {
        if same(list[i].0, qualified) {
            return true;
        }
        i += 1;
    }
    false
}

/// Whether two names are equal, in a `const fn`.
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_ops_are_found_by_their_qualified_names() {
        // Decided at compile time, as the generated entry points do.
        const { assert!(runs_on_host("aten::copy_")) };
        assert!(runs_on_host("aten::set_"));
        assert!(!runs_on_host("aten::set"), "a prefix is not the op");
        assert!(!runs_on_host("aten::add.out"));
        assert!(!runs_on_host("aten::fill_.Scalar"), "fill_ writes device memory: a kernel");
        // Every name is qualified and listed once.
        for (i, (op, why)) in HOST_OPS.iter().enumerate() {
            assert!(op.starts_with("aten::") && !why.is_empty(), "{op}");
            assert!(HOST_OPS[..i].iter().all(|(o, _)| o != op), "{op} twice");
        }
    }
}
