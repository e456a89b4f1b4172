"""nll_loss, nll_loss2d and cross_entropy of the "regen" device (kernels/ops/loss.rs) against
PyTorch's CPU kernels: reductions none/mean/sum, class weights, ignore_index, un-batched and
batched inputs, int64 and uint8 targets, strided inputs, float32/float64/bfloat16/float16,
gradients through autograd (nll_loss_backward, nll_loss2d_backward), the total_weight output,
empty batches, errors with CPU's exception type, and the native-call counters (a CPU fallback
cannot pass as native).

The kernels run CPU's cascade of partial sums in the element type, so results are equal bit for
bit."""

import pytest
import torch
import torch.nn.functional as F

from devtest import counted, make, no_cpu_copy

FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
REDUCTIONS = ["none", "mean", "sum"]


def same(got, expected):
    assert got.device.type == "regen"
    got = got.cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, expected.dtype, got.shape, expected.shape)
    torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)


def raises_like(fn, cpu_args, dev_args):
    with pytest.raises(Exception) as cpu:
        fn(*cpu_args)
    with pytest.raises(type(cpu.value)):
        fn(*dev_args)


def targets(shape, classes, seed, ignore=None):
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(0, classes, shape, generator=g)
    if ignore is not None:
        t[torch.rand(shape, generator=g) < 0.3] = ignore
    return t


CASES = {
    # name: (input shape, target shape)
    "batched": ((37, 5), (37,)),
    "unbatched": ((5,), ()),
    "large": ((300, 7), (300,)),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_nll_loss(dtype, reduction, weighted, case):
    xs, ts = CASES[case]
    classes = xs[-1]
    x = make(xs, torch.float32, seed=1).to(dtype)
    t = targets(ts, classes, seed=2, ignore=1 if case != "unbatched" else None)
    w = make((classes,), torch.float32, seed=3).abs().to(dtype) if weighted else None
    xd = x.to("regen").requires_grad_()
    xc = x.clone().requires_grad_()
    wd = w.to("regen") if weighted else None
    ignore = 1 if case != "unbatched" else -100
    expected = F.nll_loss(xc, t, w, reduction=reduction, ignore_index=ignore)
    with counted("nll_loss_forward.output"):
        got = F.nll_loss(xd, t.to("regen"), wd, reduction=reduction, ignore_index=ignore)
    same(got.detach(), expected.detach())
    g = make(expected.shape, torch.float32, seed=4).to(dtype)
    expected.backward(g)
    with counted("nll_loss_backward.grad_input"):
        got.backward(g.to("regen"))
    same(xd.grad, xc.grad)


def test_nll_loss_forward_total_weight_and_layouts():
    x = make((9, 6), torch.float64, seed=5).t().contiguous().t()  # column-major
    t = targets((9,), 6, seed=6)
    w = make((12,), torch.float64, seed=7).abs()[::2]  # strided weight
    for reduction, code in [("none", 0), ("mean", 1), ("sum", 2)]:
        exp = torch.ops.aten.nll_loss_forward(x, t, w, code, -100)
        with counted("nll_loss_forward.output"):
            got = torch.ops.aten.nll_loss_forward(x.to("regen"), t.to("regen"), w.to("regen"), code, -100)
        same(got[0], exp[0])
        same(got[1], exp[1])
    # uint8 targets, as CPU's nll_loss reads them.
    tb = t.to(torch.uint8)
    same(F.nll_loss(x.to("regen"), tb.to("regen")), F.nll_loss(x, tb))


def test_nll_loss_empty_and_all_ignored():
    x = torch.empty(0, 4)
    t = torch.empty(0, dtype=torch.long)
    for reduction in REDUCTIONS:
        same(F.nll_loss(x.to("regen"), t.to("regen"), reduction=reduction), F.nll_loss(x, t, reduction=reduction))
    x = make((3, 4), torch.float32, seed=8)
    t = torch.full((3,), -100)
    same(F.nll_loss(x.to("regen"), t.to("regen")), F.nll_loss(x, t))  # 0/0: nan


def test_nll_loss_errors():
    x = make((3, 4), torch.float32, seed=9)
    for t in [torch.tensor([0, 4, 1]), torch.tensor([0, -1, 1])]:
        for reduction in REDUCTIONS:
            raises_like(lambda a, b: F.nll_loss(a, b, reduction=reduction), (x, t), (x.to("regen"), t.to("regen")))
    t = torch.tensor([0, 1, 2])
    raises_like(F.nll_loss, (x, t[:2]), (x.to("regen"), t[:2].to("regen")))  # size mismatch
    raises_like(F.nll_loss, (x, t.int()), (x.to("regen"), t.int().to("regen")))  # int32 target
    w = torch.ones(5)
    raises_like(lambda a, b, c: F.nll_loss(a, b, c), (x, t, w), (x.to("regen"), t.to("regen"), w.to("regen")))
    raises_like(F.nll_loss, (x.long(), t), (x.long().to("regen"), t.to("regen")))  # integer input


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss2d(dtype, reduction, weighted):
    x = make((3, 4, 5, 6), torch.float32, seed=10).to(dtype)
    t = targets((3, 5, 6), 4, seed=11, ignore=2)
    w = make((4,), torch.float32, seed=12).abs().to(dtype) if weighted else None
    xc = x.clone().requires_grad_()
    xd = x.to("regen").requires_grad_()
    expected = F.nll_loss(xc, t, w, reduction=reduction, ignore_index=2)
    with counted("nll_loss2d_forward"):
        got = F.nll_loss(xd, t.to("regen"), None if w is None else w.to("regen"), reduction=reduction, ignore_index=2)
    same(got.detach(), expected.detach())
    g = make(expected.shape, torch.float32, seed=13).to(dtype)
    expected.backward(g)
    with counted("nll_loss2d_backward"):
        got.backward(g.to("regen"))
    same(xd.grad, xc.grad)


def test_nll_loss2d_channels_last_and_errors():
    x = make((2, 3, 4, 5), torch.float32, seed=14).to(memory_format=torch.channels_last)
    t = targets((2, 4, 5), 3, seed=15)
    same(F.nll_loss(x.to("regen"), t.to("regen")), F.nll_loss(x, t))
    bad = t.clone()
    bad[1, 2, 3] = 3
    raises_like(F.nll_loss, (x, bad), (x.to("regen"), bad.to("regen")))
    raises_like(F.nll_loss, (x, t[:, :3]), (x.to("regen"), t[:, :3].to("regen")))
    # nll_loss_nd flattens 5-d inputs onto nll_loss2d.
    x5 = make((2, 3, 2, 3, 4), torch.float32, seed=16)
    t5 = targets((2, 2, 3, 4), 3, seed=17)
    with counted("nll_loss2d_forward"):
        same(F.nll_loss(x5.to("regen"), t5.to("regen")), F.nll_loss(x5, t5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_cross_entropy_runs_natively(dtype, label_smoothing):
    x = make((16, 10), torch.float32, seed=18).to(dtype)
    t = targets((16,), 10, seed=19, ignore=-100)
    w = make((10,), torch.float32, seed=20).abs().to(dtype)
    xc = x.clone().requires_grad_()
    xd = x.to("regen").requires_grad_()
    expected = F.cross_entropy(xc, t, w, label_smoothing=label_smoothing)
    with counted("_log_softmax"), counted("nll_loss_forward.output"), no_cpu_copy():
        got = F.cross_entropy(xd, t.to("regen"), w.to("regen"), label_smoothing=label_smoothing)
    # log_softmax's exponentials are vmath's, not Sleef's: a few ulps.
    torch.testing.assert_close(got.detach().cpu(), expected.detach())
    expected.backward()
    with counted("nll_loss_backward.grad_input"), counted("_log_softmax_backward_data"), no_cpu_copy():
        got.backward()
    torch.testing.assert_close(xd.grad.cpu(), xc.grad)


# ---------------------------------------------------------------------------------------------
# Elementwise losses: a pointwise row, then the reduction engine's mean or sum.

ELEMENTWISE = {
    # name: (function, forward key, backward key)
    "mse": (lambda x, y, r: F.mse_loss(x, y, reduction=r), "mse_loss.out", "mse_loss_backward"),
    "smooth_l1": (lambda x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=0.5), "smooth_l1_loss.out",
                  "smooth_l1_loss_backward.grad_input"),
    "huber": (lambda x, y, r: F.huber_loss(x, y, reduction=r, delta=0.7), "huber_loss", "huber_loss_backward.out"),
    "bce": (lambda x, y, r: F.binary_cross_entropy(x.sigmoid(), y, reduction=r), "binary_cross_entropy",
            "binary_cross_entropy_backward"),
    "bce_weight": (lambda x, y, r, w=make((7,), torch.float32, seed=30).abs():
                   F.binary_cross_entropy(x.sigmoid(), y, w.to(x.device, x.dtype), reduction=r),
                   "binary_cross_entropy", "binary_cross_entropy_backward"),
}

# Rows compute float16/bfloat16 in float32 and round once (CPU rounds each step); sums of a few
# hundred terms in another grouping for the reductions.
TOL = {torch.float32: dict(rtol=1e-6, atol=1e-6), torch.float64: dict(rtol=1e-12, atol=1e-12),
       torch.bfloat16: dict(rtol=2e-2, atol=2e-2), torch.float16: dict(rtol=2e-3, atol=2e-3)}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", list(ELEMENTWISE))
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_elementwise_losses(dtype, reduction, name, layout):
    fn, fwd, bwd = ELEMENTWISE[name]
    x = make((5, 7), torch.float32, seed=31).to(dtype)
    y = make((5, 7), torch.float32, seed=32).to(dtype)
    if name.startswith("bce"):
        y = y.float().sigmoid().to(dtype)
    if layout == "transposed":
        x, y = x.t().contiguous().t(), y.t().contiguous().t()
    xc, xd = x.clone().requires_grad_(), x.to("regen").requires_grad_()
    expected = fn(xc, y, reduction)
    with counted(fwd), no_cpu_copy():
        got = fn(xd, y.to("regen"), reduction)
    assert got.device.type == "regen"
    torch.testing.assert_close(got.detach().cpu(), expected.detach(), **TOL[dtype])
    g = make(expected.shape, torch.float32, seed=33).to(dtype)
    expected.backward(g)
    with counted(bwd), no_cpu_copy():
        got.backward(g.to("regen"))
    torch.testing.assert_close(xd.grad.cpu(), xc.grad, **TOL[dtype])


def test_elementwise_losses_exact_float32():
    """float32 rows agree bit for bit; the reductions within the reduction engine's rounding (its
    sum of a whole tensor groups terms otherwise than CPU's vectorised cascade: 1 ulp here)."""
    x = make((64, 33), torch.float32, seed=34)
    y = make((64, 33), torch.float32, seed=35)
    p, t = x.sigmoid(), y.sigmoid()
    cases = [(F.mse_loss, x, y), (F.smooth_l1_loss, x, y), (F.huber_loss, x, y), (F.binary_cross_entropy, p, t)]
    for fn, a, b in cases:
        same(fn(a.to("regen"), b.to("regen"), reduction="none"), fn(a, b, reduction="none"))
        for r in ["mean", "sum"]:
            got = fn(a.to("regen"), b.to("regen"), reduction=r)
            torch.testing.assert_close(got.cpu(), fn(a, b, reduction=r), rtol=1e-6, atol=0)


def test_elementwise_loss_errors_and_edges():
    x = make((4, 5), torch.float32, seed=36)
    y = make((4, 5), torch.float32, seed=37)
    raises_like(lambda a, b: F.huber_loss(a, b, delta=0.0), (x, y), (x.to("regen"), y.to("regen")))
    raises_like(lambda a, b: F.smooth_l1_loss(a, b, beta=-1.0), (x, y), (x.to("regen"), y.to("regen")))
    raises_like(F.binary_cross_entropy, (x, y.sigmoid()), (x.to("regen"), y.sigmoid().to("regen")))  # input out of [0, 1]
    raises_like(F.binary_cross_entropy, (x.sigmoid(), y), (x.sigmoid().to("regen"), y.to("regen")))  # target out of [0, 1]
    # log clamped at -100 at 0 and 1, empty inputs (mean: nan).
    p = torch.tensor([0.0, 1.0, 0.5, 1e-30])
    t = torch.tensor([1.0, 0.0, 0.5, 1.0])
    same(F.binary_cross_entropy(p.to("regen"), t.to("regen"), reduction="none"), F.binary_cross_entropy(p, t, reduction="none"))
    e = torch.empty(0, 3)
    for r in REDUCTIONS:
        same(F.mse_loss(e.to("regen"), e.to("regen"), reduction=r), F.mse_loss(e, e, reduction=r))


# ---------------------------------------------------------------------------------------------
# multi_margin_loss and multilabel_margin_loss: CPU's loops in its order (sums in the element
# type, reductions in double), so float32 and float64 are equal bit for bit. CPU has no float16 or
# bfloat16 kernel for either.

MARGIN_CASES = {
    # name: (input shape, how the device input is laid out)
    "batched": ((13, 5), lambda t: t),
    "unbatched": ((5,), lambda t: t),
    "transposed": ((5, 13), lambda t: t.t()),
    "sliced": ((26, 7), lambda t: t[::2, 1:6]),
}


def margin_input(case, dtype, seed):
    shape, layout = MARGIN_CASES[case]
    base = make(shape, torch.float32, seed=seed).to(dtype)
    return layout(base), layout(base.to("regen"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p,margin,weighted", [(1, 1.0, False), (2, 0.7, False), (1, 1.3, True), (2, 1.0, True)])
@pytest.mark.parametrize("case", list(MARGIN_CASES))
def test_multi_margin_loss(dtype, reduction, p, margin, weighted, case):
    x, xd = margin_input(case, dtype, seed=11)
    classes = x.shape[-1]
    t = targets(x.shape[:-1], classes, seed=12)
    w = make((classes,), torch.float32, seed=13).abs().to(dtype) if weighted else None
    x.requires_grad_(True)
    xd.requires_grad_(True)
    expected = F.multi_margin_loss(x, t, p=p, margin=margin, weight=w, reduction=reduction)
    with counted("multi_margin_loss"), no_cpu_copy():
        got = F.multi_margin_loss(xd, t.to("regen"), p=p, margin=margin, weight=None if w is None else w.to("regen"), reduction=reduction)
    same(got, expected.detach())
    g = make(expected.shape, torch.float32, seed=14).to(dtype)
    expected.backward(g)
    with counted("multi_margin_loss_backward"):
        got.backward(g.to("regen"))
    same(xd.grad, x.grad)


def test_multi_margin_loss_out_and_errors():
    x = make((6, 4), torch.float64, seed=1)
    t = targets((6,), 4, seed=2)
    out = torch.empty(0, dtype=torch.float64, device="regen")
    with counted("multi_margin_loss.out"):
        torch._C._nn.multi_margin_loss(x.to("regen"), t.to("regen"), 2, 0.5, None, 0, out=out)
    same(out, torch._C._nn.multi_margin_loss(x, t, 2, 0.5, None, 0))
    gi = torch.empty(0, dtype=torch.float64, device="regen")
    g = make((6,), torch.float64, seed=3)
    with counted("multi_margin_loss_backward.grad_input"):
        torch.ops.aten.multi_margin_loss_backward.grad_input(g.to("regen"), x.to("regen"), t.to("regen"), 2, 0.5, None, 0, grad_input=gi)
    same(gi, torch.ops.aten.multi_margin_loss_backward(g, x, t, 2, 0.5, None, 0))
    A = torch.ops.aten
    bad = [
        (A.multi_margin_loss, (x, torch.tensor([0, 1, 4, 0, 0, 0]), 1, 1.0, None, 1)),  # target out of range
        (A.multi_margin_loss, (x, t, 3, 1.0, None, 1)),  # p
        (A.multi_margin_loss, (x, t[:4], 1, 1.0, None, 1)),  # target size
        (A.multi_margin_loss, (x, t.int(), 1, 1.0, None, 1)),  # target dtype
        (A.multi_margin_loss, (x, t, 1, 1.0, torch.ones(3, dtype=torch.float64), 1)),  # weight size
        (A.multi_margin_loss, (x, t, 1, 1.0, torch.ones(4), 1)),  # weight dtype
        (A.multi_margin_loss, (x[:, :0], t, 1, 1.0, None, 1)),  # empty classes
        (A.multi_margin_loss, (x.bfloat16(), t, 1, 1.0, None, 1)),  # no bfloat16 kernel
    ]
    for fn, args in bad:
        dev = tuple(a.to("regen") if isinstance(a, torch.Tensor) else a for a in args)
        raises_like(fn, args, dev)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", ["batched", "unbatched", "transposed"])
def test_multilabel_margin_loss(dtype, reduction, case):
    x, xd = margin_input(case, dtype, seed=21)
    classes = x.shape[-1]
    g = torch.Generator().manual_seed(22)
    t = torch.randint(0, classes, x.shape, generator=g)
    # Labels end at the first -1; what follows it is ignored.
    t[..., 2] = -1
    t[..., 0] = torch.where(torch.rand(t[..., 0].shape, generator=g) < 0.2, -1, t[..., 0])
    x.requires_grad_(True)
    xd.requires_grad_(True)
    expected = F.multilabel_margin_loss(x, t, reduction=reduction)
    with counted("multilabel_margin_loss_forward"), no_cpu_copy():
        got = F.multilabel_margin_loss(xd, t.to("regen"), reduction=reduction)
    same(got, expected.detach())
    gy = make(expected.shape, torch.float32, seed=23).to(dtype)
    expected.backward(gy)
    with counted("multilabel_margin_loss_backward"):
        got.backward(gy.to("regen"))
    same(xd.grad, x.grad)
    # is_target, the extra output backward consumes.
    out, is_t = torch.ops.aten.multilabel_margin_loss_forward(x.detach(), t, 1)
    out_d, is_t_d = torch.ops.aten.multilabel_margin_loss_forward(xd.detach(), t.to("regen"), 1)
    same(out_d, out)
    same(is_t_d, is_t)


def test_multilabel_margin_loss_out_and_errors():
    A = torch.ops.aten
    x = make((4, 5), torch.float64, seed=1)
    t = torch.tensor([[1, 2, -1, 0, 0], [0, 0, 0, 0, 0], [4, -1, 0, 0, 0], [3, 1, 0, 2, -1]])
    out, ist = torch.empty(0, dtype=torch.float64, device="regen"), torch.empty(0, dtype=torch.float64, device="regen")
    with counted("multilabel_margin_loss_forward.output"):
        A.multilabel_margin_loss_forward.output(x.to("regen"), t.to("regen"), 0, output=out, is_target=ist)
    eo, ei = A.multilabel_margin_loss_forward(x, t, 0)
    same(out, eo)
    same(ist, ei)
    g = make((4,), torch.float64, seed=2)
    gi = torch.empty(0, dtype=torch.float64, device="regen")
    with counted("multilabel_margin_loss_backward.grad_input"):
        A.multilabel_margin_loss_backward.grad_input(g.to("regen"), x.to("regen"), t.to("regen"), 0, ist, grad_input=gi)
    same(gi, A.multilabel_margin_loss_backward(g, x, t, 0, ei))
    bad = [
        (A.multilabel_margin_loss_forward, (x, t + 5, 1)),  # target out of range
        (A.multilabel_margin_loss_forward, (x, t - 3, 1)),
        (A.multilabel_margin_loss_forward, (x, t[:2], 1)),  # target size
        (A.multilabel_margin_loss_forward, (x, t.int(), 1)),  # target dtype
        (A.multilabel_margin_loss_forward, (x.half(), t, 1)),  # no float16 kernel
        (A.multilabel_margin_loss_backward, (g, x, t, 0, ei[:2])),  # is_target size
        (A.multilabel_margin_loss_backward, (g, x, t, 0, ei * 2)),  # is_target out of range
        (A.multilabel_margin_loss_backward, (g[:2], x, t, 0, ei)),  # grad_output size
    ]
    for fn, args in bad:
        dev = tuple(a.to("regen") if isinstance(a, torch.Tensor) else a for a in args)
        raises_like(fn, args, dev)
