"""Device-generic sweep of the regen device against PyTorch's own OpInfo database (a script,
not a test; the CI slice is tests/test_opinfo.py).

For every OpInfo in ``torch.testing._internal.common_methods_invocations.op_db`` and every dtype
of DTYPES the op supports on CPU, each of ``op.sample_inputs('cpu', dtype)`` runs on CPU and on
the device (every tensor in input/args/kwargs moved to "regen", recursively) and the results
must agree: ``assert_close(device.cpu(), cpu, equal_nan=True)`` plus dtype and shape (for the
matrix products and convolutions of LIBRARY_SUMS, whose summation order the CPU's BLAS library
picks, within the bound of recursive summation instead), element by element for tuple/list
outputs, ``==`` for non-tensor outputs. Where the CPU run raises, the device must raise too,
with any exception but TypeError (regen's "does not compute in <dtype>").

Chunks of ops run in subprocesses, so a crash (segfault, abort) of the device becomes the status
``crash`` of one (op, dtype) instead of ending the sweep: a worker logs each (op, dtype) and
sample before running it, the op that was running when the worker died is retried alone in a
fresh subprocess (and bisected when no op was running), the rest of the chunk continues.
A sample that runs longer than --timeout seconds is a ``timeout``.

Each (op, dtype) records the native Rust kernels that ran on the device (the diff of
``regen_device.native_calls`` over the ``implement`` list of regen.toml), so the summary tells
the passes computed by Rust kernels from those that went through the CPU fallback.

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/opinfo/sweep.py \
        [results.json] [--ops cumsum,add] [--dtypes float32] [--chunk 20] [--jobs 2] \
        [--known-failures draft.txt] [--strict tests/opinfo_known_failures.txt]

--strict compares the results with a known-failures list both ways and exits 1 on any
difference: a listed entry that passes or fails another way, an unlisted failure, or an op
regen.toml implements that the CPU fallback served (`cargo xtask opinfo` runs it so).
--known-failures drafts tests/opinfo_known_failures.txt, each failure named by its diagnosed
cause (CAUSES below; an unknown failure shows as UNDIAGNOSED: diagnose it, then add a cause).
--from-results re-summarizes an existing results file without running anything.
A full sweep (about 3100 (op, dtype) pairs) takes 10-15 minutes with --jobs 2 on 2 busy cores.
"""

import argparse
import collections
import faulthandler
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

import torch

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "int64": torch.int64,
    "bool": torch.bool,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "complex64": torch.complex64,
}

# The ops with native Rust kernels: those crates/device/regen.toml implements or takes from the
# reference kernels (read from the checkout; the 30 ops of the first release if it is not there).
REGEN_TOML = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "regen.toml")
NATIVE_OPS_V1 = [
    "empty.memory_format", "empty_strided", "as_strided", "view", "_reshape_alias", "resize_",
    "_copy_from", "_copy_from_and_resize", "_local_scalar_dense",
    "set_.source_Storage", "set_.source_Storage_storage_offset", "set_.source_Tensor", "set_",
    "fill_.Scalar",
    "add.out", "sub.out", "mul.out", "div.out", "neg.out", "abs.out", "exp.out", "log.out",
    "sqrt.out", "sigmoid.out", "tanh.out", "relu", "relu_", "sum.IntList_out", "mm.out", "addmm.out",
]


def _listed(implement):
    """The ops of an `[implement]`: a flat list, or (kernel groups) a table of lists."""
    return [op for ops in implement.values() for op in ops] if isinstance(implement, dict) else list(implement)


def read_native_ops(path=REGEN_TOML):
    """The ops regen.toml gives native kernels: its own `implement`, and with `[reference]` the ops
    of the kernel library's groups it takes (all, or `groups`), as regen merges them. A config
    this cannot read raises: an empty or partial list would make every nativeness check pass."""
    try:
        import tomllib

        with open(path, "rb") as f:
            config = tomllib.load(f)
    except (ImportError, OSError):
        return NATIVE_OPS_V1
    ops = _listed(config.get("implement", []))
    reference = config.get("reference")
    if reference is not None:
        with open(os.path.join(os.path.dirname(path), reference["config"]), "rb") as f:
            groups = tomllib.load(f)["implement"]
        for group in reference.get("groups", list(groups)):
            ops += [op for op in groups[group] if op not in ops]
    return ops


def torch_has(op):
    """Whether this torch has `op` (`name.overload` of aten, or `ns::name.overload`)."""
    name, _, overload = op.partition(".")
    try:
        torch._C._get_schema(name if "::" in name else f"aten::{name}", overload)
        return True
    except RuntimeError:
        return False


# regen.toml names the ops of the pinned release; the device built on an older torch has no
# kernel for an op that release lacks (mm.dtype before 2.5), and native_calls refuses its name.
NATIVE_OPS = [op for op in read_native_ops() if torch_has(op)]
# Plumbing that every device op uses, the CPU fallback included (it allocates device outputs and
# copies its inputs and results through copy_ and _copy_from): these do not make a result "native".
PLUMBING_OPS = {"empty.memory_format", "empty_strided", "copy_", "_copy_from", "_copy_from_and_resize",
                "resize_", "_local_scalar_dense"}

# Ops whose output is drawn from a random number generator: device and CPU draw differently.
RANDOM_OPS = {
    "bernoulli", "normal", "multinomial", "uniform", "cauchy", "exponential", "geometric",
    "log_normal", "rand_like", "randn_like", "randint_like", "randint", "randn", "rand",
    "nn.functional.dropout", "nn.functional.dropout1d", "nn.functional.dropout2d",
    "nn.functional.dropout3d", "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout",
    "nn.functional.rrelu", "nn.functional.fractional_max_pool2d",
    "nn.functional.fractional_max_pool3d", "svd_lowrank", "pca_lowrank",
    "nn.functional.scaled_dot_product_attention", "nn.functional.multi_head_attention_forward",
    "torch.ops.aten._flash_attention_forward", "torch.ops.aten._efficient_attention_forward",
}

DEFAULT_OUT = "/tmp/opinfo-results.json"
TRUNCATE = 300


def op_key(op):
    """`name` or `name.variant`: the first column of opinfo_known_failures.txt."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def load_op_db():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import op_db
    return op_db


def skip_reason(op):
    """Why the whole op is skipped, or None. Each reason names the hint it comes from."""
    if op.name in RANDOM_OPS and not (op.name == "nn.functional.feature_alpha_dropout" and op.variant_test_name == "without_train"):
        return "random: output drawn from an RNG (sweep.RANDOM_OPS)"
    # The hint is newer than torch 2.5's OpInfo.
    if getattr(op, "has_nondeterministic_output", False):
        return "nondeterministic: OpInfo has_nondeterministic_output (uninitialised memory)"
    # OpInfo's own hint: its cross-device test test_compare_cpu is skipped as non-deterministic.
    for decorator in op.decorators:
        if getattr(decorator, "test_name", None) != "test_compare_cpu" or decorator.device_type not in (None, "cpu"):
            continue
        for d in decorator.decorators:
            for cell in d.__closure__ or ():
                if isinstance(cell.cell_contents, str) and "non-deterministic" in cell.cell_contents:
                    return f"nondeterministic: OpInfo skips test_compare_cpu ({cell.cell_contents})"
    return None


def uses_generator(obj):
    if isinstance(obj, torch.Generator):
        return True
    if isinstance(obj, (list, tuple)):
        return any(uses_generator(o) for o in obj)
    if isinstance(obj, dict):
        return any(uses_generator(o) for o in obj.values())
    return False


def to_device(obj, device="regen"):
    """Moves every tensor (and every torch.device("cpu") or "cpu") to the device, recursively."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, torch.device):
        return torch.device(device) if obj.type == "cpu" else obj
    if isinstance(obj, str) and obj == "cpu":
        return device
    if isinstance(obj, torch.Size):
        return obj
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(to_device(o, device) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: to_device(v, device) for k, v in obj.items()}
    return obj


def involves_device(obj):
    if isinstance(obj, torch.Tensor):
        return obj.device.type == "regen"
    if isinstance(obj, (torch.device, str)):
        return str(obj).startswith("regen")
    if isinstance(obj, (list, tuple)):
        return any(involves_device(o) for o in obj)
    if isinstance(obj, dict):
        return any(involves_device(o) for o in obj.values())
    return False


# Arguments that PyTorch requires on CPU whatever the device (as sample_inputs(device) makes them).
CPU_ARGS = {"tensor_split": "indices_or_sections tensor must be on CPU"}


def to_cpu(obj, path="result"):
    """The device result on CPU; raises AssertionError if a tensor of it is not on the device."""
    if isinstance(obj, torch.Tensor):
        assert obj.device.type == "regen", f"{path} is on {obj.device}, not on the device"
        return obj.cpu()
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(to_cpu(o, f"{path}[{i}]") for i, o in enumerate(obj)))
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_cpu(o, f"{path}[{i}]") for i, o in enumerate(obj))
    return obj


# Ops whose CPU result is a sum of products in an order the BLAS or convolution library (MKL,
# oneDNN) picks for this CPU's vendor and instruction set, so another machine's CPU result is
# another rounding of the same sum: compared within the bound of recursive summation
# (`within_sum_bound`), never bit for bit or with a fixed tolerance that one machine's order can
# miss (addbmm float32 missed assert_close's on an AMD EPYC with AVX-512).
LIBRARY_SUMS = {
    "mm", "addmm", "addmm.decomposed", "bmm", "baddbmm", "addbmm", "addmv", "mv", "matmul", "dot", "vdot", "inner",
    "einsum", "tensordot", "nn.functional.linear", "nn.functional.bilinear", "addr", "chain_matmul",
    "linalg.multi_dot", "nn.functional.conv1d", "nn.functional.conv2d", "nn.functional.conv3d",
    "nn.functional.conv_transpose1d", "nn.functional.conv_transpose2d", "nn.functional.conv_transpose3d",
}

# Unit roundoff of each dtype a library sum is computed in.
UNIT_ROUNDOFF = {torch.float32: 2.0**-24, torch.complex64: 2.0**-24, torch.float64: 2.0**-53,
                 torch.complex128: 2.0**-53, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}


def absolute(obj):
    """`obj` with every floating or complex tensor replaced by its absolute value in float64 and
    every float or complex number (alpha, beta) by its absolute value: the same op on it gives
    sum |term| for each output element of a sum of products."""
    if isinstance(obj, torch.Tensor):
        return obj.abs().double() if obj.is_floating_point() or obj.is_complex() else obj
    if isinstance(obj, (float, complex)):
        return abs(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(absolute(o) for o in obj))
    if isinstance(obj, (list, tuple)) and not isinstance(obj, torch.Size):
        return type(obj)(absolute(o) for o in obj)
    if isinstance(obj, dict):
        return {k: absolute(v) for k, v in obj.items()}
    return obj


def sum_bound(op, sample):
    """Per output element, how far apart two roundings of the op's sums may lie: each is within
    k·u·sum|term| of the exact sum (recursive summation in any order, u the dtype's unit roundoff,
    k the number of terms), so two are within 2·k·u·sum|term|, plus one rounding of the result.
    k is bounded by the largest operand's element count. None when the op is not a library sum or
    its dtype has no roundoff (integers are exact)."""
    if op_key(op) not in LIBRARY_SUMS:
        return None
    tensors = list(tensors_in((sample.input, sample.args, sample.kwargs)))
    dtype = tensors[0].dtype if tensors else None
    if dtype not in UNIT_ROUNDOFF:
        return None
    k = max(t.numel() for t in tensors)
    terms = sample.output_process_fn_grad(op(absolute(sample.input), *absolute(sample.args), **absolute(sample.kwargs)))
    return (2 * k + 1) * UNIT_ROUNDOFF[dtype] * terms


def tensors_in(obj):
    """The tensors of a sample's input, args or kwargs, recursively."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from tensors_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from tensors_in(o)


def within_sum_bound(device, cpu, bound, path):
    """Asserts |device - cpu| <= bound element by element (NaN where CPU has NaN)."""
    assert isinstance(device, torch.Tensor) and isinstance(bound, torch.Tensor), f"{path}: a library sum that is not a tensor"
    assert device.dtype == cpu.dtype, f"{path}: dtype {device.dtype} != CPU {cpu.dtype}"
    assert device.shape == cpu.shape, f"{path}: shape {tuple(device.shape)} != CPU {tuple(cpu.shape)}"
    wide = torch.complex128 if cpu.is_complex() else torch.float64
    diff = (device.to(wide) - cpu.to(wide)).abs()
    nan = cpu.to(wide).isnan()
    ok = torch.where(nan, device.to(wide).isnan(), (diff <= bound) | (device.to(wide) == cpu.to(wide)))
    if not ok.all():
        i = int((~ok).flatten().nonzero()[0])
        raise AssertionError(f"{path}: {int((~ok).sum())} of {ok.numel()} elements differ by more than the summation "
                             f"bound; first at flat index {i}: {device.flatten()[i].item()} vs CPU {cpu.flatten()[i].item()}, "
                             f"bound {bound.flatten()[i].item():.3g}")


def compare(device, cpu, path="result", bound=None):
    """Asserts that the device result (already moved to CPU) equals the CPU result; within
    `bound` (from `sum_bound`) for a library sum."""
    if bound is not None and isinstance(cpu, torch.Tensor) and cpu.layout == torch.strided:
        within_sum_bound(device, cpu, bound, path)
    elif isinstance(cpu, torch.Tensor):
        assert isinstance(device, torch.Tensor), f"{path}: device returned {type(device).__name__}, CPU a tensor"
        assert device.dtype == cpu.dtype, f"{path}: dtype {device.dtype} != CPU {cpu.dtype}"
        assert device.shape == cpu.shape, f"{path}: shape {tuple(device.shape)} != CPU {tuple(cpu.shape)}"
        if cpu.layout != torch.strided or cpu.is_quantized:
            device, cpu = device.to_dense(), cpu.to_dense()
        torch.testing.assert_close(device, cpu, equal_nan=True, msg=lambda m: f"{path}: {m}")
    elif isinstance(cpu, (list, tuple)) and not isinstance(cpu, torch.Size):
        assert isinstance(device, (list, tuple)), f"{path}: device returned {type(device).__name__}, CPU {type(cpu).__name__}"
        assert len(device) == len(cpu), f"{path}: {len(device)} outputs != CPU {len(cpu)}"
        for i, (d, c) in enumerate(zip(device, cpu)):
            compare(d, c, f"{path}[{i}]")
    elif isinstance(cpu, float) and isinstance(device, float) and math.isnan(cpu):
        assert math.isnan(device), f"{path}: {device} != CPU nan"
    elif isinstance(cpu, (float, complex)) and isinstance(device, (int, float, complex)):
        torch.testing.assert_close(device, cpu, equal_nan=True, check_dtype=False, msg=lambda m: f"{path}: {m}")
    else:
        assert type(device) is type(cpu) and device == cpu, f"{path}: device {device!r} != CPU {cpu!r}"


class SampleTimeout(Exception):
    pass


def error_text(exc):
    text = f"{type(exc).__name__}: {exc}".strip()
    return re.sub(r"\s+", " ", text)[:TRUNCATE]


def native_snapshot():
    import regen_device

    return {name: regen_device.native_calls(name) for name in NATIVE_OPS}


def fallback_snapshot():
    import regen_device

    return regen_device.fallback_calls()


def fallback_delta(before):
    """The ops the CPU fallback served since `before` (a fallback_snapshot), with their counts."""
    after = fallback_snapshot()
    return {k: n - before.get(k, 0) for k, n in after.items() if n != before.get(k, 0)}


def left_the_device(record):
    """The ops of a record that regen.toml implements (a native kernel is claimed for them) but
    the CPU fallback served: an op that left the device (REGEN_FALLBACK_OPS routes it there, or
    its kernel went missing)."""
    return sorted(k for k in record.get("fallback_kernels", {}) if k in NATIVE_OPS)


def describe(sample):
    def d(o):
        if isinstance(o, torch.Tensor):
            contiguous = o.layout != torch.strided or o.is_contiguous()
            return f"T{tuple(o.shape)}{'' if contiguous else 'nc'}{'' if o.layout == torch.strided else str(o.layout)[6:]}"
        if isinstance(o, (list, tuple)) and not isinstance(o, torch.Size):
            return "[" + ",".join(d(x) for x in o[:6]) + ("..." if len(o) > 6 else "") + "]"
        return repr(o)[:40]

    return f"{d(sample.input)} args={d(list(sample.args))} kwargs={ {k: d(v) for k, v in sample.kwargs.items()} }"[:200]


class NotOnDevice(Exception):
    """The sample has no tensor or device argument: nothing of it runs on the device."""


def run_sample(op, sample):
    """Runs one sample on CPU and on the device. Returns None if they agree, else the mismatch."""
    try:
        args = sample.args if op.name in CPU_ARGS else to_device(sample.args)
        device_sample = (to_device(sample.input), args, to_device(sample.kwargs))
    except Exception as exc:  # noqa: BLE001
        return "moving the inputs to the device raised " + error_text(exc)
    if not involves_device(device_sample):
        raise NotOnDevice()
    try:
        expected = op(sample.input, *sample.args, **sample.kwargs)
        expected = sample.output_process_fn_grad(expected)
        cpu_error = None
    except SampleTimeout:
        raise
    except Exception as exc:  # noqa: BLE001 - any CPU error: the device must raise too
        cpu_error = exc
    try:
        got = op(device_sample[0], *device_sample[1], **device_sample[2])
    except SampleTimeout:
        raise
    except Exception as exc:  # noqa: BLE001
        if cpu_error is None:
            return error_text(exc)
        if isinstance(exc, TypeError):
            return f"device raised TypeError where CPU raised {type(cpu_error).__name__}: " + error_text(exc)
        return None
    if cpu_error is not None:
        return f"device succeeded where CPU raised {error_text(cpu_error)}"[:TRUNCATE]
    try:
        got = sample.output_process_fn_grad(to_cpu(got))
        compare(got, expected, bound=sum_bound(op, sample))
    except SampleTimeout:
        raise
    except AssertionError as exc:
        return error_text(exc)
    except Exception as exc:  # noqa: BLE001
        return "comparing the results raised " + error_text(exc)
    return None


def check(op, dtype_name, timeout=20.0, log=None, max_samples=None):
    """Runs every sample of (op, dtype) on CPU and the device; returns the result record."""
    dtype = DTYPES[dtype_name]
    record = {"op": op.name, "variant_test_name": op.variant_test_name, "key": op_key(op),
              "dtype": dtype_name, "status": "pass", "error": None, "samples": 0, "failed": 0,
              "skipped_samples": 0, "native": False, "native_kernels": {}, "fallback_kernels": {}}
    start = time.perf_counter()
    reason = skip_reason(op)
    if reason:
        record.update(status="skip", error=reason)
        return record
    torch.manual_seed(0)
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))
    except Exception as exc:  # noqa: BLE001
        record.update(status="skip", error="sample_inputs raised: " + error_text(exc))
        return record
    if max_samples:
        samples = samples[:max_samples]
    before = native_snapshot()
    fallback_before = fallback_snapshot()
    old_handler = signal.signal(signal.SIGALRM, _on_alarm) if timeout else None
    try:
        for i, sample in enumerate(samples):
            if uses_generator((sample.input, sample.args, sample.kwargs)):
                record["skipped_samples"] += 1
                continue
            if log:
                log({"sample": i, "desc": describe(sample)})
            if timeout:
                signal.setitimer(signal.ITIMER_REAL, timeout)
                # Hard limit for a kernel stuck in native code, where SIGALRM cannot interrupt it.
                faulthandler.dump_traceback_later(timeout * 3 + 10, exit=True)
            try:
                record["samples"] += 1
                mismatch = run_sample(op, sample)
            except NotOnDevice:
                record["samples"] -= 1
                record["skipped_samples"] += 1
                continue
            except SampleTimeout:
                mismatch = f"timeout: sample {i} ran longer than {timeout:g}s"
                record["status"] = "timeout"
            finally:
                if timeout:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    faulthandler.cancel_dump_traceback_later()
            if mismatch:
                record["failed"] += 1
                if record["error"] is None:
                    record["error"] = f"sample {i}: {mismatch}"[:TRUNCATE]
                if record["status"] == "pass":
                    record["status"] = "fail"
                if record["status"] == "timeout":
                    break
    finally:
        if timeout:
            signal.signal(signal.SIGALRM, old_handler)
    after = native_snapshot()
    record["native_kernels"] = {k: after[k] - before[k] for k in NATIVE_OPS if after[k] != before[k]}
    record["native"] = any(k not in PLUMBING_OPS for k in record["native_kernels"])
    record["fallback_kernels"] = fallback_delta(fallback_before)
    if record["samples"] == 0:
        record.update(status="skip", error=f"no samples to run ({record['skipped_samples']} skipped: "
                      "they use a torch.Generator, or nothing of them is on the device)")
    record["seconds"] = round(time.perf_counter() - start, 3)
    return record


def _on_alarm(signum, frame):
    raise SampleTimeout()


# ---------------------------------------------------------------------------------------------
# Worker: runs a list of (op index, dtypes) and logs JSON lines to a progress file.


def worker(args):
    import regen_device  # noqa: F401  (registers the device)

    warnings.simplefilter("ignore")
    faulthandler.enable()
    torch.set_num_threads(args.threads)
    op_db = load_op_db()
    progress = open(args.progress, "a", buffering=1)

    def log(entry):
        progress.write(json.dumps(entry) + "\n")
        progress.flush()

    for item in args.worker.split(";"):
        index, dtypes = item.split(":")
        op = op_db[int(index)]
        for dtype_name in dtypes.split(","):
            log({"start": [int(index), dtype_name]})
            try:
                record = check(op, dtype_name, args.timeout, log, args.max_samples)
            except Exception as exc:  # noqa: BLE001 - a bug of this script, not of the device
                record = {"op": op.name, "variant_test_name": op.variant_test_name, "key": op_key(op),
                          "dtype": dtype_name, "status": "fail", "error": "sweep error: " + error_text(exc),
                          "traceback": traceback.format_exc()[-2000:], "samples": None, "failed": None,
                          "skipped_samples": None, "native": False, "native_kernels": {}, "fallback_kernels": {}}
            log({"result": record, "index": int(index)})
    log({"done": True})


# ---------------------------------------------------------------------------------------------
# Parent: chunks, subprocesses, crash isolation, summary.


def run_chunk(items, args, depth=0):
    """Runs [(op index, [dtypes])] in one subprocess; returns records, isolating crashes."""
    if not items:
        return []
    with tempfile.NamedTemporaryFile("r", suffix=".jsonl", delete=False) as f:
        progress_path = f.name
    spec = ";".join(f"{i}:{','.join(ds)}" for i, ds in items)
    cmd = [sys.executable, "-X", "faulthandler", os.path.abspath(__file__), "--worker", spec,
           "--progress", progress_path, "--timeout", str(args.timeout), "--threads", str(args.threads)]
    if args.max_samples:
        cmd += ["--max-samples", str(args.max_samples)]
    budget = 120 + sum(len(ds) for _, ds in items) * (args.timeout * 8 + 30)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=budget)
        returncode, stderr = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as exc:
        returncode = "killed after chunk budget"
        stderr = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
    records, finished, running, last_sample, done = [], set(), None, None, False
    with open(progress_path) as f:
        for line in f:
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "start" in entry:
                running, last_sample = tuple(entry["start"]), None
            elif "sample" in entry:
                last_sample = entry
            elif "result" in entry:
                records.append(entry["result"])
                finished.add((entry["index"], entry["result"]["dtype"]))
                running = None
            elif "done" in entry:
                done = True
    os.unlink(progress_path)
    if done and returncode == 0:
        return records
    remaining = [(i, [d for d in ds if (i, d) not in finished]) for i, ds in items]
    remaining = [(i, ds) for i, ds in remaining if ds]
    if running is None:
        # Died outside any op (at import, or between ops): bisect what is left.
        if len(remaining) == 1 and len(remaining[0][1]) == 1 or depth > 12:
            i, ds = remaining[0]
            return records + [_crash_record(args.op_db[i], ds[0], returncode, stderr, None)] + run_chunk([(i, ds[1:])], args, depth + 1)
        half = max(1, len(remaining) // 2) if len(remaining) > 1 else None
        if half is None:
            i, ds = remaining[0]
            h = len(ds) // 2
            return records + run_chunk([(i, ds[:h])], args, depth + 1) + run_chunk([(i, ds[h:])], args, depth + 1)
        return records + run_chunk(remaining[:half], args, depth + 1) + run_chunk(remaining[half:], args, depth + 1)
    index, dtype_name = running
    rest = [(i, [d for d in ds if (i, d) != running]) for i, ds in remaining]
    rest = [(i, ds) for i, ds in rest if ds]
    if len(items) > 1 or len(items[0][1]) > 1:
        # The op that was running when the chunk died: retry it alone, then go on with the rest.
        alone = run_chunk([(index, [dtype_name])], args, depth + 1)
        return records + alone + run_chunk(rest, args, depth + 1)
    return records + [_crash_record(args.op_db[index], dtype_name, returncode, stderr, last_sample)]


def _crash_record(op, dtype_name, returncode, stderr, last_sample):
    timed_out = "Timeout (" in stderr
    if isinstance(returncode, int) and returncode < 0:
        how = f"killed by {signal.Signals(-returncode).name}"
    else:
        how = f"exit status {returncode}"
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip() and not ln.startswith("Extension modules:")]
    cause = next((ln.strip() for ln in lines if re.search(r"panick|abort|terminate|what\(\)|Fatal|error", ln, re.I)), "")
    where = f" at sample {last_sample['sample']} {last_sample['desc']}" if last_sample else ""
    return {"op": op.name, "variant_test_name": op.variant_test_name, "key": op_key(op), "dtype": dtype_name,
            "status": "timeout" if timed_out else "crash",
            "error": (f"process {how}{where}: {cause}")[:TRUNCATE],
            "stderr_tail": "\n".join(lines[-25:])[-3000:],
            "samples": None, "failed": None, "skipped_samples": None, "native": None, "native_kernels": {}, "fallback_kernels": {}}


STATUSES = ["pass", "fail", "crash", "timeout", "skip"]

# Diagnoses of the failures seen so far, checked by hand (see tests/opinfo_known_failures.txt):
# (status, key regex, error regex, reason); the first match names the cause of a failing record.
CAUSES = [
    ("fail", r"^addbmm$", r"not close",
     "tolerance: complex64 sums in another order than CPU's MKL cgemm (float32/float64 follow MKL's order bit for bit)"),
    ("fail", r"^(sort|argsort|topk|kthvalue|mode)$", r"not equal",
     "ties: the indices of equal elements follow CPU's unstable std::sort / nth_element order, not reproduced (values equal CPU's; stable=True matches)"),
    ("fail", r"^chalf$", r"do not compute in complex32",
     "complex32: no ComplexHalf element type in the engine or the runtime's views (x.chalf() cannot convert)"),
    ("fail", r"^div\.trunc_rounding$", r"not close",
     "bf16: CPU rounds the quotient to bfloat16 before truncating; the device truncates the f32 quotient"),
    ("fail", r"^logit$", r"not close",
     "bf16: CPU rounds every step of log(x / (1 - x)) to bfloat16; the device computes in f32 and rounds once"),
    ("fail", r"", r"convolution_overrideable",
     "conv: aten::convolution sends PrivateUse1 to convolution_overrideable, unimplemented (no CPU fallback)"),
    ("fail", r"", r"Sparse(Csr)?regen",
     "sparse: no Sparseregen kernels (sparse families excluded in regen.toml)"),
    ("fail", r"^as_strided\.partial_views$", r"not (close|equal)",
     "harness: as_strided reads storage outside the view; .to('regen') copies only the view (OpInfo xfails test_compare_cpu too)"),
    ("fail", r"layer_norm$", r"not close",
     "tolerance: PrivateUse1 runs math_native_layer_norm (via batch_norm), not CPU's fused kernel; 1-element rows amplify rounding"),
    ("fail", r"^addr$", r"not close",
     "tolerance: PrivateUse1 runs math_addr (mul + add in bf16), not CPU's fused addr (1 ulp)"),
    ("fail", r"^nn\.functional\.linear_cross_entropy", r"not close",
     "bf16: off-CPU path adds 4 _to_copy (accumulation dtype differs), loss 0.0 vs CPU 0.003"),
]


def diagnose(record):
    for status, key, error, reason in CAUSES:
        match = re.search(error, record["error"] or "")
        if record["status"] == status and re.search(key, record["key"]) and match:
            return reason.format(*match.groups())
    return "UNDIAGNOSED: " + normalize(record["error"] or "")[:120]


def write_known_failures(records, path):
    """A draft of tests/opinfo_known_failures.txt: every failing record, grouped by cause."""
    groups = collections.defaultdict(list)
    for r in records:
        if r["status"] in ("fail", "crash", "timeout"):
            groups[diagnose(r)].append(r)
    with open(path, "w") as f:
        f.write(KNOWN_FAILURES_HEADER)
        for reason, rs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            f.write(f"\n# {len(rs)} x {reason}\n")
            width = max(len(r["key"]) for r in rs)
            for r in rs:
                f.write(f"{r['key']:<{width}}  {r['dtype']:<9}  {r['status']:<5}  {reason}\n")


# The statuses of a known-failures entry: `varies` passes on some CPUs and fails on others.
KNOWN_STATUSES = ("fail", "crash", "timeout", "varies")


def read_known_failures(path):
    """{(op key, dtype): (status, reason)} from the lines `op[.variant]  dtype  status  reason` of a
    known-failures list (tests/opinfo_known_failures.txt); a malformed line raises ValueError
    naming its line number."""
    known = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.split(None, 3)
            if len(fields) != 4 or fields[1] not in DTYPES or fields[2] not in KNOWN_STATUSES:
                raise ValueError(f"{path}:{number}: expected `op dtype {'|'.join(KNOWN_STATUSES)} reason`, got {line!r}")
            key, dtype, status, reason = fields
            if (key, dtype) in known:
                raise ValueError(f"{path}:{number}: {key} {dtype} listed twice")
            known[(key, dtype)] = (status, reason)
    return known


def strict_differences(records, known, ran_everything):
    """What a sweep's records and a known-failures list disagree on, one line each: a listed entry
    that passes (delete its line) or fails another way (a `varies` entry may pass or fail, not
    crash or time out), a failure the list lacks, and a record in
    which the CPU fallback served an op regen.toml implements (a value that passes this way proves
    nothing about the Rust kernel). When the sweep ran every op, a listed entry it did not run is
    one too (the OpInfo was renamed or removed)."""
    by_pair = {(r["key"], r["dtype"]): r for r in records}
    lines = []
    for (key, dtype), (status, _) in sorted(known.items()):
        r = by_pair.get((key, dtype))
        if r is None:
            if ran_everything:
                lines.append(f"{key} {dtype}: listed as {status}, but the sweep has no such (op, dtype)")
        elif status == "varies":
            if r["status"] not in ("pass", "fail"):
                lines.append(f"{key} {dtype}: listed as varies, but is {r['status']}: {normalize(r['error'] or '')}")
        elif r["status"] == "pass":
            lines.append(f"{key} {dtype}: listed as {status}, but passes: delete its line")
        elif r["status"] != status:
            lines.append(f"{key} {dtype}: listed as {status}, but is {r['status']}: {normalize(r['error'] or '')}")
    for r in records:
        if r["status"] in ("fail", "crash", "timeout") and (r["key"], r["dtype"]) not in known:
            lines.append(f"{r['key']} {r['dtype']}: {r['status']}, not listed: {normalize(r['error'] or '')}")
        left = left_the_device(r)
        if left:
            lines.append(f"{r['key']} {r['dtype']}: the CPU fallback served {', '.join(left)}, which regen.toml implements")
    return lines


KNOWN_FAILURES_HEADER = """\
# Known failures of the regen device in PyTorch's OpInfo sweep (crates/device/python/opinfo/sweep.py):
# one line per `op[.variant]  dtype  status  reason`, grouped by cause. tests/test_opinfo.py
# xfails the listed entries of its slice and FAILS when a listed entry passes: delete the line
# when a fix lands, so the list only shrinks. Redraft it from a full sweep with
#   sweep.py results.json --known-failures draft.txt
"""


def summarize(records, seconds):
    lines = [f"OpInfo sweep of the regen device: {len({r['key'] for r in records})} OpInfos, "
             f"{len(records)} (op, dtype) pairs, {seconds / 60:.1f} min, torch {torch.__version__}"]
    dtypes = [d for d in DTYPES if any(r["dtype"] == d for r in records)]
    lines.append(f"{'status':<10}" + "".join(f"{d:>11}" for d in dtypes) + f"{'total':>9}")
    for status in STATUSES:
        counts = [sum(1 for r in records if r["dtype"] == d and r["status"] == status) for d in dtypes]
        lines.append(f"{status:<10}" + "".join(f"{c:>11}" for c in counts) + f"{sum(counts):>9}")
    native = [sum(1 for r in records if r["dtype"] == d and r["status"] == "pass" and r["native"]) for d in dtypes]
    lines.append(f"{'pass nat.':<10}" + "".join(f"{c:>11}" for c in native) + f"{sum(native):>9}"
                 "   (passes where a native Rust kernel other than alloc/copy ran)")
    groups = collections.Counter()
    for r in records:
        if r["status"] in ("fail", "crash", "timeout"):
            groups[(r["status"], normalize(r["error"] or ""))] += 1
    lines.append("Most common failures (status, count, message with numbers elided):")
    for (status, message), count in groups.most_common(25):
        lines.append(f"  {status:<8}{count:>5}  {message[:150]}")
    return "\n".join(lines)


def normalize(message):
    message = re.sub(r"^sample \d+: ", "", message)
    message = re.sub(r"at sample \d+ .*?:", "at sample N:", message)
    message = re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", message)
    return message[:160]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", default=DEFAULT_OUT, help=f"JSON results file (default {DEFAULT_OUT})")
    parser.add_argument("--ops", help="comma-separated op names or op.variant keys (default: all)")
    parser.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated, of " + ",".join(DTYPES))
    parser.add_argument("--chunk", type=int, default=20, help="ops per subprocess")
    parser.add_argument("--jobs", type=int, default=2, help="subprocesses at once")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per subprocess")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per sample")
    parser.add_argument("--max-samples", type=int, default=None, help="samples per (op, dtype) (default: all)")
    parser.add_argument("--known-failures", metavar="PATH", help="also write a draft known-failures list")
    parser.add_argument("--strict", metavar="PATH",
                        help="fail (exit 1) when the results and this known-failures list disagree either way, "
                             "or when the CPU fallback served an op regen.toml implements")
    parser.add_argument("--from-results", action="store_true",
                        help="do not run: summarize the JSON file `out` (and draft --known-failures)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--progress", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    if args.from_results:
        with open(args.out) as f:
            data = json.load(f)
        print(summarize(data["results"], data["seconds"]))
        if args.known_failures:
            write_known_failures(data["results"], args.known_failures)
        return check_strict(data["results"], args)
    start = time.perf_counter()
    op_db = args.op_db = load_op_db()
    wanted = set(args.ops.split(",")) if args.ops else None
    dtypes = args.dtypes.split(",")
    items, records = [], []
    for index, op in enumerate(op_db):
        if wanted and op.name not in wanted and op_key(op) not in wanted:
            continue
        supported = op.supported_dtypes("cpu")
        ds = [d for d in dtypes if DTYPES[d] in supported]
        if not ds:
            continue
        reason = skip_reason(op)
        if reason:
            records += [check(op, d) for d in ds]  # a skip record, without running anything
        else:
            items.append((index, ds))
    chunks = [items[i:i + args.chunk] for i in range(0, len(items), args.chunk)]
    print(f"{len(items)} OpInfos to run in {len(chunks)} chunks, {args.jobs} at once, "
          f"{args.threads} torch thread(s) each; {len(records)} (op, dtype) skipped up front", flush=True)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(args.jobs) as pool:
        for n, chunk_records in enumerate(pool.map(lambda c: run_chunk(c, args), chunks)):
            records += chunk_records
            bad = [f"{r['key']}/{r['dtype']}" for r in chunk_records if r["status"] in ("crash", "timeout")]
            print(f"chunk {n + 1}/{len(chunks)} done at {time.perf_counter() - start:.0f}s"
                  + (f"; crash/timeout: {' '.join(bad)}" if bad else ""), flush=True)
    seconds = time.perf_counter() - start
    records.sort(key=lambda r: (r["key"], list(DTYPES).index(r["dtype"])))
    summary = summarize(records, seconds)
    print(summary)
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "seconds": round(seconds, 1), "dtypes": dtypes,
                   "native_ops": NATIVE_OPS, "results": records}, f, indent=1)
    print(f"results: {args.out}")
    if args.known_failures:
        write_known_failures(records, args.known_failures)
        print(f"draft known failures: {args.known_failures}")
    return check_strict(records, args)


def check_strict(records, args):
    """0, or 1 after printing every difference, when --strict names a known-failures list."""
    if not args.strict:
        return 0
    known = read_known_failures(args.strict)
    ran_everything = not args.ops and set(args.dtypes.split(",")) == set(DTYPES)
    lines = strict_differences(records, known, ran_everything)
    if not lines:
        print(f"strict: the sweep matches {args.strict} ({len(known)} known failures), and no op "
              "regen.toml implements was served by the CPU fallback")
        return 0
    print(f"strict: {len(lines)} difference(s) from {args.strict}:")
    for line in lines:
        print(f"  {line}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
