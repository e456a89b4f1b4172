"""Compares every elementwise row of the reference kernels with PyTorch's CPU kernels (a
benchmark, not a test), by bench_device.py's method: one process, device and CPU samples
alternating, the same torch thread count, median times and the ratio device/CPU.

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/bench/bench_elementwise.py \\
        [--quick] [--threads N] [--only relu,gelu] [--dtypes float32,bfloat16,float16] [--numel N]

Cases: each unary table row (crates/kernels/src/ops/unary.rs), the activations and the other
pointwise ops networks use (pointwise.rs, binary.rs), in float32, bfloat16 and float16; each out of
place and in place (`_` forms, which must write their input with no temporary), on a contiguous
1M-element tensor and on a transposed (strided) one. The issue's goal is 1.2 at 1 thread for every
row; the last line gives the geomean and how many cases are above 1.2.
"""

import argparse
import os
import sys

import torch
import torch.nn.functional as F

import regen_device  # noqa: F401  (registers the device)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_device import run_table  # noqa: E402

# name: (out-of-place, in-place or None, domain of the input: "any", "pos" (> 0) or "unit" (|x| < 1)).
UNARY = {
    "neg": (torch.neg, torch.Tensor.neg_, "any"),
    "abs": (torch.abs, torch.Tensor.abs_, "any"),
    "sign": (torch.sign, torch.Tensor.sign_, "any"),
    "exp": (torch.exp, torch.Tensor.exp_, "any"),
    "exp2": (torch.exp2, torch.Tensor.exp2_, "any"),
    "expm1": (torch.expm1, torch.Tensor.expm1_, "any"),
    "log": (torch.log, torch.Tensor.log_, "pos"),
    "log2": (torch.log2, torch.Tensor.log2_, "pos"),
    "log10": (torch.log10, torch.Tensor.log10_, "pos"),
    "log1p": (torch.log1p, torch.Tensor.log1p_, "pos"),
    "sqrt": (torch.sqrt, torch.Tensor.sqrt_, "pos"),
    "rsqrt": (torch.rsqrt, torch.Tensor.rsqrt_, "pos"),
    "reciprocal": (torch.reciprocal, torch.Tensor.reciprocal_, "pos"),
    "sin": (torch.sin, torch.Tensor.sin_, "any"),
    "cos": (torch.cos, torch.Tensor.cos_, "any"),
    "tan": (torch.tan, torch.Tensor.tan_, "unit"),
    "asin": (torch.asin, torch.Tensor.asin_, "unit"),
    "acos": (torch.acos, torch.Tensor.acos_, "unit"),
    "atan": (torch.atan, torch.Tensor.atan_, "any"),
    "sinh": (torch.sinh, torch.Tensor.sinh_, "any"),
    "cosh": (torch.cosh, torch.Tensor.cosh_, "any"),
    "tanh": (torch.tanh, torch.Tensor.tanh_, "any"),
    "asinh": (torch.asinh, torch.Tensor.asinh_, "any"),
    "atanh": (torch.atanh, torch.Tensor.atanh_, "unit"),
    "sigmoid": (torch.sigmoid, torch.Tensor.sigmoid_, "any"),
    "erf": (torch.erf, torch.Tensor.erf_, "any"),
    "erfc": (torch.erfc, torch.Tensor.erfc_, "any"),
    "ceil": (torch.ceil, torch.Tensor.ceil_, "any"),
    "floor": (torch.floor, torch.Tensor.floor_, "any"),
    "round": (torch.round, torch.Tensor.round_, "any"),
    "trunc": (torch.trunc, torch.Tensor.trunc_, "any"),
    "frac": (torch.frac, torch.Tensor.frac_, "any"),
    "square": (torch.square, torch.Tensor.square_, "any"),
    "relu": (torch.relu, torch.relu_, "any"),
    "gelu": (F.gelu, None, "any"),
    "gelu tanh": (lambda x: F.gelu(x, approximate="tanh"), None, "any"),
    "silu": (F.silu, lambda x: F.silu(x, inplace=True), "any"),
    "mish": (F.mish, lambda x: F.mish(x, inplace=True), "any"),
    "softplus": (F.softplus, None, "any"),
    "logsigmoid": (F.logsigmoid, None, "any"),
    "elu": (F.elu, F.elu_, "any"),
    "leaky_relu": (F.leaky_relu, F.leaky_relu_, "any"),
    "hardtanh": (F.hardtanh, F.hardtanh_, "any"),
    "hardsigmoid": (F.hardsigmoid, lambda x: F.hardsigmoid(x, inplace=True), "any"),
    "hardswish": (F.hardswish, lambda x: F.hardswish(x, inplace=True), "any"),
    "clamp": (lambda x: x.clamp(-0.5, 0.5), lambda x: x.clamp_(-0.5, 0.5), "any"),
    "add scalar": (lambda x: x + 1.5, lambda x: x.add_(1.5), "any"),
    "mul scalar": (lambda x: x * 1.5, lambda x: x.mul_(1.5), "any"),
    "pow 2.5": (lambda x: x.pow(2.5), lambda x: x.pow_(2.5), "pos"),
}
# name: (out-of-place, in-place), on two (or three) operands of one shape.
BINARY = {
    "add": (torch.add, torch.Tensor.add_),
    "sub": (torch.sub, torch.Tensor.sub_),
    "mul": (torch.mul, torch.Tensor.mul_),
    "div": (torch.div, torch.Tensor.div_),
    "maximum": (torch.maximum, None),
    "atan2": (torch.atan2, torch.Tensor.atan2_),
    "lerp 0.3": (lambda a, b: torch.lerp(a, b, 0.3), lambda a, b: a.lerp_(b, 0.3)),
    "addcmul": (lambda a, b: torch.addcmul(a, a, b, value=0.5), lambda a, b: a.addcmul_(a, b, value=0.5)),
    "where": (lambda a, b: torch.where(a > 0, a, b), None),
}


def main_cases(dtypes, numel):
    side = int(numel ** 0.5)
    g = torch.Generator().manual_seed(0)
    base = torch.randn(side, side, generator=g)
    other = torch.randn(side, side, generator=g)
    domains = {"any": base, "pos": base.abs() + 0.1, "unit": base.tanh() * 0.9}

    def operand(x, dtype, layout, d):
        # A copy on both sides: `.to(float32)` of a float32 CPU tensor is the tensor itself, and
        # an in-place case would change the inputs of every later CPU case.
        x = x.to(dtype=dtype, device=d, copy=True)
        return x.t() if layout == "strided" else x

    def cases():
        for dtype in dtypes:
            short = str(dtype).removeprefix("torch.")
            for layout in ("contiguous", "strided"):
                for name, (out_of_place, in_place, domain) in UNARY.items():
                    x = domains[domain]
                    yield (f"{name} {short} {layout}", lambda d, x=x: operand(x, dtype, layout, d),
                           lambda a, f=out_of_place: f(a))
                    if in_place is not None:
                        # In place on the same tensor every sample (values drift, to inf for
                        # exp_): both sides repeat it on their own copy, so they compute on the
                        # same values.
                        yield (f"{name}_ {short} {layout}", lambda d, x=x: operand(x, dtype, layout, d),
                               lambda a, f=in_place: f(a))
                for name, (out_of_place, in_place) in BINARY.items():
                    make = (lambda d: (operand(base, dtype, layout, d), operand(other, dtype, layout, d)))
                    yield (f"{name} {short} {layout}", make, lambda ab, f=out_of_place: f(*ab))
                    if in_place is not None:
                        yield (f"{name}_ {short} {layout}", make, lambda ab, f=in_place: f(*ab))
    return cases


def main():
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--dtypes", default="float32,bfloat16,float16")
    parser.add_argument("--numel", type=int, default=1 << 20)
    known, rest = parser.parse_known_args()
    sys.argv = [sys.argv[0], *rest]
    dtypes = [getattr(torch, name) for name in known.dtypes.split(",")]
    run_table(__doc__, main_cases(dtypes, known.numel), width=34)


if __name__ == "__main__":
    main()
