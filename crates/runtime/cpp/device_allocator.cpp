// Device memory of a regen backend (see glue.h): blocks of regen_runtime's caching allocator over the
// backend's device layer (regen_device_alloc), freed by Rust; out-of-memory raised as CUDA raises it;
// from torch 2.9 a c10::DeviceAllocator whose statistics, empty_cache and record_stream are Rust's.
#include "glue.h"

#include <c10/core/Allocator.h>
#include <c10/util/Exception.h>

#if REGEN_TORCH_AT_LEAST(2, 9)
// c10::DeviceAllocator, which torch.accelerator.memory_allocated and its kin ask for (absent in
// 2.8.0, present in 2.9.0 with the pure virtuals overridden below).
#include <c10/core/CachingDeviceAllocator.h>
#endif

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace regen_host_glue {
namespace {

// The DataPtr's context is the allocator's block, which knows its device, stream and size.
void free_device_memory(void* block) { regen_device_free(block); }

static_assert(sizeof(regen_memory_stats) == 7 * 4 * sizeof(int64_t) + 4 * sizeof(int64_t),
              "regen_memory_stats mirrors regen_runtime::device::cache::Stats");

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
  regen_memory_stats stats;
  regen_runtime_memory_stats(device, &stats);
  const uint64_t in_use = static_cast<uint64_t>(stats.allocated_bytes.current);
  const uint64_t reserved = static_cast<uint64_t>(stats.reserved_bytes.current);
  if (limit != UINT64_MAX) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, REGEN_DEVICE_NAME ": out of device memory on device ",
                     static_cast<int>(device), ". Tried to allocate ", format_size(n), " (", n,
                     " bytes); the memory limit is ", format_size(limit), " (", limit,
                     " bytes), of which ", format_size(in_use), " (", in_use, " bytes) is in use by tensors and ",
                     format_size(reserved), " (", reserved, " bytes) reserved by the allocator. The limit is ",
                     "REGEN_MEMORY_LIMIT or torch." REGEN_DEVICE_NAME ".set_memory_limit().");
  }
  TORCH_CHECK_WITH(OutOfMemoryError, false, REGEN_DEVICE_NAME ": out of device memory on device ",
                   static_cast<int>(device), ". Tried to allocate ", format_size(n), " (", n,
                   " bytes); the device has no memory for it, with ", format_size(in_use), " (", in_use,
                   " bytes) in use by tensors and ", format_size(reserved), " (", reserved,
                   " bytes) reserved by the allocator.");
  // TORCH_CHECK_WITH throws; this keeps [[noreturn]] true for the compiler.
  std::abort();
}

// Device memory is a block of Rust's caching allocator (regen_device_alloc); Rust frees it. From
// 2.9 it is a c10::DeviceAllocator, so torch.accelerator's memory statistics, empty_cache and
// Tensor.record_stream reach the Rust allocator.
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
    // guard has made the call's device current; the block is in its current stream's pool.
    const c10::DeviceIndex device = current_device();
    if (n == 0) return {nullptr, nullptr, &free_device_memory, device_at(device)};
    void* block = nullptr;
    void* ptr = regen_device_alloc(device, n, &block);
    if (ptr == nullptr) raise_out_of_memory(device, n);
    return {ptr, block, &free_device_memory, device_at(device)};
  }
  // The context is the block, not the memory: raw_allocate (which needs them equal) is not
  // offered, as a null raw deleter says.
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
#if REGEN_TORCH_AT_LEAST(2, 3)
  // Pure virtual since 2.3 (c10/core/Allocator.h:205 in 2.3.1); absent before. Device to device,
  // in the current stream's order.
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    const c10::DeviceIndex device = current_device();
    const char* error = regen_runtime_copy(dest, src, count, REGEN_COPY_DEVICE_TO_DEVICE, device,
                                           regen_runtime_current_stream(device));
    TORCH_CHECK(error == nullptr, REGEN_DEVICE_NAME ": ", error);
  }
#endif
#if REGEN_TORCH_AT_LEAST(2, 9)
  bool initialized() override { return true; }
  void emptyCache(c10::MempoolId_t) override { regen_runtime_empty_cache(); }
  void recordStream(const c10::DataPtr& data, c10::Stream stream) override {
    regen_host_glue::record_stream(data, stream.id());
  }
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    device = check_device_index(device);
    regen_memory_stats rust;
    regen_runtime_memory_stats(device, &rust);
    c10::CachingDeviceAllocator::DeviceStats stats;
    const size_t all = 0;  // StatType::AGGREGATE, the "all" of memory_stats()
    auto put = [](auto& to, const regen_memory_stat& from) {
      to.current = from.current;
      to.peak = from.peak;
      to.allocated = from.allocated;
      to.freed = from.freed;
    };
    put(stats.allocated_bytes[all], rust.allocated_bytes);
    put(stats.reserved_bytes[all], rust.reserved_bytes);
    put(stats.active_bytes[all], rust.active_bytes);
    put(stats.requested_bytes[all], rust.requested_bytes);
    put(stats.allocation[all], rust.allocation);
    put(stats.segment[all], rust.segment);
    put(stats.active[all], rust.active);
    stats.num_alloc_retries = rust.num_alloc_retries;
    stats.num_ooms = rust.num_ooms;
    stats.num_device_alloc = rust.num_device_alloc;
    stats.num_device_free = rust.num_device_free;
    return stats;
  }
  void resetAccumulatedStats(c10::DeviceIndex device) override {
    regen_runtime_reset_accumulated_stats(check_device_index(device));
  }
  void resetPeakStats(c10::DeviceIndex device) override { regen_runtime_reset_peak_stats(check_device_index(device)); }
#if REGEN_TORCH_AT_LEAST(2, 10)
  // Absent in 2.9.0, there in 2.10.0 (torch.accelerator.get_memory_info raises without it).
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    uint64_t free_bytes = 0, total = 0;
    regen_runtime_memory_info(check_device_index(device), &free_bytes, &total);
    return {static_cast<size_t>(free_bytes), static_cast<size_t>(total)};
  }
#endif
#endif
};

RustAllocator g_allocator;

}  // namespace

c10::Allocator* device_allocator() { return &g_allocator; }

void record_stream(const c10::DataPtr& data, int64_t stream) {
  if (data.get_deleter() == &free_device_memory) regen_device_record_stream(data.get_context(), stream);
}

}  // namespace regen_host_glue

// A static registrar, internal to this unit.
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, regen_host_glue::device_allocator());
