"""Linear, bilinear, bicubic and trilinear upsampling, reflection and replication padding, and
grid sampling of the "regen" device (kernels/ops/resample.rs) against PyTorch's CPU kernels: sizes and
scale factors, align_corners both ways, contiguous, channels-last, sliced and un-batched inputs,
float32, float64, bfloat16 and float16 (and the integer and complex dtypes padding takes),
gradients through autograd, errors with CPU's exception type, and the native-call counters (a CPU
fallback cannot pass as native).

Upsampling follows CPU's index and weight formulas in its op-math type and the same order of
operations, and padding is an exact gather / scatter-add, so values are compared tightly; grid
sampling's 2-d CPU kernel is vectorised, so its float results are compared within assert_close's
tolerances."""

import pytest
import torch
import torch.nn.functional as F

import devtest
from devtest import counted, make, no_cpu_copy

FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


def close(got, expected, exact=False):
    assert got.device.type == "regen"
    got = got.cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, expected.dtype, got.shape, expected.shape)
    if exact:
        torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)
    elif got.dtype == torch.float16:
        # CPU's compiler contracts the cubic coefficients' polynomial into FMAs, so a weight rounded
        # to float16 can land one ulp away from the separately rounded one.
        torch.testing.assert_close(got, expected, rtol=1e-3, atol=1e-3, equal_nan=True)
    else:
        torch.testing.assert_close(got, expected, equal_nan=True)


def raises_like(fn, cpu_args, dev_args):
    with pytest.raises(Exception) as cpu:
        fn(*cpu_args)
    with pytest.raises(type(cpu.value)):
        fn(*dev_args)


def check(fn, x, fwd, bwd, exact=False, extra=()):
    """fn(x, *extra) on CPU and on the device: values, then gradients of x (and of `extra`
    tensors) through autograd, each under its op's native-call counter."""
    grad = x.dtype.is_floating_point or x.dtype.is_complex
    xc = x.clone().requires_grad_(grad)
    xd = x.to("regen").requires_grad_(grad)
    ec = [e.clone().requires_grad_() for e in extra]
    ed = [e.to("regen").requires_grad_() for e in extra]
    expected = fn(xc, *ec)
    with counted(fwd), no_cpu_copy():
        got = fn(xd, *ed)
    close(got.detach(), expected.detach(), exact)
    if bwd is not None:
        g = make(expected.shape, torch.float32, seed=7).to(expected.dtype)
        expected.backward(g)
        with counted(bwd), no_cpu_copy():
            got.backward(g.to("regen"))
        close(xd.grad, xc.grad, exact)
        for a, b in zip(ed, ec):
            close(a.grad, b.grad, exact)
    return got


# ---------------------------------------------------------------------------------------------
# Upsampling


UP = {
    # mode: (nd, forward key, backward key)
    "linear": (1, "upsample_linear1d.out", "upsample_linear1d_backward.grad_input"),
    "bilinear": (2, "upsample_bilinear2d.out", "upsample_bilinear2d_backward.grad_input"),
    "bicubic": (2, "upsample_bicubic2d.out", "upsample_bicubic2d_backward.grad_input"),
    "trilinear": (3, "upsample_trilinear3d.out", "upsample_trilinear3d_backward.grad_input"),
}
SHAPES = {1: (2, 3, 7), 2: (2, 3, 5, 7), 3: (2, 3, 4, 5, 3)}
LAYOUTS = {
    "contiguous": lambda t: t,
    "channels_last": lambda t: t.contiguous(memory_format=torch.channels_last if t.dim() == 4 else torch.channels_last_3d)
    if t.dim() >= 4 else t.transpose(1, 2).contiguous().transpose(1, 2),
    "sliced": lambda t: t.repeat_interleave(2, dim=-1)[..., ::2],
}
SIZES = [
    dict(scale_factor=2),
    dict(scale_factor=0.6, recompute_scale_factor=False),
    dict(scale_factor=1.7, recompute_scale_factor=False),
    dict(size=9),
    dict(size=3),
    dict(size="same"),
]


def sized(kw, nd, shape):
    if kw.get("size") == "same":
        return dict(size=tuple(shape[2:]))
    if "size" in kw:
        return dict(size=(kw["size"],) * nd)
    return kw


@pytest.mark.parametrize("mode", list(UP))
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("align", [False, True])
def test_upsample(mode, dtype, layout, align):
    nd, fwd, bwd = UP[mode]
    shape = SHAPES[nd]
    x = LAYOUTS[layout](make(shape, torch.float32, seed=1).to(dtype))
    for k, kw in enumerate(SIZES):
        kw = sized(kw, nd, shape)
        fn = lambda t: F.interpolate(t, mode=mode, align_corners=align, **kw)  # noqa: E731
        got = check(fn, x, fwd, bwd)
        if layout == "channels_last" and nd >= 2:
            assert got.is_contiguous(memory_format=torch.channels_last if nd == 2 else torch.channels_last_3d)


@pytest.mark.parametrize("channels", [1, 3, 4, 8])
def test_bilinear_channels_and_large_output(channels):
    # CPU's bilinear kernel changes with the channel count and the output size (its channels-last
    # kernel serves channels-last inputs of more than 3 channels and outputs of H+W <= 128).
    for shape, size in [((2, channels, 9, 10), (70, 80)), ((1, channels, 6, 5), (11, 13))]:
        for fmt in [torch.contiguous_format, torch.channels_last]:
            x = make(shape, torch.float32, seed=2).contiguous(memory_format=fmt)
            for dtype in [torch.float32, torch.float64]:
                check(lambda t: F.interpolate(t, size=size, mode="bilinear"), x.to(dtype),
                      UP["bilinear"][1], UP["bilinear"][2])


def test_upsample_direct_ops_and_out():
    x = make((2, 3, 5, 6), torch.float32, seed=3)
    for op, osize, sc in [
        (torch.ops.aten.upsample_bilinear2d, [9, 4], (1.8, 0.7)),
        (torch.ops.aten.upsample_bicubic2d, [7, 11], (None, None)),
    ]:
        for align in [False, True]:
            exp = op(x, osize, align, *sc)
            close(op(x.to("regen"), osize, align, *sc), exp)
            out = torch.empty(0, device="regen")
            op.out(x.to("regen"), osize, align, *sc, out=out)
            close(out, exp)
    x1 = make((0, 3, 5), torch.float32)
    close(torch.ops.aten.upsample_linear1d(x1.to("regen"), [8], False), torch.ops.aten.upsample_linear1d(x1, [8], False))
    # An explicit scale is used as given (not recomputed from the sizes).
    x3 = make((1, 2, 3, 4, 5), torch.float64, seed=4)
    args = ([6, 7, 8], False, 0.4, 0.55, 0.6)
    close(torch.ops.aten.upsample_trilinear3d(x3.to("regen"), *args), torch.ops.aten.upsample_trilinear3d(x3, *args))


def test_upsample_nonfinite():
    x = make((1, 2, 4, 4), torch.float32, seed=5)
    x[0, 0, 1, 2] = float("nan")
    x[0, 1, 3, 3] = float("inf")
    for mode in ["bilinear", "bicubic"]:
        check(lambda t: F.interpolate(t, size=(7, 9), mode=mode), x, UP[mode][1], None)


def test_upsample_errors():
    A = torch.ops.aten
    x = make((1, 2, 3, 4), torch.float32)
    cases = [
        (A.upsample_bilinear2d, (x[0], [5, 5], False)),
        (A.upsample_bilinear2d, (x, [5], False)),
        (A.upsample_bilinear2d, (x, [0, 5], False)),
        (A.upsample_bilinear2d, (make((1, 0, 3, 4), torch.float32), [5, 5], False)),
        (A.upsample_bilinear2d, (make((1, 2, 3, 4), torch.int64), [5, 5], False)),
        (A.upsample_linear1d, (make((1, 2, 3), torch.int64), [5], False)),
        (A.upsample_bilinear2d_backward, (make((1, 2, 5, 4), torch.float32), [5, 5], [1, 2, 3, 4], False)),
        (A.upsample_bilinear2d_backward, (make((2, 5, 5), torch.float32), [5, 5], [1, 2, 3, 4], False)),
        (A.upsample_linear1d_backward, (make((1, 2, 4), torch.float32), [5], [1, 2, 3], False)),
        (A.upsample_bicubic2d_backward, (make((1, 2, 5, 5), torch.int64), [5, 5], [1, 2, 3, 4], False)),
    ]
    for op, args in cases:
        dev = tuple(a.to("regen") if isinstance(a, torch.Tensor) else a for a in args)
        raises_like(op, args, dev)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got double"):
        A.upsample_bilinear2d.out(x.to("regen"), [5, 5], False, out=torch.empty(0, dtype=torch.float64, device="regen"))


# ---------------------------------------------------------------------------------------------
# Padding


PAD = {
    # (mode, nd): (forward key, backward key)
    ("reflect", 1): ("reflection_pad1d.out", "reflection_pad1d_backward.grad_input"),
    ("reflect", 2): ("reflection_pad2d", "reflection_pad2d_backward"),
    ("reflect", 3): ("reflection_pad3d.out", "reflection_pad3d_backward.grad_input"),
    ("replicate", 1): ("replication_pad1d.out", "replication_pad1d_backward.grad_input"),
    ("replicate", 2): ("replication_pad2d.out", "replication_pad2d_backward"),
    ("replicate", 3): ("replication_pad3d.out", "replication_pad3d_backward"),
}
PADS = {1: [(2, 3), (0, 4), (-1, 2)], 2: [(1, 2, 3, 0), (-2, 1, 2, -1)], 3: [(1, 0, 2, 1, 1, 2), (0, -1, 1, 1, -1, 2)]}
PAD_SHAPES = {1: (2, 3, 6), 2: (2, 3, 5, 6), 3: (2, 3, 4, 5, 6)}


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("dtype", FLOATS + [torch.complex64])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "sliced", "unbatched"])
def test_pad(mode, nd, dtype, layout):
    fwd, bwd = PAD[(mode, nd)]
    x = make(PAD_SHAPES[nd], dtype, seed=6)
    if layout == "unbatched":
        x = x[1]
    elif layout != "contiguous":
        x = LAYOUTS[layout](x)
    for p in PADS[nd]:
        # The backward of a float16/bfloat16 sum of several terms rounds each addition on CPU too.
        check(lambda t: F.pad(t, p, mode=mode), x, fwd, bwd, exact=True)


@pytest.mark.parametrize("dtype", [torch.int64, torch.uint8, torch.int32])
def test_pad_integers(dtype):
    for (mode, nd), (fwd, _) in PAD.items():
        x = make(PAD_SHAPES[nd], dtype, seed=7)
        check(lambda t: F.pad(t, PADS[nd][0], mode=mode), x, fwd, None, exact=True)


def test_pad_out_and_empty_batch():
    A = torch.ops.aten
    x = make((2, 3, 6), torch.float32, seed=8)
    out = torch.empty(0, device="regen")
    A.reflection_pad1d.out(x.to("regen"), [2, 1], out=out)
    close(out, A.reflection_pad1d(x, [2, 1]), True)
    e = make((0, 3, 4, 5), torch.float32)
    close(A.replication_pad2d(e.to("regen"), [1, 1, 2, 2]), A.replication_pad2d(e, [1, 1, 2, 2]), True)
    close(A.reflection_pad2d(e.to("regen"), [1, 1, 2, 2]), A.reflection_pad2d(e, [1, 1, 2, 2]), True)


def test_pad_errors():
    A = torch.ops.aten
    f = lambda *s: make(s, torch.float32)  # noqa: E731
    cases = [
        (A.reflection_pad1d, (f(1, 2, 3), [3, 0])),
        (A.reflection_pad1d, (f(1, 2, 3), [0, 3])),
        (A.reflection_pad1d, (f(1, 2, 5), [-3, -3])),
        (A.reflection_pad1d, (f(5), [1, 1])),
        (A.reflection_pad1d, (f(1, 2, 5), [1, 1, 1, 1])),
        (A.reflection_pad1d, (f(1, 0, 5), [1, 1])),
        (A.reflection_pad2d, (f(1, 2, 3, 3), [1, 1, 3, 0])),
        (A.reflection_pad2d, (f(1, 2, 3, 3), [-2, -2, 0, 0])),
        (A.reflection_pad3d, (f(1, 2, 3, 3, 3), [1, 1, 1, 1, 3, 0])),
        (A.replication_pad1d, (f(1, 2, 3), [-2, -2])),
        (A.replication_pad2d, (f(3, 3), [1, 1, 1, 1])),
        (A.replication_pad3d, (f(1, 2, 0, 3, 3), [1, 1, 1, 1, 1, 1])),
        (A.reflection_pad2d, (make((1, 2, 3, 3), torch.bool), [1, 1, 1, 1])),
        (A.reflection_pad2d_backward, (f(1, 2, 4, 4), f(1, 2, 3, 3), [1, 1, 1, 1])),
        (A.replication_pad1d_backward, (f(1, 2, 4), f(1, 2, 3), [1, 1])),
        (A.replication_pad3d_backward, (make((1, 2, 5, 5, 5), torch.int64), make((1, 2, 3, 3, 3), torch.int64),
                                        [1, 1, 1, 1, 1, 1])),
    ]
    for op, args in cases:
        dev = tuple(a.to("regen") if isinstance(a, torch.Tensor) else a for a in args)
        raises_like(op, args, dev)
    with pytest.raises(RuntimeError, match="Argument #4: Padding size should be less than the corresponding input"):
        A.reflection_pad1d(f(1, 2, 3).to("regen"), [3, 0])


@pytest.mark.parametrize("kind", ["reflection", "replication"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_pad_backward_checks_every_size_of_grad_output(kind, nd):
    """grad_output's channels are checked as CPU checks them; its batch, which CPU leaves
    unchecked, too: the kernel walks the input's batch and channels through grad_output, and a
    smaller one would be read past its end."""
    op = getattr(torch.ops.aten, f"{kind}_pad{nd}d_backward", None)
    if op is None:
        pytest.skip(f"no {kind}_pad{nd}d_backward")
    spatial, padding = (5, 4, 4)[:nd], [1] * (2 * nd)
    grown = tuple(s + 2 for s in spatial)
    inp = make((2, 3, *spatial), torch.float32)
    for channels in (1, 2):
        go = make((2, channels, *grown), torch.float32, seed=5)
        if devtest.PINNED:
            raises_like(op, (go, inp, padding), (go.to("regen"), inp.to("regen"), padding))
        else:
            # Older releases' CPU kernels do not check the channels (torch 2.1 reads past
            # grad_output's end): the device refuses as the pinned release's CPU does.
            with pytest.raises(RuntimeError, match=rf"grad_output channel unexpected\. Expected: 3, Got: {channels}"):
                op(go.to("regen"), inp.to("regen"), padding)
    with pytest.raises(RuntimeError, match=r"grad_output batch unexpected\. Expected: 2, Got: 1"):
        op(make((1, 3, *grown), torch.float32).to("regen"), inp.to("regen"), padding)
    # The sizes it checks are what it reads: a matching grad_output is summed back exactly.
    go = make((2, 3, *grown), torch.float32, seed=6)
    torch.testing.assert_close(op(go.to("regen"), inp.to("regen"), padding).cpu(), op(go, inp, padding))


# ---------------------------------------------------------------------------------------------
# Grid sampling


def grid_of(shape, seed):
    # Coordinates a little beyond [-1, 1], so every padding mode matters.
    return (make(shape, torch.float32, seed=seed) * 0.7).clamp(-1.4, 1.4)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_grid_sample_2d(mode, padding, align, dtype):
    x = make((2, 3, 5, 6), torch.float32, seed=9).to(dtype)
    grid = grid_of((2, 4, 7, 2), 10).to(dtype)
    fn = lambda t, g: F.grid_sample(t, g, mode=mode, padding_mode=padding, align_corners=align)  # noqa: E731
    check(fn, x, "grid_sampler_2d", "grid_sampler_2d_backward", extra=(grid,))
    # Channels-last input, a transposed grid.
    check(fn, x.contiguous(memory_format=torch.channels_last), "grid_sampler_2d", "grid_sampler_2d_backward",
          extra=(grid.transpose(1, 2).contiguous().transpose(1, 2),))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_grid_sample_3d(mode, padding, align, dtype):
    x = make((2, 3, 4, 5, 3), torch.float32, seed=11).to(dtype)
    grid = grid_of((2, 3, 2, 4, 3), 12).to(dtype)
    fn = lambda t, g: F.grid_sample(t, g, mode=mode, padding_mode=padding, align_corners=align)  # noqa: E731
    check(fn, x, "grid_sampler_3d", "grid_sampler_3d_backward", extra=(grid,))


@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("dtype", FLOATS)
def test_grid_sample_3d_bicubic(padding, align, dtype):
    # CPU's tricubic loop is scalar (op-math, taps summed in z, y, x order), so the device's values
    # and gradients equal it bit for bit; for float16 and bfloat16 the values and the grid gradient
    # do; the input gradient (CPU's rounding of the float16/bfloat16 scatters was not reproduced)
    # within a few ulps where border/reflection padding scatters many taps into one element.
    x = make((2, 3, 4, 5, 6), torch.float32, seed=21).to(dtype)
    grid = grid_of((2, 3, 2, 4, 3), 22).to(dtype)
    fn = lambda t, g: F.grid_sample(t, g, mode="bicubic", padding_mode=padding, align_corners=align)  # noqa: E731
    half = dtype in (torch.bfloat16, torch.float16)
    layouts = [
        (x, grid),
        # Channels-last input, a transposed grid; a sliced input.
        (x.contiguous(memory_format=torch.channels_last_3d), grid.transpose(1, 3).contiguous().transpose(1, 3)),
        (x[:, :, :, 1:, ::2], grid),
    ]
    for xi, gr in layouts:
        if not half:
            check(fn, xi, "grid_sampler_3d", "grid_sampler_3d_backward", exact=True, extra=(gr,))
            continue
        xc, gc = xi.clone().requires_grad_(), gr.clone().requires_grad_()
        xd, gd = xi.to("regen").requires_grad_(), gr.to("regen").requires_grad_()
        exp = fn(xc, gc)
        with counted("grid_sampler_3d"), no_cpu_copy():
            got = fn(xd, gd)
        close(got.detach(), exp.detach(), exact=True)
        g = make(exp.shape, torch.float32, seed=7).to(dtype)
        exp.backward(g)
        with counted("grid_sampler_3d_backward"), no_cpu_copy():
            got.backward(g.to("regen"))
        close(gd.grad, gc.grad, exact=True)
        tol = 3e-2 if dtype == torch.bfloat16 else 1e-2
        torch.testing.assert_close(xd.grad.cpu(), xc.grad, atol=tol, rtol=tol)


def test_grid_sample_3d_bicubic_nonfinite_and_mask():
    A = torch.ops.aten
    x = make((1, 2, 3, 4, 5), torch.float32, seed=23)
    grid = grid_of((1, 2, 2, 3, 3), 24)
    grid[0, 0, 0, 0] = torch.tensor([float("nan"), 0.2, -0.3])
    grid[0, 0, 1, 1, 2] = float("inf")
    grid[0, 1, 0, 2, 0] = -1e30
    with counted("grid_sampler_3d"):
        got = A.grid_sampler_3d(x.to("regen"), grid.to("regen"), 2, 0, False)
    close(got, A.grid_sampler_3d(x, grid, 2, 0, False), exact=True)
    go = make((1, 2, 2, 2, 3), torch.float32, seed=25)
    dev = [t.to("regen") for t in (go, x, grid)]
    with counted("grid_sampler_3d_backward"):
        gi, gg = A.grid_sampler_3d_backward(*dev, 2, 1, True, [False, True])
    egi, egg = A.grid_sampler_3d_backward(go, x, grid, 2, 1, True, [False, True])
    assert gi is None and egi is None
    close(gg, egg, exact=True)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("nd", [2, 3])
def test_grid_sample_reduced(dtype, nd):
    x = make((1, 2, 4, 5) if nd == 2 else (1, 2, 3, 4, 5), torch.float32, seed=13).to(dtype)
    grid = (grid_of((1, 3, 4, 2) if nd == 2 else (1, 2, 3, 4, 3), 14) * 0.5).to(dtype)
    with counted(f"grid_sampler_{nd}d"):
        got = F.grid_sample(x.to("regen"), grid.to("regen"), align_corners=False)
    exp = F.grid_sample(x, grid, align_corners=False)
    torch.testing.assert_close(got.cpu(), exp, atol=2e-2, rtol=2e-2)


def test_grid_sample_mask_and_empty():
    A = torch.ops.aten
    x = make((1, 2, 3, 4), torch.float32, seed=15)
    grid = grid_of((1, 2, 2, 2), 16)
    go = make((1, 2, 2, 2), torch.float32, seed=17)
    dev = [t.to("regen") for t in (go, x, grid)]
    gi, gg = A.grid_sampler_2d_backward(*dev, 0, 0, False, [False, True])
    egi, egg = A.grid_sampler_2d_backward(go, x, grid, 0, 0, False, [False, True])
    assert gi is None and egi is None
    close(gg, egg)
    e = make((0, 2, 3, 4), torch.float32)
    close(A.grid_sampler_2d(e.to("regen"), make((0, 2, 2, 2), torch.float32).to("regen"), 0, 0, False),
          A.grid_sampler_2d(e, make((0, 2, 2, 2), torch.float32), 0, 0, False))


def test_grid_sample_errors():
    A = torch.ops.aten
    x = make((1, 2, 3, 4), torch.float32)
    cases = [
        (A.grid_sampler_2d, (x[0], make((1, 2, 2, 2), torch.float32), 0, 0, False)),
        (A.grid_sampler_2d, (x, make((1, 2, 2, 3), torch.float32), 0, 0, False)),
        (A.grid_sampler_2d, (x, make((2, 2, 2, 2), torch.float32), 0, 0, False)),
        (A.grid_sampler_2d, (x, make((1, 2, 2, 2), torch.float64), 0, 0, False)),
        (A.grid_sampler_2d, (make((1, 2, 0, 4), torch.float32), make((1, 2, 2, 2), torch.float32), 0, 0, False)),
        (A.grid_sampler_2d, (make((1, 2, 3, 4), torch.int64), make((1, 2, 2, 2), torch.int64), 0, 0, False)),
        (A.grid_sampler_3d, (make((1, 2, 3, 3, 3), torch.float32), make((1, 2, 2, 2, 2), torch.float32), 0, 0, False)),
        (A.grid_sampler_2d_backward, (make((1, 2, 3, 2), torch.float32), x, make((1, 2, 2, 2), torch.float32), 0, 0,
                                      False, [True, True])),
    ]
    for op, args in cases:
        dev = tuple(a.to("regen") if isinstance(a, torch.Tensor) else a for a in args)
        raises_like(op, args, dev)
