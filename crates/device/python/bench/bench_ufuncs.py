"""Times every unary and binary ufunc of PyTorch's OpInfo database (and the activations and
pointwise ops networks use) on the device against PyTorch's CPU kernels, in one dtype (a
benchmark, not a test), by bench_device.py's method: one process, device and CPU samples
alternating, the same torch thread count, median times and the ratio device/CPU.

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/bench/bench_ufuncs.py \\
        [--quick] [--threads N] [--only relu,hypot] [--dtype float16] [--numel N]

bench_elementwise.py covers the rows networks use in three dtypes; this one covers every row the
OpInfo database has a ufunc for, so a row whose loop does not vectorise shows as an outlier: the
float16 rows compute sixteen lanes in registers unless crates/kernels/src/engine/dispatch.rs's
BUFFERED names them, and a row that branches per element is several times slower that way (it
found `special_i1e` 10x, `softshrink` and `angle` 20x before they were rewritten or listed).
"""

import argparse
import os
import sys
import warnings

import torch
import torch.nn.functional as F

import regen_device  # noqa: F401  (registers the device)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_device import run_table  # noqa: E402

# Ops beyond the ufunc lists, with their arguments after the input(s) `x` and `y`.
EXTRA = {
    "relu": lambda x, y: (F.relu, (x,)),
    "hardtanh": lambda x, y: (F.hardtanh, (x,)),
    "relu6": lambda x, y: (F.relu6, (x,)),
    "leaky_relu": lambda x, y: (F.leaky_relu, (x,)),
    "elu": lambda x, y: (F.elu, (x,)),
    "silu": lambda x, y: (F.silu, (x,)),
    "mish": lambda x, y: (F.mish, (x,)),
    "softplus": lambda x, y: (F.softplus, (x,)),
    "logsigmoid": lambda x, y: (F.logsigmoid, (x,)),
    "hardsigmoid": lambda x, y: (F.hardsigmoid, (x,)),
    "hardswish": lambda x, y: (F.hardswish, (x,)),
    "hardshrink": lambda x, y: (F.hardshrink, (x,)),
    "softshrink": lambda x, y: (F.softshrink, (x,)),
    "threshold": lambda x, y: (F.threshold, (x, 0.5, 0.0)),
    "clamp": lambda x, y: (torch.clamp, (x, -1.0, 1.0)),
    "lerp": lambda x, y: (torch.lerp, (x, y, 0.3)),
    "addcmul": lambda x, y: (torch.addcmul, (x, y, y)),
    "addcdiv": lambda x, y: (torch.addcdiv, (x, y, y)),
    "where": lambda x, y: (torch.where, (x > 0, x, y)),
}

# Functions defined on (-1, 1) only: on randn * 3 three quarters of their lanes would be NaN (and
# erfinv on it looked 0.33 of CPU where over its domain it was 1.35), so they get erf(x / (3
# sqrt 2)), uniform on (-1, 1). (erfinv's rare tail |x| > 0.9966 costs more: on tanh(x / 2),
# with 3% of lanes there, erfinv measured 1.27 where uniform inputs give 0.92.)
UNIT_DOMAIN = {"erfinv", "asin", "acos", "atanh"}


def main_cases(dtype, numel):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal.common_methods_invocations import binary_ufuncs, unary_ufuncs

    side = int(numel ** 0.5)
    g = torch.Generator().manual_seed(0)
    base = torch.randn(side, side, generator=g) * 3
    other = torch.randn(side, side, generator=g) * 3
    short = str(dtype).removeprefix("torch.")
    ops = {}
    for op in unary_ufuncs:
        if dtype in op.supported_dtypes("cpu"):
            ops.setdefault(op.name, lambda x, y, f=op.op: (f, (x,)))
    for op in binary_ufuncs:
        if dtype in op.supported_dtypes("cpu"):
            ops.setdefault(op.name, lambda x, y, f=op.op: (f, (x, y)))
    ops.update(EXTRA)

    def cases():
        for layout in ("contiguous", "strided"):
            for name, build in ops.items():
                def make(d, name=name):
                    unit = name.removeprefix("_refs.").removeprefix("special.") in UNIT_DOMAIN
                    x, y = (t.to(dtype=dtype, device=d, copy=True) for t in (base, other))
                    if unit:
                        x, y = (torch.erf(t / (3 * 2**0.5)) for t in (x, y))
                    return (x.t(), y.t()) if layout == "strided" else (x, y)
                try:
                    for d in ("cpu", "regen"):
                        f, args = build(*make(d))
                        f(*args)
                except Exception:  # noqa: BLE001 (an op either side refuses for these inputs is skipped)
                    continue
                yield (f"{name} {short} {layout}", lambda d, make=make, build=build: build(*make(d)),
                       lambda fa: fa[0](*fa[1]))
    return cases


def main():
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--dtype", default="float16")
    parser.add_argument("--numel", type=int, default=1 << 20)
    known, rest = parser.parse_known_args()
    sys.argv = [sys.argv[0], *rest]
    run_table(__doc__, main_cases(getattr(torch, known.dtype), known.numel), width=44)


if __name__ == "__main__":
    main()
