"""Matrix products of the "regen" device (kernels/ops/matmul.rs, on the gemm crate) against PyTorch's
CPU kernels: every op in every dtype and layout (contiguous, transposed, strided slices,
broadcast bias, permuted batches, conjugate and negative views, empty sizes, beta=0 with NaNs in
self), the native kernel counted each time, and PyTorch's error messages."""

import pytest
import torch

import regen_device
from devtest import assert_sums_close, counted, make

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


def compare(device_result, cpu_result):
    assert device_result.device.type == "regen"
    assert device_result.dtype == cpu_result.dtype
    assert device_result.shape == cpu_result.shape
    torch.testing.assert_close(device_result.cpu(), cpu_result, equal_nan=True, **TOL.get(cpu_result.dtype, {}))


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
def test_small_addbmm_within_the_summation_bound_of_cpu(dtype):
    # CPU's addbmm is one BLAS addmm_ per batch, whose order MKL picks per CPU (an AMD EPYC with
    # AVX-512 summed the OpInfo samples' sizes differently from an Intel one): the device's sum of
    # batches·depth products plus beta·self lies within the summation bound of CPU's.
    for seed, (beta, alpha) in enumerate([(1, 1), (0.6, 0.2), (0, 1.5), (-2, 3)]):
        g = torch.Generator().manual_seed(seed)
        s, x, y = (torch.empty(shape, dtype=dtype).uniform_(-9, 9, generator=g) for shape in [(5, 10), (5, 5, 5), (5, 5, 10)])
        for s, x, y in [(s, x, y), (s[:1, :5], x.transpose(1, 2), y[:, :, :5])]:
            with counted("addbmm"):
                got = torch.addbmm(s.to("regen"), x.to("regen"), y.to("regen"), beta=beta, alpha=alpha)
            terms = abs(beta) * s.abs() + abs(alpha) * (x.abs() @ y.abs()).sum(0)
            assert_sums_close(got, torch.addbmm(s, x, y, beta=beta, alpha=alpha), x.shape[0] * x.shape[2] + 1, terms)


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


# --- out_dtype forms (mm.dtype, bmm.dtype, addmm.dtype, baddbmm.dtype and their .dtype_out) ---
# CPU has no kernel for them in 2.15 (NotImplementedError); the device follows CUDA's: the output
# in the inputs' dtype, or float32 for float16/bfloat16 inputs, accumulated in float32. The
# reference is CPU's op on the inputs widened to the output dtype (exact for float16/bfloat16).
OUT_DTYPES = [(torch.float16, torch.float32), (torch.bfloat16, torch.float32), (torch.float16, torch.float16),
              (torch.bfloat16, torch.bfloat16), (torch.float32, torch.float32), (torch.float64, torch.float64),
              (torch.complex64, torch.complex64), (torch.int64, torch.int64)]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("dtypes", OUT_DTYPES, ids=lambda d: f"{str(d[0])[6:]}-{str(d[1])[6:]}")
def test_out_dtype_forms(dtypes, layout):
    dtype, out_dtype = dtypes
    beta, alpha = scalars(dtype)
    (a, b, s2), (da, db, ds2) = pair([(7, 5), (5, 9), (7, 9)], dtype, layout)
    (x, y, s3), (dx, dy, ds3) = pair([(3, 6, 4), (3, 4, 8), (3, 6, 8)], dtype, layout)
    w = lambda t: t.to(out_dtype)  # noqa: E731
    cases = [
        ("mm.dtype", lambda: torch.mm(da, db, out_dtype=out_dtype), lambda: torch.mm(w(a), w(b))),
        ("bmm.dtype", lambda: torch.bmm(dx, dy, out_dtype=out_dtype), lambda: torch.bmm(w(x), w(y))),
        ("addmm.dtype", lambda: torch.addmm(ds2, da, db, out_dtype=out_dtype, beta=beta, alpha=alpha),
         lambda: torch.addmm(w(s2), w(a), w(b), beta=beta, alpha=alpha)),
        ("baddbmm.dtype", lambda: torch.baddbmm(ds3, dx, dy, out_dtype=out_dtype, beta=beta, alpha=alpha),
         lambda: torch.baddbmm(w(s3), w(x), w(y), beta=beta, alpha=alpha)),
    ]
    for key, device_call, cpu_call in cases:
        expected = cpu_call()
        with counted(key):
            compare(device_call(), expected)
        # .dtype_out into a transposed, wrongly sized output: resized as the other out= forms.
        out = torch.empty(2, 3, dtype=out_dtype).to("regen").t()
        with counted(key + "_out"):
            result = {"mm.dtype": lambda: torch.mm(da, db, out_dtype=out_dtype, out=out),
                      "bmm.dtype": lambda: torch.bmm(dx, dy, out_dtype=out_dtype, out=out),
                      "addmm.dtype": lambda: torch.addmm(ds2, da, db, out_dtype=out_dtype, beta=beta, alpha=alpha, out=out),
                      "baddbmm.dtype": lambda: torch.baddbmm(ds3, dx, dy, out_dtype=out_dtype, beta=beta, alpha=alpha, out=out),
                      }[key]()
        assert result is out
        compare(out, expected)


def test_out_dtype_accumulates_in_float32():
    # 2048 products of 1 + 2^-10: in float16 every partial sum above 2048 rounds away the small
    # terms; a float32 accumulator keeps them (CPU's float32 product of the widened inputs).
    a = torch.full((1, 2048), 1 + 2 ** -10, dtype=torch.float16)
    b = torch.ones(2048, 1, dtype=torch.float16)
    with counted("mm.dtype"):
        got = torch.mm(a.to("regen"), b.to("regen"), out_dtype=torch.float32)
    assert got.cpu().item() == torch.mm(a.float(), b.float()).item() == 2048 + 2
    x = torch.full((2, 1, 600), 0.01, dtype=torch.bfloat16)
    y = torch.ones(2, 600, 1, dtype=torch.bfloat16)
    with counted("baddbmm.dtype"):
        got = torch.baddbmm(torch.ones(2, 1, 1, dtype=torch.bfloat16).to("regen"), x.to("regen"), y.to("regen"), out_dtype=torch.float32)
    compare(got, torch.baddbmm(torch.ones(2, 1, 1), x.float(), y.float()))


DTYPE_ERRORS = {
    # Shapes and dims: the messages of the op without out_dtype (CPU's).
    "mm shapes": (lambda t, **k: torch.mm(t(2, 3), t(4, 5), **k), "mm"),
    "mm 1-D": (lambda t, **k: torch.mm(t(3), t(3, 5), **k), "mm"),
    "bmm batch": (lambda t, **k: torch.bmm(t(2, 2, 3), t(3, 3, 5), **k), "bmm"),
    "addmm self": (lambda t, **k: torch.addmm(t(3), t(2, 3), t(3, 5), **k), "addmm"),
    "baddbmm self": (lambda t, **k: torch.baddbmm(t(3, 2, 5), t(2, 2, 3), t(2, 3, 5), **k), "baddbmm"),
}


@pytest.mark.parametrize("case", DTYPE_ERRORS)
def test_out_dtype_errors_match_the_plain_ops(case):
    f, _ = DTYPE_ERRORS[case]
    kind, message = error(lambda: f(dev, out_dtype=torch.float32))
    cpu_kind, cpu_message = error(lambda: f(cpu))
    assert message.endswith(": " + cpu_message), (message, cpu_message)
    assert issubclass(kind, RuntimeError) and issubclass(cpu_kind, RuntimeError)


def test_out_dtype_rule_errors_match_the_meta_functions():
    # Only float16/bfloat16 -> float32 widens: PyTorch's meta functions (the CUDA rule) refuse the
    # rest with this message; the device's kernel does too.
    meta = lambda *s, dtype=torch.float32: torch.zeros(s, dtype=dtype, device="meta")  # noqa: E731
    for f in [lambda t: torch.mm(t(2, 3), t(3, 4), out_dtype=torch.float64),
              lambda t: torch.mm(t(2, 3, dtype=torch.float16), t(3, 4, dtype=torch.float16), out_dtype=torch.float64),
              lambda t: torch.addmm(t(4), t(2, 3), t(3, 4), out_dtype=torch.float16)]:
        kind, message = error(lambda: f(dev))
        meta_kind, meta_message = error(lambda: f(meta))
        assert message.endswith(": " + meta_message) and kind is meta_kind is RuntimeError, (message, meta_message)
    # The provided out tensor must have out_dtype.
    kind, message = error(lambda: torch.mm(dev(2, 3), dev(3, 4), out_dtype=torch.float32, out=dev(0, dtype=torch.float64)))
    assert kind is RuntimeError and "out_dtype" in message


# --- _int_mm (int8 x int8 -> int32; uint8 self too): CPU's results, shapes and errors ---

def int8(shape, seed, dtype=torch.int8):
    g = torch.Generator().manual_seed(seed)
    low, high = (0, 256) if dtype == torch.uint8 else (-128, 128)
    return torch.randint(low, high, shape, generator=g, dtype=dtype)


@pytest.mark.parametrize("self_dtype", [torch.int8, torch.uint8], ids=str)
def test_int_mm(self_dtype):
    # Taller and wider than deep (the engine swaps rows and columns for the wide one), transposed
    # and sliced operands, extreme values, empty sizes.
    for (m, k, n) in [(17, 32, 8), (8, 40, 33), (1, 1, 1), (64, 300, 48), (0, 3, 4), (3, 0, 4), (3, 4, 0)]:
        a, b = int8((m, k), m + k, self_dtype), int8((k, n), k + n)
        for layout in ["contiguous", "transposed", "strided"]:
            if layout == "transposed":
                da, db = a.t().contiguous().to("regen").t(), b.t().contiguous().to("regen").t()
            elif layout == "strided":
                da = torch.zeros(m, 2 * k, dtype=self_dtype).to("regen")[:, ::2]
                da.copy_(a.to("regen"))
                db = torch.zeros(2 * k, n, dtype=torch.int8).to("regen")[::2]
                db.copy_(b.to("regen"))
            else:
                da, db = a.to("regen"), b.to("regen")
            with counted("_int_mm"):
                got = torch._int_mm(da, db)
            # The exact product, from int64: CPU's own _int_mm is oneDNN's, which with
            # ONEDNN_MAX_CPU_ISA=AVX2 (and on CPUs without AVX-512 VNNI) sums pairs of u8·s8
            # products in int16 with saturation (vpmaddubsw), so it is not exact everywhere.
            expected = (a.long() @ b.long()).int()
            assert got.dtype == torch.int32 and got.shape == expected.shape
            assert torch.equal(got.cpu(), expected)
            out = torch.full((m, n), 7, dtype=torch.int32).to("regen")
            with counted("_int_mm.out"):
                assert torch._int_mm(da, db, out=out) is out
            assert torch.equal(out.cpu(), expected)
    lo = torch.full((4, 64), -128, dtype=torch.int8)
    with counted("_int_mm"):
        assert torch.equal(torch._int_mm(lo.to("regen"), lo.t().contiguous().to("regen")).cpu(), (lo.long() @ lo.long().t()).int())


def t8(*shape, dtype=torch.int8):
    return torch.zeros(shape, dtype=dtype)


INT_MM_ERRORS = {
    "self 1-D": lambda d: torch._int_mm(t8(3).to(d), t8(3, 4).to(d)),
    "self 0-D": lambda d: torch._int_mm(t8().to(d), t8(3, 4).to(d)),
    "mat2 1-D": lambda d: torch._int_mm(t8(2, 3).to(d), t8(3).to(d)),
    "mat2 0-D": lambda d: torch._int_mm(t8(2, 3).to(d), t8().to(d)),
    "mat2 3-D": lambda d: torch._int_mm(t8(2, 3).to(d), t8(1, 3, 4).to(d)),
    "shapes": lambda d: torch._int_mm(t8(2, 3).to(d), t8(4, 5).to(d)),
    "self float": lambda d: torch._int_mm(t8(2, 3, dtype=torch.float32).to(d), t8(3, 4).to(d)),
    "mat2 uint8": lambda d: torch._int_mm(t8(2, 3).to(d), t8(3, 4, dtype=torch.uint8).to(d)),
    "out int64": lambda d: torch._int_mm(t8(2, 3).to(d), t8(3, 4).to(d), out=t8(2, 4, dtype=torch.int64).to(d)),
    "out rows": lambda d: torch._int_mm(t8(2, 3).to(d), t8(3, 4).to(d), out=t8(3, 4, dtype=torch.int32).to(d)),
    "out cols": lambda d: torch._int_mm(t8(2, 3).to(d), t8(3, 4).to(d), out=t8(2, 5, dtype=torch.int32).to(d)),
    "out empty": lambda d: torch._int_mm(t8(2, 3).to(d), t8(3, 4).to(d), out=t8(0, dtype=torch.int32).to(d)),
    "out 1-D": lambda d: torch._int_mm(t8(2, 3).to(d), t8(3, 4).to(d), out=t8(2, dtype=torch.int32).to(d)),
    "out 3-D": lambda d: torch._int_mm(t8(2, 3).to(d), t8(3, 4).to(d), out=t8(2, 4, 1, dtype=torch.int32).to(d)),
    "out transposed": lambda d: torch._int_mm(t8(2, 3).to(d), t8(3, 4).to(d), out=t8(4, 2, dtype=torch.int32).to(d).t()),
}


@pytest.mark.parametrize("case", INT_MM_ERRORS)
def test_int_mm_errors_match_cpu(case):
    kind, message = error(lambda: INT_MM_ERRORS[case]("regen"))
    cpu_kind, cpu_message = error(lambda: INT_MM_ERRORS[case]("cpu"))
    assert message == cpu_message or message.endswith(": " + cpu_message), (message, cpu_message)
    assert kind is cpu_kind


# --- matmul_backward and linear_backward: nothing reaches them for dense tensors in 2.15 (only
# nested tensors and MPS register them), so they are called directly; the reference is CPU's
# autograd through matmul / linear (float64 for int64, whose values stay exact). ---

GRAD_DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.complex64, torch.int64]
MATMUL_SHAPES = [((5,), (5,)), ((3, 5), (5,)), ((5,), (5, 4)), ((3, 5), (5, 4)), ((2, 3, 5), (5, 4)),
                 ((3, 5), (2, 5, 4)), ((2, 3, 5), (2, 5, 4)), ((2, 1, 3, 5), (4, 5, 2)), ((6, 3, 5), (5,)),
                 ((5,), (2, 5, 4)), ((0, 3, 5), (5, 4)), ((3, 0), (0, 4))]


def autograd_reference(f, inputs, grad, dtype):
    # The device sums half types in f32 and rounds once; CPU's autograd rounds the batch products
    # before summing them over broadcast dims, which can differ by more than bf16's tolerance.
    compute = {torch.float16: torch.float32, torch.bfloat16: torch.float32}.get(dtype, dtype)
    if not (dtype.is_floating_point or dtype.is_complex):
        compute = torch.float64
    leaves = [t.detach().to(compute).requires_grad_() for t in inputs]
    grads = torch.autograd.grad(f(*leaves), leaves, grad.to(compute), allow_unused=True)
    return [g if g is None else g.to(dtype) for g in grads]


def laid_out(t, layout):
    """`t` on the device: contiguous, transposed storage, or a slice of a larger tensor."""
    if layout == "transposed" and t.dim() >= 2:
        return t.transpose(-1, -2).contiguous().to("regen").transpose(-1, -2)
    if layout == "strided" and t.dim() >= 1:
        big = torch.zeros(t.shape[:-1] + (2 * t.shape[-1],), dtype=t.dtype).to("regen")
        view = big[..., 1::2]
        view.copy_(t.to("regen"))
        return view
    return t.to("regen")


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("dtype", GRAD_DTYPES, ids=str)
def test_matmul_backward(dtype, layout):
    for i, (ss, so) in enumerate(MATMUL_SHAPES):
        s, o = make(ss, dtype, 2 * i), make(so, dtype, 2 * i + 1)
        g = make(tuple(torch.matmul(torch.zeros(ss), torch.zeros(so)).shape), dtype, 99)
        expected = autograd_reference(torch.matmul, [s, o], g, dtype)
        ds, do, dg = laid_out(s, layout), laid_out(o, layout), laid_out(g, layout)
        with counted("matmul_backward"):
            gs, go = torch.ops.aten.matmul_backward(dg, ds, do, [True, True])
        compare(gs, expected[0])
        compare(go, expected[1])
        for mask in ([True, False], [False, True]):
            with counted("matmul_backward"):
                only = torch.ops.aten.matmul_backward(dg, ds, do, mask)
            for got, want, wanted in zip(only, expected, mask):
                if wanted:
                    compare(got, want)
                else:
                    assert got is None


def test_matmul_backward_conjugate_and_negative_views():
    s, o = make((2, 3, 4), torch.complex64), make((4, 5), torch.complex64, 1)
    g = make((2, 3, 5), torch.complex64, 2)
    expected = autograd_reference(torch.matmul, [s.conj(), torch._neg_view(o)], g.conj(), torch.complex64)
    with counted("matmul_backward"):
        gs, go = torch.ops.aten.matmul_backward(g.to("regen").conj(), s.to("regen").conj(),
                                                torch._neg_view(o.to("regen")), [True, True])
    compare(gs, expected[0])
    compare(go, expected[1])


LINEAR_SHAPES = [((4, 3), (5, 3)), ((2, 4, 3), (5, 3)), ((3,), (5, 3)), ((2, 3, 4, 3), (5, 3)), ((4, 3), (3,)),
                 ((2, 4, 3), (3,)), ((0, 3), (5, 3)), ((4, 0), (5, 0))]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("dtype", GRAD_DTYPES, ids=str)
def test_linear_backward(dtype, layout):
    for i, (sx, sw) in enumerate(LINEAR_SHAPES):
        x, w = make(sx, dtype, 2 * i), make(sw, dtype, 2 * i + 1)
        with_bias = len(sw) == 2  # CPU's linear takes no bias with a vector weight
        b = make(sw[:1], dtype, 50 + i) if with_bias else None
        g = make(sx[:-1] + sw[:1] if with_bias else sx[:-1], dtype, 99)
        f = (lambda x, w, b: torch.nn.functional.linear(x, w, b)) if with_bias else (lambda x, w: torch.nn.functional.linear(x, w))
        expected = autograd_reference(f, [x, w] + ([b] if with_bias else []), g, dtype)
        dx, dw, dg = laid_out(x, layout), laid_out(w, layout), laid_out(g, layout)
        masks = [[True, True, with_bias], [True, False, False], [False, True, False]] + ([[False, False, True]] if with_bias else [])
        for mask in masks:
            with counted("linear_backward"):
                got = torch.ops.aten.linear_backward(dx, dg, dw, mask)
            for j, wanted in enumerate(mask):
                if wanted:
                    compare(got[j], expected[j])
                else:
                    assert got[j] is None


def test_linear_backward_composes_large_products_over_threads():
    # Leading dimensions folded into one product of 256 rows (a view: no copies), the weight
    # gradient summed over them as the depth of one product.
    x, w, g = make((4, 64, 96), torch.float32), make((80, 96), torch.float32, 1), make((4, 64, 80), torch.float32, 2)
    expected = autograd_reference(lambda x, w, b: torch.nn.functional.linear(x, w, b), [x, w, make((80,), torch.float32, 3)], g, torch.float32)
    with counted("linear_backward"):
        got = torch.ops.aten.linear_backward(x.to("regen"), g.to("regen"), w.to("regen"), [True, True, True])
    for a, b in zip(got, expected):
        compare(a, b)


BACKWARD_ERRORS = {
    # (device call, CPU forward call raising the same check)
    "matmul 0-D": (lambda d: torch.ops.aten.matmul_backward(d(3), d(), d(3, 4), [True, True]),
                   lambda c: torch.matmul(c(), c(3, 4))),
    "matmul mm": (lambda d: torch.ops.aten.matmul_backward(d(2, 5), d(2, 3), d(4, 5), [True, True]),
                  lambda c: torch.matmul(c(2, 3), c(4, 5))),
    "matmul vector-matrix": (lambda d: torch.ops.aten.matmul_backward(d(5), d(3), d(4, 5), [True, True]),
                             lambda c: torch.matmul(c(3), c(4, 5))),
    "matmul mv": (lambda d: torch.ops.aten.matmul_backward(d(2), d(2, 3), d(4), [True, True]),
                  lambda c: torch.matmul(c(2, 3), c(4))),
    "matmul dot": (lambda d: torch.ops.aten.matmul_backward(d(), d(3), d(4), [True, True]),
                   lambda c: torch.matmul(c(3), c(4))),
    "matmul folded": (lambda d: torch.ops.aten.matmul_backward(d(2, 2, 5), d(2, 2, 3), d(4, 5), [True, True]),
                      lambda c: torch.matmul(c(2, 2, 3), c(4, 5))),
    "matmul batched": (lambda d: torch.ops.aten.matmul_backward(d(2, 2, 5), d(2, 2, 3), d(2, 4, 5), [True, True]),
                       lambda c: torch.matmul(c(2, 2, 3), c(2, 4, 5))),
    "matmul broadcast": (lambda d: torch.ops.aten.matmul_backward(d(2, 2, 5), d(2, 2, 3), d(3, 3, 5), [True, True]),
                         lambda c: torch.matmul(c(2, 2, 3), c(3, 3, 5))),
    "matmul dtype": (lambda d: torch.ops.aten.matmul_backward(d(2, 5), d(2, 3), d(3, 5, dtype=torch.float64), [True, True]),
                     lambda c: torch.matmul(c(2, 3), c(3, 5, dtype=torch.float64))),
    "linear 0-D": (lambda d: torch.ops.aten.linear_backward(d(), d(5), d(5, 3), [True, True, True]),
                   lambda c: torch.nn.functional.linear(c(), c(5, 3))),
    "linear shapes": (lambda d: torch.ops.aten.linear_backward(d(2, 3), d(2, 5), d(5, 4), [True, True, True]),
                      lambda c: torch.nn.functional.linear(c(2, 3), c(5, 4))),
    "linear folded": (lambda d: torch.ops.aten.linear_backward(d(2, 2, 3), d(2, 2, 5), d(5, 4), [True, True, True]),
                      lambda c: torch.nn.functional.linear(c(2, 2, 3), c(5, 4))),
    "linear 3-D weight": (lambda d: torch.ops.aten.linear_backward(d(2, 3), d(2, 5), d(2, 5, 3), [True, True, True]),
                          lambda c: torch.nn.functional.linear(c(2, 3), c(2, 5, 3))),
    "linear dtype": (lambda d: torch.ops.aten.linear_backward(d(2, 3), d(2, 5), d(5, 3, dtype=torch.float64), [True, True, True]),
                     lambda c: torch.nn.functional.linear(c(2, 3), c(5, 3, dtype=torch.float64))),
}


@pytest.mark.parametrize("case", BACKWARD_ERRORS)
def test_backward_errors_match_cpu_forward_checks(case):
    device_call, cpu_call = BACKWARD_ERRORS[case]
    kind, message = error(lambda: device_call(dev))
    cpu_kind, cpu_message = error(lambda: cpu_call(cpu))
    assert message.endswith(": " + cpu_message), (message, cpu_message)
    assert issubclass(kind, RuntimeError) and issubclass(cpu_kind, RuntimeError)


def test_backward_grad_of_the_wrong_shape_is_an_error():
    for f in [lambda: torch.ops.aten.matmul_backward(dev(2, 4), dev(2, 3), dev(3, 5), [True, True]),
              lambda: torch.ops.aten.linear_backward(dev(2, 3), dev(2, 4), dev(5, 3), [True, True, True])]:
        kind, message = error(f)
        assert kind is RuntimeError and "shape" in message
