/* Services the C++ host glue (this folder's units, glue.h) of a regen PrivateUse1 backend gives the
 * backend's Rust code: reference counting, tensor creation, the metadata changes only c10 can
 * make, and torch.autocast's state. Mirrored by regen_runtime::host.
 *
 * Every service that can fail returns NULL on success or an error message that stays valid
 * until the next service call on the same thread. No C++ exception crosses into Rust. */
#ifndef REGEN_HOST_H
#define REGEN_HOST_H

#include "regen_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct regen_host {
  size_t size; /* sizeof(regen_host), for forward compatibility */
  void (*retain)(void* impl);
  void (*release)(void* impl);
  /* A new tensor on the device (owned reference in *out). */
  const char* (*empty_strided)(const int64_t* sizes, const int64_t* strides, int64_t ndim, int32_t dtype,
                               regen_tensor* out);
  /* Resizes in place (contiguous strides, storage grown as needed); *out describes it after. */
  const char* (*resize)(void* impl, const int64_t* sizes, int64_t ndim, regen_tensor* out);
  /* A new view of impl's storage (owned reference in *out). */
  const char* (*as_strided)(void* impl, const int64_t* sizes, const int64_t* strides, int64_t ndim,
                            int64_t storage_offset, regen_tensor* out);
  /* set_: point impl at a storage (NULL: a new empty one; strides NULL: contiguous) or at another tensor's
   * storage and geometry, with CPU's checks (device, offset, bounds). */
  const char* (*set_storage)(void* impl, void* storage, int64_t storage_offset, const int64_t* sizes,
                             const int64_t* strides, int64_t ndim, regen_tensor* out);
  const char* (*set_tensor)(void* impl, void* source, regen_tensor* out);
  /* Runs f(ctx, begin, end) over chunks covering [0, n), each at least `grain` long, on PyTorch's
   * intra-op thread pool (at::parallel_for): device kernels and CPU kernels share one pool, whose
   * threads are warm, instead of two pools competing for the cores. f must not throw or unwind. */
  void (*parallel_for)(int64_t n, int64_t grain, void (*f)(void* ctx, int64_t begin, int64_t end), void* ctx);
  /* torch.get_num_threads(). */
  int (*num_threads)(void);
  /* A new view of impl's storage with another dtype (view_as_real, view_as_complex): geometry in
   * elements of `dtype` (owned reference in *out). */
  const char* (*view_dtype)(void* impl, int32_t dtype, const int64_t* sizes, const int64_t* strides, int64_t ndim,
                            int64_t storage_offset, regen_tensor* out);
  /* The engine (regen_runtime_rng_*) of a device generator passed to a kernel, in *engine; CPU's
   * "Expected a '<device>' device type for generator" error for another device's generator. */
  const char* (*generator_engine)(void* generator_impl, void** engine);
  /* torch.autocast's state for this device (at::autocast's): whether it is on, and the dtype it
   * casts to as a c10::ScalarType number; set_autocast_dtype refuses a non-floating dtype. */
  const char* (*autocast_state)(bool* enabled, int32_t* dtype);
  const char* (*set_autocast_enabled)(bool enabled);
  const char* (*set_autocast_dtype)(int32_t dtype);
  /* The device's name (`regen`), as torch prints its devices (`regen:1`), for messages. */
  const char* device_name;
} regen_host;

/* Exported by the backend's Rust code. */
/* Called once, by the glue's static initialiser when the library is loaded (after the allocator,
 * the device guard and the PrivateUse1 hooks are registered). host and everything it points to
 * stay valid for the life of the process. */
void regen_backend_init(const regen_host* host);
/* The devices (regen_runtime::device): how many, and the calling thread's current one, which the
 * device guard reads and sets (set_device returns false, changing nothing, for an index out of
 * range; the glue checks first). */
int32_t regen_runtime_device_count(void);
int32_t regen_runtime_current_device(void);
bool regen_runtime_set_device(int32_t device);
/* Device memory, for the PrivateUse1 allocator: nbytes (> 0) on `device` (checked); NULL means out
 * of memory, the host's or the limit's (raised as c10::OutOfMemoryError). A pointer comes back to
 * regen_device_free when its storage dies. device_of_ptr: the device of memory at a pointer, -1
 * when it cannot be told (several devices: host memory does not say). */
void* regen_device_alloc(int32_t device, size_t nbytes);
void regen_device_free(void* ptr);
int32_t regen_runtime_device_of_ptr(const void* ptr);
/* Bytes of device memory in use now on `device`, and the most in use at once since the start or
 * the last regen_runtime_reset_peak_bytes (regen_runtime::alloc), for the allocator's statistics. */
uint64_t regen_runtime_bytes_in_use(int32_t device);
uint64_t regen_runtime_peak_bytes(int32_t device);
void regen_runtime_reset_peak_bytes(int32_t device);
/* The most bytes regen_device_alloc lets be in use at once on each device (REGEN_MEMORY_LIMIT, or
 * torch.NAME.set_memory_limit), UINT64_MAX when there is no limit: an allocation that would pass
 * it returns NULL, which the glue raises as torch.OutOfMemoryError naming the limit. */
uint64_t regen_runtime_memory_limit(void);
/* The device generator's engine (regen_runtime::rng): PyTorch's CPU generator, state for state.
 * An engine from _new or _clone is freed once with _free; _default is a device's default
 * generator (never freed; NULL for a device out of range). States have torch.get_rng_state()'s layout and _state_size bytes;
 * _set_state returns NULL or CPU's message (valid until the next call on the thread). */
void* regen_runtime_rng_new(uint64_t seed);
void* regen_runtime_rng_default(int32_t device);
void* regen_runtime_rng_clone(void* engine);
void regen_runtime_rng_free(void* engine);
void regen_runtime_rng_set_seed(void* engine, uint64_t seed);
uint64_t regen_runtime_rng_reseed(void* engine);
uint64_t regen_runtime_rng_current_seed(void* engine);
size_t regen_runtime_rng_state_size(void);
void regen_runtime_rng_get_state(void* engine, uint8_t* out, size_t len);
const char* regen_runtime_rng_set_state(void* engine, const uint8_t* bytes, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* REGEN_HOST_H */
