// The profiler's device hooks of a regen backend (see glue.h): what `torch.autograd.profiler.
// profile(use_device=NAME)` asks a PrivateUse1 device for (torch::profiler::impl::ProfilerStubs,
// as torch_openreg's profiler/stubs/openreg.cpp and CUDA's cuda.cpp register them). Kernels run
// to completion on the calling thread, so an event is the host's clock when it is recorded and the
// device's time between two events is the host's. Without these, device events had no timings and
// the profiler reported negative durations. From torch 2.4 (registerPrivateUse1Methods).
#include "glue.h"

#if REGEN_TORCH_AT_LEAST(2, 4) && __has_include(<torch/csrc/profiler/stubs/base.h>)
#include <torch/csrc/profiler/stubs/base.h>

#include <c10/core/DeviceGuard.h>
#include <c10/util/ApproximateClock.h>

#include <chrono>
#include <functional>
#include <memory>

namespace regen_host_glue {
namespace {

using Clock = std::chrono::steady_clock;

struct Stubs final : torch::profiler::impl::ProfilerStubs {
  void record(c10::DeviceIndex* device, torch::profiler::impl::ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    if (device != nullptr) *device = current_device();
    if (cpu_ns != nullptr) *cpu_ns = c10::getTime();
    *event = std::make_shared<Clock::time_point>(Clock::now());
  }
  // Microseconds from `event` to `event2`.
  float elapsed(const torch::profiler::impl::ProfilerVoidEventStub* event,
                const torch::profiler::impl::ProfilerVoidEventStub* event2) const override {
    if (event == nullptr || event2 == nullptr || *event == nullptr || *event2 == nullptr) return 0.0f;
    const auto& a = *static_cast<const Clock::time_point*>(event->get());
    const auto& b = *static_cast<const Clock::time_point*>(event2->get());
    return std::chrono::duration<float, std::micro>(b - a).count();
  }
  // No annotation ranges on the device (CUDA's are NVTX's).
  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}
  void onEachDevice(std::function<void(int)> op) const override {
    c10::DeviceGuard guard(device_at(0));
    for (c10::DeviceIndex i = 0; i < device_count(); ++i) {
      guard.set_index(i);
      op(i);
    }
  }
  // Nothing is queued: every kernel has finished when it returns.
  void synchronize() const override {}
  bool enabled() const override { return true; }
};

struct Register {
  Register() {
    static Stubs stubs;
    torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  }
};

Register registered;

}  // namespace
}  // namespace regen_host_glue
#endif
