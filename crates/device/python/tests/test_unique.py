"""Unique, histc and bincount of the "regen" device (kernels/ops/unique.rs) against PyTorch's CPU
kernels: every flag of torch.unique / unique_consecutive (with and without dim), histc with given
and data-derived ranges, bincount with and without weights, over dtypes and layouts (contiguous,
transposed, sliced, expanded, 0-dim, empty), NaN and signed zeros (where CPU's unstable sort shows
in the inverse indices and in which zero is kept), errors with CPU's exception type and message,
and the native-call counters (a CPU fallback cannot pass as native)."""

import pytest
import torch

from devtest import counted, make, older_cpu_has_no_kernel

DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16, torch.float16]
FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]

# A base shape and the view taken of it (the same on CPU and on the device).
LAYOUTS = {
    "contiguous": ((3, 4, 5), lambda t: t),
    "transposed": ((5, 4, 3), lambda t: t.permute(2, 1, 0)),
    "sliced": ((6, 9, 5), lambda t: t[::2, 1:5, :]),
    "expanded": ((3, 1, 5), lambda t: t.expand(3, 4, 5)),
    "zero_dim": ((), lambda t: t),
    "empty": ((3, 0, 5), lambda t: t),
}


def data(shape, dtype, seed=0, special=True):
    """Values with many repeats; floats get NaNs, -0.0 and 0.0 mixed in (where ties show)."""
    if dtype == torch.bool or not dtype.is_floating_point:
        return make(shape, dtype, seed)
    x = (make(shape, torch.float32, seed) * 2).round() / 2
    if special and x.numel() > 3:
        flat = x.view(-1)
        flat[:: max(1, x.numel() // 4)] = float("nan")
        flat[1 :: max(2, x.numel() // 5)] = -0.0
        flat[2 :: max(3, x.numel() // 6)] = 0.0
    return x.to(dtype)


def same(got, expected):
    """Exactly equal, NaN where NaN, and the same sign bit (which of -0.0 / 0.0 was kept)."""
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            same(g, e)
        return
    assert got.device.type == "regen"
    got = got.cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, expected.dtype, got.shape, expected.shape)
    torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)
    if expected.dtype.is_floating_point:
        assert torch.equal(torch.signbit(got), torch.signbit(expected))


def check(fn, x, op, *rest):
    """fn(x, *rest) on CPU and on the device: the same results, or the same exception type and
    message; the native kernel `op` ran."""
    dev = [t.to("regen") if isinstance(t, torch.Tensor) else t for t in (x, *rest)]
    try:
        expected = fn(x, *rest)
    except Exception as e:  # noqa: BLE001 - the device must raise the same
        if older_cpu_has_no_kernel(e):
            raise  # an older CPU without this kernel: nothing to compare with (reported skipped)
        with pytest.raises(type(e)) as info:
            fn(*dev)
        assert str(e).splitlines()[0] in str(info.value), (str(e), str(info.value))
        return
    with counted(op):
        got = fn(*dev)
    same(got, expected)


# ---------------------------------------------------------------------------------------------
# torch.unique without dim: _unique2 (and the older _unique).


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_unique(dtype, layout):
    shape, f = LAYOUTS[layout]
    base = data(shape, dtype)
    for sorted_ in (True, False):
        for inverse in (False, True):
            for counts in (False, True):
                fn = lambda t: torch.unique(f(t), sorted=sorted_, return_inverse=inverse, return_counts=counts)  # noqa: E731
                check(fn, base, "_unique2")
    check(lambda t: torch._unique(f(t), True, True), base, "_unique")
    check(lambda t: torch._unique(f(t), False, False), base, "_unique")


@pytest.mark.parametrize("dtype", FLOATS)
def test_unique_nan_and_zero_ties_follow_cpus_sort(dtype):
    # Long enough for std::sort's partitioning (not only its insertion sort): which NaN gets which
    # inverse index, and whether -0.0 or 0.0 is kept, are the order of CPU's unstable sort.
    g = torch.Generator().manual_seed(3)
    x = torch.randint(-3, 4, (3000,), generator=g).to(torch.float32)
    x[torch.rand(3000, generator=g) < 0.3] = float("nan")
    x[torch.rand(3000, generator=g) < 0.2] = -0.0
    x = x.to(dtype)
    check(lambda t: torch.unique(t, return_inverse=True, return_counts=True), x, "_unique2")
    check(lambda t: torch.unique(t[::3], return_inverse=True), x, "_unique2")


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8, torch.int16, torch.float32])
def test_unique_large(dtype):
    # Above at::internal::GRAIN_SIZE (CPU sorts integers with a radix sort there).
    x = make((100_000,), torch.float32, seed=5).mul(30).round().to(dtype)
    check(lambda t: torch.unique(t, return_inverse=True, return_counts=True), x, "_unique2")
    check(lambda t: torch.unique(t), x, "_unique2")


def test_unique_bool_and_errors():
    for x in [torch.tensor([True, True]), torch.tensor([False]), torch.tensor(True), torch.tensor([], dtype=torch.bool)]:
        check(lambda t: torch.unique(t, return_inverse=True, return_counts=True), x, "_unique2")
    z = torch.tensor([1 + 1j, 2j])
    check(lambda t: torch.unique(t), z, "_unique2")
    check(lambda t: torch._unique(t), z, "_unique")
    check(lambda t: torch.unique(t, dim=0), z, "unique_dim")
    check(lambda t: torch.unique_consecutive(t), z, "unique_consecutive")


# ---------------------------------------------------------------------------------------------
# torch.unique with dim: unique_dim.


def repeated_slices(dtype, layout, dim, seed=0):
    """A 3-d view (of `layout`) whose slices along `dim` repeat, some holding a NaN."""
    small = data((2, 3, 4), dtype, seed, special=False)
    pick = torch.tensor([1, 0, 1, 1, 0])
    x = small.index_select(dim, pick)
    if dtype.is_floating_point:
        x.select(dim, 3)[0, 0] = float("nan")
    if layout == "transposed":
        x = x.transpose(0, 2).contiguous().transpose(0, 2)
    elif layout == "sliced":
        x = torch.cat([x, x], -1)[..., ::2]
    return x


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_unique_dim(dtype, layout, dim):
    x = repeated_slices(dtype, layout, dim)
    for inverse in (False, True):
        for counts in (False, True):
            fn = lambda t: torch.unique(t, dim=dim, return_inverse=inverse, return_counts=counts)  # noqa: E731
            check(fn, x, "unique_dim")
    # The op itself returns the inverse and counts whatever the flags, and a permuted view.
    check(lambda t: torch.ops.aten.unique_dim(t, dim, True, False, False), x, "unique_dim")
    got = torch.ops.aten.unique_dim(x.to("regen"), dim)[0]
    assert got.stride() == torch.ops.aten.unique_dim(x, dim)[0].stride()


def test_unique_dim_sorts_many_rows_as_cpu():
    # 200 rows of few distinct values, NaN rows among them: std::sort's order of the rows.
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, 3, (200, 3), generator=g).float()
    x[torch.rand(200, generator=g) < 0.2, 1] = float("nan")
    x[torch.rand(200, generator=g) < 0.2, 0] = -0.0
    check(lambda t: torch.ops.aten.unique_dim(t, 0), x, "unique_dim")
    check(lambda t: torch.unique(t.T, dim=1, return_inverse=True, return_counts=True), x, "unique_dim")


@pytest.mark.parametrize(
    "x,dim",
    [
        (torch.tensor(1.0), 0),
        (torch.tensor(1.0), -1),
        (torch.ones(2, 3), 2),
        (torch.ones(2, 3), -3),
        (torch.ones(0, 3, 0), 0),
        (torch.ones(2, 0), 0),
        (torch.ones(2, 0), 1),
        (torch.ones(2, 0, 3), 1),
        (torch.ones(0), 0),
    ],
)
def test_unique_dim_edges(x, dim):
    check(lambda t: torch.unique(t, dim=dim, return_inverse=True, return_counts=True), x, "unique_dim")
    check(lambda t: torch.unique_consecutive(t, dim=dim, return_counts=True), x, "unique_consecutive")


# ---------------------------------------------------------------------------------------------
# unique_consecutive (and unique_dim_consecutive).


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_unique_consecutive(dtype, layout):
    shape, f = LAYOUTS[layout]
    base = data(shape, dtype)
    for inverse in (False, True):
        for counts in (False, True):
            fn = lambda t: torch.unique_consecutive(f(t), return_inverse=inverse, return_counts=counts)  # noqa: E731
            check(fn, base, "unique_consecutive")
    # Runs of equal values, NaNs never equal.
    run = torch.tensor([1.0, 1.0, float("nan"), float("nan"), -0.0, 0.0, 2.0, 2.0]).to(dtype)
    check(lambda t: torch.unique_consecutive(t, return_inverse=True, return_counts=True), run, "unique_consecutive")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_consecutive_dim(dtype, dim):
    x = repeated_slices(dtype, "transposed", dim)
    check(lambda t: torch.unique_consecutive(t, return_inverse=True, return_counts=True, dim=dim), x, "unique_consecutive")
    check(lambda t: torch.ops.aten.unique_dim_consecutive(t, dim), x, "unique_dim_consecutive")
    # dim 0 of a 1-d tensor is the flat kernel; dim -1 goes through the slices (CPU's choice).
    flat = data((12,), dtype)
    check(lambda t: torch.unique_consecutive(t, return_inverse=True, dim=0), flat, "unique_consecutive")
    check(lambda t: torch.ops.aten.unique_consecutive(t, True, True, -1), flat, "unique_consecutive")


# ---------------------------------------------------------------------------------------------
# histc.


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_histc(dtype, layout):
    shape, f = LAYOUTS[layout]
    x = data(shape, dtype)
    for bins, lo, hi in [(10, 0, 0), (7, -1, 1), (1, -2.5, 3), (100, 0.25, 0.75), (3, 2, 2)]:
        check(lambda t: torch.histc(f(t), bins, lo, hi), x, "histc")
    # Without NaN, the data's own range (min == max).
    check(lambda t: torch.histc(f(t), 6), data(shape, dtype, special=False), "histc")
    out = torch.full((3,), 7, dtype=dtype)
    check(lambda t, o: torch.histc(f(t), 4, -1, 1, out=o), x, "histc.out", out)


def test_histc_counts_per_chunk_in_the_dtype():
    # bfloat16 counts saturate at 256 and float16 at 2048 in each of CPU's per-thread chunks.
    for dtype in [torch.bfloat16, torch.float16, torch.float32]:
        x = torch.full((5000,), 1.0, dtype=dtype)
        for threads in (1, 2):
            old = torch.get_num_threads()
            torch.set_num_threads(threads)
            try:
                check(lambda t: torch.histc(t, 4), x, "histc")
                check(lambda t: torch.histc(t, 3, 0, 3), x, "histc")
            finally:
                torch.set_num_threads(old)


def test_histc_dtype_arithmetic_edges():
    h = torch.tensor([-60000.0, 1.0, 2.0, 3e38, 60000.0])
    # float16 overflows in (x - min) * bins; float's linspace step overflows (no bins at all).
    check(lambda t: torch.histc(t.half(), 4, -60000, 60000), h, "histc")
    check(lambda t: torch.histc(t.half(), 40000, 0, 3), torch.tensor([1.0, 2.0, 3.0]), "histc")
    check(lambda t: torch.histc(t.bfloat16(), 40000, 0, 3), torch.tensor([1.0, 2.0, 3.0]), "histc")
    check(lambda t: torch.histc(t, 4, -3e38, 3e38), h, "histc")
    check(lambda t: torch.histc(t.double(), 4), torch.tensor([1e300, 1e300, 1e300]).double(), "histc")
    check(lambda t: torch.histc(t, 4, 0, 1e-50), h, "histc")


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: torch.histc(t.long(), 4, 0, 3),
        lambda t: torch.histc(t.bool(), 4, 0, 3),
        lambda t: torch.histc(t.cfloat(), 4, 0, 3),
        lambda t: torch.histc(t.cfloat(), 4),
        lambda t: torch.histc(t, 4),
        lambda t: torch.histc(t, 4, 0, float("inf")),
        lambda t: torch.histc(t, 4, -1.5e10, float("inf")),
        lambda t: torch.histc(t, 4, 3, 1),
        lambda t: torch.histc(t, 0),
        lambda t: torch.histc(t, -1),
        lambda t: torch.histc(t, 4, out=torch.empty(4, dtype=torch.float64, device=t.device)),
        lambda t: torch.histc(t.half(), 4, 0, 1e6),
        lambda t: torch.histc(t.float(), 4, 0, 1e39),
        lambda t: torch.histc(torch.full_like(t, float("inf")), 4),
        lambda t: torch.histc(t[:1], 4),
        lambda t: torch.histc(t.bfloat16(), 4),
    ],
)
def test_histc_errors(fn):
    check(fn, torch.tensor([1.0, float("nan"), 2.0]), "histc")


# ---------------------------------------------------------------------------------------------
# bincount.


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8])
@pytest.mark.parametrize("layout", ["contiguous", "sliced", "expanded"])
def test_bincount(dtype, layout):
    x = make((40,), torch.int64, seed=2).abs().to(dtype)
    f = {"contiguous": lambda t: t, "sliced": lambda t: t[1::3], "expanded": lambda t: t[:1].expand(6)}[layout]
    for minlength in (0, 3, 20):
        check(lambda t: torch.bincount(f(t), minlength=minlength), x, "bincount")
    for wdtype in [torch.float32, torch.float64, torch.float16, torch.int64, torch.bool]:
        w = make((40,), wdtype, seed=4)
        check(lambda t, w: torch.bincount(f(t), f(w)), x, "bincount", w)
        check(lambda t, w: torch.bincount(f(t), f(w), minlength=50), x, "bincount", w)


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: torch.bincount(t.float()),
        lambda t: torch.bincount(t.bool()),
        lambda t: torch.bincount(t - 3),
        lambda t: torch.bincount(t.view(2, 2)),
        lambda t: torch.bincount(t[0]),
        lambda t: torch.bincount(t.view(2, 2)[:0]),
        lambda t: torch.bincount(t[:0], minlength=3),
        lambda t: torch.bincount(t[:0], t[:0].float(), minlength=3),
        lambda t: torch.bincount(t, minlength=-1),
        lambda t: torch.bincount(t, t[:3].float()),
        lambda t: torch.bincount(t, t.view(2, 2).float()),
        lambda t: torch.bincount(torch.full_like(t, 2**63 - 1)),
    ],
)
def test_bincount_edges_and_errors(fn):
    check(fn, torch.tensor([1, 0, 2, 1]), "bincount")
