// The device guard of a regen backend (see glue.h): its devices, streams and events.
#include "glue.h"

#include <c10/core/Stream.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#if __has_include(<c10/core/DeviceCapability.h>)
#include <c10/core/DeviceCapability.h>
#endif
#include <c10/util/Exception.h>

#include <cstdint>

namespace regen_host_glue {

// Every way of naming a device index checks it here, as CUDA does for an ordinal it lacks (the
// guard's setDevice and exchangeDevice, so factories, `.to()`, storages and torch.accelerator
// through their device guards; generators; streams; the allocator's statistics): index -1 is
// "the current device". Without it `device="regen:1"` on a one-device backend silently meant
// regen:0.
c10::DeviceIndex check_device_index(c10::DeviceIndex index) {
  if (index == -1) return current_device();
  const c10::DeviceIndex count = device_count();
  // torch_openreg's wording first ("The device index is out of range"), then which devices exist;
  // the runtime (device::invalid) and the Python device module word it the same.
  TORCH_CHECK(index >= 0 && index < count, "The device index is out of range: " REGEN_DEVICE_NAME " has ",
              count == 1 ? std::string("one device (index 0)")
                         : std::to_string(count) + " devices (indices 0 to " + std::to_string(count - 1) + ")",
              ", not " REGEN_DEVICE_NAME ":", static_cast<int>(index), " (invalid device index)");
  return index;
}

namespace {

// The devices, the current device and each thread's current stream per device are Rust's
// (regen_runtime::device), so the Python device module, this guard, the allocator (a pool per
// stream) and the kernels (which run on the current stream) agree on them. Streams and events are
// the backend's device layer's (regen_runtime::device::layer; the default one is a synchronous
// host device: every stream idle, every recorded event complete, an event a host timestamp).
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

c10::Stream device_stream(c10::DeviceIndex index, c10::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, device_at(index), id);
}

// A message from a Rust stream or event function raised as a RuntimeError.
void check(const char* error) { TORCH_CHECK(error == nullptr, REGEN_DEVICE_NAME ": ", error); }

// An event's handle is the layer's (a u64), kept in c10's void* slot.
uint64_t handle(void* event) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(event)); }

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
    return d.index() == -1 ? current_device() : d.index();
  }
  c10::Stream getStream(c10::Device d) const noexcept override {
    const c10::DeviceIndex index = stream_device(d);
    return device_stream(index, regen_runtime_current_stream(index));
  }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override {
    const c10::DeviceIndex index = stream_device(s.device());
    const c10::StreamId previous = regen_runtime_current_stream(index);
    regen_runtime_set_current_stream(index, s.id());
    return device_stream(index, previous);
  }
  // A stream asked for on a device index the backend lacks (`torch.Stream("regen:5")`) is an
  // error, as setting that device is: the stream would claim a device that does not exist.
  c10::Stream getDefaultStream(c10::Device d) const override { return device_stream(check_device(d), 0); }
  static c10::Stream new_stream(c10::Device d, int priority) {
    const c10::DeviceIndex index = check_device(d);
    int64_t id = 0;
    check(regen_runtime_stream_new(index, priority, &id));
    return device_stream(index, id);
  }
  // CUDA hands out streams from a fixed pool; a layer's streams are cheap to ask for, so each
  // call makes a new one (a layer that must bound them reuses its own).
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool high_priority) const override {
    return new_stream(d, high_priority ? -1 : 0);
  }
#if REGEN_TORCH_AT_LEAST(2, 4)
  c10::Stream getNewStream(c10::Device d, int priority) const override { return new_stream(d, priority); }
#endif
  bool queryStream(const c10::Stream& s) const override {
    return regen_runtime_stream_query(s.device_index(), s.id());
  }
  void synchronizeStream(const c10::Stream& s) const override {
    check(regen_runtime_stream_synchronize(s.device_index(), s.id()));
  }
#if REGEN_TORCH_AT_LEAST(2, 6)
  void synchronizeDevice(const c10::DeviceIndex index) const override {
    check(regen_runtime_device_synchronize(check_device_index(index)));
  }
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
    if (*event == nullptr) {
      uint64_t created = 0;
      check(regen_runtime_event_new(stream.device_index(), flag == c10::EventFlag::BACKEND_DEFAULT, &created));
      *event = reinterpret_cast<void*>(static_cast<uintptr_t>(created));
    }
    check(regen_runtime_event_record(handle(*event), stream.device_index(), stream.id()));
  }
  // An event never recorded has nothing to wait for (CUDA's block returns at once for it).
  void block(void* event, const c10::Stream& stream) const override {
    if (event != nullptr) check(regen_runtime_event_block(handle(event), stream.device_index(), stream.id()));
  }
  bool queryEvent(void* event) const override { return event == nullptr || regen_runtime_event_query(handle(event)); }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    if (event != nullptr) regen_runtime_event_destroy(handle(event));
  }
#if REGEN_TORCH_AT_LEAST(2, 4)
  void synchronizeEvent(void* event) const override {
    if (event != nullptr) check(regen_runtime_event_synchronize(handle(event)));
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    TORCH_CHECK_VALUE(start != nullptr && end != nullptr,
                      "Both events must be recorded before calculating elapsed time.");
    double ms = 0;
    const char* error = regen_runtime_event_elapsed(handle(start), handle(end), &ms);
    TORCH_CHECK_VALUE(error == nullptr, error);
    return ms;
  }
#endif
};

}  // namespace
}  // namespace regen_host_glue

// A static registrar, internal to this unit.
C10_REGISTER_GUARD_IMPL(PrivateUse1, regen_host_glue::GuardImpl);
