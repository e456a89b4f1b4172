"""`add.out` of the "{{ device }}" device against CPU over every dtype torch has: the dtypes the
kernel accepts give CPU's result bit for bit (NaN where CPU has NaN), the others raise an error
that names the dtype. Run with `python -m pytest tests`."""

import pytest
import torch

import {{ package }}

DEVICE = "{{ device }}"
ALL_DTYPES = sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str)
# What src/lib.rs's `add_out` dispatches on; edit both together.
ACCEPTED = [
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
]
REFUSED = [d for d in ALL_DTYPES if d not in ACCEPTED]
# Quantized tensors need a quantizer: torch cannot make one on this device at all (its own
# NotImplementedError for the Quantized{{ device }} key), so add never sees them.
QUANTIZED = [torch.qint8, torch.quint8, torch.qint32, torch.quint4x2, torch.quint2x4]


def name(dtype):
    return str(dtype).removeprefix("torch.")


def sample(dtype, n=64, seed=0):
    """CPU values of `dtype` that reach its edges: extremes that wrap, int64 above 2^53,
    infinities, NaN, signed zeros, subnormals, and random values."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=g).bool()
    if not dtype.is_floating_point and not dtype.is_complex:
        info = torch.iinfo(dtype)
        edges = [info.min, info.max, -1, 0, 1, info.max // 2 + 1]
        if dtype == torch.int64:
            edges += [(1 << 62) + 1, (1 << 62) + 3, -(1 << 62) - 1, (1 << 53) + 1]
        edges = [e for e in edges if info.min <= e <= info.max][:n]
        rand = torch.randint(info.min, info.max, (n - len(edges),), generator=g, dtype=torch.int64)
        return torch.cat([torch.tensor(edges), rand]).to(dtype)
    real = torch.float32 if dtype in (torch.float16, torch.bfloat16, torch.complex64) else torch.float64
    x = (torch.randn(n, generator=g, dtype=torch.float64) * 10.0 ** torch.randint(-3, 4, (n,), generator=g)).to(real)
    if dtype.is_complex:
        y = torch.randn(n, generator=g, dtype=torch.float64).to(real) * 3
        return torch.complex(x, y)
    info = torch.finfo(dtype)
    edges = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), info.max, -info.max, info.tiny, info.tiny / 4][:n]
    x = x.to(dtype)
    x[: len(edges)] = torch.tensor(edges, dtype=torch.float64).to(dtype)
    return x


def assert_same(device_result, cpu_result):
    """Equal to CPU's result bit for bit, with NaN where CPU has NaN (any NaN: its sign and
    payload are the hardware's)."""
    got = device_result.cpu()
    assert got.dtype == cpu_result.dtype and got.shape == cpu_result.shape
    if got.is_complex():
        got, cpu_result = torch.view_as_real(got), torch.view_as_real(cpu_result)
    if got.is_floating_point():
        nan = torch.isnan(cpu_result)
        assert torch.equal(torch.isnan(got), nan), (got, cpu_result)
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[got.element_size()]
        got, cpu_result = got[~nan].view(bits), cpu_result[~nan].view(bits)
    assert torch.equal(got, cpu_result), (got, cpu_result)


def alphas(dtype):
    """Alphas of the dtype's kind. Float alphas are powers of two: CPU's vector loop fuses
    `x + alpha * y` into one rounding and its scalar tail rounds the product first, so only a
    product that needs no rounding has one CPU result."""
    if dtype == torch.bool:
        return [True, False]
    if dtype.is_complex:
        return [1, 2j, -0.5]
    if dtype.is_floating_point:
        return [1, 2.0, -0.5]
    return [1, -1, 3, 127, torch.iinfo(dtype).max]


@pytest.mark.parametrize("dtype", ACCEPTED, ids=name)
def test_add_equals_cpu(dtype):
    a, b = sample(dtype, seed=1), sample(dtype, seed=2)
    for alpha in alphas(dtype):
        if dtype.is_floating_point and alpha != 1:
            # Only where `alpha * b` is exact: no subnormal to halve, no product to overflow
            # (fused, -max + 2 * max is max; rounded first, inf).
            info = torch.finfo(dtype)
            keep = (b == 0) | (b.abs() >= info.tiny) & (b.abs() <= info.max / 4)
            a, b = a[keep], b[keep]
        before = {{ package }}.native_calls("add.out")
        assert_same(torch.add(a.to(DEVICE), b.to(DEVICE), alpha=alpha), torch.add(a, b, alpha=alpha))
        assert {{ package }}.native_calls("add.out") > before, "add ran on CPU, not in the kernel"


@pytest.mark.parametrize("dtype", ACCEPTED, ids=name)
def test_add_broadcasts_strides_and_writes_in_place(dtype):
    a = sample(dtype, 24, seed=3).reshape(2, 3, 4)
    b = sample(dtype, 8, seed=4).reshape(2, 1, 4)[:, :, 1:]  # expanded and strided
    c = a.transpose(0, 2)  # non-contiguous
    da, db, dc = a.to(DEVICE), b.to(DEVICE), c.to(DEVICE)
    assert_same(da[:, :, :3] + db, a[:, :, :3] + b)
    assert_same(dc + dc[0], c + c[0])
    assert_same(da + a[0, 0, 0].to(DEVICE), a + a[0, 0, 0])  # a 0-dim operand
    x, dx = a.clone(), da.clone()
    x.add_(b[:, :, :1])
    dx.add_(db[:, :, :1])
    assert_same(dx, x)


@pytest.mark.parametrize("first", ACCEPTED, ids=name)
def test_mixed_dtypes_promote_as_cpu(first):
    for second in ACCEPTED:
        a, b = sample(first, 16, seed=5), sample(second, 16, seed=6)
        assert_same(a.to(DEVICE) + b.to(DEVICE), a + b)
    # Python numbers: CPU's result type and conversion (a float becomes the default dtype).
    a = sample(first, 16, seed=7)
    for number in [True, 3, -2.5, 1.5 - 2j, 2**40]:
        dtype = torch.result_type(a, number)
        if dtype in ACCEPTED:
            assert_same(a.to(DEVICE) + number, a + number)
        else:  # float16 + 1j is complex32, bfloat16 + 1j bcomplex32 (which CPU cannot add either)
            with pytest.raises(RuntimeError, match=f" {name(dtype)};"):
                a.to(DEVICE) + number


def test_out_of_another_dtype_is_cast_as_cpu():
    a, b = sample(torch.int32, seed=8), sample(torch.int32, seed=9)
    for out_dtype in [torch.int64, torch.float32, torch.float16, torch.complex64]:
        cpu = torch.add(a, b, out=torch.empty(0, dtype=out_dtype))
        dev = torch.add(a.to(DEVICE), b.to(DEVICE), out=torch.empty(0, dtype=out_dtype, device=DEVICE))
        assert_same(dev, cpu)  # int32 wraps first, as on CPU, then is cast
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch.add(a.float().to(DEVICE), 1, out=torch.empty(0, dtype=torch.int32, device=DEVICE))


@pytest.mark.parametrize(
    "dtype, alpha, message",
    [
        (torch.int64, 2.5, "alpha must not be a floating point number"),
        (torch.float32, 1j, "alpha must not be a complex number"),
        (torch.int8, 300, "without overflow"),
        (torch.float16, 1e10, "without overflow"),
    ],
)
def test_bad_alpha_raises_as_cpu(dtype, alpha, message):
    a = sample(dtype, 4)
    with pytest.raises(RuntimeError, match=message):
        torch.add(a, a, alpha=alpha)
    with pytest.raises(RuntimeError, match=message):
        torch.add(a.to(DEVICE), a.to(DEVICE), alpha=alpha)


@pytest.mark.parametrize("dtype", [d for d in REFUSED if d not in QUANTIZED], ids=name)
def test_refused_dtypes_are_named(dtype):
    x = torch.arange(4 * dtype.itemsize, dtype=torch.uint8).view(dtype)
    d = x.to(DEVICE)  # any dtype copies to the device and back, byte for byte
    assert torch.equal(d.cpu().view(torch.uint8), x.view(torch.uint8))
    with pytest.raises(RuntimeError) as e:
        torch.add(d, d, out=torch.empty_like(d))
    assert f" {name(dtype)};" in str(e.value), str(e.value)


@pytest.mark.parametrize("dtype", QUANTIZED, ids=name)
def test_quantized_dtypes_cannot_reach_the_device(dtype):
    with pytest.raises((NotImplementedError, RuntimeError)):
        torch.empty(4, dtype=dtype, device=DEVICE)
