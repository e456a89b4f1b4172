"""Shape, copy and sorting ops of the regen device against PyTorch's CPU kernels (a benchmark,
not a test), with bench_device.py's method: ONE process, device and CPU samples alternating,
the same torch thread count, medians and their ratio device/CPU (goal: within 1.3x).

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/bench/bench_shape.py [--quick] [--threads N]

On busy cores PyTorch's OpenMP threads slow down, which flatters the device: numbers taken on a
loaded machine are indicative only (the script prints the load average).
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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads(N) first (default: torch's own)")
    parser.add_argument("--only", help="comma-separated substrings of the case names to run")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    budget, max_repeat = (0.1, 30) if args.quick else (0.5, 200)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} torch threads for CPU and device "
          f"({os.cpu_count()} cores), load average {os.getloadavg()[0]:.2f}")
    print(f"{'case':<30}{'regen ms':>11}{'cpu ms':>11}{'ratio':>8}{'reps':>6}")
    for name, make, fn in cases():
        if args.only and not any(s in name for s in args.only.split(",")):
            continue
        dev_in, cpu_in = make("regen"), make("cpu")
        dev, cpu, repeat = measure(lambda: fn(dev_in), lambda: fn(cpu_in), budget, max_repeat)
        print(f"{name:<30}{dev * 1e3:>11.3f}{cpu * 1e3:>11.3f}{dev / cpu:>8.2f}{repeat:>6}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
