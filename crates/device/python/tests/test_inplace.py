"""In-place ops stay in place: each in-place op the generator runs by its `.out` kernel
(generated/selection.json's `in_place`: `add_.Tensor` through `add.out` with out = self) is
registered where PyTorch derives it from `.out` (elsewhere PyTorch's own composite serves it), and
then writes its tensor with that kernel alone: no functional op, no copy_, the same storage; a
broadcast that would resize the tensor fails as on CPU; and the results agree with CPU's on
PyTorch's own OpInfo samples of each op's in-place variant."""

import json
import os

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

import regen_device
from devtest import sweep

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "..", "..", "generated", "selection.json")) as f:
    ROUTES = {r["op"]: r["through"] for r in json.load(f).get("in_place", [])}


def derived(key):
    """Whether PyTorch derives the in-place op from its structured `.out` kernel (it has torchgen's
    default backend kernel), the condition of the generated registration."""
    return torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{key}", "CompositeExplicitAutogradNonFunctional")


def device_entry(key):
    """The PrivateUse1 line of the op's dispatch table."""
    table = torch._C._dispatch_dump_table(f"aten::{key}")
    return next(line for line in table.splitlines() if line.startswith("PrivateUse1:"))


# The in-place forms of the commonest elementwise, pointwise and indexing ops, which a training
# step runs (the residual `out += identity`, optimizers' `add_`/`mul_`/`addcmul_`, masks).
COMMON = ["add_.Tensor", "sub_.Tensor", "mul_.Tensor", "div_.Tensor", "clamp_", "clamp_min_", "sqrt_",
          "exp_", "sigmoid_", "tanh_", "addcmul_", "addcdiv_", "lerp_.Scalar", "index_add_", "scatter_add_",
          "pow_.Scalar", "neg_", "floor_", "gelu_", "silu_", "threshold_"]


def test_the_common_in_place_ops_are_routed_and_registered():
    assert set(COMMON) <= ROUTES.keys(), sorted(set(COMMON) - ROUTES.keys())
    for key in COMMON:
        assert derived(key), f"{key}: PyTorch does not derive it from {ROUTES[key]}"
    # abs_ has a composite of its own (it refuses complex tensors first): PyTorch's stays.
    assert "abs_" in ROUTES and not derived("abs_")


@pytest.mark.parametrize("key", sorted(ROUTES), ids=str)
def test_routed_op_is_registered_exactly_where_pytorch_derives_it(key):
    entry = device_entry(key)
    if derived(key):
        assert "register_" in entry and "default backend kernel" not in entry, entry
    else:
        assert "register_" not in entry, entry


def in_place_opinfos():
    """OpInfos whose in-place variant is a routed op PyTorch derives from `.out` (each by its
    name: the overload is the sample's), with the routed keys of that name."""
    names = {}
    for key in ROUTES:
        if derived(key):
            names.setdefault(key.partition(".")[0], []).append(key)
    for op in op_db:
        fn = op.inplace_variant
        name = getattr(fn, "__name__", None)
        if name in names and sweep.skip_reason(op) is None:
            yield pytest.param(op, names[name], id=f"{op.name}.{op.variant_test_name}".rstrip("."))


def dtypes_of(op):
    supported = op.supported_dtypes("cpu")
    return [d for d in (torch.float32, torch.int64, torch.bool) if d in supported]


@pytest.mark.parametrize("op,keys", list(in_place_opinfos()))
def test_in_place_variant_matches_cpu_in_place(op, keys):
    """Every OpInfo sample: the in-place variant on a clone, on CPU and on the device. Where CPU
    raises (a broadcast that would resize self, a result type self cannot hold) the device
    raises; otherwise the device returns self, in the same storage, with CPU's values. The
    profiler sees neither the functional op nor a copy_, and the routed `.out` kernels ran."""
    fn = op.inplace_variant
    functional = f"aten::{fn.__name__[:-1]}"
    throughs = {ROUTES[k] for k in keys}
    before = {t: regen_device.native_calls(t) for t in throughs}
    ran = compared = 0
    events = set()
    for dtype in dtypes_of(op):
        torch.manual_seed(0)
        for sample in op.sample_inputs("cpu", dtype):
            if not isinstance(sample.input, torch.Tensor) or sweep.uses_generator(
                (sample.input, sample.args, sample.kwargs)
            ):
                continue
            args, kwargs = sweep.to_device(sample.args), sweep.to_device(sample.kwargs)
            self_cpu, self_dev = sample.input.clone(), sweep.to_device(sample.input)
            try:
                expected = fn(self_cpu, *sample.args, **sample.kwargs)
                cpu_error = None
            except Exception as exc:  # noqa: BLE001 - any CPU error: the device must raise too
                cpu_error = exc
            ptr, shape = self_dev.data_ptr(), self_dev.shape
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                try:
                    got = fn(self_dev, *args, **kwargs)
                    dev_error = None
                except Exception as exc:  # noqa: BLE001
                    dev_error = exc
            events |= {e.name for e in prof.events()}
            ran += 1
            where = f"{op.name} {dtype} {sweep.describe(sample)}"
            if cpu_error is not None:
                assert dev_error is not None, f"{where}: the device succeeded where CPU raised {cpu_error}"
                assert not isinstance(dev_error, TypeError), f"{where}: {dev_error}"
                assert self_dev.shape == shape, f"{where}: a failed in-place op resized self"
                continue
            assert dev_error is None, f"{where}: {dev_error}"
            assert got is self_dev, f"{where}: the result is not self"
            assert self_dev.data_ptr() == ptr and self_dev.shape == shape, f"{where}: self was reallocated"
            assert expected is self_cpu
            # The sweep's comparison: within the summation bound for the products whose order
            # CPU's BLAS picks (addmm_, baddbmm_, addmv_), else assert_close.
            sweep.compare(self_dev.cpu(), self_cpu, where, bound=sweep.sum_bound(op, sample))
            compared += 1
    assert compared > 0, f"{op.name}: no sample ran in place on both"
    assert functional not in events and "aten::copy_" not in events, sorted(events)
    assert any(regen_device.native_calls(t) > before[t] for t in throughs), f"{throughs} did not run natively"


def test_a_broadcast_that_would_resize_self_fails_as_on_cpu():
    for device in ("cpu", "regen"):
        x, y = torch.zeros(3, 1, device=device), torch.ones(3, 4, device=device)
        with pytest.raises(RuntimeError, match=r"output with shape \[3, 1\] doesn't match the broadcast shape \[3, 4\]"):
            x.add_(y)
        assert x.shape == (3, 1) and not x.any()
    # Broadcasting the other operand is fine: self keeps its shape.
    x = torch.arange(12.0, device="regen").reshape(3, 4)
    x.mul_(torch.tensor([1.0, 2.0, 3.0, 4.0], device="regen"))
    torch.testing.assert_close(x.cpu(), torch.arange(12.0).reshape(3, 4) * torch.tensor([1.0, 2.0, 3.0, 4.0]))


def test_in_place_on_views_and_with_self_as_an_input():
    base = torch.randn(6, 8)
    dev = base.to("regen")
    cases = [
        lambda t: t.t().add_(t.t(), alpha=2),  # self is every input, transposed
        lambda t: t[:, ::2].mul_(t[:, 1::2]),  # a strided view written from another view of its tensor
        lambda t: t[1:4].clamp_(min=-0.5, max=0.5),
        lambda t: t.view(8, 6).sigmoid_(),
        lambda t: t.add_(t[0]),  # an input that is part of self: CPU refuses
        lambda t: t[1:].sub_(t[:-1]),  # partial overlap: CPU refuses
        lambda t: t[:1].expand(6, 8).mul_(2),  # one element written twice: CPU refuses
    ]
    for i, case in enumerate(cases):
        cpu, got = base.clone(), dev.clone()
        try:
            case(cpu)
        except RuntimeError as exc:
            with pytest.raises(RuntimeError, match="unsupported operation"):
                case(got)
            assert "unsupported operation" in str(exc)
            torch.testing.assert_close(got.cpu(), base, msg=lambda m: f"case {i} wrote before refusing: {m}")
            continue
        case(got)
        torch.testing.assert_close(got.cpu(), cpu, msg=lambda m: f"case {i}: {m}")


def test_autograd_through_a_routed_in_place_op():
    def step(device):
        w = torch.linspace(-1, 1, 12, device=device).reshape(3, 4).requires_grad_()
        h = w * 2
        h.add_(torch.ones(4, device=device)).mul_(torch.arange(4.0, device=device)).sigmoid_()
        h.sum().backward()
        return w.grad.cpu()

    torch.testing.assert_close(step("regen"), step("cpu"))


def test_the_tensors_version_counts_each_in_place_write():
    x = torch.zeros(4, device="regen")
    v = x._version
    x.add_(1).mul_(3)
    assert x._version == v + 2
    assert x.cpu().tolist() == [3.0] * 4
