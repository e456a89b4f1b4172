"""embedding_dense_backward of the "regen" device (kernels/embedding.rs) against PyTorch's CPU
kernel: padding_idx, scale_grad_by_freq, int64 and int32 indices, repeated indices (sums in index
order, so equal to CPU's), float32/float64/bfloat16/float16 gradients, errors with CPU's exception
type, and the native-call counter (a CPU fallback cannot pass as native)."""

import pytest
import torch
import torch.nn.functional as F

from devtest import counted, make, no_cpu_copy

FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("padding_idx", [None, 3])
@pytest.mark.parametrize("by_freq", [False, True])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_embedding_backward(dtype, padding_idx, by_freq, index_dtype):
    g = torch.Generator().manual_seed(0)
    idx = torch.randint(0, 10, (6, 7), generator=g).to(index_dtype)
    w = make((10, 5), torch.float32, seed=1).to(dtype)
    grad = make((6, 7, 5), torch.float32, seed=2).to(dtype)
    wc, wd = w.clone().requires_grad_(), w.to("regen").requires_grad_()
    F.embedding(idx, wc, padding_idx=padding_idx, scale_grad_by_freq=by_freq).backward(grad)
    with counted("embedding_dense_backward"), no_cpu_copy():
        F.embedding(idx.to("regen"), wd, padding_idx=padding_idx, scale_grad_by_freq=by_freq).backward(grad.to("regen"))
    assert wd.grad.device.type == "regen"
    if by_freq and dtype != torch.float64:
        # CPU scales by 1/count with a fused multiply-add in its vector loop and, in its tail
        # (all 5 columns here), rounds scale·g to the element type before adding; the device
        # fuses every element: a unit in the last place of float16/bfloat16 apart.
        half = dtype in (torch.float16, torch.bfloat16)
        torch.testing.assert_close(wd.grad.cpu(), wc.grad, **(dict(rtol=2e-2, atol=2e-3) if half else {}))
    else:
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
