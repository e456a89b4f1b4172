"""Convolutions of the regen device (kernels/conv.rs: unfold + GEMM) against PyTorch's CPU
kernels (oneDNN for float32), a benchmark, not a test, with bench_device.py's method: ONE
process, device and CPU samples alternating, the same torch thread count, medians and their ratio
device/CPU (goal: within 1.5x at 1 and 2 threads).

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/bench/bench_conv.py [--quick] [--threads N]

On busy cores PyTorch's OpenMP threads slow down, which flatters the device: numbers taken on a
loaded machine are indicative only (the script prints the load average and a busy probe).
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F

import regen_device  # noqa: F401  (registers the device)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_device import busy_probe, measure  # noqa: E402

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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads(N) first (default: torch's own)")
    parser.add_argument("--only", help="comma-separated substrings of the case names to run")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    budget, max_repeat = (0.2, 10) if args.quick else (1.0, 50)
    probes = [busy_probe(), busy_probe()]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} torch threads for CPU and device "
          f"({os.cpu_count()} cores), load average {os.getloadavg()[0]:.2f}, "
          f"busy probe {probes[0] * 1e3:.1f}/{probes[1] * 1e3:.1f} ms")
    print(f"{'case':<32}{'regen ms':>11}{'cpu ms':>11}{'ratio':>8}{'reps':>6}")
    for name, make, fn in cases():
        if args.only and not any(s in name for s in args.only.split(",")):
            continue
        dev_in, cpu_in = make("regen"), make("cpu")
        dev, cpu, repeat = measure(lambda: fn(dev_in), lambda: fn(cpu_in), budget, max_repeat)
        print(f"{name:<32}{dev * 1e3:>11.3f}{cpu * 1e3:>11.3f}{dev / cpu:>8.2f}{repeat:>6}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
