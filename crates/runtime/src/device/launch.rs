//! Asynchronous kernel launches: on a layer that queues kernels
//! ([`DeviceLayer::queues_kernels`](super::DeviceLayer::queues_kernels)), an in-place kernel (its
//! results are the values of its own mutable arguments, whose shapes it never changes) returns to
//! the host before it ran, as a CUDA kernel launch does; its errors come at the next
//! synchronization. Every other kernel runs through [`run`](super::DeviceLayer::run), which
//! returns when the kernel is done: its results (a new tensor, a resized `out=`) are metadata
//! the host reads at once.
//!
//! A queued kernel outlives its entry point's arguments, so [`Own`] copies what each points to
//! (sizes and strides, lists, strings) into a [`Keep`], which also holds a reference to each
//! tensor until the kernel ran. The host drops those references ([`drain`]), never a device's
//! worker thread: dropping a tensor's last reference may call into Python, whose lock the host
//! may hold while it waits for that worker.

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::host_ops::{listed, runs_on_host};
use crate::abi::*;

/// In-place ops that still run synchronously, each with its reason. Policy as data.
pub const STAY_SYNCHRONOUS: &[(&str, &str)] = &[
    ("aten::bernoulli_.Tensor", DRAWS),
    ("aten::bernoulli_.float", DRAWS),
    ("aten::random_.from", DRAWS),
    ("aten::random_.to", DRAWS),
    ("aten::random_", DRAWS),
    ("aten::uniform_", DRAWS),
    ("aten::cauchy_", DRAWS),
    ("aten::log_normal_", DRAWS),
    ("aten::exponential_", DRAWS),
    ("aten::geometric_", DRAWS),
    ("aten::normal_", DRAWS),
];

const DRAWS: &str = "draws from its generator when it runs: a seed set after the call must not change what it \
                     drew (CUDA takes the generator's offset at launch; a regen kernel reads the generator itself)";

/// Whether the entry point of `qualified` (`aten::name.overload`) with `results` result slots
/// launches its kernel asynchronously on a layer that queues kernels: an in-place op (its name
/// ends in `_`) with no results, not run on the host ([`runs_on_host`]) and not in
/// [`STAY_SYNCHRONOUS`]. A `const fn`: the generated entry points decide it when compiled.
pub const fn launches(qualified: &str, results: usize) -> bool {
    results == 0 && in_place(qualified) && !runs_on_host(qualified) && !listed(STAY_SYNCHRONOUS, qualified)
}

/// Whether the op's name (before the overload) ends in `_`: PyTorch's mark of an in-place op
/// (`relu_`, `fill_.Scalar`, `__ilshift__.Tensor`).
const fn in_place(qualified: &str) -> bool {
    let bytes = qualified.as_bytes();
    let mut end = 0;
    while end < bytes.len() && bytes[end] != b'.' {
        end += 1;
    }
    end > 0 && bytes[end - 1] == b'_'
}

/// Whether the installed layer queues kernels (read once: the layer is installed at load).
pub fn queues_kernels() -> bool {
    static QUEUES: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *QUEUES.get_or_init(|| super::layer().queues_kernels())
}

/// What a queued kernel's arguments point to, kept until it ran: copies of sizes, strides, lists
/// and strings, and a reference to each tensor (released by [`drain`], on the host).
#[derive(Default)]
pub struct Keep {
    copies: Vec<Box<dyn std::any::Any>>,
    tensors: Vec<*mut c_void>,
    /// An argument it cannot keep (a generator or a storage, which C++ owns): the kernel runs now.
    opaque: bool,
}

// SAFETY: the pointers address copies this Keep owns, or tensors it holds a reference on; they
// move with it to the worker that runs the kernel and back to the host.
unsafe impl Send for Keep {}

impl Keep {
    /// Whether every argument could be kept (no generator or storage among them).
    pub fn complete(&self) -> bool {
        !self.opaque
    }

    fn hold<T: 'static>(&mut self, items: Vec<T>) -> *const T {
        if items.is_empty() {
            return std::ptr::NonNull::dangling().as_ptr();
        }
        let items = items.into_boxed_slice();
        let ptr = items.as_ptr();
        self.copies.push(Box::new(items));
        ptr
    }

    /// Each of a list's `len` items made independent of the call ([`Own`]), held here.
    ///
    /// # Safety
    /// `ptr` points to `len` valid `T`s, or is null with `len` 0.
    unsafe fn own_each<T: Own + 'static>(&mut self, ptr: *const T, len: usize) -> *const T {
        if ptr.is_null() || len == 0 {
            return ptr;
        }
        // SAFETY: per the contract; each item's pointers are valid for the call.
        let items: Vec<T> =
            unsafe { std::slice::from_raw_parts(ptr, len) }.iter().map(|t| unsafe { t.own(self) }).collect();
        self.hold(items)
    }

    /// # Safety
    /// `ptr` points to `len` valid `T`s, or `len` is 0.
    unsafe fn copy<T: Copy + 'static>(&mut self, ptr: *const T, len: usize) -> *const T {
        if ptr.is_null() || len == 0 {
            return ptr;
        }
        // SAFETY: per the contract.
        let items = unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec();
        self.hold(items)
    }
}

impl Drop for Keep {
    fn drop(&mut self) {
        if let Some(host) = crate::glue::host() {
            for t in self.tensors.drain(..) {
                // SAFETY: a reference taken by Own for regen_tensor, released once.
                unsafe { (host.release)(t) };
            }
        }
    }
}

/// An entry point's ABI argument, made independent of the call: what it points to is copied into
/// a [`Keep`] (plain values are themselves).
pub trait Own: Copy {
    /// # Safety
    /// The pointers inside `self` are valid for this call (the C++ wrapper's promise).
    unsafe fn own(self, keep: &mut Keep) -> Self {
        let _ = keep;
        self
    }
}

impl Own for i64 {}
impl Own for i32 {}
impl Own for f64 {}
impl Own for bool {}
impl Own for regen_scalar {}
impl Own for regen_opt_i64 {}
impl Own for regen_opt_f64 {}
impl Own for regen_opt_bool {}
impl Own for regen_device {}
impl Own for regen_stream {}

/// A generator or a storage: C++ owns it and the kernel must run while the call lasts.
impl Own for *mut c_void {
    unsafe fn own(self, keep: &mut Keep) -> Self {
        keep.opaque = true;
        self
    }
}

impl Own for regen_tensor {
    unsafe fn own(self, keep: &mut Keep) -> Self {
        if self.impl_.is_null() {
            return self;
        }
        let dim = self.dim.max(0) as usize;
        let mut t = self;
        // SAFETY: the wrapper's tensor lives for the call: its sizes and strides hold `dim` values.
        unsafe {
            t.sizes = keep.copy(self.sizes, dim);
            t.strides = keep.copy(self.strides, dim);
        }
        if let Some(host) = crate::glue::host() {
            // SAFETY: a live TensorImpl; Keep's drop releases it.
            unsafe { (host.retain)(self.impl_) };
            keep.tensors.push(self.impl_);
        }
        t
    }
}

impl Own for regen_tensor_list {
    unsafe fn own(self, keep: &mut Keep) -> Self {
        // SAFETY: the list holds `len` tensors valid for the call.
        regen_tensor_list { ptr: unsafe { keep.own_each(self.ptr, self.len) }, len: self.len }
    }
}

impl Own for regen_scalar_list {
    unsafe fn own(self, keep: &mut Keep) -> Self {
        // SAFETY: the list holds `len` scalars valid for the call.
        regen_scalar_list { ptr: unsafe { keep.copy(self.ptr, self.len) }, len: self.len }
    }
}

impl Own for regen_i64_list {
    unsafe fn own(self, keep: &mut Keep) -> Self {
        // SAFETY: as above.
        regen_i64_list { ptr: unsafe { keep.copy(self.ptr, self.len) }, ..self }
    }
}

impl Own for regen_f64_list {
    unsafe fn own(self, keep: &mut Keep) -> Self {
        // SAFETY: as above.
        regen_f64_list { ptr: unsafe { keep.copy(self.ptr, self.len) }, ..self }
    }
}

impl Own for regen_bool_list {
    unsafe fn own(self, keep: &mut Keep) -> Self {
        // SAFETY: as above.
        regen_bool_list { ptr: unsafe { keep.copy(self.ptr, self.len) }, ..self }
    }
}

impl Own for regen_str {
    unsafe fn own(self, keep: &mut Keep) -> Self {
        // SAFETY: the string's bytes are valid for the call.
        regen_str { ptr: unsafe { keep.copy(self.ptr, self.len) }, len: self.len }
    }
}

impl Own for regen_str_list {
    unsafe fn own(self, keep: &mut Keep) -> Self {
        // SAFETY: the list holds `len` strings valid for the call.
        regen_str_list { ptr: unsafe { keep.own_each(self.ptr, self.len) }, ..self }
    }
}

/// Owned arguments crossing to the worker that runs the kernel.
pub struct Unsent<T>(T);

// SAFETY: made by the generated entry point from arguments made independent of the call with
// [`Own`] (their pointers address a Keep that travels with them) and its result slots, of which a
// launched kernel has none.
unsafe impl<T> Send for Unsent<T> {}

impl<T> Unsent<T> {
    /// # Safety
    /// `value`'s pointers stay valid wherever it is sent (it was made with [`Own`]).
    pub unsafe fn new(value: T) -> Self {
        Unsent(value)
    }

    /// The value (a method, so a closure captures the whole wrapper, not its field).
    pub fn into_inner(self) -> T {
        self.0
    }
}

static RETIRED: Mutex<Vec<Keep>> = Mutex::new(Vec::new());
static PENDING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// How many kernels this thread is inside (a kernel whose work calls another entry point).
    static IN_KERNEL: Cell<u32> = const { Cell::new(0) };
}

/// Marks this thread as running a kernel while it lives: [`drain`] does nothing there.
pub(crate) struct InKernel;

impl InKernel {
    pub(crate) fn enter() -> Self {
        IN_KERNEL.with(|k| k.set(k.get() + 1));
        InKernel
    }
}

impl Drop for InKernel {
    fn drop(&mut self) {
        IN_KERNEL.with(|k| k.set(k.get().saturating_sub(1)));
    }
}

/// Hands back what a queued kernel kept, once it ran (on the worker); the host drops it.
pub fn retire(keep: Keep) {
    RETIRED.lock().unwrap_or_else(|e| e.into_inner()).push(keep);
    PENDING.store(true, Ordering::Release);
}

/// Drops what finished kernels kept (releasing their tensors), on the host: entry points,
/// synchronizations and memory statistics call it. Nothing inside a kernel.
pub fn drain() {
    if !PENDING.load(Ordering::Acquire) || IN_KERNEL.with(Cell::get) > 0 {
        return;
    }
    let kept = {
        let mut retired = RETIRED.lock().unwrap_or_else(|e| e.into_inner());
        PENDING.store(false, Ordering::Release);
        std::mem::take(&mut *retired)
    };
    // Outside the lock: a release may free memory, whose allocator may retire nothing but runs code.
    drop(kept);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_place_ops_without_results_launch() {
        const { assert!(launches("aten::relu_", 0)) };
        assert!(launches("aten::fill_.Scalar", 0));
        assert!(launches("aten::__ilshift__.Tensor", 0));
        assert!(launches("aten::_fused_adam_", 0));
        assert!(!launches("aten::add.out", 0), "out= may resize its output: the host reads the shape");
        assert!(!launches("aten::relu", 1), "a new tensor is a result");
        assert!(!launches("aten::copy_", 0), "a host op");
        assert!(!launches("aten::normal_", 0), "draws from the generator");
        assert!(!launches("aten::_", 1));
        for (op, why) in STAY_SYNCHRONOUS {
            assert!(in_place(op) && !why.is_empty(), "{op}");
        }
    }

    #[test]
    fn owned_arguments_do_not_point_into_the_call() {
        let sizes = [2i64, 3];
        let strides = [3i64, 1];
        let t = regen_tensor { sizes: sizes.as_ptr(), strides: strides.as_ptr(), dim: 2, ..regen_tensor::NONE };
        // An undefined tensor (no impl) is itself.
        let mut keep = Keep::default();
        // SAFETY: the arrays live for the calls.
        let none = unsafe { t.own(&mut keep) };
        assert_eq!(none.sizes, sizes.as_ptr());
        let list = [regen_tensor { impl_: std::ptr::null_mut(), ..t }];
        let ints = [4i64, 5, 6];
        // SAFETY: the arrays live for the calls.
        let (owned_ints, owned_list) = unsafe {
            (
                regen_i64_list { ptr: ints.as_ptr(), len: 3, has_value: true }.own(&mut keep),
                regen_tensor_list { ptr: list.as_ptr(), len: 1 }.own(&mut keep),
            )
        };
        assert_ne!(owned_ints.ptr, ints.as_ptr());
        // SAFETY: the kept copy holds three values as long as keep lives.
        assert_eq!(unsafe { std::slice::from_raw_parts(owned_ints.ptr, 3) }, &ints);
        assert_ne!(owned_list.ptr, list.as_ptr());
        assert!(keep.complete());
        // SAFETY: owning an opaque pointer only marks keep incomplete.
        let _ = unsafe { std::ptr::null_mut::<c_void>().own(&mut keep) };
        assert!(!keep.complete(), "a generator or storage cannot be kept");
    }
}
