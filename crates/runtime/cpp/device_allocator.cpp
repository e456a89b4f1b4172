// Device memory of a regen backend (see glue.h): whatever Rust's regen_device_alloc returns, freed
// by Rust; out-of-memory raised as CUDA raises it; from torch 2.9 a c10::DeviceAllocator whose
// statistics are Rust's counters.
#include "glue.h"

#include <c10/core/Allocator.h>
#include <c10/util/Exception.h>

#if REGEN_TORCH_AT_LEAST(2, 9)
// c10::DeviceAllocator, which torch.accelerator.memory_allocated and its kin ask for (absent in
// 2.8.0, present in 2.9.0 with the pure virtuals overridden below).
#include <c10/core/CachingDeviceAllocator.h>
#endif

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace regen_host_glue {
namespace {

void free_device_memory(void* ptr) { regen_device_free(ptr); }

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
[[noreturn]] void raise_out_of_memory(c10::DeviceIndex device, size_t n) {
  const uint64_t limit = regen_runtime_memory_limit();
  const uint64_t in_use = regen_runtime_bytes_in_use(device);
  if (limit != UINT64_MAX) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, REGEN_DEVICE_NAME ": out of device memory on device ",
                     static_cast<int>(device), ". Tried to allocate ", format_size(n), " (", n,
                     " bytes); the memory limit is ", format_size(limit), " (", limit,
                     " bytes), of which ", format_size(in_use), " (", in_use,
                     " bytes) is in use. The limit is REGEN_MEMORY_LIMIT or torch." REGEN_DEVICE_NAME
                     ".set_memory_limit().");
  }
  TORCH_CHECK_WITH(OutOfMemoryError, false, REGEN_DEVICE_NAME ": out of device memory on device ",
                   static_cast<int>(device), ". Tried to allocate ", format_size(n), " (", n,
                   " bytes); the host has no memory for it, with ", format_size(in_use), " (", in_use,
                   " bytes) in use by the device.");
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
    // On the current device, as CUDA's allocator: a generated wrapper or a factory's device
    // guard has made the call's device current.
    const c10::DeviceIndex device = current_device();
    void* ptr = n == 0 ? nullptr : regen_device_alloc(device, n);
    if (n != 0 && ptr == nullptr) raise_out_of_memory(device, n);
    return {ptr, ptr, &free_device_memory, device_at(device)};
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
    device = check_device_index(device);
    c10::CachingDeviceAllocator::DeviceStats stats;
    decltype(stats.allocated_bytes)::value_type in_use;
    in_use.current = static_cast<int64_t>(regen_runtime_bytes_in_use(device));
    in_use.peak = static_cast<int64_t>(regen_runtime_peak_bytes(device));
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
    regen_runtime_reset_peak_bytes(check_device_index(device));
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

}  // namespace

c10::Allocator* device_allocator() { return &g_allocator; }

}  // namespace regen_host_glue

// A static registrar, internal to this unit.
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, regen_host_glue::device_allocator());
