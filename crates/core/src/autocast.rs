//! Autocast for the device as data: which ops `torch.autocast(device_type=DEVICE)` casts, and how.
//!
//! `regen.toml`'s `autocast = "cpu"` registers, for the AutocastPrivateUse1 key, exactly the ops
//! CPU autocast casts, each with CPU's cast policy, so mixed precision on the device gives the
//! dtypes it gives on CPU. The lists are CPU's `TORCH_LIBRARY_IMPL(aten, AutocastCPU, m)` of the
//! pinned release (aten/src/ATen/autocast_mode.cpp; in a running torch,
//! `torch._C._dispatch_get_registrations_for_dispatch_key("AutocastCPU")`). An op the header
//! lacks (an older release) is left out and reported, never dropped silently.
//!
//! On top of those base lists, `[autocast_ops]` is the backend's own policy: each op it names
//! leaves whichever base list had it and gets the policy it is listed under, one of ATen's casts
//! or `banned` (the op raises under autocast, as CUDA's `binary_cross_entropy` does).

use serde::Serialize;

use crate::config::Named;
use crate::ir::{Model, Op};

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

/// A policy `[autocast_ops]` gives an op: one of ATen's casts, or banned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpPolicy {
    Cast(CastPolicy),
    /// Under autocast the op raises a RuntimeError instead of running, as CUDA's autocast does
    /// for `binary_cross_entropy`, pointing to the variant that is safe in lower precision.
    Banned,
}

impl OpPolicy {
    /// The key of `[autocast_ops]` that lists the policy's ops.
    pub fn as_str(self) -> &'static str {
        match self {
            OpPolicy::Cast(policy) => policy.cpp(),
            OpPolicy::Banned => "banned",
        }
    }
}

/// An op of `[autocast_ops]`: its key as written, with its position, and the policy it is listed
/// under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnOp {
    pub op: Named,
    pub policy: OpPolicy,
}

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

/// A banned op: registered for AutocastPrivateUse1 with a function that raises. ATen keeps its
/// own banned function (`binary_cross_entropy_banned`) to itself — `static` in autocast_mode.cpp,
/// declared in no header — so each banned op gets one in the generated unit, with the op's C++
/// signature from the header: the dispatcher's, as every registration wrapper's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ban {
    /// `name.overload`, as registered.
    pub op: String,
    /// `aten::name.overload`, as the generic message names the op.
    pub qualified: String,
    /// The schema, for the function's comment.
    pub schema: String,
    /// The header's C++ return type and parameter types.
    pub return_type: String,
    pub param_types: Vec<String>,
    /// The function's name (`binary_cross_entropy_banned`, as ATen's).
    pub function: String,
}

impl Ban {
    fn of(op: &Op) -> Ban {
        Ban {
            op: op.key.clone(),
            qualified: op.qualified(),
            schema: op.schema_text.clone(),
            return_type: op.cpp.return_type.spelling.clone(),
            param_types: op.cpp.params.iter().map(|p| p.ty.spelling.clone()).collect(),
            function: crate::rust_name::banned_name(&op.rust_name),
        }
    }

    /// What the op raises under `torch.autocast(device_type=device)`: ATen's own words where ATen
    /// bans the op for CUDA (scripts and tests match on them), else a message in their style.
    pub fn message(&self, device: &str) -> String {
        match ATEN_BANNED.iter().find(|(op, _)| *op == self.op) {
            Some((_, message)) => (*message).to_owned(),
            None => format!(
                "{} is unsafe to autocast on {device}.\n\
                 The backend bans it inside torch.autocast(device_type=\"{device}\") (regen.toml's [autocast_ops] \
                 banned).\n\
                 Call it outside the autocast region, or within torch.autocast(device_type=\"{device}\", \
                 enabled=False).",
                self.qualified
            ),
        }
    }
}

/// The ops ATen's autocast bans (for CUDA), with the message of its banned function, word for word
/// (`binary_cross_entropy_banned` in aten/src/ATen/autocast_mode.cpp).
pub const ATEN_BANNED: &[(&str, &str)] = &[(
    "binary_cross_entropy",
    "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n\
     Many models use a sigmoid layer right before the binary cross entropy layer.\n\
     In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n\
     or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n\
     safe to autocast.",
)];

/// What a config's autocast registers, and which listed ops the header lacks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AutocastPlan {
    pub casts: Vec<Cast>,
    /// `[autocast_ops]`'s banned ops, in the config's order.
    pub banned: Vec<Ban>,
    /// Listed ops absent from the header (an older release): not registered.
    pub missing: Vec<&'static str>,
}

/// The registrations a config's `autocast` and `[autocast_ops]` (`own`) ask for over `model`
/// (none without `autocast`): the base lists less the ops `own` names, then `own`'s casts, in the
/// config's order. An op of `own` the header lacks is the config's error ([`Config::select`]),
/// registered by nothing here.
///
/// [`Config::select`]: crate::config::Config::select
pub fn plan(model: &Model, autocast: Option<Autocast>, own: &[OwnOp]) -> AutocastPlan {
    let mut plan = AutocastPlan::default();
    let Some(autocast) = autocast else { return plan };
    let moved = |key: &str| own.iter().any(|o| o.op.name == key);
    for list in autocast.lists() {
        for &key in list.ops.iter().filter(|key| !moved(key)) {
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
    for o in own {
        let Some(op) = model.find(&o.op.name) else { continue };
        match o.policy {
            OpPolicy::Cast(policy) => plan.casts.push(Cast {
                op: op.key.clone(),
                name: op.name().to_owned(),
                overload: op.overload().to_owned(),
                policy,
            }),
            OpPolicy::Banned => plan.banned.push(Ban::of(op)),
        }
    }
    plan
}

#[cfg(test)]
pub(crate) mod tests {
    use super::CastPolicy::{Fp32, LowerPrecisionFp, Promote};
    use super::*;
    use crate::config::parse_config;

    /// A header of `keys`, each an op of one tensor (emit_autocast's tests use it too).
    pub(crate) fn model_of(keys: &[&str]) -> Model {
        let header: String = keys
            .iter()
            .map(|k| {
                let (name, overload) = k.split_once('.').unwrap_or((k, ""));
                let dotted = if overload.is_empty() { String::new() } else { format!(".{overload}") };
                format!(
                    "at::Tensor {name}(const at::Tensor & self); // {{\"schema\": \"aten::{name}{dotted}(Tensor self) -> Tensor\", \"dispatch\": \"True\", \"default\": \"False\"}}\n"
                )
            })
            .collect();
        crate::load_header(header.as_bytes()).expect("a test header").model
    }

    /// The first error of `config`, rendered against regen.toml.
    fn error(config: &str) -> String {
        parse_config(config).expect_err("the config is rejected")[0].render("regen.toml")
    }

    const OWN: &str = "autocast = \"cpu\"\n\
        [autocast_ops]\n\
        banned = [\"binary_cross_entropy\"]\n\
        fp32 = [\"asin\", \"mm\"]\n\
        promote = [\"add.Tensor\"]\n";

    #[test]
    fn own_ops_come_in_the_configs_order_with_their_policies() {
        let config = parse_config(OWN).unwrap();
        let got: Vec<(&str, &str)> =
            config.autocast_ops.iter().map(|o| (o.op.name.as_str(), o.policy.as_str())).collect();
        assert_eq!(
            got,
            [("binary_cross_entropy", "banned"), ("asin", "fp32"), ("mm", "fp32"), ("add.Tensor", "promote")]
        );
        // Positions, for the errors select reports against the header: `asin` is on line 4.
        let asin = &config.autocast_ops[1].op.span;
        assert_eq!(&OWN[asin.clone()], "\"asin\"");
        assert!(parse_config("").unwrap().autocast_ops.is_empty());
        let lower = parse_config("autocast = \"cpu\"\n[autocast_ops]\nlower_precision_fp = [\"dot\"]\n").unwrap();
        assert_eq!(lower.autocast_ops[0].policy, OpPolicy::Cast(LowerPrecisionFp));
    }

    #[test]
    fn own_ops_need_autocast_and_one_policy_each() {
        let rendered = error("device = \"sim\"\n\n[autocast_ops]\nfp32 = [\"asin\"]\n");
        assert!(
            rendered.starts_with(
                "regen.toml:3:1: error: `[autocast_ops]` changes the policies of `autocast`'s base lists: set \
                 `autocast = \"cpu\"` too"
            ),
            "{rendered}"
        );
        // A misspelt `autocast` is its own error, not also this one.
        let errors = parse_config("autocast = \"cuda\"\n[autocast_ops]\nfp32 = [\"asin\"]\n").unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        let rendered = error("autocast = \"cpu\"\n[autocast_ops]\nfp32 = [\"asin\"]\nbanned = [\"mm\", \"asin\"]\n");
        assert!(
            rendered.starts_with(
                "regen.toml:4:17: error: `asin` is already in `[autocast_ops]`'s `fp32`: an op has one autocast policy"
            ),
            "{rendered}"
        );
        let rendered = error("autocast = \"cpu\"\n[autocast_ops]\nfp32 = [\"asin\", \"asin\"]\n");
        assert!(rendered.starts_with("regen.toml:3:17: error: `asin` is already in"), "{rendered}");
    }

    #[test]
    fn unknown_policies_and_ops_are_errors_at_their_place() {
        let rendered = error("autocast = \"cpu\"\n[autocast_ops]\nfp16 = [\"asin\"]\n");
        assert!(
            rendered.starts_with(
                "regen.toml:3:1: error: unknown field `fp16`, expected one of `lower_precision_fp`, `fp32`, \
                 `promote`, `banned`"
            ),
            "{rendered}"
        );
        let rendered = error("autocast = \"cpu\"\n[autocast_ops]\nbanned = \"mm\"\n");
        assert!(rendered.starts_with("regen.toml:3:10: error: invalid type: string \"mm\", expected a sequence"));
        // Names are checked against the header, as `implement`'s are, with suggestions.
        let config = parse_config("autocast = \"cpu\"\n[autocast_ops]\nfp32 = [\"asin\", \"asinn\"]\n").unwrap();
        let errors = config.select(&model_of(&["asin", "mm"])).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        let rendered = errors[0].render("regen.toml");
        assert!(
            rendered.starts_with("regen.toml:3:17: error: no op `asinn` in this header; did you mean asin?"),
            "{rendered}"
        );
    }

    #[test]
    fn an_own_op_leaves_its_base_list() {
        let model = model_of(&["mm", "mse_loss", "binary_cross_entropy", "cat", "asin", "add.Tensor"]);
        let config = parse_config(OWN).unwrap();
        let plan = plan(&model, config.autocast, &config.autocast_ops);
        let got: Vec<(&str, CastPolicy)> = plan.casts.iter().map(|c| (c.op.as_str(), c.policy)).collect();
        // The base lists less mm (lower_precision_fp there) and binary_cross_entropy (fp32 there),
        // then the config's own casts in its order: asin is on no base list.
        assert_eq!(got, [("mse_loss", Fp32), ("cat", Promote), ("asin", Fp32), ("mm", Fp32), ("add.Tensor", Promote)]);
        let add = plan.casts.last().unwrap();
        assert_eq!((add.name.as_str(), add.overload.as_str()), ("add", "Tensor"));
        let banned: Vec<&str> = plan.banned.iter().map(|b| b.op.as_str()).collect();
        assert_eq!(banned, ["binary_cross_entropy"]);
        // Missing: the base lists' ops but the four the header has, moved or not.
        assert_eq!(plan.missing.len(), 126 - 4);
        assert!(!plan.missing.contains(&"binary_cross_entropy") && !plan.missing.contains(&"mm"));
        // Without `autocast` there is nothing to change (and parse_config refuses the table).
        assert_eq!(super::plan(&model, None, &config.autocast_ops), AutocastPlan::default());
    }

    #[test]
    fn a_banned_op_has_its_headers_signature_and_atens_words_where_aten_has_some() {
        let path = format!("{}/../../fixtures/torch-2.15.0/RegistrationDeclarations.h", env!("CARGO_MANIFEST_DIR"));
        let model = crate::load_header(&std::fs::read(path).unwrap()).unwrap().model;
        let config = parse_config(
            "autocast = \"cpu\"\n[autocast_ops]\nbanned = [\"binary_cross_entropy\", \"_foreach_exp_\"]\n",
        )
        .unwrap();
        let plan = plan(&model, config.autocast, &config.autocast_ops);
        let [bce, foreach] = &plan.banned[..] else { panic!("{:?}", plan.banned) };
        assert_eq!(bce.function, "binary_cross_entropy_banned");
        assert_eq!(bce.return_type, "at::Tensor");
        assert_eq!(
            bce.param_types,
            ["const at::Tensor &", "const at::Tensor &", "const ::std::optional<at::Tensor> &", "int64_t"]
        );
        assert!(bce.message("sim").starts_with(
            "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\nMany models"
        ));
        assert!(
            bce.message("sim").ends_with("binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.")
        );
        // A leading `_` stays clear of C++'s reserved `__`; a void op keeps its void.
        assert_eq!((foreach.function.as_str(), foreach.return_type.as_str()), ("_foreach_exp_inplace_banned", "void"));
        assert!(
            foreach.message("sim").starts_with("aten::_foreach_exp_ is unsafe to autocast on sim.\n"),
            "{}",
            foreach.message("sim")
        );
    }
}
