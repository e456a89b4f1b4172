//! Services the C++ host provides to Rust: reference counting of tensor handles (and, with the
//! runtime's host glue, tensor creation). Installed once by the host at load time.

use std::ffi::c_void;
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy)]
pub struct Host {
    /// Adds a reference to a `c10::TensorImpl`.
    pub retain: unsafe extern "C" fn(*mut c_void),
    /// Drops a reference to a `c10::TensorImpl`.
    pub release: unsafe extern "C" fn(*mut c_void),
}

static HOST: OnceLock<Host> = OnceLock::new();

/// Installs the host services; the first installation wins.
pub fn set_host(host: Host) -> bool {
    HOST.set(host).is_ok()
}

pub fn host() -> Option<&'static Host> {
    HOST.get()
}
