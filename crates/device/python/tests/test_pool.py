"""Max, average, adaptive average and adaptive max pooling (2-d and 3-d) of the "regen" device
(kernels/pool.rs) against PyTorch's CPU kernels: kernel/stride/padding/dilation, ceil_mode,
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
