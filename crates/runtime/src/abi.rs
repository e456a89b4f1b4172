//! `#[repr(C)]` mirror of `regen_abi.h` (see docs/abi.md). Field order and types must match the
//! header exactly; `tests/abi_layout.rs` compiles the header and compares every offset.
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_void};

pub const REGEN_ABI_VERSION: i32 = 1;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct regen_tensor {
    pub impl_: *mut c_void,
    pub data: *mut c_void,
    pub sizes: *const i64,
    pub strides: *const i64,
    pub dim: i64,
    pub storage_offset: i64,
    pub dtype: i32,
    pub device_type: i32,
    pub device_index: i32,
    /// `REGEN_TENSOR_*` bits.
    pub flags: i32,
}

/// `regen_tensor.flags`: a Python scalar wrapped as a 0-dim CPU tensor (`x + 1`).
pub const REGEN_TENSOR_WRAPPED_NUMBER: i32 = 1;
/// `regen_tensor.flags`: PyTorch's lazy conjugate bit (`x.conj()`): memory holds the conjugates.
pub const REGEN_TENSOR_CONJ: i32 = 2;
/// `regen_tensor.flags`: PyTorch's lazy negative bit (`torch._neg_view(x)`): memory holds the
/// negations.
pub const REGEN_TENSOR_NEG: i32 = 4;

impl regen_tensor {
    /// The undefined tensor / None.
    pub const NONE: regen_tensor = regen_tensor {
        impl_: std::ptr::null_mut(),
        data: std::ptr::null_mut(),
        sizes: std::ptr::null(),
        strides: std::ptr::null(),
        dim: 0,
        storage_offset: 0,
        dtype: -1,
        device_type: -1,
        device_index: -1,
        flags: 0,
    };
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct regen_tensor_list {
    pub ptr: *const regen_tensor,
    pub len: usize,
}

pub const REGEN_SCALAR_NONE: i32 = -1;
pub const REGEN_SCALAR_FLOAT: i32 = 0;
pub const REGEN_SCALAR_INT: i32 = 1;
pub const REGEN_SCALAR_BOOL: i32 = 2;
pub const REGEN_SCALAR_COMPLEX: i32 = 3;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct regen_scalar {
    pub tag: i32,
    pub reserved: i32,
    pub f: f64,
    pub imag: f64,
    pub i: i64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct regen_scalar_list {
    pub ptr: *const regen_scalar,
    pub len: usize,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct regen_opt_i64 {
    pub has_value: bool,
    pub value: i64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct regen_opt_f64 {
    pub has_value: bool,
    pub value: f64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct regen_opt_bool {
    pub has_value: bool,
    pub value: bool,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct regen_i64_list {
    pub ptr: *const i64,
    pub len: usize,
    pub has_value: bool,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct regen_f64_list {
    pub ptr: *const f64,
    pub len: usize,
    pub has_value: bool,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct regen_bool_list {
    pub ptr: *const bool,
    pub len: usize,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct regen_str {
    pub ptr: *const c_char,
    pub len: usize,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct regen_str_list {
    pub ptr: *const regen_str,
    pub len: usize,
    pub has_value: bool,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct regen_device {
    pub type_: i32,
    pub index: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct regen_stream {
    pub id: i64,
    pub device_type: i32,
    pub device_index: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct regen_tensor_sink {
    pub ctx: *mut c_void,
    pub push: Option<unsafe extern "C" fn(ctx: *mut c_void, owned: regen_tensor)>,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct regen_i64_sink {
    pub ctx: *mut c_void,
    pub push: Option<unsafe extern "C" fn(ctx: *mut c_void, value: i64)>,
}

pub const REGEN_ERROR_RUNTIME: i32 = 0;
pub const REGEN_ERROR_NOT_IMPLEMENTED: i32 = 1;
pub const REGEN_ERROR_VALUE: i32 = 2;
pub const REGEN_ERROR_TYPE: i32 = 3;
pub const REGEN_ERROR_INDEX: i32 = 4;
pub const REGEN_ERROR_OUT_OF_MEMORY: i32 = 5;
