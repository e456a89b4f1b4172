//! `register_autocast.cpp`: the autocast registrations a config's plan asks for
//! (`crate::autocast`), through the `autocast.cpp` template, then the backend's own policy
//! (`[autocast_ops]`) and the functions its banned ops raise from.

use askama::Template;

use crate::autocast::{AutocastPlan, Ban, Cast};
use crate::config::Config;
use crate::write::OutputFile;

#[derive(Template)]
#[template(path = "autocast.cpp", escape = "none")]
struct AutocastUnit<'a> {
    generated_note: &'a str,
    lists: &'a str,
    casts: &'a [Cast],
}

/// What `[autocast_ops]` adds to the unit, after `autocast.cpp`'s registrations (where its casts
/// are): which ops it takes off the base lists, and each banned op's function and registration.
/// Appended, in a `TORCH_LIBRARY_IMPL` block of its own (torch gives every block its own
/// registrar), so a config without `[autocast_ops]` gets the unit it always got, byte for byte.
/// AutocastPrivateUse1 came with `KERNEL_PRIVATEUSEONE` (torch 2.1): the block is guarded as the
/// template's registrations are.
#[derive(Template)]
#[template(
    ext = "cpp",
    escape = "none",
    source = r#"
// regen.toml's [autocast_ops], the backend's own policy (instead of the "{{ lists }}" lists'):
{%- for (op, policy) in own %}
//   {{ op }}: {{ policy }}
{%- endfor %}
{%- if !banned.is_empty() %}

// A banned op raises under autocast, as CUDA's autocast does for binary_cross_entropy. ATen keeps
// its banned function to itself (static in autocast_mode.cpp), so each banned op has one here,
// with the op's signature from RegistrationDeclarations.h.
#ifdef KERNEL_PRIVATEUSEONE
namespace {{ namespace }} {
// Older releases spell Tensor, Scalar, IntArrayRef, ... without `at::`.
using namespace at;
namespace {
{%- for b in banned %}

// {{ b.ban.schema }}
{{ b.ban.return_type }} {{ b.ban.function }}({{ b.ban.param_types|join(", ") }}) {
  TORCH_CHECK(false,
{%- for line in b.message %}
      {{ line }}{% if loop.last %});{% endif %}
{%- endfor %}
}
{%- endfor %}
}  // namespace
}  // namespace {{ namespace }}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
{%- for b in banned %}
  m.impl(TORCH_SELECTIVE_NAME("aten::{{ b.ban.op }}"), TORCH_FN({{ namespace }}::{{ b.ban.function }}));
{%- endfor %}
}
#endif
{%- endif %}"#
)]
struct OwnPolicy<'a> {
    lists: &'a str,
    namespace: &'a str,
    /// Each op of `[autocast_ops]` and its policy's key, in the config's order.
    own: Vec<(&'a str, &'static str)>,
    banned: Vec<Banned<'a>>,
}

/// A banned op, with its message as the lines of a C++ string literal.
struct Banned<'a> {
    ban: &'a Ban,
    message: Vec<String>,
}

/// `message` as C++ string literals, one per line of it, each line's `\n` kept.
fn cpp_literals(message: &str) -> Vec<String> {
    let lines: Vec<&str> = message.split('\n').collect();
    let last = lines.len() - 1;
    lines
        .iter()
        .enumerate()
        .map(|(k, line)| {
            let escaped = line.replace('\\', "\\\\").replace('"', "\\\"");
            if k == last { format!("\"{escaped}\"") } else { format!("\"{escaped}\\n\"") }
        })
        .collect()
}

/// `register_autocast.cpp`, when the config asks for autocast.
pub fn emit_autocast(plan: &AutocastPlan, config: &Config, note: &str) -> Option<OutputFile> {
    let autocast = config.autocast?;
    let unit = AutocastUnit { generated_note: note, lists: autocast.as_str(), casts: &plan.casts };
    let mut text = crate::emit_cpp::render(&unit);
    if !config.autocast_ops.is_empty() {
        let own = OwnPolicy {
            lists: autocast.as_str(),
            namespace: &config.namespace,
            own: config.autocast_ops.iter().map(|o| (o.op.name.as_str(), o.policy.as_str())).collect(),
            banned: plan
                .banned
                .iter()
                .map(|ban| Banned { ban, message: cpp_literals(&ban.message(&config.device)) })
                .collect(),
        };
        text.push_str(&crate::emit_cpp::render(&own));
    }
    Some(OutputFile { name: "register_autocast.cpp".into(), contents: text.into_bytes() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autocast::CastPolicy::{self, Fp32, LowerPrecisionFp, Promote};
    use crate::autocast::{CPU_LISTS, plan};
    use crate::config::parse_config;
    use crate::ir::Model;

    use crate::autocast::tests::model_of;

    #[test]
    fn every_listed_op_once() {
        let mut seen = std::collections::HashSet::new();
        for list in CPU_LISTS {
            for op in list.ops {
                assert!(seen.insert(*op), "{op} is listed twice");
            }
        }
        assert_eq!(seen.len(), 126, "torch 2.15's AutocastCPU registers 126 ops");
    }

    #[test]
    fn without_the_switch_nothing_is_registered() {
        let model = model_of(&["mm", "cat"]);
        let config = parse_config("").unwrap();
        assert_eq!(plan(&model, config.autocast, &config.autocast_ops), AutocastPlan::default());
        assert!(emit_autocast(&plan(&model, config.autocast, &config.autocast_ops), &config, "note").is_none());
    }

    #[test]
    fn listed_ops_get_cpu_policies_and_absent_ones_are_reported() {
        let model = model_of(&["mm", "conv2d.padding", "mse_loss", "cat", "relu"]);
        let config = parse_config("autocast = \"cpu\"\n").unwrap();
        let plan = plan(&model, config.autocast, &config.autocast_ops);
        let got: Vec<(&str, CastPolicy)> = plan.casts.iter().map(|c| (c.op.as_str(), c.policy)).collect();
        assert_eq!(
            got,
            [("conv2d.padding", LowerPrecisionFp), ("mm", LowerPrecisionFp), ("mse_loss", Fp32), ("cat", Promote)]
        );
        assert!(plan.missing.contains(&"linear") && !plan.missing.contains(&"mm"));
        assert_eq!(plan.missing.len(), 126 - 4);
        let file = emit_autocast(&plan, &config, "NOTE").unwrap();
        let text = String::from_utf8(file.contents).unwrap();
        assert_eq!(file.name, "register_autocast.cpp");
        assert!(text.starts_with("// NOTE\n"), "{text}");
        assert!(text.contains("REGEN_KERNEL_PRIVATEUSEONE_OVERLOAD(conv2d, padding, lower_precision_fp)"), "{text}");
        assert!(text.contains("KERNEL_PRIVATEUSEONE(mm, lower_precision_fp)"), "{text}");
        assert!(text.contains("KERNEL_PRIVATEUSEONE(cat, promote)"), "{text}");
        assert!(text.contains("TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m)"), "{text}");
        assert!(!text.contains("relu"), "{text}");
    }

    /// The registration macros of ATen/autocast_mode.h, reduced to what the preprocessor sees:
    /// KERNEL/KERNEL2 expand to `m.impl(TORCH_SELECTIVE_NAME(...), ...)` as in torch.
    const KERNEL_1_AND_2: &str = "#define KERNEL(DISPATCHKEY, OP, POLICY) m.impl(TORCH_SELECTIVE_NAME(\"aten::\" #OP), POLICY);\n\
        #define KERNEL2(DISPATCHKEY, OP, OVERLOAD, POLICY) m.impl(TORCH_SELECTIVE_NAME(\"aten::\" #OP \".\" #OVERLOAD), POLICY);\n";

    /// torch 2.1.2 to 2.3.1: a two-argument macro and a "2" macro for overloads.
    const MACROS_2_1: &str = "#define KERNEL_PRIVATEUSEONE(OP, POLICY) KERNEL(c10::DeviceType::PrivateUse1, OP, POLICY)\n\
        #define KERNEL_PRIVATEUSEONE2(OP, OVERLOAD, POLICY) KERNEL2(c10::DeviceType::PrivateUse1, OP, OVERLOAD, POLICY)\n";

    /// torch 2.4.0 on (verbatim but for line breaks): one variadic macro counting its arguments.
    const MACROS_2_4: &str = "#define C10_CONCATENATE_IMPL(s1, s2) s1##s2\n\
        #define C10_CONCATENATE(s1, s2) C10_CONCATENATE_IMPL(s1, s2)\n\
        #define C10_EXPAND_MSVC_WORKAROUND(x) x\n\
        #define _KERNEL_OVERLOAD_NARG_IMPL(_0, _1, _2, N, ...) N\n\
        #define _KERNEL_OVERLOAD_NARG(...) C10_EXPAND_MSVC_WORKAROUND(_KERNEL_OVERLOAD_NARG_IMPL(__VA_ARGS__, 2, 1))\n\
        #define KERNEL1(DISPATCHKEY, OP, POLICY) m.impl(TORCH_SELECTIVE_NAME(\"aten::\" #OP), POLICY);\n\
        #define KERNEL2(DISPATCHKEY, OP, OVERLOAD, POLICY) m.impl(TORCH_SELECTIVE_NAME(\"aten::\" #OP \".\" #OVERLOAD), POLICY);\n\
        #define _KERNEL_DISPATCH(DISPATCHKEY, NARG, ...) C10_CONCATENATE(KERNEL, NARG)(DISPATCHKEY, __VA_ARGS__)\n\
        #define _KERNEL_IMPL(DISPATCHKEY, ...) _KERNEL_DISPATCH(DISPATCHKEY, _KERNEL_OVERLOAD_NARG(__VA_ARGS__), __VA_ARGS__)\n\
        #define KERNEL(DISPATCHKEY, ...) _KERNEL_IMPL(DISPATCHKEY, __VA_ARGS__)\n\
        #define KERNEL_PRIVATEUSEONE(...) KERNEL(c10::DeviceType::PrivateUse1, __VA_ARGS__)\n";

    /// Preprocesses the unit rendered for `mm` and `conv2d.padding` against a stub
    /// ATen/autocast_mode.h holding `macros`: the preprocessor's output, or its error.
    fn preprocess(macros: &str) -> Result<String, String> {
        preprocess_config("autocast = \"cpu\"\n", macros)
    }

    /// [`preprocess`] for the unit `config` asks for over `mm`, `conv2d.padding` and `dot`.
    fn preprocess_config(config: &str, macros: &str) -> Result<String, String> {
        let model = model_of(&["mm", "conv2d.padding", "dot"]);
        let config = parse_config(config).unwrap();
        let unit = emit_autocast(&plan(&model, config.autocast, &config.autocast_ops), &config, "NOTE").unwrap();
        let dir = tempfile::tempdir().unwrap();
        for sub in ["ATen", "torch"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        std::fs::write(dir.path().join("ATen/ATen.h"), "").unwrap();
        std::fs::write(dir.path().join("torch/library.h"), "").unwrap();
        std::fs::write(dir.path().join("ATen/autocast_mode.h"), macros).unwrap();
        std::fs::write(dir.path().join("unit.cpp"), &unit.contents).unwrap();
        let out = std::process::Command::new(std::env::var("CXX").unwrap_or_else(|_| "g++".into()))
            .args(["-E", "-P", "-I"])
            .arg(dir.path())
            .arg(dir.path().join("unit.cpp"))
            .output()
            .expect("a C++ compiler (g++, or $CXX) runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() { Ok(text) } else { Err(String::from_utf8_lossy(&out.stderr).into_owned()) }
    }

    #[test]
    fn overloads_register_by_name_and_overload_with_either_macro_form() {
        for (release, macros) in [("2.1", format!("{KERNEL_1_AND_2}{MACROS_2_1}")), ("2.4", MACROS_2_4.to_owned())] {
            let text = preprocess(&macros).unwrap_or_else(|e| panic!("torch {release}'s macros: {e}"));
            let names: Vec<&str> = text.match_indices("TORCH_SELECTIVE_NAME(").map(|(i, _)| &text[i..]).collect();
            let names: Vec<&str> = names.iter().map(|t| &t[..t.find(')').unwrap() + 1]).collect();
            assert_eq!(
                names,
                [r#"TORCH_SELECTIVE_NAME("aten::" "conv2d" "." "padding")"#, r#"TORCH_SELECTIVE_NAME("aten::" "mm")"#],
                "torch {release}'s macros:\n{text}"
            );
        }
    }

    #[test]
    fn a_header_that_cannot_take_an_overload_stops_the_build() {
        let two_only =
            format!("{KERNEL_1_AND_2}#define KERNEL_PRIVATEUSEONE(OP, POLICY) KERNEL(PrivateUse1, OP, POLICY)\n");
        let error = preprocess(&two_only).unwrap_err();
        assert!(error.contains("neither KERNEL_PRIVATEUSEONE2 nor a variadic KERNEL_PRIVATEUSEONE"), "{error}");
        // Before 2.1 (no macro at all): nothing is registered, not even the fallthrough.
        let text = preprocess("").unwrap();
        assert!(!text.contains("TORCH_LIBRARY_IMPL") && !text.contains("m.impl"), "{text}");
        // Nor a banned op's (no AutocastPrivateUse1 key before 2.1); from 2.1 it is registered.
        let banned = "autocast = \"cpu\"\n[autocast_ops]\nbanned = [\"dot\"]\n";
        let text = preprocess_config(banned, "").unwrap();
        assert!(!text.contains("TORCH_LIBRARY_IMPL") && !text.contains("dot_banned"), "{text}");
        let text = preprocess_config(banned, MACROS_2_4).unwrap();
        assert!(text.contains(r#"m.impl(TORCH_SELECTIVE_NAME("aten::dot"), TORCH_FN(regen_generated::dot_banned));"#));
    }

    fn fixture(version: &str) -> Model {
        let path = format!("{}/../../fixtures/torch-{version}/RegistrationDeclarations.h", env!("CARGO_MANIFEST_DIR"));
        crate::load_header(&std::fs::read(path).unwrap()).unwrap().model
    }

    #[test]
    fn the_pinned_release_has_every_listed_op() {
        let config = parse_config("autocast = \"cpu\"\n").unwrap();
        let pinned = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../kernels/torch-version")).unwrap();
        let plan = plan(&fixture(pinned.trim()), config.autocast, &config.autocast_ops);
        assert_eq!((plan.casts.len(), plan.missing.len()), (126, 0), "{:?}", plan.missing);
    }

    #[test]
    fn an_older_release_reports_what_it_lacks() {
        let config = parse_config("autocast = \"cpu\"\n").unwrap();
        let plan = plan(&fixture("1.13.1"), config.autocast, &config.autocast_ops);
        // mkldnn_rnn_layer and scaled_dot_product_attention came with torch 2.0.
        assert_eq!(plan.missing, ["mkldnn_rnn_layer", "scaled_dot_product_attention", "linalg_matrix_sqrth"]);
        assert_eq!(plan.casts.len() + plan.missing.len(), 126);
    }

    #[test]
    fn own_policies_register_after_the_base_lists_and_banned_ops_raise() {
        let config = parse_config(
            "device = \"sim\"\nautocast = \"cpu\"\n[autocast_ops]\nfp32 = [\"asin\"]\nbanned = [\"binary_cross_entropy\", \"add.Tensor\"]\n",
        )
        .unwrap();
        let model = fixture("2.15.0");
        let plan = plan(&model, config.autocast, &config.autocast_ops);
        let file = emit_autocast(&plan, &config, "NOTE").unwrap();
        let text = String::from_utf8(file.contents).unwrap();
        // asin is on no base list: registered with the others, fp32; binary_cross_entropy left
        // CPU's fp32 list for its ban.
        assert!(text.contains("  KERNEL_PRIVATEUSEONE(asin, fp32)\n}"), "{text}");
        assert!(!text.contains("KERNEL_PRIVATEUSEONE(binary_cross_entropy,"), "{text}");
        assert!(text.contains("KERNEL_PRIVATEUSEONE(binary_cross_entropy_with_logits, fp32)"), "{text}");
        let own = &text[text.find("// regen.toml's [autocast_ops]").expect("the own section")..];
        assert_eq!(own, EXPECTED_OWN);
    }

    /// The section `[autocast_ops]` adds: the ops it moves, then each banned op's function, with
    /// the header's signature, and its registration.
    const EXPECTED_OWN: &str = r#"// regen.toml's [autocast_ops], the backend's own policy (instead of the "cpu" lists'):
//   asin: fp32
//   binary_cross_entropy: banned
//   add.Tensor: banned

// A banned op raises under autocast, as CUDA's autocast does for binary_cross_entropy. ATen keeps
// its banned function to itself (static in autocast_mode.cpp), so each banned op has one here,
// with the op's signature from RegistrationDeclarations.h.
#ifdef KERNEL_PRIVATEUSEONE
namespace regen_generated {
// Older releases spell Tensor, Scalar, IntArrayRef, ... without `at::`.
using namespace at;
namespace {

// aten::binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=Mean) -> Tensor
at::Tensor binary_cross_entropy_banned(const at::Tensor &, const at::Tensor &, const ::std::optional<at::Tensor> &, int64_t) {
  TORCH_CHECK(false,
      "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
      "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
      "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
      "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
      "safe to autocast.");
}

// aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
at::Tensor add_tensor_banned(const at::Tensor &, const at::Tensor &, const at::Scalar &) {
  TORCH_CHECK(false,
      "aten::add.Tensor is unsafe to autocast on sim.\n"
      "The backend bans it inside torch.autocast(device_type=\"sim\") (regen.toml's [autocast_ops] banned).\n"
      "Call it outside the autocast region, or within torch.autocast(device_type=\"sim\", enabled=False).");
}
}  // namespace
}  // namespace regen_generated

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(regen_generated::binary_cross_entropy_banned));
  m.impl(TORCH_SELECTIVE_NAME("aten::add.Tensor"), TORCH_FN(regen_generated::add_tensor_banned));
}
#endif
"#;

    #[test]
    fn the_switch_is_checked() {
        let errors = parse_config("autocast = \"cuda\"\n").unwrap_err();
        assert!(errors[0].message.contains("autocast must be \"cpu\", found \"cuda\""), "{:?}", errors[0]);
        let errors = parse_config("dispatch_key = \"Meta\"\nautocast = \"cpu\"\n").unwrap_err();
        assert!(errors[0].message.contains("dispatch_key = \"PrivateUse1\""), "{:?}", errors[0]);
    }
}
