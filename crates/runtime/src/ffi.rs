//! Runs one kernel call for a generated `extern "C"` entry point: an `Err` or a panic becomes a
//! returned `regen_error*` naming the op, so nothing unwinds into C++.
//!
//! A backend must keep the default `panic = "unwind"`: with `abort`, a panicking kernel ends
//! the process before this can turn the panic into an error.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::abi::regen_error;
use crate::error::{Error, Result};

pub fn call(op: &str, f: impl FnOnce() -> Result<()>) -> *mut regen_error {
    let error = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return std::ptr::null_mut(),
        Ok(Err(e)) => e,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string payload".into());
            Error::runtime(format!("kernel panicked: {what}"))
        }
    };
    Box::into_raw(Box::new(error.in_op(op)))
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
        assert!(call("aten::f", || Ok(())).is_null());
        let e = call("aten::f", || Err(Error::not_implemented("no kernel")));
        assert_eq!(message(e), (1, "aten::f: no kernel".to_string()));
        let e = call("aten::g", || panic!("index {} out of range", 7));
        assert_eq!(message(e), (0, "aten::g: kernel panicked: index 7 out of range".to_string()));
        assert_eq!(Error::value("x").kind(), ErrorKind::Value);
    }
}
