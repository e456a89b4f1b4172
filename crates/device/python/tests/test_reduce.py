"""Reductions and scans of the "regen" device (kernels/ops/reduce.rs, kernels/ops/scan.rs) against
PyTorch's CPU kernels: every op x dtypes x layouts (contiguous, transposed, sliced, expanded,
0-dim, empty, large), dims inner/outer/several/negative, keepdim, errors, and the native-call
counters (a CPU fallback cannot pass as native)."""

import math

import pytest
import torch

import regen_device
from devtest import make, older_cpu_has_no_kernel

DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16, torch.float16, torch.complex64]


# Layouts: a base shape and the view taken of it (the same on CPU and on the device).
LAYOUTS = {
    "contiguous": ((3, 4, 5), lambda t: t),
    "transposed": ((5, 4, 3), lambda t: t.permute(2, 1, 0)),
    "sliced": ((6, 9, 5), lambda t: t[::2, 1:5, :]),
    "expanded": ((3, 1, 5), lambda t: t.expand(3, 4, 5)),
    "zero_dim": ((), lambda t: t),
    "empty": ((3, 0, 5), lambda t: t),
}

# Dims for 3-d layouts: none (all), inner, outer, several, negative.
DIMS = [None, 2, 0, (0, 2), -2]


def tolerances(dtype):
    if dtype in (torch.bfloat16, torch.float16):
        return dict(rtol=2e-2, atol=2e-2)
    return {}


def run_both(fn, x):
    """fn on CPU and on the device: both raise the same exception type, or agree."""
    d = x.to("regen")
    try:
        expected = fn(x)
    except Exception as e:  # noqa: BLE001 - any CPU error must be matched
        if older_cpu_has_no_kernel(e):
            raise  # an older CPU without this kernel: nothing to compare with (reported skipped)
        with pytest.raises(type(e)):
            fn(d)
        return False
    got = fn(d)
    if isinstance(expected, torch.Tensor):
        expected, got = (expected,), (got,)
    for e, g in zip(expected, got):
        assert g.device.type == "regen"
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, e.dtype, g.shape, e.shape)
        torch.testing.assert_close(g.cpu(), e, equal_nan=True, **tolerances(x.dtype))
    return True


def dims_of(layout, dim):
    if layout == "zero_dim" and dim is not None:
        return -1 if isinstance(dim, int) else None
    return dim


def one_dim(dim):
    return dim if not isinstance(dim, tuple) else dim[0]


# Op name, native key, fn(x, dim, keepdim) with dim possibly None / tuple.
OPS = {
    "sum": ("sum.IntList_out", lambda x, d, k: x.sum() if d is None else x.sum(d, keepdim=k)),
    "sum_dtype": ("sum.IntList_out", lambda x, d, k: torch.sum(x, d if d is not None else [], keepdim=k, dtype=torch.float64)),
    "nansum": ("nansum", lambda x, d, k: torch.nansum(x) if d is None else torch.nansum(x, d, keepdim=k)),
    "mean": ("mean.out", lambda x, d, k: x.mean() if d is None else x.mean(d, keepdim=k)),
    "prod": ("prod", lambda x, d, k: x.prod() if d is None else x.prod(one_dim(d), keepdim=k)),
    "amax": ("amax.out", lambda x, d, k: x.amax() if d is None else x.amax(d, keepdim=k)),
    "amin": ("amin.out", lambda x, d, k: x.amin() if d is None else x.amin(d, keepdim=k)),
    "aminmax": ("aminmax.out", lambda x, d, k: torch.aminmax(x, dim=None if d is None else one_dim(d), keepdim=k)),
    "max": ("max", lambda x, d, k: x.max() if d is None else tuple(x.max(one_dim(d), keepdim=k))),
    "min": ("min", lambda x, d, k: x.min() if d is None else tuple(x.min(one_dim(d), keepdim=k))),
    "argmax": ("argmax.out", lambda x, d, k: x.argmax(None if d is None else one_dim(d), keepdim=k)),
    "argmin": ("argmin.out", lambda x, d, k: x.argmin(None if d is None else one_dim(d), keepdim=k)),
    "var": ("var.correction", lambda x, d, k: torch.var(x, d, keepdim=k)),
    "std": ("std.correction", lambda x, d, k: torch.std(x, d, keepdim=k, correction=0)),
    "var_mean": ("var_mean.correction", lambda x, d, k: torch.var_mean(x, d, keepdim=k, correction=2)),
    "std_mean": ("std_mean.correction", lambda x, d, k: torch.std_mean(x, d, keepdim=k)),
    "norm": ("norm.out", lambda x, d, k: torch.ops.aten.norm.ScalarOpt_dim(x, 3, [d] if isinstance(d, int) else (d or []), k)),
    "norm_dtype": ("norm.dtype_out", lambda x, d, k: torch.ops.aten.norm.ScalarOpt_dim_dtype(x, 1, [d] if isinstance(d, int) else (d or []), k, dtype=torch.float64)),
    "vector_norm_2": ("linalg_vector_norm.out", lambda x, d, k: torch.linalg.vector_norm(x, 2, d, keepdim=k)),
    "vector_norm_1": ("linalg_vector_norm.out", lambda x, d, k: torch.linalg.vector_norm(x, 1, d, keepdim=k)),
    "vector_norm_0": ("linalg_vector_norm.out", lambda x, d, k: torch.linalg.vector_norm(x, 0, d, keepdim=k)),
    "vector_norm_inf": ("linalg_vector_norm.out", lambda x, d, k: torch.linalg.vector_norm(x, math.inf, d, keepdim=k)),
    "vector_norm_ninf": ("linalg_vector_norm.out", lambda x, d, k: torch.linalg.vector_norm(x, -math.inf, d, keepdim=k)),
    "vector_norm_p": ("linalg_vector_norm.out", lambda x, d, k: torch.linalg.vector_norm(x, 2.5, d, keepdim=k)),
    "any": ("any.out", lambda x, d, k: x.any() if d is None else x.any(one_dim(d), keepdim=k)),
    "all": ("all.out", lambda x, d, k: x.all() if d is None else x.all(one_dim(d), keepdim=k)),
    "count_nonzero": ("count_nonzero.dim_IntList", lambda x, d, k: torch.count_nonzero(x, d)),
    "logsumexp": ("amax.out", lambda x, d, k: torch.logsumexp(x, d if d is not None else [], keepdim=k)),
    "cumsum": ("cumsum.out", lambda x, d, k: torch.cumsum(x, one_dim(d) if d is not None else -1)),
    "cumprod": ("cumprod.out", lambda x, d, k: torch.cumprod(x, one_dim(d) if d is not None else 0)),
    "cummax": ("_cummax_helper", lambda x, d, k: tuple(torch.cummax(x, one_dim(d) if d is not None else 0))),
    "cummin": ("_cummin_helper", lambda x, d, k: tuple(torch.cummin(x, one_dim(d) if d is not None else -1))),
    "logcumsumexp": ("_logcumsumexp", lambda x, d, k: torch.logcumsumexp(x, one_dim(d) if d is not None else 0)),
}


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_op_matches_cpu(op, dtype, layout):
    key, fn = OPS[op]
    shape, view = LAYOUTS[layout]
    base = make(shape, dtype)
    before = regen_device.native_calls(key)
    ran = False
    for dim in DIMS:
        for keepdim in (False, True):
            d = dims_of(layout, dim)
            ran |= run_both(lambda t: fn(view(t), d, keepdim), base)
    # PyTorch answers cummax/cummin of 0-dim or empty tensors, and logsumexp of empty ones,
    # without calling a kernel.
    if ran and not (layout in ("zero_dim", "empty") and op in ("cummax", "cummin", "logsumexp")):
        assert regen_device.native_calls(key) > before, f"{key} did not run natively"


def with_nans(dtype):
    x = make((4, 6), dtype)
    x[1, 2] = float("nan")
    x[3, 0] = float("nan")
    x[3, 4] = float("nan")
    x[0, 1] = x[0, 3] = 7  # ties: the first index wins
    return x


@pytest.mark.parametrize("op", ["amax", "amin", "max", "min", "argmax", "argmin", "aminmax", "nansum", "sum", "mean", "cummax", "cummin", "cumsum", "logcumsumexp", "var", "vector_norm_inf"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_nan_and_tie_rules(op, dtype):
    key, fn = OPS[op]
    x = with_nans(dtype)
    for dim in [None, 0, 1, -1]:
        for keepdim in (False, True):
            run_both(lambda t: fn(t, dim, keepdim), x)
            run_both(lambda t: fn(t.t(), dim, keepdim), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("op,dim", [("amax", 1), ("amin", 1), ("max", None), ("min", None)])
def test_extrema_along_long_rows_match_cpu(op, dim, dtype):
    """Rows of 1000 (and all 6000 elements): whole blocks of the kernel's lanes, their pairwise
    fold and a tail; a NaN inside the blocks of one row and in the tail of another (and without
    NaN for the whole reduction)."""
    key, fn = OPS[op]
    x = make((6, 1000), torch.float32, seed=7).to(dtype)
    if dim is not None:
        x[1, 500] = float("nan")
        x[4, 998] = float("nan")
    before = regen_device.native_calls(key)
    assert run_both(lambda t: fn(t, dim, False), x)
    assert regen_device.native_calls(key) > before


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
def test_half_scans_along_rows_match_cpu_exactly(op, dtype):
    """Rows of 200 (several of the blocks the scan widens at a time, and a partial one), seven of
    them (a group of four scanned side by side, three alone), a NaN in one: CPU accumulates in
    float and rounds each value to the element type, as the device does, bit for bit."""
    key, fn = OPS[op]
    x = make((7, 200), torch.float32, seed=5)
    x = (1 + x / 64 if op == "cumprod" else x).to(dtype)
    x[2, 77] = float("nan")
    before = regen_device.native_calls(key)
    expected, got = fn(x, 1, False), fn(x.to("regen"), 1, False)
    if isinstance(expected, torch.Tensor):
        expected, got = (expected,), (got,)
    for e, g in zip(expected, got):
        torch.testing.assert_close(g.cpu(), e, rtol=0, atol=0, equal_nan=True)
    assert regen_device.native_calls(key) > before


@pytest.mark.parametrize(
    "shape,dim",
    [((1 << 20) + 3, None), ((2048, 600), 0), ((2048, 600), 1), ((600, 2048), 0), ((4, 1 << 18), 1), ((1 << 18, 4), 0), ((1 << 18, 4), 1)],
)
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "argmax", "var", "vector_norm_2", "nansum", "any", "cumsum", "prod"])
def test_large_parallel_paths(shape, dim, op):
    """Big enough for the parallel paths (over outputs, and over the reduced range)."""
    key, fn = OPS[op]
    key = {("any", None): "any.all_out", ("prod", 0): "prod.int_out", ("prod", 1): "prod.int_out"}.get((op, dim), key)
    x = make(shape, torch.float32, seed=3)
    if op == "prod":
        x = x.abs() + 0.99
        x = x[..., :40] if x.dim() == 2 and dim == 1 else x
    before = regen_device.native_calls(key)
    d = x.to("regen")
    expected = fn(x, dim, False)
    got = fn(d, dim, False)
    # Float sums of up to 1M elements: CPU and device round differently (both cascade; norms
    # accumulate in double here, in float on CPU), so the tolerance is relative to the magnitude.
    torch.testing.assert_close(got.cpu(), expected, rtol=1e-4, atol=1e-3, equal_nan=True)
    assert regen_device.native_calls(key) > before
    # A transposed view of the same data.
    if x.dim() == 2:
        expected, got = fn(x.t(), dim, True), fn(d.t(), dim, True)
        torch.testing.assert_close(got.cpu(), expected, rtol=1e-4, atol=1e-3, equal_nan=True)


def test_sum_accuracy_matches_cpu_closely():
    x = torch.rand(1 << 22, dtype=torch.float32) + 1000
    ref = x.double().sum()
    dev = x.to("regen").sum().cpu().double()
    cpu = x.sum().double()
    # The cascade keeps the error at CPU's order of magnitude.
    assert abs(dev - ref) <= max(4 * abs(cpu - ref), 1e-6 * abs(ref))
    rows = torch.rand(4096, 16) + 100
    dev0 = rows.to("regen").sum(0).cpu().double()
    torch.testing.assert_close(dev0, rows.double().sum(0), rtol=1e-6, atol=0)


def test_out_variants_resize_and_cast():
    x = make((4, 5), torch.float32)
    d = x.to("regen")
    out = torch.empty(0, device="regen")
    torch.sum(d, 1, out=out)
    torch.testing.assert_close(out.cpu(), x.sum(1))
    out64 = torch.empty(3, dtype=torch.float64, device="regen")
    torch.sum(d, 0, keepdim=True, out=out64)
    torch.testing.assert_close(out64.cpu(), x.sum(0, keepdim=True, dtype=torch.float64))
    m = torch.empty(0, device="regen")
    torch.mean(d, (0, 1), out=m)
    torch.testing.assert_close(m.cpu(), x.mean())
    v, i = torch.empty(0, device="regen"), torch.empty(0, dtype=torch.long, device="regen")
    torch.max(d, 1, out=(v, i))
    ev, ei = x.max(1)
    torch.testing.assert_close((v.cpu(), i.cpu()), (ev, ei))
    c = torch.empty(0, device="regen")
    torch.cumsum(d, 0, out=c)
    torch.testing.assert_close(c.cpu(), x.cumsum(0))
    s = torch.empty(0, device="regen")
    torch.std(d, 0, out=s)
    torch.testing.assert_close(s.cpu(), x.std(0))
    n = torch.empty(0, device="regen")
    torch.linalg.vector_norm(d, 2, out=n)
    torch.testing.assert_close(n.cpu(), torch.linalg.vector_norm(x))
    # In-place cumulative ops and dtype= arguments.
    y = x.clone()
    yd = y.to("regen")
    yd.cumsum_(1)
    torch.testing.assert_close(yd.cpu(), y.cumsum(1))
    xi = make((4, 5), torch.int64)
    torch.testing.assert_close(torch.cumsum(xi.to("regen"), 0, dtype=torch.float32).cpu(), torch.cumsum(xi, 0, dtype=torch.float32))
    torch.testing.assert_close(torch.prod(xi.to("regen"), dtype=torch.float64).cpu(), torch.prod(xi, dtype=torch.float64))


def test_complex_norms_are_real():
    z = make((3, 4), torch.complex64)
    for ord in (0, 1, 2, 3.5, math.inf, -math.inf):
        got = torch.linalg.vector_norm(z.to("regen"), ord, 1)
        assert got.dtype == torch.float32
        torch.testing.assert_close(got.cpu(), torch.linalg.vector_norm(z, ord, 1))
    got = torch.var(z.to("regen"), 0)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.cpu(), torch.var(z, 0))


def message(fn, x):
    try:
        fn(x)
    except Exception as e:  # noqa: BLE001
        return type(e), str(e).split("\n")[0]
    return None


@pytest.mark.parametrize(
    "fn,shape",
    [
        (lambda t: t.sum(3), (2, 3)),
        (lambda t: t.sum(-4), (2, 3)),
        (lambda t: t.amax(2), ()),
        (lambda t: t.sum((0, 0)), (2, 3)),
        (lambda t: t.amax(0), (0, 3)),
        (lambda t: t.max(), (0, 3)),
        (lambda t: t.max(0), (0, 3)),
        (lambda t: t.argmax(), (0,)),
        (lambda t: t.argmax(1), (2, 0)),
        (lambda t: torch.linalg.vector_norm(t, math.inf), (0,)),
        (lambda t: t.long().mean(), (2, 3)),
        (lambda t: t.long().var(), (2, 3)),
        (lambda t: t.cumsum(2), (2, 3)),
    ],
)
def test_errors_match_cpu(fn, shape):
    x = make(shape, torch.float32)
    cpu = message(fn, x)
    dev = message(fn, x.to("regen"))
    assert cpu is not None and dev is not None
    assert dev[0] is cpu[0], (dev, cpu)
    if "Dimension out of range" in cpu[1] or "non-zero size" in cpu[1] or "appears multiple" in cpu[1]:
        assert dev[1] == cpu[1]


def test_empty_rules():
    e = torch.empty(0, 3).to("regen")
    assert e.sum().item() == 0
    assert math.isnan(e.mean().item())
    assert e.prod().item() == 1
    torch.testing.assert_close(e.sum(0).cpu(), torch.zeros(3))
    assert e.any().item() is False and e.all().item() is True
    torch.testing.assert_close(torch.var(e, 0).cpu(), torch.full((3,), math.nan), equal_nan=True)
