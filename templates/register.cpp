{% import "wrapper.cpp" as wrapper -%}
// {{ generated_note }}
//
// Registrations, part {{ shard }} of {{ shard_count }}: one wrapper per op with exactly the dispatcher
// signature of RegistrationDeclarations.h, forwarding to the Rust kernel through the C ABI.
// An op's part depends on its name alone, so adding an op changes one part.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "regen_marshal.h"
{% if !defined.is_empty() %}
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
{% for w in defined %}
{% call wrapper::definition(w) %}
{% endfor %}
}  // namespace
}  // namespace {{ namespace }}
{% if registered.is_empty() %}
// No registrations fall in this part.
{%- else %}
TORCH_LIBRARY_IMPL(aten, {{ dispatch_key }}, m) {
{%- for w in registered %}
  m.impl("{{ w.op }}", TORCH_FN({{ namespace }}::{{ w.name }}));
{%- endfor %}
}
{%- endif %}
{%- if !autograd.is_empty() %}

TORCH_LIBRARY_IMPL(aten, Autograd{{ dispatch_key }}, m) {
{%- for w in autograd %}
  m.impl("{{ w.op }}", TORCH_FN({{ namespace }}::{{ w.name }}));
{%- endfor %}
}
{%- endif %}
