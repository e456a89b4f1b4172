// Host glue of a regen PrivateUse1 backend, for any device and any torch release from 2.1 on:
// the PrivateUse1 allocator (memory owned by Rust: regen_device_alloc / regen_device_free), a
// device guard for one device, the PrivateUse1 hooks, the device's random generator (its engine is
// Rust's), and the services (regen_host.h) Rust uses to create and reshape tensors and to reach
// torch.autocast's state. Compiled into the backend's shared library next to the generated
// registrations; the static initialiser at the bottom wires everything when
// `torch.ops.load_library` loads it, then hands the services to Rust (regen_backend_init).
//
// The device's name comes from the command line (-DREGEN_DEVICE_NAME="\"mydev\""); it only
// appears in error messages. Every symbol defined here is internal (anonymous namespace), so two
// backends loaded into the same process never clash; the only external names are the three
// functions Rust exports and the regen_runtime_rng_* engine functions (regen_host.h).
//
// The c10/ATen interfaces this file implements changed between releases; each difference is
// branched on TORCH_VERSION_MAJOR / TORCH_VERSION_MINOR below, with the release that changed it.
#include <torch/version.h>

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/Generator.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/Resize.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "regen_host.h"
#include "regen_marshal.h"

#define REGEN_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if !REGEN_TORCH_AT_LEAST(2, 6)
// torch.Generator(device=...) asks REGISTER_GENERATOR_PRIVATEUSE1's function until 2.5, the hooks'
// getNewGenerator from 2.6 (which deprecates the macro).
#include <ATen/core/GeneratorForPrivateuseone.h>
#endif

#if REGEN_TORCH_AT_LEAST(2, 9)
// c10::DeviceAllocator, which torch.accelerator.memory_allocated and its kin ask for (absent in
// 2.8.0, present in 2.9.0 with the pure virtuals overridden below).
#include <c10/core/CachingDeviceAllocator.h>
#endif

#if !REGEN_TORCH_AT_LEAST(2, 1)
#error "regen host glue: torch 2.1 or newer is required (at::RegisterPrivateUse1HooksInterface)"
#endif

#ifndef REGEN_DEVICE_NAME
#define REGEN_DEVICE_NAME "privateuse1"
#endif

namespace regen_host_glue {
namespace {

constexpr c10::DeviceType kDevice = c10::DeviceType::PrivateUse1;
const c10::Device kOnlyDevice(kDevice, 0);
constexpr const char* kWhat = REGEN_DEVICE_NAME " host glue";

static void free_device_memory(void* ptr) { regen_device_free(ptr); }

// Every way of naming a device index checks it here, as CUDA does for an ordinal it lacks (the
// guard's setDevice and exchangeDevice, so factories, `.to()`, storages and torch.accelerator
// through their device guards; generators; streams; the allocator's statistics): index -1 is
// "the current device", which is device 0. Without it `device="regen:1"` silently meant regen:0.
void check_device_index(c10::DeviceIndex index) {
  TORCH_CHECK(index <= 0, REGEN_DEVICE_NAME " has one device (index 0), not ", REGEN_DEVICE_NAME, ":",
              static_cast<int>(index), " (invalid device index)");
}

// "1.50 GiB": sizes in an out-of-memory message, as CUDA's caching allocator writes them.
std::string format_size(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double size = static_cast<double>(bytes);
  int unit = 0;
  while (size >= 1024.0 && unit < 4) {
    size /= 1024.0;
    ++unit;
  }
  if (unit == 0) return std::to_string(bytes) + " bytes";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f %s", size, units[unit]);
  return text;
}

// An allocation regen_device_alloc refused, raised as c10::OutOfMemoryError (torch.OutOfMemoryError
// in Python, which programs catch to shrink a batch), naming what was asked for, the limit and
// what is in use, as CUDA's "Tried to allocate ..." does; exact byte counts too, for a test or a
// user working out how far over they are.
[[noreturn]] void raise_out_of_memory(size_t n) {
  const uint64_t limit = regen_runtime_memory_limit();
  const uint64_t in_use = regen_runtime_bytes_in_use();
  if (limit != UINT64_MAX) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, REGEN_DEVICE_NAME ": out of device memory. Tried to allocate ",
                     format_size(n), " (", n, " bytes); the memory limit is ", format_size(limit), " (", limit,
                     " bytes), of which ", format_size(in_use), " (", in_use,
                     " bytes) is in use. The limit is REGEN_MEMORY_LIMIT or torch." REGEN_DEVICE_NAME
                     ".set_memory_limit().");
  }
  TORCH_CHECK_WITH(OutOfMemoryError, false, REGEN_DEVICE_NAME ": out of device memory. Tried to allocate ",
                   format_size(n), " (", n, " bytes); the host has no memory for it, with ", format_size(in_use),
                   " (", in_use, " bytes) in use by the device.");
  // TORCH_CHECK_WITH throws; this keeps [[noreturn]] true for the compiler.
  std::abort();
}

// Device memory is whatever Rust's regen_device_alloc returns; Rust frees it. From 2.9 it is a
// c10::DeviceAllocator, so torch.accelerator's memory statistics read Rust's counters: nothing is
// cached, so the bytes allocated, active and reserved are one figure, and there are no pools or
// segments to count.
#if REGEN_TORCH_AT_LEAST(2, 9)
struct RustAllocator final : c10::DeviceAllocator {
#else
struct RustAllocator final : c10::Allocator {
#endif
#if REGEN_TORCH_AT_LEAST(2, 3)
  c10::DataPtr allocate(size_t n) override {
#else
  // Until 2.2, Allocator::allocate is const (c10/core/Allocator.h:157 in 2.2.2).
  c10::DataPtr allocate(size_t n) const override {
#endif
    void* ptr = n == 0 ? nullptr : regen_device_alloc(n);
    if (n != 0 && ptr == nullptr) raise_out_of_memory(n);
    return {ptr, ptr, &free_device_memory, kOnlyDevice};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_device_memory; }
#if REGEN_TORCH_AT_LEAST(2, 3)
  // Pure virtual since 2.3 (c10/core/Allocator.h:205 in 2.3.1); absent before.
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }
#endif
#if REGEN_TORCH_AT_LEAST(2, 9)
  bool initialized() override { return true; }
  void emptyCache(c10::MempoolId_t) override {}
  // Kernels run synchronously on the host: a block is free to reuse as soon as its storage dies.
  void recordStream(const c10::DataPtr&, c10::Stream) override {}
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    check_device_index(device);
    c10::CachingDeviceAllocator::DeviceStats stats;
    decltype(stats.allocated_bytes)::value_type in_use;
    in_use.current = static_cast<int64_t>(regen_runtime_bytes_in_use());
    in_use.peak = static_cast<int64_t>(regen_runtime_peak_bytes());
    const size_t all = 0;  // StatType::AGGREGATE, the "all" of memory_stats()
    stats.allocated_bytes[all] = in_use;
    stats.active_bytes[all] = in_use;
    stats.reserved_bytes[all] = in_use;
    stats.requested_bytes[all] = in_use;
    return stats;
  }
  // Rust counts no totals (allocated / freed), so there is nothing accumulated to reset.
  void resetAccumulatedStats(c10::DeviceIndex device) override { check_device_index(device); }
  void resetPeakStats(c10::DeviceIndex device) override {
    check_device_index(device);
    regen_runtime_reset_peak_bytes();
  }
#if REGEN_TORCH_AT_LEAST(2, 10)
  // Absent in 2.9.0, there in 2.10.0 (torch.accelerator.get_memory_info raises without it).
  // Device memory is host memory: free is what the host has available, total its physical memory.
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    check_device_index(device);
    long page = sysconf(_SC_PAGESIZE);
    long free_pages = sysconf(_SC_AVPHYS_PAGES);
    long pages = sysconf(_SC_PHYS_PAGES);
    TORCH_CHECK(page > 0 && free_pages >= 0 && pages > 0, REGEN_DEVICE_NAME ": cannot read the host's memory size");
    return {static_cast<size_t>(free_pages) * static_cast<size_t>(page),
            static_cast<size_t>(pages) * static_cast<size_t>(page)};
  }
#endif
#endif
};

RustAllocator g_allocator;

// Pinned host memory (pin_memory(), pin_memory=True): the device reads host memory directly, so
// there is nothing to page-lock; the blocks are CPU memory whose ranges are remembered, so that
// is_pinned() tells them from pageable memory, as CUDA's hooks do (any address inside a block).
std::mutex g_pinned_mutex;
std::map<uintptr_t, size_t> g_pinned;  // start -> bytes

bool is_pinned_ptr(const void* ptr) {
  auto at = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(g_pinned_mutex);
  auto next = g_pinned.upper_bound(at);
  if (next == g_pinned.begin()) return false;
  auto block = std::prev(next);
  return at - block->first < block->second;
}

static void free_pinned(void* ptr) {
  {
    std::lock_guard<std::mutex> lock(g_pinned_mutex);
    g_pinned.erase(reinterpret_cast<uintptr_t>(ptr));
  }
  c10::free_cpu(ptr);
}

struct PinnedAllocator final : c10::Allocator {
#if REGEN_TORCH_AT_LEAST(2, 3)
  c10::DataPtr allocate(size_t n) override {
#else
  c10::DataPtr allocate(size_t n) const override {
#endif
    void* ptr = n == 0 ? nullptr : c10::alloc_cpu(n);  // alloc_cpu raises CPU's out-of-memory error
    if (ptr != nullptr) {
      std::lock_guard<std::mutex> lock(g_pinned_mutex);
      g_pinned[reinterpret_cast<uintptr_t>(ptr)] = n;
    }
    return {ptr, ptr, &free_pinned, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }
#if REGEN_TORCH_AT_LEAST(2, 3)
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }
#endif
};

PinnedAllocator g_pinned_allocator;

// One device, index 0. Every kernel runs to completion on the calling thread before it returns,
// so streams and events only keep the bookkeeping torch.Stream / torch.Event expect: distinct
// streams (ids from a counter; 0 is the default stream) and a per-thread current stream; every
// stream is always idle, every recorded event complete, and waiting is a no-op. An event is a host
// timestamp taken when it is recorded, which elapsed_time subtracts.
// getStream / exchangeStream are noexcept pure virtuals until 2.6 and plain ones from 2.7; a
// noexcept override satisfies both. The other stream and event methods have default bodies that
// raise "Backend doesn't support ..." (c10/core/impl/DeviceGuardImplInterface.h, read in the
// 2.1.2, 2.2.2, 2.3.1, 2.4.1, 2.5.1, 2.6.0, 2.8.0, 2.9.0 and 2.15 wheels):
//   2.1      getDefaultStream, getStreamFromGlobalPool, record, block, queryEvent, destroyEvent,
//            queryStream, synchronizeStream as here
//   2.4      getNewStream, synchronizeEvent, elapsedTime (absent in 2.3.1)
//   2.6      synchronizeDevice (absent in 2.5.1)
//   2.8-2.15 unchanged
// InlineEvent (torch.Event) checks that both events were recorded (2.1-2.6: a RuntimeError; 2.8
// on: CUDA's ValueError, and that both time); elapsedTime checks both again for 2.4-2.6.
struct Event {
  bool timing;
  std::chrono::steady_clock::time_point when;
};

std::atomic<c10::StreamId> g_last_stream{0};
thread_local c10::StreamId t_current_stream = 0;

c10::Stream device_stream(c10::StreamId id) { return c10::Stream(c10::Stream::UNSAFE, kOnlyDevice, id); }

struct GuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kDevice; }
  c10::Device exchangeDevice(c10::Device d) const override {
    check_device(d);
    return kOnlyDevice;
  }
  c10::Device getDevice() const override { return kOnlyDevice; }
  static void check_device(c10::Device d) {
    TORCH_CHECK(d.type() == kDevice, REGEN_DEVICE_NAME " device guard: not a " REGEN_DEVICE_NAME " device: ", d);
    check_device_index(d.index());
  }
  void setDevice(c10::Device d) const override { check_device(d); }
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }

  c10::Stream getStream(c10::Device) const noexcept override { return device_stream(t_current_stream); }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override {
    c10::StreamId previous = t_current_stream;
    t_current_stream = s.id();
    return device_stream(previous);
  }
  // A stream asked for on another device index (`torch.Stream("regen:1")`) is an error, as
  // setting that device is: the stream would claim a device that does not exist.
  c10::Stream getDefaultStream(c10::Device d) const override {
    check_device(d);
    return device_stream(0);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool) const override {
    check_device(d);
    return device_stream(++g_last_stream);
  }
#if REGEN_TORCH_AT_LEAST(2, 4)
  c10::Stream getNewStream(c10::Device d, int) const override {
    check_device(d);
    return device_stream(++g_last_stream);
  }
#endif
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {}
#if REGEN_TORCH_AT_LEAST(2, 6)
  void synchronizeDevice(const c10::DeviceIndex) const override {}
#endif

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    // CUDA's wording (c10/cuda/impl/CUDAGuardImpl.h).
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "Event device index ",
                static_cast<int>(device_index), " does not match recording stream's device index ",
                static_cast<int>(stream.device_index()), ".");
    if (*event == nullptr) *event = new Event{flag == c10::EventFlag::BACKEND_DEFAULT, {}};
    static_cast<Event*>(*event)->when = std::chrono::steady_clock::now();
  }
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override { delete static_cast<Event*>(event); }
#if REGEN_TORCH_AT_LEAST(2, 4)
  void synchronizeEvent(void*) const override {}
  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    TORCH_CHECK_VALUE(start != nullptr && end != nullptr,
                      "Both events must be recorded before calculating elapsed time.");
    const auto* a = static_cast<const Event*>(start);
    const auto* b = static_cast<const Event*>(end);
    TORCH_CHECK_VALUE(a->timing && b->timing, "Both events must be created with argument 'enable_timing=True'.");
    return std::chrono::duration<double, std::milli>(b->when - a->when).count();
  }
#endif
};

// The device's random generator: PyTorch's CPU generator ported to Rust (regen_runtime::rng), so
// a seed gives the same numbers as on CPU and states are torch.get_rng_state()'s bytes. The
// engine is Rust's; this class is what torch sees (torch.Generator(device=...), the default
// generator, get/set_state, clone). Kernels reach the engine through the generator_engine service
// and lock it themselves, as ATen's kernels lock mutex_; torch locks mutex_ around these methods.
// The pure virtuals of c10::GeneratorImpl are the same from 2.1 to 2.15.
struct DeviceGenerator final : c10::GeneratorImpl {
  // Takes ownership of `engine` (the default engine is never freed by Rust).
  explicit DeviceGenerator(void* engine)
      : c10::GeneratorImpl{kOnlyDevice, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)}, engine_(engine) {
    TORCH_CHECK(engine_ != nullptr, REGEN_DEVICE_NAME ": no random engine");
  }
  ~DeviceGenerator() override { regen_runtime_rng_free(engine_); }
  DeviceGenerator(const DeviceGenerator&) = delete;
  DeviceGenerator& operator=(const DeviceGenerator&) = delete;

  void set_current_seed(uint64_t seed) override { regen_runtime_rng_set_seed(engine_, seed); }
  // As CPU's generator: mt19937 has no offset.
  void set_offset(uint64_t) override { TORCH_CHECK(false, REGEN_DEVICE_NAME " Generator does not use offset"); }
  uint64_t get_offset() const override { TORCH_CHECK(false, REGEN_DEVICE_NAME " Generator does not use offset"); }
  uint64_t current_seed() const override { return regen_runtime_rng_current_seed(engine_); }
  uint64_t seed() override {
    uint64_t random = c10::detail::getNonDeterministicRandom();
    set_current_seed(random);
    return random;
  }
  void set_state(const c10::TensorImpl& new_state) override {
    at::detail::check_rng_state(new_state);
    const char* error = regen_runtime_rng_set_state(engine_, static_cast<const uint8_t*>(new_state.data()),
                                                    static_cast<size_t>(new_state.numel()));
    TORCH_CHECK(error == nullptr, error);
  }
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
    size_t size = regen_runtime_rng_state_size();
    at::Tensor state = at::empty({static_cast<int64_t>(size)}, at::TensorOptions().dtype(at::kByte));
    regen_runtime_rng_get_state(engine_, state.data_ptr<uint8_t>(), size);
    return state.getIntrusivePtr();
  }
  void* engine() const { return engine_; }

 private:
  DeviceGenerator* clone_impl() const override { return new DeviceGenerator(regen_runtime_rng_clone(engine_)); }
  void* engine_;
};

const at::Generator& default_generator() {
  static at::Generator gen = at::make_generator<DeviceGenerator>(regen_runtime_rng_default());
  return gen;
}

at::Generator new_generator() {
  return at::make_generator<DeviceGenerator>(regen_runtime_rng_new(c10::default_rng_seed_val));
}

// No method of PrivateUse1HooksInterface is pure virtual at that level in any release (from 2.3
// its base AcceleratorHooksInterface declares hasPrimaryContext pure, and PrivateUse1 gives it a
// throwing default); a method left out throws "You should register `PrivateUse1HooksInterface`"
// when torch calls it. The set and signatures changed as follows (ATen/detail/*HooksInterface.h):
//   2.1-2.2  own base: getDefaultGenerator (not const), getDeviceFromPtr
//   2.3      AcceleratorHooksInterface base (hasPrimaryContext); getPinnedMemoryAllocator,
//            resizePrivateUse1Bytes, initPrivateUse1
//   2.4      deviceCount, getCurrentDevice (and set/exchange/maybeExchangeDevice) in the base
//   2.5      getDefaultGenerator const; isPinnedPtr
//   2.6      getNewGenerator; init replaces initPrivateUse1
//   2.7      isBuilt, isAvailable in the base (default false); from 2.8 PrivateUse1 makes them throw
//   2.8-2.15 unchanged
struct Hooks final : at::PrivateUse1HooksInterface {
#if REGEN_TORCH_AT_LEAST(2, 7)
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
#endif
#if REGEN_TORCH_AT_LEAST(2, 3)
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::Allocator* getPinnedMemoryAllocator() const override { return &g_pinned_allocator; }
  // resize_bytes_nocuda exists from 2.3 too (ATen/native/Resize.h).
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    at::native::resize_bytes_nocuda(storage, static_cast<int64_t>(newsize));
  }
#endif
#if REGEN_TORCH_AT_LEAST(2, 4)
  c10::DeviceIndex deviceCount() const override { return 1; }
  c10::DeviceIndex getCurrentDevice() const override { return 0; }
#endif
#if REGEN_TORCH_AT_LEAST(2, 5)
  bool isPinnedPtr(const void* data) const override { return is_pinned_ptr(data); }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) const override {
    check_device_index(index);
    return default_generator();
  }
#else
  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) override {
    check_device_index(index);
    return default_generator();
  }
#endif
#if REGEN_TORCH_AT_LEAST(2, 6)
  at::Generator getNewGenerator(c10::DeviceIndex index) const override {
    check_device_index(index);
    return new_generator();
  }
#endif
  at::Device getDeviceFromPtr(void*) const override { return kOnlyDevice; }
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
  regen_tensor desc = ::regen::lift_tensor(t, kWhat);
  (void)t.unsafeReleaseTensorImpl();
  return desc;
}

// The services (regen_host.h). Internal: Rust reaches them only through the table.

static void host_retain(void* impl) { c10::raw::intrusive_ptr::incref(static_cast<c10::TensorImpl*>(impl)); }

static void host_release(void* impl) { c10::raw::intrusive_ptr::decref(static_cast<c10::TensorImpl*>(impl)); }

static const char* host_empty_strided(const int64_t* sizes, const int64_t* strides, int64_t ndim, int32_t dtype,
                                      regen_tensor* out) {
  return guarded([&] {
    at::Tensor t = at::detail::empty_strided_generic(at::IntArrayRef(sizes, ndim), at::IntArrayRef(strides, ndim),
                                                     &g_allocator, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                                     static_cast<at::ScalarType>(dtype));
    *out = hand_over(std::move(t));
  });
}

static const char* host_resize(void* impl, const int64_t* sizes, int64_t ndim, regen_tensor* out) {
  return guarded([&] {
    // No strides: contiguous. A default-constructed OptionalIntArrayRef, since std::nullopt does not
    // convert to it in 2.1 (c10::optional is its own class there, not std::optional).
    at::native::resize_impl_cpu_(static_cast<c10::TensorImpl*>(impl), at::IntArrayRef(sizes, ndim),
                                 at::OptionalIntArrayRef());
    *out = ::regen::lift_tensor(borrow(impl), kWhat);
  });
}

static const char* host_as_strided(void* impl, const int64_t* sizes, const int64_t* strides, int64_t ndim,
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

// set_ as CPU's set_storage_cpu_ (ATen/native/TensorShape.cpp) does it, with ATen's own checks
// (checkSetStorage: a storage of another device or a negative offset is an error with CPU's
// message); `strides` NULL means none were given (`set_(storage, offset, size)`), so the strides
// are contiguous; a single size of -1 asks for the whole storage as one dimension.
static void set_storage_like_cpu(at::Tensor& self, c10::Storage storage, int64_t storage_offset, at::IntArrayRef size,
                                 const int64_t* strides) {
  at::IntArrayRef stride = strides != nullptr ? at::IntArrayRef(strides, size.size()) : at::IntArrayRef();
  at::native::checkSetStorage(self, std::move(storage), storage_offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_offset(storage_offset);
  at::native::resize_impl_cpu_(self.unsafeGetTensorImpl(), size,
                               strides != nullptr ? at::OptionalIntArrayRef(stride) : at::OptionalIntArrayRef(),
                               /*resize_storage=*/true);
}

static const char* host_set_storage(void* impl, void* storage, int64_t storage_offset, const int64_t* sizes,
                                    const int64_t* strides, int64_t ndim, regen_tensor* out) {
  return guarded([&] {
    at::Tensor self = borrow(impl);
    c10::Storage st = storage != nullptr
        ? c10::Storage(c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(static_cast<c10::StorageImpl*>(storage)))
        : c10::Storage(c10::Storage::use_byte_size_t(), 0, &g_allocator, /*resizable=*/true);
    int64_t whole = static_cast<int64_t>(st.nbytes() / self.dtype().itemsize());
    at::IntArrayRef size = ndim == 1 && sizes[0] == -1 ? at::IntArrayRef(&whole, 1) : at::IntArrayRef(sizes, ndim);
    set_storage_like_cpu(self, std::move(st), storage_offset, size, strides);
    *out = ::regen::lift_tensor(self, kWhat);
  });
}

static const char* host_set_tensor(void* impl, void* source, regen_tensor* out) {
  return guarded([&] {
    at::Tensor self = borrow(impl);
    at::Tensor src = borrow(source);
    // CPU's set_tensor_: the source's storage and geometry, with the same checks (a CPU source
    // for a device tensor is an error, not a device tensor pointing at host memory).
    set_storage_like_cpu(self, src.storage(), src.storage_offset(), src.sizes(), src.strides().data());
    *out = ::regen::lift_tensor(self, kWhat);
  });
}

const char* host_view_dtype(void* impl, int32_t dtype, const int64_t* sizes, const int64_t* strides, int64_t ndim,
                            int64_t storage_offset, regen_tensor* out) {
  return guarded([&] {
    at::Tensor src = borrow(impl);
    at::Tensor view = at::detail::make_tensor<c10::TensorImpl>(
        c10::TensorImpl::VIEW, c10::Storage(src.storage()), src.key_set(),
        c10::scalarTypeToTypeMeta(static_cast<at::ScalarType>(dtype)));
    view.unsafeGetTensorImpl()->set_sizes_and_strides(at::IntArrayRef(sizes, ndim), at::IntArrayRef(strides, ndim),
                                                      storage_offset);
    *out = hand_over(std::move(view));
  });
}

void host_parallel_for(int64_t n, int64_t grain, void (*f)(void*, int64_t, int64_t), void* ctx) {
  at::parallel_for(0, n, grain, [&](int64_t begin, int64_t end) { f(ctx, begin, end); });
}

int host_num_threads() { return at::get_num_threads(); }

const char* host_generator_engine(void* generator_impl, void** engine) {
  return guarded([&] {
    auto* gen = static_cast<c10::GeneratorImpl*>(generator_impl);
    // ATen's check_generator, word for word.
    TORCH_CHECK(gen->device().type() == kDevice, "Expected a '", kDevice, "' device type for generator but found '",
                gen->device().type(), "'");
    auto* device_gen = dynamic_cast<DeviceGenerator*>(gen);
    TORCH_CHECK(device_gen != nullptr, REGEN_DEVICE_NAME ": a generator of another PrivateUse1 backend");
    *engine = device_gen->engine();
  });
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

// torch._has_compatible_shallow_copy_type for this device: c10's TensorImpl answers true for
// dense tensors of CPU, CUDA and a few other backends only, and its note (c10/core/TensorImpl.h,
// has_compatible_shallow_copy_type) asks a PrivateUse1 backend to provide this operator. Without
// it `Module._apply` (model.to(device)) makes new Parameters instead of `param.data = ...`: tied
// weights come apart and optimizers built before `.to()` hold stale tensors; `param.data =
// device_tensor` raises. Dense tensors of this device and of CPU are compatible, as CUDA's and
// CPU's are (their memory is host memory here, and TensorImpl's metadata is the same).
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  if (self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set())) return true;
  auto dense_host = [](const at::Tensor& t) {
    c10::DispatchKeySet ks = t.key_set();
    // Dense functionality (not sparse, quantized, ...) on CPU or this device.
    return ks.has_any(c10::DispatchKeySet(c10::DispatchKey::Dense)) &&
        ks.has_any(c10::DispatchKeySet({c10::BackendComponent::CPUBit, c10::BackendComponent::PrivateUse1Bit}));
  };
  return dense_host(self) && dense_host(from);
}

#if !REGEN_TORCH_AT_LEAST(2, 6)
at::Generator make_generator_for_device(c10::DeviceIndex index) {
  check_device_index(index);
  return new_generator();
}
#endif

struct Init {
  Init() {
    static Hooks hooks;
    at::RegisterPrivateUse1HooksInterface(&hooks);
    static const regen_host host = {
        sizeof(regen_host), &host_retain,      &host_release,     &host_empty_strided,
        &host_resize,       &host_as_strided,  &host_set_storage, &host_set_tensor,
        &host_parallel_for, &host_num_threads, &host_view_dtype,  &host_generator_engine,
        &host_autocast_state, &host_set_autocast_enabled, &host_set_autocast_dtype,
    };
    regen_backend_init(&host);
  }
};

}  // namespace
}  // namespace regen_host_glue

// Both macros define internal (anonymous-namespace / static) registrars.
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &regen_host_glue::g_allocator);
C10_REGISTER_GUARD_IMPL(PrivateUse1, regen_host_glue::GuardImpl);
#if !REGEN_TORCH_AT_LEAST(2, 6)
// The macro pastes its argument into a variable name: an unqualified name.
static at::Generator regen_make_generator(c10::DeviceIndex i) { return regen_host_glue::make_generator_for_device(i); }
REGISTER_GENERATOR_PRIVATEUSE1(regen_make_generator)
#endif

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", &regen_host_glue::has_compatible_shallow_copy_type);
}
// And at AutogradPrivateUse1: the op is CompositeImplicitAutograd, whose kernel fills a backend's
// Autograd key only while that backend has no kernel of its own. This one has, so on releases
// without an AutogradPrivateUse1 fallback (2.4) the call found nothing there ("Could not run
// 'aten::_has_compatible_shallow_copy_type' with arguments from the 'Autograd<device>' backend").
// A bool has nothing to differentiate.
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", &regen_host_glue::has_compatible_shallow_copy_type);
}

// Runs when the shared library is loaded, after the allocator and guard registrations above
// (one translation unit initialises in order of definition).
static regen_host_glue::Init regen_host_init;
