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
// An overload's registration: torch 2.1 to 2.3 define KERNEL_PRIVATEUSEONE(OP, POLICY) and
// KERNEL_PRIVATEUSEONE2(OP, OVERLOAD, POLICY); from 2.4.0 KERNEL_PRIVATEUSEONE is variadic,
// (OP, POLICY) or (OP, OVERLOAD, POLICY), and the "2" form is gone (ATen/autocast_mode.h of each
// release; `cargo xtask releases` builds this unit on every one). Chosen by what the header
// defines, not by version number. A header with neither form cannot register an overload, so the
// build stops rather than register `name` in place of `name.overload`.
#if defined(KERNEL_PRIVATEUSEONE2)
#define REGEN_KERNEL_PRIVATEUSEONE_OVERLOAD(OP, OVERLOAD, POLICY) KERNEL_PRIVATEUSEONE2(OP, OVERLOAD, POLICY)
#elif defined(_KERNEL_OVERLOAD_NARG)
#define REGEN_KERNEL_PRIVATEUSEONE_OVERLOAD(OP, OVERLOAD, POLICY) KERNEL_PRIVATEUSEONE(OP, OVERLOAD, POLICY)
#else
#error "regen.toml's autocast: this torch release's ATen/autocast_mode.h has neither KERNEL_PRIVATEUSEONE2 nor a variadic KERNEL_PRIVATEUSEONE; its overloads cannot be registered"
#endif

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
{%- for c in casts %}
{%- if c.overload.is_empty() %}
  KERNEL_PRIVATEUSEONE({{ c.name }}, {{ c.policy.cpp() }})
{%- else %}
  REGEN_KERNEL_PRIVATEUSEONE_OVERLOAD({{ c.name }}, {{ c.overload }}, {{ c.policy.cpp() }})
{%- endif %}
{%- endfor %}
}
#undef REGEN_KERNEL_PRIVATEUSEONE_OVERLOAD
#else
#pragma message("regen.toml's autocast: this torch release's ATen/autocast_mode.h has no KERNEL_PRIVATEUSEONE; the device registers no autocast kernels")
#endif
