"""Compares the regen device with PyTorch's CPU kernels (a benchmark, not a test).

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/bench/bench_device.py [--quick]

Prints, per op, layout and size, the median time of the device and of CPU and their ratio
device/CPU (the goal is 1.1-1.3x of CPU). Everything runs in ONE process: device and CPU samples
alternate in blocks (so a change in machine load hits both sides alike; see SETTLE for why not
one by one), with the same torch thread count (printed). torch's CPU kernels use its intra-op
(OpenMP) threads, the regen kernels the runtime's pool of as many threads, and ops without a Rust
kernel run on CPU through the fallback plus copies.

Layouts: "contiguous" (two contiguous matrices), "broadcast" (a matrix against a row vector; for
unary ops and sum the input is the row vector expanded to the matrix, stride 0) and
"transposed" (transposed matrices, not contiguous). Sizes: 1K, 64K and 4M float32 elements.

PyTorch's OpenMP threads slow down 5-8x when the cores are busy (spin-waiting barriers), which
flatters the device: the script warns when the machine looks busy; take such numbers as
indicative only.
"""

import argparse
import math
import os
import statistics
import time

import torch

import regen_device  # noqa: F401  (registers the device)

SIZES = {"1K": (32, 32), "64K": (256, 256), "4M": (2048, 2048)}
LAYOUTS = ("contiguous", "broadcast", "transposed")

ELEMENTWISE = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "exp": lambda a, b: a.exp(),
    "tanh": lambda a, b: a.tanh(),
    "sigmoid": lambda a, b: a.sigmoid(),
    "where": lambda a, b: torch.where(a > 0, a, b),
    "sum": lambda a, b: a.sum(),
}
BINARY = {"add", "mul", "where"}


def operands(op, layout, shape, device):
    """The two operands of `op` in `layout`, made on CPU (same values on both sides)."""
    g = torch.Generator().manual_seed(0)
    rows, cols = shape
    if layout == "contiguous":
        a, b = torch.randn(rows, cols, generator=g), torch.randn(rows, cols, generator=g)
        return a.to(device), b.to(device)
    if layout == "transposed":
        a, b = torch.randn(cols, rows, generator=g), torch.randn(cols, rows, generator=g)
        return a.to(device).t(), b.to(device).t()
    row = torch.randn(1, cols, generator=g).to(device)
    matrix = torch.randn(rows, cols, generator=g).to(device)
    if op in BINARY:
        return matrix, row
    return row.expand(rows, cols), None


def busy_probe():
    """Wall time of a fixed workload that uses torch's intra-op threads."""
    x = torch.ones(1 << 20)
    start = time.perf_counter()
    for _ in range(200):
        x = x * 1.0000001
    return time.perf_counter() - start


# Untimed runs of a side before its block of samples: the other side's idle workers spin after
# their last parallel loop (CPU's OpenMP team for 2-5 ms, the runtime's pool 0.3 ms) and took a
# core from this side's first samples. At 2 threads on 2 cores a device exp of 1M floats took
# 315-880 us right after a CPU op against 158 us after a device op, when samples alternated one
# by one.
SETTLE = 0.02


def measure(dev_fn, cpu_fn, budget, max_repeat):
    """Median device and CPU times (s), in blocks alternating device, CPU, CPU, device, ... (so a
    change in machine load hits both sides alike), each block after SETTLE s of untimed runs."""
    for _ in range(3):  # warm-up: allocator caches, lazy initialisation
        dev_fn()
        cpu_fn()
    start = time.perf_counter()
    dev_fn()
    once = max(time.perf_counter() - start, 1e-7)
    repeat = int(min(max_repeat, max(5, budget / once)))
    blocks = min(4, repeat)
    dev, cpu = [], []
    for b in range(blocks):
        order = ((dev_fn, dev), (cpu_fn, cpu)) if b % 2 == 0 else ((cpu_fn, cpu), (dev_fn, dev))
        for fn, samples in order:
            settle = time.perf_counter() + SETTLE
            fn()
            while time.perf_counter() < settle:
                fn()
            for _ in range(repeat * (b + 1) // blocks - repeat * b // blocks):
                start = time.perf_counter()
                fn()
                samples.append(time.perf_counter() - start)
    return statistics.median(dev), statistics.median(cpu), repeat


def print_header(threads):
    """The head of a benchmark report: torch, `threads` (the thread counts in words), the cores,
    the load average and two runs of the busy probe; then a warning when the machine looks busy
    (a load above 0.5 or probes 20% apart), whose ratios are indicative only."""
    load = os.getloadavg()[0]
    probes = [busy_probe(), busy_probe()]
    print(f"torch {torch.__version__}, {threads} ({os.cpu_count()} cores), load average {load:.2f}, "
          f"busy probe {probes[0] * 1e3:.1f}/{probes[1] * 1e3:.1f} ms")
    if load > 0.5 or abs(probes[0] - probes[1]) / min(probes) > 0.2:
        print("WARNING: the machine looks busy; take the ratios as indicative only")


def run_table(doc, cases, quick=(0.1, 30), full=(0.5, 200), width=30):
    """The main of a benchmark script: its flags (--quick, --threads, --only), a header with the
    machine's load, and one line per case. `cases()` yields (name, make, fn): the device's and
    CPU's inputs are `make("regen")` and `make("cpu")`, a sample runs `fn(inputs)`."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads(N) first (default: torch's own)")
    parser.add_argument("--only", help="comma-separated substrings of the case names to run")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    budget, max_repeat = quick if args.quick else full
    print_header(f"{torch.get_num_threads()} torch threads for CPU and device")
    print(f"{'case':<{width}}{'regen ms':>11}{'cpu ms':>11}{'ratio':>8}{'reps':>6}")
    ratios = []
    for name, make, fn in cases():
        if args.only and not any(s in name for s in args.only.split(",")):
            continue
        dev_in, cpu_in = make("regen"), make("cpu")
        dev, cpu, repeat = measure(lambda: fn(dev_in), lambda: fn(cpu_in), budget, max_repeat)
        ratios.append(dev / cpu)
        print(f"{name:<{width}}{dev * 1e3:>11.3f}{cpu * 1e3:>11.3f}{dev / cpu:>8.2f}{repeat:>6}", flush=True)
    if ratios:
        geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        above = sum(r > 1.2 for r in ratios)
        print(f"{len(ratios)} cases: geomean device/CPU {geomean:.2f}, {above} above 1.2")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no 4M elements, no 1024² mm")
    parser.add_argument("--threads", type=int, help="torch.set_num_threads(N) first (default: torch's own)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    budget, max_repeat = (0.05, 50) if args.quick else (0.3, 500)
    sizes = {k: v for k, v in SIZES.items() if not (args.quick and k == "4M")}

    threads = torch.get_num_threads()
    load = os.getloadavg()[0]
    busy_probe()
    probes = [busy_probe(), busy_probe()]
    print(f"torch {torch.__version__}, {threads} torch threads for CPU and device "
          f"({os.cpu_count()} cores), load average {load:.2f}")
    warnings = []

    def check_busy(when):
        spread = abs(probes[-1] - probes[-2]) / min(probes[-2:])
        if spread > 0.2:
            warnings.append(f"{when}: a fixed warm-up loop took {probes[-2] * 1e3:.1f} and {probes[-1] * 1e3:.1f} ms "
                            f"({spread:.0%} apart)")

    check_busy("before")
    if load > 0.5:
        warnings.append(f"before: load average {load:.2f} > 0.5")
    for w in warnings:
        print(f"WARNING: machine looks busy: {w}")

    cases = []
    for op in ELEMENTWISE:
        for layout in LAYOUTS:
            for size, shape in sizes.items():
                name = "mul-broadcast" if (op, layout) == ("mul", "broadcast") else op
                cases.append((name, layout, size, op, shape))
    for side in (256, 1024):
        if not (args.quick and side == 1024):
            cases.append(("mm", "contiguous", f"{side}²", "mm", (side, side)))
    cases.append(("add-1elem", "contiguous", "1", "add1", (1, 1)))

    print(f"{'op':<14}{'layout':<12}{'elements':>9}{'regen ms':>11}{'cpu ms':>11}{'ratio':>8}{'reps':>6}")
    for name, layout, size, op, shape in cases:
        fns = []
        for device in ("regen", "cpu"):
            if op == "mm":
                a, b = operands("mm", "contiguous", shape, device)
                fns.append(lambda a=a, b=b: a @ b)
            elif op == "add1":
                a, b = torch.randn(1).to(device), torch.randn(1).to(device)
                fns.append(lambda a=a, b=b: a + b)
            else:
                a, b = operands(op, layout, shape, device)
                fns.append(lambda a=a, b=b, f=ELEMENTWISE[op]: f(a, b))
        dev, cpu, repeat = measure(fns[0], fns[1], budget, max_repeat)
        print(f"{name:<14}{layout:<12}{size:>9}{dev * 1e3:>11.4f}{cpu * 1e3:>11.4f}{dev / cpu:>8.2f}{repeat:>6}", flush=True)

    probes.append(busy_probe())
    check_busy("after the table, against before")
    load_after = os.getloadavg()[0]
    if load_after > 0.5:
        warnings.append(f"after: load average {load_after:.2f} > 0.5")
    if warnings:
        print("WARNING: the machine looked busy; PyTorch's OpenMP threads slow down 5-8x on busy cores, "
              "which flatters the device. Take these ratios as indicative only:")
        for w in warnings:
            print(f"  - {w}")


if __name__ == "__main__":
    main()
