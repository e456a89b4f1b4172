"""Device-generic tests of the "regen" device driven by PyTorch's OpInfo database: a CI slice of
the full sweep (crates/device/python/opinfo/sweep.py), with the same comparison.

Every op with a native Rust kernel (regen.toml `implement`) plus common ops (reductions, views,
softmax, matmul, indexing, ...) runs each of its OpInfo samples on CPU and on the device, in
float32 and float64, plus int64 and bool where the op supports them, and the results must agree.

Every kernel family (FAMILIES) also runs in bfloat16, float16 and complex64 where its OpInfos
support them.

Every (op, dtype) entry listed in opinfo_known_failures.txt runs too: it is expected to fail and
is marked xfail with the listed reason; but an entry listed there that now PASSES fails the test,
so that the list only shrinks: remove its line when a fix lands. Entries listed as `crash` run in
a subprocess so that they cannot take pytest down. `cargo xtask opinfo` runs the full sweep, with
the list strict both ways (an unlisted failure fails it too).
"""

import json
import os
import subprocess
import sys
import tempfile

import pytest
import torch

import regen_device
from devtest import PINNED, older_cpu_has_no_kernel, sweep

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

HERE = os.path.dirname(os.path.abspath(__file__))
SWEEP_PATH = os.path.join(HERE, "..", "opinfo", "sweep.py")
KNOWN_FAILURES_PATH = os.path.join(HERE, "opinfo_known_failures.txt")


# Ops with native Rust kernels (regen.toml `implement`), as OpInfo names them.
NATIVE_SLICE = [
    "add", "sub", "mul", "div.no_rounding_mode", "div.trunc_rounding", "neg", "abs", "exp", "log",
    "sqrt", "sigmoid", "tanh", "nn.functional.relu", "sum", "mm", "addmm", "addmm.decomposed",
    "view", "reshape", "as_strided", "fill", "zero_",
    # Reductions and scans (kernels/ops/reduce.rs, kernels/ops/scan.rs).
    "nansum", "amin", "aminmax", "max.reduction_no_dim", "min.reduction_with_dim",
    "min.reduction_no_dim", "argmin", "std", "var_mean", "std_mean", "norm", "linalg.vector_norm",
    "any", "all", "count_nonzero", "logsumexp", "cumprod", "cummax", "cummin", "logcumsumexp",
    # Indexing, scatter/gather and selection (crates/kernels/src/ops/index.rs).
    "scatter", "scatter_add", "scatter_reduce.sum", "scatter_reduce.prod", "scatter_reduce.mean",
    "scatter_reduce.amax", "scatter_reduce.amin", "index_put", "index_add", "index_copy", "index_fill",
    "index_reduce.prod", "index_reduce.mean", "index_reduce.amax", "index_reduce.amin", "masked_scatter",
    "masked_select", "take", "take_along_dim", "put", "nonzero", "nonzero_static", "searchsorted",
    "bucketize", "isin", "__getitem__",
    # Shape, factory and sort ops (kernels/ops/shape.rs, kernels/ops/sort.rs).
    "roll", "tril", "triu", "arange", "linspace", "logspace", "eye", "repeat_interleave", "narrow_copy",
    "sort", "argsort", "topk", "kthvalue", "median", "nanmedian", "mode",
    # Matrix products (kernels/ops/matmul.rs; bmm, mv, matmul and linear are in COMMON_SLICE).
    "addmv", "baddbmm", "addbmm", "dot", "vdot", "inner", "einsum", "tensordot",
    # Unique and histogram ops (kernels/ops/unique.rs).
    "unique", "unique_consecutive", "histc", "bincount",
    # Convolutions, im2col and col2im (kernels/ops/conv.rs).
    "nn.functional.conv1d", "nn.functional.conv2d", "nn.functional.conv3d",
    "nn.functional.conv_transpose1d", "nn.functional.conv_transpose2d",
    "nn.functional.conv_transpose3d", "nn.functional.unfold",
    # Softmax, layer norm, batch norm and group norm (kernels/ops/norm.rs; softmax and log_softmax are
    # in COMMON_SLICE).
    "softmax.with_dtype", "log_softmax.with_dtype", "_softmax_backward_data", "native_layer_norm",
    "nn.functional.layer_norm", "native_batch_norm", "_native_batch_norm_legit", "_batch_norm_with_update",
    "nn.functional.batch_norm", "native_group_norm", "nn.functional.group_norm",
    # Resampling (kernels/ops/resample.rs, kernels/ops/resample_aa.rs).
    "nn.functional.interpolate.bilinear", "nn.functional.interpolate.bicubic", "_upsample_bilinear2d_aa",
]
COMMON_SLICE = [
    "cumsum", "softmax", "log_softmax", "matmul", "bmm", "mv", "nn.functional.linear",
    "index_select", "gather", "masked_fill", "cat", "stack", "split", "where", "clamp", "pow",
    "eq", "gt", "nn.functional.gelu", "view_as", "flatten", "transpose", "permute",
    "squeeze", "unsqueeze", "expand", "t", "contiguous", "clone", "narrow", "select", "flip",
    "mean", "amax", "argmax", "max.reduction_with_dim", "prod", "var",
]
# Native elementwise kernels: the OpInfo and the kernel that must run for it.
NATIVE_ELEMENTWISE = {
    "add": "add.Tensor", "sub": "sub.Tensor", "mul": "mul.Tensor", "div.no_rounding_mode": "div.Tensor",
    "neg": "neg", "abs": "abs", "exp": "exp", "log": "log", "sqrt": "sqrt",
    "sigmoid": "sigmoid", "tanh": "tanh", "nn.functional.relu": "relu",
}
DTYPES = ["float32", "float64", "int64", "bool"]

# Every kernel family (a file under crates/kernels/src, keyed by its path there) with OpInfos
# of its own: these run in every dtype of the sweep they support, bfloat16, float16 and complex64
# included, so that CI sees each family's dtype dispatch, not only the slice's four dtypes.
FAMILIES = {
    "ops/binary.rs": ["add", "atan2", "remainder", "maximum", "bitwise_and", "hypot"],
    "ops/unary.rs": ["neg", "sin", "floor", "erf", "rsqrt", "sgn"],
    "math/vmath.rs": ["exp", "log", "tanh", "sigmoid", "sinh", "cosh", "asinh"],
    "ops/pointwise.rs": ["lerp", "addcmul", "addcdiv", "clamp", "where"],
    "math/special.rs": ["digamma", "erfinv", "polygamma.polygamma_n_0", "igamma", "special.bessel_j0"],
    "ops/copy.rs": ["view_as_real", "real", "conj_physical", "clone"],
    "ops/embedding.rs": ["nn.functional.embedding", "nn.functional.embedding_bag"],
    "ops/loss.rs": ["nn.functional.nll_loss", "nn.functional.cross_entropy"],
    "ops/pool.rs": ["nn.functional.max_pool2d", "nn.functional.max_pool3d", "nn.functional.avg_pool2d",
                    "nn.functional.adaptive_avg_pool2d", "nn.functional.adaptive_max_pool2d"],
    "ops/resample.rs": ["nn.functional.interpolate.bilinear", "nn.functional.interpolate.trilinear",
                        "nn.functional.interpolate.nearest", "nn.functional.pad.reflect",
                        "nn.functional.pad.replicate"],
    "ops/resample_aa.rs": ["_upsample_bilinear2d_aa"],
    "ops/conv.rs": ["nn.functional.conv2d", "nn.functional.conv_transpose2d"],
    "ops/index.rs": ["index_put", "scatter_reduce.sum", "gather"],
    "ops/matmul.rs": ["mm", "baddbmm"],
    "ops/norm.rs": ["softmax", "native_layer_norm", "native_batch_norm", "nn.functional.group_norm"],
    "ops/reduce.rs": ["sum", "var_mean", "amax"],
    "ops/scan.rs": ["cumsum", "logcumsumexp"],
    "ops/shape.rs": ["cat", "flip", "roll", "tril"],
    "ops/sort.rs": ["sort", "topk", "median"],
    "ops/unique.rs": ["unique", "histc"],
}
# The files under crates/kernels/src (keyed by their path there) without OpInfos of their
# own, each with where it is tested.
NOT_IN_OPINFO = {
    "lib.rs": "the crate root: the generated group traits, Reference, and the three folders (engine, math, ops)",
    "engine/mod.rs": "the engine (the vector tier, simd_fn!): every family above runs through it",
    "math/mod.rs": "declares the math libraries: the families above run them",
    "ops/mod.rs": "declares the families above",
    "engine/dispatch.rs": "the one dtype-to-loop dispatch of the elementwise families: ops/unary.rs, ops/binary.rs and "
                          "ops/pointwise.rs above run through it",
    "engine/dtype.rs": "the engine's dtype table: every family above runs through it",
    "engine/iter.rs": "the engine's TensorIterator: every family above runs through it",
    "engine/loops.rs": "the engine's inner loops: every elementwise family above runs through them",
    "engine/operands.rs": "the engine's TensorIterator build (promotion, conversion, outputs): every "
                          "elementwise family above runs through it",
    "ops/spatial.rs": "what pool.rs, resample.rs and resample_aa.rs share (elements, views, upsampling "
                         "geometry): their OpInfos above run it",
    "engine/scalar.rs": "the scalar math the op tables are written in: binary.rs, unary.rs and special.rs "
                        "run it",
    "math/stl.rs": "sort.rs's sorting algorithms: sort, topk and median run them",
    "ops/amp.rs": "GradScaler's kernels have no OpInfo: test_amp.py",
    "ops/attention.rs": "the sweep skips nn.functional.scaled_dot_product_attention (its samples draw dropout): test_attention.py",
    "ops/optim.rs": "the fused optimizer steps have no OpInfo: test_optim.py",
    "ops/random.rs": "random output (sweep.RANDOM_OPS): test_random.py",
    "ops/samplers.rs": "random output (sweep.RANDOM_OPS): test_samplers.py",
    # custom.rs is no longer here: the device's own ops (torch.ops.regen.*) are src/custom.rs, a
    # module of the device rather than of its kernels, and not in op_db: test_custom_ops.py.
    "ops/rnn.rs": "op_db has no LSTM or GRU cell: test_rnn.py",
}
KERNELS_DIR = os.path.join(HERE, "..", "..", "..", "kernels", "src")


OPS = {sweep.op_key(op): op for op in sweep.load_op_db()}
KNOWN = sweep.read_known_failures(KNOWN_FAILURES_PATH)


def cases():
    """The CI slice: NATIVE_SLICE and COMMON_SLICE in DTYPES, FAMILIES in every dtype of the sweep,
    and every entry of the known-failures list (so one that starts to pass is seen). An OpInfo the
    installed torch lacks is left out on another release than the pinned one."""
    wanted = [(key, dtype) for key in NATIVE_SLICE + COMMON_SLICE for dtype in DTYPES]
    wanted += [(key, dtype) for keys in FAMILIES.values() for key in keys for dtype in sweep.DTYPES]
    wanted += sorted(KNOWN)
    seen = set()
    for key, dtype in wanted:
        if (key, dtype) in seen or (key not in OPS and not PINNED):
            continue
        seen.add((key, dtype))
        if sweep.DTYPES[dtype] in OPS[key].supported_dtypes("cpu"):
            yield key, dtype


def run_in_subprocess(key, dtype):
    """The sweep's record of (op, dtype), run in a subprocess that may crash."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        cmd = [sys.executable, SWEEP_PATH, out, "--ops", key, "--dtypes", dtype, "--jobs", "1"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        with open(out) as f:
            (record,) = [r for r in json.load(f)["results"] if r["key"] == key]
    return record


@pytest.mark.parametrize("key,dtype", list(cases()), ids=lambda v: v)
def test_op_matches_cpu(key, dtype):
    known = KNOWN.get((key, dtype))
    if known and known[0] in ("crash", "timeout"):
        record = run_in_subprocess(key, dtype)
    else:
        record = sweep.check(OPS[key], dtype)
    assert record["status"] != "skip", record["error"]
    # Its value alone would pass through the CPU fallback: an op regen.toml implements must not
    # have been served there.
    left = sweep.left_the_device(record)
    assert not left, f"{key} {dtype}: the CPU fallback served {', '.join(left)}, which regen.toml implements"
    if known and known[0] == "varies":
        if record["status"] == "fail":
            pytest.xfail(f"varies: {known[1]}")
    elif known:
        if record["status"] == "pass" and not PINNED:
            return  # the list is the pinned release's: CPU of another release may agree with the device
        if record["status"] == "pass":
            pytest.fail(f"{key} {dtype} is listed in opinfo_known_failures.txt as {known[0]} but now passes: "
                        "remove its line")
        pytest.xfail(f"{known[0]}: {known[1]}")
    if record["status"] == "fail" and "where CPU raised" in record["error"]:
        match = older_cpu_has_no_kernel(record["error"])
        if match:
            # An older CPU without this kernel (2.1's oneDNN has no BFloat16 convolution on AVX2):
            # nothing to compare the device with.
            pytest.skip(f"CPU of torch {torch.__version__} has no kernel: {match[0]}")
    assert record["status"] == "pass", f"{record['failed']}/{record['samples']} samples: {record['error']}"


@pytest.mark.parametrize("key", NATIVE_ELEMENTWISE, ids=str)
def test_native_elementwise_ops_run_their_rust_kernel(key):
    # A fallback cannot pass as native: the op's Rust kernel must have run for its samples.
    native = NATIVE_ELEMENTWISE[key]
    before = regen_device.native_calls(native)
    record = sweep.check(OPS[key], "float32")
    assert record["status"] == "pass", record["error"]
    assert regen_device.native_calls(native) > before, f"{key}: {native} did not run natively"
    assert record["native_kernels"].get(native, 0) > 0
    assert not sweep.left_the_device(record), record["fallback_kernels"]


def test_known_failures_list_is_well_formed():
    for key, dtype in KNOWN:
        if key not in OPS and not PINNED:
            continue  # the list is the pinned release's; an older OpInfo database lacks newer entries
        assert key in OPS, f"opinfo_known_failures.txt: no OpInfo {key}"
        assert sweep.DTYPES[dtype] in OPS[key].supported_dtypes("cpu"), f"{key} does not support {dtype}"
        assert sweep.skip_reason(OPS[key]) is None, f"{key} is skipped by the sweep"
    assert torch.device("regen").type == "regen"


def test_every_kernel_family_is_in_the_slice():
    files = {
        os.path.relpath(os.path.join(folder, f), KERNELS_DIR).replace(os.sep, "/")
        for folder, _, names in os.walk(KERNELS_DIR)
        for f in names
        if f.endswith(".rs")
    }
    assert files - FAMILIES.keys() - NOT_IN_OPINFO.keys() == set(), "add the new kernel files to FAMILIES"
    assert (FAMILIES.keys() | NOT_IN_OPINFO.keys()) - files == set(), "remove the files that are gone"
    assert not FAMILIES.keys() & NOT_IN_OPINFO.keys()
    for family, keys in FAMILIES.items():
        for key in keys:
            assert key in OPS or not PINNED, f"{family}: no OpInfo {key}"
            assert key not in OPS or sweep.skip_reason(OPS[key]) is None, f"{family}: the sweep skips {key}"


def test_the_native_op_list_is_regen_tomls():
    # sweep.NATIVE_OPS (and the suite's native-op guard, devtest.NATIVE_OPS) reads regen.toml's
    # `implement` itself; regen's own reading of it is generated/selection.json. Were they to
    # disagree (a config shape the script misreads), every nativeness check would check nothing.
    selection = os.path.join(HERE, "..", "..", "generated", "selection.json")
    with open(selection) as f:
        implemented = json.load(f)["implemented"]
    assert len(implemented) > 500
    assert sorted(sweep.read_native_ops()) == sorted(implemented)
