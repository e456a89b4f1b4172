{% import "wrapper.cpp" as wrapper -%}
// {{ generated_note }}
//
// The backend's own ops (regen.toml's [[custom_op]]): each library's definitions, one wrapper
// per op calling its Rust kernel through the C ABI, the registrations for the device (and CPU
// where asked), and an autograd node for each op that names a backward op: the node saves what
// the backward op takes and calls it through the dispatcher, so the backward kernel is Rust too.
// An op without a backward gets PyTorch's not-implemented autograd kernel: backpropagating
// through it is an error.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
{%- if !nodes.is_empty() %}
#include <torch/csrc/autograd/custom_function.h>
{%- endif %}

#include "regen_marshal.h"

// The Rust entry points called here: each returns NULL on success or an error (regen_abi.h).
extern "C" {
{%- for w in wrappers %}
{% call wrapper::declaration(w) %}
{%- endfor %}
}

namespace {{ namespace }} {
using namespace at;
namespace {
{%- if !cpu_wrappers.is_empty() %}

// A kernel's new tensors are device memory, which is host memory: for a CPU call they are handed
// back as CPU tensors over the same memory (kept alive by the device tensor), not copied.
at::Tensor as_cpu(const at::Tensor& t) {
  if (!t.defined() || t.is_cpu()) return t;
  if (t.numel() == 0) return at::empty_strided(t.sizes(), t.strides(), t.options().device(at::kCPU));
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), [keep = t](void*) {}, t.options().device(at::kCPU));
}
::std::vector<at::Tensor> as_cpu(::std::vector<at::Tensor> ts) {
  for (auto& t : ts) t = as_cpu(t);
  return ts;
}
template <class T>
T as_cpu(T value) {
  return value;
}
{%- endif %}
{% for w in wrappers %}
{% call wrapper::definition(w) %}
{% endfor %}
{%- for c in cpu_wrappers %}
// {{ c.op }} for CPU tensors: the same kernel.
{{ c.return_type }} {{ c.name }}({{ c.params }}) {
  {{ c.body }}
}
{% endfor %}
{%- for n in nodes %}
// {{ n.op }}: the backward is {{ n.backward }}.
struct {{ n.node }} : public torch::autograd::Function<{{ n.node }}> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, {{ n.params }}) {
{%- for line in n.forward %}
    {{ line }}
{%- endfor %}
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {
{%- for line in n.backward_body %}
    {{ line }}
{%- endfor %}
  }
};

// The autograd kernel of {{ n.op }}.
{{ n.return_type }} {{ n.kernel }}({{ n.params }}) {
  auto outputs = {{ n.node }}::apply({{ n.args }});
  {{ n.result }}
}
{% endfor %}
}  // namespace
}  // namespace {{ namespace }}
{% for lib in libraries %}
TORCH_LIBRARY({{ lib.namespace }}, m) {
{%- for s in lib.schemas %}
  m.def("{{ s }}");
{%- endfor %}
}
{%- for block in lib.blocks %}

TORCH_LIBRARY_IMPL({{ lib.namespace }}, {{ block.key }}, m) {
{%- for i in block.impls %}
{%- match i.function %}
{%- when Some with (function) %}
  m.impl("{{ i.name }}", TORCH_FN({{ namespace }}::{{ function }}));
{%- when None %}
  m.impl("{{ i.name }}", torch::autograd::autogradNotImplementedFallback());
{%- endmatch %}
{%- endfor %}
}
{%- endfor %}
{% endfor %}
