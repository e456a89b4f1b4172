"""Compares the regen device with PyTorch's CPU kernels (a benchmark, not a test).

Run after `cargo xtask e2e`:  .venv/bin/python crates/device/python/bench/bench_device.py
Prints, per op and size, the median time on each device and the ratio device/CPU
(the goal is 1.1-1.3x of CPU). Both sides run on this machine's cores; torch's CPU kernels
use its intra-op threads, the regen kernels one thread.
"""

import statistics
import time

import torch

import regen_device  # noqa: F401  (registers the device)


def timed(fn, repeat):
    for _ in range(5):  # warm-up: allocator caches, lazy initialisation
        fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main():
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print(f"{'op':<10}{'elements':>12}{'cpu ms':>12}{'regen ms':>12}{'ratio':>8}")
    cases = []
    for n in (1 << 20, 1 << 22, 1 << 24):
        cases += [("add", n), ("mul", n), ("sum", n)]
    for side in (256, 512, 1024):
        cases.append(("mm", side * side))
    cases.append(("add", 1))
    for op, n in cases:
        results = []
        for device in ("cpu", "regen"):
            if op == "mm":
                side = int(n**0.5)
                a = torch.randn(side, side).to(device)
                b = torch.randn(side, side).to(device)
                fn = lambda a=a, b=b: a @ b  # noqa: E731
            else:
                a = torch.randn(n).to(device)
                b = torch.randn(n).to(device)
                fn = {
                    "add": lambda a=a, b=b: a + b,
                    "mul": lambda a=a, b=b: a * b,
                    "sum": lambda a=a: a.sum(),
                }[op]
            repeat = 500 if n == 1 else (5 if op == "mm" and n >= 1 << 20 else 30)
            results.append(timed(fn, repeat))
        cpu, dev = results
        print(f"{op:<10}{n:>12}{cpu * 1e3:>12.3f}{dev * 1e3:>12.3f}{dev / cpu:>8.2f}")


if __name__ == "__main__":
    main()
