// The device guard of a regen backend (see glue.h): its devices, streams and events.
#include "glue.h"

#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#if __has_include(<c10/core/DeviceCapability.h>)
#include <c10/core/DeviceCapability.h>
#endif
#include <c10/util/Exception.h>

#include <array>
#include <atomic>
#include <chrono>

namespace regen_host_glue {

// Every way of naming a device index checks it here, as CUDA does for an ordinal it lacks (the
// guard's setDevice and exchangeDevice, so factories, `.to()`, storages and torch.accelerator
// through their device guards; generators; streams; the allocator's statistics): index -1 is
// "the current device". Without it `device="regen:1"` on a one-device backend silently meant
// regen:0.
c10::DeviceIndex check_device_index(c10::DeviceIndex index) {
  if (index == -1) return current_device();
  const c10::DeviceIndex count = device_count();
  // torch_openreg's wording first ("The device index is out of range"), then which devices exist.
  TORCH_CHECK(index >= 0 && index < count, "The device index is out of range: " REGEN_DEVICE_NAME " has ",
              static_cast<int>(count), count == 1 ? " device (index 0)" : " devices", ", not ",
              REGEN_DEVICE_NAME, ":", static_cast<int>(index), " (invalid device index)");
  return index;
}

namespace {

// The devices and the current device are Rust's (regen_runtime::device), so the Python device
// module, this guard and the kernels agree on them. Every kernel runs to completion on the calling
// thread before it returns,
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

// regen_runtime::device::MAX_DEVICES: no backend has more devices.
constexpr size_t kMaxDevices = 16;

std::atomic<c10::StreamId> g_last_stream{0};
// Each thread's current stream on each device (0, the default stream, until one is set).
thread_local std::array<c10::StreamId, kMaxDevices> t_current_stream{};

c10::Stream device_stream(c10::DeviceIndex index, c10::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, device_at(index), id);
}

struct GuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kDevice; }
  c10::Device exchangeDevice(c10::Device d) const override {
    const c10::DeviceIndex index = check_device(d);
    const c10::DeviceIndex previous = current_device();
    if (index != previous) regen_runtime_set_device(index);
    return device_at(previous);
  }
  c10::Device getDevice() const override { return device_at(current_device()); }
  static c10::DeviceIndex check_device(c10::Device d) {
    TORCH_CHECK(d.type() == kDevice, REGEN_DEVICE_NAME " device guard: not a " REGEN_DEVICE_NAME " device: ", d);
    return check_device_index(d.index());
  }
  void setDevice(c10::Device d) const override { regen_runtime_set_device(check_device(d)); }
  // Restores what exchangeDevice returned (a valid index), so the check cannot fail.
  void uncheckedSetDevice(c10::Device d) const noexcept override { regen_runtime_set_device(d.index()); }
  c10::DeviceIndex deviceCount() const noexcept override { return device_count(); }

  // noexcept: a stream names a device this backend has (streams are made by the checked calls
  // below); -1 is the current device.
  static c10::DeviceIndex stream_device(c10::Device d) noexcept {
    const c10::DeviceIndex index = d.index() == -1 ? current_device() : d.index();
    return index >= 0 && static_cast<size_t>(index) < kMaxDevices ? index : 0;
  }
  c10::Stream getStream(c10::Device d) const noexcept override {
    const c10::DeviceIndex index = stream_device(d);
    return device_stream(index, t_current_stream[index]);
  }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override {
    const c10::DeviceIndex index = stream_device(s.device());
    const c10::StreamId previous = t_current_stream[index];
    t_current_stream[index] = s.id();
    return device_stream(index, previous);
  }
  // A stream asked for on a device index the backend lacks (`torch.Stream("regen:5")`) is an
  // error, as setting that device is: the stream would claim a device that does not exist.
  c10::Stream getDefaultStream(c10::Device d) const override { return device_stream(check_device(d), 0); }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool) const override {
    return device_stream(check_device(d), ++g_last_stream);
  }
#if REGEN_TORCH_AT_LEAST(2, 4)
  c10::Stream getNewStream(c10::Device d, int) const override {
    return device_stream(check_device(d), ++g_last_stream);
  }
#endif
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {}
#if REGEN_TORCH_AT_LEAST(2, 6)
  void synchronizeDevice(const c10::DeviceIndex) const override {}
#endif
#if __has_include(<c10/core/DeviceCapability.h>)
  // torch.accelerator.get_device_capability: the dtypes the kernels compute in (regen_runtime's
  // dtype table). Others are stored and copied, but no kernel computes in them.
  c10::DeviceCapability getDeviceCapability(c10::Device d) const override {
    check_device(d);
    c10::DeviceCapability capability;
    capability.capability_data.capability_bits =
        (1ULL << c10::kIndex_Byte) | (1ULL << c10::kIndex_Char) | (1ULL << c10::kIndex_Short) |
        (1ULL << c10::kIndex_Int) | (1ULL << c10::kIndex_Long) | (1ULL << c10::kIndex_Half) |
        (1ULL << c10::kIndex_Float) | (1ULL << c10::kIndex_Double) | (1ULL << c10::kIndex_ComplexFloat) |
        (1ULL << c10::kIndex_ComplexDouble) | (1ULL << c10::kIndex_Bool) | (1ULL << c10::kIndex_BFloat16);
    return capability;
  }
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

}  // namespace
}  // namespace regen_host_glue

// A static registrar, internal to this unit.
C10_REGISTER_GUARD_IMPL(PrivateUse1, regen_host_glue::GuardImpl);
