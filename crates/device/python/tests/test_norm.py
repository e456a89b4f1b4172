"""Softmax, log-softmax, layer norm and batch norm of the "regen" device (kernels/ops/norm.rs) against
PyTorch's CPU kernels: every dim of contiguous, transposed, sliced, 0-dim and empty inputs in
float32, float64, bfloat16 and float16 (and the dtype= argument), autograd backward through
_softmax_backward_data / _log_softmax_backward_data, layer norm with and without weight and bias
(and its input/weight/bias gradients), batch norm in training (with the running statistics it
updates) and evaluation over 1d/2d/3d and channels-last inputs with its gradients, group norm
(contiguous, channels-last, strided and empty inputs, mixed dtypes) and its gradients, errors with
CPU's exception type, and the native-call counters (a CPU fallback cannot pass as native).

Exponentials are vmath's rather than Sleef's and sums run in another order, so results agree
within assert_close's tolerances rather than bit for bit."""

import math

import pytest
import torch
import torch.nn.functional as F

import regen_device
from devtest import UNIT_ROUNDOFF, counted, make, sweep

FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]

LAYOUTS = {
    "contiguous": ((3, 4, 5), lambda t: t),
    "transposed": ((5, 4, 3), lambda t: t.permute(2, 1, 0)),
    "sliced": ((6, 9, 5), lambda t: t[::2, 1:5, :]),
    "zero_dim": ((), lambda t: t),
    "empty": ((3, 0, 5), lambda t: t),
}


def close(got, expected, **kw):
    assert got.device.type == "regen"
    got = got.cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, expected.dtype, got.shape, expected.shape)
    torch.testing.assert_close(got, expected, equal_nan=True, **kw)


def raises_like(fn, cpu_args, dev_args):
    """fn raises on CPU and on the device, with the same exception type."""
    with pytest.raises(Exception) as cpu:
        fn(*cpu_args)
    with pytest.raises(type(cpu.value)):
        fn(*dev_args)


def any_native(ops):
    """Native calls of any of `ops`; an op this torch lacks (`_batch_norm_with_update` before 2.4)
    has no kernel and no counter here."""
    return sum(regen_device.native_calls(op) for op in ops if sweep.torch_has(op))


# ---------------------------------------------------------------------------------------------
# softmax / log_softmax


SOFTMAX = {"softmax": (F.softmax, "_softmax", "_softmax_backward_data"),
           "log_softmax": (F.log_softmax, "_log_softmax", "_log_softmax_backward_data")}


@pytest.mark.parametrize("kind", list(SOFTMAX))
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_softmax(kind, dtype, layout):
    fn, op, _ = SOFTMAX[kind]
    shape, view = LAYOUTS[layout]
    base = make(shape, torch.float32, seed=1).mul(3).to(dtype)
    x, xd = view(base), view(base.to("regen"))
    for dim in range(-max(x.dim(), 1), max(x.dim(), 1)):
        with counted(op):
            got = fn(xd, dim)
        close(got, fn(x, dim))


@pytest.mark.parametrize("kind", list(SOFTMAX))
@pytest.mark.parametrize("shape,dim", [((7, 1000), 1), ((7, 1000), 0), ((3, 300, 37), 1), ((2, 5, 4100), 1), ((1, 33), -1)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_softmax_long(kind, shape, dim, dtype):
    """Rows longer than a lane block (tails), and vertical blocks of several chunks; float16 rows
    are converted a whole row at a time."""
    fn, op, _ = SOFTMAX[kind]
    x = (make(shape, torch.float32, seed=2) * 4).to(dtype)
    with counted(op):
        got = fn(x.to("regen"), dim)
    close(got, fn(x, dim))


@pytest.mark.parametrize("kind", list(SOFTMAX))
def test_softmax_dtype_argument_and_special_values(kind):
    fn, op, _ = SOFTMAX[kind]
    x = make((4, 6), torch.float32, seed=3)
    with counted(op):
        got = fn(x.to("regen"), 1, dtype=torch.float64)
    close(got, fn(x, 1, dtype=torch.float64))
    y = x.clone()
    y[0, 2] = float("nan")
    y[1, :] = float("-inf")
    y[2, 3] = float("inf")
    y[3, 1] = 1e30
    close(fn(y.to("regen"), 1), fn(y, 1))


@pytest.mark.parametrize("kind", list(SOFTMAX))
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "zero_dim"])
def test_softmax_backward(kind, dtype, layout):
    fn, _, op = SOFTMAX[kind]
    shape, view = LAYOUTS[layout]
    base = make(shape, torch.float32, seed=4).to(dtype)
    grad = make(view(base).shape, torch.float32, seed=5).to(dtype)
    for dim in range(max(base.dim(), 1)):
        x = view(base).clone().requires_grad_()
        xd = view(base.to("regen")).clone().requires_grad_()
        fn(x, dim).backward(grad)
        with counted(op):
            fn(xd, dim).backward(grad.to("regen"))
        # The forward's last bits (its exponentials) differ; (g - Σ g·y)·y cancels, so float16
        # and bfloat16 gradients of small size may differ by a few units in the last place.
        tol = {"rtol": 2e-2, "atol": 2e-3} if dtype in (torch.float16, torch.bfloat16) else {}
        close(xd.grad, x.grad, **tol)


@pytest.mark.parametrize("kind", list(SOFTMAX))
def test_softmax_out_and_backward_ops(kind):
    _, op, bop = SOFTMAX[kind]
    fwd = getattr(torch, op)
    bwd = getattr(torch.ops.aten, bop)
    x = make((5, 8), torch.float32, seed=6)
    out = torch.empty(0, device="regen")
    with counted(op + ".out"):
        fwd(x.to("regen"), 0, False, out=out)
    close(out, fwd(x, 0, False))
    y, g = fwd(x, 1, False), make((5, 8), torch.float32, seed=7)
    for dim in (0, 1):
        with counted(bop):
            got = bwd(g.to("regen"), y.to("regen"), dim, torch.float32)
        close(got, bwd(g, y, dim, torch.float32))
    out = torch.empty(0, device="regen")
    with counted(bop + ".out"):
        if kind == "softmax":
            bwd.out(g.to("regen"), y.to("regen"), 1, torch.float32, grad_input=out)
        else:
            bwd.out(g.to("regen"), y.to("regen"), 1, torch.float32, out=out)
    close(out, bwd(g, y, 1, torch.float32))


@pytest.mark.parametrize("kind", list(SOFTMAX))
def test_softmax_errors(kind):
    _, op, _ = SOFTMAX[kind]
    fwd = getattr(torch, op)
    x = make((3, 4), torch.float32)
    for args in [(x.long(), 0, False), (x, 2, False), (x.half(), 0, True), (x.to(torch.complex64), 1, False)]:
        dev = tuple(a.to("regen") if isinstance(a, torch.Tensor) else a for a in args)
        raises_like(fwd, args, dev)
    g = make((3, 4), torch.float32)
    bwd = torch.ops.aten._softmax_backward_data
    raises_like(bwd, (g, x[:2], 0, torch.float32), (g.to("regen"), x[:2].to("regen"), 0, torch.float32))
    raises_like(bwd, (g, x, 0, torch.float16), (g.to("regen"), x.to("regen"), 0, torch.float16))


# ---------------------------------------------------------------------------------------------
# layer_norm


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,k", [((4, 6), 1), ((2, 3, 5, 7), 2), ((8, 37), 1), ((3, 0, 4), 1), ((2, 300), 1)])
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
def test_layer_norm(dtype, shape, k, affine):
    ns = shape[-k:]
    x = make(shape, torch.float32, seed=8).mul(2).add(1).to(dtype)
    w = make(ns, torch.float32, seed=9).to(dtype) if affine in ("weight", "both") else None
    b = make(ns, torch.float32, seed=10).to(dtype) if affine in ("bias", "both") else None
    dev = lambda t: None if t is None else t.to("regen")  # noqa: E731
    with counted("native_layer_norm"):
        got = F.layer_norm(x.to("regen"), ns, dev(w), dev(b), 1e-5)
    close(got, F.layer_norm(x, ns, w, b, 1e-5))
    # mean and rstd too.
    got = torch.native_layer_norm(x.to("regen"), ns, dev(w), dev(b), 1e-5)
    for g, e in zip(got, torch.native_layer_norm(x, ns, w, b, 1e-5)):
        close(g, e)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("affine", ["none", "weight", "both"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_layer_norm_backward(dtype, affine, layout):
    shape, view = LAYOUTS[layout]
    ns = (5,)
    base = make(shape, torch.float32, seed=11).to(dtype)
    grad = make(view(base).shape, torch.float32, seed=12).to(dtype)
    w0 = make(ns, torch.float32, seed=13).to(dtype) if affine != "none" else None
    b0 = make(ns, torch.float32, seed=14).to(dtype) if affine == "both" else None

    def run(device):
        x = view(base.to(device)).clone().requires_grad_()
        w = None if w0 is None else w0.to(device).clone().requires_grad_()
        b = None if b0 is None else b0.to(device).clone().requires_grad_()
        F.layer_norm(x, ns, w, b, 1e-5).backward(grad.to(device))
        return [t.grad for t in (x, w, b) if t is not None]

    expected = run("cpu")
    with counted("native_layer_norm_backward"):
        got = run("regen")
    tol = {} if dtype in (torch.float32, torch.float64) else {"rtol": 4e-2, "atol": 2e-2}
    for g, e in zip(got, expected):
        close(g, e, **tol)


def test_layer_norm_mixed_dtype_and_errors():
    x = make((4, 6), torch.bfloat16, seed=15)
    w, b = make((6,), torch.float32, seed=16), make((6,), torch.float32, seed=17)
    got = torch.native_layer_norm(x.to("regen"), [6], w.to("regen"), b.to("regen"), 1e-5)
    for g, e in zip(got, torch.native_layer_norm(x, [6], w, b, 1e-5)):
        close(g, e)
    xf = make((4, 6), torch.float32)
    for args in [(xf, [4], None, None), (xf, [6], torch.ones(5), None), (xf, [], None, None), (xf.long(), [6], None, None),
                 (xf, [6], torch.ones(6, dtype=torch.float64), None)]:
        dev = tuple(a.to("regen") if isinstance(a, torch.Tensor) else a for a in args)
        raises_like(torch.native_layer_norm, (*args, 1e-5), (*dev, 1e-5))


# ---------------------------------------------------------------------------------------------
# batch_norm


BN_SHAPES = {"1d": (6, 4), "1d_len": (3, 4, 7), "2d": (2, 3, 5, 6), "3d": (2, 3, 2, 3, 4), "2d_channels_last": (2, 3, 5, 6)}
BN_OPS = ["native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit.no_stats", "_batch_norm_with_update"]


def bn_input(name, dtype, device, seed=18):
    x = make(BN_SHAPES[name], torch.float32, seed=seed).mul(2).add(0.5).to(dtype).to(device)
    return x.to(memory_format=torch.channels_last) if name.endswith("channels_last") else x


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", list(BN_SHAPES))
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm(dtype, name, training, affine):
    c = BN_SHAPES[name][1]
    w0, b0 = make((c,), torch.float32, seed=19).to(dtype), make((c,), torch.float32, seed=20).to(dtype)
    rm0, rv0 = make((c,), torch.float32, seed=21).to(dtype), make((c,), torch.float32, seed=22).abs().add(0.5).to(dtype)

    def run(device):
        x = bn_input(name, dtype, device)
        rm, rv = rm0.to(device).clone(), rv0.to(device).clone()
        w, b = (w0.to(device), b0.to(device)) if affine else (None, None)
        out = F.batch_norm(x, rm, rv, w, b, training=training, momentum=0.3, eps=1e-4)
        return out, rm, rv

    expected = run("cpu")
    before = any_native(BN_OPS)
    got = run("regen")
    assert any_native(BN_OPS) > before, "batch norm did not run natively"
    # CPU sums float16 in float, in vector order, before rounding the mean and the sum of squares
    # to float16; the running statistics derived from them can land one unit apart.
    tol = {"rtol": 4e-3, "atol": 1e-4} if dtype == torch.float16 else {}
    for g, e in zip(got, expected):
        close(g, e, **tol)
    if name.endswith("channels_last"):
        assert got[0].is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("name", list(BN_SHAPES))
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_backward(dtype, name, training):
    c = BN_SHAPES[name][1]
    w0, b0 = make((c,), torch.float32, seed=23).to(dtype), make((c,), torch.float32, seed=24).to(dtype)
    rm0, rv0 = make((c,), torch.float32, seed=25).to(dtype), make((c,), torch.float32, seed=26).abs().add(0.5).to(dtype)
    grad = make(BN_SHAPES[name], torch.float32, seed=27).to(dtype)

    def run(device):
        x = bn_input(name, dtype, device).detach().requires_grad_()
        w, b = w0.to(device).clone().requires_grad_(), b0.to(device).clone().requires_grad_()
        F.batch_norm(x, rm0.to(device).clone(), rv0.to(device).clone(), w, b, training=training, momentum=0.1, eps=1e-5).backward(grad.to(device))
        return x.grad, w.grad, b.grad

    expected = run("cpu")
    before = any_native(["native_batch_norm_backward", "batch_norm_backward"])
    got = run("regen")
    assert any_native(["native_batch_norm_backward", "batch_norm_backward"]) > before
    tol = {} if dtype != torch.bfloat16 else {"rtol": 4e-2, "atol": 4e-2}
    for g, e in zip(got, expected):
        close(g, e, **tol)


def test_batch_norm_ops_directly():
    x = make((4, 3, 5), torch.float32, seed=28)
    w, b = make((3,), torch.float32, seed=29), make((3,), torch.float32, seed=30)
    d = lambda t: t.to("regen")  # noqa: E731
    with counted("native_batch_norm"):
        got = torch.native_batch_norm(d(x), d(w), d(b), None, None, True, 0.1, 1e-5)
    for g, e in zip(got, torch.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5)):
        close(g, e)
    rm, rv = torch.zeros(3), torch.ones(3)
    rmd, rvd = d(rm), d(rv)
    with counted("_native_batch_norm_legit"):
        got = torch.ops.aten._native_batch_norm_legit(d(x), d(w), d(b), rmd, rvd, True, 0.2, 1e-5)
    expected = torch.ops.aten._native_batch_norm_legit(x, w, b, rm, rv, True, 0.2, 1e-5)
    for g, e in zip((*got, rmd, rvd), (*expected, rm, rv)):
        close(g, e)
    with counted("_native_batch_norm_legit.no_stats"):
        got = torch.ops.aten._native_batch_norm_legit(d(x), None, None, True, 0.2, 1e-5)
    for g, e in zip(got, torch.ops.aten._native_batch_norm_legit(x, None, None, True, 0.2, 1e-5)):
        close(g, e)
    # The mixed form: bfloat16 input, float parameters and statistics.
    xb = x.bfloat16()
    got = torch.native_batch_norm(d(xb), d(w), d(b), d(rm), d(rv), False, 0.1, 1e-5)
    for g, e in zip(got, torch.native_batch_norm(xb, w, b, rm, rv, False, 0.1, 1e-5)):
        close(g, e)
    outs = [torch.empty(0, device="regen") for _ in range(3)]
    with counted("native_batch_norm.out"):
        torch.ops.aten.native_batch_norm.out(d(x), d(w), d(b), None, None, True, 0.1, 1e-5, out=outs[0], save_mean=outs[1], save_invstd=outs[2])
    for g, e in zip(outs, torch.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5)):
        close(g, e)


def test_batch_norm_errors():
    x = make((4, 3, 5), torch.float32)
    cases = [
        (x.long(), None, None, None, None, True),
        (x, None, None, None, None, False),
        (x[0, 0], None, None, None, None, True),
        (torch.empty(0, 3, 4), None, None, None, None, True),
        (x, torch.ones(3, dtype=torch.float64), None, None, None, True),
    ]
    for args in cases:
        dev = tuple(a.to("regen") if isinstance(a, torch.Tensor) else a for a in args)
        raises_like(torch.native_batch_norm, (*args, 0.1, 1e-5), (*dev, 0.1, 1e-5))


# ---------------------------------------------------------------------------------------------
# group norm


def group_norm_bounds(x, groups, w, b, eps, dtype, stat_dtype):
    """Per-element bounds on how far two computations of group norm may lie apart, for (y, mean,
    rstd). Each sums the k = D·HxW terms of a group in the compute type (float for float16 and
    bfloat16) in an order CPU's vector width picks, so their means may lie (2k+1)·u·mean|x| apart
    and their variances (2k+1)·u·mean(x²) (assert_sums_close's bound); rstd and y move by what
    those differences make of them, plus a few roundings in the compute type and one rounding of
    each result to its dtype."""
    n, c = x.shape[:2]
    k = c // groups * math.prod(x.shape[2:])
    if x.numel() == 0:  # nothing summed: the results must be equal
        return (torch.zeros(()),) * 3
    xg = x.double().reshape(n, groups, k)
    uc = UNIT_ROUNDOFF[torch.float64 if dtype == torch.float64 else torch.float32]
    mu, var = xg.mean(-1), xg.var(-1, unbiased=False)
    rstd = (var + eps).rsqrt()
    dmu = (2 * k + 1) * uc * xg.abs().mean(-1)
    drstd = 0.5 * rstd * (2 * k + 1) * uc * xg.square().mean(-1) / (var + eps) + 4 * uc * rstd

    def per_element(t):  # (n, groups) -> x's shape
        return t.reshape(n, groups, 1).expand(xg.shape).reshape(x.shape)

    def per_channel(v, default):
        v = torch.full((c,), default, dtype=torch.float64) if v is None else v.double().abs()
        return v.reshape(1, c, *([1] * (x.dim() - 2)))

    gam, bet = per_channel(w, 1.0), per_channel(b, 0.0)
    xa, mua = x.double().abs(), per_element(mu).abs()
    y = ((x.double() - per_element(mu)) * per_element(rstd)).abs() * gam + bet
    dy = gam * (per_element(drstd) * (xa + mua) + per_element(rstd * dmu)) + 4 * uc * (y + gam * per_element(rstd) * (xa + mua))
    out = lambda v, dv, d: dv + 2 * UNIT_ROUNDOFF[d] * (v.abs() + dv)  # noqa: E731
    return out(y, dy, dtype), out(mu, dmu, stat_dtype), out(rstd, drstd, stat_dtype)


def within(got, expected, bound):
    got = got.cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, expected.dtype, got.shape, expected.shape)
    diff = (got.double() - expected.double()).abs()
    ok = (diff <= bound) | (got.double() == expected.double()) | (got.double().isnan() & expected.double().isnan())
    assert ok.all(), f"{int((~ok).sum())} of {ok.numel()} apart by more than the bound: {got[~ok][:4].tolist()} vs CPU {expected[~ok][:4].tolist()}"


GN_CASES = {
    "4d": ((2, 6, 5, 4), 3), "3d": ((3, 4, 7), 2), "5d": ((2, 4, 3, 2, 2), 1), "2d": ((4, 6), 3),
    "one_channel_groups": ((2, 4, 3), 4), "one_element_groups": ((2, 3, 1), 3), "long_groups": ((2, 8, 130), 2),
    "channels_last": ((2, 6, 5, 4), 2), "channels_last_3d": ((2, 4, 3, 2, 3), 2), "transposed": ((4, 6, 5), 3),
    "empty_batch": ((0, 4, 3), 2), "empty_spatial": ((2, 4, 0), 2),
}


def gn_input(name, dtype, device):
    shape, _ = GN_CASES[name]
    x = make(shape, torch.float32, seed=25).mul(2).add(0.5).to(dtype).to(device)
    if name == "channels_last":
        return x.to(memory_format=torch.channels_last)
    if name == "channels_last_3d":
        return x.to(memory_format=torch.channels_last_3d)
    if name == "transposed":
        return x.transpose(0, 2).contiguous().transpose(0, 2)
    return x


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", list(GN_CASES))
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
def test_group_norm(dtype, name, affine):
    shape, groups = GN_CASES[name]
    c = shape[1]
    w = make((c,), torch.float32, seed=26).to(dtype) if affine in ("weight", "both") else None
    b = make((c,), torch.float32, seed=27).to(dtype) if affine in ("bias", "both") else None
    dev = lambda t: None if t is None else t.to("regen")  # noqa: E731
    x = gn_input(name, dtype, "cpu")
    n, hxw = shape[0], math.prod(shape[2:])
    if hxw == 0:
        # Empty groups are refused (an empty batch is answered).
        raises_like(F.group_norm, (x, groups, w, b, 1e-5), (gn_input(name, dtype, "regen"), groups, dev(w), dev(b), 1e-5))
        raises_like(torch.native_group_norm, (x, w, b, n, c, hxw, groups, 1e-5),
                    (gn_input(name, dtype, "regen"), dev(w), dev(b), n, c, hxw, groups, 1e-5))
        return
    with counted("native_group_norm"):
        got = F.group_norm(gn_input(name, dtype, "regen"), groups, dev(w), dev(b), 1e-5)
    expected = F.group_norm(x, groups, w, b, 1e-5)
    # The output keeps the input's memory format, as on CPU.
    assert [s for s, m in zip(got.stride(), shape) if m > 1] == [s for s, m in zip(expected.stride(), shape) if m > 1]
    by, bm, br = group_norm_bounds(x, groups, w, b, 1e-5, dtype, dtype)
    within(got, expected, by)
    # mean and rstd too (N × groups, in the input's dtype).
    args = (groups, 1e-5)
    got = torch.native_group_norm(gn_input(name, dtype, "regen"), dev(w), dev(b), n, c, hxw, *args)
    expected = torch.native_group_norm(x, w, b, n, c, hxw, *args)
    for g, e, bound in zip(got, expected, (by, bm, br)):
        within(g, e, bound)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_group_norm_mixed_dtype(dtype):
    # float16/bfloat16 input with float parameters: float statistics, as CPU's "mixed type".
    x = make((3, 6, 4, 5), torch.float32, seed=28).to(dtype)
    w, b = make((6,), torch.float32, seed=29), make((6,), torch.float32, seed=30)
    with counted("native_group_norm"):
        got = torch.native_group_norm(x.to("regen"), w.to("regen"), b.to("regen"), 3, 6, 20, 3, 1e-5)
    expected = torch.native_group_norm(x, w, b, 3, 6, 20, 3, 1e-5)
    assert [t.dtype for t in got] == [t.dtype for t in expected] == [dtype, torch.float32, torch.float32]
    for g, e, bound in zip(got, expected, group_norm_bounds(x, 3, w, b, 1e-5, dtype, torch.float32)):
        within(g, e, bound)


@pytest.mark.parametrize("dtype", FLOATS)
def test_group_norm_direct_call_reads_row_major_elements(dtype):
    # native_group_norm reads N × C × HxW elements in row-major order whatever the input's sizes.
    x = make((2, 18), torch.float32, seed=34).to(dtype)
    w = make((6,), torch.float32, seed=35).to(dtype)
    with counted("native_group_norm"):
        got = torch.native_group_norm(x.to("regen"), w.to("regen"), None, 2, 6, 3, 3, 1e-5)
    expected = torch.native_group_norm(x, w, None, 2, 6, 3, 3, 1e-5)
    by, bm, br = group_norm_bounds(x.reshape(2, 6, 3), 3, w, None, 1e-5, dtype, dtype)
    for g, e, bound in zip(got, expected, (by.reshape(2, 18), bm, br)):
        within(g, e, bound)


def test_group_norm_reduced_precision_rounds_once():
    # PrivateUse1's composite (math_group_norm) rounds each step to bfloat16; CPU computes in
    # float and rounds once, and the device's kernel does too: at most one ulp apart.
    x = make((4, 8, 16, 16), torch.float32, seed=31).mul(3).add(1).to(torch.bfloat16)
    w, b = make((8,), torch.float32, seed=32).to(torch.bfloat16), make((8,), torch.float32, seed=33).to(torch.bfloat16)
    got = F.group_norm(x.to("regen"), 4, w.to("regen"), b.to("regen"), 1e-5).cpu().float()
    expected = F.group_norm(x, 4, w, b, 1e-5).float()
    ulp = torch.finfo(torch.bfloat16).eps * expected.abs().clamp_min(2.0**-126)
    assert ((got - expected).abs() <= ulp).all()


def test_group_norm_errors():
    x = make((2, 6, 3), torch.float32)
    cases = [
        (x, None, None, 2, 6, 3, 4),  # channels not divisible by groups
        (x, None, None, 2, 6, 3, 0),  # no groups
        (x[:, :0], None, None, 2, 0, 3, 1),  # no channels
        (x, torch.ones(5), None, 2, 6, 3, 3),  # weight of the wrong size
        (x, None, torch.ones(2, 3), 2, 6, 3, 3),  # bias not a vector
        (x, torch.ones(6, dtype=torch.float64), None, 2, 6, 3, 3),  # parameters of another dtype
        (x.to(torch.bfloat16), torch.ones(6), torch.ones(6, dtype=torch.bfloat16), 2, 6, 3, 3),  # mixed parameters
    ]
    for args in cases:
        dev = tuple(a.to("regen") if isinstance(a, torch.Tensor) else a for a in args)
        raises_like(torch.native_group_norm, (*args, 1e-5), (*dev, 1e-5))
    # Integer and complex inputs: CPU has no kernel for them, nor has the device, which names the dtype.
    for dtype, name in ((torch.int64, "'Long'"), (torch.complex64, "'ComplexFloat'")):
        xi = x.to(dtype)
        with pytest.raises(NotImplementedError, match=name):
            torch.native_group_norm(xi, None, None, 2, 6, 3, 3, 1e-5)
        with pytest.raises(NotImplementedError, match=name):
            torch.native_group_norm(xi.to("regen"), None, None, 2, 6, 3, 3, 1e-5)


# ---------------------------------------------------------------------------------------------
# group norm backward


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("shape,groups", [((2, 6, 5, 4), 3), ((3, 4, 7), 2), ((2, 4, 3, 2, 2), 1), ((2, 4, 3), 4), ((0, 4, 3), 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm_backward(dtype, shape, groups, affine):
    base = make(shape, torch.float32, seed=21).to(dtype)
    grad = make(shape, torch.float32, seed=22).to(dtype)
    w0 = make((shape[1],), torch.float32, seed=23).to(dtype) if affine else None
    b0 = make((shape[1],), torch.float32, seed=24).to(dtype) if affine else None

    def run(device):
        x = base.to(device).clone().requires_grad_()
        w = None if w0 is None else w0.to(device).clone().requires_grad_()
        b = None if b0 is None else b0.to(device).clone().requires_grad_()
        y = F.group_norm(x, groups, w, b, 1e-5)
        y.backward(grad.to(device))
        return [y.detach()] + [t.grad for t in (x, w, b) if t is not None]

    expected = run("cpu")
    with counted("native_group_norm_backward"):
        got = run("regen")
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == torch.float32 else {} if dtype == torch.float64 else {"rtol": 4e-2, "atol": 4e-2}
    for g, e in zip(got, expected):
        close(g, e, **tol)


def test_group_norm_backward_errors():
    x = torch.zeros(2, 6, 3, device="regen")
    m = torch.zeros(2, 4, device="regen")
    with pytest.raises(RuntimeError, match="divisible"):
        torch.ops.aten.native_group_norm_backward(x, x, m, m, None, 2, 6, 3, 4, [True, False, False])
    with pytest.raises(RuntimeError, match="grad_out"):
        torch.ops.aten.native_group_norm_backward(x[:, :3], x, m[:, :3], m[:, :3], None, 2, 6, 3, 3, [True, False, False])


# ---------------------------------------------------------------------------------------------
# _masked_softmax: CPU's scalar host_softmax (exp of the element type, sums in acc_type), so
# results are equal bit for bit; masked positions are 0 and fully masked rows NaN, as on CPU.


def masked_case(name, dtype):
    g = torch.Generator().manual_seed(51)
    if name == "generic":
        x = torch.randn(3, 5, 7, generator=g)
        m = torch.rand(3, 5, 7, generator=g) < 0.3
        m[1, 2, :] = True  # a fully masked row
        return x.to(dtype), m, -1, 2
    if name == "generic_dim1":
        x = torch.randn(3, 5, 7, generator=g)
        m = torch.rand(3, 5, 7, generator=g) < 0.3
        return x.to(dtype), m, 1, 2
    if name == "generic_sliced":
        x = torch.randn(6, 5, 9, generator=g)[::2, :, 1:8]
        m = torch.rand(6, 5, 9, generator=g)[::2, :, 1:8] < 0.3
        return x.to(dtype), m, -1, None
    if name == "attention":  # mask_type 0: an (L, L) mask over (B, H, L, L)
        x = torch.randn(2, 3, 6, 6, generator=g)
        return x.to(dtype), torch.rand(6, 6, generator=g) < 0.3, -1, 0
    if name == "attention_dim2":
        x = torch.randn(2, 3, 6, 6, generator=g)
        return x.to(dtype), torch.rand(6, 6, generator=g) < 0.3, 2, 0
    if name == "padding":  # mask_type 1: a (B, L) mask over (B, H, L, L)
        x = torch.randn(2, 3, 6, 6, generator=g)
        return x.to(dtype), torch.rand(2, 6, generator=g) < 0.3, -1, 1
    raise KeyError(name)


MASKED = ["generic", "generic_dim1", "generic_sliced", "attention", "attention_dim2", "padding"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", MASKED)
def test_masked_softmax(dtype, case):
    x, m, dim, mask_type = masked_case(case, dtype)
    expected = torch._masked_softmax(x, m, dim, mask_type)
    with counted("_masked_softmax"):
        got = torch._masked_softmax(x.to("regen"), m.to("regen"), dim, mask_type)
    close(got, expected, rtol=0, atol=0)
    if m.shape != x.shape:
        return
    g = make(x.shape, torch.float32, seed=52).to(dtype)
    eb = torch.ops.aten._masked_softmax_backward(g, expected, m, dim)
    with counted("_masked_softmax_backward"):
        gb = torch.ops.aten._masked_softmax_backward(g.to("regen"), got, m.to("regen"), dim)
    close(gb, eb, rtol=0, atol=0)
    # Through autograd (the derivative is _masked_softmax_backward).
    xr, xdr = x.clone().requires_grad_(True), x.to("regen").requires_grad_(True)
    torch._masked_softmax(xr, m, dim, mask_type).backward(g)
    torch._masked_softmax(xdr, m.to("regen"), dim, mask_type).backward(g.to("regen"))
    close(xdr.grad, xr.grad, rtol=0, atol=0)


def test_masked_softmax_errors():
    x = make((2, 3, 4, 4), torch.float32, seed=53)
    m = torch.zeros(2, 3, 4, 4, dtype=torch.bool)
    A = torch.ops.aten
    bad = [
        (A._masked_softmax, (x, m[:, 0, 0], 3, None)),  # 2-d mask without a type
        (A._masked_softmax, (x, m[0], 3, 2)),  # shape
        (A._masked_softmax, (x, m.int(), 3, 2)),  # not bool
        (A._masked_softmax, (x.int(), m, 3, 2)),
        (A._masked_softmax, (x, m[0, 0, :3], 3, 0)),
        (A._masked_softmax, (x, m[:, 0, :3, 0], 3, 1)),
        (A._masked_softmax_backward, (x, x, m[0], 3)),
    ]
    for fn, args in bad:
        dev = tuple(a.to("regen") if isinstance(a, torch.Tensor) else a for a in args)
        raises_like(fn, args, dev)
