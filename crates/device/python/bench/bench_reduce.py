"""Compares the regen device's reductions and scans with PyTorch's CPU kernels (a benchmark, not
a test), by bench_device.py's method.

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/bench/bench_reduce.py [--quick] [--threads N] \\
        [--dtypes float32,bfloat16,float16]

One process; device and CPU samples alternate in blocks (so a change in machine load hits both alike), with
the same torch thread count (the device's kernels run on PyTorch's own intra-op pool). Prints the
median time of each side and the ratio device/CPU (goal: within 1.3x). Operands are a 2048x2048
matrix of each dtype (float32: 16 MiB), its transpose, and a row broadcast to it (stride 0).
(float16 sums ran at 9-14x CPU's time while this bench measured float32 only.)
"""

import argparse
import os
import sys

import torch

import regen_device  # noqa: F401  (registers the device)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_device import measure, print_header  # noqa: E402

N = 2048

CASES = [
    ("sum dim 0", "contiguous", lambda a: a.sum(0)),
    ("sum dim 1", "contiguous", lambda a: a.sum(1)),
    ("sum", "contiguous", lambda a: a.sum()),
    ("sum dim 0", "transposed", lambda a: a.sum(0)),
    ("sum", "transposed", lambda a: a.sum()),
    ("sum dim 0", "broadcast", lambda a: a.sum(0)),
    ("sum", "broadcast", lambda a: a.sum()),
    ("amax dim 0", "contiguous", lambda a: a.amax(0)),
    ("amax dim 1", "contiguous", lambda a: a.amax(1)),
    ("argmax dim 1", "contiguous", lambda a: a.argmax(1)),
    ("argmax dim 0", "contiguous", lambda a: a.argmax(0)),
    ("var dim 1", "contiguous", lambda a: a.var(1)),
    ("var dim 0", "contiguous", lambda a: a.var(0)),
    ("cumsum dim 1", "contiguous", lambda a: a.cumsum(1)),
    ("cumsum dim 0", "contiguous", lambda a: a.cumsum(0)),
]


def operand(layout, device, dtype):
    g = torch.Generator().manual_seed(0)
    if layout == "contiguous":
        return torch.randn(N, N, generator=g).to(device, dtype)
    if layout == "transposed":
        return torch.randn(N, N, generator=g).to(device, dtype).t()
    return torch.randn(1, N, generator=g).to(device, dtype).expand(N, N)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads(N) first (default: torch's own)")
    parser.add_argument("--dtypes", default="float32", help="comma-separated, e.g. float32,bfloat16,float16")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    budget, max_repeat = (0.05, 30) if args.quick else (0.3, 200)
    print_header(f"{torch.get_num_threads()} torch threads for CPU and device")
    print(f"{'op':<14}{'layout':<12}{'dtype':<10}{'regen ms':>11}{'cpu ms':>11}{'ratio':>8}{'reps':>6}")
    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        # Half-precision sums of 2048 elements differ from CPU's by their own rounding.
        tol = {"rtol": 1e-3, "atol": 1e-2} if dtype == torch.float32 else {"rtol": 2e-2, "atol": 1.0}
        for name, layout, fn in CASES:
            a_dev, a_cpu = operand(layout, "regen", dtype), operand(layout, "cpu", dtype)
            torch.testing.assert_close(fn(a_dev).cpu(), fn(a_cpu), **tol)
            dev, cpu, repeat = measure(lambda: fn(a_dev), lambda: fn(a_cpu), budget, max_repeat)
            print(
                f"{name:<14}{layout:<12}{dtype_name:<10}{dev * 1e3:>11.3f}{cpu * 1e3:>11.3f}{dev / cpu:>8.2f}{repeat:>6}",
                flush=True,
            )


if __name__ == "__main__":
    main()
