"""Shape, copy, factory and sorting ops of the "regen" device against PyTorch's CPU kernels:
every op over dtypes and layouts (non-contiguous, transposed, expanded, empty, 0-dim, negative
dims), counted as native, with CPU's error messages."""

import warnings

import pytest
import torch

import regen_device
from devtest import VECTOR_ROUNDING, counted, make

DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16, torch.complex64]


def layouts(dtype):
    """(name, cpu tensor) pairs: the same values in several layouts."""
    base = make((4, 6), dtype)
    return [
        ("contiguous", base),
        ("transposed", make((6, 4), dtype, 1).t()),
        ("strided", make((4, 12), dtype, 2)[:, ::2]),
        ("expanded", make((1, 6), dtype, 3).expand(4, 6)),
        ("3d-permuted", make((2, 3, 4), dtype, 4).permute(2, 0, 1)),
        ("empty", make((0, 6), dtype)),
    ]


def dev(t):
    """`t` on the device with the same strides (a copy keeps a contiguous layout otherwise)."""
    if t.is_contiguous() or t.numel() == 0:
        return t.to("regen")
    # Rebuild the layout on the device: the same view of a device copy of its storage.
    if t.stride() and min(t.stride()) == 0:
        base = t[tuple(slice(0, 1) if s == 0 else slice(None) for s in t.stride())].contiguous().to("regen")
        return base.expand(t.shape)
    perm = sorted(range(t.dim()), key=lambda d: -t.stride(d))
    dense = t.permute(perm).contiguous().to("regen")
    inverse = [perm.index(d) for d in range(t.dim())]
    r = dense.permute(inverse)
    if r.stride() != t.stride():
        r = t.to("regen")
    return r


def compare(device_result, cpu_result):
    assert device_result.device.type == "regen"
    assert device_result.dtype == cpu_result.dtype
    assert device_result.shape == cpu_result.shape
    torch.testing.assert_close(device_result.cpu(), cpu_result, equal_nan=True, **VECTOR_ROUNDING)


def same_error(fn_cpu, fn_dev):
    with pytest.raises(Exception) as cpu:
        fn_cpu()
    with pytest.raises(Exception) as device:
        fn_dev()
    assert type(device.value) is type(cpu.value) or isinstance(device.value, RuntimeError)
    # The device's messages carry the op's name first (`aten::roll: ...`).
    assert str(device.value).split("\n")[0].endswith(str(cpu.value).split("\n")[0])


# ------------------------------------------------------------------------------------------
# Copies.


@pytest.mark.parametrize("dtype", DTYPES + [torch.uint8, torch.int16, torch.float16, torch.complex128])
def test_clone_and_contiguous_of_every_layout(dtype):
    for name, t in layouts(dtype):
        d = dev(t)
        with counted("copy_"):
            c = d.contiguous() if not d.is_contiguous() else d.clone()
        compare(c, t.contiguous())
        compare(d.clone(), t.clone())


@pytest.mark.parametrize("shape", [(2048, 33), (33, 2048), (300, 301), (1, 5), (64, 64)])
def test_transposed_copies_take_the_tiled_path_correctly(shape):
    t = torch.randn(shape)
    d = t.to("regen")
    compare(d.t().contiguous(), t.t().contiguous())
    x = torch.randn(3, *shape, dtype=torch.float64)
    compare(x.to("regen").transpose(1, 2).contiguous(), x.transpose(1, 2).contiguous())
    out = torch.empty(shape[1], shape[0], device="regen")
    out.copy_(d.t())
    compare(out, t.t())


def test_copy_into_a_transposed_destination_and_between_dtypes():
    t = torch.randn(50, 70)
    out = torch.empty(70, 50, device="regen").t()
    out.copy_(t.to("regen"))
    compare(out, t)
    o2 = torch.empty(50, 70, dtype=torch.float64, device="regen")
    o2.copy_(t.to("regen").t().t())
    compare(o2, t.double())


# ------------------------------------------------------------------------------------------
# cat.


@pytest.mark.parametrize("dtype", DTYPES)
def test_cat_any_dim_and_layout(dtype):
    ts = [t for _, t in layouts(dtype) if t.shape == (4, 6)]
    for dim in (0, 1, -1, -2):
        with counted("cat.out"):
            r = torch.cat([dev(t) for t in ts], dim)
        compare(r, torch.cat(ts, dim))


def test_cat_promotes_skips_legacy_empty_and_uses_out():
    a, b = make((2, 3), torch.int32), make((2, 2), torch.float64)
    compare(torch.cat([dev(a), dev(b)], 1), torch.cat([a, b], 1))
    e = torch.empty(0, dtype=torch.int64)
    compare(torch.cat([e.to("regen"), dev(a)], 1), torch.cat([e, a], 1))
    compare(torch.cat([e.to("regen"), e.to("regen")], 0), torch.cat([e, e], 0))
    out = torch.empty(0, dtype=torch.float64, device="regen")
    torch.cat([dev(a), dev(a)], 0, out=out)
    compare(out, torch.cat([a, a]).double())
    x = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    r = torch.cat([x.to("regen").to(memory_format=torch.channels_last)] * 2, 1)
    compare(r, torch.cat([x, x], 1))
    assert r.stride() == torch.cat([x, x], 1).stride()


def test_stack_hstack_vstack_run_on_cat():
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    for f in (torch.stack, torch.hstack, torch.vstack, torch.dstack):
        with counted("cat.out"):
            r = f([a.to("regen"), b.to("regen")])
        compare(r, f([a, b]))


def test_cat_errors():
    cases = [
        lambda m: torch.cat([m(torch.tensor(1.0))]),
        lambda m: torch.cat([m(torch.ones(2, 3)), m(torch.ones(2))]),
        lambda m: torch.cat([m(torch.ones(2, 3)), m(torch.ones(2, 4))]),
        lambda m: torch.cat([m(torch.ones(2, 3)), m(torch.ones(2, 4))], 2),
    ]
    for c in cases:
        same_error(lambda: c(lambda t: t), lambda: c(lambda t: t.to("regen")))
    with pytest.raises(Exception, match="can't be cast to the desired output type Long"):
        torch.cat([torch.ones(2, device="regen")], out=torch.empty(0, dtype=torch.int64, device="regen"))


# ------------------------------------------------------------------------------------------
# flip, roll, tril/triu, narrow_copy, unfold.


@pytest.mark.parametrize("dtype", DTYPES)
def test_flip_roll_tril_triu(dtype):
    for name, t in layouts(dtype):
        d = dev(t)
        for dims in ([0], [1], [0, 1], [-1], []):
            with counted("flip"):
                compare(torch.flip(d, dims), torch.flip(t, dims))
        for shifts, dims in ((1, 0), (-3, 1), ((2, 5), (0, 1)), ((1, 1), (1, 1)), (3, None), (7, -1)):
            with counted("roll"):
                compare(torch.roll(d, shifts, dims), torch.roll(t, shifts, dims))
        for k in (-2, -1, 0, 1, 3, 10):
            with counted("tril.out"):
                compare(torch.tril(d, k), torch.tril(t, k))
            with counted("triu.out"):
                compare(torch.triu(d, k), torch.triu(t, k))
    s = make((), dtype)
    compare(torch.flip(s.to("regen"), [0]), torch.flip(s, [0]))
    compare(torch.roll(s.to("regen"), 2), torch.roll(s, 2))


def test_shape_op_variants_and_in_place():
    t = torch.randn(3, 5, 4)
    d = t.to("regen")
    compare(torch.fliplr(d), torch.fliplr(t))
    compare(torch.flipud(d), torch.flipud(t))
    compare(torch.rot90(d, 1, (0, 2)), torch.rot90(t, 1, (0, 2)))
    x, y = t.clone(), d.clone()
    x.tril_(1)
    y.tril_(1)
    compare(y, x)
    x.triu_(-1)
    y.triu_(-1)
    compare(y, x)
    out = torch.empty(2, device="regen")
    torch.tril(d, out=out)
    compare(out, torch.tril(t))


@pytest.mark.parametrize("dtype", DTYPES)
def test_narrow_copy_unfold_repeat_interleave(dtype):
    for name, t in layouts(dtype):
        d = dev(t)
        for dim, start, length in ((0, 1, 2), (1, -3, 3), (-1, 0, 0)):
            n = t.shape[dim]
            if not (-n <= start <= n) or (start % max(n, 1) if start < 0 else start) + length > n:
                continue
            out = torch.empty(0, dtype=dtype, device="regen")
            with counted("narrow_copy.out"):
                torch.narrow_copy(d, dim, start, length, out=out)
            compare(out, torch.narrow_copy(t, dim, start, length))
        for dim, size, step in ((0, 2, 1), (1, 3, 2), (-1, 1, 5)):
            if t.shape[dim] < size:
                continue
            with counted("unfold"):
                u = d.unfold(dim, size, step)
            compare(u, t.unfold(dim, size, step))
    s = make((), dtype)
    compare(s.to("regen").unfold(0, 1, 1), s.unfold(0, 1, 1))


def test_unfold_backward_through_autograd():
    for size, step in ((3, 1), (2, 2), (2, 3), (4, 2)):
        t = torch.randn(5, 9, dtype=torch.float64, requires_grad=True)
        d = t.detach().to("regen").requires_grad_()
        g = torch.randn(t.unfold(1, size, step).shape, dtype=torch.float64)
        t.unfold(1, size, step).backward(g)
        with counted("unfold_backward"):
            d.unfold(1, size, step).backward(g.to("regen"))
        torch.testing.assert_close(d.grad.cpu(), t.grad)


def test_repeat_interleave_tensor():
    for dtype in (torch.int64, torch.int32):
        r = torch.tensor([2, 0, 3, 1], dtype=dtype)
        with counted("repeat_interleave.Tensor"):
            compare(torch.repeat_interleave(r.to("regen")), torch.repeat_interleave(r))
        compare(torch.repeat_interleave(r.to("regen")[::2]), torch.repeat_interleave(r[::2]))
        compare(torch.repeat_interleave(r.to("regen"), output_size=6), torch.repeat_interleave(r, output_size=6))
        e = torch.empty(0, dtype=dtype)
        compare(torch.repeat_interleave(e.to("regen")), torch.repeat_interleave(e))
    x = torch.randn(4, 3)
    compare(torch.repeat_interleave(x.to("regen"), torch.tensor([1, 2, 0, 3]).to("regen"), dim=0),
            torch.repeat_interleave(x, torch.tensor([1, 2, 0, 3]), dim=0))


def test_shape_errors():
    cases = [
        lambda m: torch.roll(m(torch.arange(4)), []),
        lambda m: torch.roll(m(torch.arange(4)), [1, 2]),
        lambda m: torch.roll(m(torch.arange(4)), [1, 2], [0]),
        lambda m: torch.roll(m(torch.tensor(3)), 1, 0),
        lambda m: torch.roll(m(torch.arange(4)), 1, 1),
        lambda m: torch.flip(m(torch.arange(4)), [0, 0]),
        lambda m: torch.flip(m(torch.arange(4)), [1]),
        lambda m: torch.tril(m(torch.arange(4))),
        lambda m: torch.triu(m(torch.arange(4))),
        lambda m: torch.tril(m(torch.ones(2, 2)), out=m(torch.empty(2, 2, dtype=torch.float64))),
        lambda m: torch.narrow_copy(m(torch.tensor(3)), 0, 0, 1),
        lambda m: torch.narrow_copy(m(torch.arange(4)), 0, 5, 1),
        lambda m: torch.narrow_copy(m(torch.arange(4)), 0, 2, 3),
        lambda m: torch.narrow_copy(m(torch.arange(4)), -2, 2, 3),
        lambda m: m(torch.ones(3, 4)).unfold(1, 5, 1),
        lambda m: m(torch.ones(3, 4)).unfold(1, 2, 0),
        lambda m: m(torch.ones(3, 4)).unfold(1, -1, 1),
        lambda m: torch.repeat_interleave(m(torch.tensor([1, -2]))),
        lambda m: torch.repeat_interleave(m(torch.tensor([1.0, 2]))),
        lambda m: torch.repeat_interleave(m(torch.tensor([[1, 2]]))),
        lambda m: torch.repeat_interleave(m(torch.tensor([1, 2])), output_size=2),
    ]
    for c in cases:
        same_error(lambda: c(lambda t: t), lambda: c(lambda t: t.to("regen")))


# ------------------------------------------------------------------------------------------
# Factories.

FACTORY_DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32, torch.uint8, torch.int8,
                  torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", FACTORY_DTYPES)
def test_arange_and_range(dtype):
    cases = [(0, 10, 1), (0, 1, 0.1), (-3.5, 7.25, 0.37), (10, 0, -0.7), (0, 1000, 3), (1, 2, 0.001),
             (0, 5, 2), (0, 0, 1), (2.5, 300.0, 1.5)]
    for start, end, step in cases:
        if not dtype.is_floating_point and not all(float(v).is_integer() for v in (start, end, step)):
            continue
        if dtype in (torch.uint8, torch.int8) and max(abs(start), abs(end)) > 127:
            continue
        with counted("arange.start_out"):
            r = torch.arange(start, end, step, dtype=dtype, device="regen")
        compare(r, torch.arange(start, end, step, dtype=dtype))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if dtype.is_floating_point or float(step).is_integer():
                with counted("range.out"):
                    r = torch.range(start, end, step, dtype=dtype, device="regen")
                compare(r, torch.range(start, end, step, dtype=dtype))
    compare(torch.arange(5, device="regen"), torch.arange(5))
    compare(torch.arange(0.5, 3, device="regen"), torch.arange(0.5, 3))


@pytest.mark.parametrize("dtype", FACTORY_DTYPES + [torch.complex64, torch.complex128])
def test_linspace_and_logspace(dtype):
    cases = [(0, 1, 5), (-3.5, 7.25, 37), (10, -2, 101), (0, 100, 1000), (3, 3, 1), (0, 1, 0), (1, 2, 2),
             (-1.1, 2.9, 70)]
    for start, end, steps in cases:
        if dtype == torch.uint8 and min(start, end) < 0:
            continue
        with counted("linspace.out"):
            r = torch.linspace(start, end, steps, dtype=dtype, device="regen")
        compare(r, torch.linspace(start, end, steps, dtype=dtype))
        if dtype == torch.uint8 and min(start, end) < 0:
            continue
        for base in (10.0, 2.0, 0.5):
            with counted("logspace.out"):
                r = torch.logspace(start / 10, end / 10, steps, base, dtype=dtype, device="regen")
            expect = torch.logspace(start / 10, end / 10, steps, base, dtype=dtype)
            if dtype.is_complex:
                torch.testing.assert_close(r.cpu(), expect)
            else:
                compare(r, expect)


def test_linspace_large_and_out_layouts():
    compare(torch.linspace(-7, 13, 100003, device="regen"), torch.linspace(-7, 13, 100003))
    compare(torch.arange(0, 100003, 0.7, device="regen"), torch.arange(0, 100003, 0.7))
    out = torch.empty(4, 5, device="regen").t()
    torch.linspace(0, 1, 20, out=out)
    o = torch.empty(4, 5).t()
    torch.linspace(0, 1, 20, out=o)
    compare(out, o)
    out = torch.empty(3, device="regen")
    torch.arange(0, 10, out=out)
    compare(out, torch.arange(0, 10, dtype=torch.float32))


@pytest.mark.parametrize("dtype", DTYPES)
def test_eye_and_triangle_indices(dtype):
    for n, m in ((3, 3), (2, 5), (5, 2), (0, 3), (1, 1)):
        with counted("eye.m_out"):
            compare(torch.eye(n, m, dtype=dtype, device="regen"), torch.eye(n, m, dtype=dtype))
        out = torch.empty(0, dtype=dtype, device="regen")
        with counted("eye.out"):
            torch.eye(n, out=out)
        compare(out, torch.eye(n, dtype=dtype))
    out = torch.ones(6, 4, device="regen").t()
    torch.eye(4, 6, out=out)
    compare(out, torch.eye(4, 6))
    for row, col, off in ((3, 3, 0), (4, 6, 1), (6, 4, -2), (0, 3, 0), (5, 5, 10), (5, 5, -10)):
        for idt in (torch.int64, torch.int32):
            with counted("tril_indices"):
                compare(torch.tril_indices(row, col, off, dtype=idt, device="regen"),
                        torch.tril_indices(row, col, off, dtype=idt))
            with counted("triu_indices"):
                compare(torch.triu_indices(row, col, off, dtype=idt, device="regen"),
                        torch.triu_indices(row, col, off, dtype=idt))


def test_factory_errors():
    cases = [
        lambda d: torch.arange(0, 3, 0, device=d),
        lambda d: torch.arange(0, float("nan"), 1.0, device=d),
        lambda d: torch.arange(0, -3, 1, device=d),
        lambda d: torch.arange(0, 3, dtype=torch.bool, device=d),
        lambda d: torch.linspace(0, 3, -1, device=d),
        lambda d: torch.linspace(0, 3, 5, dtype=torch.bool, device=d),
        lambda d: torch.logspace(0, 3, 5, dtype=torch.bool, device=d),
        lambda d: torch.eye(-1, device=d),
        lambda d: torch.eye(2, -1, device=d),
        lambda d: torch.tril_indices(3, 3, dtype=torch.bool, device=d),
        lambda d: torch.tril_indices(-1, 3, device=d),
        lambda d: torch.triu_indices(3, -1, device=d),
        lambda d: torch.tril_indices(3, 3, dtype=torch.float32, device=d),
    ]
    for c in cases:
        same_error(lambda: c("cpu"), lambda: c("regen"))


# ------------------------------------------------------------------------------------------
# Sorting and selection.

SORT_DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16, torch.uint8, torch.float16]


def with_specials(t):
    """Ties, NaN, infinities and signed zeros in a floating tensor (values made on CPU)."""
    if not t.dtype.is_floating_point or t.numel() < 8:
        return t
    t = t.clone()
    flat = t.view(-1) if t.is_contiguous() else None
    if flat is None:
        return t
    flat[0], flat[1], flat[2], flat[3] = float("nan"), float("inf"), -0.0, 0.0
    flat[4], flat[5], flat[6] = flat[7], float("-inf"), float("nan")
    return t


def sort_inputs(dtype):
    out = []
    for name, t in layouts(dtype):
        if name == "contiguous":
            t = with_specials(t)
        out.append((name, t))
    ties = torch.tensor([[3, 1, 2, 1, 3, 3, 0, 1], [2, 2, 2, 2, 1, 1, 1, 1]]).to(dtype)
    out.append(("ties", ties))
    return out


@pytest.mark.parametrize("dtype", SORT_DTYPES)
def test_sort_and_argsort(dtype):
    for name, t in sort_inputs(dtype):
        d = dev(t)
        for dim in (0, 1, -1):
            for descending in (False, True):
                with counted("sort.values_stable"):
                    v, i = torch.sort(d, dim=dim, descending=descending, stable=True)
                ev, ei = torch.sort(t, dim=dim, descending=descending, stable=True)
                compare(v, ev)
                compare(i, ei)
                compare(torch.argsort(d, dim=dim, descending=descending, stable=True),
                        torch.argsort(t, dim=dim, descending=descending, stable=True))
                # CPU's unstable order too: the same std::sort, ties included.
                v, i = torch.sort(d, dim=dim, descending=descending)
                ev, ei = torch.sort(t, dim=dim, descending=descending)
                compare(v, ev)
                compare(i, ei)
                compare(torch.argsort(d, dim=dim, descending=descending), torch.argsort(t, dim=dim, descending=descending))
        compare(torch.msort(d), torch.msort(t))
    s = make((), dtype)
    v, i = torch.sort(s.to("regen"))
    compare(v, s)
    compare(i, torch.tensor(0))


@pytest.mark.parametrize("dtype", [d for d in SORT_DTYPES if d != torch.bool])
def test_topk(dtype):
    for name, t in sort_inputs(dtype):
        d = dev(t)
        for dim in (0, 1, -1):
            n = t.shape[dim]
            for k in {0, min(1, n), min(3, n), n}:
                for largest in (True, False):
                    for sorted_ in (True, False):
                        with counted("topk.values"):
                            v, i = torch.topk(d, k, dim=dim, largest=largest, sorted=sorted_)
                        ev, ei = torch.topk(t, k, dim=dim, largest=largest, sorted=sorted_)
                        compare(v, ev)
                        compare(i, ei)


@pytest.mark.parametrize("dtype", [d for d in SORT_DTYPES if d != torch.bool])
def test_kthvalue_median_nanmedian(dtype):
    for name, t in sort_inputs(dtype):
        d = dev(t)
        for dim in (0, 1, -1):
            n = t.shape[dim]
            if n == 0:
                continue
            for keepdim in (False, True):
                for k in {1, (n + 1) // 2, n}:
                    with counted("kthvalue.values"):
                        v, i = torch.kthvalue(d, k, dim, keepdim)
                    ev, ei = torch.kthvalue(t, k, dim, keepdim)
                    compare(v, ev)
                    compare(i, ei)
                for f, op in ((torch.median, "median.dim_values"), (torch.nanmedian, "nanmedian.dim_values")):
                    with counted(op):
                        v, i = f(d, dim, keepdim)
                    # CPU's median of an expanded (stride 0) tensor is wrong: compare with its copy.
                    ev, ei = f(t.contiguous(), dim, keepdim)
                    compare(v, ev)
                    compare(i, ei)
        if t.numel() or dtype.is_floating_point:
            with counted("median"):
                compare(torch.median(d), torch.median(t))
            with counted("nanmedian"):
                compare(torch.nanmedian(d), torch.nanmedian(t))


@pytest.mark.parametrize("dtype", SORT_DTYPES)
def test_mode(dtype):
    for name, t in sort_inputs(dtype):
        d = dev(t)
        for dim in (0, 1, -1):
            if t.shape[dim] == 0:
                continue
            with counted("mode"):
                v, i = torch.mode(d, dim)
            ev, ei = torch.mode(t, dim)
            compare(v, ev)
            compare(i, ei)


def tie_rows(dtype, n, seed):
    """Three rows of n elements from a handful of values (NaN and -0.0 among a float's), and a
    fourth of one value (a row of NaNs for floats): ties everywhere."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(4, n, generator=g) > 0.5
    t = torch.randint(0 if dtype == torch.uint8 else -3, 4, (4, n), generator=g).to(dtype)
    if dtype.is_floating_point:
        t[torch.rand(4, n, generator=g) < 0.1] = float("nan")
        t[torch.rand(4, n, generator=g) < 0.1] = -0.0
        t[3] = float("nan")
    else:
        t[3] = 1
    return t


def same_bits(device_result, cpu_result):
    """Equal as stored: -0.0 is not 0.0, and NaNs have CPU's sign and payload."""
    compare(device_result, cpu_result)
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[cpu_result.element_size()]
    as_ints = lambda t: t.contiguous().view(ints) if t.dtype != torch.bool else t  # noqa: E731
    assert torch.equal(as_ints(device_result.cpu()), as_ints(cpu_result))


@pytest.mark.parametrize("dtype", SORT_DTYPES)
def test_unstable_orders_of_ties_equal_cpus(dtype):
    # The indices of equal elements are those of CPU's algorithms (std::sort, std::partial_sort,
    # std::nth_element, ATen's quickselect), whose choices depend on the row's size: sizes
    # around the 16-element threshold of std::sort and topk's k * 64 <= n switch.
    for n in (1, 2, 3, 4, 7, 16, 17, 33, 100, 257, 1000, 2500):
        t = tie_rows(dtype, n, n)
        d = t.to("regen")
        for descending in (False, True):
            with counted("sort.values_stable"):
                v, i = torch.sort(d, descending=descending)
            ev, ei = torch.sort(t, descending=descending)
            same_bits(v, ev)
            compare(i, ei)
        # Along dim 0 of the transpose: a strided row.
        compare(torch.argsort(d.t(), dim=0), torch.argsort(t.t(), dim=0))
        with counted("mode"):
            compare(torch.mode(d)[1], torch.mode(t)[1])
        if dtype == torch.bool:
            continue
        for k in sorted({1, 2, max(1, n // 64), n // 64 + 1, (n + 2) // 3, n}):
            if k > n:
                continue
            for largest in (True, False):
                for sorted_ in (True, False):
                    with counted("topk.values"):
                        v, i = torch.topk(d, k, largest=largest, sorted=sorted_)
                    ev, ei = torch.topk(t, k, largest=largest, sorted=sorted_)
                    same_bits(v, ev)
                    compare(i, ei)
            with counted("kthvalue.values"):
                compare(torch.kthvalue(d, k)[1], torch.kthvalue(t, k)[1])
        with counted("median.dim_values"):
            compare(torch.median(d, 1)[1], torch.median(t, 1)[1])
        with counted("nanmedian.dim_values"):
            compare(torch.nanmedian(d, 1)[1], torch.nanmedian(t, 1)[1])
        # Over all elements only the value is returned, but which of -0.0 and 0.0 depends on
        # the order CPU partitions them in: its clone's memory order (here the transpose's).
        for x, y in ((d, t), (d[:3].t(), t[:3].t()), (d[:3, ::2], t[:3, ::2])):
            with counted("median"):
                same_bits(torch.median(x), torch.median(y))
            with counted("nanmedian"):
                same_bits(torch.nanmedian(x), torch.nanmedian(y))


def test_sort_errors():
    x = torch.randn(3, 4)
    cases = [
        lambda m: m(x).topk(5),
        lambda m: m(x).topk(-1),
        lambda m: m(x).kthvalue(0),
        lambda m: m(x).kthvalue(5),
        lambda m: m(torch.empty(2, 0)).median(1),
        lambda m: m(torch.empty(2, 0)).mode(1),
        lambda m: m(torch.empty(2, 0)).kthvalue(1, 1),
        lambda m: m(torch.tensor([True, False])).topk(1),
        lambda m: m(x).sort(dim=3),
    ]
    for c in cases:
        same_error(lambda: c(lambda t: t), lambda: c(lambda t: t.to("regen")))
    compare(torch.empty(0).to("regen").median(), torch.empty(0).median())
