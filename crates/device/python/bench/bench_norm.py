"""Compares the regen device's softmax, layer norm and batch norm (crates/kernels/src/ops/norm.rs) with PyTorch's
CPU kernels (a benchmark, not a test), by bench_device.py's method.

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/bench/bench_norm.py [--quick] [--threads N]

One process; device and CPU samples alternate in blocks (so a change in machine load hits both alike), with
the same torch thread count (the device's kernels run on PyTorch's own intra-op pool). Prints the
median time of each side and the ratio device/CPU (goal: within 1.3x for softmax, log_softmax and
layer_norm). Operands: a 2048x2048 float32 matrix (softmax along each dim), 8192x1024 float32
rows with a weight and bias of 1024 (layer_norm, forward, without them, and forward+backward), and a
32x64x32x32 float32 batch (batch_norm in training, with running statistics).
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
    sq = torch.randn(2048, 2048, generator=g)
    rows = torch.randn(8192, 1024, generator=g)
    w, b = torch.randn(1024, generator=g), torch.randn(1024, generator=g)
    grad = torch.randn(8192, 1024, generator=g)
    batch = torch.randn(32, 64, 32, 32, generator=g)

    def ln_backward(d):
        x = rows.to(d).requires_grad_()
        wd, bd = w.to(d).requires_grad_(), b.to(d).requires_grad_()
        gd = grad.to(d)
        return lambda: F.layer_norm(x, (1024,), wd, bd).backward(gd)

    def bn_train(d):
        x, rm, rv = batch.to(d), torch.zeros(64).to(d), torch.ones(64).to(d)
        bw, bb = torch.ones(64).to(d), torch.zeros(64).to(d)
        return lambda: F.batch_norm(x, rm, rv, bw, bb, training=True)

    def on(t, fn):
        return lambda d: (lambda x=t.to(d): fn(x))

    return [
        ("softmax 2048² dim 1", on(sq, lambda x: torch.softmax(x, 1))),
        ("softmax 2048² dim 0", on(sq, lambda x: torch.softmax(x, 0))),
        ("log_softmax 2048² dim 1", on(sq, lambda x: torch.log_softmax(x, 1))),
        ("log_softmax 2048² dim 0", on(sq, lambda x: torch.log_softmax(x, 0))),
        ("layer_norm 8192x1024", lambda d: (lambda x=rows.to(d), wd=w.to(d), bd=b.to(d): F.layer_norm(x, (1024,), wd, bd))),
        ("layer_norm no affine", on(rows, lambda x: F.layer_norm(x, (1024,)))),
        ("layer_norm fwd+bwd", ln_backward),
        ("batch_norm 32x64x32² train", bn_train),
    ]


def main():
    run_table(__doc__, lambda: ((name, make, lambda f: f()) for name, make in cases()))


if __name__ == "__main__":
    main()
