// Tensor metadata of a regen backend (see glue.h): the dict `torch._utils.set_tensor_metadata`
// gives a device tensor is kept with it (a c10::BackendMeta), `get_tensor_metadata` returns it, and
// torch.save / torch.load carry it (PyTorch's BackendMeta serialization hooks for PrivateUse1, as
// torch_openreg's OpenRegSerialization.cpp registers them). A backend whose tensors carry a layout
// or format tag keeps it across a save and a load this way. On a torch release whose headers lack
// torch/csrc/jit/serialization/pickler_helper.h this unit is empty and tensors keep no metadata.
#include "glue.h"

#if __has_include(<torch/csrc/jit/serialization/pickler_helper.h>)
#include <torch/csrc/jit/serialization/pickler_helper.h>

#include <c10/core/TensorImpl.h>

#include <string>
#include <unordered_map>
#include <utility>

namespace regen_host_glue {
namespace {

using Entries = std::unordered_map<std::string, bool>;

struct Metadata final : c10::BackendMeta {
  explicit Metadata(Entries entries) : entries(std::move(entries)) {}
  Entries entries;
};

// torch.save (and get_tensor_metadata): the tensor's entries join the map torch writes.
void save(const at::Tensor& t, Entries& out) {
  if (auto* meta = dynamic_cast<Metadata*>(t.unsafeGetTensorImpl()->get_backend_meta())) {
    for (const auto& [key, value] : meta->entries) out[key] = value;
  }
}

// torch.load (and set_tensor_metadata): the map's entries become the tensor's.
void restore(const at::Tensor& t, Entries& in) {
  t.unsafeGetTensorImpl()->set_backend_meta(c10::make_intrusive<Metadata>(in));
}

struct Register {
  Register() {
    // One PrivateUse1 backend per process: another that registered first keeps its hooks.
    if (!torch::jit::GetBackendMetaSerialization()[static_cast<size_t>(kDevice)].has_value()) {
      torch::jit::TensorBackendMetaRegistry(kDevice, &save, &restore);
    }
  }
};

Register registered;

}  // namespace
}  // namespace regen_host_glue
#endif
