"""Convolutions of the "regen" device (kernels/ops/conv.rs: unfold + the GEMM of matmul.rs) against
PyTorch's CPU kernels: conv1d/2d/3d and conv_transpose1d/2d/3d, forward and the three gradients,
over dtypes, strides, padding (also 'same'), dilation, groups (also depthwise), output_padding
and layouts (channels-last input, non-contiguous weight and input), with the native kernels
counted and no copy to CPU; im2col/col2im through F.unfold/F.fold; errors; and three SGD steps
of a small CNN matching CPU's."""

import contextlib

import pytest
import torch
import torch.nn.functional as F

import regen_device
from devtest import counted, make, no_cpu_copy

FWD = "convolution_overrideable"
BWD = "convolution_backward_overrideable"

# Sums of up to a few hundred products: CPU (oneDNN) and the device sum in different orders.
TOL = {
    torch.float32: dict(rtol=1e-4, atol=1e-4),
    torch.float64: dict(rtol=1e-10, atol=1e-10),
    torch.complex64: dict(rtol=1e-4, atol=1e-4),
    torch.float16: dict(rtol=5e-3, atol=5e-3),
    torch.bfloat16: dict(rtol=3e-2, atol=3e-2),
}


def close(dev, cpu, dtype):
    assert dev.device.type == "regen"
    assert dev.dtype == cpu.dtype and dev.shape == cpu.shape
    # Half-precision results are compared relative to the result's scale (sums of many terms).
    tol = dict(TOL[dtype])
    if dtype in (torch.float16, torch.bfloat16) and cpu.numel():
        tol["atol"] *= max(1.0, float(cpu.detach().float().abs().max()))
    torch.testing.assert_close(dev.cpu(), cpu, **tol)


# (transposed, input shape, out channels, kernel, kwargs)
CASES = [
    (False, (2, 4, 9), 6, (3,), dict()),
    (False, (2, 4, 11), 6, (3,), dict(stride=2, padding=2, dilation=2, groups=2)),
    (False, (3, 3, 8, 7), 5, (3, 3), dict()),
    (False, (2, 4, 9, 8), 8, (3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)),
    (False, (2, 6, 7, 7), 6, (3, 3), dict(padding=1, groups=6)),  # depthwise
    (False, (2, 6, 7, 7), 12, (3, 3), dict(stride=2, padding=1, groups=6)),  # depthwise x2
    (False, (2, 5, 6, 6), 7, (1, 1), dict()),  # 1x1: no columns
    (False, (2, 4, 5, 6, 5), 4, (2, 3, 2), dict(stride=(1, 2, 1), padding=(1, 0, 1), groups=2)),
    (False, (2, 4, 5, 6, 7), 6, (3, 3, 3), dict(padding="same")),
    (False, (2, 4, 8, 8), 6, (4, 4), dict(padding="same", dilation=2)),
    (True, (2, 4, 6), 6, (3,), dict(stride=2, padding=1, output_padding=1)),
    (True, (2, 4, 5, 6), 6, (3, 3), dict()),
    (True, (2, 4, 5, 6), 6, (3, 2), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2), dilation=(1, 2), groups=2)),
    (True, (2, 6, 4, 4), 6, (3, 3), dict(stride=2, groups=6)),
    (True, (2, 4, 5, 5), 3, (1, 1), dict()),  # 1x1 transposed: no columns
    (True, (1, 4, 3, 4, 3), 4, (2, 2, 3), dict(stride=2, padding=(0, 1, 1), output_padding=1, groups=2)),
    # More than conv.rs's FOLD_MAX_LEN (64) column positions: one product per sample (the cases
    # above have at most 64, whose products take the samples side by side), grouped too.
    (False, (3, 4, 12, 12), 6, (3, 3), dict(padding=1, groups=2)),
    (True, (3, 4, 10, 10), 4, (3, 3), dict(padding=1)),
    # One slice of depth padded in depth: 3 output slices, 2 of them only padding, or strided past
    # it, 1 slice of padding (conv.rs takes the 2-d path for windows flat along depth, not these).
    (False, (2, 3, 1, 5, 6), 4, (1, 3, 3), dict(padding=1)),
    (False, (2, 3, 1, 5, 6), 4, (1, 3, 3), dict(stride=(3, 1, 1), padding=1)),  # reads only padding
    (True, (2, 3, 3, 5, 6), 4, (1, 3, 3), dict(padding=(1, 1, 1))),
    (True, (2, 3, 1, 5, 6), 4, (1, 3, 3), dict(stride=(3, 1, 1), padding=1, output_padding=(2, 0, 0))),
]


def conv_fn(transposed, dims):
    if transposed:
        return {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[dims]
    return {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[dims]


def tensors(transposed, shape, out_ch, kernel, groups, dtype, seed=0):
    cin = shape[1]
    wshape = (cin, out_ch // groups) + kernel if transposed else (out_ch, cin // groups) + kernel
    return make(shape, dtype, seed), make(wshape, dtype, seed + 1), make((out_ch,), dtype, seed + 2)


def run(fn, x, w, b, kwargs, backward):
    x = x.detach().requires_grad_(backward)
    w = w.detach().requires_grad_(backward)
    b = b.detach().requires_grad_(backward)
    y = fn(x, w, b, **kwargs)
    if not backward:
        return y, None
    g = make(tuple(y.shape), y.dtype, 7).to(y.device)
    (y * g).sum().backward()
    return y, (x.grad, w.grad, b.grad)


def check(case, dtype, layout="contiguous", backward=True):
    transposed, shape, out_ch, kernel, kwargs = case
    fn = conv_fn(transposed, len(shape) - 2)
    x, w, b = tensors(transposed, shape, out_ch, kernel, kwargs.get("groups", 1), dtype)
    xd, wd, bd = x.to("regen"), w.to("regen"), b.to("regen")
    if layout == "channels_last":
        fmt = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
        x, xd = x.to(memory_format=fmt), xd.to(memory_format=fmt)
        assert not xd.is_contiguous()
    elif layout == "strided":
        # Every other element of the last dimension, and the weight's first two dims swapped.
        x = torch.cat([x, x], -1)[..., ::2]
        xd = x.to("regen").contiguous()
        xd = torch.stack([xd, xd], -1).flatten(-2)[..., ::2]
        w = w.transpose(0, 1).contiguous().transpose(0, 1)
        wd = w.to("regen").transpose(0, 1).contiguous().transpose(0, 1)
        assert not xd.is_contiguous() and not wd.is_contiguous()
    with counted(FWD), no_cpu_copy():
        y = fn(xd, wd, bd, **kwargs)
    ref, ref_grads = run(fn, x, w, b, kwargs, backward)
    close(y, ref, dtype)
    if backward:
        with counted(BWD):
            y, grads = run(fn, xd, wd, bd, kwargs, True)
        for name, dev, cpu in zip(("input", "weight", "bias"), grads, ref_grads):
            assert dev is not None, name
            close(dev, cpu, dtype)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{'T' if c[0] else ''}{len(c[1]) - 2}d-{c[4]}")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_conv_matches_cpu(case, dtype):
    check(case, dtype)


@pytest.mark.parametrize("case", [CASES[3], CASES[6], CASES[7], CASES[12], CASES[14], CASES[16], CASES[17]], ids=str)
@pytest.mark.parametrize("layout", ["channels_last", "strided"])
def test_conv_layouts(case, layout):
    if layout == "channels_last" and len(case[1]) == 3:
        pytest.skip("no channels-last format for 1-d")
    check(case, torch.float32, layout)


def test_conv_complex_and_integers():
    # complex64 through F.conv2d (PyTorch splits it into real convolutions on the device).
    check(CASES[3], torch.complex64, backward=False)
    # Integer convolutions wrap as CPU's slow kernel; int64 also transposed.
    for dtype in (torch.int64, torch.int32, torch.uint8):
        x, w, b = tensors(False, (2, 4, 6, 5), 6, (3, 2), 2, dtype)
        with counted(FWD):
            y = F.conv2d(x.to("regen"), w.to("regen"), b.to("regen"), stride=(1, 2), padding=1, groups=2)
        assert torch.equal(y.cpu(), F.conv2d(x, w, b, stride=(1, 2), padding=1, groups=2))
    x, w, _ = tensors(True, (2, 4, 3, 3), 4, (2, 2), 1, torch.int64)
    y = F.conv_transpose2d(x.to("regen"), w.to("regen"), stride=2)
    assert torch.equal(y.cpu(), F.conv_transpose2d(x, w, stride=2))


@pytest.mark.parametrize("dtype", [torch.bool, torch.int32])
def test_unsupported_dtypes_raise_like_cpu(dtype):
    x = torch.ones(1, 2, 4, 4, dtype=dtype)
    w = torch.ones(2, 2, 3, 3, dtype=dtype)
    fns = [F.conv_transpose2d] + ([F.conv2d] if dtype == torch.bool else [])
    for fn in fns:
        with pytest.raises(NotImplementedError) as cpu:
            fn(x, w)
        with pytest.raises(NotImplementedError) as dev:
            fn(x.to("regen"), w.to("regen"))
        assert str(cpu.value) in str(dev.value)


def complex_reference(op, x, w, *rest):
    """A complex convolution on CPU from real ones (CPU's slow kernels take no complex)."""
    real = lambda a, b: op(a, b, *rest)  # noqa: E731
    re = real(x.real, w.real) - real(x.imag, w.imag)
    im = real(x.real, w.imag) + real(x.imag, w.real)
    return torch.complex(re, im)


def test_direct_calls_1d_and_complex():
    # convolution_overrideable itself with a 1-d (3-D) input, which convolution views as 2-d.
    args = ([2], [1], [2], False, [0], 2)
    x, w, b = tensors(False, (2, 4, 10), 6, (3,), 2, torch.float64)
    with counted(FWD):
        y = torch.ops.aten.convolution_overrideable(x.to("regen"), w.to("regen"), b.to("regen"), *args)
    close(y, torch.ops.aten.convolution(x, w, b, *args), torch.float64)
    g = make(tuple(y.shape), torch.float64, 5)
    with counted(BWD):
        grads = torch.ops.aten.convolution_backward_overrideable(
            g.to("regen"), x.to("regen"), w.to("regen"), *args, [True, True, True]
        )
    ref = torch.ops.aten.convolution_backward(g, x, w, [6], *args, [True, True, True])
    for dev, cpu in zip(grads, ref):
        close(dev, cpu, torch.float64)
    # complex64, plain and transposed (which CPU's slow kernels do not take).
    for transposed, op in ((False, torch.ops.aten.convolution), (True, torch.ops.aten.convolution)):
        x, w, _ = tensors(transposed, (2, 4, 5, 6), 6, (3, 2), 2, torch.complex64)
        args = ([2, 1], [1, 0], [1, 2], transposed, [1, 0] if transposed else [0, 0], 2)
        with counted(FWD):
            y = torch.ops.aten.convolution_overrideable(x.to("regen"), w.to("regen"), None, *args)
        close(y, complex_reference(op, x, w, None, *args), torch.complex64)

    # Only the masked gradients are computed.
    x, w, _ = tensors(False, (1, 2, 5, 5), 2, (3, 3), 1, torch.float32)
    g = torch.ones(1, 2, 3, 3)
    gi, gw, gb = torch.ops.aten.convolution_backward_overrideable(
        g.to("regen"), x.to("regen"), w.to("regen"), [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [False, True, False]
    )
    assert gi is None and gb is None
    close(gw, torch.ops.aten.convolution_backward(g, x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [False, True, False])[1], torch.float32)


def test_empty_batch_and_channels():
    for shape, wshape in (((0, 4, 6, 6), (5, 4, 3, 3)), ((2, 0, 6, 6), (5, 0, 3, 3))):
        x, w = make(shape, torch.float32), make(wshape, torch.float32)
        xd, wd = x.to("regen").requires_grad_(), w.to("regen").requires_grad_()
        y = F.conv2d(xd, wd, padding=1)
        close(y, F.conv2d(x, w, padding=1), torch.float32)
        y.sum().backward()
        assert xd.grad.shape == x.shape and wd.grad.shape == w.shape
        assert xd.grad.abs().sum().item() == 0 and wd.grad.abs().sum().item() == 0


def test_errors_match_cpu():
    x = make((2, 4, 6, 6), torch.float32)
    bad = [
        lambda x: F.conv2d(x, make((6, 4, 3), torch.float32).to(x.device)),  # weight dims
        lambda x: F.conv2d(x, make((6, 2, 3, 3), torch.float32).to(x.device), groups=3),  # groups
        lambda x: F.conv2d(x, make((6, 4, 3, 3), torch.float32).to(x.device), groups=0),
        lambda x: F.conv2d(x, make((6, 4, 7, 7), torch.float32).to(x.device)),  # kernel too big
        lambda x: F.conv_transpose2d(x, make((4, 2, 3, 3), torch.float32).to(x.device), stride=2, output_padding=2),
        lambda x: F.conv2d(x, make((6, 4, 3, 3), torch.float32).to(x.device), padding=-1),
    ]
    for fn in bad:
        with pytest.raises(Exception) as cpu:
            fn(x)
        with pytest.raises(Exception) as dev:
            fn(x.to("regen"))
        assert type(dev.value) is type(cpu.value), (cpu.value, dev.value)
    # Checked by CPU's kernel, so by the device's: output_padding below stride or dilation.
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation"):
        F.conv_transpose2d(x.to("regen"), make((4, 2, 3, 3), torch.float32).to("regen"), stride=2, output_padding=2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_unfold_and_fold(dtype):
    x = make((2, 3, 7, 8), dtype)
    kw = dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 2), stride=(2, 1))
    xd = x.to("regen").requires_grad_()
    with counted("im2col"):
        cols = F.unfold(xd, **kw)
    ref = F.unfold(x, **kw)
    assert torch.equal(cols.cpu(), ref)
    g = make(tuple(ref.shape), dtype, 3)
    with counted("col2im"):
        cols.backward(g.to("regen"))
    # col2im sums in the dtype in ATen's order: the same bits.
    xc = x.clone().requires_grad_()
    F.unfold(xc, **kw).backward(g)
    assert torch.equal(xd.grad.cpu(), xc.grad)
    # fold of a strided (transposed) unbatched input, and its out= form.
    cols = make((ref.shape[2], ref.shape[1]), dtype, 4).t()
    folded = F.fold(cols.to("regen"), output_size=(7, 8), **kw)
    assert torch.equal(folded.cpu(), F.fold(cols, output_size=(7, 8), **kw))
    out = torch.empty(0, dtype=dtype, device="regen")
    with counted("col2im.out"):
        torch._C._nn.col2im(cols.to("regen"), (7, 8), (2, 3), (2, 1), (1, 2), (2, 1), out=out)
    assert torch.equal(out.cpu(), F.fold(cols, output_size=(7, 8), **kw))


def test_unfold_fold_errors_match_cpu():
    cases = [
        lambda d: torch._C._nn.im2col(make((2, 3, 4, 4), torch.float32).to(d), (0, 2), (1, 1), (0, 0), (1, 1)),
        lambda d: torch._C._nn.im2col(make((2, 3, 4, 4), torch.float32).to(d), (5, 5), (1, 1), (0, 0), (1, 1)),
        lambda d: torch._C._nn.im2col(make((4, 4), torch.float32).to(d), (2, 2), (1, 1), (0, 0), (1, 1)),
        lambda d: torch._C._nn.im2col(make((2, 3, 4, 4), torch.int64).to(d), (2, 2), (1, 1), (0, 0), (1, 1)),
        lambda d: torch._C._nn.col2im(make((2, 7, 9), torch.float32).to(d), (4, 4), (2, 2), (1, 1), (0, 0), (1, 1)),
        lambda d: torch._C._nn.col2im(make((2, 8, 8), torch.float32).to(d), (4, 4), (2, 2), (1, 1), (0, 0), (1, 1)),
        lambda d: torch._C._nn.col2im(make((8,), torch.float32).to(d), (4, 4), (2, 2), (1, 1), (0, 0), (1, 1)),
    ]
    for fn in cases:
        with pytest.raises(Exception) as cpu:
            fn("cpu")
        with pytest.raises(Exception) as dev:
            fn("regen")
        assert type(dev.value) is type(cpu.value), (cpu.value, dev.value)
        assert str(cpu.value).split("\n")[0] in str(dev.value)


class LeNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(1, 4, 5, padding=2)
        self.c2 = torch.nn.Conv2d(4, 8, 3, stride=2)
        self.fc = torch.nn.Linear(8 * 6 * 6, 10)

    def forward(self, x):
        x = torch.relu(self.c1(x))
        x = torch.relu(self.c2(x))
        return self.fc(x.flatten(1))


def test_lenet_trains_like_cpu():
    # Other ops of the model (cross_entropy, ...) may still run on the CPU fallback: only the
    # convolutions are asserted native.
    torch.manual_seed(0)
    cpu = LeNet()
    dev = LeNet()
    dev.load_state_dict(cpu.state_dict())
    dev.to("regen")
    x = make((8, 1, 14, 14), torch.float32, 11)
    target = torch.randint(0, 10, (8,), generator=torch.Generator().manual_seed(3))
    opts = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (cpu, dev)]
    for _ in range(3):
        for model, opt, inp, tgt in ((cpu, opts[0], x, target), (dev, opts[1], x.to("regen"), target.to("regen"))):
            opt.zero_grad()
            with counted(FWD) if model is dev else contextlib.nullcontext():
                logits = model(inp)
            loss = F.cross_entropy(logits, tgt)
            with counted(BWD) if model is dev else contextlib.nullcontext():
                loss.backward()
            opt.step()
    for (name, p), q in zip(cpu.named_parameters(), dev.parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), rtol=1e-4, atol=1e-5, msg=name)


def test_backend_ops():
    # The backends' own convolution ops, on the same engine (depthwise ones have no CPU kernel:
    # compared with a grouped conv2d/conv3d).
    aten = torch.ops.aten
    x2, w2, b2 = tensors(False, (2, 3, 7, 6), 4, (3, 2), 1, torch.float64)
    x3, w3, b3 = tensors(False, (2, 3, 5, 6, 4), 4, (2, 3, 2), 1, torch.float64)
    d = lambda *ts: [t.to("regen") if isinstance(t, torch.Tensor) else t for t in ts]  # noqa: E731
    calls = [
        ("_slow_conv2d_forward", lambda *a: aten._slow_conv2d_forward(*a), (x2, w2, [3, 2], b2, [2, 1], [1, 0])),
        ("slow_conv_dilated2d", lambda *a: aten.slow_conv_dilated2d(*a), (x2[0], w2, [3, 2], b2, [1, 1], [0, 1], [1, 1])),
        ("slow_conv3d_forward", lambda *a: aten.slow_conv3d_forward(*a), (x3, w3, [2, 3, 2], b3, [1, 2, 1], [1, 0, 1])),
        ("slow_conv_dilated2d", lambda *a: aten.slow_conv_dilated2d(*a), (x2, w2, [3, 2], b2, [1, 1], [1, 1], [2, 1])),
        ("slow_conv_dilated3d", lambda *a: aten.slow_conv_dilated3d(*a), (x3, w3, [2, 3, 2], b3, [1, 1, 1], [0, 1, 0], [1, 1, 2])),
    ]
    for op, fn, args in calls:
        with counted(op):
            y = fn(*d(*args))
        close(y, fn(*args), torch.float64)
    xt, wt, bt = tensors(True, (2, 4, 4, 5), 3, (3, 2), 1, torch.float64)
    args = (xt, wt, [3, 2], bt, [2, 2], [1, 0], [1, 1], [1, 2])
    with counted("slow_conv_transpose2d"):
        y = aten.slow_conv_transpose2d(*d(*args))
    close(y, aten.slow_conv_transpose2d(*args), torch.float64)
    xt, wt, bt = tensors(True, (1, 4, 3, 4, 3), 2, (2, 2, 3), 1, torch.float64)
    args = (xt, wt, [2, 2, 3], bt, [2, 1, 2], [0, 1, 1], [1, 0, 1], [1, 1, 1])
    out = torch.empty(0, dtype=torch.float64, device="regen")
    with counted("slow_conv_transpose3d.out"):
        aten.slow_conv_transpose3d(*d(*args), out=out)
    close(out, aten.slow_conv_transpose3d(*args), torch.float64)
    # Depthwise: groups are the input's channels.
    x, w, b = tensors(False, (2, 4, 6, 6), 8, (3, 3), 4, torch.float32)
    with counted("_conv_depthwise2d"):
        y = aten._conv_depthwise2d(*d(x, w, [3, 3], b, [2, 1], [1, 1], [1, 2]))
    close(y, F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=4), torch.float32)
    x, w, b = tensors(False, (1, 3, 4, 5, 4), 3, (2, 2, 2), 3, torch.float32)
    with counted("conv_depthwise3d"):
        y = aten.conv_depthwise3d(*d(x, w, [2, 2, 2], b, [1, 1, 1], [1, 0, 1], [1, 1, 1]))
    close(y, F.conv3d(x, w, b, padding=(1, 0, 1), groups=3), torch.float32)
    # _slow_conv2d_backward with its mask.
    g = make((2, 4, 4, 5), torch.float64, 9)
    args = (g, x2, w2, [3, 2], [2, 1], [1, 0], [True, True, True])
    with counted("_slow_conv2d_backward.output_mask"):
        grads = aten._slow_conv2d_backward.output_mask(*d(*args))
    for dev, cpu in zip(grads, aten._slow_conv2d_backward.output_mask(*args)):
        close(dev, cpu, torch.float64)
    # Unbatched inputs as CPU takes them: refused, or a batch of one kept (transposed).
    for fn, args in (
        (aten._slow_conv2d_forward, (x2[0], w2, [3, 2], b2, [1, 1], [0, 0])),
        (aten.slow_conv3d_forward, (x3[0], w3, [2, 3, 2], b3, [1, 1, 1], [0, 0, 0])),
        (aten._slow_conv2d_forward, (x2, w2, [3, 3], b2, [1, 1], [0, 0])),  # kernel_size
    ):
        with pytest.raises(RuntimeError):
            fn(*args)
        with pytest.raises(RuntimeError):
            fn(*d(*args))
    xt, wt, _ = tensors(True, (1, 4, 4, 5), 3, (3, 2), 1, torch.float64)
    y = aten.slow_conv_transpose2d(*d(xt[0], wt, [3, 2]))
    close(y, aten.slow_conv_transpose2d(xt[0], wt, [3, 2]), torch.float64)


def test_unfold_bool():
    x = make((2, 3, 5, 4), torch.bool)
    with counted("im2col"):
        cols = F.unfold(x.to("regen"), kernel_size=2, padding=1)
    assert torch.equal(cols.cpu(), F.unfold(x, kernel_size=2, padding=1))
    folded = F.fold(cols, (5, 4), kernel_size=2, padding=1)
    assert torch.equal(folded.cpu(), F.fold(cols.cpu(), (5, 4), kernel_size=2, padding=1))
