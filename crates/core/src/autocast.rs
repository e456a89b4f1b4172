//! Autocast for the device as data: which ops `torch.autocast(device_type=DEVICE)` casts, and how.
//!
//! `regen.toml`'s `autocast = "cpu"` registers, for the AutocastPrivateUse1 key, exactly the ops
//! CPU autocast casts, each with CPU's cast policy, so mixed precision on the device gives the
//! dtypes it gives on CPU. The lists are CPU's `TORCH_LIBRARY_IMPL(aten, AutocastCPU, m)` of the
//! pinned release (aten/src/ATen/autocast_mode.cpp; in a running torch,
//! `torch._C._dispatch_get_registrations_for_dispatch_key("AutocastCPU")`). An op the header
//! lacks (an older release) is left out and reported, never dropped silently.

use askama::Template;
use serde::Serialize;

use crate::config::Config;
use crate::ir::Model;
use crate::write::OutputFile;

/// Whose op lists a device's autocast follows (`autocast = "..."` in regen.toml).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Autocast {
    /// CPU autocast's lists and policies.
    Cpu,
}

impl Autocast {
    /// The spelling in regen.toml.
    pub fn as_str(self) -> &'static str {
        match self {
            Autocast::Cpu => "cpu",
        }
    }

    /// The config value's meaning, or `None` for an unknown spelling.
    pub fn parse(s: &str) -> Option<Autocast> {
        match s {
            "cpu" => Some(Autocast::Cpu),
            _ => None,
        }
    }

    /// The op lists this choice registers.
    pub fn lists(self) -> &'static [PolicyList] {
        match self {
            Autocast::Cpu => CPU_LISTS,
        }
    }
}

/// ATen's `at::autocast::CastPolicy`, by the name its `KERNEL_*` macros take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CastPolicy {
    /// Floating-point tensor arguments are cast to the autocast dtype (bfloat16/float16).
    LowerPrecisionFp,
    /// Floating-point tensor arguments are cast to float32.
    Fp32,
    /// Tensor arguments are cast to the widest floating type among them.
    Promote,
}

impl CastPolicy {
    /// The enumerator of `at::autocast::CastPolicy`.
    pub fn cpp(self) -> &'static str {
        match self {
            CastPolicy::LowerPrecisionFp => "lower_precision_fp",
            CastPolicy::Fp32 => "fp32",
            CastPolicy::Promote => "promote",
        }
    }
}

/// One of CPU's lists: its policy, where it comes from, and its op keys (`name.overload`).
#[derive(Debug, Clone, Copy)]
pub struct PolicyList {
    pub policy: CastPolicy,
    pub reason: &'static str,
    pub ops: &'static [&'static str],
}

use CastPolicy::{Fp32, LowerPrecisionFp, Promote};

/// CPU autocast in torch 2.15 (aten/src/ATen/autocast_mode.cpp), in its order. Since 2.13 CPU no
/// longer lists `cholesky`, `qr` and the Dimname overloads (`prod.dim_Dimname`,
/// `index_copy.dimname`), and lists `linalg_matrix_sqrth` as fp32.
pub const CPU_LISTS: &[PolicyList] = &[
    PolicyList {
        policy: LowerPrecisionFp,
        reason: "CPU's lower_precision_fp list: convolutions, matrix products, attention",
        ops: &[
            "conv1d",
            "conv1d.padding",
            "conv2d",
            "conv2d.padding",
            "conv3d",
            "conv3d.padding",
            "bmm",
            "mm",
            "linalg_vecdot",
            "baddbmm",
            "addmm",
            "_addmm_activation",
            "addbmm",
            "linear",
            "_convolution.deprecated",
            "matmul",
            "conv_tbc",
            "mkldnn_rnn_layer",
            "conv_transpose1d",
            "conv_transpose2d.input",
            "conv_transpose3d.input",
            "prelu",
            "scaled_dot_product_attention",
            "_native_multi_head_attention",
        ],
    },
    PolicyList {
        policy: Fp32,
        reason: "CPU's fp32 list: losses, reductions, FFTs, linear algebra and pooling kept in float32",
        ops: &[
            "avg_pool3d",
            "binary_cross_entropy",
            "grid_sampler",
            "polar",
            "prod",
            "prod.dim_int",
            "quantile",
            "quantile.scalar",
            "nanquantile",
            "nanquantile.scalar",
            "stft",
            "stft.center",
            "cdist",
            "grid_sampler_2d",
            "_grid_sampler_2d_cpu_fallback",
            "grid_sampler_3d",
            "trace",
            "view_as_complex",
            "cholesky_inverse",
            "cholesky_solve",
            "inverse",
            "lu_solve",
            "orgqr",
            "ormqr",
            "pinverse",
            "max_pool3d",
            "max_unpool2d",
            "max_unpool3d",
            "adaptive_avg_pool3d",
            "reflection_pad1d",
            "reflection_pad2d",
            "replication_pad1d",
            "replication_pad2d",
            "replication_pad3d",
            "mse_loss",
            "cosine_embedding_loss",
            "nll_loss",
            "nll_loss2d",
            "hinge_embedding_loss",
            "poisson_nll_loss",
            "smooth_l1_loss",
            "cross_entropy_loss",
            "l1_loss",
            "huber_loss",
            "margin_ranking_loss",
            "soft_margin_loss",
            "triplet_margin_loss",
            "multi_margin_loss",
            "ctc_loss.IntList",
            "ctc_loss.Tensor",
            "kl_div",
            "multilabel_margin_loss",
            "binary_cross_entropy_with_logits",
            "fft_fft",
            "fft_ifft",
            "fft_fft2",
            "fft_ifft2",
            "fft_fftn",
            "fft_ifftn",
            "fft_rfft",
            "fft_irfft",
            "fft_rfft2",
            "fft_irfft2",
            "fft_rfftn",
            "fft_irfftn",
            "fft_hfft",
            "fft_ihfft",
            "linalg_cond",
            "linalg_cond.p_str",
            "linalg_matrix_rank",
            "linalg_matrix_rank.tol_tensor",
            "linalg_matrix_rank.atol_rtol_tensor",
            "linalg_matrix_rank.atol_rtol_float",
            "linalg_solve",
            "linalg_cholesky",
            "linalg_svdvals",
            "linalg_eigvals",
            "linalg_eigvalsh",
            "linalg_inv",
            "linalg_householder_product",
            "linalg_tensorinv",
            "linalg_tensorsolve",
            "fake_quantize_per_tensor_affine",
            "geqrf",
            "_lu_with_info",
            "svd",
            "triangular_solve",
            "fractional_max_pool2d",
            "fractional_max_pool3d",
            "adaptive_max_pool3d",
            "multilabel_margin_loss_forward",
            "linalg_qr",
            "linalg_cholesky_ex",
            "linalg_svd",
            "linalg_eig",
            "linalg_eigh",
            "linalg_lstsq",
            "linalg_inv_ex",
            "linalg_matrix_sqrth",
        ],
    },
    PolicyList {
        policy: Promote,
        reason: "CPU's promote list: ops joining tensors, which must agree on one dtype",
        ops: &["stack", "cat", "index_copy"],
    },
];

/// One registration: the op's name and overload as the `KERNEL_PRIVATEUSEONE` macro takes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cast {
    pub op: String,
    #[serde(skip)]
    pub name: String,
    #[serde(skip)]
    pub overload: String,
    pub policy: CastPolicy,
}

/// What a config's autocast registers, and which listed ops the header lacks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AutocastPlan {
    pub casts: Vec<Cast>,
    /// Listed ops absent from the header (an older release): not registered.
    pub missing: Vec<&'static str>,
}

/// The registrations `config` asks for over `model` (none without `autocast`).
pub fn plan(model: &Model, config: &Config) -> AutocastPlan {
    let mut plan = AutocastPlan::default();
    let Some(autocast) = config.autocast else { return plan };
    for list in autocast.lists() {
        for &key in list.ops {
            match model.find(key) {
                Some(op) => plan.casts.push(Cast {
                    op: key.to_owned(),
                    name: op.name().to_owned(),
                    overload: op.overload().to_owned(),
                    policy: list.policy,
                }),
                None => plan.missing.push(key),
            }
        }
    }
    plan
}

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
    use crate::config::parse_config;

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
        assert_eq!(plan(&model, &config), AutocastPlan::default());
        assert!(emit_autocast(&plan(&model, &config), &config, "note").is_none());
    }

    #[test]
    fn listed_ops_get_cpu_policies_and_absent_ones_are_reported() {
        let model = model_of(&["mm", "conv2d.padding", "mse_loss", "cat", "relu"]);
        let config = parse_config("autocast = \"cpu\"\n").unwrap();
        let plan = plan(&model, &config);
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
        let unit = emit_autocast(&plan(&model, &config), &config, "NOTE").unwrap();
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
        let plan = plan(&fixture("2.15.0"), &config);
        assert_eq!((plan.casts.len(), plan.missing.len()), (126, 0), "{:?}", plan.missing);
    }

    #[test]
    fn an_older_release_reports_what_it_lacks() {
        let config = parse_config("autocast = \"cpu\"\n").unwrap();
        let plan = plan(&fixture("1.13.1"), &config);
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
