{% import "wrapper.cpp" as wrapper -%}
{#- The custom ops' own pieces: parameter lists, handles on an op in the dispatcher, result elements. -#}
{%- macro params(ps) %}{% for p in ps.iter() %}{{ p.ty }} {{ p.name }}{% if !loop.last %}, {% endif %}{% endfor %}{% endmacro -%}
{%- macro args(ps) %}{% for p in ps.iter() %}{{ p.name }}{% if !loop.last %}, {% endif %}{% endfor %}{% endmacro -%}
{%- macro handle(local, h) -%}
static auto {{ local }} = c10::Dispatcher::singleton().findSchemaOrThrow("{{ h.name }}", "{{ h.overload }}").typed<{{ h.return_type }} ({% for t in h.param_types %}{{ t }}{% if !loop.last %}, {% endif %}{% endfor %})>();
{%- endmacro -%}
{%- macro element(results, value, k) -%}
{%- match results %}{% when Results::One %}{{ value }}{% else %}::std::get<{{ k }}>({{ value }}){% endmatch -%}
{%- endmacro -%}
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
{{ c.return_type }} {{ c.name }}({% call params(c.params) %}) {
{%- match c.results %}
{%- when Results::Nothing %}
  {{ c.wrapper }}({% call args(c.params) %});
{%- when Results::One %}
  return as_cpu({{ c.wrapper }}({% call args(c.params) %}));
{%- when Results::Tuple(n) %}
  auto result = {{ c.wrapper }}({% call args(c.params) %});
  return {{ c.return_type }}({% for k in 0..*n %}as_cpu(::std::get<{{ k }}>(result)){% if k + 1 < *n %}, {% endif %}{% endfor %});
{%- endmatch %}
}
{% endfor %}
{%- for n in nodes %}
// {{ n.op }}: the backward is {{ n.backward }}.
struct {{ n.node }} : public torch::autograd::Function<{{ n.node }}> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, {% call params(n.params) %}) {
    at::AutoDispatchBelowADInplaceOrView guard;
    {% call handle("op", n.forward) %}
    auto result = op.call({% call args(n.params) %});
    torch::autograd::variable_list outputs = {{ "{" }}{% for k in 0..n.outputs %}{% call element(n.forward_results, "result", k) %}{% if k + 1 < n.outputs %}, {% endif %}{% endfor %}};
{%- for (name, param) in n.saved_values %}
    ctx->saved_data["{{ name }}"] = {{ param }};
{%- endfor %}
{%- if !n.saved_tensors.is_empty() %}
    ctx->save_for_backward({{ "{" }}
{%- for t in n.saved_tensors -%}
{%- match t %}{% when SavedTensor::Output(j) %}outputs[{{ j }}]{% when SavedTensor::Param(param) %}{{ param }}{% endmatch -%}
{%- if !loop.last %}, {% endif %}{% endfor %}});
{%- endif %}
{%- if !n.non_differentiable.is_empty() %}
    ctx->mark_non_differentiable({{ "{" }}{% for j in n.non_differentiable %}outputs[{{ j }}]{% if !loop.last %}, {% endif %}{% endfor %}});
{%- endif %}
    return outputs;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {
{%- if !n.saved_tensors.is_empty() %}
    auto saved = ctx->get_saved_variables();
{%- endif %}
    {% call handle("backward_op", n.backward_op) %}
    auto result = backward_op.call(
{%- for a in n.backward_args -%}
{%- match a %}
{%- when BackwardArg::Grad(j) %}grads[{{ j }}]
{%- when BackwardArg::Saved(i) %}saved[{{ i }}]
{%- when BackwardArg::Value { name, get } %}ctx->saved_data["{{ name }}"].{{ get }}
{%- endmatch -%}
{%- if !loop.last %}, {% endif %}{% endfor %});
    torch::autograd::variable_list gradients({{ n.gradient_slots }});
{%- for (i, k) in n.gradients %}
    gradients[{{ i }}] = {% call element(n.backward_results, "result", *k) %};
{%- endfor %}
    return gradients;
  }
};

// The autograd kernel of {{ n.op }}.
{{ n.return_type }} {{ n.kernel }}({% call params(n.params) %}) {
  auto outputs = {{ n.node }}::apply({% call args(n.params) %});
{%- match n.forward_results %}
{%- when Results::One %}
  return outputs[0];
{%- else %}
  return {{ n.return_type }}({% for j in 0..n.outputs %}outputs[{{ j }}]{% if j + 1 < n.outputs %}, {% endif %}{% endfor %});
{%- endmatch %}
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
