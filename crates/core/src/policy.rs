//! Policy as data: the op-family table and the ops CPU has no kernel for, each entry with its reason.
//!
//! Families tag backend-specific ops that a backend keeping tensors in plain host memory will
//! usually exclude (cuDNN, sparse layouts, quantized tensors, ...). Tagging never drops an op;
//! the backend config decides what to do with a family.

/// How a rule recognises an op name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameMatch {
    /// One of the `_`-separated words of the name equals this (`_sparse_sum` has word `sparse`).
    Word(&'static str),
    /// The whole name equals this.
    Exact(&'static str),
    /// The name starts with this.
    Prefix(&'static str),
}

/// A backend-specific family of ops. Spelled in regen.toml's `exclude_families`, `ops.json` and
/// `selection.json` by [`Family::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    Cudnn,
    Miopen,
    Mkldnn,
    Mps,
    Sparse,
    Quantized,
    Nested,
    Attention,
    Cuda,
    Test,
}

impl Family {
    /// Every family, in the order error messages list them.
    pub const ALL: [Family; 10] = [
        Family::Cudnn,
        Family::Miopen,
        Family::Mkldnn,
        Family::Mps,
        Family::Sparse,
        Family::Quantized,
        Family::Nested,
        Family::Attention,
        Family::Cuda,
        Family::Test,
    ];

    /// The family's name in regen.toml and the JSON outputs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Family::Cudnn => "cudnn",
            Family::Miopen => "miopen",
            Family::Mkldnn => "mkldnn",
            Family::Mps => "mps",
            Family::Sparse => "sparse",
            Family::Quantized => "quantized",
            Family::Nested => "nested",
            Family::Attention => "attention",
            Family::Cuda => "cuda",
            Family::Test => "test",
        }
    }

    /// Why a host-memory backend usually excludes the family.
    pub const fn reason(self) -> &'static str {
        match self {
            Family::Cudnn => "NVIDIA cuDNN kernels: only the CUDA backend provides them",
            Family::Miopen => "AMD MIOpen kernels: only the ROCm backend provides them",
            Family::Mkldnn => "oneDNN (mkldnn) opaque-layout tensors: CPU-only layout",
            Family::Mps => "Apple Metal (MPS) kernels",
            Family::Sparse => {
                "sparse layouts (COO/CSR/CSC/BSR/BSC, semi-structured): need a sparse tensor implementation"
            }
            Family::Quantized => "quantized tensors and low-bit packed matmuls: need quantizer support",
            Family::Nested => "nested (jagged) tensors: need the NestedTensor implementation",
            Family::Attention => {
                "fused attention kernels (flash, memory-efficient, Triton): the math path serves other devices"
            }
            Family::Cuda => "CUDA-only fused kernels (AMP scaling, fused RNN cells, float8 GEMMs, streams)",
            Family::Test => "PyTorch's own test ops",
        }
    }

    /// The family a config spells `name`, if any.
    pub fn from_name(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.as_str() == name)
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy)]
pub struct FamilyRule {
    pub family: Family,
    pub matches: NameMatch,
}

const fn rule(family: Family, matches: NameMatch) -> FamilyRule {
    FamilyRule { family, matches }
}

use std::sync::OnceLock;

use NameMatch::{Exact, Prefix, Word};
use rustc_hash::FxHashMap;

/// First matching rule wins, so more specific families come first.
pub const FAMILY_RULES: &[FamilyRule] = &[
    rule(Family::Cudnn, Word("cudnn")),
    rule(Family::Miopen, Word("miopen")),
    rule(Family::Mkldnn, Word("mkldnn")),
    rule(Family::Mps, Word("mps")),
    rule(Family::Sparse, Word("sparse")),
    rule(Family::Sparse, Word("coo")),
    rule(Family::Sparse, Word("csr")),
    rule(Family::Sparse, Word("csc")),
    rule(Family::Sparse, Word("bsr")),
    rule(Family::Sparse, Word("bsc")),
    rule(Family::Sparse, Word("cslt")),
    rule(Family::Sparse, Word("hspmm")),
    rule(Family::Sparse, Word("sspaddmm")),
    rule(Family::Sparse, Word("spdiags")),
    rule(Family::Sparse, Word("spsolve")),
    rule(Family::Sparse, Exact("_indices")),
    rule(Family::Sparse, Exact("_values")),
    rule(Family::Sparse, Exact("_nnz")),
    rule(Family::Sparse, Exact("_dimI")),
    rule(Family::Sparse, Exact("_dimV")),
    rule(Family::Sparse, Exact("_coalesce")),
    rule(Family::Sparse, Exact("_coalesced_")),
    rule(Family::Sparse, Exact("_to_dense")),
    rule(Family::Quantized, Word("quantized")),
    rule(Family::Quantized, Word("quantize")),
    rule(Family::Quantized, Word("dequantize")),
    rule(Family::Quantized, Word("quant")),
    rule(Family::Quantized, Word("qscheme")),
    rule(Family::Quantized, Word("int4pack")),
    rule(Family::Quantized, Word("int8pack")),
    rule(Family::Quantized, Prefix("q_")),
    rule(Family::Quantized, Exact("int_repr")),
    rule(Family::Quantized, Exact("_int_mm")),
    rule(Family::Quantized, Exact("_fused_moving_avg_obs_fq_helper")),
    rule(Family::Nested, Word("nested")),
    rule(Family::Nested, Word("jagged")),
    rule(Family::Nested, Exact("to_padded_tensor")),
    rule(Family::Attention, Word("flash")),
    rule(Family::Attention, Word("triton")),
    rule(Family::Attention, Prefix("_efficient_attention")),
    rule(Family::Attention, Prefix("_scaled_dot_product_efficient_attention")),
    rule(Family::Attention, Exact("_fused_sdp_choice")),
    rule(Family::Attention, Exact("_fill_mem_eff_dropout_mask_")),
    rule(Family::Attention, Exact("_native_multi_head_attention")),
    rule(Family::Attention, Exact("_transformer_encoder_layer_fwd")),
    rule(Family::Cuda, Word("amp")),
    rule(Family::Cuda, Word("thnn")),
    rule(Family::Cuda, Prefix("_scaled_mm")),
    rule(Family::Cuda, Prefix("_scaled_grouped_mm")),
    rule(Family::Cuda, Prefix("_scaled_addmm")),
    rule(Family::Cuda, Exact("_mixed_dtypes_linear")),
    rule(Family::Cuda, Exact("record_stream")),
    rule(Family::Test, Prefix("_test_")),
    rule(Family::Test, Exact("_foobar")),
];

/// Why an op stays out of every family although its name matches one.
#[derive(Debug, Clone, Copy)]
pub struct Untagged {
    pub name: &'static str,
    pub reason: &'static str,
}

const RNN_CELL: &str = "nn.LSTM/nn.GRU (ATen's LSTMCell/GRUCell in RNN.cpp) call the fused cell for CUDA, XPU and \
     PrivateUse1 tensors (a CUDA-only kernel)";
const GRAD_SCALER: &str = "torch.amp.GradScaler calls it for any device it scales on (torch/amp/grad_scaler.py)";
const FAST_PATH: &str = "the inference fast path of nn.TransformerEncoderLayer/nn.MultiheadAttention calls it for \
     `privateuse1` tensors too (`_supported_device_type` in torch/nn/modules/transformer.py)";

/// Op names that a family rule would tag but that ATen or torch.nn calls for a PrivateUse1 tensor
/// like any other op: tagging them would let a backend exclude an op its users reach. Found from
/// PyTorch's `is_privateuseone()` / non-CPU branches. Checked before `FAMILY_RULES`.
pub const ANY_DEVICE: &[Untagged] = &[
    Untagged { name: "_thnn_fused_lstm_cell", reason: RNN_CELL },
    Untagged { name: "_thnn_fused_lstm_cell_backward_impl", reason: RNN_CELL },
    Untagged { name: "_thnn_fused_lstm_cell_backward", reason: RNN_CELL },
    Untagged { name: "_thnn_fused_gru_cell", reason: RNN_CELL },
    Untagged { name: "_thnn_fused_gru_cell_backward", reason: RNN_CELL },
    Untagged { name: "_amp_foreach_non_finite_check_and_unscale_", reason: GRAD_SCALER },
    Untagged { name: "_amp_update_scale_", reason: GRAD_SCALER },
    Untagged { name: "_transformer_encoder_layer_fwd", reason: FAST_PATH },
    Untagged { name: "_native_multi_head_attention", reason: FAST_PATH },
    Untagged { name: "_transform_bias_rescale_qkv", reason: FAST_PATH },
];

/// An op (by key) that CPU has no working kernel for, so `fallback = "cpu"` cannot serve it.
#[derive(Debug, Clone, Copy)]
pub struct CpuLess {
    pub key: &'static str,
    pub reason: &'static str,
}

const CONV: &str = "PyTorch routes every PrivateUse1 convolution here; its only kernel (CompositeExplicitAutograd) \
     raises NotImplementedError";
const COPY: &str = "the copy between the device and other devices: only the backend can do it";
const CUDA_DEPTHWISE: &str = "a CUDA-only kernel (convolution picks it for depthwise convolutions on CUDA)";
const OUT_DTYPE_GEMM: &str = "a CUDA-only GEMM with an output dtype (torch.mm(a, b, out_dtype=...))";
const CUDA_DROPOUT: &str = "CUDA's fused dropout of older releases, reached only by a direct call";
const FUSED_RMS: &str = "the CUDA/MPS fused RMS-norm backward, reached only by a direct call";
const SYNC_BN: &str = "nn.SyncBatchNorm's statistics kernels: CUDA only";
const NESTED_OR_MKLDNN: &str = "kernels for nested or oneDNN tensors only (dense tensors use the composite path)";
const MPS_ONLY: &str = "an MPS-only kernel (dense tensors use max_pool2d_with_indices_backward)";
const SPARSE_ONLY: &str = "a kernel for sparse tensors only";
const RESIZE_OUTPUT: &str = "resizes an out= tensor on devices other than CPU; CPU has no kernel";

/// Ops no CPU kernel serves: required ones (from the dispatcher of the 2.15 wheel, outside the
/// families a host-memory backend excludes; `test_device.py` checks the list against the installed
/// torch) and ones whose default kernel only raises. With `fallback = "cpu"` each must be
/// implemented or excluded.
pub const NO_CPU_KERNEL: &[CpuLess] = &[
    CpuLess { key: "convolution_overrideable", reason: CONV },
    CpuLess { key: "convolution_backward_overrideable", reason: CONV },
    CpuLess { key: "_thnn_fused_lstm_cell", reason: RNN_CELL },
    CpuLess { key: "_thnn_fused_lstm_cell_backward_impl", reason: RNN_CELL },
    CpuLess { key: "_thnn_fused_gru_cell", reason: RNN_CELL },
    CpuLess { key: "_thnn_fused_gru_cell_backward", reason: RNN_CELL },
    CpuLess { key: "_copy_from", reason: COPY },
    CpuLess { key: "_copy_from_and_resize", reason: COPY },
    CpuLess { key: "_conv_depthwise2d", reason: CUDA_DEPTHWISE },
    CpuLess { key: "_conv_depthwise2d.out", reason: CUDA_DEPTHWISE },
    CpuLess { key: "conv_depthwise3d", reason: CUDA_DEPTHWISE },
    CpuLess { key: "mm.dtype", reason: OUT_DTYPE_GEMM },
    CpuLess { key: "mm.dtype_out", reason: OUT_DTYPE_GEMM },
    CpuLess { key: "bmm.dtype", reason: OUT_DTYPE_GEMM },
    CpuLess { key: "bmm.dtype_out", reason: OUT_DTYPE_GEMM },
    CpuLess { key: "addmm.dtype", reason: OUT_DTYPE_GEMM },
    CpuLess { key: "addmm.dtype_out", reason: OUT_DTYPE_GEMM },
    CpuLess { key: "baddbmm.dtype", reason: OUT_DTYPE_GEMM },
    CpuLess { key: "baddbmm.dtype_out", reason: OUT_DTYPE_GEMM },
    CpuLess { key: "_fused_dropout", reason: CUDA_DROPOUT },
    CpuLess { key: "_masked_scale", reason: CUDA_DROPOUT },
    CpuLess { key: "_fused_rms_norm_backward", reason: FUSED_RMS },
    CpuLess { key: "batch_norm_stats", reason: SYNC_BN },
    CpuLess { key: "batch_norm_elemt", reason: SYNC_BN },
    CpuLess { key: "batch_norm_elemt.out", reason: SYNC_BN },
    CpuLess { key: "batch_norm_gather_stats", reason: SYNC_BN },
    CpuLess { key: "batch_norm_gather_stats_with_counts", reason: SYNC_BN },
    CpuLess { key: "batch_norm_backward_reduce", reason: SYNC_BN },
    CpuLess { key: "batch_norm_backward_elemt", reason: SYNC_BN },
    CpuLess { key: "linear_backward", reason: NESTED_OR_MKLDNN },
    CpuLess { key: "matmul_backward", reason: NESTED_OR_MKLDNN },
    CpuLess { key: "max_pool2d_backward", reason: MPS_ONLY },
    CpuLess { key: "native_norm", reason: SPARSE_ONLY },
    CpuLess { key: "native_norm.ScalarOpt_dim_dtype", reason: SPARSE_ONLY },
    CpuLess { key: "_resize_output_", reason: RESIZE_OUTPUT },
];

/// Why CPU cannot serve the op with this key, if it cannot.
pub fn cpu_less(key: &str) -> Option<&'static CpuLess> {
    NO_CPU_KERNEL.iter().find(|c| c.key == key)
}

/// The family of an op name (overloads share their op's family), if any.
pub fn family_of(name: &str) -> Option<&'static FamilyRule> {
    if ANY_DEVICE.iter().any(|u| u.name == name) {
        return None;
    }
    // Rules indexed by the word or exact name they match; prefix rules are few and scanned.
    static INDEX: OnceLock<FxHashMap<(bool, &'static str), usize>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut map = FxHashMap::default();
        for (k, r) in FAMILY_RULES.iter().enumerate().rev() {
            match r.matches {
                Word(w) => map.insert((true, w), k),
                Exact(e) => map.insert((false, e), k),
                Prefix(_) => None,
            };
        }
        map
    });
    let words = name.split('_').filter_map(|w| index.get(&(true, w)));
    let exact = index.get(&(false, name));
    let prefix = FAMILY_RULES.iter().position(|r| matches!(r.matches, Prefix(p) if name.starts_with(p)));
    let first = words.chain(exact).copied().chain(prefix).min()?;
    Some(&FAMILY_RULES[first])
}

// Every family has a rule: a family no op can be tagged with would be dead config.
const _: () = {
    let mut k = 0;
    while k < Family::ALL.len() {
        let mut ruled = false;
        let mut r = 0;
        while r < FAMILY_RULES.len() {
            ruled |= FAMILY_RULES[r].family as usize == Family::ALL[k] as usize;
            r += 1;
        }
        assert!(ruled, "every Family has a rule in FAMILY_RULES");
        k += 1;
    }
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_by_name() {
        let fam = |n: &str| family_of(n).map(|r| r.family.as_str());
        assert_eq!(fam("_cudnn_rnn"), Some("cudnn"));
        assert_eq!(fam("_cudnn_attention_forward"), Some("cudnn"));
        assert_eq!(fam("_sparse_csr_sum"), Some("sparse"));
        assert_eq!(fam("q_per_channel_scales"), Some("quantized"));
        assert_eq!(fam("_nested_tensor_size"), Some("nested"));
        assert_eq!(fam("add"), None);
        assert_eq!(fam("empty_strided"), None);
        // A word match is not a substring match.
        assert_eq!(fam("lamps"), None);
        // ATen calls these for PrivateUse1 tensors: no family a backend could exclude.
        assert_eq!(fam("_thnn_fused_lstm_cell"), None);
        assert_eq!(fam("_amp_update_scale_"), None);
        assert_eq!(fam("_transformer_encoder_layer_fwd"), None);
        // Their siblings keep theirs.
        assert_eq!(fam("_amp_update_scale"), Some("cuda"));
        assert_eq!(fam("_native_multi_head_attention"), None);
        assert_eq!(fam("_flash_attention_forward"), Some("attention"));
    }
}
