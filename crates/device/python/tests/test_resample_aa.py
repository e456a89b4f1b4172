"""Antialiased bilinear and bicubic resampling, and uint8 bilinear and bicubic resampling, of the
"regen" device (kernels/ops/resample_aa.rs) against PyTorch's CPU kernels: up- and downsampling,
align_corners both ways, explicit scale factors, contiguous, channels-last and strided inputs,
float32, float64 and uint8 (CPU computes antialiasing in no other dtype; float16 and bfloat16
raise NotImplementedError there and here), gradients through autograd, errors with CPU's
exception type, and the native-call counters (a CPU fallback cannot pass as native).

Every comparison is exact (torch.equal): the device computes CPU's windows and weights with CPU's
formulas, sums each window in CPU's order with CPU's rounding (uint8 in CPU's int16 fixed point),
and the backward pass adds each input element's terms in CPU's order."""

import pytest
import torch
import torch.nn.functional as F

from devtest import VECTOR_ROUNDING, counted, make, no_cpu_copy

AA = {
    # mode: (forward key, backward key)
    "bilinear": ("_upsample_bilinear2d_aa.out", "_upsample_bilinear2d_aa_backward.grad_input"),
    "bicubic": ("_upsample_bicubic2d_aa.out", "_upsample_bicubic2d_aa_backward.grad_input"),
}
PLAIN = {"bilinear": "upsample_bilinear2d.out", "bicubic": "upsample_bicubic2d.out"}
LAYOUTS = {
    "contiguous": lambda t: t,
    "channels_last": lambda t: t.contiguous(memory_format=torch.channels_last),
    "strided": lambda t: t.repeat_interleave(2, dim=-1)[..., ::2],
    "transposed": lambda t: t.transpose(-1, -2).contiguous().transpose(-1, -2),
}
# (input H, W) -> output sizes: down both ways, up both ways, mixed, one dimension unchanged,
# a large factor (windows longer than a vector), to one pixel, and the same size (a copy).
SIZES = [(11, 13), (50, 41), (40, 9), (29, 17), (5, 3), (1, 1), (37, 29)]
SHAPE = (2, 3, 37, 29)


def image(shape, dtype, seed):
    """Values a photograph's pixels take: uint8 over the whole range (saturating the fixed-point
    sums at both ends), floats of the same magnitudes."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
    return x if dtype == torch.uint8 else (x.to(torch.float32) / 255 + torch.randn(shape, generator=g)).to(dtype)


def same(got, expected):
    assert got.device.type == "regen"
    got = got.cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, expected.dtype, got.shape, expected.shape)
    torch.testing.assert_close(got, expected, **VECTOR_ROUNDING, equal_nan=True)


def run(fn, x, fwd, bwd=None):
    """fn(x) on CPU and on the device under `fwd`'s native-call counter, then (for `bwd`) the
    gradient of x through autograd under `bwd`'s."""
    grad = bwd is not None
    xc = x.clone().requires_grad_(grad)
    xd = x.to("regen").requires_grad_(grad)
    expected = fn(xc)
    with counted(fwd), no_cpu_copy():
        got = fn(xd)
    same(got.detach(), expected.detach())
    if x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous():
        assert got.is_contiguous(memory_format=torch.channels_last) == expected.is_contiguous(memory_format=torch.channels_last)
    if grad:
        g = make(expected.shape, torch.float32, seed=7).to(expected.dtype)
        expected.backward(g)
        with counted(bwd), no_cpu_copy():
            got.backward(g.to("regen"))
        same(xd.grad, xc.grad)


@pytest.mark.parametrize("mode", list(AA))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("align", [False, True])
def test_antialias(mode, dtype, layout, align):
    x = LAYOUTS[layout](image(SHAPE, dtype, seed=1))
    fwd, bwd = AA[mode]
    for size in SIZES:
        run(lambda t: F.interpolate(t, size=size, mode=mode, antialias=True, align_corners=align), x, fwd, bwd)


@pytest.mark.parametrize("mode", list(AA))
@pytest.mark.parametrize("aa", [True, False])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("align", [False, True])
def test_uint8(mode, aa, layout, align):
    x = LAYOUTS[layout](image(SHAPE, torch.uint8, seed=2))
    fwd = AA[mode][0] if aa else PLAIN[mode]
    # CPU's AVX2 uint8 kernel fails an internal assert for a 1x1 output of an input not
    # channels-last (test_uint8_one_pixel).
    for size in SIZES if layout == "channels_last" else [s for s in SIZES if s != (1, 1)]:
        run(lambda t: F.interpolate(t, size=size, mode=mode, antialias=aa, align_corners=align), x, fwd)


def test_uint8_one_pixel():
    # CPU's AVX2 uint8 kernel (up to 4 channels) raises "num_channels == unpacked_output.size(0)
    # INTERNAL ASSERT FAILED" for a 1x1 output of an input not channels-last; the device computes it,
    # and equals CPU's result for the same values laid out channels-last, which CPU computes.
    x = image((2, 3, 9, 8), torch.uint8, seed=10)
    for mode in AA:
        for aa in [True, False]:
            fn = lambda t: F.interpolate(t, size=(1, 1), mode=mode, antialias=aa)  # noqa: E731
            with pytest.raises(RuntimeError, match="INTERNAL ASSERT"):
                fn(x)
            with counted(AA[mode][0] if aa else PLAIN[mode]):
                same(fn(x.to("regen")), fn(x.contiguous(memory_format=torch.channels_last)).contiguous())


@pytest.mark.parametrize("channels", [1, 3, 4, 5, 8])
def test_uint8_channels(channels):
    # CPU's uint8 kernel changes with the channel count (its AVX2 kernel serves up to 4 channels,
    # the generic separable one the rest) and with the layout.
    for fmt in [torch.contiguous_format, torch.channels_last]:
        x = image((1, channels, 23, 19), torch.uint8, seed=3).contiguous(memory_format=fmt)
        for mode in AA:
            for aa in [True, False]:
                fwd = AA[mode][0] if aa else PLAIN[mode]
                for size in [(9, 30), (40, 7)]:
                    run(lambda t: F.interpolate(t, size=size, mode=mode, antialias=aa), x, fwd)


@pytest.mark.parametrize("mode", list(AA))
def test_scale_factor(mode):
    # An explicit scale is used as given (not recomputed from the sizes), also when a dimension
    # keeps its size.
    for dtype in [torch.float32, torch.float64, torch.uint8]:
        x = image((1, 2, 20, 24), dtype, seed=4)
        bwd = AA[mode][1] if dtype.is_floating_point else None
        for sf in [(0.3, 0.45), (1.7, 0.6), (1.04, 2.5), (0.25, 0.25)]:
            fn = lambda t: F.interpolate(  # noqa: E731
                t, scale_factor=sf, mode=mode, antialias=True, recompute_scale_factor=False
            )
            run(fn, x, AA[mode][0], bwd)
        if dtype == torch.uint8:
            fn = lambda t: F.interpolate(t, scale_factor=(0.45, 1.6), mode=mode, recompute_scale_factor=False)  # noqa: E731
            run(fn, x, PLAIN[mode])


def test_direct_ops_and_out():
    A = torch.ops.aten
    x = image((2, 3, 9, 14), torch.float32, seed=5)
    for op, osize, sc in [
        (A._upsample_bilinear2d_aa, [4, 5], (None, None)),
        (A._upsample_bicubic2d_aa, [6, 21], (0.7, 1.5)),
    ]:
        for align in [False, True]:
            exp = op(x, osize, align, *sc)
            with counted(f"{op.__name__.split('.')[0]}.out"):
                same(op(x.to("regen"), osize, align, *sc), exp)
            out = torch.empty(0, device="regen")
            op.out(x.to("regen"), osize, align, *sc, out=out)
            same(out, exp)
    bwd = A._upsample_bicubic2d_aa_backward
    g = image((2, 3, 4, 5), torch.float64, seed=6)
    exp = bwd(g, [4, 5], [2, 3, 9, 14], True, None, None)
    with counted("_upsample_bicubic2d_aa_backward.grad_input"):
        same(bwd(g.to("regen"), [4, 5], [2, 3, 9, 14], True, None, None), exp)
    # An empty batch gives an empty result.
    e = torch.empty(0, 3, 9, 14)
    same(A._upsample_bilinear2d_aa(e.to("regen"), [4, 5], False), A._upsample_bilinear2d_aa(e, [4, 5], False))


def test_nonfinite():
    x = image((1, 2, 12, 12), torch.float32, seed=8)
    x[0, 0, 3, 4] = float("nan")
    x[0, 1, 7, 7] = float("inf")
    for mode in AA:
        run(lambda t: F.interpolate(t, size=(5, 7), mode=mode, antialias=True), x, AA[mode][0])


def raises_like(fn, cpu_args, dev_args):
    with pytest.raises(Exception) as cpu:
        fn(*cpu_args)
    with pytest.raises(type(cpu.value)):
        fn(*dev_args)


def test_errors():
    A = torch.ops.aten
    x = image((1, 2, 6, 7), torch.float32, seed=9)
    cases = [
        (A._upsample_bilinear2d_aa, (x[0], [3, 3], False)),
        (A._upsample_bilinear2d_aa, (x, [3], False)),
        (A._upsample_bicubic2d_aa, (x, [0, 3], False)),
        (A._upsample_bilinear2d_aa, (torch.empty(1, 0, 6, 7), [3, 3], False)),
        (A._upsample_bilinear2d_aa, (x.to(torch.float16), [3, 3], False)),
        (A._upsample_bicubic2d_aa, (x.to(torch.bfloat16), [3, 3], False)),
        (A._upsample_bilinear2d_aa, (x.to(torch.int64), [3, 3], False)),
        (A._upsample_bilinear2d_aa_backward, (make((1, 2, 3, 4), torch.float32), [3, 3], [1, 2, 6, 7], False)),
        (A._upsample_bicubic2d_aa_backward, (make((2, 3, 3), torch.float32), [3, 3], [1, 2, 6, 7], False)),
        (A._upsample_bicubic2d_aa_backward, (make((1, 2, 3, 3), torch.float16), [3, 3], [1, 2, 6, 7], False)),
        (A.upsample_bilinear2d, (image((1, 2, 6, 7), torch.uint8, 0)[0], [3, 3], False)),
        (A.upsample_bicubic2d, (image((1, 2, 6, 7), torch.uint8, 0), [3, -1], False)),
    ]
    for op, args in cases:
        dev = tuple(a.to("regen") if isinstance(a, torch.Tensor) else a for a in args)
        raises_like(op, args, dev)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype unsigned char, but got float"):
        A._upsample_bilinear2d_aa.out(
            image((1, 2, 6, 7), torch.uint8, 0).to("regen"), [3, 3], False, out=torch.empty(0, device="regen")
        )
