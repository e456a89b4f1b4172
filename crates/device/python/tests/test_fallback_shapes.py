"""Tests of the CPU fallback's behaviour (not of any kernel): ops the device has no kernel for run
on CPU through templates/fallback.cpp and ATen's cpu_fallback, which must carry every argument and
result shape there and back — Tensor[] results and arguments, Tensor?[] arguments, in-place
self, out= tensors (one or two) and mutated Tensor(a!)[] lists. Each test checks that the op ran
through the fallback (its count rose, no native kernel exists), that the results equal CPU's and
sit on the device, and that in-place and out= tensors are the caller's objects with CPU's values.

The aten ops here are ones crates/device/regen.toml does not implement and that have a CPU
kernel but no composite one (in the pinned release's header, fixtures/torch-X.Y.Z/
RegistrationDeclarations.h for the X.Y.Z of crates/kernels/torch-version: "dispatch": "True",
"default": "False"). No aten op taking Tensor?[] reaches the fallback (index.Tensor and
_index_put_impl_ are native; the rest are composite), so a custom op with a CPU kernel only, which
the fallback serves like any other op, covers that argument type."""

import warnings

import pytest
import torch

import regen_device
from devtest import make


class through_fallback:
    """Asserts that `op` (name.overload, or ns::name) has no device kernel and that the fallback
    served it inside the block."""

    def __init__(self, op):
        self.op = op

    def __enter__(self):
        assert regen_device.native_calls(self.op) == 0, f"{self.op} has a native kernel: not a fallback test"
        self.before = regen_device.fallback_calls(self.op)

    def __exit__(self, *exc):
        if exc[0] is None:
            assert regen_device.fallback_calls(self.op) > self.before, f"{self.op} did not run through the fallback"
            assert regen_device.native_calls(self.op) == 0


def on_device_equal(got, expected):
    assert got.device.type == "regen", got.device
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got, expected)
    # The same CPU kernel ran on the same values: bit for bit.
    assert torch.equal(got.cpu(), expected), (got, expected)


# A CPU-only custom op for each argument kind no unimplemented aten op gives the fallback.
LIB = torch.library.Library("regen_fallback_shapes", "DEF")
LIB.define("pick(Tensor x, Tensor?[] indices) -> Tensor")
LIB.define("halves(Tensor x) -> Tensor[]")
LIB.define("scale_all_(Tensor(a!)[] xs, float factor) -> ()")
LIB.impl("pick", lambda x, indices: torch.ops.aten.index.Tensor(x, indices), "CPU")
LIB.impl("halves", lambda x: [half.clone() for half in x.chunk(2)], "CPU")


def _scale_all_(xs, factor):
    for x in xs:
        x.mul_(factor)


LIB.impl("scale_all_", _scale_all_, "CPU")


def test_tensor_list_result():
    # Fallback behaviour: a Tensor[] result comes back as a list of device tensors.
    x = make((50, 2), torch.float32, seed=1)
    with through_fallback("_histogramdd_bin_edges"):
        edges = torch.ops.aten._histogramdd_bin_edges(x.to("regen"), [4, 6])
    expected = torch.ops.aten._histogramdd_bin_edges(x, [4, 6])
    assert isinstance(edges, list) and len(edges) == len(expected) == 2
    for got, want in zip(edges, expected):
        on_device_equal(got, want)


def test_tensor_list_argument():
    # Fallback behaviour: a Tensor[] argument of device tensors is copied to CPU whole.
    x = make((50, 2), torch.float32, seed=2)
    bins = [torch.linspace(-3, 3, 5), torch.linspace(-2, 2, 7)]
    with through_fallback("_histogramdd_from_bin_tensors"):
        hist = torch.ops.aten._histogramdd_from_bin_tensors(x.to("regen"), [b.to("regen") for b in bins])
    on_device_equal(hist, torch.ops.aten._histogramdd_from_bin_tensors(x, bins))


def test_custom_tensor_list_result():
    # Fallback behaviour: as above, for an op outside aten.
    x = make((6, 3), torch.float64, seed=3)
    with through_fallback("regen_fallback_shapes::halves"):
        got = torch.ops.regen_fallback_shapes.halves(x.to("regen"))
    assert len(got) == 2
    for half, want in zip(got, x.chunk(2)):
        on_device_equal(half, want)


@pytest.mark.parametrize("indices", ["tensor-none-tensor", "none-first", "bool-mask"])
def test_optional_tensor_list_argument(indices):
    # Fallback behaviour: Tensor?[] with holes (None) and tensors, which cpu_fallback moves one by
    # one, keeping the holes where they were.
    x = make((4, 5, 6), torch.float32, seed=4)
    lists = {
        "tensor-none-tensor": [torch.tensor([3, 0, 3]), None, torch.tensor([5, 1, 0])],
        "none-first": [None, torch.tensor([[4, 0], [2, 2]])],
        "bool-mask": [torch.tensor([True, False, True, True])],
    }
    cpu_indices = lists[indices]
    dev_indices = [None if i is None else i.to("regen") for i in cpu_indices]
    with through_fallback("regen_fallback_shapes::pick"):
        got = torch.ops.regen_fallback_shapes.pick(x.to("regen"), dev_indices)
    on_device_equal(got, torch.ops.aten.index.Tensor(x, cpu_indices))


def test_mutated_tensor_list_argument():
    # Fallback behaviour: a Tensor(a!)[] the op writes comes back into the caller's device tensors.
    xs = [make((7,), torch.float32, seed=5), make((2, 3), torch.float32, seed=6)]
    dev = [x.to("regen") for x in xs]
    ptrs = [d.data_ptr() for d in dev]
    with through_fallback("regen_fallback_shapes::scale_all_"):
        torch.ops.regen_fallback_shapes.scale_all_(dev, 2.5)
    for d, x, ptr in zip(dev, xs, ptrs):
        on_device_equal(d, x * 2.5)
        assert d.data_ptr() == ptr, "written in place, not replaced"


def test_in_place():
    # Fallback behaviour: an in-place op returns the caller's tensor with CPU's values.
    a, b = make((40, 30), torch.float32, seed=7), make((40, 30), torch.float32, seed=8)
    x = a.to("regen")
    with through_fallback("_add_relu_.Tensor"):
        result = torch.ops.aten._add_relu_.Tensor(x, b.to("regen"), alpha=2)
    assert result is x
    on_device_equal(x, torch.ops.aten._add_relu_.Tensor(a.clone(), b, alpha=2))


def test_in_place_on_a_strided_view_writes_through_to_its_base():
    # Fallback behaviour: the CPU result is copied back into a non-contiguous view, so the base
    # changes exactly where the view lies.
    a = make((30, 40), torch.float32, seed=9)
    base = a.to("regen")
    view = base[::3, 5::2].t()  # (18, 10), neither contiguous nor at offset 0
    assert not view.is_contiguous() and view.storage_offset() == 5
    other = make(view.shape, torch.float32, seed=11)
    with through_fallback("_add_relu_.Tensor"):
        result = torch.ops.aten._add_relu_.Tensor(view, other.to("regen"))
    assert result is view
    expected = a.clone()
    torch.ops.aten._add_relu_.Tensor(expected[::3, 5::2].t(), other)
    on_device_equal(base, expected)


@pytest.mark.parametrize("op, call", [
    ("renorm.out", lambda x, out: torch.renorm(x, 2, 0, 1.0, out=out)),
    ("glu.out", lambda x, out: torch.ops.aten.glu.out(x, 1, out=out)),
    ("linalg_cross.out", lambda x, out: torch.linalg.cross(x[:, :3], x[:, 3:6], out=out)),
])
def test_out(op, call):
    # Fallback behaviour: out= is the caller's tensor, resized from empty without a warning.
    x = make((5, 8), torch.float32, seed=12)
    expected = call(x, torch.empty(0))
    out = torch.empty(0, device="regen")
    with through_fallback(op), warnings.catch_warnings():
        warnings.simplefilter("error")
        result = call(x.to("regen"), out)
    assert result is out
    on_device_equal(out, expected)
    # An out= of the right shape is written in place: the same storage.
    out2 = torch.full(expected.shape, 7.0, device="regen")
    ptr = out2.data_ptr()
    with through_fallback(op):
        call(x.to("regen"), out2)
    on_device_equal(out2, expected)
    assert out2.data_ptr() == ptr


def test_out_of_another_shape_warns_as_cpu_does():
    # Fallback behaviour: a user's out= of another, non-empty shape is resized with CPU's own
    # warning (the fallback drops that warning only for outputs whose shape did not change).
    x = make((5, 8), torch.float32, seed=13)
    out = torch.zeros(3, device="regen")
    with through_fallback("renorm.out"), pytest.warns(UserWarning, match="resized"):
        torch.renorm(x.to("regen"), 2, 0, 1.0, out=out)
    on_device_equal(out, torch.renorm(x, 2, 0, 1.0))


def test_two_outs():
    # Fallback behaviour: an op with two out= tensors (and a tuple result of them).
    x = make((100,), torch.float64, seed=14)
    hist, edges = torch.empty(0, dtype=torch.float64, device="regen"), torch.empty(0, dtype=torch.float64,
                                                                                   device="regen")
    with through_fallback("histogram.bin_ct_out"):
        result = torch.histogram(x.to("regen"), bins=7, out=(hist, edges))
    assert result[0] is hist and result[1] is edges
    want_hist, want_edges = torch.histogram(x, bins=7)
    on_device_equal(hist, want_hist)
    on_device_equal(edges, want_edges)


def test_functional_form_with_tuple_result():
    # Fallback behaviour: the functional op of the one above returns two new device tensors.
    x = make((100,), torch.float64, seed=15)
    with through_fallback("histogram.bin_ct"):
        hist, edges = torch.histogram(x.to("regen"), bins=5, range=(-2.0, 2.0))
    want_hist, want_edges = torch.histogram(x, bins=5, range=(-2.0, 2.0))
    on_device_equal(hist, want_hist)
    on_device_equal(edges, want_edges)
