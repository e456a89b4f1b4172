//! Runs one kernel call for a generated `extern "C"` entry point: counts it, and turns an `Err`
//! or a panic into a returned `regen_error*` naming the op, so nothing unwinds into C++.
//! Also the test hooks every backend gets: how often each kernel ran (so a test can tell a native
//! kernel from the CPU fallback) and making one kernel panic (to test the error path).
//!
//! A backend must keep the default `panic = "unwind"`: with `abort`, a panicking kernel ends
//! the process before this can turn the panic into an error.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::device::launch::{InKernel, Keep, Unsent, drain, retire};
use crate::error::{Error, Result, regen_error};

/// The generated `native_calls` of the installed kernels.
static NATIVE_CALLS: OnceLock<fn(&str) -> Option<u64>> = OnceLock::new();

/// Whether a kernel was asked to panic: checked first, so calls pay one relaxed load.
static PANIC_ARMED: AtomicBool = AtomicBool::new(false);
static PANIC_ON: Mutex<Option<String>> = Mutex::new(None);

/// Called by the generated `install()`: where [`native_calls`] looks up the counters.
pub fn set_native_calls(f: fn(&str) -> Option<u64>) {
    let _ = NATIVE_CALLS.set(f);
}

/// How many times the Rust kernel of `op` (`name.overload`) ran; None when it has none.
pub fn native_calls(op: &str) -> Option<u64> {
    NATIVE_CALLS.get().and_then(|f| f(op))
}

/// Test hook: the kernel of `op` (`name.overload`) panics from its next call on; `None` stops it.
pub fn set_panic_on(op: Option<String>) {
    if let Ok(mut p) = PANIC_ON.lock() {
        PANIC_ARMED.store(op.is_some(), Ordering::Relaxed);
        *p = op;
    }
}

fn panic_if_asked(qualified: &str) {
    if !PANIC_ARMED.load(Ordering::Relaxed) {
        return;
    }
    let key = qualified.split_once("::").map_or(qualified, |(_, key)| key);
    if PANIC_ON.lock().is_ok_and(|p| p.as_deref() == Some(key)) {
        panic!("test hook: {key} was asked to panic");
    }
}

/// Runs the kernel of `op` (`aten::name.overload`), counting the call in `calls`: through the
/// device layer on the current device's current stream ([`crate::device::DeviceLayer::run`]), or
/// directly when it runs on the host (`on_host`: [`crate::device::host_ops`]).
pub fn call(op: &str, calls: &AtomicU64, on_host: bool, f: impl FnOnce() -> Result<()>) -> *mut regen_error {
    calls.fetch_add(1, Ordering::Relaxed);
    drain();
    let result = catch_unwind(AssertUnwindSafe(|| {
        panic_if_asked(op);
        if on_host {
            return f();
        }
        crate::device::run_on(crate::device::kernel_stream(), || {
            let _inside = InKernel::enter();
            f()
        })
    }));
    match settle(result) {
        Ok(()) => std::ptr::null_mut(),
        Err(error) => Box::into_raw(Box::new(error.in_op(op))),
    }
}

/// Queues the in-place kernel of `op` on the current device's current stream
/// ([`crate::device::DeviceLayer::launch`]), counting the call in `calls`: `f` runs on `args`,
/// which own what they point to (`keep`), maybe after this returns ([`crate::device::launch`]).
/// The error returned here is one the layer reports now (an earlier kernel's); the kernel's own
/// comes at a later call.
pub fn launch<T: 'static>(
    op: &'static str,
    calls: &AtomicU64,
    keep: Keep,
    args: Unsent<T>,
    f: impl FnOnce(T) -> Result<()> + Send + 'static,
) -> *mut regen_error {
    calls.fetch_add(1, Ordering::Relaxed);
    drain();
    let task = Box::new(move || {
        let args = args.into_inner();
        let result = settle(catch_unwind(AssertUnwindSafe(|| {
            let _inside = InKernel::enter();
            panic_if_asked(op);
            f(args)
        })));
        retire(keep);
        result.map_err(|e| e.in_op(op))
    });
    let stream = crate::device::kernel_stream();
    match settle(catch_unwind(AssertUnwindSafe(|| crate::device::layer().launch(stream, task)))) {
        Ok(()) => std::ptr::null_mut(),
        Err(error) => Box::into_raw(Box::new(error)),
    }
}

/// A kernel's result, with a panic turned into an error.
fn settle(result: std::thread::Result<Result<()>>) -> Result<()> {
    result.unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-string payload".into());
        Err(Error::runtime(format!("kernel panicked: {what}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use crate::error::{regen_error_free, regen_error_kind, regen_error_message};

    fn message(e: *mut regen_error) -> (i32, String) {
        let mut len = 0;
        // SAFETY: `e` is a live error from `call`; freed right after reading.
        unsafe {
            let kind = regen_error_kind(e);
            let ptr = regen_error_message(e, &mut len);
            let text = String::from_utf8(std::slice::from_raw_parts(ptr.cast::<u8>(), len).to_vec()).unwrap();
            regen_error_free(e);
            (kind, text)
        }
    }

    #[test]
    fn ok_errors_and_panics() {
        let calls = AtomicU64::new(0);
        assert!(call("aten::f", &calls, false, || Ok(())).is_null());
        let e = call("aten::f", &calls, false, || Err(Error::not_implemented("no kernel")));
        assert_eq!(message(e), (1, "aten::f: no kernel".to_string()));
        let e = call("aten::g", &calls, false, || panic!("index {} out of range", 7));
        assert_eq!(message(e), (0, "aten::g: kernel panicked: index 7 out of range".to_string()));
        assert_eq!(Error::value("x").kind(), ErrorKind::Value);
        assert_eq!(calls.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn the_panic_hook_hits_only_its_op() {
        let calls = AtomicU64::new(0);
        set_panic_on(Some("h.out".into()));
        let e = call("aten::h.out", &calls, false, || Ok(()));
        assert_eq!(message(e), (0, "aten::h.out: kernel panicked: test hook: h.out was asked to panic".to_string()));
        assert!(call("aten::h", &calls, true, || Ok(())).is_null());
        set_panic_on(None);
        assert!(call("aten::h.out", &calls, false, || Ok(())).is_null());
    }
}
