// The services of a regen backend's host glue (regen_host.h; see glue.h): what Rust asks C++ to
// do with tensors (reference counts, new device tensors, the metadata changes only c10 can make),
// PyTorch's thread pool, and torch.autocast's state. Internal: Rust reaches them only through
// the table `services()` returns.
#include "glue.h"

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <ATen/native/Resize.h>

#include <cstdint>
#include <utility>

#include "regen_marshal.h"

namespace regen_host_glue {
namespace {

// `impl` as an at::Tensor that takes no reference of its own (the caller's keeps the tensor alive
// for the call), as c10::MaybeOwned borrows. A counted copy is not free: while Python holds the
// tensor, c10 increfs its PyObject when the count leaves 1 and decrefs it when the count returns,
// each under the GIL, which made `x.view(n)` on the device 1.47x CPU's time.
class Borrowed {
 public:
  explicit Borrowed(void* impl)
      : t_(c10::intrusive_ptr<c10::TensorImpl>::reclaim(static_cast<c10::TensorImpl*>(impl))) {}
  ~Borrowed() { (void)t_.unsafeReleaseTensorImpl(); }
  Borrowed(const Borrowed&) = delete;
  Borrowed& operator=(const Borrowed&) = delete;
  at::Tensor& operator*() { return t_; }
  at::Tensor* operator->() { return &t_; }

 private:
  at::Tensor t_;
};

// Describes `t` and hands one reference to the caller.
regen_tensor hand_over(at::Tensor t) {
  regen_tensor desc = ::regen::lift_tensor(t, kWhat);
  (void)t.unsafeReleaseTensorImpl();
  return desc;
}

// The services (regen_host.h). Internal: Rust reaches them only through the table.

void host_retain(void* impl) { c10::raw::intrusive_ptr::incref(static_cast<c10::TensorImpl*>(impl)); }

void host_release(void* impl) { c10::raw::intrusive_ptr::decref(static_cast<c10::TensorImpl*>(impl)); }

const char* host_empty_strided(const int64_t* sizes, const int64_t* strides, int64_t ndim, int32_t dtype,
                                      regen_tensor* out) {
  return guarded([&] {
    at::Tensor t = at::detail::empty_strided_generic(at::IntArrayRef(sizes, ndim), at::IntArrayRef(strides, ndim),
                                                     device_allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                     static_cast<at::ScalarType>(dtype));
    *out = hand_over(std::move(t));
  });
}

const char* host_resize(void* impl, const int64_t* sizes, int64_t ndim, regen_tensor* out) {
  return guarded([&] {
    // No strides: contiguous. A default-constructed OptionalIntArrayRef, since std::nullopt does not
    // convert to it in 2.1 (c10::optional is its own class there, not std::optional).
    at::native::resize_impl_cpu_(static_cast<c10::TensorImpl*>(impl), at::IntArrayRef(sizes, ndim),
                                 at::OptionalIntArrayRef());
    *out = ::regen::lift_tensor(*Borrowed(impl), kWhat);
  });
}

const char* host_as_strided(void* impl, const int64_t* sizes, const int64_t* strides, int64_t ndim,
                                   int64_t storage_offset, regen_tensor* out) {
  return guarded([&] {
    Borrowed src(impl);
    at::Tensor view = at::detail::make_tensor<c10::TensorImpl>(c10::TensorImpl::VIEW, c10::Storage(src->storage()),
                                                               src->key_set(), src->dtype());
    view.unsafeGetTensorImpl()->set_sizes_and_strides(at::IntArrayRef(sizes, ndim), at::IntArrayRef(strides, ndim),
                                                      storage_offset);
    *out = hand_over(std::move(view));
  });
}

// set_ as CPU's set_storage_cpu_ (ATen/native/TensorShape.cpp) does it, with ATen's own checks
// (checkSetStorage: a storage of another device or a negative offset is an error with CPU's
// message); `strides` NULL means none were given (`set_(storage, offset, size)`), so the strides
// are contiguous; a single size of -1 asks for the whole storage as one dimension.
void set_storage_like_cpu(at::Tensor& self, c10::Storage storage, int64_t storage_offset, at::IntArrayRef size,
                                 const int64_t* strides) {
  at::IntArrayRef stride = strides != nullptr ? at::IntArrayRef(strides, size.size()) : at::IntArrayRef();
  at::native::checkSetStorage(self, std::move(storage), storage_offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_offset(storage_offset);
  at::native::resize_impl_cpu_(self.unsafeGetTensorImpl(), size,
                               strides != nullptr ? at::OptionalIntArrayRef(stride) : at::OptionalIntArrayRef(),
                               /*resize_storage=*/true);
}

const char* host_set_storage(void* impl, void* storage, int64_t storage_offset, const int64_t* sizes,
                                    const int64_t* strides, int64_t ndim, regen_tensor* out) {
  return guarded([&] {
    Borrowed self(impl);
    c10::Storage st = storage != nullptr
        ? c10::Storage(c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(static_cast<c10::StorageImpl*>(storage)))
        : c10::Storage(c10::Storage::use_byte_size_t(), 0, device_allocator(), /*resizable=*/true);
    int64_t whole = static_cast<int64_t>(st.nbytes() / self->dtype().itemsize());
    at::IntArrayRef size = ndim == 1 && sizes[0] == -1 ? at::IntArrayRef(&whole, 1) : at::IntArrayRef(sizes, ndim);
    set_storage_like_cpu(*self, std::move(st), storage_offset, size, strides);
    *out = ::regen::lift_tensor(*self, kWhat);
  });
}

const char* host_set_tensor(void* impl, void* source, regen_tensor* out) {
  return guarded([&] {
    Borrowed self(impl);
    Borrowed src(source);
    // CPU's set_tensor_: the source's storage and geometry, with the same checks (a CPU source
    // for a device tensor is an error, not a device tensor pointing at host memory).
    set_storage_like_cpu(*self, src->storage(), src->storage_offset(), src->sizes(), src->strides().data());
    *out = ::regen::lift_tensor(*self, kWhat);
  });
}

const char* host_view_dtype(void* impl, int32_t dtype, const int64_t* sizes, const int64_t* strides, int64_t ndim,
                            int64_t storage_offset, regen_tensor* out) {
  return guarded([&] {
    Borrowed src(impl);
    at::Tensor view = at::detail::make_tensor<c10::TensorImpl>(
        c10::TensorImpl::VIEW, c10::Storage(src->storage()), src->key_set(),
        c10::scalarTypeToTypeMeta(static_cast<at::ScalarType>(dtype)));
    view.unsafeGetTensorImpl()->set_sizes_and_strides(at::IntArrayRef(sizes, ndim), at::IntArrayRef(strides, ndim),
                                                      storage_offset);
    *out = hand_over(std::move(view));
  });
}

// The intra-op thread count torch.set_num_threads last set, on this thread too. OpenMP keeps the
// count per thread, and torch.set_num_threads sets the calling thread's: autograd runs a device's
// backward on a thread of its own, which read the count once, when it started (so after
// torch.set_num_threads(1), a backward, then torch.set_num_threads(2), every backward kernel of
// the device still ran on one thread, while CPU's ran on two). The Python package counts each
// torch.set_num_threads (regen_runtime::threads_changed); a thread that has not seen the latest
// re-reads the count once (at::init_num_threads applies the one torch.set_num_threads stored).
void sync_num_threads() {
  thread_local uint64_t seen = 0;
  const uint64_t generation = regen_runtime_threads_generation();
  if (generation != seen) {
    at::init_num_threads();
    seen = generation;
  }
}

int host_num_threads() {
  sync_num_threads();
  return at::get_num_threads();
}

// torch.autocast's state for this device (at::autocast's), for the device module's
// is_autocast_enabled and its kin: torch 2.1 to 2.3 keep it through the device module
// (torch/amp/autocast_mode.py's necessary_funcs) and bind no Python function for PrivateUse1's
// state; from 2.4 torch.autocast keeps it itself, per device type, and the per-backend functions
// are deprecated. A dtype crosses as its c10::ScalarType number.
const char* host_autocast_state(bool* enabled, int32_t* dtype) {
  return guarded([&] {
#if REGEN_TORCH_AT_LEAST(2, 4)
    *enabled = at::autocast::is_autocast_enabled(kDevice);
    *dtype = static_cast<int32_t>(at::autocast::get_autocast_dtype(kDevice));
#else
    *enabled = at::autocast::is_privateuseone_enabled();
    *dtype = static_cast<int32_t>(at::autocast::get_autocast_privateuseone_dtype());
#endif
  });
}

const char* host_set_autocast_enabled(bool enabled) {
  return guarded([&] {
#if REGEN_TORCH_AT_LEAST(2, 4)
    at::autocast::set_autocast_enabled(kDevice, enabled);
#else
    at::autocast::set_privateuseone_enabled(enabled);
#endif
  });
}

const char* host_set_autocast_dtype(int32_t dtype) {
  return guarded([&] {
    TORCH_CHECK(dtype >= 0 && dtype < static_cast<int32_t>(c10::ScalarType::NumOptions), REGEN_DEVICE_NAME,
                ": no ScalarType ", dtype);
    auto type = static_cast<c10::ScalarType>(dtype);
    TORCH_CHECK(at::isFloatingType(type), REGEN_DEVICE_NAME ": autocast casts to a floating-point dtype, not ", type);
#if REGEN_TORCH_AT_LEAST(2, 4)
    at::autocast::set_autocast_dtype(kDevice, type);
#else
    at::autocast::set_autocast_privateuseone_dtype(type);
#endif
  });
}

const char* host_record_stream(void* impl, int64_t stream) {
  return guarded([&] {
    auto* tensor = static_cast<c10::TensorImpl*>(impl);
    if (tensor->has_storage()) record_stream(tensor->storage().data_ptr(), stream);
  });
}

const char* host_empty_cpu(const int64_t* sizes, int64_t ndim, int32_t dtype, bool pinned, regen_tensor* out) {
  return guarded([&] {
    c10::Allocator* allocator = pinned ? pinned_allocator() : c10::GetCPUAllocator();
    at::Tensor t = at::detail::empty_generic(at::IntArrayRef(sizes, ndim), allocator,
                                             c10::DispatchKeySet(c10::DispatchKey::CPU),
                                             static_cast<at::ScalarType>(dtype), c10::MemoryFormat::Contiguous);
    *out = hand_over(std::move(t));
  });
}

// Two CPU tensors: ATen's own CPU copy (TensorIterator: broadcasting, conversion, lazy bits).
const char* host_cpu_copy(void* dst, void* src) {
  return guarded([&] {
    Borrowed d(dst);
    d->copy_(*Borrowed(src));
  });
}

bool host_is_pinned(const void* ptr) { return is_pinned_ptr(ptr); }

}  // namespace

const regen_host* services() {
  static const regen_host host = {
      sizeof(regen_host), &host_retain,      &host_release,     &host_empty_strided,
      &host_resize,       &host_as_strided,  &host_set_storage, &host_set_tensor,
      &host_num_threads, &host_view_dtype,  &host_generator_engine,
      &host_autocast_state, &host_set_autocast_enabled, &host_set_autocast_dtype, REGEN_DEVICE_NAME,
      &host_record_stream, &host_empty_cpu, &host_cpu_copy, &host_is_pinned,
  };
  return &host;
}

}  // namespace regen_host_glue
