// Host glue of the "regen" device: the PrivateUse1 allocator (memory owned by Rust), a device
// guard for one device, the PrivateUse1 hooks torch 2.15 requires, and the services
// (regen_host.h) Rust kernels use to create and reshape tensors. Loaded as part of the
// runtime's shared library; the static initialiser at the bottom wires everything at load.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/Resize.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <cstring>
#include <string>

#include "regen_host.h"
#include "regen_marshal.h"

namespace regen_host_glue {
namespace {

constexpr c10::DeviceType kDevice = c10::DeviceType::PrivateUse1;
const c10::Device kOnlyDevice(kDevice, 0);

void free_device_memory(void* ptr) { regen_device_free(ptr); }

struct RustAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    void* ptr = n == 0 ? nullptr : regen_device_alloc(n);
    TORCH_CHECK(n == 0 || ptr != nullptr, "regen: out of device memory allocating ", n, " bytes");
    return {ptr, ptr, &free_device_memory, kOnlyDevice};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_device_memory; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }
};

RustAllocator g_allocator;

// One device, index 0, with one default stream: device memory is host memory.
struct GuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kDevice; }
  c10::Device exchangeDevice(c10::Device) const override { return kOnlyDevice; }
  c10::Device getDevice() const override { return kOnlyDevice; }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kDevice && d.index() <= 0, "regen has one device (index 0), not ", d);
  }
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device) const override { return c10::Stream(c10::Stream::DEFAULT, kOnlyDevice); }
  c10::Stream exchangeStream(c10::Stream) const override { return c10::Stream(c10::Stream::DEFAULT, kOnlyDevice); }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
};

struct Hooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override { return 1; }
  c10::DeviceIndex getCurrentDevice() const override { return 0; }
  // Random ops run through the CPU fallback, so they draw from CPU generators.
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override {
    return at::detail::getDefaultCPUGenerator();
  }
  at::Generator getNewGenerator(c10::DeviceIndex) const override { return at::detail::createCPUGenerator(); }
  at::Device getDeviceFromPtr(void*) const override { return kOnlyDevice; }
  c10::Allocator* getPinnedMemoryAllocator() const override { return c10::GetCPUAllocator(); }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    at::native::resize_bytes_nocuda(storage, static_cast<int64_t>(newsize));
  }
};

thread_local std::string g_error;

template <class F>
const char* guarded(F&& f) noexcept {
  try {
    f();
    return nullptr;
  } catch (const c10::Error& e) {
    g_error = e.what_without_backtrace();
  } catch (const std::exception& e) {
    g_error = e.what();
  } catch (...) {
    g_error = "unknown C++ exception";
  }
  return g_error.c_str();
}

// A new owning handle to `impl` (the caller's reference stays).
at::Tensor borrow(void* impl) {
  return at::Tensor(c10::intrusive_ptr<c10::TensorImpl>::reclaim_copy(static_cast<c10::TensorImpl*>(impl)));
}

// Describes `t` and hands one reference to the caller.
regen_tensor hand_over(at::Tensor t) {
  regen_tensor desc = ::regen::lift_tensor(t, "regen host");
  (void)t.unsafeReleaseTensorImpl();
  return desc;
}

extern "C" void host_retain(void* impl) { c10::raw::intrusive_ptr::incref(static_cast<c10::TensorImpl*>(impl)); }

extern "C" void host_release(void* impl) { c10::raw::intrusive_ptr::decref(static_cast<c10::TensorImpl*>(impl)); }

extern "C" const char* host_empty_strided(const int64_t* sizes, const int64_t* strides, int64_t ndim, int32_t dtype,
                                          regen_tensor* out) {
  return guarded([&] {
    at::Tensor t = at::detail::empty_strided_generic(at::IntArrayRef(sizes, ndim), at::IntArrayRef(strides, ndim),
                                                     &g_allocator, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                     static_cast<at::ScalarType>(dtype));
    *out = hand_over(std::move(t));
  });
}

extern "C" const char* host_resize(void* impl, const int64_t* sizes, int64_t ndim, regen_tensor* out) {
  return guarded([&] {
    at::native::resize_impl_cpu_(static_cast<c10::TensorImpl*>(impl), at::IntArrayRef(sizes, ndim), std::nullopt);
    *out = ::regen::lift_tensor(borrow(impl), "regen host");
  });
}

extern "C" const char* host_as_strided(void* impl, const int64_t* sizes, const int64_t* strides, int64_t ndim,
                                       int64_t storage_offset, regen_tensor* out) {
  return guarded([&] {
    at::Tensor src = borrow(impl);
    at::Tensor view = at::detail::make_tensor<c10::TensorImpl>(c10::TensorImpl::VIEW, c10::Storage(src.storage()),
                                                               src.key_set(), src.dtype());
    view.unsafeGetTensorImpl()->set_sizes_and_strides(at::IntArrayRef(sizes, ndim), at::IntArrayRef(strides, ndim),
                                                      storage_offset);
    *out = hand_over(std::move(view));
  });
}

extern "C" const char* host_set_storage(void* impl, void* storage, int64_t storage_offset, const int64_t* sizes,
                                        const int64_t* strides, int64_t ndim, regen_tensor* out) {
  return guarded([&] {
    auto* self = static_cast<c10::TensorImpl*>(impl);
    c10::Storage st = storage != nullptr
        ? c10::Storage(c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(static_cast<c10::StorageImpl*>(storage)))
        : c10::Storage(c10::Storage::use_byte_size_t(), 0, &g_allocator, /*resizable=*/true);
    // A single size of -1 asks for the whole storage as one dimension (set_.source_Storage).
    int64_t whole = static_cast<int64_t>(st.nbytes() / self->dtype().itemsize());
    self->set_storage_keep_dtype(std::move(st));
    if (ndim == 1 && sizes[0] == -1) {
      self->set_sizes_and_strides(at::IntArrayRef(&whole, 1), at::IntArrayRef(strides, 1), storage_offset);
    } else {
      self->set_sizes_and_strides(at::IntArrayRef(sizes, ndim), at::IntArrayRef(strides, ndim), storage_offset);
    }
    *out = ::regen::lift_tensor(borrow(impl), "regen host");
  });
}

extern "C" const char* host_set_tensor(void* impl, void* source, regen_tensor* out) {
  return guarded([&] {
    at::Tensor src = borrow(source);
    auto* self = static_cast<c10::TensorImpl*>(impl);
    self->set_storage_keep_dtype(src.storage());
    self->set_sizes_and_strides(src.sizes(), src.strides(), src.storage_offset());
    *out = ::regen::lift_tensor(borrow(impl), "regen host");
  });
}

struct Init {
  Init() {
    static Hooks hooks;
    at::RegisterPrivateUse1HooksInterface(&hooks);
    static const regen_host host = {
        sizeof(regen_host), &host_retain,      &host_release,     &host_empty_strided,
        &host_resize,       &host_as_strided,  &host_set_storage, &host_set_tensor,
    };
    regen_runtime_init(&host);
  }
};

}  // namespace
}  // namespace regen_host_glue

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &regen_host_glue::g_allocator);
C10_REGISTER_GUARD_IMPL(PrivateUse1, regen_host_glue::GuardImpl);

// Runs when the shared library is loaded, after the allocator and guard registrations above.
static regen_host_glue::Init regen_host_init;
