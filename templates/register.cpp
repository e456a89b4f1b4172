{% import "wrapper.cpp" as wrapper -%}
// {{ generated_note }}
//
// Registrations, part {{ shard }} of {{ shard_count }}: one wrapper per op with exactly the dispatcher
// signature of RegistrationDeclarations.h, forwarding to the Rust kernel through the C ABI.
// An op's part depends on its name alone, so adding an op changes one part.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "regen_marshal.h"
{% if !registered.is_empty() || !autograd.is_empty() || !in_place.is_empty() %}
namespace {{ namespace }} {
// The fallback (register_fallback.cpp), for an op {{ routing_var }} routes there.
void routed_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);
}  // namespace {{ namespace }}
{% endif %}
{%- if !defined.is_empty() || !in_place_calls.is_empty() %}
// The Rust entry points called here: each returns NULL on success or an error (regen_abi.h).
extern "C" {
{%- for w in defined %}
{% call wrapper::declaration(w) %}
{%- endfor %}
{%- for w in in_place_calls %}
{% call wrapper::declaration(w) %}
{%- endfor %}
}
{% endif %}
namespace {{ namespace }} {
// Older releases spell Tensor, Scalar, IntArrayRef, ... without `at::`.
using namespace at;
namespace {
{%- if !registered.is_empty() || !autograd.is_empty() || !in_place.is_empty() %}
template <size_t N, class Kernel>
void register_kernel(torch::Library& m, const char (&op)[N], Kernel kernel) {
  ::regen::impl_or_fallback<&routed_fallback>(m, "{{ routing_var }}", op, kernel);
}
{% endif %}
{%- if !in_place.is_empty() %}
// An in-place op run by its `.out` kernel, registered where PyTorch derives it from `.out` (and
// would otherwise compute the functional form and copy it into `self`).
template <size_t N, class Kernel>
void register_in_place(torch::Library& m, const char (&op)[N], Kernel kernel) {
  if (::regen::derived_in_place(op)) register_kernel(m, op, kernel);
}
{% endif %}{% for w in defined %}
{% call wrapper::definition(w) %}
{% endfor %}{% for w in in_place %}
{% call wrapper::in_place_definition(w) %}
{% endfor %}
}  // namespace
}  // namespace {{ namespace }}
{% if registered.is_empty() && in_place.is_empty() %}
// No registrations fall in this part.
{%- else %}
TORCH_LIBRARY_IMPL(aten, {{ dispatch_key }}, m) {
{%- for w in registered %}
  {{ namespace }}::register_kernel(m, "{{ w.op }}", TORCH_FN({{ namespace }}::{{ w.name }}));
{%- endfor %}
{%- for w in in_place %}
  {{ namespace }}::register_in_place(m, "{{ w.op }}", TORCH_FN({{ namespace }}::{{ w.name }}));
{%- endfor %}
}
{%- endif %}
{%- if !autograd.is_empty() %}

TORCH_LIBRARY_IMPL(aten, Autograd{{ dispatch_key }}, m) {
{%- for w in autograd %}
  {{ namespace }}::register_kernel(m, "{{ w.op }}", TORCH_FN({{ namespace }}::{{ w.name }}));
{%- endfor %}
}
{%- endif %}
