// {{ generated_note }}
//
// C++ side of the C ABI (docs/abi.md): `lift_*` turns a dispatcher argument into its C form
// (holders keep temporary buffers alive for the call), `adopt` and the sinks take results back,
// and `check` turns a Rust error into the matching c10 exception.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <array>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "regen_abi.h"

// regen-runtime (regen_runtime::fallback::routed): true when the environment variable `var`
// (<DEVICE>_FALLBACK_OPS) names `op`, which then gets the fallback in place of its kernel.
extern "C" bool regen_runtime_fallback_routed(const uint8_t* var, size_t var_len, const uint8_t* op, size_t op_len);
// regen-runtime (regen_runtime::host::in_place): marks the TensorImpl the in-place op running on
// this thread writes (its kernel may not resize it); returns the previous mark.
extern "C" const void* regen_runtime_in_place(const void* impl);
// regen-runtime (regen_runtime::device): the calling thread's current device.
extern "C" int32_t regen_runtime_current_device(void);

// Named tensors (Dimname) left PyTorch in 2.13; older releases still declare them.
#if __has_include(<ATen/core/Dimname.h>)
#include <ATen/core/Dimname.h>
#define REGEN_HAS_DIMNAME 1
#endif

namespace regen {

inline regen_tensor no_tensor() {
  regen_tensor r;
  std::memset(&r, 0, sizeof r);
  r.dtype = -1;
  r.device_type = -1;
  r.device_index = -1;
  return r;
}

inline regen_scalar no_scalar() {
  regen_scalar s;
  std::memset(&s, 0, sizeof s);
  s.tag = REGEN_SCALAR_NONE;
  return s;
}

inline regen_tensor lift_tensor(const at::Tensor& t, const char*) {
  regen_tensor r = no_tensor();
  if (!t.defined()) return r;
  r.impl = t.unsafeGetTensorImpl();
  if (t.has_storage() && t.storage().data() != nullptr) {
    r.data = static_cast<char*>(const_cast<void*>(static_cast<const void*>(t.storage().data()))) +
             t.storage_offset() * static_cast<int64_t>(t.element_size());
  }
  r.sizes = t.sizes().data();
  r.strides = t.strides().data();
  r.dim = t.dim();
  r.storage_offset = t.storage_offset();
  r.dtype = static_cast<int32_t>(t.scalar_type());
  r.device_type = static_cast<int32_t>(t.device().type());
  r.device_index = t.device().index();
  r.flags = (t.unsafeGetTensorImpl()->is_wrapped_number() ? REGEN_TENSOR_WRAPPED_NUMBER : 0) |
            (t.is_conj() ? REGEN_TENSOR_CONJ : 0) | (t.is_neg() ? REGEN_TENSOR_NEG : 0);
  return r;
}

template <class O>
regen_tensor lift_opt_tensor(const O& o, const char* what) {
  return o.has_value() ? lift_tensor(*o, what) : no_tensor();
}

struct TensorListHolder {
  std::vector<regen_tensor> items;
  operator regen_tensor_list() const { return regen_tensor_list{items.data(), items.size()}; }
};

template <class L>
TensorListHolder lift_tensor_list(const L& list, const char* what) {
  TensorListHolder h;
  for (const at::Tensor& t : list) h.items.push_back(lift_tensor(t, what));
  return h;
}

template <class L>
TensorListHolder lift_opt_tensor_list(const L& list, const char* what) {
  TensorListHolder h;
  for (size_t i = 0; i < list.size(); ++i) {
    auto t = list.get(i);
    h.items.push_back(t.has_value() ? lift_tensor(*t, what) : no_tensor());
  }
  return h;
}

// The device a call runs on, as torchgen's device guards choose it: the first of a factory's
// `device` argument and the call's tensors that is a PrivateUse1 device. Each wrapper makes it
// current for the call (c10::OptionalDeviceGuard), so the tensors its kernel creates land there;
// an empty result changes nothing. c10::optional, not std::optional: they differ until 2.3.
using MaybeDevice = c10::optional<c10::Device>;

inline MaybeDevice device_of_device(const at::Device& d) {
  return d.type() == c10::DeviceType::PrivateUse1 ? MaybeDevice(d) : MaybeDevice();
}

inline MaybeDevice device_of_tensor(const at::Tensor& t) {
  return t.defined() ? device_of_device(t.device()) : MaybeDevice();
}

template <class O>
MaybeDevice device_of_opt_tensor(const O& o) {
  return o.has_value() ? device_of_tensor(*o) : MaybeDevice();
}

template <class L>
MaybeDevice device_of_tensor_list(const L& list) {
  for (const at::Tensor& t : list) {
    MaybeDevice d = device_of_tensor(t);
    if (d.has_value()) return d;
  }
  return MaybeDevice();
}

template <class O>
MaybeDevice device_of_opt_device(const O& o) {
  return o.has_value() ? device_of_device(*o) : MaybeDevice();
}

template <class... D>
MaybeDevice call_device(D... candidates) {
  MaybeDevice found;
  ((found = found.has_value() ? found : candidates), ...);
  // Already current, or "the current device" (index -1): the common case, where a guard would only
  // set and restore what is there (two virtual calls per op).
  if (found.has_value() && (found->index() < 0 || found->index() == regen_runtime_current_device())) {
    return MaybeDevice();
  }
  return found;
}

inline regen_scalar lift_scalar(const at::Scalar& s, const char*) {
  regen_scalar r = no_scalar();
  if (s.isBoolean()) {
    r.tag = REGEN_SCALAR_BOOL;
    r.i = s.toBool() ? 1 : 0;
  } else if (s.isIntegral(false)) {
    r.tag = REGEN_SCALAR_INT;
    r.i = s.toLong();
  } else if (s.isComplex()) {
    r.tag = REGEN_SCALAR_COMPLEX;
    auto z = s.toComplexDouble();
    r.f = z.real();
    r.imag = z.imag();
  } else {
    r.tag = REGEN_SCALAR_FLOAT;
    r.f = s.toDouble();
  }
  return r;
}

template <class O>
regen_scalar lift_opt_scalar(const O& o, const char* what) {
  return o.has_value() ? lift_scalar(*o, what) : no_scalar();
}

struct ScalarListHolder {
  std::vector<regen_scalar> items;
  operator regen_scalar_list() const { return regen_scalar_list{items.data(), items.size()}; }
};

inline ScalarListHolder lift_scalar_list(at::ArrayRef<at::Scalar> list, const char* what) {
  ScalarListHolder h;
  for (const at::Scalar& s : list) h.items.push_back(lift_scalar(s, what));
  return h;
}

inline int64_t lift_int(int64_t v, const char*) { return v; }

inline int64_t lift_int(const c10::SymInt& v, const char* what) {
  try {
    return v.expect_int();
  } catch (const c10::Error&) {
    TORCH_CHECK(false, what, ": a symbolic SymInt has no concrete value; regen kernels need concrete sizes");
  }
}

template <class O>
regen_opt_i64 lift_opt_int(const O& o, const char* what) {
  regen_opt_i64 r{false, 0};
  if (o.has_value()) r = regen_opt_i64{true, lift_int(*o, what)};
  return r;
}

struct I64ListHolder {
  std::vector<int64_t> owned;
  const int64_t* ptr = nullptr;
  size_t len = 0;
  bool has_value = true;
  operator regen_i64_list() const { return regen_i64_list{ptr, len, has_value}; }
};

inline I64ListHolder lift_int_list(at::IntArrayRef list, const char*) {
  I64ListHolder h;
  h.ptr = list.data();
  h.len = list.size();
  return h;
}

inline I64ListHolder lift_int_list(c10::SymIntArrayRef list, const char* what) {
  I64ListHolder h;
  for (const c10::SymInt& v : list) h.owned.push_back(lift_int(v, what));
  h.ptr = h.owned.data();
  h.len = h.owned.size();
  return h;
}

template <class O>
I64ListHolder lift_opt_int_list(const O& o, const char* what) {
  if (!o.has_value()) {
    I64ListHolder h;
    h.has_value = false;
    return h;
  }
  return lift_int_list(*o, what);
}

inline regen_f64_list lift_float_list(at::ArrayRef<double> list, const char*) {
  return regen_f64_list{list.data(), list.size(), true};
}

template <class O>
regen_f64_list lift_opt_float_list(const O& o, const char* what) {
  return o.has_value() ? lift_float_list(*o, what) : regen_f64_list{nullptr, 0, false};
}

template <class T>
T lift_plain(T v, const char*) {
  return v;
}

template <class O>
regen_opt_f64 lift_opt_float(const O& o, const char*) {
  regen_opt_f64 r{false, 0.0};
  if (o.has_value()) r = regen_opt_f64{true, *o};
  return r;
}

template <class O>
regen_opt_bool lift_opt_bool(const O& o, const char*) {
  regen_opt_bool r{false, false};
  if (o.has_value()) r = regen_opt_bool{true, *o};
  return r;
}

template <size_t N>
regen_bool_list lift_bool_array(const std::array<bool, N>& a, const char*) {
  return regen_bool_list{a.data(), N};
}

template <class S>
regen_str lift_str(const S& s, const char*) {
  return regen_str{s.data(), s.size()};
}

template <class O>
regen_str lift_opt_str(const O& o, const char* what) {
  return o.has_value() ? lift_str(*o, what) : regen_str{nullptr, 0};
}

template <class E>
int32_t lift_enum(E e, const char*) {
  return static_cast<int32_t>(e);
}

template <class O>
int32_t lift_opt_enum(const O& o, const char* what) {
  return o.has_value() ? lift_enum(*o, what) : -1;
}

inline regen_device lift_device(const at::Device& d, const char*) {
  return regen_device{static_cast<int32_t>(d.type()), static_cast<int32_t>(d.index())};
}

template <class O>
regen_device lift_opt_device(const O& o, const char* what) {
  return o.has_value() ? lift_device(*o, what) : regen_device{-1, -1};
}

inline int64_t lift_device_index(c10::DeviceIndex i, const char*) { return i; }

inline void* lift_generator(const at::Generator& g, const char*) {
  return g.defined() ? static_cast<void*>(g.unsafeGetGeneratorImpl()) : nullptr;
}

template <class O>
void* lift_opt_generator(const O& o, const char* what) {
  return o.has_value() ? lift_generator(*o, what) : nullptr;
}

inline void* lift_storage(const at::Storage& s, const char*) {
  return static_cast<void*>(s.unsafeGetStorageImpl());
}

inline regen_stream lift_stream(const c10::Stream& s, const char*) {
  return regen_stream{static_cast<int64_t>(s.id()), static_cast<int32_t>(s.device_type()),
                      static_cast<int32_t>(s.device_index())};
}

#ifdef REGEN_HAS_DIMNAME
inline regen_str lift_dimname(const at::Dimname& d, const char*) {
  const char* name = d.symbol().toUnqualString();
  return regen_str{name, std::strlen(name)};
}

struct StrListHolder {
  std::vector<regen_str> items;
  bool has_value = true;
  operator regen_str_list() const { return regen_str_list{items.data(), items.size(), has_value}; }
};

inline StrListHolder lift_dimname_list(at::DimnameList list, const char* what) {
  StrListHolder h;
  for (const at::Dimname& d : list) h.items.push_back(lift_dimname(d, what));
  return h;
}

template <class O>
StrListHolder lift_opt_dimname_list(const O& o, const char* what) {
  if (!o.has_value()) {
    StrListHolder h;
    h.has_value = false;
    return h;
  }
  return lift_dimname_list(*o, what);
}
#endif

// Results.

inline at::Tensor adopt(regen_tensor r) {
  if (r.impl == nullptr) return at::Tensor();
  return at::Tensor(c10::intrusive_ptr<c10::TensorImpl>::reclaim(static_cast<c10::TensorImpl*>(r.impl)));
}

inline at::Scalar from_c(const regen_scalar& s) {
  switch (s.tag) {
    case REGEN_SCALAR_INT:
      return at::Scalar(s.i);
    case REGEN_SCALAR_BOOL:
      return at::Scalar(s.i != 0);
    case REGEN_SCALAR_COMPLEX:
      return at::Scalar(c10::complex<double>(s.f, s.imag));
    default:
      return at::Scalar(s.f);
  }
}

extern "C" inline void regen_push_tensor(void* ctx, regen_tensor owned) {
  static_cast<std::vector<at::Tensor>*>(ctx)->push_back(adopt(owned));
}

extern "C" inline void regen_push_i64(void* ctx, int64_t value) {
  static_cast<std::vector<int64_t>*>(ctx)->push_back(value);
}

inline regen_tensor_sink tensor_sink(std::vector<at::Tensor>& out) {
  return regen_tensor_sink{&out, &regen_push_tensor};
}

inline regen_i64_sink i64_sink(std::vector<int64_t>& out) { return regen_i64_sink{&out, &regen_push_i64}; }

// Throws the c10 exception matching a Rust error (Python sees the same exception type).
inline void check(regen_error* error) {
  if (error == nullptr) return;
  size_t len = 0;
  const char* text = regen_error_message(error, &len);
  std::string message(text, len);
  int32_t kind = regen_error_kind(error);
  regen_error_free(error);
  switch (kind) {
    case REGEN_ERROR_NOT_IMPLEMENTED:
      TORCH_CHECK_NOT_IMPLEMENTED(false, message);
    case REGEN_ERROR_VALUE:
      TORCH_CHECK_VALUE(false, message);
    case REGEN_ERROR_TYPE:
      TORCH_CHECK_TYPE(false, message);
    case REGEN_ERROR_INDEX:
      TORCH_CHECK_INDEX(false, message);
    case REGEN_ERROR_OUT_OF_MEMORY:
      TORCH_CHECK_WITH(OutOfMemoryError, false, message);
    default:
      TORCH_CHECK(false, message);
  }
}

// While an in-place op runs its `.out` kernel with `out` = `self`: `self` may not be resized
// (regen_runtime::host::resize refuses it with PyTorch's message), as PyTorch's in-place ops
// never change their tensor's shape.
class InPlace {
 public:
  explicit InPlace(const at::Tensor& self) : previous_(regen_runtime_in_place(self.unsafeGetTensorImpl())) {}
  ~InPlace() { regen_runtime_in_place(previous_); }
  // Neither copied nor assigned (a const member): the mark is restored once.
  InPlace(const InPlace&) = delete;

 private:
  const void* const previous_;
};

// Whether PyTorch derives the in-place op `op` ("name.overload" of aten) from its structured
// `.out` kernel on backends without a kernel of their own: it has a
// CompositeExplicitAutogradNonFunctional kernel (torchgen's default backend kernel: the functional
// form, then a copy into `self`). Only such an op runs as the `.out` kernel with `out` = `self`,
// which is what CPU's and CUDA's structured kernels do; an in-place op with a composite of its own
// (abs_ refuses complex tensors first) keeps it.
inline bool derived_in_place(const char* op) {
  const std::string key(op);
  const size_t dot = key.find('.');
  const auto handle = c10::Dispatcher::singleton().findSchema(
      {"aten::" + key.substr(0, dot), dot == std::string::npos ? "" : key.substr(dot + 1)});
  return handle.has_value() &&
         handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional);
}

// Registers `kernel` for `op`, or `Fallback` (register_fallback.cpp's) when the environment
// variable `var` routes `op` there: to see that tests notice an op leaving the device, or to
// bisect a wrong answer. Registered for the op itself, so that a composite kernel PyTorch has for
// it (native_layer_norm's CompositeExplicitAutograd) does not serve the device in its place.
template <auto Fallback, size_t V, size_t N, class Kernel>
void impl_or_fallback(torch::Library& m, const char (&var)[V], const char (&op)[N], Kernel kernel) {
  if (regen_runtime_fallback_routed(reinterpret_cast<const uint8_t*>(var), V - 1, reinterpret_cast<const uint8_t*>(op),
                                    N - 1)) {
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<Fallback>());
  } else {
    m.impl(op, kernel);
  }
}

}  // namespace regen
