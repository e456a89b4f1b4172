// {{ generated_note }}
//
// Autocast on the device (regen.toml `autocast = "{{ lists }}"`): inside
// `torch.autocast(device_type=...)` these ops cast their floating-point arguments by the policy
// each has in the "{{ lists }}" autocast lists (regen-core's autocast.rs), then run on the device as
// usual; every other op falls through untouched.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/library.h>

// Releases whose autocast_mode.h has no KERNEL_PRIVATEUSEONE (torch.autocast for PrivateUse1
// came later) register nothing, and say so at build time.
#ifdef KERNEL_PRIVATEUSEONE
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
{%- for c in casts %}
  KERNEL_PRIVATEUSEONE({{ c.name }}, {% if !c.overload.is_empty() %}{{ c.overload }}, {% endif %}{{ c.policy.cpp() }})
{%- endfor %}
}
#else
#pragma message("regen.toml's autocast: this torch release's ATen/autocast_mode.h has no KERNEL_PRIVATEUSEONE; the device registers no autocast kernels")
#endif
