//! Safe kernel arguments and results, and their conversions from and to the C ABI.
//!
//! Generated entry points convert each ABI argument with [`FromAbi`] before calling the kernel,
//! and write each result into its out-slot with [`IntoSlot`]. A malformed value (a NULL string,
//! an unknown scalar tag) is an error returned to Python, never undefined behaviour in a kernel.

use std::ffi::c_void;
use std::ptr::NonNull;

use crate::abi::*;
use crate::error::{Error, Result};
use crate::glue::{host, installed};

/// Converts an ABI value (borrowed for the call) into a safe argument.
pub trait FromAbi<'a>: Sized {
    type Abi: 'a;
    /// # Safety
    /// Pointers inside `abi` are valid for `'a`, as the C++ wrapper guarantees for one call.
    unsafe fn from_abi(abi: &'a Self::Abi) -> Result<Self>;
}

/// Writes a kernel result into the out-slot the C++ wrapper passed.
pub trait IntoSlot {
    type Slot;
    /// # Safety
    /// `slot` is the valid, writable slot (or live sink) for this result.
    unsafe fn write(self, slot: Self::Slot) -> Result<()>;
}

/// # Safety
/// `ptr` points to `len` valid `T`s for `'a`, or `len` is 0.
unsafe fn slice<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if len == 0 || ptr.is_null() {
        &[]
    } else {
        // SAFETY: per the function contract.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// A tensor argument, borrowed for one kernel call. It may be undefined (`is_defined`).
#[derive(Clone, Copy)]
pub struct TensorRef<'a> {
    raw: &'a regen_tensor,
}

impl<'a> TensorRef<'a> {
    /// # Safety
    /// `raw`'s pointers are valid for `'a`.
    pub unsafe fn from_raw(raw: &'a regen_tensor) -> Self {
        TensorRef { raw }
    }
    pub fn raw(&self) -> &'a regen_tensor {
        self.raw
    }
    pub fn is_defined(&self) -> bool {
        !self.raw.impl_.is_null()
    }
    pub fn dim(&self) -> usize {
        self.raw.dim.max(0) as usize
    }
    pub fn sizes(&self) -> &'a [i64] {
        // SAFETY: the wrapper passes `dim` sizes, valid for the call.
        unsafe { slice(self.raw.sizes, self.dim()) }
    }
    pub fn strides(&self) -> &'a [i64] {
        // SAFETY: as for sizes.
        unsafe { slice(self.raw.strides, self.dim()) }
    }
    pub fn numel(&self) -> i64 {
        self.sizes().iter().product()
    }
    pub fn storage_offset(&self) -> i64 {
        self.raw.storage_offset
    }
    pub fn dtype(&self) -> ScalarType {
        ScalarType(self.raw.dtype)
    }
    /// A Python scalar PyTorch wrapped as a 0-dim CPU tensor (`x + 1`): type promotion ranks it
    /// below every tensor.
    pub fn is_wrapped_number(&self) -> bool {
        self.raw.flags & REGEN_TENSOR_WRAPPED_NUMBER != 0
    }
    /// PyTorch's lazy conjugate bit: the memory holds the conjugates of the values.
    pub fn is_conj(&self) -> bool {
        self.raw.flags & REGEN_TENSOR_CONJ != 0
    }
    /// PyTorch's lazy negative bit: the memory holds the negations of the values.
    pub fn is_neg(&self) -> bool {
        self.raw.flags & REGEN_TENSOR_NEG != 0
    }
    pub fn device(&self) -> Device {
        Device { device_type: self.raw.device_type, index: self.raw.device_index }
    }
    /// Address of element 0, storage offset applied.
    pub fn data_ptr(&self) -> *mut c_void {
        self.raw.data
    }
    /// A new owned reference to the same tensor (e.g. to return an input as a result).
    pub fn retain(&self) -> Result<Tensor> {
        let host = installed()?;
        if self.is_defined() {
            // SAFETY: `impl_` is a live TensorImpl for the call.
            unsafe { (host.retain)(self.raw.impl_) };
        }
        Ok(Tensor { raw: *self.raw })
    }
}

impl std::fmt::Debug for TensorRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorRef")
            .field("defined", &self.is_defined())
            .field("sizes", &self.sizes())
            .field("strides", &self.strides())
            .field("dtype", &self.dtype())
            .finish()
    }
}

/// An owned tensor result: one reference to a `c10::TensorImpl`, released on drop.
pub struct Tensor {
    raw: regen_tensor,
}

impl Tensor {
    /// # Safety
    /// `raw` holds one owned reference (or is undefined).
    pub unsafe fn from_raw(raw: regen_tensor) -> Self {
        Tensor { raw }
    }
    /// The undefined tensor (`at::Tensor()`).
    pub fn undefined() -> Self {
        Tensor { raw: regen_tensor::NONE }
    }
    /// Gives the reference to the caller.
    pub fn into_raw(self) -> regen_tensor {
        let raw = self.raw;
        std::mem::forget(self);
        raw
    }
    pub fn as_ref(&self) -> TensorRef<'_> {
        TensorRef { raw: &self.raw }
    }
}

impl Drop for Tensor {
    fn drop(&mut self) {
        if !self.raw.impl_.is_null()
            && let Some(host) = host()
        {
            // SAFETY: this value owns one reference.
            unsafe { (host.release)(self.raw.impl_) };
        }
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_ref().fmt(f)
    }
}

/// `Tensor[]` / `ITensorListRef`. The default is the empty list.
#[derive(Debug, Clone, Copy, Default)]
pub struct TensorList<'a> {
    items: &'a [regen_tensor],
}

impl<'a> TensorList<'a> {
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn get(&self, i: usize) -> Option<TensorRef<'a>> {
        self.items.get(i).map(|raw| TensorRef { raw })
    }
    pub fn iter(&self) -> impl Iterator<Item = TensorRef<'a>> + 'a {
        self.items.iter().map(|raw| TensorRef { raw })
    }
}

/// `Tensor?[]` (`c10::List<std::optional<at::Tensor>>`).
#[derive(Debug, Clone, Copy)]
pub struct OptionalTensorList<'a> {
    items: &'a [regen_tensor],
}

impl<'a> OptionalTensorList<'a> {
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn iter(&self) -> impl Iterator<Item = Option<TensorRef<'a>>> + 'a {
        self.items.iter().map(|raw| (!raw.impl_.is_null()).then_some(TensorRef { raw }))
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Float(f64),
    Int(i64),
    Bool(bool),
    Complex(f64, f64),
}

impl Scalar {
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Float(f) | Scalar::Complex(f, _) => f,
            Scalar::Int(i) => i as f64,
            Scalar::Bool(b) => f64::from(u8::from(b)),
        }
    }
    fn to_abi(self) -> regen_scalar {
        let mut s = regen_scalar { tag: REGEN_SCALAR_FLOAT, reserved: 0, f: 0.0, imag: 0.0, i: 0 };
        match self {
            Scalar::Float(f) => s.f = f,
            Scalar::Int(i) => (s.tag, s.i) = (REGEN_SCALAR_INT, i),
            Scalar::Bool(b) => (s.tag, s.i) = (REGEN_SCALAR_BOOL, i64::from(b)),
            Scalar::Complex(re, im) => (s.tag, s.f, s.imag) = (REGEN_SCALAR_COMPLEX, re, im),
        }
        s
    }
}

fn scalar_from_abi(s: &regen_scalar) -> Result<Option<Scalar>> {
    Ok(Some(match s.tag {
        REGEN_SCALAR_NONE => return Ok(None),
        REGEN_SCALAR_FLOAT => Scalar::Float(s.f),
        REGEN_SCALAR_INT => Scalar::Int(s.i),
        REGEN_SCALAR_BOOL => Scalar::Bool(s.i != 0),
        REGEN_SCALAR_COMPLEX => Scalar::Complex(s.f, s.imag),
        other => return Err(Error::runtime(format!("unknown scalar tag {other}"))),
    }))
}

macro_rules! enum_code {
    ($(#[$doc:meta])* $name:ident { $($konst:ident = $value:expr),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name(pub i32);
        impl $name {
            $(pub const $konst: $name = $name($value);)*
        }
        impl<'a> FromAbi<'a> for $name {
            type Abi = i32;
            unsafe fn from_abi(abi: &'a i32) -> Result<Self> {
                if *abi < 0 {
                    return Err(Error::runtime(concat!("missing ", stringify!($name))));
                }
                Ok($name(*abi))
            }
        }
        impl<'a> FromAbi<'a> for Option<$name> {
            type Abi = i32;
            unsafe fn from_abi(abi: &'a i32) -> Result<Self> {
                Ok((*abi >= 0).then_some($name(*abi)))
            }
        }
        impl IntoSlot for $name {
            type Slot = *mut i32;
            unsafe fn write(self, slot: *mut i32) -> Result<()> {
                // SAFETY: per the trait contract.
                unsafe { *slot = self.0 };
                Ok(())
            }
        }
    };
}

enum_code!(
    /// `c10::ScalarType` by its code (stable across releases; new codes are appended).
    ScalarType {
        BYTE = 0, CHAR = 1, SHORT = 2, INT = 3, LONG = 4, HALF = 5, FLOAT = 6, DOUBLE = 7,
        COMPLEX_HALF = 8, COMPLEX_FLOAT = 9, COMPLEX_DOUBLE = 10, BOOL = 11, BFLOAT16 = 15,
    }
);
/// Every `c10::ScalarType` by its code: the name PyTorch prints (`torch.float8_e4m3fn` without
/// `torch.`) and the bytes per element (`dtype.itemsize`). The order is c10's
/// `AT_FORALL_SCALAR_TYPES_WITH_COMPLEX_AND_QINTS` (torch/headeronly/core/ScalarType.h of torch
/// 2.15; a code's meaning never changes, new ones are appended).
const SCALAR_TYPES: [(&str, usize); 47] = [
    ("uint8", 1),
    ("int8", 1),
    ("int16", 2),
    ("int32", 4),
    ("int64", 8),
    ("float16", 2),
    ("float32", 4),
    ("float64", 8),
    ("complex32", 4),
    ("complex64", 8),
    ("complex128", 16),
    ("bool", 1),
    ("qint8", 1),
    ("quint8", 1),
    ("qint32", 4),
    ("bfloat16", 2),
    ("quint4x2", 1),
    ("quint2x4", 1),
    ("bits1x8", 1),
    ("bits2x4", 1),
    ("bits4x2", 1),
    ("bits8", 1),
    ("bits16", 2),
    ("float8_e5m2", 1),
    ("float8_e4m3fn", 1),
    ("float8_e5m2fnuz", 1),
    ("float8_e4m3fnuz", 1),
    ("uint16", 2),
    ("uint32", 4),
    ("uint64", 8),
    ("uint1", 1),
    ("uint2", 1),
    ("uint3", 1),
    ("uint4", 1),
    ("uint5", 1),
    ("uint6", 1),
    ("uint7", 1),
    ("int1", 1),
    ("int2", 1),
    ("int3", 1),
    ("int4", 1),
    ("int5", 1),
    ("int6", 1),
    ("int7", 1),
    ("float8_e8m0fnu", 1),
    ("float4_e2m1fn_x2", 1),
    ("bcomplex32", 4),
];

impl ScalarType {
    fn entry(self) -> Option<(&'static str, usize)> {
        usize::try_from(self.0).ok().and_then(|i| SCALAR_TYPES.get(i)).copied()
    }
    /// PyTorch's name of the dtype (`float8_e4m3fn`, as in `torch.float8_e4m3fn`), for messages;
    /// None for a code newer than this table.
    pub fn name(self) -> Option<&'static str> {
        self.entry().map(|(name, _)| name)
    }
    /// Bytes per element (`dtype.itemsize`; sub-byte dtypes take a byte), None for a code newer
    /// than this table.
    pub fn itemsize(self) -> Option<usize> {
        self.entry().map(|(_, size)| size)
    }
}

/// The PyTorch name (`float8_e4m3fn`), or the code for one newer than this crate.
impl std::fmt::Display for ScalarType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "ScalarType {} (a dtype newer than this regen-runtime)", self.0),
        }
    }
}

enum_code!(
    /// `c10::Layout`.
    Layout { STRIDED = 0, SPARSE = 1, SPARSE_CSR = 2, MKLDNN = 3 }
);
enum_code!(
    /// `c10::MemoryFormat`.
    MemoryFormat { CONTIGUOUS = 0, PRESERVE = 1, CHANNELS_LAST = 2, CHANNELS_LAST_3D = 3 }
);
enum_code!(
    /// `at::QScheme`.
    QScheme { PER_TENSOR_AFFINE = 0, PER_CHANNEL_AFFINE = 1 }
);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Device {
    /// `c10::DeviceType` (PrivateUse1 is 20).
    pub device_type: i32,
    /// -1 for the current device.
    pub index: i32,
}

/// An `at::Generator`, opaque to Rust kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generator(pub NonNull<c_void>);

/// A `c10::Storage`, opaque to Rust kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Storage(pub NonNull<c_void>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stream {
    pub id: i64,
    pub device: Device,
}

macro_rules! copy_from_abi {
    ($($t:ty),*) => {$(
        impl<'a> FromAbi<'a> for $t {
            type Abi = $t;
            unsafe fn from_abi(abi: &'a $t) -> Result<Self> {
                Ok(*abi)
            }
        }
        impl IntoSlot for $t {
            type Slot = *mut $t;
            unsafe fn write(self, slot: *mut $t) -> Result<()> {
                // SAFETY: per the trait contract.
                unsafe { *slot = self };
                Ok(())
            }
        }
    )*};
}
copy_from_abi!(i64, f64, bool);

impl<'a> FromAbi<'a> for TensorRef<'a> {
    type Abi = regen_tensor;
    unsafe fn from_abi(abi: &'a regen_tensor) -> Result<Self> {
        Ok(TensorRef { raw: abi })
    }
}

impl<'a> FromAbi<'a> for Option<TensorRef<'a>> {
    type Abi = regen_tensor;
    unsafe fn from_abi(abi: &'a regen_tensor) -> Result<Self> {
        Ok((!abi.impl_.is_null()).then_some(TensorRef { raw: abi }))
    }
}

impl<'a> FromAbi<'a> for TensorList<'a> {
    type Abi = regen_tensor_list;
    unsafe fn from_abi(abi: &'a regen_tensor_list) -> Result<Self> {
        // SAFETY: the wrapper's list buffer lives for the call.
        Ok(TensorList { items: unsafe { slice(abi.ptr, abi.len) } })
    }
}

impl<'a> FromAbi<'a> for OptionalTensorList<'a> {
    type Abi = regen_tensor_list;
    unsafe fn from_abi(abi: &'a regen_tensor_list) -> Result<Self> {
        // SAFETY: as above.
        Ok(OptionalTensorList { items: unsafe { slice(abi.ptr, abi.len) } })
    }
}

impl<'a> FromAbi<'a> for Scalar {
    type Abi = regen_scalar;
    unsafe fn from_abi(abi: &'a regen_scalar) -> Result<Self> {
        scalar_from_abi(abi)?.ok_or_else(|| Error::runtime("missing Scalar"))
    }
}

impl<'a> FromAbi<'a> for Option<Scalar> {
    type Abi = regen_scalar;
    unsafe fn from_abi(abi: &'a regen_scalar) -> Result<Self> {
        scalar_from_abi(abi)
    }
}

impl<'a> FromAbi<'a> for Vec<Scalar> {
    type Abi = regen_scalar_list;
    unsafe fn from_abi(abi: &'a regen_scalar_list) -> Result<Self> {
        // SAFETY: the wrapper's buffer lives for the call.
        let items = unsafe { slice(abi.ptr, abi.len) };
        items.iter().map(|s| scalar_from_abi(s)?.ok_or_else(|| Error::runtime("missing Scalar in a list"))).collect()
    }
}

impl<'a> FromAbi<'a> for Option<i64> {
    type Abi = regen_opt_i64;
    unsafe fn from_abi(abi: &'a regen_opt_i64) -> Result<Self> {
        Ok(abi.has_value.then_some(abi.value))
    }
}

impl<'a> FromAbi<'a> for Option<f64> {
    type Abi = regen_opt_f64;
    unsafe fn from_abi(abi: &'a regen_opt_f64) -> Result<Self> {
        Ok(abi.has_value.then_some(abi.value))
    }
}

impl<'a> FromAbi<'a> for Option<bool> {
    type Abi = regen_opt_bool;
    unsafe fn from_abi(abi: &'a regen_opt_bool) -> Result<Self> {
        Ok(abi.has_value.then_some(abi.value))
    }
}

macro_rules! list_from_abi {
    ($t:ty, $abi:ty) => {
        impl<'a> FromAbi<'a> for &'a [$t] {
            type Abi = $abi;
            unsafe fn from_abi(abi: &'a $abi) -> Result<Self> {
                if !abi.has_value {
                    return Err(Error::runtime(concat!("missing ", stringify!($t), " list")));
                }
                // SAFETY: the wrapper's buffer lives for the call.
                Ok(unsafe { slice(abi.ptr, abi.len) })
            }
        }
        impl<'a> FromAbi<'a> for Option<&'a [$t]> {
            type Abi = $abi;
            unsafe fn from_abi(abi: &'a $abi) -> Result<Self> {
                // SAFETY: as above.
                Ok(abi.has_value.then(|| unsafe { slice(abi.ptr, abi.len) }))
            }
        }
    };
}
list_from_abi!(i64, regen_i64_list);
list_from_abi!(f64, regen_f64_list);

impl<'a> FromAbi<'a> for &'a [bool] {
    type Abi = regen_bool_list;
    unsafe fn from_abi(abi: &'a regen_bool_list) -> Result<Self> {
        // SAFETY: the wrapper's array lives for the call.
        Ok(unsafe { slice(abi.ptr, abi.len) })
    }
}

fn str_from_abi(s: &regen_str) -> Result<Option<&str>> {
    if s.ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: a non-NULL string points to `len` bytes valid for the call.
    let bytes = unsafe { slice(s.ptr.cast::<u8>(), s.len) };
    std::str::from_utf8(bytes).map(Some).map_err(|e| Error::value(format!("string argument is not UTF-8: {e}")))
}

impl<'a> FromAbi<'a> for &'a str {
    type Abi = regen_str;
    unsafe fn from_abi(abi: &'a regen_str) -> Result<Self> {
        str_from_abi(abi)?.ok_or_else(|| Error::runtime("missing string"))
    }
}

impl<'a> FromAbi<'a> for Option<&'a str> {
    type Abi = regen_str;
    unsafe fn from_abi(abi: &'a regen_str) -> Result<Self> {
        str_from_abi(abi)
    }
}

impl<'a> FromAbi<'a> for Vec<&'a str> {
    type Abi = regen_str_list;
    unsafe fn from_abi(abi: &'a regen_str_list) -> Result<Self> {
        // SAFETY: the wrapper's buffer lives for the call.
        let items = unsafe { slice(abi.ptr, abi.len) };
        items.iter().map(|s| str_from_abi(s)?.ok_or_else(|| Error::runtime("missing name in a list"))).collect()
    }
}

impl<'a> FromAbi<'a> for Option<Vec<&'a str>> {
    type Abi = regen_str_list;
    unsafe fn from_abi(abi: &'a regen_str_list) -> Result<Self> {
        // SAFETY: as above.
        if abi.has_value { unsafe { <Vec<&str>>::from_abi(abi) }.map(Some) } else { Ok(None) }
    }
}

impl<'a> FromAbi<'a> for Device {
    type Abi = regen_device;
    unsafe fn from_abi(abi: &'a regen_device) -> Result<Self> {
        if abi.type_ < 0 {
            return Err(Error::runtime("missing Device"));
        }
        Ok(Device { device_type: abi.type_, index: abi.index })
    }
}

impl<'a> FromAbi<'a> for Option<Device> {
    type Abi = regen_device;
    unsafe fn from_abi(abi: &'a regen_device) -> Result<Self> {
        Ok((abi.type_ >= 0).then_some(Device { device_type: abi.type_, index: abi.index }))
    }
}

macro_rules! opaque_from_abi {
    ($t:ident) => {
        impl<'a> FromAbi<'a> for $t {
            type Abi = *mut c_void;
            unsafe fn from_abi(abi: &'a *mut c_void) -> Result<Self> {
                NonNull::new(*abi).map($t).ok_or_else(|| Error::runtime(concat!("missing ", stringify!($t))))
            }
        }
        impl<'a> FromAbi<'a> for Option<$t> {
            type Abi = *mut c_void;
            unsafe fn from_abi(abi: &'a *mut c_void) -> Result<Self> {
                Ok(NonNull::new(*abi).map($t))
            }
        }
    };
}
opaque_from_abi!(Generator);
opaque_from_abi!(Storage);

impl<'a> FromAbi<'a> for Stream {
    type Abi = regen_stream;
    unsafe fn from_abi(abi: &'a regen_stream) -> Result<Self> {
        Ok(Stream { id: abi.id, device: Device { device_type: abi.device_type, index: abi.device_index } })
    }
}

impl IntoSlot for Tensor {
    type Slot = *mut regen_tensor;
    unsafe fn write(self, slot: *mut regen_tensor) -> Result<()> {
        // SAFETY: per the trait contract; the reference moves to the caller.
        unsafe { *slot = self.into_raw() };
        Ok(())
    }
}

impl IntoSlot for Vec<Tensor> {
    type Slot = regen_tensor_sink;
    unsafe fn write(self, sink: regen_tensor_sink) -> Result<()> {
        let push = sink.push.ok_or_else(|| Error::runtime("tensor sink without a push function"))?;
        for t in self {
            // SAFETY: the sink is live for the call; each reference moves to the caller.
            unsafe { push(sink.ctx, t.into_raw()) };
        }
        Ok(())
    }
}

impl IntoSlot for Vec<i64> {
    type Slot = regen_i64_sink;
    unsafe fn write(self, sink: regen_i64_sink) -> Result<()> {
        let push = sink.push.ok_or_else(|| Error::runtime("int sink without a push function"))?;
        for v in self {
            // SAFETY: the sink is live for the call.
            unsafe { push(sink.ctx, v) };
        }
        Ok(())
    }
}

impl IntoSlot for Scalar {
    type Slot = *mut regen_scalar;
    unsafe fn write(self, slot: *mut regen_scalar) -> Result<()> {
        // SAFETY: per the trait contract.
        unsafe { *slot = self.to_abi() };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_and_list_arguments() {
        let none = regen_opt_i64 { has_value: false, value: 9 };
        // SAFETY: plain values without pointers.
        unsafe {
            assert_eq!(<Option<i64>>::from_abi(&none).unwrap(), None);
            let dims = [2i64, 3];
            let list = regen_i64_list { ptr: dims.as_ptr(), len: 2, has_value: true };
            assert_eq!(<&[i64]>::from_abi(&list).unwrap(), &[2, 3]);
            let missing = regen_i64_list { ptr: std::ptr::null(), len: 0, has_value: false };
            assert_eq!(<Option<&[i64]>>::from_abi(&missing).unwrap(), None);
            assert!(<&[i64]>::from_abi(&missing).is_err());
            let s = regen_str { ptr: c"valid".as_ptr(), len: 5 };
            assert_eq!(<&str>::from_abi(&s).unwrap(), "valid");
            let none = regen_str { ptr: std::ptr::null(), len: 0 };
            assert_eq!(<Option<&str>>::from_abi(&none).unwrap(), None);
            assert_eq!(<Option<ScalarType>>::from_abi(&-1).unwrap(), None);
            assert_eq!(ScalarType::from_abi(&6).unwrap(), ScalarType::FLOAT);
        }
    }

    #[test]
    fn scalar_types_print_as_pytorch_names() {
        // Spot checks across the table (the Python tests of `regen new` compare every dtype
        // torch has with its `str(dtype)`).
        assert_eq!(ScalarType::FLOAT.to_string(), "float32");
        assert_eq!(ScalarType::BFLOAT16.to_string(), "bfloat16");
        assert_eq!(ScalarType(24).to_string(), "float8_e4m3fn");
        assert_eq!(ScalarType(46).to_string(), "bcomplex32");
        assert_eq!(ScalarType(47).name(), None);
        assert!(ScalarType(47).to_string().contains("ScalarType 47"));
        assert_eq!(ScalarType(-1).name(), None);
        assert_eq!(ScalarType::COMPLEX_DOUBLE.itemsize(), Some(16));
    }

    #[test]
    fn scalars_round_trip() {
        for s in [Scalar::Float(1.5), Scalar::Int(-3), Scalar::Bool(true), Scalar::Complex(1.0, -2.0)] {
            // SAFETY: a plain value.
            assert_eq!(unsafe { Scalar::from_abi(&s.to_abi()) }.unwrap(), s);
        }
        let none = regen_scalar { tag: REGEN_SCALAR_NONE, reserved: 0, f: 0.0, imag: 0.0, i: 0 };
        // SAFETY: a plain value.
        unsafe {
            assert_eq!(<Option<Scalar>>::from_abi(&none).unwrap(), None);
            assert!(Scalar::from_abi(&none).is_err());
        }
    }
}
