// The PrivateUse1 hooks of a regen backend (see glue.h): what torch asks a backend about its
// devices, pinned memory, generators and storages.
#include "glue.h"

#include <ATen/core/Generator.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/Resize.h>

namespace regen_host_glue {
namespace {

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
  c10::Allocator* getPinnedMemoryAllocator() const override { return pinned_allocator(); }
  // resize_bytes_nocuda exists from 2.3 too (ATen/native/Resize.h).
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override {
    at::native::resize_bytes_nocuda(storage, static_cast<int64_t>(newsize));
  }
#endif
#if REGEN_TORCH_AT_LEAST(2, 4)
  c10::DeviceIndex deviceCount() const override { return device_count(); }
  c10::DeviceIndex getCurrentDevice() const override { return current_device(); }
#endif
#if REGEN_TORCH_AT_LEAST(2, 5)
  bool isPinnedPtr(const void* data) const override { return is_pinned_ptr(data); }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) const override {
    return default_generator(check_device_index(index));
  }
#else
  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) override {
    return default_generator(check_device_index(index));
  }
#endif
#if REGEN_TORCH_AT_LEAST(2, 6)
  at::Generator getNewGenerator(c10::DeviceIndex index) const override {
    return new_generator(check_device_index(index));
  }
#endif
  // The device of memory at `data` (torch.from_blob without a device): device 0 of a one-device
  // backend; with several, host memory does not say, so an error asks for the device rather than
  // a guess.
  at::Device getDeviceFromPtr(void* data) const override {
    const int32_t device = regen_runtime_device_of_ptr(data);
    TORCH_CHECK(device >= 0, REGEN_DEVICE_NAME ": cannot tell which device the memory at ", data,
                " is on; name the device (device=...)");
    return device_at(static_cast<c10::DeviceIndex>(device));
  }
};

}  // namespace

void register_hooks() {
  static Hooks hooks;
  at::RegisterPrivateUse1HooksInterface(&hooks);
}

}  // namespace regen_host_glue
