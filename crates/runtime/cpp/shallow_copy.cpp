// `_has_compatible_shallow_copy_type` for a regen backend's device (see glue.h), so that
// model.to(device) keeps Parameters (and tied weights) as they are.
#include "glue.h"

#include <ATen/ATen.h>
#include <torch/library.h>

namespace regen_host_glue {
namespace {

// torch._has_compatible_shallow_copy_type for this device: c10's TensorImpl answers true for
// dense tensors of CPU, CUDA and a few other backends only, and its note (c10/core/TensorImpl.h,
// has_compatible_shallow_copy_type) asks a PrivateUse1 backend to provide this operator. Without
// it `Module._apply` (model.to(device)) makes new Parameters instead of `param.data = ...`: tied
// weights come apart and optimizers built before `.to()` hold stale tensors; `param.data =
// device_tensor` raises. Dense tensors of this device and of CPU are compatible, as CUDA's and
// CPU's are (their memory is host memory here, and TensorImpl's metadata is the same).
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  if (self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set())) return true;
  auto dense_host = [](const at::Tensor& t) {
    c10::DispatchKeySet ks = t.key_set();
    // Dense functionality (not sparse, quantized, ...) on CPU or this device.
    return ks.has_any(c10::DispatchKeySet(c10::DispatchKey::Dense)) &&
        ks.has_any(c10::DispatchKeySet({c10::BackendComponent::CPUBit, c10::BackendComponent::PrivateUse1Bit}));
  };
  return dense_host(self) && dense_host(from);
}

}  // namespace
}  // namespace regen_host_glue

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", &regen_host_glue::has_compatible_shallow_copy_type);
}
// And at AutogradPrivateUse1: the op is CompositeImplicitAutograd, whose kernel fills a backend's
// Autograd key only while that backend has no kernel of its own. This one has, so on releases
// without an AutogradPrivateUse1 fallback (2.4) the call found nothing there ("Could not run
// 'aten::_has_compatible_shallow_copy_type' with arguments from the 'Autograd<device>' backend").
// A bool has nothing to differentiate.
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", &regen_host_glue::has_compatible_shallow_copy_type);
}

