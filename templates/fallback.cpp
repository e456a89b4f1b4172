// {{ generated_note }}
//
// What happens to an op the backend registers no kernel for (regen.toml `fallback = "{{ policy }}"`).
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/util/Exception.h>
#include <torch/library.h>
{%- if cpu %}
#include <ATen/native/CPUFallback.h>
{%- endif %}

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>
{%- if cpu %}

// regen-runtime (regen_runtime::fallback): counts a fallback of `op` (`name.overload`) and says
// what to do: 0 run it, 1 warn (its first fallback, REGEN_FALLBACK=warn) and run it, 2 raise
// (REGEN_FALLBACK=raise).
extern "C" int32_t regen_runtime_fallback_called(const uint8_t* op, size_t len);
{%- endif %}

namespace {{ namespace }} {
namespace {

// The ops regen.toml excluded, and why: calling one names the reason, instead of running it on
// CPU or failing with PyTorch's "Could not run ... with arguments from the 'CPU' backend".
const std::unordered_map<std::string, const char*>& excluded() {
  static const std::unordered_map<std::string, const char*> table = {
{%- for (key, why) in excluded %}
      {"{{ key }}", "{{ why }}"},
{%- endfor %}
  };
  return table;
}

// `name.overload` (regen.toml's key) of an aten op; empty for another namespace's.
std::string aten_key(const c10::OperatorName& name) {
  if (name.name.rfind("aten::", 0) != 0) return {};
  std::string key = name.name.substr(6);
  if (!name.overload_name.empty()) key += "." + name.overload_name;
  return key;
}
{%- if cpu %}

// Warnings raised while an op runs on CPU, held so that the one CPU's structured kernels give
// for an out= tensor PyTorch itself made on the device can be dropped: a functional op without a
// device kernel (mse_loss) is run by PyTorch as its out= form with an output of the final shape
// (a 0-d loss), which CPU's meta function first resizes to the elementwise shape and warns "An
// output with one or more elements was resized", on every call. The output keeps its shape, so
// nothing was resized; when one did change shape (a user's out= of another shape) the warning is
// CPU's own and is given.
struct HeldWarnings final : c10::WarningHandler {
  std::vector<c10::Warning> held;
  void process(const c10::Warning& warning) override { held.push_back(warning); }
};

void run_on_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& args = op.schema().arguments();
  const size_t first = stack->size() - args.size();
  std::vector<std::pair<at::Tensor, std::vector<int64_t>>> outs;
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& value = (*stack)[first + i];
    if (args[i].is_out() && value.isTensor()) outs.emplace_back(value.toTensor(), value.toTensor().sizes().vec());
  }
  if (outs.empty()) {
    at::native::cpu_fallback(op, stack);
    return;
  }
  HeldWarnings warnings;
  auto give = [&](bool drop_resize) {
    for (const c10::Warning& w : warnings.held) {
      if (drop_resize && w.msg().rfind("An output with one or more elements was resized", 0) == 0) continue;
      c10::warn(w);
    }
  };
  try {
    c10::WarningUtils::WarningHandlerGuard guard(&warnings);
    at::native::cpu_fallback(op, stack);
  } catch (...) {
    give(false);
    throw;
  }
  bool kept = true;
  for (const auto& [out, sizes] : outs) kept = kept && out.sizes().vec() == sizes;
  give(kept);
}
{%- endif %}

{%- if !refused.is_empty() %}

// The kernel of an excluded op CPU cannot run either (regen.toml `exclude`, policy::NO_CPU_KERNEL).
void refuse_excluded(const c10::OperatorHandle& op, torch::jit::Stack*) {
  const c10::OperatorName& name = op.schema().operator_name();
  auto why = excluded().find(aten_key(name));
  TORCH_CHECK_NOT_IMPLEMENTED(false, "'", name, "' is excluded in regen.toml (",
                              why == excluded().end() ? "by name" : why->second,
                              ") for the '{{ device }}' device, and CPU has no kernel for it: implement it to run it");
}
{%- endif %}

void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const c10::OperatorName& name = op.schema().operator_name();
  const std::string key = aten_key(name);
  auto why = excluded().find(key);
{%- if cpu %}
  // An excluded op CPU has a kernel for still runs there, as any op without a device kernel.
  const bool refused = why != excluded().end() && !op.hasKernelForDispatchKey(c10::DispatchKey::CPU);
  TORCH_CHECK_NOT_IMPLEMENTED(!refused, "'", name, "' is excluded in regen.toml (", why->second,
                              ") for the '{{ device }}' device, and CPU has no kernel to run it on through the fallback");
{%- else %}
  TORCH_CHECK_NOT_IMPLEMENTED(why == excluded().end(), "'", name, "' is excluded in regen.toml (", why->second,
                              ") for the '{{ device }}' device");
{%- endif %}
{%- if cpu %}
  const std::string counted = key.empty() ? c10::toString(name) : key;
  const int32_t action =
      regen_runtime_fallback_called(reinterpret_cast<const uint8_t*>(counted.data()), counted.size());
  TORCH_CHECK_NOT_IMPLEMENTED(action != 2, "'", name, "' has no kernel for the '{{ device }}' device and would run on "
                              "CPU through the fallback, which REGEN_FALLBACK=raise refuses");
  if (action == 1) {
    TORCH_WARN("'", name, "' has no kernel for the '{{ device }}' device: it runs on CPU through the fallback "
               "(inputs copied to CPU and results back); warned once per op (REGEN_FALLBACK=warn)");
  }
  // Copies the inputs to CPU, runs the CPU kernel, and copies results back to the device.
  run_on_cpu(op, stack);
{%- else %}
  (void)stack;
  TORCH_CHECK_NOT_IMPLEMENTED(false, "'", name, "' has no kernel for the '{{ device }}' device: implement it "
                              "(regen.toml `implement`) or set fallback = \"cpu\"");
{%- endif %}
}

}  // namespace

// The kernel the generated registrations (register_N.cpp, regen::impl_or_fallback) give an op
// {{ routing_var }} routes away from its own: this fallback, as for an op without a kernel.
void routed_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) { fallback(op, stack); }
}  // namespace {{ namespace }}

TORCH_LIBRARY_IMPL(_, {{ dispatch_key }}, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&{{ namespace }}::fallback>());
}
{%- if !refused.is_empty() %}

TORCH_LIBRARY_IMPL(aten, {{ dispatch_key }}, m) {
{%- for key in refused %}
  m.impl("{{ key }}", torch::CppFunction::makeFromBoxedFunction<&{{ namespace }}::refuse_excluded>());
{%- endfor %}
}
{%- endif %}
