"""The device's own ops (regen.toml's [[custom_op]], src/custom.rs): torch.ops.regen.scatter_sum
and scatter_max against references written with plain torch ops on CPU, forward and backward, on the
device and on CPU tensors (one Rust kernel serves both), with the Rust backward kernels counted;
gradcheck in float64, TorchScript (scripted, saved, loaded), torch.library.opcheck, and errors with
the exception type the reference raises."""

import io

import pytest
import torch

import regen_device
from devtest import counted, make

ops = torch.ops.regen


def broadcast(index, src, dim):
    """PyG's broadcast: a 1-d index names the target of each slice along `dim`."""
    if index.dim() == 1 and src.dim() > 1:
        shape = [1] * src.dim()
        shape[dim] = -1
        return index.view(shape).expand_as(src)
    return index


def ref_scatter_sum(src, index, dim, dim_size):
    shape = list(src.shape)
    shape[dim] = dim_size
    return torch.zeros(shape, dtype=src.dtype).scatter_add_(dim, broadcast(index, src, dim), src)


def ref_scatter_max(src, index, dim, dim_size):
    """amax over each target (0 where nothing arrives) and PyG's argmax: the first position along
    `dim` holding the maximum, src.size(dim) where nothing arrives."""
    index = broadcast(index, src, dim)
    shape = list(src.shape)
    shape[dim] = dim_size
    out = torch.zeros(shape, dtype=src.dtype).scatter_reduce_(dim, index, src, "amax", include_self=False)
    n = src.shape[dim]
    positions = torch.arange(n).view([-1 if d == dim else 1 for d in range(src.dim())]).expand_as(src)
    hit = src == out.gather(dim, index)
    candidates = torch.where(hit, positions, torch.full_like(positions, n))
    argmax = torch.full(shape, n, dtype=torch.int64).scatter_reduce_(dim, index, candidates, "amin", include_self=True)
    return out, argmax


CASES = [
    # (src shape, dim, dim_size, 1-d index)
    ((7,), 0, 4, False),
    ((5, 6), 0, 3, False),
    ((5, 6), 1, 4, False),
    ((5, 6), -1, 4, True),
    ((3, 8, 2), 1, 5, True),
    ((3, 8, 2), 2, 3, False),
]


def case(shape, dim, dim_size, one_d, dtype, seed=0):
    src = make(shape, dtype, seed)
    d = dim % len(shape)
    g = torch.Generator().manual_seed(seed + 1)
    index_shape = (shape[d],) if one_d else shape
    index = torch.randint(0, dim_size, index_shape, generator=g)
    return src, index


def transposed(t):
    return t.mT.contiguous().mT if t.dim() >= 2 else t


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bfloat16])
@pytest.mark.parametrize("shape,dim,dim_size,one_d", CASES)
def test_scatter_sum_forward_equals_cpu(shape, dim, dim_size, one_d, dtype):
    src, index = case(shape, dim, dim_size, one_d, dtype)
    expected = ref_scatter_sum(src, index, dim % len(shape), dim_size)
    for layout in (lambda t: t, transposed):
        with counted("regen::scatter_sum"):
            got = ops.scatter_sum(layout(src.to("regen")), layout(index.to("regen")), dim, dim_size)
        assert got.device.type == "regen"
        torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape,dim,dim_size,one_d", CASES)
def test_scatter_sum_backward_equals_cpu(shape, dim, dim_size, one_d, dtype):
    src, index = case(shape, dim, dim_size, one_d, dtype)
    weight = make((*shape[: dim % len(shape)], dim_size, *shape[dim % len(shape) + 1 :]), dtype, seed=5)
    cpu_src = src.clone().requires_grad_()
    (ref_scatter_sum(cpu_src, index, dim % len(shape), dim_size) * weight).sum().backward()
    dev_src = src.to("regen").requires_grad_()
    out = ops.scatter_sum(dev_src, index.to("regen"), dim, dim_size)
    assert out.grad_fn is not None
    with counted("regen::scatter_sum_backward"):
        (out * weight.to("regen")).sum().backward()
    torch.testing.assert_close(dev_src.grad.cpu(), cpu_src.grad, rtol=0, atol=0)


def test_scatter_sum_sum_backward_reaches_the_rust_backward():
    src = make((6, 3), torch.float32).to("regen").requires_grad_()
    index = torch.tensor([0, 1, 0, 2, 1, 0], device="regen")
    before = regen_device.native_calls("regen::scatter_sum_backward")
    ops.scatter_sum(src, index, 0, 3).sum().backward()
    assert regen_device.native_calls("regen::scatter_sum_backward") == before + 1
    torch.testing.assert_close(src.grad.cpu(), torch.ones(6, 3))


@pytest.mark.parametrize("device", ["regen", "cpu"])
def test_an_op_without_a_backward_runs_and_backpropagating_through_it_raises(device):
    """The backward ops declare no backward of their own: they run on tensors that require grad
    (counted as native), and a gradient through them, as in double backward, is an error naming
    the op rather than a silently missing gradient."""
    index = torch.tensor([0, 1, 0, 2, 1, 0], device=device)
    grad = make((3, 4), torch.float32).to(device).requires_grad_()
    with counted("regen::scatter_sum_backward"):
        out = ops.scatter_sum_backward(grad, index, 0)
    torch.testing.assert_close(out.cpu(), grad.detach().cpu()[index.cpu()], rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="derivative for regen::scatter_sum_backward is not implemented"):
        out.sum().backward()
    src = make((6, 4), torch.float64).to(device).requires_grad_()
    (g,) = torch.autograd.grad(ops.scatter_sum(src, index, 0, 3).pow(2).sum(), src, create_graph=True)
    with pytest.raises(RuntimeError, match="derivative for regen::scatter_sum_backward is not implemented"):
        g.sum().backward()


def test_cpu_tensors_run_the_same_rust_kernels():
    src, index = case((5, 6), 1, 4, True, torch.float64)
    cpu_src = src.clone().requires_grad_()
    with counted("regen::scatter_sum"), counted("regen::scatter_sum_backward"):
        out = ops.scatter_sum(cpu_src, index, 1, 4)
        assert out.device.type == "cpu"
        torch.testing.assert_close(out, ref_scatter_sum(src, index, 1, 4), rtol=0, atol=0)
        out.sum().backward()
    torch.testing.assert_close(cpu_src.grad, torch.ones_like(src))
    with counted("regen::scatter_max"):
        values, argmax = ops.scatter_max(src, index, 1, 4)
    assert values.device.type == "cpu" and argmax.device.type == "cpu"
    for a, b in zip((values, argmax), ref_scatter_max(src, index, 1, 4)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("device", ["regen", "cpu"])
def test_gradcheck_float64(device):
    src, index = case((4, 5), 1, 3, False, torch.float64)
    src = src.to(device).requires_grad_()
    index = index.to(device)
    assert torch.autograd.gradcheck(lambda s: ops.scatter_sum(s, index, 1, 3), (src,))
    # Distinct values: no ties, so the maximum is differentiable at the point.
    src = torch.randperm(20, generator=torch.Generator().manual_seed(3)).double().view(4, 5).to(device)
    src.requires_grad_()
    assert torch.autograd.gradcheck(lambda s: ops.scatter_max(s, index, 1, 3)[0], (src,))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.bfloat16])
@pytest.mark.parametrize("shape,dim,dim_size,one_d", CASES)
def test_scatter_max_forward_equals_cpu(shape, dim, dim_size, one_d, dtype):
    src, index = case(shape, dim, dim_size, one_d, dtype)
    expected = ref_scatter_max(src, index, dim % len(shape), dim_size)
    with counted("regen::scatter_max"):
        got = ops.scatter_max(src.to("regen"), index.to("regen"), dim, dim_size)
    for a, b in zip(got, expected):
        torch.testing.assert_close(a.cpu(), b, rtol=0, atol=0)


@pytest.mark.parametrize("shape,dim,dim_size,one_d", CASES)
def test_scatter_max_backward_equals_cpu(shape, dim, dim_size, one_d):
    src, index = case(shape, dim, dim_size, one_d, torch.float64)
    d = dim % len(shape)
    dev_src = src.to("regen").requires_grad_()
    values, argmax = ops.scatter_max(dev_src, index.to("regen"), dim, dim_size)
    assert not argmax.requires_grad
    grad = make(values.shape, torch.float64, seed=9)
    with counted("regen::scatter_max_backward"):
        values.backward(grad.to("regen"))
    # Each target's gradient goes to its argmax; targets nothing reached send theirs to a dropped
    # extra slot.
    n = shape[d]
    wide = list(shape)
    wide[d] = n + 1
    expected = torch.zeros(wide, dtype=torch.float64).scatter_(d, argmax.cpu(), grad).narrow(d, 0, n)
    torch.testing.assert_close(dev_src.grad.cpu(), expected, rtol=0, atol=0)


def test_torchscript_scripted_saved_and_loaded():
    def f(src: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        values, argmax = torch.ops.regen.scatter_max(src, index, 0, 3)
        return torch.ops.regen.scatter_sum(src, index, 0, 3) + values

    scripted = torch.jit.script(f)
    buffer = io.BytesIO()
    torch.jit.save(scripted, buffer)
    buffer.seek(0)
    loaded = torch.jit.load(buffer)
    src, index = case((6, 2), 0, 3, True, torch.float32)
    expected = ref_scatter_sum(src, index, 0, 3) + ref_scatter_max(src, index, 0, 3)[0]
    dev_src = src.to("regen").requires_grad_()
    with counted("regen::scatter_sum"), counted("regen::scatter_max"):
        got = loaded(dev_src, index.to("regen"))
    torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)
    with counted("regen::scatter_sum_backward"), counted("regen::scatter_max_backward"):
        got.sum().backward()
    assert dev_src.grad is not None


@pytest.mark.skipif(not hasattr(torch.library, "opcheck"), reason="torch.library.opcheck is newer than this release")
@pytest.mark.parametrize("device", ["regen", "cpu"])
def test_opcheck(device):
    src, index = case((5, 4), 0, 3, False, torch.float32)
    src, index = src.to(device).requires_grad_(), index.to(device)
    # opcheck's autograd-registration check knows CPU, CUDA and XPU only ("NYI devices other than
    # CPU/CUDA/XPU"); the CPU run checks the same generated registrations.
    tests = [t for t in ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
             if device == "cpu" or t != "test_autograd_registration"]
    torch.library.opcheck(ops.scatter_sum.default, (src, index, 0, 3), test_utils=tests)
    torch.library.opcheck(ops.scatter_max.default, (src, index, 0, 3), test_utils=tests)
    grad = make((3, 4), torch.float32).to(device)
    torch.library.opcheck(ops.scatter_sum_backward.default, (grad, index, 0), test_utils=tests)


def raises_like(reference, call):
    """`call` raises what `reference` (the plain-torch computation on CPU) raises, never TypeError."""
    with pytest.raises(Exception) as expected:
        reference()
    with pytest.raises(Exception) as got:
        call()
    assert type(got.value) is type(expected.value) and not isinstance(got.value, TypeError), (expected, got)


def test_errors_like_the_reference():
    src, index = case((4, 5), 1, 3, False, torch.float32)
    dev = src.to("regen"), index.to("regen")
    # A dimension out of range: IndexError.
    raises_like(lambda: ref_scatter_sum(src, index, 2, 3), lambda: ops.scatter_sum(*dev, 2, 3))
    # An index past dim_size: RuntimeError.
    raises_like(lambda: ref_scatter_sum(src, index, 1, 2), lambda: ops.scatter_sum(*dev, 1, 2))
    raises_like(lambda: ref_scatter_max(src, index, 1, 2), lambda: ops.scatter_max(*dev, 1, 2))
    # A negative index: RuntimeError.
    bad = index.clone()
    bad[0, 0] = -1
    raises_like(lambda: ref_scatter_sum(src, bad, 1, 3), lambda: ops.scatter_sum(dev[0], bad.to("regen"), 1, 3))
    # A float index: RuntimeError.
    raises_like(
        lambda: ref_scatter_sum(src, index.float(), 1, 3),
        lambda: ops.scatter_sum(dev[0], dev[1].float(), 1, 3),
    )
    # An index of the wrong shape, a negative dim_size, tensors on two devices: RuntimeError.
    with pytest.raises(RuntimeError, match="index must have the shape of src"):
        ops.scatter_sum(dev[0], dev[1][:, :2], 1, 3)
    with pytest.raises(RuntimeError, match="dim_size must be non-negative"):
        ops.scatter_sum(*dev, 1, -1)
    with pytest.raises(RuntimeError, match="same device"):
        ops.scatter_sum(dev[0], index, 1, 3)
    # Wrong argument types are the dispatcher's schema check, before any kernel.
    with pytest.raises(RuntimeError):
        ops.scatter_sum(*dev, 1, "3")


def test_empty_and_untouched_targets():
    src = torch.empty(0, 3, device="regen")
    index = torch.empty(0, dtype=torch.int64, device="regen")
    out = ops.scatter_sum(src, index, 0, 4)
    torch.testing.assert_close(out.cpu(), torch.zeros(4, 3))
    values, argmax = ops.scatter_max(src, index, 0, 4)
    torch.testing.assert_close(values.cpu(), torch.zeros(4, 3))
    assert (argmax.cpu() == 0).all()
