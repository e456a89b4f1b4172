"""What the device's test files share: inputs made the same way on every run, and the
native-call counter and the profiler check that keep a CPU fallback from passing as a native kernel."""

from pathlib import Path

import torch

import regen_device

# The installed torch as (major, minor), and whether it is the release the device is pinned to
# (crates/device/torch-version): the device's kernels follow CPU of that release.
RELEASE = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
PINNED = (Path(__file__).resolve().parents[2] / "torch-version").read_text().strip() == torch.__version__.split("+")[0]


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
    """Asserts that the native kernel of `op` (a regen.toml key, e.g. "sum.IntList_out") ran inside
    the block."""

    def __init__(self, op):
        self.op = op

    def __enter__(self):
        self.before = regen_device.native_calls(self.op)

    def __exit__(self, *exc):
        if exc[0] is None:
            assert regen_device.native_calls(self.op) > self.before, f"{self.op} did not run natively"


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
