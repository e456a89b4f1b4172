/* {{ generated_note }}
 *
 * The C ABI between regen's generated C++ wrappers and Rust kernels (docs/abi.md).
 * Mirrored field for field by `regen_runtime::abi`; a test compares their layouts.
 */
#ifndef REGEN_ABI_H
#define REGEN_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define REGEN_ABI_VERSION 1

/* A tensor argument, borrowed for the duration of one call, or a tensor result, owned.
 * impl == NULL stands for an undefined tensor or None. */
typedef struct regen_tensor {
  void* impl;              /* c10::TensorImpl* */
  void* data;              /* address of element 0 (storage offset applied); NULL without storage */
  const int64_t* sizes;    /* dim entries */
  const int64_t* strides;  /* dim entries, in elements */
  int64_t dim;
  int64_t storage_offset;
  int32_t dtype;           /* c10::ScalarType */
  int32_t device_type;     /* c10::DeviceType */
  int32_t device_index;
  int32_t flags;           /* REGEN_TENSOR_* bits */
} regen_tensor;

/* regen_tensor.flags: a wrapped number is a Python scalar PyTorch turned into a 0-dim CPU tensor
 * (`x + 1`); type promotion ranks it below every tensor. CONJ and NEG are PyTorch's lazy
 * conjugate and negative bits (`x.conj()`, `torch._neg_view(x)`): the memory holds the
 * conjugate / negation of the tensor's values, and `copy_` resolves them. */
enum { REGEN_TENSOR_WRAPPED_NUMBER = 1, REGEN_TENSOR_CONJ = 2, REGEN_TENSOR_NEG = 4 };

typedef struct regen_tensor_list {
  const regen_tensor* ptr;
  size_t len;
} regen_tensor_list;

enum {
  REGEN_SCALAR_NONE = -1,
  REGEN_SCALAR_FLOAT = 0,
  REGEN_SCALAR_INT = 1,
  REGEN_SCALAR_BOOL = 2,
  REGEN_SCALAR_COMPLEX = 3
};

typedef struct regen_scalar {
  int32_t tag;  /* REGEN_SCALAR_* */
  int32_t reserved;
  double f;     /* FLOAT, and the real part of COMPLEX */
  double imag;  /* COMPLEX */
  int64_t i;    /* INT, and BOOL as 0/1 */
} regen_scalar;

typedef struct regen_scalar_list {
  const regen_scalar* ptr;
  size_t len;
} regen_scalar_list;

typedef struct regen_opt_i64 {
  bool has_value;
  int64_t value;
} regen_opt_i64;

typedef struct regen_opt_f64 {
  bool has_value;
  double value;
} regen_opt_f64;

typedef struct regen_opt_bool {
  bool has_value;
  bool value;
} regen_opt_bool;

/* has_value is false for a None optional list. */
typedef struct regen_i64_list {
  const int64_t* ptr;
  size_t len;
  bool has_value;
} regen_i64_list;

typedef struct regen_f64_list {
  const double* ptr;
  size_t len;
  bool has_value;
} regen_f64_list;

typedef struct regen_bool_list {
  const bool* ptr;
  size_t len;
} regen_bool_list;

/* UTF-8, not NUL-terminated; ptr == NULL stands for None. */
typedef struct regen_str {
  const char* ptr;
  size_t len;
} regen_str;

typedef struct regen_str_list {
  const regen_str* ptr;
  size_t len;
  bool has_value;
} regen_str_list;

/* type == -1 stands for None. */
typedef struct regen_device {
  int32_t type;   /* c10::DeviceType */
  int32_t index;  /* -1: the current device */
} regen_device;

typedef struct regen_stream {
  int64_t id;
  int32_t device_type;
  int32_t device_index;
} regen_stream;

/* Enumerations (ScalarType, Layout, MemoryFormat, QScheme) cross as int32_t, -1 for None.
 * Generator and Storage cross as void* (at::GeneratorImpl*, c10::StorageImpl*), NULL for None. */

/* Results of variable length are pushed one element at a time into storage the caller owns. */
typedef struct regen_tensor_sink {
  void* ctx;
  void (*push)(void* ctx, regen_tensor owned);
} regen_tensor_sink;

typedef struct regen_i64_sink {
  void* ctx;
  void (*push)(void* ctx, int64_t value);
} regen_i64_sink;

/* A kernel returns NULL on success, or an error owned by the Rust side. */
typedef struct regen_error regen_error;

enum {
  REGEN_ERROR_RUNTIME = 0,         /* Python RuntimeError */
  REGEN_ERROR_NOT_IMPLEMENTED = 1, /* Python NotImplementedError */
  REGEN_ERROR_VALUE = 2,           /* Python ValueError */
  REGEN_ERROR_TYPE = 3,            /* Python TypeError */
  REGEN_ERROR_INDEX = 4,           /* Python IndexError */
  REGEN_ERROR_OUT_OF_MEMORY = 5    /* torch.OutOfMemoryError (a device allocation refused) */
};

int32_t regen_error_kind(const regen_error* error);
/* UTF-8, not NUL-terminated, valid until regen_error_free. */
const char* regen_error_message(const regen_error* error, size_t* len);
void regen_error_free(regen_error* error);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* REGEN_ABI_H */
