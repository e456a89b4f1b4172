"""The fused LSTM and GRU cells (kernels/ops/rnn.rs) that nn.LSTM/nn.GRU call for a PrivateUse1
tensor, which CPU has no kernel for: the cells' outputs and every gradient against PyTorch's CPU
path (LSTMCell/GRUCell composed of matmuls and pointwise ops), nn.LSTM/nn.GRU over sequences,
the ops called directly against the cell equations in float64, errors, the native kernels
counted and no copy to CPU."""

import contextlib
import copy

import pytest
import torch

from devtest import counted, make, no_cpu_copy

LSTM = "_thnn_fused_lstm_cell"
LSTM_BWD = "_thnn_fused_lstm_cell_backward_impl"
GRU = "_thnn_fused_gru_cell"
GRU_BWD = "_thnn_fused_gru_cell_backward"

# CPU adds the gates as linear(x) + linear(h) with the biases inside each GEMM, the fused cell
# as x·W + h·U + b1 + b2: a rounding or two apart.
TOL = {
    torch.float32: dict(rtol=2e-5, atol=2e-5),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.bfloat16: dict(rtol=3e-2, atol=3e-2),
}


def close(dev, cpu, dtype):
    assert dev.device.type == "regen" and dev.dtype == cpu.dtype and dev.shape == cpu.shape
    torch.testing.assert_close(dev.cpu(), cpu, **TOL[dtype])


def flatten(x):
    if isinstance(x, (tuple, list)):
        return [t for item in x for t in flatten(item)]
    return [x]


def run(fn, module, inputs):
    """fn's outputs, and the gradients of inputs and parameters for a fixed weighting of them."""
    inputs = [t.detach().requires_grad_() for t in inputs]
    outs = flatten(fn(module, *inputs))
    loss = sum((o.float() * make(o.shape, torch.float32, seed=9).to(o.device)).sum() for o in outs)
    loss.backward()
    return outs, [t.grad for t in inputs], [p.grad for p in module.parameters()]


def compare(module, fn, inputs, dtype, ops):
    """Runs `fn(module, *inputs)` forward and backward on CPU and on a copy on the device."""
    torch.manual_seed(0)
    cpu = module.to(dtype)
    dev = copy.deepcopy(cpu).to("regen")
    expected = run(fn, cpu, inputs)
    with contextlib.ExitStack() as stack:
        for op in ops:
            stack.enter_context(counted(op))
        stack.enter_context(no_cpu_copy())
        got = run(fn, dev, [t.to("regen") for t in inputs])
    for g_list, e_list in zip(got, expected):
        assert len(g_list) == len(e_list)
        for g, e in zip(g_list, e_list):
            close(g, e, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("bias", [True, False])
def test_lstm_cell(dtype, bias):
    x, h, c = make((3, 5), dtype), make((3, 7), dtype, seed=1), make((3, 7), dtype, seed=2)
    compare(
        torch.nn.LSTMCell(5, 7, bias=bias), lambda m, x, h, c: m(x, (h, c)), [x, h, c], dtype, [LSTM, LSTM_BWD]
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("bias", [True, False])
def test_gru_cell(dtype, bias):
    x, h = make((4, 6), dtype), make((4, 3), dtype, seed=1)
    compare(torch.nn.GRUCell(6, 3, bias=bias), lambda m, x, h: m(x, h), [x, h], dtype, [GRU, GRU_BWD])


@pytest.mark.parametrize("batch_first", [False, True])
def test_lstm_and_gru_over_sequences(batch_first):
    dtype = torch.float32
    x = make((5, 3, 4) if not batch_first else (3, 5, 4), dtype)
    h0, c0 = make((4, 3, 6), dtype, seed=1), make((4, 3, 6), dtype, seed=2)
    lstm = torch.nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=batch_first)
    compare(lstm, lambda m, x, h, c: m(x, (h, c)), [x, h0, c0], dtype, [LSTM, LSTM_BWD])
    gru = torch.nn.GRU(4, 6, num_layers=2, bidirectional=True, batch_first=batch_first)
    compare(gru, lambda m, x, h: m(x, h), [x, h0], dtype, [GRU, GRU_BWD])


def sig(x):
    return 1 / (1 + torch.exp(-x))


def test_ops_against_the_cell_equations():
    """The ops called directly, against LSTM's and GRU's defining equations in float64, with a
    non-contiguous input and one state gradient missing."""
    n, h = 3, 4
    gi, gh = make((n, 8 * h), torch.float64)[:, ::2], make((n, 4 * h), torch.float64, seed=1)
    b1, b2, cx = make((4 * h,), torch.float64, seed=2), make((4 * h,), torch.float64, seed=3), make((n, h), torch.float64, seed=4)
    d = lambda t: t.to("regen")  # noqa: E731
    with counted(LSTM):
        hy, cy, ws = torch.ops.aten._thnn_fused_lstm_cell(d(gi), d(gh), d(cx), d(b1), d(b2))
    i, f, g, o = (gi + gh + b1 + b2).chunk(4, 1)
    i, f, g, o = sig(i), sig(f), torch.tanh(g), sig(o)
    c_ref = f * cx + i * g
    torch.testing.assert_close(cy.cpu(), c_ref)
    torch.testing.assert_close(hy.cpu(), o * torch.tanh(c_ref))
    torch.testing.assert_close(ws.cpu(), torch.cat([i, f, g, o], 1))

    gc = make((n, h), torch.float64, seed=5)
    with counted(LSTM_BWD):
        g_gates, g_cx, g_bias = torch.ops.aten._thnn_fused_lstm_cell_backward_impl(None, d(gc), d(cx), cy, ws, True)
    # Only the cell state's gradient: d cy/d gates through c = f·cx + i·g.
    ref = torch.cat([gc * g * i * (1 - i), gc * cx * f * (1 - f), gc * i * (1 - g * g), torch.zeros_like(gc)], 1)
    torch.testing.assert_close(g_gates.cpu(), ref)
    torch.testing.assert_close(g_cx.cpu(), gc * f)
    torch.testing.assert_close(g_bias.cpu(), ref.sum(0))
    assert torch.ops.aten._thnn_fused_lstm_cell_backward_impl(None, None, d(cx), cy, ws, True) == (None, None, None)

    gi3, gh3, hx = make((n, 3 * h), torch.float64, seed=6), make((n, 3 * h), torch.float64, seed=7), cx
    with counted(GRU):
        hy, ws = torch.ops.aten._thnn_fused_gru_cell(d(gi3), d(gh3), d(hx))
    ir, ii, in_ = gi3.chunk(3, 1)
    hr, hi, hn = gh3.chunk(3, 1)
    r, z = sig(ir + hr), sig(ii + hi)
    nn_ = torch.tanh(in_ + r * hn)
    torch.testing.assert_close(hy.cpu(), (1 - z) * nn_ + z * hx)
    with counted(GRU_BWD):
        g_in, g_hid, g_hx, b_in, b_hid = torch.ops.aten._thnn_fused_gru_cell_backward(d(gc), ws, False)
    assert b_in is None and b_hid is None
    g_n = gc * (1 - z) * (1 - nn_ * nn_)
    g_r = g_n * hn * r * (1 - r)
    g_z = gc * (hx - nn_) * z * (1 - z)
    torch.testing.assert_close(g_in.cpu(), torch.cat([g_r, g_z, g_n], 1))
    torch.testing.assert_close(g_hid.cpu(), torch.cat([g_r, g_z, g_n * r], 1))
    torch.testing.assert_close(g_hx.cpu(), gc * z)


def test_errors():
    d = lambda *s: torch.zeros(*s, device="regen")  # noqa: E731
    with pytest.raises(RuntimeError, match="hidden_gates"):
        torch.ops.aten._thnn_fused_lstm_cell(d(2, 8), d(2, 4), d(2, 2))
    with pytest.raises(RuntimeError, match="prev_hidden"):
        torch.ops.aten._thnn_fused_lstm_cell(d(2, 8), d(2, 8), d(2, 3))
    with pytest.raises(RuntimeError, match="both"):
        torch.ops.aten._thnn_fused_gru_cell(d(2, 6), d(2, 6), d(2, 2), d(6))
    with pytest.raises(RuntimeError, match="workspace"):
        torch.ops.aten._thnn_fused_gru_cell_backward(d(2, 2), d(2, 6), False)
    with pytest.raises(NotImplementedError):
        z = torch.zeros(2, 8, dtype=torch.int64, device="regen")
        torch.ops.aten._thnn_fused_lstm_cell(z, z, z[:, :2])
