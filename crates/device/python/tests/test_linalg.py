"""Matrix products of the "regen" device (kernels/matmul.rs, on the gemm crate) against PyTorch's
CPU kernels: every op in every dtype and layout (contiguous, transposed, strided slices,
broadcast bias, permuted batches, conjugate and negative views, empty sizes, beta=0 with NaNs in
self), the native kernel counted each time, and PyTorch's error messages."""

import pytest
import torch

import regen_device

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
COMPLEX = [torch.complex64, torch.complex128]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
DTYPES = FLOATS + COMPLEX + INTS
LAYOUTS = ["contiguous", "transposed", "strided", "conj", "neg"]

# Products of k terms: CPU (MKL/oneDNN) and gemm sum in different orders.
TOL = {
    torch.float32: dict(rtol=1e-5, atol=1e-4),
    torch.complex64: dict(rtol=1e-5, atol=1e-4),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.complex128: dict(rtol=1e-12, atol=1e-12),
    torch.float16: dict(rtol=2e-3, atol=2e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
}


def make(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    low = 0 if dtype == torch.uint8 else -5
    return torch.randint(low, 6, shape, generator=g, dtype=dtype)


def compare(device_result, cpu_result):
    assert device_result.device.type == "regen"
    assert device_result.dtype == cpu_result.dtype
    assert device_result.shape == cpu_result.shape
    torch.testing.assert_close(device_result.cpu(), cpu_result, equal_nan=True, **TOL.get(cpu_result.dtype, {}))


class counted:
    """Asserts the native kernel of `op` ran inside the block."""

    def __init__(self, op):
        self.op = op

    def __enter__(self):
        self.before = regen_device.native_calls(self.op)

    def __exit__(self, *exc):
        if exc[0] is None:
            assert regen_device.native_calls(self.op) > self.before, f"{self.op} did not run natively"


def operand(shape, dtype, layout, seed):
    """A CPU tensor of `shape` in `layout`, and the same on the device in the same layout."""
    if layout == "transposed":
        base = make(shape[:-2] + (shape[-1], shape[-2]), dtype, seed)
        cpu, dev = base.transpose(-1, -2), base.to("regen").transpose(-1, -2)
    elif layout == "strided":
        big = make(tuple(2 * s + 1 for s in shape), dtype, seed)
        index = tuple(slice(1, None, 2) for _ in shape)
        cpu, dev = big[index], big.to("regen")[index]
    elif layout == "conj" and dtype.is_complex:
        base = make(shape, dtype, seed)
        cpu, dev = base.conj(), base.to("regen").conj()
        assert dev.is_conj()
    elif layout == "neg" and (dtype.is_floating_point or dtype.is_complex):
        base = make(shape, dtype, seed)
        cpu, dev = torch._neg_view(base), torch._neg_view(base.to("regen"))
        assert dev.is_neg()
    else:
        cpu = make(shape, dtype, seed)
        dev = cpu.to("regen")
    assert cpu.shape == shape and dev.shape == shape
    return cpu, dev


def pair(shapes, dtype, layout):
    cpus, devs = zip(*(operand(s, dtype, layout, seed) for seed, s in enumerate(shapes)))
    return cpus, devs


def scalars(dtype):
    if dtype.is_complex:
        return 0.5 + 1j, 2 - 1j
    if dtype.is_floating_point:
        return 0.5, 2.0
    return 3, 2


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_mm_bmm_addmm_baddbmm_addbmm(dtype, layout):
    beta, alpha = scalars(dtype)
    (a, b), (da, db) = pair([(7, 5), (5, 9)], dtype, layout)
    with counted("mm.out"):
        compare(torch.mm(da, db), torch.mm(a, b))
    (bias,), (dbias,) = pair([(7, 9)], dtype, layout)
    with counted("addmm.out"):
        compare(torch.addmm(dbias, da, db, beta=beta, alpha=alpha), torch.addmm(bias, a, b, beta=beta, alpha=alpha))
    (a3, b3, c3), (da3, db3, dc3) = pair([(3, 6, 4), (3, 4, 8), (3, 6, 8)], dtype, layout)
    with counted("bmm.out"):
        compare(torch.bmm(da3, db3), torch.bmm(a3, b3))
    with counted("baddbmm.out"):
        compare(torch.baddbmm(dc3, da3, db3, beta=beta, alpha=alpha), torch.baddbmm(c3, a3, b3, beta=beta, alpha=alpha))
    (c2,), (dc2,) = pair([(6, 8)], dtype, layout)
    with counted("addbmm"):
        compare(torch.addbmm(dc2, da3, db3, beta=beta, alpha=alpha), torch.addbmm(c2, a3, b3, beta=beta, alpha=alpha))


@pytest.mark.parametrize("layout", ["contiguous", "strided", "conj", "neg"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_addmv_mv_dot_vdot(dtype, layout):
    beta, alpha = scalars(dtype)
    (m, v, s, w), (dm, dv, ds, dw) = pair([(6, 5), (5,), (6,), (5,)], dtype, layout)
    with counted("addmv.out"):
        compare(torch.addmv(ds, dm, dv, beta=beta, alpha=alpha), torch.addmv(s, m, v, beta=beta, alpha=alpha))
    with counted("addmv.out"):
        compare(torch.mv(dm, dv), torch.mv(m, v))
    with counted("dot"):
        compare(torch.dot(dv, dw), torch.dot(v, w))
    with counted("vdot"):
        compare(torch.vdot(dv, dw), torch.vdot(v, w))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.int64, torch.bfloat16], ids=str)
def test_transposed_output_and_mixed_layouts(dtype):
    a, b = make((8, 3), dtype), make((5, 8), dtype, 1)
    out = torch.empty(5, 4, dtype=dtype).to("regen").t()  # (4, 5) column-major output
    with counted("mm.out"):
        torch.mm(a.to("regen").t()[:4], b.to("regen").t(), out=out)
    compare(out, torch.mm(a.t()[:4], b.t()))
    # A transposed lhs with a row-major rhs, and permuted batches.
    x, y = make((4, 3, 6), dtype, 2), make((6, 3, 5), dtype, 3)
    with counted("bmm.out"):
        compare(torch.bmm(x.to("regen").permute(1, 0, 2), y.to("regen").permute(1, 0, 2)),
                torch.bmm(x.permute(1, 0, 2), y.permute(1, 0, 2)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex128, torch.int32, torch.float16], ids=str)
def test_broadcast_self(dtype):
    beta, alpha = scalars(dtype)
    a, b = make((4, 3), dtype), make((3, 5), dtype, 1)
    for bias in [make((5,), dtype, 2), make((4, 1), dtype, 3), make((), dtype, 4), make((1, 5), dtype, 5)]:
        with counted("addmm.out"):
            compare(torch.addmm(bias.to("regen"), a.to("regen"), b.to("regen"), beta=beta, alpha=alpha),
                    torch.addmm(bias, a, b, beta=beta, alpha=alpha))
    x, y = make((2, 4, 3), dtype, 6), make((2, 3, 5), dtype, 7)
    for bias in [make((5,), dtype, 8), make((4, 5), dtype, 9), make((2, 1, 5), dtype, 10)]:
        with counted("baddbmm.out"):
            compare(torch.baddbmm(bias.to("regen"), x.to("regen"), y.to("regen"), beta=beta, alpha=alpha),
                    torch.baddbmm(bias, x, y, beta=beta, alpha=alpha))
    with counted("addbmm"):
        bias = make((5,), dtype, 11)
        compare(torch.addbmm(bias.to("regen"), x.to("regen"), y.to("regen"), beta=beta, alpha=alpha),
                torch.addbmm(bias, x, y, beta=beta, alpha=alpha))
    m, v = make((4, 3), dtype, 12), make((3,), dtype, 13)
    for bias in [make((1,), dtype, 14), make((), dtype, 15)]:
        with counted("addmv.out"):
            compare(torch.addmv(bias.to("regen"), m.to("regen"), v.to("regen"), beta=beta, alpha=alpha),
                    torch.addmv(bias, m, v, beta=beta, alpha=alpha))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.bfloat16, torch.float16], ids=str)
def test_beta_zero_ignores_nan_self_and_in_place_forms(dtype):
    a, b = make((3, 4), dtype), make((4, 2), dtype, 1)
    nan = torch.full((3, 2), float("nan"), dtype=dtype)
    with counted("addmm.out"):
        compare(torch.addmm(nan.to("regen"), a.to("regen"), b.to("regen"), beta=0), torch.addmm(nan, a, b, beta=0))
    x, y = make((2, 3, 4), dtype, 2), make((2, 4, 2), dtype, 3)
    nan3 = torch.full((2, 3, 2), float("nan"), dtype=dtype)
    with counted("baddbmm.out"):
        compare(torch.baddbmm(nan3.to("regen"), x.to("regen"), y.to("regen"), beta=0), torch.baddbmm(nan3, x, y, beta=0))
    with counted("addbmm"):
        compare(torch.addbmm(nan.to("regen"), x.to("regen"), y.to("regen"), beta=0), torch.addbmm(nan, x, y, beta=0))
    v = make((4,), dtype, 4)
    with counted("addmv.out"):
        compare(torch.addmv(nan[:, 0].to("regen"), a.to("regen"), v.to("regen"), beta=0), torch.addmv(nan[:, 0], a, v, beta=0))
    # In place (derived from .out, except addbmm_ which is its own kernel).
    bias = make((3, 2), dtype, 5)
    d = bias.to("regen")
    with counted("addmm.out"):
        d.addmm_(a.to("regen"), b.to("regen"), alpha=2)
    compare(d, bias.clone().addmm_(a, b, alpha=2))
    d = make((3, 2), dtype, 6).to("regen")
    with counted("addbmm_"):
        d.addbmm_(x.to("regen"), y.to("regen"))
    compare(d, make((3, 2), dtype, 6).addbmm_(x, y))
    c = make((2, 3, 2), dtype, 7)
    d = c.to("regen")
    with counted("baddbmm.out"):
        d.baddbmm_(x.to("regen"), y.to("regen"), beta=0.5)
    compare(d, c.clone().baddbmm_(x, y, beta=0.5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.int64, torch.bfloat16], ids=str)
def test_empty_sizes(dtype):
    beta, alpha = scalars(dtype)
    for (n, k, m) in [(3, 0, 4), (0, 3, 4), (3, 4, 0), (0, 0, 0)]:
        a, b, bias = make((n, k), dtype), make((k, m), dtype, 1), make((n, m), dtype, 2)
        with counted("mm.out"):
            compare(torch.mm(a.to("regen"), b.to("regen")), torch.mm(a, b))
        with counted("addmm.out"):
            compare(torch.addmm(bias.to("regen"), a.to("regen"), b.to("regen"), beta=beta, alpha=alpha),
                    torch.addmm(bias, a, b, beta=beta, alpha=alpha))
    for (bs, n, k, m) in [(0, 2, 3, 4), (2, 3, 0, 4), (2, 0, 3, 4)]:
        x, y, c, c2 = make((bs, n, k), dtype), make((bs, k, m), dtype, 1), make((bs, n, m), dtype, 2), make((n, m), dtype, 3)
        with counted("bmm.out"):
            compare(torch.bmm(x.to("regen"), y.to("regen")), torch.bmm(x, y))
        with counted("baddbmm.out"):
            compare(torch.baddbmm(c.to("regen"), x.to("regen"), y.to("regen"), beta=beta, alpha=alpha),
                    torch.baddbmm(c, x, y, beta=beta, alpha=alpha))
        with counted("addbmm"):
            compare(torch.addbmm(c2.to("regen"), x.to("regen"), y.to("regen"), beta=beta, alpha=alpha),
                    torch.addbmm(c2, x, y, beta=beta, alpha=alpha))
    e = make((0,), dtype)
    with counted("dot"):
        compare(torch.dot(e.to("regen"), e.to("regen")), torch.dot(e, e))
    m, v, s = make((3, 0), dtype), make((0,), dtype, 1), make((3,), dtype, 2)
    with counted("addmv.out"):
        compare(torch.addmv(s.to("regen"), m.to("regen"), v.to("regen"), beta=beta), torch.addmv(s, m, v, beta=beta))


def test_integers_wrap_and_scalars_truncate_as_on_cpu():
    a = torch.full((4, 40), 100, dtype=torch.int8)
    b = torch.full((40, 3), 7, dtype=torch.int8)
    with counted("mm.out"):
        compare(torch.mm(a.to("regen"), b.to("regen")), torch.mm(a, b))
    x, y, s = make((3, 4), torch.int32), make((4, 5), torch.int32, 1), make((5,), torch.int32, 2)
    with counted("addmm.out"):
        compare(torch.addmm(s.to("regen"), x.to("regen"), y.to("regen"), alpha=1.5, beta=2),
                torch.addmm(s, x, y, alpha=1.5, beta=2))
    big = torch.tensor([2**62, 3], dtype=torch.int64)
    with counted("dot"):
        compare(torch.dot(big.to("regen"), big.to("regen")), torch.dot(big, big))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int32], ids=str)
def test_addmm_activation(dtype):
    a, b, s = make((5, 4), dtype), make((4, 6), dtype, 1), make((6,), dtype, 2)
    for use_gelu in ([False, True] if dtype.is_floating_point else [False]):
        with counted("_addmm_activation.out"):
            compare(torch._addmm_activation(s.to("regen"), a.to("regen"), b.to("regen"), beta=2, alpha=0.5 if dtype.is_floating_point else 1, use_gelu=use_gelu),
                    torch._addmm_activation(s, a, b, beta=2, alpha=0.5 if dtype.is_floating_point else 1, use_gelu=use_gelu))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_larger_products_split_over_threads(dtype):
    # Above the threading threshold, with row counts that do not divide into the blocks.
    a, b, s = make((300, 257), dtype), make((257, 190), dtype, 1), make((190,), dtype, 2)
    with counted("addmm.out"):
        compare(torch.addmm(s.to("regen"), a.to("regen"), b.to("regen")), torch.addmm(s, a, b))
    with counted("mm.out"):
        compare(torch.mm(b.to("regen").t(), a.to("regen").t()), torch.mm(b.t(), a.t()))
    x, y = make((5, 70, 130), dtype, 3), make((5, 130, 90), dtype, 4)
    with counted("bmm.out"):
        compare(torch.bmm(x.to("regen"), y.to("regen")), torch.bmm(x, y))
    with counted("addbmm"):
        c = make((70, 90), dtype, 5)
        compare(torch.addbmm(c.to("regen"), x.to("regen"), y.to("regen")), torch.addbmm(c, x, y))
    m, v = make((1000, 300), dtype, 6), make((300,), dtype, 7)
    with counted("addmv.out"):
        compare(torch.mv(m.to("regen"), v.to("regen")), torch.mv(m, v))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_small_addbmm_sums_as_cpu_bit_for_bit(dtype):
    # CPU's addbmm is one BLAS addmm_ per batch; for small products the device sums in the same
    # order (fused multiply-adds along the depth, then beta·self added with one rounding), so
    # cancellation across batches cannot make them differ (the OpInfo samples' sizes).
    for seed, (beta, alpha) in enumerate([(1, 1), (0.6, 0.2), (0, 1.5), (-2, 3)]):
        g = torch.Generator().manual_seed(seed)
        s, x, y = (torch.empty(shape, dtype=dtype).uniform_(-9, 9, generator=g) for shape in [(5, 10), (5, 5, 5), (5, 5, 10)])
        with counted("addbmm"):
            got = torch.addbmm(s.to("regen"), x.to("regen"), y.to("regen"), beta=beta, alpha=alpha)
        assert torch.equal(got.cpu(), torch.addbmm(s, x, y, beta=beta, alpha=alpha))
        with counted("addbmm"):
            got = torch.addbmm(s[:1, :5].to("regen"), x.to("regen").transpose(1, 2), y.to("regen")[:, :, :5], beta=beta, alpha=alpha)
        assert torch.equal(got.cpu(), torch.addbmm(s[:1, :5], x.transpose(1, 2), y[:, :, :5], beta=beta, alpha=alpha))


def test_out_variants_resize_and_compositions_reach_the_kernels():
    a, b = make((4, 3), torch.float32), make((3, 5), torch.float32, 1)
    out = torch.empty(0).to("regen")
    with counted("mm.out"):
        torch.mm(a.to("regen"), b.to("regen"), out=out)
    compare(out, torch.mm(a, b))
    w, bias = make((6, 3), torch.float32, 2), make((6,), torch.float32, 3)
    with counted("addmm.out"):
        compare(torch.nn.functional.linear(a.to("regen"), w.to("regen"), bias.to("regen")), torch.nn.functional.linear(a, w, bias))
    x = make((2, 4, 3), torch.float32, 4)
    with counted("mm.out"):
        compare(torch.matmul(x.to("regen"), b.to("regen")), torch.matmul(x, b))
    with counted("bmm.out"):
        compare(torch.einsum("bij,bjk->bik", x.to("regen"), make((2, 3, 2), torch.float32, 5).to("regen")),
                torch.einsum("bij,bjk->bik", x, make((2, 3, 2), torch.float32, 5)))
    # Autograd through mm: the backward products run natively too.
    ad, bd = a.to("regen").requires_grad_(), b.to("regen").requires_grad_()
    with counted("mm.out"):
        (ad @ bd).sum().backward()
    ac, bc = a.clone().requires_grad_(), b.clone().requires_grad_()
    (ac @ bc).sum().backward()
    compare(ad.grad, ac.grad)
    compare(bd.grad, bc.grad)


def error(f):
    with pytest.raises(Exception) as info:
        f()
    return type(info.value), str(info.value).split("\n")[0]


def dev(*shape, dtype=torch.float32):
    return torch.zeros(shape, dtype=dtype).to("regen")


def cpu(*shape, dtype=torch.float32):
    return torch.zeros(shape, dtype=dtype)


ERRORS = {
    "mm shapes": lambda t: torch.mm(t(2, 3), t(4, 5)),
    "mm shapes out": lambda t: torch.mm(t(2, 3), t(4, 5), out=t(0)),
    "mm dtype out": lambda t: torch.mm(t(2, 3), t(3, 5, dtype=torch.float64), out=t(0)),
    "mm 1-D": lambda t: torch.mm(t(3), t(3, 5), out=t(0)),
    "mm out dtype": lambda t: torch.mm(t(2, 3), t(3, 5), out=t(0, dtype=torch.float64)),
    "mm bool": lambda t: torch.mm(t(2, 3, dtype=torch.bool), t(3, 2, dtype=torch.bool)),
    "addmm self": lambda t: torch.addmm(t(3), t(2, 3), t(3, 5), out=t(0)),
    "addmm self dtype": lambda t: torch.addmm(t(5, dtype=torch.float64), t(2, 3), t(3, 5), out=t(0)),
    "bmm batch": lambda t: torch.bmm(t(2, 2, 3), t(3, 3, 5), out=t(0)),
    "bmm 2-D": lambda t: torch.bmm(t(2, 3), t(3, 5), out=t(0)),
    "baddbmm self": lambda t: torch.baddbmm(t(3, 2, 5), t(2, 2, 3), t(2, 3, 5), out=t(0)),
    "addbmm batches": lambda t: torch.addbmm(t(2, 5), t(2, 2, 3), t(3, 3, 5)),
    "addbmm sizes": lambda t: torch.addbmm(t(2, 5), t(2, 2, 3), t(2, 4, 5)),
    "addbmm dtype": lambda t: torch.addbmm(t(2, 5), t(2, 2, 3), t(2, 3, 5, dtype=torch.float64)),
    "addbmm bool": lambda t: torch.addbmm(t(2, 5, dtype=torch.bool), t(2, 2, 3, dtype=torch.bool), t(2, 3, 5, dtype=torch.bool)),
    "addmv size": lambda t: torch.addmv(t(2), t(2, 3), t(4), out=t(0)),
    "addmv dims": lambda t: torch.addmv(t(2), t(2, 3), t(3, 1), out=t(0)),
    "addmv dtype": lambda t: torch.addmv(t(2), t(2, 3), t(3, dtype=torch.float64), out=t(0)),
    "dot sizes": lambda t: torch.dot(t(2), t(3)),
    "dot dims": lambda t: torch.dot(t(2, 2), t(3)),
    "dot dtype": lambda t: torch.dot(t(2), t(2, dtype=torch.float64)),
    "dot bool": lambda t: torch.dot(t(2, dtype=torch.bool), t(2, dtype=torch.bool)),
    "vdot sizes": lambda t: torch.vdot(t(2), t(3)),
    "addmm complex alpha": lambda t: torch.addmm(t(5), t(2, 3), t(3, 5), alpha=1j, out=t(0)),
}


@pytest.mark.parametrize("case", ERRORS)
def test_errors_match_cpu(case):
    kind, message = error(lambda: ERRORS[case](dev))
    cpu_kind, cpu_message = error(lambda: ERRORS[case](cpu))
    # The device's messages name the kernel first ("aten::mm.out: ...").
    assert message == cpu_message or message.endswith(": " + cpu_message), (message, cpu_message)
    assert kind is cpu_kind or (issubclass(kind, RuntimeError) and issubclass(cpu_kind, RuntimeError))
