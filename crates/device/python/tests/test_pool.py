"""Max, average, adaptive average and adaptive max pooling (2-d and 3-d) of the "regen" device
(kernels/ops/pool.rs) against PyTorch's CPU kernels: kernel/stride/padding/dilation, ceil_mode,
count_include_pad and divisor_override; contiguous, un-batched, channels-last and sliced inputs;
float32, float64, bfloat16, float16 and the integer dtypes CPU pools; gradients through autograd;
NaNs (max pooling returns them and their index); errors with CPU's exception type; and the
native-call counters (a CPU fallback cannot pass as native).

Windows are summed in CPU's order in CPU's op-math type, so values are equal bit for bit."""

import pytest
import torch
import torch.nn.functional as F

from devtest import counted, make, no_cpu_copy

FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


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


LAYOUTS2 = {
    "contiguous": ((2, 3, 9, 11), lambda t: t),
    "unbatched": ((3, 9, 11), lambda t: t),
    "channels_last": ((2, 3, 9, 11), lambda t: t.contiguous(memory_format=torch.channels_last)),
    "sliced": ((2, 6, 18, 11), lambda t: t[:, ::2, ::2, :]),
}
LAYOUTS3 = {
    "contiguous": ((2, 3, 5, 7, 6), lambda t: t),
    "unbatched": ((3, 5, 7, 6), lambda t: t),
    "channels_last": ((2, 3, 5, 7, 6), lambda t: t.contiguous(memory_format=torch.channels_last_3d)),
}

# (callable of (x, nd) -> output, forward keys, backward keys); nd is 2 or 3.
MAX_ARGS = [
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=2),
    dict(kernel_size=(3, 2, 2), stride=(1, 2, 1), padding=(1, 0, 1), dilation=(1, 2, 1), ceil_mode=True),
]
AVG_ARGS = [
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=(2, 3, 2), stride=(2, 1, 2), ceil_mode=True, count_include_pad=False),
    dict(kernel_size=2, stride=1, divisor_override=3),
]


def fit(args, nd):
    """Per-dim tuples of a 3-d argument list trimmed to nd dims."""
    return {k: (v[-nd:] if isinstance(v, tuple) else v) for k, v in args.items()}


def check(fn, x, fwd, bwd, dtype):
    xc = x.clone().requires_grad_()
    xd = x.to("regen").requires_grad_()
    expected = fn(xc)
    with counted(fwd), no_cpu_copy():
        got = fn(xd)
    same(got.detach(), expected.detach())
    if dtype.is_floating_point:
        g = make(expected.shape, torch.float32, seed=7).to(dtype)
        expected.backward(g)
        with counted(bwd), no_cpu_copy():
            got.backward(g.to("regen"))
        same(xd.grad, xc.grad)
    return got


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", list(LAYOUTS2))
@pytest.mark.parametrize("args", range(len(MAX_ARGS)))
def test_max_pool2d(dtype, layout, args):
    shape, view = LAYOUTS2[layout]
    x = view(make(shape, torch.float32, seed=1).to(dtype))
    kw = fit(MAX_ARGS[args], 2)
    got = check(lambda t: F.max_pool2d(t, **kw), x, "max_pool2d_with_indices.out",
                "max_pool2d_with_indices_backward.grad_input", dtype)
    if layout == "channels_last":
        assert got.is_contiguous(memory_format=torch.channels_last)
    _, idx = F.max_pool2d(x.to("regen"), return_indices=True, **kw)
    same(idx, F.max_pool2d(x, return_indices=True, **kw)[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", list(LAYOUTS3))
@pytest.mark.parametrize("args", range(len(MAX_ARGS)))
def test_max_pool3d(dtype, layout, args):
    shape, view = LAYOUTS3[layout]
    x = view(make(shape, torch.float32, seed=2).to(dtype))
    kw = fit(MAX_ARGS[args], 3)
    check(lambda t: F.max_pool3d(t, **kw), x, "max_pool3d_with_indices", "max_pool3d_with_indices_backward", dtype)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.int8])
def test_max_pool_integers(dtype):
    x = make((2, 3, 8, 9), dtype, seed=3)
    with counted("max_pool2d_with_indices.out"):
        got = F.max_pool2d(x.to("regen"), 3, 2, 1, return_indices=True)
    exp = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    same(got[0], exp[0])
    same(got[1], exp[1])
    x3 = make((2, 3, 4, 8, 9), dtype, seed=3)
    with counted("max_pool3d_with_indices"):
        same(F.max_pool3d(x3.to("regen"), 2), F.max_pool3d(x3, 2))


def test_max_pool_nan_and_inf():
    x = make((1, 2, 6, 6), torch.float32, seed=4)
    x[0, 0, 1, 1] = float("nan")
    x[0, 0, 0, 0] = float("nan")
    x[0, 1, :3, :3] = float("-inf")
    x[0, 1, 4, 4] = float("inf")
    for kw in [dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2)]:
        got = F.max_pool2d(x.to("regen"), return_indices=True, **kw)
        exp = F.max_pool2d(x, return_indices=True, **kw)
        same(got[0], exp[0])
        same(got[1], exp[1])
        got = F.adaptive_max_pool2d(x.to("regen"), 4, return_indices=True)
        exp = F.adaptive_max_pool2d(x, 4, return_indices=True)
        same(got[0], exp[0])
        same(got[1], exp[1])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", list(LAYOUTS2))
@pytest.mark.parametrize("args", range(len(AVG_ARGS)))
def test_avg_pool2d(dtype, layout, args):
    shape, view = LAYOUTS2[layout]
    x = view(make(shape, torch.float32, seed=5).to(dtype))
    kw = fit(AVG_ARGS[args], 2)
    check(lambda t: F.avg_pool2d(t, **kw), x, "avg_pool2d.out", "avg_pool2d_backward.grad_input", dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("layout", list(LAYOUTS3))
@pytest.mark.parametrize("args", range(len(AVG_ARGS)))
def test_avg_pool3d(dtype, layout, args):
    shape, view = LAYOUTS3[layout]
    x = view(make(shape, torch.float32, seed=6).to(dtype))
    kw = fit(AVG_ARGS[args], 3)
    check(lambda t: F.avg_pool3d(t, **kw), x, "avg_pool3d.out", "avg_pool3d_backward.grad_input", dtype)


def test_avg_pool_int64():
    x = make((2, 3, 7, 8), torch.int64, seed=8) * 7
    for kw in [dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2, divisor_override=3)]:
        with counted("avg_pool2d.out"):
            same(F.avg_pool2d(x.to("regen"), **kw), F.avg_pool2d(x, **kw))
        x3 = x.unsqueeze(2).expand(2, 3, 4, 7, 8).contiguous()
        with counted("avg_pool3d.out"):
            same(F.avg_pool3d(x3.to("regen"), **kw), F.avg_pool3d(x3, **kw))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", list(LAYOUTS2))
@pytest.mark.parametrize("size", [(4, 5), (9, 11), (13, 3), (1, 2)])
def test_adaptive_avg_pool2d(dtype, layout, size):
    shape, view = LAYOUTS2[layout]
    x = view(make(shape, torch.float32, seed=9).to(dtype))
    check(lambda t: F.adaptive_avg_pool2d(t, size), x, "_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward", dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", list(LAYOUTS2))
@pytest.mark.parametrize("size", [(4, 5), (9, 11), (13, 3), 1])
def test_adaptive_max_pool2d(dtype, layout, size):
    shape, view = LAYOUTS2[layout]
    x = view(make(shape, torch.float32, seed=10).to(dtype))
    check(lambda t: F.adaptive_max_pool2d(t, size), x, "adaptive_max_pool2d.out",
          "adaptive_max_pool2d_backward.grad_input", dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", list(LAYOUTS3))
@pytest.mark.parametrize("size", [(2, 4, 5), (5, 9, 2)])
def test_adaptive_pool3d(dtype, layout, size):
    shape, view = LAYOUTS3[layout]
    x = view(make(shape, torch.float32, seed=11).to(dtype))
    check(lambda t: F.adaptive_avg_pool3d(t, size), x, "_adaptive_avg_pool3d", "_adaptive_avg_pool3d_backward", dtype)
    check(lambda t: F.adaptive_max_pool3d(t, size), x, "adaptive_max_pool3d.out",
          "adaptive_max_pool3d_backward.grad_input", dtype)


def test_out_forms():
    x = make((2, 3, 8, 8), torch.float32, seed=12)
    out, idx = torch.empty(0, device="regen"), torch.empty(0, dtype=torch.long, device="regen")
    with counted("max_pool2d_with_indices.out"):
        torch.ops.aten.max_pool2d_with_indices.out(x.to("regen"), [3, 3], [2, 2], [1, 1], [1, 1], False, out=out, indices=idx)
    exp = torch.ops.aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1], [1, 1], False)
    same(out, exp[0])
    same(idx, exp[1])
    out = torch.empty(0, device="regen")
    with counted("adaptive_avg_pool2d.out"):
        torch._C._nn.adaptive_avg_pool2d(x.to("regen"), [3, 5], out=out)
    same(out, F.adaptive_avg_pool2d(x, [3, 5]))
    out = torch.empty(0, device="regen")
    with counted("avg_pool2d.out"):
        torch._C._nn.avg_pool2d(x.to("regen"), [2, 2], out=out)
    same(out, F.avg_pool2d(x, 2))


def test_empty_batch():
    x = torch.empty(0, 3, 8, 8)
    for fn in [lambda t: F.max_pool2d(t, 2), lambda t: F.avg_pool2d(t, 2), lambda t: F.adaptive_avg_pool2d(t, 3),
               lambda t: F.adaptive_max_pool2d(t, 3)]:
        same(fn(x.to("regen")), fn(x))


def test_errors():
    x = make((2, 3, 8, 8), torch.float32, seed=13)
    cases = [
        lambda t: F.max_pool2d(t, 3, padding=2),  # pad over half the kernel
        lambda t: F.max_pool2d(t, 0),  # zero kernel
        lambda t: F.max_pool2d(t, 9),  # output too small
        lambda t: F.max_pool2d(t[0, 0], 2),  # 2-d input
        lambda t: F.avg_pool2d(t, 2, divisor_override=0),
        lambda t: F.avg_pool2d(t.int(), 2),  # dtype CPU does not pool
        lambda t: F.adaptive_avg_pool2d(t.long(), 2),
        lambda t: F.adaptive_max_pool2d(t[0, 0], 2),
        lambda t: F.max_pool3d(t, 2),  # 4-d input, depth 3: fine on CPU? (then both succeed)
        lambda t: F.avg_pool3d(t.unsqueeze(2), 2),  # image smaller than the kernel
        lambda t: F.max_pool2d(t, 2, stride=0),
    ]
    for fn in cases:
        try:
            fn(x)
        except Exception:
            raises_like(fn, (x,), (x.to("regen"),))
        else:
            same(fn(x.to("regen")), fn(x))


# ---------------------------------------------------------------------------------------------
# Nearest upsampling: a window of one element in the same engine.

NEAREST = {1: ((2, 3, 7), "1d"), 2: ((2, 3, 5, 7), "2d"), 3: ((2, 3, 3, 5, 4), "3d")}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("how", [dict(scale_factor=2), dict(scale_factor=1.7), dict(size=3), "size_up"])
def test_upsample_nearest(dtype, nd, mode, how):
    shape, suffix = NEAREST[nd]
    if how == "size_up":
        how = dict(size=tuple(s * 2 + 1 for s in shape[2:]))
    x = make(shape, torch.float32, seed=20).to(dtype)
    if nd == 2 and dtype == torch.float32:
        x = x.contiguous(memory_format=torch.channels_last)
    key = ("_upsample_nearest_exact" if mode == "nearest-exact" else "upsample_nearest") + suffix
    check(lambda t: F.interpolate(t, mode=mode, **how), x, key + ".out", key + "_backward.grad_input", dtype)


def test_upsample_nearest_uint8_and_errors():
    x = make((1, 2, 4, 5), torch.uint8, seed=21)
    with counted("upsample_nearest2d.out"):
        same(F.interpolate(x.to("regen"), scale_factor=3), F.interpolate(x, scale_factor=3))
    xi = make((1, 2, 4, 5), torch.int64, seed=21)
    raises_like(lambda t: F.interpolate(t, scale_factor=2), (xi,), (xi.to("regen"),))
    xf = make((1, 2, 4, 5), torch.float32, seed=22)
    raises_like(lambda t: torch._C._nn.upsample_nearest2d(t, [0, 3]), (xf,), (xf.to("regen"),))


# ---------------------------------------------------------------------------------------------
# Max unpooling: a scatter of each input at its index (values equal bit for bit); the backward
# through autograd is a gather.

UNPOOL = {
    # name: (nd, input shape, kernel, output size or None, layout)
    "2d": (2, (2, 3, 8, 6), 2, None, lambda t: t),
    "2d_unbatched": (2, (3, 7, 7), 3, (7, 7), lambda t: t),
    "2d_channels_last": (2, (2, 3, 8, 6), 2, None, lambda t: t.contiguous(memory_format=torch.channels_last)),
    "2d_sliced": (2, (2, 6, 8, 6), 2, (9, 7), lambda t: t[:, ::2]),
    "3d": (3, (2, 2, 4, 6, 4), 2, None, lambda t: t),
    "3d_unbatched": (3, (2, 5, 4, 4), 2, (5, 4, 5), lambda t: t),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", list(UNPOOL))
def test_max_unpool(dtype, case):
    nd, shape, k, size, layout = UNPOOL[case]
    pool = F.max_pool2d if nd == 2 else F.max_pool3d
    unpool = F.max_unpool2d if nd == 2 else F.max_unpool3d
    x = make(shape, torch.float32, seed=31).to(dtype)
    y, idx = pool(x, k, return_indices=True)
    y, idx = layout(y), layout(idx)
    yd, idxd = y.to("regen"), idx.to("regen")
    y.requires_grad_(True)
    yd.requires_grad_(True)
    expected = unpool(y, idx, k, output_size=size)
    with counted(f"max_unpool{nd}d"), no_cpu_copy():
        got = unpool(yd, idxd, k, output_size=size)
    same(got.detach(), expected.detach())
    g = make(expected.shape, torch.float32, seed=32).to(dtype)
    expected.backward(g)
    got.backward(g.to("regen"))
    same(yd.grad, y.grad)


def test_max_unpool_out_and_errors():
    A = torch.ops.aten
    x = make((1, 2, 4, 4), torch.float32, seed=33)
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    out = torch.empty(0, device="regen")
    with counted("max_unpool2d.out"):
        A.max_unpool2d.out(y.to("regen"), idx.to("regen"), [4, 4], out=out)
    same(out, A.max_unpool2d(y, idx, [4, 4]))
    x3 = make((1, 2, 4, 4, 4), torch.float32, seed=34)
    y3, idx3 = F.max_pool3d(x3, 2, return_indices=True)
    out3 = torch.empty(0, device="regen")
    with counted("max_unpool3d.out"):
        A.max_unpool3d.out(y3.to("regen"), idx3.to("regen"), [4, 4, 4], [2, 2, 2], [0, 0, 0], out=out3)
    same(out3, A.max_unpool3d(y3, idx3, [4, 4, 4], [2, 2, 2], [0, 0, 0]))
    bad = [
        (A.max_unpool2d, (y, idx + 100, [4, 4])),  # index past the plane
        (A.max_unpool2d, (y, idx - 100, [4, 4])),
        (A.max_unpool2d, (y, idx, [4])),
        (A.max_unpool2d, (y, idx[0], [4, 4])),
        (A.max_unpool2d, (y, idx.int(), [4, 4])),
        (A.max_unpool2d, (y[0, 0], idx[0, 0], [4, 4])),
        (A.max_unpool2d, (y.int(), idx, [4, 4])),
        (A.max_unpool3d, (y3, idx3 + 100, [4, 4, 4], [2, 2, 2], [0, 0, 0])),
        (A.max_unpool3d, (y3, idx3, [4, 4, 4], [0, 2, 2], [0, 0, 0])),
        (A.max_unpool3d, (y3[0, 0], idx3[0, 0], [4, 4, 4], [2, 2, 2], [0, 0, 0])),
        (A.max_unpool3d, (y3, idx3, [4, 4], [2, 2, 2], [0, 0, 0])),
        (A.max_unpool3d, (y3, idx3, [3, 4, 4], [2, 2, 2], [0, 0, 0])),
    ]
    for fn, args in bad:
        dev = tuple(a.to("regen") if isinstance(a, torch.Tensor) else a for a in args)
        raises_like(fn, args, dev)


# ---------------------------------------------------------------------------------------------
# Fractional max pooling: deterministic given _random_samples (windows from CPU's
# generate_intervals in the element type), so outputs, indices and gradients equal CPU's.

FRACTIONAL = {
    # name: (nd, input shape, kernel, output size, layout)
    "2d": (2, (2, 3, 11, 9), (3, 2), (5, 6), lambda t: t),
    "2d_unbatched": (2, (3, 10, 10), 2, (4, 7), lambda t: t),
    "2d_transposed": (2, (2, 3, 9, 11), 2, (6, 5), lambda t: t.transpose(2, 3)),
    "3d": (3, (2, 2, 7, 6, 9), (2, 3, 2), (4, 3, 5), lambda t: t),
    "3d_unbatched": (3, (2, 6, 6, 7), 2, (3, 4, 5), lambda t: t),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", list(FRACTIONAL))
def test_fractional_max_pool(dtype, case):
    nd, shape, k, size, layout = FRACTIONAL[case]
    fn = F.fractional_max_pool2d if nd == 2 else F.fractional_max_pool3d
    base = make(shape, torch.float32, seed=41).to(dtype)
    x, xd = layout(base), layout(base.to("regen"))
    batch = x.shape[0] if x.dim() == nd + 2 else 1
    planes = x.shape[-nd - 1]
    samples = torch.rand(batch, planes, nd, generator=torch.Generator().manual_seed(42)).to(dtype)
    x.requires_grad_(True)
    xd.requires_grad_(True)
    expected, eidx = fn(x, k, output_size=size, return_indices=True, _random_samples=samples)
    with counted(f"fractional_max_pool{nd}d.output"), no_cpu_copy():
        got, gidx = fn(xd, k, output_size=size, return_indices=True, _random_samples=samples.to("regen"))
    same(got.detach(), expected.detach())
    same(gidx, eidx)
    g = make(expected.shape, torch.float32, seed=43).to(dtype)
    expected.backward(g)
    key = "fractional_max_pool2d_backward.grad_input" if nd == 2 else "fractional_max_pool3d_backward"
    with counted(key):
        got.backward(g.to("regen"))
    same(xd.grad, x.grad)


def test_fractional_max_pool_nan_and_errors():
    A = torch.ops.aten
    x = make((1, 2, 8, 8), torch.float32, seed=44)
    x[0, 0, 3, 3] = float("nan")
    rs = torch.rand(1, 2, 2, generator=torch.Generator().manual_seed(45))
    eo, ei = A.fractional_max_pool2d(x, [2, 2], [4, 4], rs)
    go, gi = A.fractional_max_pool2d(x.to("regen"), [2, 2], [4, 4], rs.to("regen"))
    same(go, eo)
    same(gi, ei)
    gy = make((1, 2, 4, 4), torch.float32, seed=46)
    out = torch.empty(0, device="regen")
    with counted("fractional_max_pool3d_backward.grad_input"):
        x3 = make((1, 2, 6, 6, 6), torch.float32, seed=47)
        rs3 = torch.rand(1, 2, 3, generator=torch.Generator().manual_seed(48))
        y3, i3 = A.fractional_max_pool3d(x3, [2, 2, 2], [3, 3, 3], rs3)
        g3 = make(y3.shape, torch.float32, seed=49)
        A.fractional_max_pool3d_backward.grad_input(g3.to("regen"), x3.to("regen"), [2, 2, 2], [3, 3, 3], i3.to("regen"), grad_input=out)
    same(out, A.fractional_max_pool3d_backward(g3, x3, [2, 2, 2], [3, 3, 3], i3))
    bad = [
        (A.fractional_max_pool2d, (x, [2, 2], [8, 4], rs)),  # pool too large
        (A.fractional_max_pool2d, (x, [2, 2], [4, 4], rs[:, :1])),
        (A.fractional_max_pool2d, (x, [2, 2], [4, 4], rs.double())),
        (A.fractional_max_pool2d, (x, [2, 2], [4, 4], rs[..., :1])),
        (A.fractional_max_pool2d, (x, [2, 2], [4, 4], rs.view(1, 4))),
        (A.fractional_max_pool2d, (x[0, 0], [2, 2], [4, 4], rs)),
        (A.fractional_max_pool2d, (x[:, :, :0], [2, 2], [4, 4], rs)),
        (A.fractional_max_pool2d, (x, [0, 2], [4, 4], rs)),
        (A.fractional_max_pool2d_backward, (gy[..., :3], x, [2, 2], [4, 4], ei)),
        (A.fractional_max_pool2d_backward, (gy, x, [2, 2], [4, 4], ei + 100)),
        (A.fractional_max_pool3d, (x3, [2, 2, 2], [6, 3, 3], rs3)),
        (A.fractional_max_pool3d, (x3[0, 0], [2, 2, 2], [3, 3, 3], rs3)),
        (A.fractional_max_pool3d_backward, (g3, x3, [2, 2, 2], [3, 3, 3], i3 + 1000)),
    ]
    for fn, args in bad:
        dev = tuple(a.to("regen") if isinstance(a, torch.Tensor) else a for a in args)
        raises_like(fn, args, dev)


@pytest.mark.parametrize("nd", [2, 3])
def test_max_pool_backward_checks_indices(nd):
    """An index outside its plane is an error on the device (CPU writes out of bounds, so its
    result cannot be compared); -1 is skipped, as CPU's `maxindex != -1` does."""
    x = make((2, 3, 4, 6, 6)[5 - 2 - nd:], torch.float32, seed=5)
    k = [2] * nd
    pool = getattr(torch.ops.aten, f"max_pool{nd}d_with_indices")
    back = getattr(torch.ops.aten, f"max_pool{nd}d_with_indices_backward")
    y, idx = pool(x, k, k)
    plane = x[0, 0].numel()
    xd, gd = x.to("regen"), torch.ones_like(y).to("regen")
    for bad in (plane, -2, 10**8):
        i = idx.clone()
        i.view(-1)[5] = bad
        with pytest.raises(RuntimeError, match="Found an invalid max index"):
            back(gd, xd, k, k, [0] * nd, [1] * nd, False, i.to("regen"))
    i = idx.clone()
    i.view(-1)[5] = -1
    key = "max_pool2d_with_indices_backward.grad_input" if nd == 2 else "max_pool3d_with_indices_backward"
    with counted(key):
        got = back(gd, xd, k, k, [0] * nd, [1] * nd, False, i.to("regen"))
    same(got, back(torch.ones_like(y), x, k, k, [0] * nd, [1] * nd, False, i))


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_upsample_1d_size_error_reads_as_cpu(mode):
    """Nearest and linear upsampling share `upsample_1d_common_check` on CPU, wording included."""
    x = torch.ones(1, 1, 0)
    fn = lambda t: F.interpolate(t, size=3, mode=mode)  # noqa: E731
    with pytest.raises(RuntimeError) as cpu:
        fn(x)
    with pytest.raises(RuntimeError) as dev:
        fn(x.to("regen"))
    assert str(dev.value).splitlines()[0] == str(cpu.value).splitlines()[0]
