"""embedding_dense_backward of the "regen" device (kernels/ops/embedding.rs) against PyTorch's CPU
kernel: padding_idx, scale_grad_by_freq, int64 and int32 indices, repeated indices (sums in index
order, so equal to CPU's), float32/float64/bfloat16/float16 gradients, errors with CPU's exception
type, and the native-call counter (a CPU fallback cannot pass as native)."""

import pytest
import torch
import torch.nn.functional as F

import regen_device
from devtest import VECTOR_ROUNDING, counted, make, no_cpu_copy

FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("padding_idx", [None, 3])
@pytest.mark.parametrize("by_freq", [False, True])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("width", [5, 37])
def test_embedding_backward(dtype, padding_idx, by_freq, index_dtype, width):
    # CPU adds each row as `grad_weight[k].add_(grad[i], 1 / count)`: a fused multiply-add in
    # its vector loop (the first 32 of 37 columns) and, in its tail, scale·g rounded to the
    # element type before the sum (float16 and bfloat16; float32 and float64 fuse there too);
    # the device rounds each part so, bit for bit.
    g = torch.Generator().manual_seed(0)
    idx = torch.randint(0, 10, (6, 7), generator=g).to(index_dtype)
    w = make((10, width), torch.float32, seed=1).to(dtype)
    grad = make((6, 7, width), torch.float32, seed=2).to(dtype)
    wc, wd = w.clone().requires_grad_(), w.to("regen").requires_grad_()
    F.embedding(idx, wc, padding_idx=padding_idx, scale_grad_by_freq=by_freq).backward(grad)
    with counted("embedding_dense_backward"), no_cpu_copy():
        F.embedding(idx.to("regen"), wd, padding_idx=padding_idx, scale_grad_by_freq=by_freq).backward(grad.to("regen"))
    assert wd.grad.device.type == "regen"
    torch.testing.assert_close(wd.grad.cpu(), wc.grad, rtol=0, atol=0)


def test_embedding_backward_op_and_errors():
    grad = make((4, 3), torch.float32, seed=3)
    idx = torch.tensor([1, 1, 0, 2])
    with counted("embedding_dense_backward"):
        got = torch.ops.aten.embedding_dense_backward(grad.to("regen"), idx.to("regen"), 5, -1, False)
    torch.testing.assert_close(got.cpu(), torch.ops.aten.embedding_dense_backward(grad, idx, 5, -1, False), rtol=0, atol=0)
    # Strided gradient, and float index tensors (refused as on CPU).
    gt = make((3, 4), torch.float32, seed=4).t()
    torch.testing.assert_close(torch.ops.aten.embedding_dense_backward(gt.to("regen"), idx.to("regen"), 3, 1, True).cpu(),
                               torch.ops.aten.embedding_dense_backward(gt, idx, 3, 1, True))
    with pytest.raises(RuntimeError):
        torch.ops.aten.embedding_dense_backward(grad, idx.float(), 5, -1, False)
    with pytest.raises(RuntimeError):
        torch.ops.aten.embedding_dense_backward(grad.to("regen"), idx.float().to("regen"), 5, -1, False)


# ---------------------------------------------------------------------------------------------
# embedding_bag: the four outputs of _embedding_bag and _embedding_bag_forward_only equal CPU's
# exactly (offset2bag is empty on CPU's fast path, bag_size is zeros under sum, max_indices a
# copy of bag_size unless mode is max), sums in index order in f32 (f64 for double).


def same(got, expected):
    assert got.device.type == "regen"
    got = got.cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, expected.dtype, got.shape, expected.shape)
    torch.testing.assert_close(got, expected, **VECTOR_ROUNDING, equal_nan=True)


def raises_like(fn, cpu_args, dev_args):
    with pytest.raises(Exception) as cpu:
        fn(*cpu_args)
    with pytest.raises(type(cpu.value)):
        fn(*dev_args)


def dev(args):
    return tuple(a.to("regen") if isinstance(a, torch.Tensor) else a for a in args)


BAG_INDICES = torch.tensor([0, 2, 5, 2, 1, 3, 5, 7, 7, 0, 4, 6])
BAG_OFFSETS = {
    "plain": (torch.tensor([0, 2, 2, 5, 9]), False),  # with an empty bag
    "last": (torch.tensor([0, 3, 3, 8, 12]), True),  # include_last_offset
    "last_short": (torch.tensor([0, 2, 5, 9]), True),  # include_last_offset before the end
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx", [-1, 5])
@pytest.mark.parametrize("offsets", list(BAG_OFFSETS))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("op", ["_embedding_bag", "_embedding_bag_forward_only"])
def test_embedding_bag_outputs(dtype, mode, padding_idx, offsets, weighted, layout, op):
    if weighted and mode != 0:
        pytest.skip("per_sample_weights only with mode='sum'")
    offs, last = BAG_OFFSETS[offsets]
    w = make((8, 6), torch.float32, seed=4).to(dtype)
    wd = w.to("regen")
    if layout == "transposed":
        w, wd = w.t().contiguous().t(), wd.t().contiguous().t()
    psw = make((12,), torch.float32, seed=5).to(dtype) if weighted else None
    args = (w, BAG_INDICES, offs, False, mode, False, psw, last, padding_idx)
    fn = getattr(torch.ops.aten, op)
    expected = fn(*args)
    with counted(op), no_cpu_copy():
        got = fn(*dev(args))
    for g, e in zip(got, expected):
        same(g, e)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_embedding_bag_autograd(dtype, mode, padding_idx, weighted, index_dtype):
    if weighted and mode != "sum":
        pytest.skip("per_sample_weights only with mode='sum'")
    idx = torch.tensor([3, 1, 3, 3, 1, 0, 2, 6, 2, 5, 1], dtype=index_dtype)
    offs = torch.tensor([0, 3, 3, 7], dtype=index_dtype)
    w = make((7, 5), torch.float32, seed=6).to(dtype).requires_grad_(True)
    wd = w.detach().to("regen").requires_grad_(True)
    psw = make((11,), torch.float32, seed=7).to(dtype).requires_grad_(True) if weighted else None
    pswd = psw.detach().to("regen").requires_grad_(True) if weighted else None
    expected = F.embedding_bag(idx, w, offs, mode=mode, per_sample_weights=psw, padding_idx=padding_idx)
    with counted("_embedding_bag"), no_cpu_copy():
        got = F.embedding_bag(idx.to("regen"), wd, offs.to("regen"), mode=mode, per_sample_weights=pswd, padding_idx=padding_idx)
    same(got.detach(), expected.detach())
    g = make(expected.shape, torch.float32, seed=8).to(dtype)
    expected.backward(g)
    psw_calls = regen_device.native_calls("_embedding_bag_per_sample_weights_backward")
    # Before torch 2.5 PyTorch decomposes _embedding_bag_backward into the dense backward (the
    # device then registers no kernel for it: regen.toml `optional`).
    whole = torch._C._dispatch_has_kernel_for_dispatch_key("aten::_embedding_bag_backward", "PrivateUse1")
    with counted("_embedding_bag_backward" if whole else "_embedding_bag_dense_backward"):
        got.backward(g.to("regen"))
    if weighted:
        assert regen_device.native_calls("_embedding_bag_per_sample_weights_backward") > psw_calls
    # Mean scales by 1/bag_size and per-sample weights multiply: CPU's BLAS axpy and dot may
    # round those differently; plain sums are exact.
    exact = mode != "mean" and not weighted
    tol = {} if not exact else {"rtol": 0, "atol": 0}
    torch.testing.assert_close(wd.grad.cpu(), w.grad, **tol)
    if weighted:
        torch.testing.assert_close(pswd.grad.cpu(), psw.grad)


def test_embedding_bag_backward_ops_and_errors():
    A = torch.ops.aten
    w = make((8, 6), torch.float64, seed=4)
    offs, _ = BAG_OFFSETS["plain"]
    out, o2b, bs, mi = A._embedding_bag(w, BAG_INDICES, offs, False, 1, False, None, False, -1)
    g = make(out.shape, torch.float64, seed=9)
    for mode in [0, 1, 2]:
        out, o2b, bs, mi = A._embedding_bag(w, BAG_INDICES, offs, False, mode, False, None, False, -1)
        args = (g, BAG_INDICES, o2b, bs, mi, 8, mode == 0, mode, None, -1)
        with counted("_embedding_bag_dense_backward"):
            got = A._embedding_bag_dense_backward(*dev(args))
        same(got, A._embedding_bag_dense_backward(*args))
    psw_args = (g, w, BAG_INDICES, offs, torch.empty(0, dtype=torch.long), 0, -1)
    with counted("_embedding_bag_per_sample_weights_backward"):
        got = A._embedding_bag_per_sample_weights_backward(*dev(psw_args))
    torch.testing.assert_close(got.cpu(), A._embedding_bag_per_sample_weights_backward(*psw_args))
    bad = [
        (A._embedding_bag, (w, BAG_INDICES + 3, offs, False, 0, False, None, False, -1)),  # index out of range
        (A._embedding_bag, (w.float(), BAG_INDICES + 3, offs, False, 1, False, None, False, -1)),
        (A._embedding_bag, (w, BAG_INDICES, offs + 1, False, 0, False, None, False, -1)),  # offsets[0] != 0
        (A._embedding_bag, (w, BAG_INDICES, torch.tensor([0, 20]), False, 0, False, None, False, -1)),
        (A._embedding_bag, (w, BAG_INDICES, offs, False, 1, False, torch.ones(12, dtype=torch.float64), False, -1)),
        (A._embedding_bag, (w, BAG_INDICES, offs, False, 0, False, torch.ones(12), False, -1)),  # psw dtype
        (A._embedding_bag, (w, BAG_INDICES.float(), offs, False, 0, False, None, False, -1)),
        (A._embedding_bag, (w.int(), BAG_INDICES, offs, False, 0, False, None, False, -1)),
        (A._embedding_bag, (w, BAG_INDICES, offs[:0], False, 1, False, None, True, -1)),
        (A._embedding_bag_per_sample_weights_backward, (g, w, BAG_INDICES, offs, o2b, 1, -1)),
    ]
    for fn, args in bad:
        raises_like(fn, args, dev(args))


def test_embedding_bag_sparse_backward_is_refused():
    # The device has no sparse tensors (the sparse family is excluded): sparse=True fails in
    # backward with a RuntimeError instead of producing a CPU sparse gradient.
    wd = make((8, 6), torch.float32, seed=4).to("regen").requires_grad_(True)
    out = F.embedding_bag(BAG_INDICES.to("regen"), wd, BAG_OFFSETS["plain"][0].to("regen"), sparse=True)
    with pytest.raises(RuntimeError):
        out.sum().backward()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0])
def test_embedding_max_norm(dtype, norm_type):
    w = (make((10, 4), torch.float32, seed=10) * 2).to(dtype)
    wd = w.to("regen")
    idx = torch.tensor([[1, 7, 1], [3, 9, 0]])
    expected = F.embedding(idx, w, max_norm=1.5, norm_type=norm_type)
    with counted("embedding_renorm_"):
        got = F.embedding(idx.to("regen"), wd, max_norm=1.5, norm_type=norm_type)
    # The row norm is summed in double here and by CPU's float reduction there, then rounded to
    # the element type: float32 may differ by an ulp, the coarser dtypes round to the same norm.
    tol = {} if dtype == torch.float32 else {"rtol": 0, "atol": 0}
    torch.testing.assert_close(got.cpu(), expected, **tol)
    torch.testing.assert_close(wd.cpu(), w, **tol)
    # A strided weight is renormalised in place through its strides.
    base = (make((4, 10), torch.float32, seed=11) * 2).to(dtype)
    wt, wtd = base.t(), base.to("regen").t()
    torch.embedding_renorm_(wt, idx, 1.0, norm_type)
    torch.embedding_renorm_(wtd, idx.to("regen"), 1.0, norm_type)
    torch.testing.assert_close(wtd.cpu(), wt, **tol)
    A = torch.ops.aten
    for args in [(w.clone(), torch.tensor([10]), 1.0, 2.0), (w.clone(), idx.float(), 1.0, 2.0), (w[0].clone(), idx, 1.0, 2.0)]:
        raises_like(A.embedding_renorm_, args, dev(args))
