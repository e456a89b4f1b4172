"""Shape, copy and sorting ops of the regen device against PyTorch's CPU kernels (a benchmark,
not a test), with bench_device.py's method: ONE process, device and CPU samples alternating,
the same torch thread count, medians and their ratio device/CPU (goal: within 1.3x).

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/bench/bench_shape.py [--quick] [--threads N]

On busy cores PyTorch's OpenMP threads slow down, which flatters the device: numbers taken on a
loaded machine are indicative only (the script prints the load average).
"""

import os
import sys

import torch

import regen_device  # noqa: F401  (registers the device)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_device import run_table  # noqa: E402


def cases():
    g = torch.Generator().manual_seed(0)
    mats = [torch.randn(256, 1024, generator=g) for _ in range(8)]
    big = torch.randn(2048, 2048, generator=g)
    vec = torch.randn(1 << 20, generator=g)
    rows = torch.randn(1024, 1024, generator=g)
    ties = torch.randint(0, 16, (1024, 1024), generator=g)
    out = [
        ("cat 8x256x1024 dim0", lambda d: [m.to(d) for m in mats], lambda ms: torch.cat(ms, 0)),
        ("cat 8x256x1024 dim1", lambda d: [m.to(d) for m in mats], lambda ms: torch.cat(ms, 1)),
        ("clone 2048² transposed", lambda d: big.to(d).t(), lambda x: x.clone()),
        ("contiguous 2048² transposed", lambda d: big.to(d).t(), lambda x: x.contiguous()),
        ("clone 2048² contiguous", lambda d: big.to(d), lambda x: x.clone()),
        ("flip 2048² dim0", lambda d: big.to(d), lambda x: x.flip(0)),
        ("flip 2048² dim1", lambda d: big.to(d), lambda x: x.flip(1)),
        ("roll 2048² dim1", lambda d: big.to(d), lambda x: x.roll(7, 1)),
        ("tril 2048²", lambda d: big.to(d), lambda x: x.tril()),
        ("sort 1M f32", lambda d: vec.to(d), lambda x: x.sort()),
        ("sort rows 1024²", lambda d: rows.to(d), lambda x: x.sort(dim=1)),
        ("topk 1M k=100", lambda d: vec.to(d), lambda x: x.topk(100)),
        ("topk rows 1024² k=10", lambda d: rows.to(d), lambda x: x.topk(10, dim=1)),
        ("topk rows 1024² k=100", lambda d: rows.to(d), lambda x: x.topk(100, dim=1)),
        ("sort rows 1024² i64 ties", lambda d: ties.to(d), lambda x: x.sort(dim=1)),
        ("topk rows 1024² i64 ties k=10", lambda d: ties.to(d), lambda x: x.topk(10, dim=1)),
        ("kthvalue rows 1024² k=512", lambda d: rows.to(d), lambda x: x.kthvalue(512, dim=1)),
        ("median rows 1024²", lambda d: rows.to(d), lambda x: x.median(dim=1)),
        ("mode rows 1024² i64 ties", lambda d: ties.to(d), lambda x: x.mode(dim=1)),
    ]
    return out


def main():
    run_table(__doc__, cases)


if __name__ == "__main__":
    main()
