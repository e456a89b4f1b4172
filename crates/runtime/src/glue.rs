//! The table of services the C++ host glue installs once at load (`cpp/regen_host.h`), and the
//! two that need no tensor types: PyTorch's intra-op thread count and the parallel loop sized by it
//! (on [`crate::pool`]). The typed services over tensors are [`crate::host`]'s.

use std::ffi::{CStr, c_char, c_void};
use std::sync::OnceLock;

use crate::abi::regen_tensor;
use crate::error::{Error, Result};

/// Mirror of `regen_host` in `cpp/regen_host.h`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Host {
    pub size: usize,
    pub retain: unsafe extern "C" fn(*mut c_void),
    pub release: unsafe extern "C" fn(*mut c_void),
    pub empty_strided: unsafe extern "C" fn(*const i64, *const i64, i64, i32, *mut regen_tensor) -> *const c_char,
    pub resize: unsafe extern "C" fn(*mut c_void, *const i64, i64, *mut regen_tensor) -> *const c_char,
    pub as_strided:
        unsafe extern "C" fn(*mut c_void, *const i64, *const i64, i64, i64, *mut regen_tensor) -> *const c_char,
    pub set_storage: unsafe extern "C" fn(
        *mut c_void,
        *mut c_void,
        i64,
        *const i64,
        *const i64,
        i64,
        *mut regen_tensor,
    ) -> *const c_char,
    pub set_tensor: unsafe extern "C" fn(*mut c_void, *mut c_void, *mut regen_tensor) -> *const c_char,
    pub num_threads: unsafe extern "C" fn() -> i32,
    pub view_dtype:
        unsafe extern "C" fn(*mut c_void, i32, *const i64, *const i64, i64, i64, *mut regen_tensor) -> *const c_char,
    pub generator_engine: unsafe extern "C" fn(*mut c_void, *mut *mut c_void) -> *const c_char,
    pub autocast_state: unsafe extern "C" fn(*mut bool, *mut i32) -> *const c_char,
    pub set_autocast_enabled: unsafe extern "C" fn(bool) -> *const c_char,
    pub set_autocast_dtype: unsafe extern "C" fn(i32) -> *const c_char,
    /// NUL-terminated, static.
    pub device_name: *const c_char,
    pub record_stream: unsafe extern "C" fn(*mut c_void, i64) -> *const c_char,
    pub empty_cpu: unsafe extern "C" fn(*const i64, i64, i32, bool, *mut regen_tensor) -> *const c_char,
    pub cpu_copy: unsafe extern "C" fn(*mut c_void, *mut c_void) -> *const c_char,
    pub is_pinned: unsafe extern "C" fn(*const c_void) -> bool,
}

// SAFETY: the table's pointers are functions and a static string, valid on any thread.
unsafe impl Send for Host {}
// SAFETY: as above; nothing in the table is mutated after installation.
unsafe impl Sync for Host {}

static HOST: OnceLock<Host> = OnceLock::new();

/// Installs the host services; the first installation wins.
pub fn set_host(host: Host) -> bool {
    HOST.set(host).is_ok()
}

/// Installs the table the C++ glue passes at load (a NULL table is ignored).
///
/// # Safety
/// `host` is NULL or points to a `regen_host` that lives as long as the process.
pub unsafe fn init(host: *const Host) {
    // SAFETY: per the contract.
    if let Some(h) = unsafe { host.as_ref() } {
        set_host(*h);
    }
}

pub fn host() -> Option<&'static Host> {
    HOST.get()
}

/// How many times `torch.set_num_threads` has run, as the Python package reports them.
static THREADS_GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Called by the Python package after each `torch.set_num_threads`: OpenMP keeps the intra-op
/// thread count per thread and `torch.set_num_threads` sets the caller's, so the glue has every
/// other thread that runs kernels (autograd's thread for the device, which read the count when it
/// started) re-read it before its next parallel loop (`services.cpp`'s `sync_num_threads`).
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_threads_changed() {
    THREADS_GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// The count [`regen_runtime_threads_changed`] keeps, for the glue.
#[unsafe(no_mangle)]
pub extern "C" fn regen_runtime_threads_generation() -> u64 {
    THREADS_GENERATION.load(std::sync::atomic::Ordering::Relaxed)
}

/// PyTorch's intra-op thread count (`torch.get_num_threads()`); 1 without the host.
pub fn num_threads() -> usize {
    // SAFETY: a service of the installed table.
    host().map_or(1, |h| unsafe { (h.num_threads)() }.max(1) as usize)
}

/// Runs `f(begin, end)` over chunks covering `0..n`, each at least `grain` long, on
/// [`num_threads`] threads of the device's pool ([`crate::pool`]; chunks as `at::parallel_for`
/// makes them). Without the host (unit tests) it runs `f(0, n)`. A panic in `f` is carried back to
/// the caller's thread, where the kernel boundary turns it into an error.
pub fn parallel_for<F: Fn(usize, usize) + Sync>(n: usize, grain: usize, f: F) {
    crate::pool::run(n, grain, num_threads(), f);
}

pub(crate) fn installed() -> Result<&'static Host> {
    host().ok_or_else(|| Error::runtime("regen host services are not installed (is the C++ glue loaded?)"))
}

/// Turns a service's returned message (NULL on success) into a result.
pub(crate) fn status(message: *const c_char) -> Result<()> {
    if message.is_null() {
        return Ok(());
    }
    // SAFETY: the host returns a NUL-terminated message valid until its next call on this thread.
    Err(Error::runtime(unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned()))
}
