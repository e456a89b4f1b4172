// {{ generated_note }}
//
// What happens to an op the backend registers no kernel for (regen.toml `fallback = "{{ policy }}"`).
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/library.h>
{%- if cpu %}
#include <ATen/native/CPUFallback.h>
{%- endif %}

namespace {{ namespace }} {
namespace {

void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
{%- if cpu %}
  // Copies the inputs to CPU, runs the CPU kernel, and copies results back to the device.
  at::native::cpu_fallback(op, stack);
{%- else %}
  (void)stack;
  TORCH_CHECK_NOT_IMPLEMENTED(false, "'", op.schema().operator_name(),
                              "' has no kernel for the '{{ device }}' device: implement it "
                              "(regen.toml `implement`) or set fallback = \"cpu\"");
{%- endif %}
}

}  // namespace
}  // namespace {{ namespace }}

TORCH_LIBRARY_IMPL(_, {{ dispatch_key }}, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&{{ namespace }}::fallback>());
}
