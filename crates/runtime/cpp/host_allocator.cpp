// Pinned host memory of a regen backend (see glue.h): pin_memory(), pin_memory=True.
#include "glue.h"

#include <c10/core/Allocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

namespace regen_host_glue {
namespace {

// Pinned host memory (pin_memory(), pin_memory=True): the device reads host memory directly, so
// there is nothing to page-lock; the blocks are CPU memory whose ranges are remembered, so that
// is_pinned() tells them from pageable memory, as CUDA's hooks do (any address inside a block).
std::mutex g_pinned_mutex;
std::map<uintptr_t, size_t> g_pinned;  // start -> bytes

void free_pinned(void* ptr) {
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

}  // namespace

bool is_pinned_ptr(const void* ptr) {
  auto at = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(g_pinned_mutex);
  auto next = g_pinned.upper_bound(at);
  if (next == g_pinned.begin()) return false;
  auto block = std::prev(next);
  return at - block->first < block->second;
}

c10::Allocator* pinned_allocator() { return &g_pinned_allocator; }

}  // namespace regen_host_glue
