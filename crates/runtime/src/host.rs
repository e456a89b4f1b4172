//! Services the C++ host glue provides to Rust (`cpp/regen_host.h`): reference counting,
//! creating device tensors, the metadata changes only c10 can make, and torch.autocast's state.
//! Installed once at load.

use std::ffi::{CStr, c_char, c_void};
use std::sync::OnceLock;

use crate::abi::regen_tensor;
use crate::args::{Generator, Storage, Tensor, TensorRef};
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
    pub parallel_for: unsafe extern "C" fn(i64, i64, unsafe extern "C" fn(*mut c_void, i64, i64), *mut c_void),
    pub num_threads: unsafe extern "C" fn() -> i32,
    pub view_dtype:
        unsafe extern "C" fn(*mut c_void, i32, *const i64, *const i64, i64, i64, *mut regen_tensor) -> *const c_char,
    pub generator_engine: unsafe extern "C" fn(*mut c_void, *mut *mut c_void) -> *const c_char,
    pub autocast_state: unsafe extern "C" fn(*mut bool, *mut i32) -> *const c_char,
    pub set_autocast_enabled: unsafe extern "C" fn(bool) -> *const c_char,
    pub set_autocast_dtype: unsafe extern "C" fn(i32) -> *const c_char,
}

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

/// PyTorch's intra-op thread count (`torch.get_num_threads()`); 1 without the host.
pub fn num_threads() -> usize {
    // SAFETY: a service of the installed table.
    host().map_or(1, |h| unsafe { (h.num_threads)() }.max(1) as usize)
}

/// Runs `f(begin, end)` over chunks covering `0..n`, each at least `grain` long, on PyTorch's
/// intra-op thread pool (`at::parallel_for`), so device and CPU kernels share one warm pool. Without
/// the host (unit tests) it runs `f(0, n)`. A panic in `f` is carried back to the caller's thread
/// (it must not unwind through C++), where the kernel boundary turns it into an error.
pub fn parallel_for<F: Fn(usize, usize) + Sync>(n: usize, grain: usize, f: F) {
    struct Ctx<'a, F> {
        f: &'a F,
        panic: std::sync::Mutex<Option<Box<dyn std::any::Any + Send>>>,
    }
    unsafe extern "C" fn chunk<F: Fn(usize, usize) + Sync>(ctx: *mut c_void, begin: i64, end: i64) {
        // SAFETY: `ctx` is the `Ctx` below, alive until `parallel_for` returns.
        let ctx = unsafe { &*ctx.cast::<Ctx<'_, F>>() };
        let run = std::panic::AssertUnwindSafe(|| (ctx.f)(begin as usize, end as usize));
        if let Err(payload) = std::panic::catch_unwind(run) {
            ctx.panic.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(payload);
        }
    }
    let Some(h) = host() else { return f(0, n) };
    let ctx = Ctx { f: &f, panic: std::sync::Mutex::new(None) };
    // SAFETY: `chunk::<F>` matches the callback type and `ctx` outlives the call.
    unsafe { (h.parallel_for)(n as i64, grain as i64, chunk::<F>, std::ptr::from_ref(&ctx).cast_mut().cast()) };
    if let Some(payload) = ctx.panic.into_inner().unwrap_or_else(|e| e.into_inner()) {
        std::panic::resume_unwind(payload);
    }
}

fn installed() -> Result<&'static Host> {
    host().ok_or_else(|| Error::runtime("regen host services are not installed (is the C++ glue loaded?)"))
}

/// Turns a service's returned message (NULL on success) into a result.
fn status(message: *const c_char) -> Result<()> {
    if message.is_null() {
        return Ok(());
    }
    // SAFETY: the host returns a NUL-terminated message valid until its next call on this thread.
    Err(Error::runtime(unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned()))
}

fn impl_of(t: &TensorRef<'_>) -> Result<*mut c_void> {
    if t.is_defined() {
        Ok(t.raw().impl_)
    } else {
        Err(Error::runtime("an undefined tensor where a tensor is required"))
    }
}

/// Calls a service that describes a tensor into its last argument.
/// A service that failed while the allocator refused memory on this thread (the glue raised
/// c10::OutOfMemoryError for it) fails as out of memory, so that Python sees
/// torch.OutOfMemoryError for a tensor a kernel makes, as for one PyTorch makes.
fn describe(call: impl FnOnce(&Host, *mut regen_tensor) -> *const c_char) -> Result<regen_tensor> {
    let host = installed()?;
    let mut out = regen_tensor::NONE;
    let refused = crate::alloc::refused_on_this_thread();
    status(call(host, &mut out)).map_err(|e| {
        if crate::alloc::refused_on_this_thread() != refused { Error::out_of_memory(e.message()) } else { e }
    })?;
    Ok(out)
}

/// Takes the reference a service handed over.
fn owned(raw: regen_tensor) -> Tensor {
    // SAFETY: the services that create tensors hand over exactly one reference.
    unsafe { Tensor::from_raw(raw) }
}

/// A new contiguous-or-strided tensor on the device.
pub fn empty_strided(sizes: &[i64], strides: &[i64], dtype: i32) -> Result<Tensor> {
    // SAFETY: the slices live for the call; `out` is writable.
    describe(|h, out| unsafe { (h.empty_strided)(sizes.as_ptr(), strides.as_ptr(), sizes.len() as i64, dtype, out) })
        .map(owned)
}

/// Resizes `t` in place to contiguous `sizes`; returns its new description.
pub fn resize(t: &TensorRef<'_>, sizes: &[i64]) -> Result<regen_tensor> {
    let t = impl_of(t)?;
    // SAFETY: as above; `t` is a live TensorImpl.
    describe(|h, out| unsafe { (h.resize)(t, sizes.as_ptr(), sizes.len() as i64, out) })
}

/// A new view of `t`'s storage.
pub fn as_strided(t: &TensorRef<'_>, sizes: &[i64], strides: &[i64], storage_offset: i64) -> Result<Tensor> {
    let t = impl_of(t)?;
    // SAFETY: as above.
    describe(|h, out| unsafe {
        (h.as_strided)(t, sizes.as_ptr(), strides.as_ptr(), sizes.len() as i64, storage_offset, out)
    })
    .map(owned)
}

/// A new view of `t`'s storage as `dtype` (`view_as_real`, `view_as_complex`), with geometry in
/// elements of `dtype`.
pub fn view_dtype(
    t: &TensorRef<'_>,
    dtype: i32,
    sizes: &[i64],
    strides: &[i64],
    storage_offset: i64,
) -> Result<Tensor> {
    let t = impl_of(t)?;
    // SAFETY: as above.
    describe(|h, out| unsafe {
        (h.view_dtype)(t, dtype, sizes.as_ptr(), strides.as_ptr(), sizes.len() as i64, storage_offset, out)
    })
    .map(owned)
}

/// Points `t` at `storage` (None: a new empty storage) with the given geometry, checked as CPU's
/// `set_` checks it (the storage's device, the offset, the bounds); `strides` None: contiguous.
pub fn set_storage(
    t: &TensorRef<'_>,
    storage: Option<Storage>,
    storage_offset: i64,
    sizes: &[i64],
    strides: Option<&[i64]>,
) -> Result<regen_tensor> {
    // The glue reads `sizes.len()` strides; CPU's message for a mismatch.
    if let Some(s) = strides.filter(|s| s.len() != sizes.len()) {
        return Err(Error::runtime(format!("unequal size length ({}) and stride length ({})", sizes.len(), s.len())));
    }
    let t = impl_of(t)?;
    let storage = storage.map_or(std::ptr::null_mut(), |s| s.0.as_ptr());
    let strides = strides.map_or(std::ptr::null(), <[i64]>::as_ptr);
    // SAFETY: as above; `storage` is a live StorageImpl or NULL; `strides` is NULL or holds
    // `sizes.len()` values (checked above).
    describe(|h, out| unsafe {
        (h.set_storage)(t, storage, storage_offset, sizes.as_ptr(), strides, sizes.len() as i64, out)
    })
}

/// Points `t` at `source`'s storage and geometry.
pub fn set_tensor(t: &TensorRef<'_>, source: &TensorRef<'_>) -> Result<regen_tensor> {
    let (t, source) = (impl_of(t)?, impl_of(source)?);
    // SAFETY: as above.
    describe(|h, out| unsafe { (h.set_tensor)(t, source, out) })
}

/// The engine (`rng::Engine`) of a generator passed to a kernel; CPU's error when it belongs to
/// another device.
pub fn generator_engine(generator: Generator) -> Result<*mut crate::rng::Engine> {
    let host = installed()?;
    let mut engine = std::ptr::null_mut();
    // SAFETY: `generator` is a live `at::GeneratorImpl` (a kernel argument); `engine` is writable.
    status(unsafe { (host.generator_engine)(generator.0.as_ptr(), &mut engine) })?;
    if engine.is_null() {
        return Err(Error::runtime("a generator without an engine"));
    }
    Ok(engine.cast())
}

/// torch.autocast's state for the device: whether it is on, and the dtype it casts to (a
/// c10::ScalarType number).
pub fn autocast_state() -> Result<(bool, i32)> {
    let host = installed()?;
    let (mut enabled, mut dtype) = (false, 0);
    // SAFETY: both pointers are writable for the call.
    status(unsafe { (host.autocast_state)(&mut enabled, &mut dtype) })?;
    Ok((enabled, dtype))
}

pub fn set_autocast_enabled(enabled: bool) -> Result<()> {
    // SAFETY: a plain value.
    status(unsafe { (installed()?.set_autocast_enabled)(enabled) })
}

/// Sets the dtype autocast casts to (a c10::ScalarType number); the glue refuses a
/// non-floating one.
pub fn set_autocast_dtype(dtype: i32) -> Result<()> {
    // SAFETY: a plain value; the glue checks it.
    status(unsafe { (installed()?.set_autocast_dtype)(dtype) })
}
