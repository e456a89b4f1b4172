//! `register_autocast.cpp`: the autocast registrations a config's plan asks for
//! (`crate::autocast`), through the `autocast.cpp` template.

use askama::Template;

use crate::autocast::{AutocastPlan, Cast};
use crate::config::Config;
use crate::write::OutputFile;

#[derive(Template)]
#[template(path = "autocast.cpp", escape = "none")]
struct AutocastUnit<'a> {
    generated_note: &'a str,
    lists: &'a str,
    casts: &'a [Cast],
}

/// `register_autocast.cpp`, when the config asks for autocast.
pub fn emit_autocast(plan: &AutocastPlan, config: &Config, note: &str) -> Option<OutputFile> {
    let autocast = config.autocast?;
    let unit = AutocastUnit { generated_note: note, lists: autocast.as_str(), casts: &plan.casts };
    Some(OutputFile { name: "register_autocast.cpp".into(), contents: crate::emit_cpp::render(&unit).into_bytes() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autocast::CastPolicy::{self, Fp32, LowerPrecisionFp, Promote};
    use crate::autocast::{CPU_LISTS, plan};
    use crate::config::parse_config;
    use crate::ir::Model;

    fn model_of(keys: &[&str]) -> Model {
        let header: String = keys
            .iter()
            .map(|k| {
                let (name, overload) = k.split_once('.').unwrap_or((k, ""));
                let dotted = if overload.is_empty() { String::new() } else { format!(".{overload}") };
                format!(
                    "at::Tensor {}(const at::Tensor & self); // {{\"schema\": \"aten::{name}{dotted}(Tensor self) -> Tensor\", \"dispatch\": \"True\", \"default\": \"False\"}}\n",
                    name
                )
            })
            .collect();
        crate::load_header(header.as_bytes()).expect("a test header").model
    }

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
        assert_eq!(plan(&model, config.autocast), AutocastPlan::default());
        assert!(emit_autocast(&plan(&model, config.autocast), &config, "note").is_none());
    }

    #[test]
    fn listed_ops_get_cpu_policies_and_absent_ones_are_reported() {
        let model = model_of(&["mm", "conv2d.padding", "mse_loss", "cat", "relu"]);
        let config = parse_config("autocast = \"cpu\"\n").unwrap();
        let plan = plan(&model, config.autocast);
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
        let model = model_of(&["mm", "conv2d.padding"]);
        let config = parse_config("autocast = \"cpu\"\n").unwrap();
        let unit = emit_autocast(&plan(&model, config.autocast), &config, "NOTE").unwrap();
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
    }

    fn fixture(version: &str) -> Model {
        let path = format!("{}/../../fixtures/torch-{version}/RegistrationDeclarations.h", env!("CARGO_MANIFEST_DIR"));
        crate::load_header(&std::fs::read(path).unwrap()).unwrap().model
    }

    #[test]
    fn the_pinned_release_has_every_listed_op() {
        let config = parse_config("autocast = \"cpu\"\n").unwrap();
        let pinned = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../kernels/torch-version")).unwrap();
        let plan = plan(&fixture(pinned.trim()), config.autocast);
        assert_eq!((plan.casts.len(), plan.missing.len()), (126, 0), "{:?}", plan.missing);
    }

    #[test]
    fn an_older_release_reports_what_it_lacks() {
        let config = parse_config("autocast = \"cpu\"\n").unwrap();
        let plan = plan(&fixture("1.13.1"), config.autocast);
        // mkldnn_rnn_layer and scaled_dot_product_attention came with torch 2.0.
        assert_eq!(plan.missing, ["mkldnn_rnn_layer", "scaled_dot_product_attention", "linalg_matrix_sqrth"]);
        assert_eq!(plan.casts.len() + plan.missing.len(), 126);
    }

    #[test]
    fn the_switch_is_checked() {
        let errors = parse_config("autocast = \"cuda\"\n").unwrap_err();
        assert!(errors[0].message.contains("autocast must be \"cpu\", found \"cuda\""), "{:?}", errors[0]);
        let errors = parse_config("dispatch_key = \"Meta\"\nautocast = \"cpu\"\n").unwrap_err();
        assert!(errors[0].message.contains("dispatch_key = \"PrivateUse1\""), "{:?}", errors[0]);
    }
}
