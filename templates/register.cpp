{% import "wrapper.cpp" as wrapper -%}
// {{ generated_note }}
//
// Registrations, part {{ shard }} of {{ shard_count }}: one wrapper per op with exactly the dispatcher
// signature of RegistrationDeclarations.h, forwarding to the Rust kernel through the C ABI.
// An op's part depends on its name alone, so adding an op changes one part.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "regen_marshal.h"
{% if !registered.is_empty() || !autograd.is_empty() %}
// regen-runtime (regen_runtime::fallback::routed): true when the environment variable
// {{ routing_var }} names the op, which then gets the fallback (register_fallback.cpp) in place of
// its kernel: to see that tests notice an op leaving the device, or to bisect a wrong answer.
extern "C" bool regen_runtime_fallback_routed(const uint8_t* var, size_t var_len, const uint8_t* op, size_t op_len);
namespace {{ namespace }} {
void routed_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);
}  // namespace {{ namespace }}
{% endif %}
{%- if !defined.is_empty() %}
// The Rust entry points called here: each returns NULL on success or an error (regen_abi.h).
extern "C" {
{%- for w in defined %}
{% call wrapper::declaration(w) %}
{%- endfor %}
}
{% endif %}
namespace {{ namespace }} {
// Older releases spell Tensor, Scalar, IntArrayRef, ... without `at::`.
using namespace at;
namespace {
{%- if !registered.is_empty() || !autograd.is_empty() %}
// Registers `kernel` for `op`, or the fallback when {{ routing_var }} routes `op` there.
template <size_t N, class Kernel>
void impl_or_fallback(torch::Library& m, const char (&op)[N], Kernel kernel) {
  static constexpr char var[] = "{{ routing_var }}";
  if (regen_runtime_fallback_routed(reinterpret_cast<const uint8_t*>(var), sizeof(var) - 1,
                                    reinterpret_cast<const uint8_t*>(op), N - 1)) {
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&routed_fallback>());
  } else {
    m.impl(op, kernel);
  }
}
{% endif %}{% for w in defined %}
{% call wrapper::definition(w) %}
{% endfor %}
}  // namespace
}  // namespace {{ namespace }}
{% if registered.is_empty() %}
// No registrations fall in this part.
{%- else %}
TORCH_LIBRARY_IMPL(aten, {{ dispatch_key }}, m) {
{%- for w in registered %}
  {{ namespace }}::impl_or_fallback(m, "{{ w.op }}", TORCH_FN({{ namespace }}::{{ w.name }}));
{%- endfor %}
}
{%- endif %}
{%- if !autograd.is_empty() %}

TORCH_LIBRARY_IMPL(aten, Autograd{{ dispatch_key }}, m) {
{%- for w in autograd %}
  {{ namespace }}::impl_or_fallback(m, "{{ w.op }}", TORCH_FN({{ namespace }}::{{ w.name }}));
{%- endfor %}
}
{%- endif %}
