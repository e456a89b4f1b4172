"""Compares the regen device's pooling and nll_loss (crates/kernels/src/ops/pool.rs, crates/kernels/src/ops/loss.rs) with
PyTorch's CPU kernels (a benchmark, not a test), by bench_device.py's method.

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/bench/bench_pool.py [--quick] [--threads N]

One process; device and CPU samples alternate in blocks (so a change in machine load hits both alike), with
the same torch thread count (the device's kernels run on PyTorch's own intra-op pool). Prints the
median time of each side and the ratio device/CPU (goal: max_pool2d within 1.5x). Operands:
float32 batches of 32x64x56x56 (a ResNet stem's max pool, 3x3 stride 2 padding 1, forward and
forward+backward, also channels-last) and 8x16x28x28, avg_pool2d and adaptive_avg_pool2d on the
large batch, and cross_entropy over 4096x1000 logits.
"""

import os
import sys

import torch
import torch.nn.functional as F

import regen_device  # noqa: F401  (registers the device)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_device import run_table  # noqa: E402


def cases():
    g = torch.Generator().manual_seed(0)
    big = torch.randn(32, 64, 56, 56, generator=g)
    small = torch.randn(8, 16, 28, 28, generator=g)
    logits = torch.randn(4096, 1000, generator=g)
    labels = torch.randint(0, 1000, (4096,), generator=g)

    def on(t, fn, grad=False, fmt=torch.contiguous_format):
        def make(d):
            x = t.to(d).contiguous(memory_format=fmt)
            if grad:
                x.requires_grad_()
            return lambda: fn(x)
        return make

    def fwd_bwd(fn):
        return lambda x: fn(x).sum().backward()

    mp = lambda x: F.max_pool2d(x, 3, 2, 1)  # noqa: E731
    return [
        ("max_pool2d 32x64x56² k3s2p1", on(big, mp)),
        ("max_pool2d fwd+bwd", on(big, fwd_bwd(mp), grad=True)),
        ("max_pool2d channels_last", on(big, mp, fmt=torch.channels_last)),
        ("max_pool2d 8x16x28²", on(small, mp)),
        ("max_pool2d 8x16x28² fwd+bwd", on(small, fwd_bwd(mp), grad=True)),
        ("avg_pool2d 32x64x56² k3s2p1", on(big, lambda x: F.avg_pool2d(x, 3, 2, 1))),
        ("adaptive_avg_pool2d 7x7", on(big, lambda x: F.adaptive_avg_pool2d(x, 7))),
        ("cross_entropy 4096x1000 f+b", lambda d: (lambda x=logits.to(d).requires_grad_(), t=labels.to(d):
                                                   F.cross_entropy(x, t).backward())),
    ]


def main():
    run_table(__doc__, lambda: ((name, make, lambda f: f()) for name, make in cases()))


if __name__ == "__main__":
    main()
