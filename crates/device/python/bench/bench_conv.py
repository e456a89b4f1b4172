"""Convolutions of the regen device (crates/kernels/src/ops/conv.rs: unfold + GEMM) against PyTorch's CPU
kernels (oneDNN for float32), a benchmark, not a test, with bench_device.py's method: ONE
process, device and CPU samples alternating, the same torch thread count, medians and their ratio
device/CPU (goal: within 1.5x at 1 and 2 threads).

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/bench/bench_conv.py [--quick] [--threads N]

On busy cores PyTorch's OpenMP threads slow down, which flatters the device: numbers taken on a
loaded machine are indicative only (the script prints the load average and a busy probe).
"""

import os
import sys

import torch
import torch.nn.functional as F

import regen_device  # noqa: F401  (registers the device)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_device import run_table  # noqa: E402

# (name, input shape, weight shape, conv kwargs)
SHAPES = [
    ("16x3->32 64² k3", (16, 3, 64, 64), (32, 3, 3, 3), dict(padding=1)),
    ("16x32->64 32² k3", (16, 32, 32, 32), (64, 32, 3, 3), dict(padding=1)),
    ("16x64->64 32² 1x1", (16, 64, 32, 32), (64, 64, 1, 1), dict()),
    ("16x32->64 32² k3 s2", (16, 32, 32, 32), (64, 32, 3, 3), dict(stride=2, padding=1)),
    ("1x32->64 32² k3", (1, 32, 32, 32), (64, 32, 3, 3), dict(padding=1)),
]


def cases():
    g = torch.Generator().manual_seed(0)
    out = []
    for name, xs, ws, kw in SHAPES:
        x, w, b = torch.randn(xs, generator=g), torch.randn(ws, generator=g) * 0.1, torch.randn(ws[0], generator=g)

        def forward(d, x=x, w=w, b=b, kw=kw):
            return x.to(d), w.to(d), b.to(d), kw

        def backward(d, x=x, w=w, b=b, kw=kw):
            xd, wd, bd = (t.to(d).requires_grad_() for t in (x, w, b))
            y = F.conv2d(xd, wd, bd, **kw)
            return xd, wd, bd, kw, torch.ones_like(y)

        out.append((f"fwd {name}", forward, lambda a: F.conv2d(a[0], a[1], a[2], **a[3])))
        out.append((
            f"fwd+bwd {name}",
            backward,
            lambda a: torch.autograd.grad(F.conv2d(a[0], a[1], a[2], **a[3]), (a[0], a[1], a[2]), a[4]),
        ))
    return out


def main():
    run_table(__doc__, cases, quick=(0.2, 10), full=(1.0, 50), width=32)


if __name__ == "__main__":
    main()
