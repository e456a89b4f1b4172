"""Compares the regen device's indexing kernels with PyTorch's CPU kernels (a benchmark, not a test).

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/bench/bench_index.py [--quick] [--threads N]

Same method as bench_device.py: ONE process, device and CPU samples alternating, the same torch
thread count on both sides, the median of each and their ratio device/CPU (goal: within 1.3x).
Cases: index_select of 1024 rows of a 4096x1024 float32 matrix (dim 0), gather along dim 1 of a
2048x2048 float32 matrix, scatter_add of the same, boolean-mask indexing (x[mask], half the
elements of 2048x2048), advanced indexing x[idx] (1024 rows of 4096x1024), torch.unique of 1M
int64 (100K distinct values) and of 1M float32 with inverse and counts, bincount of 1M int64 (1000
bins) without and with float32 weights, and histc of 1M float32 (100 bins). On busy cores
PyTorch's OpenMP threads slow down several times: take numbers from a busy machine as indicative.
"""

import argparse
import os
import sys

import torch

import regen_device  # noqa: F401  (registers the device)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_device import measure  # noqa: E402


def cases():
    g = torch.Generator().manual_seed(0)
    big = torch.randn(4096, 1024, generator=g)
    rows = torch.randint(0, 4096, (1024,), generator=g)
    square = torch.randn(2048, 2048, generator=g)
    gidx = torch.randint(0, 2048, (2048, 2048), generator=g)
    mask = torch.rand(2048, 2048, generator=g) > 0.5
    ints = torch.randint(0, 100_000, (1_000_000,), generator=g)
    floats = torch.randn(1_000_000, generator=g)
    small = torch.randint(0, 1000, (1_000_000,), generator=g)
    return [
        ("index_select", "4096x1024 dim0, 1024 rows", lambda x, i: torch.index_select(x, 0, i), (big, rows)),
        ("gather", "2048x2048 dim1", lambda x, i: torch.gather(x, 1, i), (square, gidx)),
        ("scatter_add", "2048x2048 dim1", lambda x, i: torch.zeros_like(x).scatter_add_(1, i, x), (square, gidx)),
        ("x[mask]", "2048x2048, half set", lambda x, m: x[m], (square, mask)),
        ("x[idx]", "4096x1024, 1024 rows", lambda x, i: x[i], (big, rows)),
        ("unique", "1M int64, 100K values", lambda x: torch.unique(x), (ints,)),
        ("unique inv+cnt", "1M float32", lambda x: torch.unique(x, return_inverse=True, return_counts=True), (floats,)),
        ("bincount", "1M int64, 1000 bins", lambda x: torch.bincount(x), (small,)),
        ("bincount w", "1M, float32 weights", lambda x, w: torch.bincount(x, w), (small, floats)),
        ("histc", "1M float32, 100 bins", lambda x: torch.histc(x), (floats,)),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads(N) first (default: torch's own)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    budget, max_repeat = (0.1, 30) if args.quick else (0.5, 200)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} torch threads for CPU and device "
          f"({os.cpu_count()} cores), load average {os.getloadavg()[0]:.2f}")
    print(f"{'op':<14}{'case':<28}{'regen ms':>11}{'cpu ms':>11}{'ratio':>8}{'reps':>6}")
    for name, what, fn, inputs in cases():
        dev_inputs = [t.to("regen") for t in inputs]
        dev, cpu, repeat = measure(lambda: fn(*dev_inputs), lambda: fn(*inputs), budget, max_repeat)
        print(f"{name:<14}{what:<28}{dev * 1e3:>11.3f}{cpu * 1e3:>11.3f}{dev / cpu:>8.2f}{repeat:>6}", flush=True)
    load = os.getloadavg()[0]
    if load > 0.5:
        print(f"WARNING: load average {load:.2f}: the machine is busy, take the ratios as indicative only")


if __name__ == "__main__":
    main()
