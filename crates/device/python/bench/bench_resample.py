"""Compares the regen device's resampling (crates/kernels/src/ops/resample.rs) with PyTorch's CPU kernels (a
benchmark, not a test), by bench_device.py's method.

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/bench/bench_resample.py [--quick] [--threads N]

One process; device and CPU samples alternate in blocks (so a change in machine load hits both alike), with
the same torch thread count (the device's kernels run on PyTorch's own intra-op pool). Prints the
median time of each side and the ratio device/CPU. Operands: float32 8x32x64x64 images (bilinear,
bicubic and nearest 2x upsampling forward and forward+backward, contiguous and channels-last;
reflection_pad2d by 3 forward and forward+backward) and grid_sample bilinear of the same images on
a 64x64 grid; antialiased bilinear downsampling (crates/kernels/src/ops/resample_aa.rs) of the same images to
24x24, and of uint8 8x3x256x256 photographs to 96x96 (CPU's AVX2 fixed-point kernel for up to 4
channels), also channels-last.
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
    img = torch.randn(8, 32, 64, 64, generator=g)
    grid = torch.rand(8, 64, 64, 2, generator=g) * 2.2 - 1.1

    def on(t, fn, grad=False, fmt=torch.contiguous_format, extra=None):
        def make(d):
            x = t.to(d).contiguous(memory_format=fmt)
            if grad:
                x.requires_grad_()
            if extra is None:
                return lambda: fn(x)
            e = extra.to(d)
            if grad:
                e.requires_grad_()
            return lambda: fn(x, e)
        return make

    def fwd_bwd(fn):
        return lambda *a: fn(*a).sum().backward()

    up = lambda x: F.interpolate(x, scale_factor=2, mode="bilinear")  # noqa: E731
    cub = lambda x: F.interpolate(x, scale_factor=2, mode="bicubic")  # noqa: E731
    near = lambda x: F.interpolate(x, scale_factor=2, mode="nearest")  # noqa: E731
    cl = torch.channels_last
    pad = lambda x: F.pad(x, (3, 3, 3, 3), mode="reflect")  # noqa: E731
    photo = torch.randint(0, 256, (8, 3, 256, 256), generator=g, dtype=torch.uint8)

    def aa(n):
        return lambda x: F.interpolate(x, size=(n, n), mode="bilinear", antialias=True)

    gs = lambda x, gr: F.grid_sample(x, gr, mode="bilinear", align_corners=False)  # noqa: E731
    return [
        ("bilinear 2x 8x32x64²", on(img, up)),
        ("bilinear 2x fwd+bwd", on(img, fwd_bwd(up), grad=True)),
        ("bilinear 2x channels_last", on(img, up, fmt=cl)),
        ("bilinear 2x ch_last fwd+bwd", on(img, fwd_bwd(up), grad=True, fmt=cl)),
        ("bicubic 2x", on(img, cub)),
        ("bicubic 2x fwd+bwd", on(img, fwd_bwd(cub), grad=True)),
        ("bicubic 2x channels_last", on(img, cub, fmt=cl)),
        ("bicubic 2x ch_last fwd+bwd", on(img, fwd_bwd(cub), grad=True, fmt=cl)),
        ("nearest 2x", on(img, near)),
        ("nearest 2x fwd+bwd", on(img, fwd_bwd(near), grad=True)),
        ("nearest 2x channels_last", on(img, near, fmt=cl)),
        ("nearest 2x ch_last fwd+bwd", on(img, fwd_bwd(near), grad=True, fmt=cl)),
        ("reflection_pad2d 3", on(img, pad)),
        ("reflection_pad2d fwd+bwd", on(img, fwd_bwd(pad), grad=True)),
        ("grid_sample bilinear 64²", on(img, gs, extra=grid)),
        ("grid_sample fwd+bwd", on(img, fwd_bwd(gs), grad=True, extra=grid)),
        ("aa bilinear 64²->24² float32", on(img, aa(24))),
        ("aa bilinear 64²->24² fwd+bwd", on(img, fwd_bwd(aa(24)), grad=True)),
        ("aa bilinear 256²->96² uint8 8x3", on(photo, aa(96))),
        ("aa bilinear uint8 channels_last", on(photo, aa(96), fmt=torch.channels_last)),
    ]


def main():
    run_table(__doc__, lambda: ((name, make, lambda f: f()) for name, make in cases()))


if __name__ == "__main__":
    main()
