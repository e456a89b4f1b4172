// Internal to the host glue of a regen PrivateUse1 backend: what its translation units share.
//
// The glue is split by role, as PyTorch's reference backend (torch_openreg's csrc/runtime/) is:
// device_allocator.cpp (device memory, Rust's), host_allocator.cpp (pinned host memory),
// guard.cpp (the device guard, streams and events), generator.cpp (the device's random
// generator), hooks.cpp (the PrivateUse1 hooks), services.cpp (the regen_host.h services Rust
// uses to create and reshape tensors and to reach torch.autocast's state), shallow_copy.cpp
// (`_has_compatible_shallow_copy_type`), serialization.cpp (tensor metadata through torch.save),
// profiler.cpp (the profiler's device events), sdpa.cpp (scaled_dot_product_attention's choice
// of backend) and init.cpp (what runs when the library loads).
// Compiled into the backend's shared library next to the generated registrations.
//
// The device's name comes from the command line (-DREGEN_DEVICE_NAME="\"mydev\""); it only
// appears in error messages. Every name the units share is declared here with hidden visibility,
// and every other one is internal to its unit, so two backends loaded into the same process never
// bind each other's; the only external names are the functions Rust exports and the
// regen_runtime_rng_* engine functions (regen_host.h).
//
// The c10/ATen interfaces the glue implements changed between releases; each difference is
// branched on TORCH_VERSION_MAJOR / TORCH_VERSION_MINOR (REGEN_TORCH_AT_LEAST), with the release
// that changed it.
#pragma once

#include <torch/version.h>

#include <ATen/core/Generator.h>
#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/util/Exception.h>

#include <exception>
#include <string>

#include "regen_host.h"

#define REGEN_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if !REGEN_TORCH_AT_LEAST(2, 1)
#error "regen host glue: torch 2.1 or newer is required (at::RegisterPrivateUse1HooksInterface)"
#endif

#ifndef REGEN_DEVICE_NAME
#define REGEN_DEVICE_NAME "privateuse1"
#endif

#pragma GCC visibility push(hidden)
namespace regen_host_glue {

inline constexpr c10::DeviceType kDevice = c10::DeviceType::PrivateUse1;
inline constexpr const char* kWhat = REGEN_DEVICE_NAME " host glue";

// The devices are Rust's (regen_runtime::device): how many, and each thread's current one.
inline c10::DeviceIndex device_count() { return static_cast<c10::DeviceIndex>(regen_runtime_device_count()); }
inline c10::DeviceIndex current_device() { return static_cast<c10::DeviceIndex>(regen_runtime_current_device()); }
inline c10::Device device_at(c10::DeviceIndex index) { return c10::Device(kDevice, index); }

// guard.cpp: every way of naming a device index checks it here; -1 ("the current device") is
// replaced by the current device's index.
c10::DeviceIndex check_device_index(c10::DeviceIndex index);

// device_allocator.cpp: the allocator of device memory (Rust's regen_device_alloc), and
// Tensor.record_stream for a storage's memory (nothing for memory that is not its).
c10::Allocator* device_allocator();
void record_stream(const c10::DataPtr& data, int64_t stream);

// host_allocator.cpp: pinned host memory, and whether a pointer is inside one of its blocks.
c10::Allocator* pinned_allocator();
bool is_pinned_ptr(const void* ptr);

// generator.cpp: a device's default generator, a new one, and the engine service.
const at::Generator& default_generator(c10::DeviceIndex index);
at::Generator new_generator(c10::DeviceIndex index);
const char* host_generator_engine(void* generator_impl, void** engine);

// hooks.cpp: registers the PrivateUse1 hooks.
void register_hooks();

// services.cpp: the regen_host table handed to Rust.
const regen_host* services();

// Runs `f`, turning a C++ exception into the message a service returns (NULL on success). The
// text lives until the thread's next failing service.
template <class F>
const char* guarded(F&& f) noexcept {
  thread_local std::string error;
  try {
    f();
    return nullptr;
  } catch (const c10::Error& e) {
    error = e.what_without_backtrace();
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown C++ exception";
  }
  return error.c_str();
}

}  // namespace regen_host_glue
#pragma GCC visibility pop
