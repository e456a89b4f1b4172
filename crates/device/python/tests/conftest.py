"""Release differences: the device's kernels follow CPU of the pinned release
(crates/kernels/torch-version); on an older torch the same test compares with a CPU that behaves
differently (a dtype it had no kernel for, an overload or a check it did not have yet, a changed
message, another random stream). Each such case is skipped on the releases where it was seen,
with its reason, so `cargo xtask e2e --torch X.Y.Z` reports what differs instead of failing.

A case that fails on an older release because CPU of that release has no kernel for its dtype or
op at all is skipped by pytest_runtest_makereport, with CPU's message.

A row is (test: `file::function`, or a prefix ending in "::" or "_"; predicate on the case's
parameters or None for every case; newest release where CPU differs; reason). Skips that are not
CPU's doing (a device gap, a test of the pinned release's generated files) are OTHER_SKIPS."""

import os

import pytest
import torch

from devtest import ATEN_CAPABILITY, ATEN_VECTORISED, NATIVE_OPS, PINNED, RELEASE, older_cpu_has_no_kernel, sweep
REDUCED = (torch.float16, torch.bfloat16)


def dtype_in(*dtypes):
    return lambda p: p.get("dtype") in dtypes


OPINFO_2_4 = {("nn.functional.max_pool2d", "int64"), ("native_batch_norm", "bfloat16")}

RELEASE_DIFFERENCES = [
    # Dtypes and overloads CPU gained later.
    ("test_loss.py::test_elementwise_losses", dtype_in(*REDUCED), (2, 4),
     "CPU has no Half/BFloat16 mse_loss and no Half smooth_l1 backward"),
    ("test_loss.py::test_elementwise_losses", lambda p: p.get("dtype") == torch.float16 and p.get("name") == "smooth_l1",
     (2, 8), "CPU has no Half smooth_l1 backward"),
    ("test_pool.py::test_max_unpool", dtype_in(*REDUCED), (2, 4), "CPU has no Half/BFloat16 max_unpool"),
    ("test_resample.py::test_pad", dtype_in(torch.float16), (2, 4), "CPU has no Half reflection/replication pad"),
    ("test_resample.py::test_grid_sample_3d_bicubic", None, (2, 12), "CPU grid_sample has no 5-d bicubic"),
    ("test_resample.py::test_grid_sample_3d_bicubic_nonfinite_and_mask", None, (2, 12),
     "CPU grid_sample has no 5-d bicubic"),
    ("test_resample.py::test_grid_sample_reduced", None, (2, 4), "CPU has no Half/BFloat16 grid_sample"),
    ("test_reduce.py::test_op_matches_cpu", lambda p: p["dtype"] == torch.bool and p["op"] in ("argmax", "argmin"),
     (2, 8), "CPU has no Bool argmax/argmin"),
    ("test_reduce.py::test_op_matches_cpu", lambda p: p["dtype"] == torch.complex64 and p["op"] == "aminmax",
     (2, 12), "CPU raised for a complex aminmax of a 0-d or empty input"),
    ("test_conv.py::test_unsupported_dtypes_raise_like_cpu", None, (2, 4),
     "CPU raises NotImplementedError's predecessor RuntimeError for an unsupported dtype"),
    ("test_conv.py::test_unfold_bool", None, (2, 4), "CPU has no Bool im2col"),
    ("test_linalg.py::test_out_dtype_", None, (2, 7), "mm/bmm/addmm/baddbmm(out_dtype=) are torch 2.8's"),
    ("test_linalg.py::test_out_dtype_errors_match_the_plain_ops", lambda p: p.get("_id") == "mm 1-D", (2, 12),
     "CPU's mm message for a 1-d operand changed"),
    ("test_linalg.py::test_out_dtype_rule_errors_match_the_meta_functions", None, (2, 12),
     "CPU's out_dtype checks raised other errors (a TypeError from the meta function)"),
    ("test_linalg.py::test_int_mm", lambda p: p.get("self_dtype") == torch.uint8, (2, 10), "CPU _int_mm takes int8 only"),
    ("test_device.py::test_pointwise_table_matches_cpu", lambda p: "uint8-clamp" in p["_id"], (2, 12),
     "CPU's uint8 clamp converts its bounds differently"),
    ("test_norm.py::test_group_norm", lambda p: "channels_last" in p["_id"], (2, 4),
     "CPU's group norm kept a channels-last input's layout"),
    ("test_norm.py::test_group_norm", lambda p: "transposed" in p["_id"], (2, 12),
     "CPU's group norm refused a non-contiguous input (\"Expected X.is_contiguous(memory_format)\")"),
    ("test_opinfo.py::test_op_matches_cpu", lambda p: (p["key"], p["dtype"]) in OPINFO_2_4, (2, 4),
     "CPU computed these OpInfo samples otherwise (integer max-pool's indices, one bfloat16 rounding of "
     "batch norm)"),
    ("test_opinfo.py::test_op_matches_cpu", lambda p: (p["key"], p["dtype"]) == ("remainder", "bfloat16"), (2, 8),
     "CPU's bfloat16 remainder gave NaN for elements (1 to 14 of a sample) where the device, as CPU of 2.15, gives a number"),
    # torch 2.1's CPU (cargo xtask releases --torch 2.1.2 --device).
    ("test_unique.py::test_unique", lambda p: p["dtype"] != torch.bool, (2, 1),
     "CPU's unique(sorted=False) returned hash order, and counted NaNs 0 with inverse index 0"),
    ("test_unique.py::test_unique_nan_and_zero_ties_follow_cpus_sort", None, (2, 1),
     "CPU's unique counted NaNs 0 with inverse index 0"),
    ("test_opinfo.py::test_op_matches_cpu", lambda p: p["key"] == "unique", (2, 1),
     "CPU's unique(sorted=False) returned hash order"),
    ("test_opinfo.py::test_op_matches_cpu",
     lambda p: (p["key"], p["dtype"]) in {("native_layer_norm", "float32"), ("nn.functional.layer_norm", "float32")},
     (2, 1), "CPU's float32 layer norm of a large-mean sample rounded otherwise (up to 9e-5 apart)"),
    ("test_opinfo.py::test_op_matches_cpu",
     lambda p: (p["key"], p["dtype"]) == ("nn.functional.adaptive_avg_pool2d", "int64"), (2, 1),
     "CPU had no int64 adaptive_avg_pool2d"),
    ("test_opinfo.py::test_op_matches_cpu",
     lambda p: (p["key"], p["dtype"]) == ("nn.functional.interpolate.trilinear", "bfloat16"), (2, 1),
     "CPU's BFloat16 upsampling rounded each step in BFloat16"),
    ("test_resample.py::test_upsample", dtype_in(torch.bfloat16), (2, 1),
     "CPU's BFloat16 upsampling rounded each step in BFloat16"),
    ("test_norm.py::test_group_norm_mixed_dtype", dtype_in(torch.float16), (2, 1),
     "CPU refused a Half input with float parameters (\"mixed dtype (CPU)\")"),
    ("test_amp.py::test_autocast_matches_cpu", dtype_in(torch.float16), (2, 1),
     "CPU's autocast took BFloat16 only"),
    ("test_optim.py::test_fused_step_matches_cpu", lambda p: p["name"] in ("SGD", "Adagrad"), (2, 1),
     "SGD and Adagrad had no fused= (no CPU kernel to compare with)"),
    ("test_models.py::test_transformer_encoder_adamw", lambda p: p["fused"], (2, 1),
     "CPU had no fused AdamW to compare with"),
    ("test_linalg.py::test_backward_errors_match_cpu_forward_checks", lambda p: p.get("_id") == "linear 0-D", (2, 1),
     "CPU's linear checked a 0-d operand in matmul, with matmul's message"),
    # APIs a later torch added.
    ("test_optim.py::test_errors", lambda p: not hasattr(torch, "_fused_sgd_"), (2, 1), "torch._fused_sgd_ is newer"),
    ("test_amp.py::test_autocast_casts_to_low_precision_and_nests", None, (2, 1),
     "torch.is_autocast_enabled(device_type) is newer"),
    ("test_amp.py::test_device_module_reads_and_writes_torchs_autocast_state",
     lambda p: not hasattr(torch, "get_autocast_dtype"), (2, 1), "torch.get_autocast_dtype is newer"),
    ("test_amp.py::test_grad_scaler_trains_like_cpu", lambda p: not hasattr(torch.amp, "GradScaler"), (2, 1),
     "torch.amp.GradScaler is newer"),
    # Messages and exception types that changed.
    ("test_amp.py::test_errors_match_cpu", None, (2, 4), "CPU raised RuntimeError, now NotImplementedError, for a dtype"),
    ("test_conv.py::test_unfold_fold_errors_match_cpu", None, (2, 4),
     "CPU raised RuntimeError, now NotImplementedError, for a dtype"),
    ("test_linalg.py::test_errors_match_cpu", None, (2, 12), "CPU's matrix-product messages changed"),
    ("test_linalg.py::test_int_mm_errors_match_cpu", None, (2, 12), "CPU's _int_mm messages changed"),
    ("test_reduce.py::test_errors_match_cpu", None, (2, 12), "CPU's reduction messages changed"),
    ("test_samplers.py::test_errors_are_cpus", lambda p: "int-" in p["_id"], (2, 8),
     "CPU's binomial raised for integer inputs with another message"),
    ("test_shape.py::test_shape_errors", None, (2, 4), "CPU's unfold and arange messages changed"),
    ("test_shape.py::test_factory_errors", None, (2, 4), "CPU's arange message changed"),
    ("test_shape.py::test_sort_errors", None, (2, 8), "CPU's topk message for Bool changed"),
    ("test_unique.py::test_histc_errors", None, (2, 12), "CPU's histc checks for complex and non-finite ranges changed"),
    ("test_pool.py::test_fractional_max_pool_nan_and_errors", None, (2, 12), "CPU lacked a fractional_max_pool check"),
    ("test_resample.py::test_grid_sample_errors", None, (2, 12), "CPU lacked a grid_sample check"),
    # Results CPU computes differently now.
    ("test_norm.py::test_group_norm", lambda p: p.get("name") == "empty_spatial", (2, 13),
     "CPU answered empty groups (HxW = 0) before check_group_norm_inputs refused them; the device follows 2.14+"),
    ("test_norm.py::test_group_norm_errors", None, (2, 13),
     "CPU answered zero channels before check_group_norm_inputs refused them; the device follows 2.14+"),
    ("test_opinfo.py::test_op_matches_cpu", lambda p: (p["key"], p["dtype"]) == ("arange", "int64"), (2, 12),
     "CPU's arange sized some float ranges differently"),
    ("test_opinfo.py::test_op_matches_cpu",
     lambda p: (p["key"], p["dtype"]) == ("nn.functional.conv_transpose3d", "float32"), (2, 4),
     "CPU's float32 conv_transpose3d summed in another order (2e-5 apart)"),
    ("test_index.py::test_scatter", dtype_in(torch.complex64), (2, 4), "CPU's complex scatter rounds differently"),
    ("test_norm.py::test_softmax_backward", dtype_in(torch.bfloat16), (2, 4),
     "CPU's BFloat16 log_softmax backward rounds differently"),
    ("test_optim.py::test_fused_step_matches_cpu", dtype_in(torch.bfloat16), (2, 12),
     "CPU's fused SGD kept BFloat16 momentum differently"),
    ("test_resample_aa.py::", None, (2, 4), "CPU's antialiased resampling weights round differently"),
    ("test_shape.py::test_linspace_and_logspace", dtype_in(*REDUCED), (2, 12),
     "CPU's Half/BFloat16 linspace steps differently"),
    ("test_embedding.py::test_embedding_bag_backward_ops_and_errors", None, (2, 12),
     "CPU's _embedding_bag_dense_backward scaled sum bags by frequency differently"),
    ("test_unique.py::test_histc_dtype_arithmetic_edges", None, (2, 12), "CPU's histc bin arithmetic changed"),
    ("test_amp.py::test_autocast_registrations_are_cpus", None, (2, 12),
     "CPU's autocast op lists changed; regen's autocast policy copies the pinned release's"),
    # Random streams: the device draws what CPU of the pinned release draws.
    ("test_random.py::test_uniform", dtype_in(*REDUCED), (2, 10), "CPU drew Half/BFloat16 uniform differently"),
    ("test_random.py::test_normal_", dtype_in(*REDUCED), (2, 12), "CPU drew Half/BFloat16 normal differently"),
    ("test_random.py::test_randn_and_rand_factories", None, (2, 10), "CPU drew BFloat16 rand differently"),
    ("test_random.py::test_random_overloads", dtype_in(torch.int32), (2, 4), "CPU drew int32 random_ differently"),
    ("test_random.py::test_distributions", lambda p: p.get("op") == "exponential_", (2, 4),
     "CPU drew exponential_ differently"),
    ("test_random.py::test_multinomial", None, (2, 4), "CPU's multinomial drew differently"),
    # torch.accelerator and the stream API's context managers are newer.
    ("test_streams.py::", lambda p: not hasattr(torch, "accelerator"), (2, 5), "torch.accelerator is torch 2.6's"),
    ("test_streams.py::test_events_record_query_synchronize_and_wait", None, (2, 5),
     "torch.Stream as a context manager is newer"),
    ("test_streams.py::test_elapsed_time_errors_as_cuda", None, (2, 5), "Event.elapsed_time's checks are newer"),
    ("test_device_module.py::test_accelerator_device_index_checks_the_index",
     lambda p: not hasattr(getattr(torch, "accelerator", None), "device_index"), (2, 14),
     "torch.accelerator.device_index is newer"),
    ("test_device_module.py::test_a_device_index_that_does_not_exist_is_an_error",
     lambda p: p.get("what") == "Stream" and not hasattr(torch, "accelerator"), (2, 5), "torch.Stream(device) is newer"),
    ("test_streams.py::test_accelerator_memory_statistics_follow_device_allocations",
     lambda p: not hasattr(getattr(torch, "accelerator", None), "empty_cache"), (2, 8),
     "torch.accelerator.empty_cache is newer"),
    ("test_streams.py::test_pin_memory_gives_pinned_cpu_tensors_with_the_same_values", None, (2, 4),
     "pin_memory(device) asks CUDA before torch 2.5"),
    # CPU itself crashes (a segmentation fault takes the whole run down).
    # Seen through 2.12 and not in 2.15; 2.13 and 2.14 are not measured, and a crash would end their run.
    ("test_norm.py::test_batch_norm_errors", None, (2, 14), "CPU crashes on one of its invalid inputs"),
    ("test_unique.py::test_bincount_edges_and_errors", None, (2, 4), "CPU crashes on one of its invalid inputs"),
]

# Skips that are not CPU's doing, in the same form; their reasons are shown as written.
OTHER_SKIPS = [
    # The device module's streams and the glue's profiler stubs need newer torch APIs.
    ("test_devices.py::test_streams_are_per_device_and_the_stream_context_restores_them",
     lambda p: not hasattr(torch, "accelerator"), (2, 5), "torch.accelerator (current_stream, set_stream) is torch 2.6's"),
    ("test_devices.py::test_the_profiler_times_device_ops", None, (2, 3),
     "the glue registers the profiler's PrivateUse1 stubs from torch 2.4 on"),
    # torch.library ops defined in Python with a CPU kernel only, called on the device: newer
    # PyTorch falls through AutogradPrivateUse1 to the CPU fallback.
    *[(f"test_fallback_shapes.py::{test}", None, (2, 8),
       "a Python-defined op with only a CPU kernel cannot be called on this device under autograd (no "
       "AutogradPrivateUse1 fallthrough for it)")
      for test in ("test_custom_tensor_list_result", "test_optional_tensor_list_argument",
                   "test_mutated_tensor_list_argument")],
    # torch 2.1's _foreach_* ops are backend kernels (CPU and CUDA; composite from a later release
    # on, 2.4 measured): the device implements the pinned release's ops, so on 2.1 the foreach
    # optimizers (every optimizer's default there, and the step count of the fused ones) run
    # through the CPU fallback, correct but copied.
    *[(test, applies, (2, 1), "torch 2.1's _foreach_* ops have no composite kernel; the device has none either, so "
       "the foreach optimizer steps run through the CPU fallback")
      for test, applies in [("test_optim.py::test_unfused_optimizers_run_natively", lambda p: p["foreach"]),
                            ("test_optim.py::test_fused_step_matches_cpu", None),
                            ("test_models.py::test_cnn_sgd_momentum", None),
                            ("test_models.py::test_transformer_encoder_adamw", None),
                            ("test_models.py::test_lstm_gru_regressor_rmsprop", None),
                            ("test_models.py::test_mlp_bce_smooth_l1_adagrad", None),
                            ("test_models.py::test_tied_embeddings_stay_tied_through_module_to_and_train_as_on_cpu",
                             None)]],
    # torch 2.1 calls the fused LSTM and GRU cells for CUDA inputs only, and composes them from
    # native pointwise ops and mm elsewhere (measured: no copy to CPU): no fused kernel to count.
    *[(f"test_rnn.py::{test}", None, (2, 1), "torch 2.1 runs the fused LSTM/GRU cells for CUDA inputs only")
      for test in ("test_lstm_cell", "test_gru_cell", "test_lstm_and_gru_over_sequences")],
    # generated/ is the pinned release's generation; another release's is in the build's OUT_DIR.
    ("test_device.py::test_ops_cpu_cannot_serve_are_listed_and_never_left_to_the_fallback", lambda p: not PINNED,
     (99, 0), "reads generated/selection.json, the pinned release's"),
]


# Capability differences: tests that compare bit for bit with ATen's vectorised CPU kernels
# (shared by its AVX2 and AVX-512 builds), whose rounding or behaviour the device reproduces, where
# ATen's scalar build (ATEN_CPU_CAPABILITY=default, or a CPU without AVX2) computes another
# result the device does not model: skipped then, with the reason. Tests whose bit-for-bit
# comparisons only need assert_close's tolerances there use devtest.VECTOR_ROUNDING instead.
# Rows are (test, predicate on the parameters or None, reason), for ATen's DEFAULT capability.
CAPABILITY_DIFFERENCES = [
    ("test_unique.py::test_histc", dtype_in(torch.float32, torch.float64, torch.bfloat16, torch.float16),
     "CPU's scalar min/max let a NaN into histc's data range, which then raises; its vectorised ones skip it"),
    ("test_unique.py::test_histc_errors", None, "CPU's scalar build raises for a NaN range its vectorised build accepts"),
    ("test_resample_aa.py::test_uint8_one_pixel", None,
     "the internal assert of CPU's AVX2 uint8 antialiasing for one-pixel inputs, which the device reproduces, is not in "
     "its scalar build"),
    ("test_shape.py::test_linspace_and_logspace", lambda p: not p["dtype"].is_floating_point and not p["dtype"].is_complex,
     "integer linspace truncates a step ATen's scalar build rounds differently"),
    ("test_device.py::test_add_and_sub_with_alpha_round_bit_for_bit_as_cpu", dtype_in(*REDUCED),
     "the device rounds Half/BFloat16 `a + alpha * b` as ATen's vector blocks and scalar tail do; the scalar build "
     "rounds every element as its tail"),
    ("test_index.py::test_index_add_rounds_repeated_indices_as_cpu", None,
     "the device reproduces the roundings of CPU's vectorised index_add accumulation"),
    ("test_embedding.py::test_embedding_backward", lambda p: p.get("by_freq"),
     "the device reproduces CPU's vectorised scaling by frequency (fused in vector blocks); the scalar build "
     "rounds every element as its tail"),
]


def skip_reason(base, params):
    """Why the test `base` (`file::function`) with `params` is skipped on this release and CPU
    capability, or None."""
    rows = [(row, True) for row in RELEASE_DIFFERENCES] + [(row, False) for row in OTHER_SKIPS]
    for (test, applies, newest, why), cpu in rows:
        # A name ending in "::" or "_" is a prefix; otherwise it names one test function.
        named = base.startswith(test) if test.endswith(("::", "_")) else base == test
        if RELEASE <= newest and named and (applies is None or applies(params)):
            return f"CPU of torch <= {newest[0]}.{newest[1]} differs: {why}" if cpu else why
    if not ATEN_VECTORISED:
        for test, applies, why in CAPABILITY_DIFFERENCES:
            if base == test and (applies is None or applies(params)):
                return f"ATen's scalar build (capability {ATEN_CAPABILITY}) differs: {why}"
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        callspec = getattr(item, "callspec", None)
        params = dict(callspec.params) if callspec else {}
        params["_id"] = callspec.id if callspec else ""
        base = item.nodeid.split("tests/")[-1].split("[")[0]
        why = skip_reason(base, params)
        if why is not None:
            item.add_marker(pytest.mark.skip(reason=why))


@pytest.fixture(autouse=True)
def _native_ops_stay_on_the_device(request):
    """Fails a test in which the CPU fallback served an op regen.toml implements: every test of a
    native op, value tests too, notices when that op leaves the device (REGEN_FALLBACK_OPS routes
    it to the fallback, or its kernel went missing), without naming its ops. A test of exactly
    that (marked `leaves_the_device`) is exempt."""
    if request.node.get_closest_marker("leaves_the_device"):
        yield
        return
    before = sweep.fallback_snapshot()
    yield
    left = {op: n for op, n in sweep.fallback_delta(before).items() if n > 0 and op in NATIVE_OPS}
    if left:
        pytest.fail("left the device: the CPU fallback served " +
                    ", ".join(f"{op} ({n} call(s))" for op, n in sorted(left.items())) + ", which regen.toml implements")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On a release older than the pinned one, a case that failed because CPU of that release has
    no kernel for its dtype or op (2.1 lacks most Half kernels and GradScaler's CPU kernels, as
    `cargo xtask releases --torch 2.1.2 --device` showed) compares the device with nothing: it is
    reported as skipped, with CPU's message as the reason. On the pinned release such a failure
    stays a failure."""
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or call.excinfo is None:
        return
    match = older_cpu_has_no_kernel(call.excinfo.value)
    if match:
        if match["kernel"]:
            what = f"no {match['dtype']} kernel {match['kernel']}"
        elif match["op"]:
            what = f"no kernel for {match['op']}"
        else:
            what = f"no oneDNN {match['primitive']} primitive for these dtypes"
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"CPU of torch {torch.__version__} has {what}")


def pytest_configure(config):
    config.addinivalue_line("markers", "leaves_the_device: the test sends ops regen.toml implements to the CPU "
                            "fallback on purpose (the native-op guard does not apply)")


def pytest_report_header(config):
    """The vector tiers this run computes with: ATen's (ATEN_CPU_CAPABILITY), MKL's, oneDNN's and
    the device's (REGEN_CPU_CAPABILITY), so each run of the suite says which machine it proved."""
    import ctypes

    import regen_device

    lib = ctypes.CDLL(regen_device._LIBRARY)
    lib.regen_device_cpu_capability.restype = ctypes.c_char_p
    mkl = os.environ.get("MKL_ENABLE_INSTRUCTIONS", "(all)")
    onednn = os.environ.get("ONEDNN_MAX_CPU_ISA", "(all)")
    return (f"CPU capability: ATen {torch.backends.cpu.get_cpu_capability()}, MKL {mkl}, oneDNN {onednn}, "
            f"regen {lib.regen_device_cpu_capability().decode()}")


@pytest.fixture(autouse=True)
def _the_current_device_is_restored():
    """Fails a test that leaves another device current (a device or stream context that does not
    restore it): later tests would make their tensors there."""
    yield
    current = torch.regen.current_device()
    if current != 0:
        torch.regen.set_device(0)
        pytest.fail(f"the test left regen:{current} as the current device")
