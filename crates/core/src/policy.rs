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

#[derive(Debug, Clone, Copy)]
pub struct FamilyRule {
    pub family: &'static str,
    pub matches: NameMatch,
    pub reason: &'static str,
}

const fn rule(family: &'static str, matches: NameMatch, reason: &'static str) -> FamilyRule {
    FamilyRule { family, matches, reason }
}

use std::sync::OnceLock;

use NameMatch::{Exact, Prefix, Word};
use rustc_hash::FxHashMap;

const CUDNN: &str = "NVIDIA cuDNN kernels: only the CUDA backend provides them";
const MIOPEN: &str = "AMD MIOpen kernels: only the ROCm backend provides them";
const MKLDNN: &str = "oneDNN (mkldnn) opaque-layout tensors: CPU-only layout";
const MPS: &str = "Apple Metal (MPS) kernels";
const SPARSE: &str = "sparse layouts (COO/CSR/CSC/BSR/BSC, semi-structured): need a sparse tensor implementation";
const QUANTIZED: &str = "quantized tensors and low-bit packed matmuls: need quantizer support";
const NESTED: &str = "nested (jagged) tensors: need the NestedTensor implementation";
const ATTENTION: &str = "fused attention kernels (flash, memory-efficient, Triton): the math path serves other devices";
const CUDA: &str = "CUDA-only fused kernels (AMP scaling, fused RNN cells, float8 GEMMs, streams)";
const TEST: &str = "PyTorch's own test ops";

/// First matching rule wins, so more specific families come first.
pub const FAMILY_RULES: &[FamilyRule] = &[
    rule("cudnn", Word("cudnn"), CUDNN),
    rule("miopen", Word("miopen"), MIOPEN),
    rule("mkldnn", Word("mkldnn"), MKLDNN),
    rule("mps", Word("mps"), MPS),
    rule("sparse", Word("sparse"), SPARSE),
    rule("sparse", Word("coo"), SPARSE),
    rule("sparse", Word("csr"), SPARSE),
    rule("sparse", Word("csc"), SPARSE),
    rule("sparse", Word("bsr"), SPARSE),
    rule("sparse", Word("bsc"), SPARSE),
    rule("sparse", Word("cslt"), SPARSE),
    rule("sparse", Word("hspmm"), SPARSE),
    rule("sparse", Word("sspaddmm"), SPARSE),
    rule("sparse", Word("spdiags"), SPARSE),
    rule("sparse", Word("spsolve"), SPARSE),
    rule("sparse", Exact("_indices"), SPARSE),
    rule("sparse", Exact("_values"), SPARSE),
    rule("sparse", Exact("_nnz"), SPARSE),
    rule("sparse", Exact("_dimI"), SPARSE),
    rule("sparse", Exact("_dimV"), SPARSE),
    rule("sparse", Exact("_coalesce"), SPARSE),
    rule("sparse", Exact("_coalesced_"), SPARSE),
    rule("sparse", Exact("_to_dense"), SPARSE),
    rule("quantized", Word("quantized"), QUANTIZED),
    rule("quantized", Word("quantize"), QUANTIZED),
    rule("quantized", Word("dequantize"), QUANTIZED),
    rule("quantized", Word("quant"), QUANTIZED),
    rule("quantized", Word("qscheme"), QUANTIZED),
    rule("quantized", Word("int4pack"), QUANTIZED),
    rule("quantized", Word("int8pack"), QUANTIZED),
    rule("quantized", Prefix("q_"), QUANTIZED),
    rule("quantized", Exact("int_repr"), QUANTIZED),
    rule("quantized", Exact("_int_mm"), QUANTIZED),
    rule("quantized", Exact("_fused_moving_avg_obs_fq_helper"), QUANTIZED),
    rule("nested", Word("nested"), NESTED),
    rule("nested", Word("jagged"), NESTED),
    rule("nested", Exact("to_padded_tensor"), NESTED),
    rule("attention", Word("flash"), ATTENTION),
    rule("attention", Word("triton"), ATTENTION),
    rule("attention", Prefix("_efficient_attention"), ATTENTION),
    rule("attention", Prefix("_scaled_dot_product_efficient_attention"), ATTENTION),
    rule("attention", Exact("_fused_sdp_choice"), ATTENTION),
    rule("attention", Exact("_fill_mem_eff_dropout_mask_"), ATTENTION),
    rule("attention", Exact("_native_multi_head_attention"), ATTENTION),
    rule("attention", Exact("_transformer_encoder_layer_fwd"), ATTENTION),
    rule("cuda", Word("amp"), CUDA),
    rule("cuda", Word("thnn"), CUDA),
    rule("cuda", Prefix("_scaled_mm"), CUDA),
    rule("cuda", Prefix("_scaled_grouped_mm"), CUDA),
    rule("cuda", Prefix("_scaled_addmm"), CUDA),
    rule("cuda", Exact("_mixed_dtypes_linear"), CUDA),
    rule("cuda", Exact("record_stream"), CUDA),
    rule("test", Prefix("_test_"), TEST),
    rule("test", Exact("_foobar"), TEST),
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

/// Every family name, in table order, without repeats.
pub fn families() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for r in FAMILY_RULES {
        if !out.contains(&r.family) {
            out.push(r.family);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_by_name() {
        let fam = |n: &str| family_of(n).map(|r| r.family);
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
