"""What the device's test files share: inputs made the same way on every run, and the
native-call counter and the profiler check that keep a CPU fallback from passing as a native kernel."""

import re
from pathlib import Path

import torch

import regen_device

# The installed torch as (major, minor), and whether it is the release the device is pinned to
# (crates/kernels/torch-version): the device's kernels follow CPU of that release.
RELEASE = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])

# ATen's CPU capability in force ("AVX512", "AVX2" or "DEFAULT" on x86-64; ATEN_CPU_CAPABILITY
# lowers it). Where the device reproduces the rounding of ATen's vectorised kernels (fused
# multiply-adds, blocks of one vector width, Box-Muller on 16 lanes, Sleef's functions), which the
# AVX2 and AVX-512 builds share for those ops, its tests compare bit for bit; ATen's scalar build
# (DEFAULT: ATEN_CPU_CAPABILITY=default, or a CPU without AVX2) rounds each step on its own, so
# there only assert_close's tolerances hold: VECTOR_ROUNDING is the keyword arguments for both.
ATEN_CAPABILITY = torch.backends.cpu.get_cpu_capability()
ATEN_VECTORISED = ATEN_CAPABILITY != "DEFAULT"
VECTOR_ROUNDING = dict(rtol=0, atol=0) if ATEN_VECTORISED else {}
PINNED = (Path(__file__).resolve().parents[3] / "kernels" / "torch-version").read_text().strip() == torch.__version__.split("+")[0]


def _load_sweep():
    """The OpInfo sweep (../opinfo/sweep.py, a script of its own), as one module for every test file."""
    import importlib.util
    import sys

    name = "regen_opinfo_sweep"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "opinfo" / "sweep.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


sweep = _load_sweep()
# The ops regen.toml implements that this torch has (sweep.NATIVE_OPS): a native kernel is
# claimed for each, and the suite fails when the CPU fallback serves one.
NATIVE_OPS = frozenset(sweep.NATIVE_OPS)

# CPU's messages when it has no kernel for a dtype or for an op at all: `"GroupNormKernelImpl" not
# implemented for 'Half'` or `"slow_conv_dilated<>" not implemented for 'Half'` (AT_DISPATCH), "could
# not create a primitive descriptor for a matmul primitive" (oneDNN of torch 2.1 has no BFloat16
# kernels for a CPU lowered to AVX2) and "Could not run 'aten::x' with arguments from the 'CPU'
# backend" (the dispatcher).
_CPU_HAS_NO_KERNEL = re.compile(
    r"\"(?P<kernel>[^\"]+)\" not implemented for '(?P<dtype>\w+)'"
    r"|Could not run '(?P<op>[\w:.]+)' with arguments from the 'CPU' backend"
    r"|could not create a primitive descriptor for an? (?P<primitive>[\w ]+) primitive"
)


def older_cpu_has_no_kernel(error):
    """On a release older than the pinned one, the match when `error` (an exception, or the text
    of one) is CPU saying it has no kernel for a dtype or an op (groups `kernel` and `dtype`, `op`,
    or oneDNN's `primitive`); else None. Such a case has nothing to compare the device with: the
    tests re-raise CPU's error and conftest's pytest_runtest_makereport reports it skipped. On the
    pinned release CPU's errors are what the device must match, so it is always None there."""
    if PINNED or not isinstance(error, (RuntimeError, NotImplementedError, str)):
        return None
    return _CPU_HAS_NO_KERNEL.search(str(error))


def make(shape, dtype, seed=0):
    """A CPU tensor of `shape` and `dtype` from a seeded generator: bools half true, floats normal
    (drawn in float32 or complex, then cast, so every float dtype sees the same values), integers
    in [-5, 5] ([0, 5] for uint8)."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=torch.float32).to(dtype)
    low = 0 if dtype == torch.uint8 else -5
    return torch.randint(low, 6, shape, generator=g, dtype=dtype)


class counted:
    """Asserts that the native kernel of each of `ops` (regen.toml keys, e.g. "sum.IntList_out") ran
    inside the block and that the CPU fallback served none of them: a test of a native op fails
    when the op leaves the device (REGEN_FALLBACK_OPS routes it to the fallback, or its kernel
    went missing)."""

    def __init__(self, *ops):
        assert ops, "counted() needs an op"
        # An op newer than an older torch under test (`_batch_norm_with_update` before 2.4) has no
        # kernel there: that release's PyTorch calls another op, which the native-op guard of
        # conftest.py still watches. On the pinned release every name must exist.
        self.ops = ops if PINNED else tuple(op for op in ops if sweep.torch_has(op))

    def __enter__(self):
        self.before = {op: (regen_device.native_calls(op), regen_device.fallback_calls(op)) for op in self.ops}
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            for op, (native, fallback) in self.before.items():
                served = regen_device.fallback_calls(op) - fallback
                assert not served, f"{op} left the device: the CPU fallback served it {served} time(s)"
                assert regen_device.native_calls(op) > native, f"{op} did not run natively"


class no_cpu_copy:
    """Asserts that no tensor was copied to CPU inside the block (the CPU fallback's `_to_cpu`)."""

    def __enter__(self):
        self.prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
        self.prof.__enter__()

    def __exit__(self, *exc):
        self.prof.__exit__(*exc)
        if exc[0] is None:
            # The CPU fallback copies an op's inputs with _to_cpu inside that op's own event.
            fell_back = sorted(
                {e.cpu_parent.name if e.cpu_parent else "?" for e in self.prof.events() if e.name == "aten::_to_cpu"}
            )
            assert not fell_back, f"ran on CPU through the fallback: {', '.join(fell_back)}"


# Unit roundoff of each floating dtype.
UNIT_ROUNDOFF = {torch.float32: 2.0**-24, torch.complex64: 2.0**-24, torch.float64: 2.0**-53,
                 torch.complex128: 2.0**-53, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}


def assert_sums_close(actual, expected, k, terms):
    """For sums whose order the CPU's BLAS library or vector width picks (MKL and oneDNN choose
    their kernels by vendor and instruction set): `actual` and `expected` are two roundings of
    sums of `k` terms whose absolute values add up to `terms` (per element, e.g. |A| @ |B|).
    Each is within k·u·terms of the exact sum in any order (u the dtype's unit roundoff), so
    they may lie 2·k·u·terms apart, plus one rounding of the result; never compared bit for bit."""
    actual, expected = actual.cpu(), expected.cpu()
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual, expected)
    wide = torch.complex128 if expected.is_complex() else torch.float64
    bound = (2 * k + 1) * UNIT_ROUNDOFF[expected.dtype] * terms.to(torch.float64).abs()
    diff = (actual.to(wide) - expected.to(wide)).abs()
    bad = ~(diff <= bound)
    assert not bad.any(), (
        f"{int(bad.sum())} of {bad.numel()} elements differ by more than 2·{k}·u·sum|terms|: "
        f"{actual[bad][:4].tolist()} vs CPU {expected[bad][:4].tolist()}, bounds {bound[bad][:4].tolist()}")


# Imported here, with the helper that needs them, so that the helper stays one appended block.
import contextlib  # noqa: E402
import gc  # noqa: E402
import threading  # noqa: E402

_ALLOCATOR_READERS = threading.Lock()


@contextlib.contextmanager
def steady_allocator():
    """For a test that reads the allocator's process-wide counters (memory_allocated, bytes_in_use,
    the peak) and compares them with its own allocations. Under pytest-xdist (-n) each worker is
    a process with its own allocator, so workers cannot disturb each other; inside one process two
    things can: device tensors of earlier tests held in reference cycles, freed whenever the
    cyclic collector happens to run (any allocation can start it), and another thread's test, under
    runners that run tests in threads (pytest-run-parallel, free-threaded builds). So: collect the
    garbage first and keep the collector off until the block ends, and hold a lock that every such
    block shares, so two counter-reading tests never overlap."""
    with _ALLOCATOR_READERS:
        gc.collect()
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if was_enabled:
                gc.enable()
