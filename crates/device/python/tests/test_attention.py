"""scaled_dot_product_attention on the device: _fused_sdp_choice names the overrideable backend
where the fused kernel serves the call (torch_openreg's SDPA tests ask for that), the fused
attention and its backward match CPU's math path, and what the kernel does not do (dropout,
grouped-query attention) takes the math path of native ops instead."""

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend

import regen_device
from devtest import counted

FUSED = "_scaled_dot_product_fused_attention_overrideable"
TOLERANCE = {torch.float32: dict(rtol=1e-4, atol=1e-5), torch.float64: dict(rtol=1e-10, atol=1e-12),
             torch.float16: dict(rtol=2e-3, atol=2e-3), torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}


def make(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)


def cpu_reference(q, k, v, mask=None, causal=False, scale=None):
    """CPU's math path in float64, the oracle for every dtype."""
    return F.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                          attn_mask=None if mask is None else mask.double(),
                                          is_causal=causal, scale=scale)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("case", ["plain", "mask", "causal", "scale", "broadcast mask", "cross"])
def test_fused_attention_and_its_gradients_match_cpu(dtype, case):
    b, h, l, s, e, ev = 2, 3, 5, 7 if case == "cross" else 5, 4, 6
    q, k, v = make(b, h, l, e, dtype=dtype, seed=1), make(b, h, s, e, dtype=dtype, seed=2), make(b, h, s, ev, dtype=dtype, seed=3)
    mask = {"mask": make(b, h, l, s, dtype=dtype, seed=4), "broadcast mask": make(l, s, dtype=dtype, seed=4)}.get(case)
    causal, scale = case == "causal", 0.3 if case == "scale" else None
    dq, dk, dv = (t.to("regen").requires_grad_() for t in (q, k, v))
    dmask = None if mask is None else mask.to("regen").requires_grad_()
    assert torch._fused_sdp_choice(dq, dk, dv, dmask) == SDPBackend.OVERRIDEABLE.value
    with counted(FUSED, FUSED + "_backward"):
        out = F.scaled_dot_product_attention(dq, dk, dv, attn_mask=dmask, is_causal=causal, scale=scale)
        grad = make(b, h, l, ev, dtype=dtype, seed=5)
        out.backward(grad.to("regen"))
    assert out.dtype == dtype and out.shape == (b, h, l, ev)
    cq, ck, cv = (t.double().requires_grad_() for t in (q, k, v))
    cmask = None if mask is None else mask.double().requires_grad_()
    expected = F.scaled_dot_product_attention(cq, ck, cv, attn_mask=cmask, is_causal=causal, scale=scale)
    expected.backward(grad.double())
    tol = TOLERANCE[dtype]
    torch.testing.assert_close(out.cpu().double(), expected.detach(), **tol)
    for got, want in ((dq, cq), (dk, ck), (dv, cv)) + (((dmask, cmask),) if mask is not None else ()):
        assert got.grad.shape == want.shape and got.grad.dtype == dtype
        torch.testing.assert_close(got.grad.cpu().double(), want.grad, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("l,s", [(70, 70), (40, 100), (100, 40)])
def test_causal_attention_over_several_blocks_matches_cpu(dtype, l, s):
    # Longer than the kernel's causal blocks (32 query rows, each computing only the keys it
    # sees), square and not: with more keys than queries the last keys are seen by no query
    # (their dk and dv are 0), with fewer every query past s sees them all.
    b, h, e, ev = 1, 2, 8, 6
    q, k, v = make(b, h, l, e, dtype=dtype, seed=1), make(b, h, s, e, dtype=dtype, seed=2), make(b, h, s, ev, dtype=dtype, seed=3)
    dq, dk, dv = (t.to("regen").requires_grad_() for t in (q, k, v))
    grad = make(b, h, l, ev, dtype=dtype, seed=5)
    with counted(FUSED, FUSED + "_backward"):
        out = F.scaled_dot_product_attention(dq, dk, dv, is_causal=True)
        out.backward(grad.to("regen"))
    cq, ck, cv = (t.double().requires_grad_() for t in (q, k, v))
    expected = F.scaled_dot_product_attention(cq, ck, cv, is_causal=True)
    expected.backward(grad.double())
    tol = TOLERANCE[dtype]
    torch.testing.assert_close(out.cpu().double(), expected.detach(), **tol)
    for got, want in ((dq, cq), (dk, ck), (dv, cv)):
        torch.testing.assert_close(got.grad.cpu().double(), want.grad, **tol)
    if s > l:
        assert (dk.grad[:, :, l:] == 0).all() and (dv.grad[:, :, l:] == 0).all()


def test_the_fused_op_returns_what_its_schema_names():
    q = make(1, 2, 4, 8).to("regen")
    out, lse, cum_q, cum_k, max_q, max_k, seed, offset, debug = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q, q, q)
    assert out.shape == (1, 2, 4, 8) and lse.shape == (1, 2, 4) and lse.dtype == torch.float32
    assert (max_q, max_k) == (4, 4)
    scores = (q.cpu() @ q.cpu().transpose(-1, -2)) / 8 ** 0.5
    torch.testing.assert_close(lse.cpu(), torch.logsumexp(scores, -1), rtol=1e-5, atol=1e-5)


def test_what_the_fused_kernel_does_not_do_takes_the_math_path():
    q, k = make(2, 4, 5, 8).to("regen"), make(2, 2, 5, 8).to("regen")
    # Dropout and grouped-query attention: the math path, on native ops (bmm, softmax).
    assert torch._fused_sdp_choice(q, q, q, dropout_p=0.5) == SDPBackend.MATH.value
    assert torch._fused_sdp_choice(q, k, k, enable_gqa=True) == SDPBackend.MATH.value
    with counted("bmm.out"):
        out = F.scaled_dot_product_attention(q, k, k, enable_gqa=True)
    expected = F.scaled_dot_product_attention(q.cpu(), k.cpu(), k.cpu(), enable_gqa=True)
    torch.testing.assert_close(out.cpu(), expected, rtol=1e-4, atol=1e-5)
    # The backends a user enables are honoured: with only the math path, the fused kernel is not used.
    from torch.nn.attention import sdpa_kernel

    before = regen_device.native_calls(FUSED)
    with sdpa_kernel(SDPBackend.MATH), counted("bmm.out"):
        F.scaled_dot_product_attention(q, q, q)
    assert regen_device.native_calls(FUSED) == before
    # A direct call with dropout is refused, not silently run without it.
    with pytest.raises(NotImplementedError, match="dropout"):
        torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q, q, q, dropout_p=0.5)
