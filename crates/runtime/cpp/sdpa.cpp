// scaled_dot_product_attention's backend choice for a regen backend (see glue.h). ATen asks a
// device which backend serves a call through the `_fused_sdp_choice_stub` dispatch stub, not
// through the `_fused_sdp_choice` op (aten/src/ATen/native/transformers/attention.cpp), so a
// backend's kernel for that op would only answer direct calls. The stub registered here calls the
// op through the dispatcher when the backend has a kernel for it (the reference kernels answer
// `overrideable` where their fused attention serves the call), and answers the math path, as ATen
// does for a device without a stub, when it has none. The overrideable backend is torch 2.5's.
#include "glue.h"

#if REGEN_TORCH_AT_LEAST(2, 5)
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>

#include <optional>

namespace regen_host_glue {
namespace {

// sdp::SDPBackend::math (ATen/native/transformers/sdp_utils_cpp.h).
constexpr int64_t kMath = 0;

int64_t fused_sdp_choice(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                         const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                         std::optional<double> scale, bool enable_gqa) {
  // Asked once, after every registration has run: whether the backend registered the op itself
  // (not the CPU fallback, which would answer CPU's choice for a device tensor).
  static const bool native = [] {
    auto op = c10::Dispatcher::singleton().findSchema({"aten::_fused_sdp_choice", ""});
    return op.has_value() && op->hasKernelForDispatchKey(c10::DispatchKey::PrivateUse1);
  }();
  // The backends a user left enabled (torch.nn.attention.sdpa_kernel, torch.backends.cuda's
  // enable_*_sdp): with the overrideable one off, the math path, as CUDA's choice honours them.
  if (!native || !at::globalContext().userEnabledOverrideableSDP()) return kMath;
  return at::_fused_sdp_choice(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa);
}

}  // namespace
}  // namespace regen_host_glue

namespace at::native {
// A static registrar, internal to this unit.
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &regen_host_glue::fused_sdp_choice)
}  // namespace at::native
#endif
