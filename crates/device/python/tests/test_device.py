"""End-to-end tests of the "regen" device in real torch 2.15: native Rust kernels against
PyTorch's CPU kernels, the CPU fallback, autograd, errors, loading and memory."""

import gc
import os
import subprocess
import sys

import pytest
import torch

import regen_device

DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool]


def make(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=dtype)
    return torch.randint(-5, 6, shape, generator=g, dtype=dtype)


# Pairs of shapes: equal, broadcast, 0-dim, empty.
SHAPE_PAIRS = [((3, 4), (3, 4)), ((2, 1, 4), (3, 1)), ((), (5,)), ((4,), ()), ((0, 3), (3,))]


def on_device(t):
    return t.to("regen")


def compare(device_result, cpu_result):
    assert device_result.device.type == "regen"
    torch.testing.assert_close(device_result.cpu(), cpu_result, equal_nan=True)


def counted(op):
    """Context manager asserting the native kernel of `op` ran."""

    class Count:
        def __enter__(self):
            self.before = regen_device.native_calls(op)

        def __exit__(self, *exc):
            if exc[0] is None:
                assert regen_device.native_calls(op) > self.before, f"{op} did not run natively"

    return Count()


def test_loading_registers_every_op_without_dispatcher_errors_or_warnings():
    # A signature mismatch would abort the process, so load in a subprocess.
    code = "import torch, regen_device; print(torch.ones(2, device='regen') * 3)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "tensor([3., 3.], device='regen:0')" in proc.stdout
    assert "Warning" not in proc.stderr and "error" not in proc.stderr.lower(), proc.stderr


def test_device_basics():
    t = torch.ones(2, device="regen")
    assert t.device == torch.device("regen", 0)
    assert t.is_regen
    cpu = torch.arange(6.0).reshape(2, 3)
    for moved in (cpu.to("regen"), cpu.regen()):
        assert moved.device.type == "regen"
        assert torch.equal(moved.cpu(), cpu)
    assert "device='regen:0'" in repr(t)
    assert torch.regen.is_available() and torch.regen.device_count() == 1


@pytest.mark.parametrize("op,native", [("add", "add.out"), ("sub", "sub.out"), ("mul", "mul.out"), ("div", "div.out")])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
def test_binary_ops_match_cpu(op, native, dtype, shapes):
    a, b = make(shapes[0], dtype, 1), make(shapes[1], dtype, 2)
    if op == "div" and dtype != torch.bool and not dtype.is_floating_point:
        b = b.masked_fill(b == 0, 1)
    fn = getattr(torch, op)
    try:
        expected = fn(a, b)
    except RuntimeError as cpu_error:
        # Where PyTorch rejects the dtype (bool subtraction), the device rejects it too.
        with pytest.raises(RuntimeError):
            fn(on_device(a), on_device(b)).cpu()
        assert "not supported" in str(cpu_error)
        return
    with counted(native):
        compare(fn(on_device(a), on_device(b)), expected)


@pytest.mark.parametrize("op", ["neg", "abs", "exp", "log", "sqrt", "relu", "sigmoid", "tanh"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(3, 4), (), (0,), (2, 3, 2)], ids=str)
def test_unary_ops_match_cpu(op, dtype, shape):
    a = make(shape, dtype)
    if op in ("log", "sqrt") and dtype.is_floating_point:
        a = a.abs() + 0.1
    fn = getattr(torch, op)
    try:
        expected = fn(a)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            fn(on_device(a)).cpu()
        return
    native = "relu" if op == "relu" else f"{op}.out"
    with counted(native):
        compare(fn(on_device(a)), expected)


# Every row of the unary table (src/kernels/unary.rs), each compared with CPU in every dtype
# CPU supports it for; where CPU raises, the device raises a RuntimeError too.
UNARY_TABLE = [
    "neg", "abs", "sign", "sgn", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt",
    "rsqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "sigmoid", "erf", "erfc", "lgamma", "ceil", "floor", "round",
    "trunc", "frac", "bitwise_not",
]
TABLE_DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int64, torch.int8, torch.uint8, torch.bool, torch.complex64]


def make_any(shape, dtype, seed=0):
    if dtype.is_complex:
        return torch.complex(make(shape, torch.float32, seed), make(shape, torch.float32, seed + 7)).to(dtype)
    if dtype in (torch.float16, torch.bfloat16):
        return make(shape, torch.float32, seed).to(dtype)
    if dtype in (torch.int8, torch.uint8):
        return make(shape, torch.int64, seed).clamp(0 if dtype == torch.uint8 else -5, 5).to(dtype)
    return make(shape, dtype, seed)


@pytest.mark.parametrize("op", UNARY_TABLE)
@pytest.mark.parametrize("dtype", TABLE_DTYPES, ids=str)
def test_unary_table_matches_cpu(op, dtype):
    a = make_any((4, 5), dtype)
    if op in ("acosh",) and (dtype.is_floating_point or dtype.is_complex):
        a = a.abs() + 1  # inside the real domain for most samples
    fn = getattr(torch, op)
    try:
        expected = fn(a)
    except RuntimeError:
        with pytest.raises(RuntimeError):
            fn(on_device(a)).cpu()
        return
    with counted(f"{op}.out"):
        got = fn(on_device(a))
    assert got.dtype == expected.dtype
    compare(got, expected)
    # A transposed (non-contiguous) input and the in-place form, where CPU has one.
    compare(fn(on_device(a).t()), fn(a.t()))


# Rows of the binary table (src/kernels/binary.rs): (torch function, native op key).
BINARY_TABLE = [
    ("add", "add.out"), ("sub", "sub.out"), ("mul", "mul.out"), ("div", "div.out"),
    ("remainder", "remainder.Tensor_out"), ("fmod", "fmod.Tensor_out"), ("pow", "pow.Tensor_Tensor_out"),
    ("atan2", "atan2.out"), ("hypot", "hypot.out"), ("copysign", "copysign.out"), ("nextafter", "nextafter.out"),
    ("maximum", "maximum.out"), ("minimum", "minimum.out"), ("fmax", "fmax.out"), ("fmin", "fmin.out"),
    ("logaddexp", "logaddexp.out"), ("logaddexp2", "logaddexp2.out"), ("xlogy", "xlogy.OutTensor"),
    ("heaviside", "heaviside.out"), ("gcd", "gcd.out"), ("lcm", "lcm.out"), ("floor_divide", "floor_divide"),
    ("bitwise_and", "bitwise_and.Tensor_out"), ("bitwise_or", "bitwise_or.Tensor_out"), ("bitwise_xor", "bitwise_xor.Tensor_out"),
    ("logical_and", "logical_and.out"), ("logical_or", "logical_or.out"), ("logical_xor", "logical_xor.out"),
    ("eq", "eq.Tensor_out"), ("ne", "ne.Tensor_out"), ("lt", "lt.Tensor_out"), ("le", "le.Tensor_out"),
    ("gt", "gt.Tensor_out"), ("ge", "ge.Tensor_out"),
]


@pytest.mark.parametrize("op,native", BINARY_TABLE, ids=[n for n, _ in BINARY_TABLE])
@pytest.mark.parametrize("dtype", TABLE_DTYPES, ids=str)
def test_binary_table_matches_cpu(op, native, dtype):
    a, b = make_any((3, 4), dtype, 1), make_any((4,), dtype, 2)
    if op in ("remainder", "fmod", "floor_divide", "div") and not (dtype.is_floating_point or dtype.is_complex):
        a = torch.where(a == 0, torch.ones_like(a), a)
        b = torch.where(b == 0, torch.ones_like(b), b)
    if op == "pow" and not (dtype.is_floating_point or dtype.is_complex):
        b = b.abs() if dtype != torch.bool else b
    fn = getattr(torch, op)
    try:
        expected = fn(a, b)
    except (RuntimeError, TypeError):
        # Where CPU rejects the dtype, so does the device (PyTorch itself raises TypeError for
        # maximum of complex tensors; the device's kernels raise RuntimeError).
        with pytest.raises((RuntimeError, TypeError)):
            fn(on_device(a), on_device(b)).cpu()
        return
    with counted(native):
        got = fn(on_device(a), on_device(b))
    assert got.dtype == expected.dtype
    compare(got, expected)
    # Broadcast the other way, transposed, and with a Python scalar.
    compare(fn(on_device(b), on_device(a).t().t()), fn(b, a))
    if op not in ("gcd", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor") or not dtype.is_floating_point:
        try:
            scalar_expected = fn(a, 2)
        except (RuntimeError, TypeError):
            return
        compare(fn(on_device(a), 2), scalar_expected)


def test_division_modes_and_errors():
    a, b = make((3, 4), torch.float32, 1), make((3, 4), torch.float32, 2)
    for mode in (None, "trunc", "floor"):
        with counted("div.out_mode"):
            compare(torch.div(on_device(a), on_device(b), rounding_mode=mode), torch.div(a, b, rounding_mode=mode))
    i = torch.tensor([7, -7, 3])
    compare(torch.div(on_device(i), 2, rounding_mode="floor"), torch.div(i, 2, rounding_mode="floor"))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.remainder(on_device(i), on_device(torch.tensor([1, 0, 1]))).cpu()
    with pytest.raises(RuntimeError, match="alpha must not be a floating point"):
        torch.add(on_device(i), on_device(i), alpha=1.5)
    # Promotion: int tensor with a float scalar, 0-dim float64 with a float32 tensor.
    compare(on_device(i) * 2.5, i * 2.5)
    compare(on_device(a) + torch.tensor(1.0, dtype=torch.float64), a + torch.tensor(1.0, dtype=torch.float64))
    compare(on_device(i) + torch.tensor(1.5, dtype=torch.float64).to("regen"), i + torch.tensor(1.5, dtype=torch.float64))


def test_non_contiguous_inputs_and_in_place_forms():
    a = make((4, 6), torch.float32)
    d = on_device(a)
    compare(d.t() * 2, a.t() * 2)
    compare(d[:, ::2] + d[:, 1::2], a[:, ::2] + a[:, 1::2])
    compare(d.t().exp(), a.t().exp())
    x, y = on_device(a.clone()), a.clone()
    with counted("add.out"):
        x.add_(1.5)
    y.add_(1.5)
    compare(x, y)
    with counted("relu_"):
        x.relu_()
    compare(x, y.relu_())
    out = torch.empty(0, device="regen")
    torch.add(d, d, alpha=3, out=out)
    compare(out, a + 3 * a)


def test_cpu_scalars_mix_with_device_tensors():
    a = make((3, 2), torch.float32)
    d = on_device(a)
    compare(d + 1, a + 1)
    compare(2 - d, 2 - a)
    compare(d * 2.5, a * 2.5)
    compare(d / torch.tensor(4.0), a / torch.tensor(4.0))
    i = make((3,), torch.int64)
    compare(on_device(i) * 2.5, i * 2.5)
    compare(on_device(i) + 1, i + 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool], ids=str)
@pytest.mark.parametrize("dim,keepdim", [(None, False), ((0,), False), ((1,), False), ((0, 2), True), ((-1,), True), ((1, 2), False)])
def test_sum_matches_cpu(dtype, dim, keepdim):
    a = make((2, 3, 4), dtype)
    with counted("sum.IntList_out"):
        if dim is None:
            compare(on_device(a).sum(), a.sum())
        else:
            compare(on_device(a).sum(dim, keepdim=keepdim), a.sum(dim, keepdim=keepdim))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64], ids=str)
def test_mm_and_addmm_match_cpu(dtype):
    m1, m2, bias = make((5, 3), dtype, 1), make((3, 4), dtype, 2), make((4,), dtype, 3)
    with counted("mm.out"):
        compare(on_device(m1) @ on_device(m2), m1 @ m2)
    with counted("addmm.out"):
        compare(torch.addmm(on_device(bias), on_device(m1), on_device(m2), beta=2, alpha=3), torch.addmm(bias, m1, m2, beta=2, alpha=3))
    compare(on_device(m1).t() @ on_device(m1), m1.t() @ m1)


def test_fallback_runs_on_cpu_with_equal_results():
    a = make((3, 5), torch.float32)
    x = on_device(a)
    before = regen_device.native_calls("copy_")
    result = torch.cumsum(x, dim=1)
    assert result.device.type == "regen"
    torch.testing.assert_close(result.cpu(), torch.cumsum(a, dim=1))
    # cumsum has no Rust kernel: the CPU fallback copied its input and result through copy_.
    assert regen_device.native_calls("cumsum.out") == 0
    assert regen_device.native_calls("copy_") >= before + 2


def test_mlp_training_step_matches_cpu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    device_model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    device_model.load_state_dict(model.state_dict())
    device_model = device_model.to("regen")
    x, target = torch.randn(4, 6), torch.randn(4, 2)
    losses = []
    for m, xs, ts in ((model, x, target), (device_model, x.to("regen"), target.to("regen"))):
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(m(xs), ts)
        loss.backward()
        opt.step()
        losses.append(loss.detach().cpu())
    torch.testing.assert_close(losses[1], losses[0])
    for p_cpu, p_dev in zip(model.parameters(), device_model.parameters()):
        assert p_dev.device.type == "regen"
        torch.testing.assert_close(p_dev.detach().cpu(), p_cpu.detach())


def test_bad_input_raises_and_the_interpreter_survives():
    a, b = torch.ones(2, 3, device="regen"), torch.ones(4, device="regen")
    with pytest.raises(RuntimeError, match="must match the size"):
        (a + b).cpu()
    ints = torch.ones(3, dtype=torch.int64, device="regen")
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        torch.div(ints, ints, out=torch.empty(3, dtype=torch.int64, device="regen"))
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        torch.ones(2, 3, device="regen") @ torch.ones(2, 3, device="regen")
    regen_device._panic_on("abs.out")
    try:
        with pytest.raises(RuntimeError, match=r"aten::abs\.out: kernel panicked"):
            torch.abs(a)
    finally:
        regen_device._panic_on("")
    compare(torch.abs(a - 2), torch.abs(torch.ones(2, 3) - 2))


def test_device_memory_returns_to_zero_after_tensors_are_freed():
    gc.collect()
    baseline = regen_device.bytes_in_use()
    tensors = [torch.ones(1000, device="regen") * i for i in range(10)]
    assert regen_device.bytes_in_use() >= baseline + 10 * 4000
    del tensors
    gc.collect()
    assert regen_device.bytes_in_use() == baseline


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_many_small_ops_do_not_grow_the_process():
    x = torch.ones(8, device="regen")
    for _ in range(2000):  # warm up allocator caches and the dispatcher
        x = (x * 1.0001 + 0.5) / 1.0001
    gc.collect()
    start, device_start = rss_bytes(), regen_device.bytes_in_use()
    for _ in range(100_000 // 3):
        x = (x * 1.0001 + 0.5) / 1.0001
    gc.collect()
    assert regen_device.bytes_in_use() == device_start
    assert rss_bytes() - start < 16 * 1024 * 1024


def test_bootstrap_ops_views_resize_and_set():
    a = torch.arange(12.0)
    d = on_device(a)
    with counted("view"):
        compare(d.view(3, 4), a.view(3, 4))
    with counted("as_strided"):
        compare(d.as_strided((2, 3), (1, 2), 1), a.as_strided((2, 3), (1, 2), 1))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        d.view(3, 4).t().view(12)
    compare(d.view(3, 4).t().reshape(12), a.view(3, 4).t().reshape(12))
    with counted("empty_strided"):
        e = torch.empty_strided((2, 3), (1, 2), device="regen")
    assert e.stride() == (1, 2) and e.device.type == "regen"
    with counted("fill_.Scalar"):
        e.fill_(7)
    compare(e, torch.full((2, 3), 7.0))
    r = on_device(torch.tensor([1.0, 2.0]))
    with counted("resize_"):
        r.resize_(4)
    assert r.shape == (4,)
    compare(r[:2], torch.tensor([1.0, 2.0]))
    target = torch.empty(0, device="regen")
    with counted("set_.source_Tensor"):
        target.set_(d)
    compare(target, a)
    with counted("set_.source_Storage"):
        target.set_(d.untyped_storage())
    compare(target, a)
    with counted("set_.source_Storage_storage_offset"):
        target.set_(d.untyped_storage(), 2, (2, 2), (1, 4))
    compare(target, a.as_strided((2, 2), (1, 4), 2))
    with counted("set_"):
        target.set_()
    assert target.numel() == 0
    with counted("_local_scalar_dense"):
        assert d[5].item() == 5.0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.complex64, torch.uint8, torch.int8], ids=str)
def test_any_dtype_moves_to_the_device_and_back(dtype):
    a = (torch.arange(12, dtype=torch.float32) - 3).reshape(3, 4).to(dtype)
    d = a.to("regen")
    assert d.dtype == dtype
    torch.testing.assert_close(d.cpu(), a)
    torch.testing.assert_close(d.t().contiguous().cpu(), a.t().contiguous())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_half_types_compute_and_convert(dtype):
    a, b = make((3, 4), torch.float32, 1).to(dtype), make((3, 4), torch.float32, 2).to(dtype)
    with counted("mul.out"):
        compare(on_device(a) * on_device(b), a * b)
    compare(on_device(a).float() + 1, a.float() + 1)
    compare(on_device(a.float()).to(dtype), a)


def test_complex_computes_natively_and_unsupported_dtypes_raise_runtime_errors():
    c = make_any((3,), torch.complex64)
    with counted("exp.out"):
        compare(torch.exp(on_device(c)), torch.exp(c))
    # A dtype without kernels (float8) moves bytewise but is not computed: a RuntimeError, never
    # a TypeError (Python would turn that into "unsupported operand" for operators).
    f8 = torch.ones(3).to(torch.float8_e5m2)
    with pytest.raises(RuntimeError, match="no kernels for ScalarType"):
        torch.neg(f8.to("regen"))


def test_lazily_conjugated_and_negated_tensors_copy_natively():
    # x.conj() and torch._neg_view(x) only set a bit; copying them must resolve it. Through
    # `_copy_from`, PyTorch's Conjugate fallback recursed without end (a crash); the device's
    # `copy_` resolves the bits itself.
    c = make_any((4, 3), torch.complex64)
    x = on_device(c)
    with counted("copy_"):
        assert torch.equal(x.conj().cpu(), c.conj())
    compare(x.conj().clone(), c.conj())
    compare(x.t().conj().contiguous(), c.t().conj().contiguous())
    compare(torch._neg_view(x), -c)
    compare(torch._neg_view(x.conj()), -c.conj())
    compare(x.conj() + x, c.conj() + c)
    compare(x.conj().to(torch.complex128), c.conj().to(torch.complex128))
    # A conjugated destination stores conjugates: its values are still the source's.
    y = torch.empty(4, 3, dtype=torch.complex64, device="regen").conj()
    y.copy_(x)
    compare(y.resolve_conj(), c)
    r = make((5,), torch.float32)
    compare(torch._neg_view(on_device(r)), -r)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        torch.empty(3, device="regen").copy_(on_device(make((2, 3), torch.float32)))
