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
  /* torch.get_num_threads(): how many threads a kernel's parallel loop runs on (regen_runtime::pool). */
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
  /* Tensor.record_stream(s): the caching allocator keeps impl's storage block from reuse after its
   * free until the work queued on stream `stream` (of the storage's device) by then is done. */
  const char* (*record_stream)(void* impl, int64_t stream);
  /* For copies between host and device memory (regen_runtime::device::copies): a new dense CPU
   * tensor (pinned: from the pinned allocator; owned reference in *out); dst.copy_(src) of two CPU
   * tensors by ATen's CPU copy (broadcast, dtype conversion, conjugate and negative bits); whether
   * host memory at ptr is pinned (inside a block of the pinned allocator). */
  const char* (*empty_cpu)(const int64_t* sizes, int64_t ndim, int32_t dtype, bool pinned, regen_tensor* out);
  const char* (*cpu_copy)(void* dst_impl, void* src_impl);
  bool (*is_pinned)(const void* ptr);
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
/* Device memory, for the PrivateUse1 allocator: regen_runtime's caching allocator over the backend's
 * device layer (regen_runtime::device::cache). alloc: nbytes (> 0) on `device` (checked) for its
 * current stream; *block is the block's handle, the DataPtr's context, which comes back to
 * regen_device_free when the storage dies and to regen_device_record_stream; NULL means out of
 * memory, the device's or the limit's (raised as c10::OutOfMemoryError). device_of_ptr: the device
 * of memory at a pointer, -1 when it cannot be told. */
void* regen_device_alloc(int32_t device, size_t nbytes, void** block);
void regen_device_free(void* block);
void regen_device_record_stream(void* block, int64_t stream);
int32_t regen_runtime_device_of_ptr(const void* ptr);
/* torch.NAME.empty_cache(): cached blocks of every device go back to the device layer. */
void regen_runtime_empty_cache(void);
/* The allocator's counters for a device, under torch.cuda.memory_stats' names (regen_runtime's
 * cache::Stats, field for field). */
typedef struct regen_memory_stat {
  int64_t current, peak, allocated, freed;
} regen_memory_stat;
typedef struct regen_memory_stats {
  regen_memory_stat allocated_bytes, reserved_bytes, active_bytes, requested_bytes, allocation, segment, active;
  int64_t num_alloc_retries, num_ooms, num_device_alloc, num_device_free;
} regen_memory_stats;
void regen_runtime_memory_stats(int32_t device, regen_memory_stats* out);
void regen_runtime_reset_peak_stats(int32_t device);
void regen_runtime_reset_accumulated_stats(int32_t device);
/* How many times torch.set_num_threads has run, as the Python package counts them
 * (regen_runtime_threads_changed): a kernel's thread that has seen fewer re-reads its intra-op
 * thread count (OpenMP keeps one per thread; autograd's device thread read it when it started). */
uint64_t regen_runtime_threads_generation(void);
/* The most bytes each device may reserve (REGEN_MEMORY_LIMIT, or torch.NAME.set_memory_limit),
 * UINT64_MAX when there is no limit: an allocation that would pass it, after the cache is freed,
 * returns NULL, which the glue raises as torch.OutOfMemoryError naming the limit. */
uint64_t regen_runtime_memory_limit(void);
/* (free, total) bytes of a device: under a limit, what it leaves and the limit; else the layer's. */
void regen_runtime_memory_info(int32_t device, uint64_t* free_bytes, uint64_t* total_bytes);
/* A device's properties (the layer's): memory, compute units, and its name into `name` (up to cap
 * bytes, no NUL); returns the name's length. */
size_t regen_runtime_device_properties(int32_t device, uint64_t* total_memory, uint32_t* multi_processor_count,
                                       char* name, size_t cap);
/* Copies n bytes in the order of `stream` on `device` (the layer's copy; it may return before the
 * copy is done: synchronize the stream to wait). kind: which memories (regen_runtime CopyKind). */
enum { REGEN_COPY_HOST_TO_DEVICE = 0, REGEN_COPY_DEVICE_TO_HOST = 1, REGEN_COPY_DEVICE_TO_DEVICE = 2 };
const char* regen_runtime_copy(void* dst, const void* src, size_t n, int32_t kind, int32_t device, int64_t stream);
/* Streams and events (the layer's; regen_runtime::device::streams). Stream ids are per device, 0 the
 * default stream; the current stream is per thread and device. Functions returning const char*
 * return NULL or an error message (valid until the next such call on the thread); event_elapsed's
 * errors are ValueErrors. Event handles are the layer's, destroyed once. */
int64_t regen_runtime_current_stream(int32_t device);
void regen_runtime_set_current_stream(int32_t device, int64_t stream);
const char* regen_runtime_stream_new(int32_t device, int32_t priority, int64_t* stream);
bool regen_runtime_stream_query(int32_t device, int64_t stream);
const char* regen_runtime_stream_synchronize(int32_t device, int64_t stream);
const char* regen_runtime_device_synchronize(int32_t device);
const char* regen_runtime_event_new(int32_t device, bool timing, uint64_t* event);
const char* regen_runtime_event_record(uint64_t event, int32_t device, int64_t stream);
const char* regen_runtime_event_block(uint64_t event, int32_t device, int64_t stream);
bool regen_runtime_event_query(uint64_t event);
const char* regen_runtime_event_synchronize(uint64_t event);
const char* regen_runtime_event_elapsed(uint64_t start, uint64_t end, double* ms);
void regen_runtime_event_destroy(uint64_t event);
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
