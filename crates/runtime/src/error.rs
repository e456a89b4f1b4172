//! The error a kernel returns, and the C functions the C++ side uses to read and free it.

use std::ffi::c_char;
use std::fmt;

/// Which Python exception the error becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Runtime,
    NotImplemented,
    Value,
    Type,
    Index,
    /// torch.OutOfMemoryError: device memory ran out (the host's, or the allocator's limit).
    OutOfMemory,
}

impl ErrorKind {
    fn code(self) -> i32 {
        use crate::abi::*;
        match self {
            ErrorKind::Runtime => REGEN_ERROR_RUNTIME,
            ErrorKind::NotImplemented => REGEN_ERROR_NOT_IMPLEMENTED,
            ErrorKind::Value => REGEN_ERROR_VALUE,
            ErrorKind::Type => REGEN_ERROR_TYPE,
            ErrorKind::Index => REGEN_ERROR_INDEX,
            ErrorKind::OutOfMemory => REGEN_ERROR_OUT_OF_MEMORY,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Opaque to C (`regen_abi.h`): a boxed [`Error`], read and freed through the functions below.
#[allow(non_camel_case_types)]
pub type regen_error = Error;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into() }
    }
    pub fn runtime(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Runtime, message)
    }
    pub fn not_implemented(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotImplemented, message)
    }
    pub fn value(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Value, message)
    }
    pub fn type_error(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Type, message)
    }
    pub fn index(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Index, message)
    }
    pub fn out_of_memory(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::OutOfMemory, message)
    }
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Prefixes the message with the op's schema name (`aten::add.out: ...`), once.
    pub fn in_op(mut self, op: &str) -> Self {
        if !self.message.starts_with(op) {
            self.message = format!("{op}: {}", self.message);
        }
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// # Safety
/// `error` is a live error returned by a kernel entry point.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_error_kind(error: *const Error) -> i32 {
    // SAFETY: the caller passes an error this crate boxed and has not freed.
    unsafe { (*error).kind.code() }
}

/// # Safety
/// `error` is a live error; `len` is writable. The text lives until `regen_error_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_error_message(error: *const Error, len: *mut usize) -> *const c_char {
    // SAFETY: as above; `len` points to writable memory per the contract.
    unsafe {
        let error = &*error;
        *len = error.message.len();
        error.message.as_ptr().cast()
    }
}

/// # Safety
/// `error` came from a kernel entry point and is freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn regen_error_free(error: *mut Error) {
    if !error.is_null() {
        // SAFETY: it was created by `Box::into_raw` in `ffi::call`.
        drop(unsafe { Box::from_raw(error) });
    }
}
