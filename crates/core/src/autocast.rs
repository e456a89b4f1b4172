//! Autocast for the device as data: which ops `torch.autocast(device_type=DEVICE)` casts, and how.
//!
//! `regen.toml`'s `autocast = "cpu"` registers, for the AutocastPrivateUse1 key, exactly the ops
//! CPU autocast casts, each with CPU's cast policy, so mixed precision on the device gives the
//! dtypes it gives on CPU. The lists are CPU's `TORCH_LIBRARY_IMPL(aten, AutocastCPU, m)` of the
//! pinned release (aten/src/ATen/autocast_mode.cpp; in a running torch,
//! `torch._C._dispatch_get_registrations_for_dispatch_key("AutocastCPU")`). An op the header
//! lacks (an older release) is left out and reported, never dropped silently.

use serde::Serialize;

use crate::ir::Model;

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

/// The registrations a config's `autocast` asks for over `model` (none without it).
pub fn plan(model: &Model, autocast: Option<Autocast>) -> AutocastPlan {
    let mut plan = AutocastPlan::default();
    let Some(autocast) = autocast else { return plan };
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
