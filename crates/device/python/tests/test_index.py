"""Indexing, scatter/gather and selection ops of the "regen" device (crates/kernels/src/ops/index.rs) against
PyTorch's CPU kernels: every op in several dtypes and layouts (transposed, strided, expanded,
zero-dim, empty), bounds errors with CPU's exception type and message, and a native-call count
for each, so a CPU fallback cannot pass as native."""

import pytest
import torch

import regen_device
from devtest import VECTOR_ROUNDING, make

DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16, torch.complex64]
LAYOUTS = ["contiguous", "transposed", "strided"]


def to_dev(t, layout="contiguous"):
    """`t` on the device with the given memory layout (same values)."""
    d = t.to("regen")
    if layout == "transposed" and d.dim() >= 2:
        d = d.mT.contiguous().mT
    elif layout == "strided" and d.dim() >= 1:
        big = torch.empty(d.shape + (2,), dtype=d.dtype, device="regen")
        big[..., 0].copy_(d)
        d = big[..., 0]
    return d


def move(x, layout):
    if isinstance(x, torch.Tensor):
        return to_dev(x, layout)
    if isinstance(x, (list, tuple)):
        return type(x)(move(y, layout) for y in x)
    return x


def same(dev, cpu):
    if isinstance(cpu, (tuple, list)):
        for a, b in zip(dev, cpu):
            same(a, b)
        return
    assert dev.device.type == "regen"
    torch.testing.assert_close(dev.cpu(), cpu, equal_nan=True, **VECTOR_ROUNDING)


def check(fn, *args, op, layout="contiguous"):
    """Runs `fn` on CPU and device copies of `args`, compares results (or errors: same type and
    message; some come from PyTorch's own checks before any kernel), and asserts the native
    kernel `op` ran."""
    before = regen_device.native_calls(op)
    try:
        expected = fn(*args)
    except Exception as e:  # noqa: BLE001 - the device must raise the same
        with pytest.raises(type(e)) as info:
            fn(*move(args, layout))
        assert str(e).splitlines()[0] in str(info.value), (str(e), str(info.value))
        return
    got = fn(*move(args, layout))
    same(got, expected)
    assert regen_device.native_calls(op) > before, f"{op} did not run natively"


def idx(*values):
    return torch.tensor(values, dtype=torch.long)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_index_select(dtype, layout):
    x = make((5, 6), dtype)
    for dim, i in [(0, idx(4, 0, 0, 2)), (1, idx(5, 1)), (-1, idx(3)), (0, idx()), (1, torch.tensor(2))]:
        check(lambda x, i: torch.index_select(x, dim, i), x, i, op="index_select", layout=layout)
    check(lambda x, i: torch.index_select(x, 0, i), x, idx(0, 3).int(), op="index_select", layout=layout)
    check(lambda x, i: torch.index_select(x, 0, i, out=torch.empty(0, dtype=x.dtype, device=x.device)),
          x, idx(1, 2), op="index_select.out", layout=layout)
    check(lambda x, i: torch.index_select(x, 0, i), make((), dtype), idx(0), op="index_select")
    check(lambda x, i: torch.index_select(x, 1, i), make((3, 4, 5), dtype), idx(3, 0), op="index_select", layout=layout)


@pytest.mark.parametrize("bad", [idx(5), idx(-1)])
def test_index_select_out_of_range(bad):
    check(lambda x, i: x.index_select(0, i), make((5, 2), torch.float32), bad, op="index_select")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_gather(dtype, layout):
    x = make((4, 5), dtype)
    g = torch.Generator().manual_seed(1)
    for dim, shape in [(0, (3, 5)), (1, (4, 7)), (-1, (2, 2)), (0, (0, 5))]:
        i = torch.randint(0, x.shape[dim], shape, generator=g)
        check(lambda x, i: torch.gather(x, dim, i), x, i, op="gather.out", layout=layout)
    check(lambda x, i: torch.gather(x, 0, i), make((), dtype), torch.tensor(0), op="gather.out")
    check(lambda x, i: torch.gather(x, 1, i), x, torch.tensor([[0, 4]]).expand(4, 2), op="gather.out")
    check(lambda x, i: torch.gather(x, 0, i), x, torch.tensor([[4]]), op="gather.out")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_scatter(dtype, layout):
    x = make((4, 5), dtype)
    src = make((3, 5), dtype, seed=2)
    i = torch.tensor([[0, 1, 2, 3, 0], [1, 2, 3, 0, 1], [3, 3, 3, 3, 3]])
    check(lambda x, i, s: x.scatter(0, i, s), x, i, src, op="scatter.src_out", layout=layout)
    check(lambda x, i, s: x.scatter_add(0, i, s), x, i, src, op="scatter_add.out", layout=layout)
    check(lambda x, i: x.scatter(1, i[:, :3] % 5, 2), x, i, op="scatter.value_out", layout=layout)
    check(lambda x, i, s: x.clone().scatter_(0, i, s), x, i, src, op="scatter.src_out", layout=layout)
    if dtype != torch.bool:
        for r in ["add", "multiply"]:
            check(lambda x, i, s: x.scatter(0, i, s, reduce=r), x, i, src, op="scatter.reduce_out", layout=layout)
            check(lambda x, i: x.scatter(0, i, 3, reduce=r), x, i, op="scatter.value_reduce_out", layout=layout)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bfloat16])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(dtype, reduce, include_self):
    x = make((4, 5), dtype)
    src = make((6, 5), dtype, seed=3)
    i = torch.tensor([[0, 1, 2, 3, 0], [1, 2, 3, 0, 1], [3, 3, 3, 3, 3], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1], [0, 1, 0, 1, 0]])
    for layout in LAYOUTS:
        check(lambda x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=include_self), x, i, src,
              op="scatter_reduce.two_out", layout=layout)


@pytest.mark.parametrize("op", ["index_add", "index_copy", "index_reduce"])
def test_index_ops_refuse_source_slices_of_another_shape(op):
    """A source slice of another shape is refused with CPU's error, even with as many elements
    (the `.out` forms reach the kernel without PyTorch's own checks; the slices are walked with
    the destination's sizes, so such a source would be read past its end)."""
    kw = {"reduce": "prod"} if op == "index_reduce" else {}
    x, i = make((3, 6, 2), torch.float32), idx(0, 1, 2)
    for src_shape in [(3, 4, 3), (3, 5, 2), (3, 12)]:
        src = make(src_shape, torch.float32, seed=3)
        check(lambda x, i, s: getattr(torch, op)(x, 0, i, s, out=torch.empty_like(x), **kw), x, i, src,
              op=f"{op}.out")


def test_scatter_errors():
    x = make((3, 4), torch.float32)
    check(lambda x, i: x.scatter(0, i, 1.0), x, torch.tensor([[5]]), op="scatter.value_out")
    check(lambda x, i: x.gather(0, i), x, torch.tensor([[-1]]), op="gather.out")
    check(lambda x, i, s: x.scatter_add(0, i, s), x, torch.zeros(4, 4, dtype=torch.long), x, op="scatter_add.out")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_index_add_copy_fill(dtype, layout):
    x = make((5, 4), dtype)
    src = make((3, 4), dtype, seed=4)
    i = idx(4, 0, 4)
    check(lambda x, i, s: x.index_add(0, i, s), x, i, src, op="index_add.out", layout=layout)
    if dtype not in (torch.bool,):
        check(lambda x, i, s: x.index_add(0, i, s, alpha=2), x, i, src, op="index_add.out", layout=layout)
    check(lambda x, i, s: x.index_add(1, i[:2] % 4, s[:, :2]), x, i, make((5, 3), dtype), op="index_add.out", layout=layout)
    check(lambda x, i, s: x.index_copy(0, i[:2], s[:2]), x, i, src, op="index_copy.out", layout=layout)
    check(lambda x, i: x.clone().index_fill_(1, i, True if dtype == torch.bool else 3), x, idx(0, -1), op="index_fill_.int_Scalar", layout=layout)
    check(lambda x, i, v: x.clone().index_fill_(0, i, v), x, idx(2), make((), dtype), op="index_fill_.int_Tensor", layout=layout)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("shape,dim", [((9,), 0), ((6, 7), 0), ((6, 7), 1), ((3, 6, 7), 0), ((3, 6, 7), 1), ((3, 6, 7), 2)])
@pytest.mark.parametrize("alpha", [1, 1.5])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_index_add_rounds_repeated_indices_as_cpu(dtype, shape, dim, alpha, index_dtype):
    # CPU sums half types in f32 once (a scatter_add) along the first or last dim with alpha 1 and
    # an int64 index, rounds after every slice otherwise, and rounds `source * alpha` first for 1-d
    # tensors: many repeated indices make each rounding visible.
    x = make(shape, dtype)
    src_shape = list(shape)
    src_shape[dim] = 40
    i = torch.randint(0, shape[dim], (40,), generator=torch.Generator().manual_seed(3)).to(index_dtype)
    check(lambda x, i, s: x.index_add(dim, i, s, alpha=alpha), x, i, make(tuple(src_shape), dtype, seed=5),
          op="index_add.out")


def test_index_bounds():
    x = make((3, 4), torch.float32)
    one = torch.ones(1, 4)
    check(lambda x, i, s: x.index_add(0, i, s), x, idx(3), one, op="index_add.out")
    check(lambda x, i, s: x.index_copy(0, i, s), x, idx(3), one, op="index_copy.out")
    check(lambda x, i: x.clone().index_fill_(0, i, 1.0), x, idx(3), op="index_fill_.int_Scalar")
    check(lambda x, i: x.clone().index_fill_(0, i, 1.0), x, idx(-4), op="index_fill_.int_Scalar")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bfloat16])
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(dtype, reduce, include_self):
    x = make((5, 4), dtype)
    src = make((4, 4), dtype, seed=5)
    for layout in LAYOUTS:
        check(lambda x, i, s: x.index_reduce(0, i, s, reduce, include_self=include_self), x, idx(1, 3, 1, 1), src,
              op="index_reduce.out", layout=layout)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_take_put(dtype, layout):
    x = make((3, 4), dtype)
    i = torch.tensor([[0, 11], [-1, 5]])
    check(lambda x, i: torch.take(x, i), x, i, op="take", layout=layout)
    check(lambda x, i: torch.take(x, i, out=torch.empty(0, dtype=x.dtype, device=x.device)), x, i, op="take.out", layout=layout)
    src = make((2, 2), dtype, seed=6)
    check(lambda x, i, s: x.clone().put_(i, s), x, i, src, op="put_", layout=layout)
    if dtype != torch.bool:
        check(lambda x, i, s: x.clone().put_(i, s.flatten(), accumulate=True), x, idx(1, 1, -1, 1), src, op="put_", layout=layout)
    check(lambda x, i: torch.take(x, i), x, idx(12), op="take")
    check(lambda x, i: torch.take(x, i), x, idx(-13), op="take")
    check(lambda x, i, s: x.clone().put_(i, s[:1, 0]), x, idx(12), src, op="put_")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_nonzero_masked(dtype, layout):
    x = make((4, 5), dtype)
    x.view(-1)[::3] = 0
    check(torch.nonzero, x, op="nonzero", layout=layout)
    check(lambda x: torch.nonzero(x, out=torch.empty(0, dtype=torch.long, device=x.device)), x, op="nonzero.out", layout=layout)
    check(torch.nonzero, make((), dtype), op="nonzero")
    check(torch.nonzero, make((0, 3), dtype), op="nonzero")
    check(lambda x: torch.nonzero_static(x, size=4), x, op="nonzero_static", layout=layout)
    check(lambda x: torch.nonzero_static(x, size=30, fill_value=-7), x, op="nonzero_static", layout=layout)
    m = make((4, 5), torch.bool, seed=7)
    check(torch.masked_select, x, m, op="masked_select", layout=layout)
    check(torch.masked_select, x, m[0], op="masked_select", layout=layout)
    check(lambda x, m: torch.masked_select(x, m, out=torch.empty(0, dtype=x.dtype, device=x.device)), x, m, op="masked_select.out", layout=layout)
    src = make((30,), dtype, seed=8)
    check(lambda x, m, s: x.clone().masked_scatter_(m, s), x, m, src, op="masked_scatter_", layout=layout)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_advanced_indexing(dtype, layout):
    x = make((4, 5, 6), dtype)
    a, b = idx(3, 0, -1), idx(1, 4, 4)
    cases = [
        lambda x, a, b: x[a],
        lambda x, a, b: x[:, b],
        lambda x, a, b: x[a, b],
        lambda x, a, b: x[a, :, b],  # separated: broadcast dims first
        lambda x, a, b: x[:, a, b],  # adjacent after a slice: stay in place
        lambda x, a, b: x[a[:, None], b[None, :2]],  # broadcasting index tensors
        lambda x, a, b: x[..., b],
        lambda x, a, b: x[x.real > 0 if x.is_complex() else x > 0] if dtype != torch.bool else x[x],
        lambda x, a, b: x[torch.ones(4, 5, dtype=torch.bool, device=x.device).tril()],
        lambda x, a, b: x[a, torch.tensor([True, False, True, True, False], device=x.device)],
        lambda x, a, b: x[idx()],
        lambda x, a, b: x[a.int()],
    ]
    for f in cases:
        check(f, x, a, b, op="index.Tensor_out", layout=layout)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_nonzero_and_masks_across_chunks(layout):
    # More elements than one chunk of the parallel nonzero (32768), set in one region only, so
    # chunks with and without set elements meet; x[mask] takes the mask's offsets directly.
    x = make((300, 257), torch.float32)
    x[:, ::2] = 0
    x[:100] = 0
    m = x > 0
    check(torch.nonzero, x, op="nonzero", layout=layout)
    check(lambda x: torch.nonzero_static(x, size=20000), x, op="nonzero_static", layout=layout)
    check(lambda x, m: x[m], x, m, op="index.Tensor_out", layout=layout)
    y = make((300, 257, 3), torch.float64)
    check(lambda y, m: y[m], y, m, op="index.Tensor_out", layout=layout)
    check(lambda y, m: y[:, m[150]], y, m, op="index.Tensor_out", layout=layout)
    check(lambda y, m: y[m[150:152, :, None].expand(2, 257, 3)], y[:2], m, op="index.Tensor_out", layout=layout)
    rows = (torch.arange(500) * 7919) % 300
    check(lambda x, i: x[i], x, rows, op="index.Tensor_out", layout=layout)  # whole rows copied
    check(lambda y, i: y[i, 3:9], y, rows, op="index.Tensor_out", layout=layout)
    check(lambda x, i: x[i[:, None], i[None, :257] % 257], x, rows, op="index.Tensor_out", layout=layout)


def test_advanced_indexing_errors():
    x = make((3, 4), torch.float32)
    check(lambda x, i: x[i], x, idx(3), op="index.Tensor_out")
    check(lambda x, i: x[:, i], x, idx(-5), op="index.Tensor_out")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_index_put(dtype, accumulate, layout):
    x = make((4, 5), dtype)
    if accumulate and dtype == torch.bool:
        return
    v = make((3,), dtype, seed=9)
    check(lambda x, v: x.clone().index_put_((idx(0, 3, 0), idx(1, 1, 1)), v, accumulate=accumulate), x, v,
          op="_index_put_impl_", layout=layout)
    check(lambda x, v: x.clone().index_put_((idx(2, 1),), v[:1], accumulate=accumulate), x, v,
          op="_index_put_impl_", layout=layout)
    m = make((4, 5), torch.bool, seed=10)
    check(lambda x, m, v: x.clone().index_put_((m,), v[0], accumulate=accumulate), x, m, v,
          op="_index_put_impl_", layout=layout)

    def setitem(x, v):
        y = x.clone()
        y[:, idx(4, 0)] = v[:2]
        return y

    check(setitem, x, v, op="_index_put_impl_", layout=layout)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bfloat16])
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_bucketize(dtype, right):
    seq = make((7,), dtype).sort().values
    vals = make((3, 4), dtype, seed=11)
    for layout in LAYOUTS:
        check(lambda s, v: torch.searchsorted(s, v, right=right), seq, vals, op="searchsorted.Tensor", layout=layout)
        check(lambda s, v: torch.searchsorted(s, v, right=right, out_int32=True), seq, vals, op="searchsorted.Tensor", layout=layout)
        check(lambda s, v: torch.bucketize(v, s, right=right), seq, vals, op="bucketize.Tensor", layout=layout)
    check(lambda s: torch.searchsorted(s, 0, right=right), seq, op="searchsorted.Scalar")
    check(lambda s: torch.bucketize(1, s, right=right), seq, op="bucketize.Scalar")
    nd = make((3, 6), dtype, seed=12).sort(-1).values
    check(lambda s, v: torch.searchsorted(s, v, side="right" if right else "left"), nd, vals[:, :2], op="searchsorted.Tensor")
    unsorted = make((6,), dtype, seed=13)
    sorter = unsorted.argsort()
    check(lambda s, v, o: torch.searchsorted(s, v, sorter=o), unsorted, vals, sorter, op="searchsorted.Tensor")
    # N-d boundaries with a sorter per row, in every layout (each row searched through its own sorter).
    rows = make((3, 4, 10), dtype, seed=14)
    row_sorter = rows.argsort(dim=-1, stable=True)
    for layout in LAYOUTS:
        check(lambda s, v, o: torch.searchsorted(s, v, sorter=o, right=right), rows, make((3, 4, 5), dtype, seed=15),
              row_sorter, op="searchsorted.Tensor", layout=layout)
    check(lambda s, v: torch.searchsorted(s, v, out=torch.empty(0, dtype=torch.long, device=v.device)), seq, vals,
          op="searchsorted.Tensor_out")


def test_searchsorted_errors():
    s = torch.arange(5.0)
    check(lambda s, v: torch.searchsorted(s, v, side="left", right=True), s, s, op="searchsorted.Tensor")
    check(lambda s, v: torch.bucketize(v, s), s.view(1, 5), s, op="bucketize.Tensor")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bfloat16])
@pytest.mark.parametrize("invert", [False, True])
def test_isin(dtype, invert):
    e = make((4, 5), dtype)
    t = make((6,), dtype, seed=14)
    e.view(-1)[::4] = t[0]
    for layout in LAYOUTS:
        check(lambda e, t: torch.isin(e, t, invert=invert), e, t, op="isin.Tensor_Tensor_out", layout=layout)
    check(lambda e: torch.isin(e, 1, invert=invert), e, op="isin.Tensor_Scalar_out")
    check(lambda t: torch.isin(1, t, invert=invert), t, op="isin.Scalar_Tensor_out")
    if dtype.is_floating_point:
        nan = torch.tensor([float("nan"), 1.0], dtype=dtype)
        check(lambda e, t: torch.isin(e, t, invert=invert), nan, nan, op="isin.Tensor_Tensor_out")
