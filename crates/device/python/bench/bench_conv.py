"""Convolutions of the regen device (crates/kernels/src/ops/conv.rs: unfold + GEMM) against PyTorch's CPU
kernels (oneDNN for float32), a benchmark, not a test, with bench_device.py's method: ONE
process, device and CPU samples alternating, the same torch thread count, medians and their ratio
device/CPU (goal: within 1.5x at 1 and 2 threads).

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/bench/bench_conv.py [--quick] [--threads N]
        [--only resnet]   (the convolutions of bench_models.py's ResNet-18 step, by layer)

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
    # Every distinct convolution of bench_models.py's ResNet-18 step (batch 4, 64x64 input), so
    # `--only resnet` splits that step's convolution time by layer.
    ("resnet conv1 4x3->64 64² k7 s2", (4, 3, 64, 64), (64, 3, 7, 7), dict(stride=2, padding=3)),
    ("resnet layer1 4x64->64 16² k3", (4, 64, 16, 16), (64, 64, 3, 3), dict(padding=1)),
    ("resnet layer2 4x64->128 16² k3 s2", (4, 64, 16, 16), (128, 64, 3, 3), dict(stride=2, padding=1)),
    ("resnet layer2 4x64->128 16² 1x1 s2", (4, 64, 16, 16), (128, 64, 1, 1), dict(stride=2)),
    ("resnet layer2 4x128->128 8² k3", (4, 128, 8, 8), (128, 128, 3, 3), dict(padding=1)),
    ("resnet layer3 4x128->256 8² k3 s2", (4, 128, 8, 8), (256, 128, 3, 3), dict(stride=2, padding=1)),
    ("resnet layer3 4x128->256 8² 1x1 s2", (4, 128, 8, 8), (256, 128, 1, 1), dict(stride=2)),
    ("resnet layer3 4x256->256 4² k3", (4, 256, 4, 4), (256, 256, 3, 3), dict(padding=1)),
    ("resnet layer4 4x256->512 4² k3 s2", (4, 256, 4, 4), (512, 256, 3, 3), dict(stride=2, padding=1)),
    ("resnet layer4 4x256->512 4² 1x1 s2", (4, 256, 4, 4), (512, 256, 1, 1), dict(stride=2)),
    ("resnet layer4 4x512->512 2² k3", (4, 512, 2, 2), (512, 512, 3, 3), dict(padding=1)),
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
