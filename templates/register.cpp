// {{ generated_note }}
//
// Registrations, part {{ shard }} of {{ shard_count }}: one wrapper per op with exactly the dispatcher
// signature of RegistrationDeclarations.h, forwarding to the Rust kernel through the C ABI.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "regen_kernels.h"
#include "regen_marshal.h"

namespace {{ namespace }} {
// Older releases spell Tensor, Scalar, IntArrayRef, ... without `at::`.
using namespace at;
namespace {
{% for w in defined %}
// {{ w.schema }}
{{ w.return_type }} {{ w.name }}({{ w.params }}) {
{%- for line in w.body %}
  {{ line }}
{%- endfor %}
}
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
