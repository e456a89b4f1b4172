"""Compares the regen device's random ops (crates/kernels/src/ops/random.rs) with PyTorch's CPU kernels (a
benchmark, not a test), by bench_device.py's method.

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/bench/bench_random.py [--quick] [--threads N]

One process; device and CPU samples alternate in blocks, with the same torch thread count. Prints the median
time of each side and the ratio device/CPU. Both sides draw serially from one locked generator
(CPU's random kernels are serial too), so thread counts change little. Operands: 1M-element
float32 tensors filled in place (uniform_, normal_, bernoulli_ with a tensor p, random_ on int64),
dropout of a 1024x1024 float32 matrix in training, and randperm(1M).
"""

import os
import sys

import torch
import torch.nn.functional as F

import regen_device  # noqa: F401  (registers the device)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_device import run_table  # noqa: E402

N = 1 << 20


def cases():
    p = torch.rand(N, generator=torch.Generator().manual_seed(0))
    x = torch.randn(1024, 1024, generator=torch.Generator().manual_seed(1))

    def filled(dtype, fn):
        return lambda d: (lambda t=torch.empty(N, dtype=dtype, device=d): fn(t))

    return [
        ("uniform_ 1M f32", filled(torch.float32, lambda t: t.uniform_())),
        ("normal_ 1M f32", filled(torch.float32, lambda t: t.normal_())),
        ("normal_ 1M f64", filled(torch.float64, lambda t: t.normal_())),
        ("random_ 1M i64 [0, 1000)", filled(torch.int64, lambda t: t.random_(0, 1000))),
        ("bernoulli_(p tensor) 1M", lambda d: (lambda t=torch.empty(N, device=d), pd=p.to(d): t.bernoulli_(pd))),
        ("exponential_ 1M f32", filled(torch.float32, lambda t: t.exponential_())),
        ("dropout 1024² train", lambda d: (lambda xd=x.to(d): F.dropout(xd, 0.5, training=True))),
        ("randperm 1M", lambda d: (lambda: torch.randperm(N, device=d))),
    ]


def main():
    run_table(__doc__, lambda: ((name, make, lambda f: f()) for name, make in cases()))


if __name__ == "__main__":
    main()
