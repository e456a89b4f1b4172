"""Matrix products of the regen device (crates/kernels/src/ops/matmul.rs, the gemm crate) against PyTorch's CPU
kernels (MKL / oneDNN): a benchmark, not a test.

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/bench/bench_matmul.py [--quick] [--threads N] [--only NAME]

The method of bench_device.py: ONE process, device and CPU samples alternating (a change in
machine load hits both sides alike), the same torch thread count for both (the device's products
split over PyTorch's own intra-op pool), the median of each side and the ratio device/CPU (the
goal is 1.2x or better). Busy cores make the numbers indicative only; the script warns then.
"""

import argparse
import os
import sys

import torch

import regen_device  # noqa: F401  (registers the device)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_device import busy_probe, measure  # noqa: E402

def linear_fwd_bwd(x, w, b, g):
    """One training step of a linear layer: forward, then backward into all three leaves."""
    for t in (x, w, b):
        t.requires_grad_()
        t.grad = None
    torch.nn.functional.linear(x, w, b).backward(g)


def linear_backward_cpu(x, g, w):
    # What CPU's autograd computes for linear's three gradients (CPU has no linear_backward).
    return torch.mm(g, w), torch.mm(g.t(), x), g.sum(0)


# (name, dtype, shapes of the operands, function[, CPU function when the device runs another op])
CASES = [
    ("mm", torch.float32, [(512, 512), (512, 512)], lambda a, b: torch.mm(a, b)),
    ("mm", torch.float32, [(1024, 1024), (1024, 1024)], lambda a, b: torch.mm(a, b)),
    ("mm", torch.float64, [(512, 512), (512, 512)], lambda a, b: torch.mm(a, b)),
    ("mm a.t()", torch.float32, [(512, 512), (512, 512)], lambda a, b: torch.mm(a.t(), b)),
    ("addmm", torch.float32, [(512,), (512, 512), (512, 512)], lambda s, a, b: torch.addmm(s, a, b)),
    ("addmm", torch.float32, [(1024,), (1024, 1024), (1024, 1024)], lambda s, a, b: torch.addmm(s, a, b)),
    ("bmm", torch.float32, [(32, 128, 128), (32, 128, 128)], lambda a, b: torch.bmm(a, b)),
    ("bmm", torch.float32, [(8, 512, 512), (8, 512, 512)], lambda a, b: torch.bmm(a, b)),
    ("mv", torch.float32, [(1024, 1024), (1024,)], lambda a, b: torch.mv(a, b)),
    ("linear", torch.float32, [(256, 512), (1024, 512), (1024,)], lambda x, w, b: torch.nn.functional.linear(x, w, b)),
    ("linear f+b", torch.float32, [(1024, 1024), (1024, 1024), (1024,), (1024, 1024)], linear_fwd_bwd),
    ("linear_bwd", torch.float32, [(1024, 1024), (1024, 1024), (1024, 1024)],
     lambda x, g, w: torch.ops.aten.linear_backward(x, g, w, [True, True, True]), linear_backward_cpu),
]
QUICK = {0, 2, 4, 6}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats and cases")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads(N) first (default: torch's own)")
    parser.add_argument("--only", help="only the cases whose name starts with this (e.g. 'linear')")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    budget, max_repeat = (0.2, 20) if args.quick else (1.0, 200)
    threads = torch.get_num_threads()
    load = os.getloadavg()[0]
    busy_probe()
    print(f"torch {torch.__version__}, {threads} torch threads for CPU and device ({os.cpu_count()} cores), "
          f"load average {load:.2f}")
    if load > 0.5:
        print(f"WARNING: machine looks busy (load average {load:.2f}); take the ratios as indicative only")
    print(f"{'op':<12}{'dtype':<9}{'shapes':<32}{'regen ms':>10}{'cpu ms':>10}{'ratio':>7}{'reps':>6}")
    g = torch.Generator().manual_seed(0)
    for i, (name, dtype, shapes, f, *cpu_f) in enumerate(CASES):
        if (args.quick and i not in QUICK) or (args.only and not name.startswith(args.only)):
            continue
        cpu = [torch.randn(s, generator=g, dtype=dtype) for s in shapes]
        dev = [t.to("regen") for t in cpu]
        fc = cpu_f[0] if cpu_f else f
        dev_t, cpu_t, repeat = measure(lambda: f(*dev), lambda: fc(*cpu), budget, max_repeat)
        shape_text = " ".join("x".join(map(str, s)) for s in shapes)
        print(f"{name:<12}{str(dtype)[6:]:<9}{shape_text:<32}{dev_t * 1e3:>10.3f}{cpu_t * 1e3:>10.3f}"
              f"{dev_t / cpu_t:>7.2f}{repeat:>6}", flush=True)
    load_after = os.getloadavg()[0]
    if load_after > 0.5:
        print(f"WARNING: load average {load_after:.2f} after the table: indicative numbers only")


if __name__ == "__main__":
    main()
