"""The device's random generator and random ops (kernels/ops/random.rs, regen_runtime::rng) against
CPU's: after the same seed (torch.manual_seed seeds both), rand, randn (the scalar path with its
cached sample, and Box–Muller in blocks of 16), randint/random_ (every overload), bernoulli with
a tensor p, randperm, multinomial, exponential_, geometric_, log_normal_, cauchy_, the normal overloads with
tensor parameters and RReLU's training slopes equal CPU's bit for bit, for float32, float64, bfloat16, float16 (integers for
random_; RReLU without float16, which CPU refuses) and contiguous, transposed and sliced outputs, which CPU fills in memory order. The
generator's state has torch.get_rng_state()'s bytes; torch.Generator(device="regen") draws its
own stream.

bernoulli_ with a float p and dropout cannot match CPU here: CPU draws them with MKL's MCG31 on
Intel processors (the device draws CPU's non-MKL path, bernoulli<double> per element), so their
distributions and CPU's formulas around the mask are tested instead."""

import pytest
import torch
import torch.nn.functional as F

import regen_device
from devtest import ATEN_VECTORISED, counted

FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]

# (storage shape, view): outputs written through a view, as in-place ops write them.
LAYOUTS = {
    "contiguous": ((37,), lambda t: t),
    "small": ((5,), lambda t: t),
    "matrix": ((6, 8), lambda t: t),
    "transposed": ((6, 8), lambda t: t.t()),
    "sliced": ((7, 10), lambda t: t[1:6:2, ::3]),
    "zero_dim": ((), lambda t: t),
    "empty": ((0, 3), lambda t: t),
}


def pair(shape, dtype, view):
    """The same view of an uninitialised storage on CPU and on the device."""
    return view(torch.zeros(shape, dtype=dtype)), view(torch.zeros(shape, dtype=dtype, device="regen"))


def same_draws(fn, shape, dtype, view, seed=1234):
    """fn(tensor) on CPU and on the device after the same seed: equal bits and equal states."""
    cpu, dev = pair(shape, dtype, view)
    torch.manual_seed(seed)
    fn(cpu)
    fn(dev)
    bits_equal(dev, cpu)
    assert torch.equal(torch.regen.get_rng_state(), torch.get_rng_state())


def bits_equal(got, expected):
    assert got.device.type == "regen"
    got = got.cpu()
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, expected.dtype, got.shape, expected.shape)
    if not ATEN_VECTORISED and got.is_floating_point():
        # The same draws, transformed by ATen's scalar build (see devtest.VECTOR_ROUNDING).
        torch.testing.assert_close(got, expected, equal_nan=True)
        return
    assert torch.equal(got.reshape(-1).view(torch.uint8), expected.reshape(-1).view(torch.uint8)), (got, expected)


# ---------------------------------------------------------------------------------------------
# The generator


def test_manual_seed_and_state_bytes_are_cpus():
    torch.manual_seed(2024)
    assert torch.regen.initial_seed() == 2024
    assert torch.equal(torch.regen.get_rng_state(), torch.get_rng_state())
    # Mid-stream, with cached normal samples of both widths.
    torch.randn(3)
    torch.randn(3, dtype=torch.float64)
    torch.randn(3, device="regen")
    torch.randn(3, device="regen", dtype=torch.float64)
    assert torch.equal(torch.regen.get_rng_state(), torch.get_rng_state())
    torch.manual_seed(-5)  # negative seeds wrap to 64 bits, as CPU's
    assert torch.regen.initial_seed() == torch.initial_seed()


def test_set_rng_state_round_trip():
    torch.manual_seed(7)
    torch.rand(100)
    torch.regen.set_rng_state(torch.get_rng_state())
    bits_equal(torch.rand(10, device="regen"), torch.rand(10))
    saved = torch.regen.get_rng_state()
    a = torch.randn(20, device="regen")
    torch.regen.set_rng_state(saved)
    assert torch.equal(torch.randn(20, device="regen").cpu(), a.cpu())
    s = torch.regen.seed()
    assert torch.regen.initial_seed() == s


def test_set_rng_state_errors_are_cpus():
    good = torch.get_rng_state()
    for bad in [good.float(), good[:10]]:
        with pytest.raises(Exception) as cpu:
            torch.set_rng_state(bad)
        with pytest.raises(type(cpu.value)):
            torch.regen.set_rng_state(bad)
    invalid = good.clone()
    invalid[8:12] = 0  # left = 0
    with pytest.raises(RuntimeError, match="Invalid mt19937 state"):
        torch.regen.set_rng_state(invalid)


def test_generator_objects_draw_their_own_streams():
    g = torch.Generator(device="regen")
    assert g.device.type == "regen"
    g.manual_seed(99)
    default_before = torch.regen.get_rng_state()
    with counted("uniform_"):
        a = torch.rand(50, generator=g, device="regen")
    bits_equal(a, torch.rand(50, generator=torch.Generator().manual_seed(99)))
    assert torch.equal(torch.regen.get_rng_state(), default_before)
    # Two generators with the same seed are independent, equal streams.
    g1 = torch.Generator(device="regen").manual_seed(5)
    g2 = torch.Generator(device="regen").manual_seed(5)
    x1 = torch.randn(40, generator=g1, device="regen")
    torch.randn(7, generator=g1, device="regen")
    x2 = torch.randn(40, generator=g2, device="regen")
    assert torch.equal(x1.cpu(), x2.cpu())
    assert g1.initial_seed() == 5
    # A generator's state is CPU's layout too, and forks through get/set_state (and clone_state).
    state = g1.get_state()
    cpu_g = torch.Generator()
    cpu_g.set_state(state)
    bits_equal(torch.rand(30, generator=g1, device="regen"), torch.rand(30, generator=cpu_g))
    if hasattr(g1, "clone_state"):
        fork = g1.clone_state()
        bits_equal(torch.randn(9, generator=fork, device="regen"), torch.randn(9, generator=g1, device="regen").cpu())


def test_default_generators_share_the_default_state():
    for gen in torch.regen.default_generators:
        gen.manual_seed(31)
        assert torch.regen.initial_seed() == 31
        assert torch.equal(gen.get_state(), torch.regen.get_rng_state())


def test_another_devices_generator_is_refused():
    with pytest.raises(RuntimeError, match="generator"):
        torch.empty(3, device="regen").uniform_(generator=torch.Generator())


def test_fork_rng_restores_the_device_state():
    torch.manual_seed(3)
    before = torch.regen.get_rng_state()
    with torch.random.fork_rng(device_type="regen"):
        torch.rand(10, device="regen")
    assert torch.equal(torch.regen.get_rng_state(), before)


# ---------------------------------------------------------------------------------------------
# Bit for bit with CPU


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform(dtype, layout):
    shape, view = LAYOUTS[layout]
    with counted("uniform_"):
        same_draws(lambda t: t.uniform_(-3.1, 4.3), shape, dtype, view)
    same_draws(lambda t: t.uniform_(), shape, dtype, view)


@pytest.mark.parametrize("size", [1, 5, 15, 16, 37, 100])
@pytest.mark.parametrize("dtype", FLOATS)
def test_normal_contiguous_sizes(dtype, size):
    with counted("normal_"):
        same_draws(lambda t: t.normal_(1.7, 3.3), (size,), dtype, lambda t: t)
    same_draws(lambda t: t.normal_(), (size,), dtype, lambda t: t, seed=size)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_normal_layouts(dtype, layout):
    shape, view = LAYOUTS[layout]
    same_draws(lambda t: t.normal_(-0.5, 2.0), shape, dtype, view)


def test_randn_and_rand_factories():
    for dtype in FLOATS:
        torch.manual_seed(11)
        c1, c2, c3 = torch.rand(33, dtype=dtype), torch.randn(7, 5, dtype=dtype), torch.randn(3, dtype=dtype)
        torch.manual_seed(11)
        d1, d2, d3 = (torch.rand(33, dtype=dtype, device="regen"), torch.randn(7, 5, dtype=dtype, device="regen"),
                      torch.randn(3, dtype=dtype, device="regen"))
        bits_equal(d1, c1)
        bits_equal(d2, c2)
        bits_equal(d3, c3)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "empty"])
@pytest.mark.parametrize("dtype", INTS + [torch.bool] + FLOATS)
def test_random_overloads(dtype, layout):
    shape, view = LAYOUTS[layout]
    with counted("random_"):
        same_draws(lambda t: t.random_(), shape, dtype, view)
    hi = 2 if dtype == torch.bool else 100
    with counted("random_.to"):
        same_draws(lambda t: t.random_(hi), shape, dtype, view)
    lo = 0 if dtype in (torch.uint8, torch.bool) else -7
    with counted("random_.from"):
        same_draws(lambda t: t.random_(lo, hi), shape, dtype, view)
    same_draws(lambda t: t.random_(lo, None), shape, dtype, view)
    if dtype in (torch.int64, torch.float32, torch.float64, torch.bfloat16):
        same_draws(lambda t: t.random_(-(2**63), None), shape, dtype, view)
    if dtype == torch.int64:
        same_draws(lambda t: t.random_(-(2**40), 2**40), shape, dtype, view)  # 64-bit draws


def test_randint():
    torch.manual_seed(5)
    expected = [torch.randint(-5, 1000, (40,)), torch.randint(10, (3, 4), dtype=torch.int32), torch.randint(3, 9, (17,), dtype=torch.float16)]
    torch.manual_seed(5)
    got = [torch.randint(-5, 1000, (40,), device="regen"), torch.randint(10, (3, 4), dtype=torch.int32, device="regen"),
           torch.randint(3, 9, (17,), dtype=torch.float16, device="regen")]
    for g, e in zip(got, expected):
        bits_equal(g, e)


@pytest.mark.parametrize("p_dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bool, torch.int64, torch.bfloat16])
def test_bernoulli_tensor_p(dtype, p_dtype):
    p = torch.rand(6, 8, generator=torch.Generator().manual_seed(0)).to(p_dtype)
    p[0, 0], p[1, 1] = 0.0, 1.0
    for view in [lambda t: t, lambda t: t.t()]:
        with counted("bernoulli_.Tensor"):
            same_draws(lambda t: t.bernoulli_(view(p).to(t.device)), (6, 8), dtype, view)
    # p broadcast over self's rows, and torch.bernoulli(p) (bernoulli.out underneath).
    same_draws(lambda t: t.bernoulli_(p[0].to(t.device)), (6, 8), dtype, lambda t: t)
    torch.manual_seed(8)
    expected = torch.bernoulli(p.float())
    torch.manual_seed(8)
    bits_equal(torch.bernoulli(p.float().to("regen")), expected)


def test_bernoulli_tensor_p_out_of_range_is_cpus_error():
    p = torch.tensor([0.5, 2.0, 0.1])
    with pytest.raises(RuntimeError, match="p_in >= 0"):
        torch.empty(3).bernoulli_(p)
    with pytest.raises(RuntimeError, match="p_in >= 0"):
        torch.empty(3, device="regen").bernoulli_(p.to("regen"))


@pytest.mark.parametrize("n", [0, 1, 2, 50, 1000])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32, torch.float64, torch.float16])
def test_randperm(n, dtype):
    torch.manual_seed(n)
    expected = torch.randperm(n, dtype=dtype)
    torch.manual_seed(n)
    with counted("randperm.generator_out"):
        got = torch.randperm(n, dtype=dtype, device="regen")
    bits_equal(got, expected)


def test_randperm_errors_are_cpus():
    with pytest.raises(RuntimeError, match="cannot be greater than 2049"):
        torch.randperm(3000, dtype=torch.float16)
    with pytest.raises(RuntimeError, match="cannot be greater than 2049"):
        torch.randperm(3000, dtype=torch.float16, device="regen")
    # bfloat16 has no such check on CPU.
    torch.manual_seed(1)
    expected = torch.randperm(300, dtype=torch.bfloat16)
    torch.manual_seed(1)
    bits_equal(torch.randperm(300, dtype=torch.bfloat16, device="regen"), expected)
    with pytest.raises(RuntimeError, match="n must be non-negative"):
        torch.randperm(-2, out=torch.empty(0, dtype=torch.int64, device="regen"))


DISTRIBUTIONS = {
    "exponential_": (lambda t: t.exponential_(1.7), FLOATS),
    "geometric_": (lambda t: t.geometric_(0.3), FLOATS + [torch.int64, torch.int32]),
    "log_normal_": (lambda t: t.log_normal_(0.2, 0.7), FLOATS),
    "cauchy_": (lambda t: t.cauchy_(0.3, 1.7), FLOATS),
}


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("op", DISTRIBUTIONS)
def test_distributions(op, layout):
    fn, dtypes = DISTRIBUTIONS[op]
    shape, view = LAYOUTS[layout]
    for dtype in dtypes:
        with counted(op):
            same_draws(fn, shape, dtype, view)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_normal_tensor_overloads(dtype):
    mean = torch.linspace(-2, 2, 20, dtype=dtype).reshape(4, 5)
    std = torch.linspace(0.5, 3, 5, dtype=dtype)
    cases = [
        ("normal.Tensor_float", lambda m, s: torch.normal(m, 2.5)),
        ("normal.float_Tensor", lambda m, s: torch.normal(0.75, s.expand(4, 5))),
        ("normal.Tensor_Tensor", lambda m, s: torch.normal(m, s)),
        ("normal.Tensor_Tensor_out", lambda m, s: torch.normal(m, s, out=torch.empty(0, dtype=dtype, device=m.device))),
        ("normal.Tensor_float_out", lambda m, s: torch.normal(m, 1.5, out=torch.empty(4, 5, dtype=dtype, device=m.device))),
        ("normal.float_Tensor_out", lambda m, s: torch.normal(-1.0, s, out=torch.empty(5, dtype=dtype, device=m.device))),
    ]
    for key, fn in cases:
        torch.manual_seed(21)
        expected = fn(mean, std)
        torch.manual_seed(21)
        with counted(key):
            got = fn(mean.to("regen"), std.to("regen"))
        bits_equal(got, expected)


# ---------------------------------------------------------------------------------------------
# Errors


ERRORS = [
    lambda t: t.normal_(0, -1),
    lambda t: t.uniform_(2, 1),
    lambda t: t.random_(5, 2),
    lambda t: t.exponential_(-1),
    lambda t: t.geometric_(2),
    lambda t: t.log_normal_(0, -1),
    lambda t: t.cauchy_(0, -1),
    lambda t: t.bernoulli_(1.5),
    lambda t: t.to(torch.int64).exponential_(),
    lambda t: t.to(torch.int64).uniform_(),
    lambda t: t.to(torch.int64).normal_(),
    lambda t: t.to(torch.int8).random_(0, 1000),
    # RReLU: noise of another shape; training in an integer dtype or float16.
    lambda t: torch.ops.aten.rrelu_with_noise(t, torch.empty(4, device=t.device), 0.1, 0.3, True),
    lambda t: torch.ops.aten.rrelu_with_noise(t.long(), torch.empty(3, dtype=torch.long, device=t.device), 0.1, 0.3, True),
    lambda t: torch.ops.aten.rrelu_with_noise(t.half(), torch.empty(3, dtype=torch.half, device=t.device), 0.1, 0.3, True),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_are_cpus(k):
    fn = ERRORS[k]
    with pytest.raises(Exception) as cpu:
        fn(torch.empty(3))
    with pytest.raises(type(cpu.value)) as dev:
        fn(torch.empty(3, device="regen"))
    assert str(dev.value).splitlines()[0].endswith(str(cpu.value).splitlines()[0]), (dev.value, cpu.value)


# ---------------------------------------------------------------------------------------------
# bernoulli with a float p and dropout: distributions (CPU draws them with MKL on Intel)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool, torch.int32, torch.float16])
def test_bernoulli_float_p_distribution(dtype):
    torch.manual_seed(0)
    with counted("bernoulli_.float"):
        x = torch.empty(200_000, dtype=dtype, device="regen").bernoulli_(0.3)
    values = x.cpu().double()
    assert set(values.unique().tolist()) <= {0.0, 1.0}
    # 0.3 +- 5 standard errors of the mean (sd 0.458 / sqrt(2e5)).
    assert abs(values.mean().item() - 0.3) < 5 * 0.458 / 200_000**0.5
    # Reproducible from the seed, and all-or-nothing at the ends.
    torch.manual_seed(0)
    assert torch.equal(torch.empty(200_000, dtype=dtype, device="regen").bernoulli_(0.3).cpu(), x.cpu())
    assert torch.empty(50, dtype=dtype, device="regen").bernoulli_(0.0).cpu().double().sum() == 0
    assert torch.empty(50, dtype=dtype, device="regen").bernoulli_(1.0).cpu().double().sum() == 50


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_dropout_matches_cpus_formula(dtype):
    x = torch.randn(64, 50, generator=torch.Generator().manual_seed(1)).to(dtype)
    xd = x.to("regen").requires_grad_()
    torch.manual_seed(4)
    with counted("native_dropout"):
        out = F.dropout(xd, 0.4, training=True)
    # CPU's output for the device's mask: input.mul(mask).mul_(1 / (1 - p)).
    y = out.detach().cpu()
    mask = y != 0
    expected = x.mul(mask).mul_(1 / (1 - 0.4))
    assert torch.equal(y[mask], expected[mask])
    keep = mask.double().mean().item()
    assert abs(keep - 0.6) < 5 * (0.24 / mask.numel()) ** 0.5
    grad = torch.randn(64, 50, generator=torch.Generator().manual_seed(2)).to(dtype)
    with counted("native_dropout_backward"):
        out.backward(grad.to("regen"))
    assert torch.equal(xd.grad.cpu(), grad.mul(mask).mul(1 / (1 - 0.4)))


def test_native_dropout_edges():
    x = torch.randn(5, 6, device="regen")
    out, mask = torch.native_dropout(x, 0.3, False)
    assert mask.dtype == torch.bool and bool(mask.all())
    assert torch.equal(out.cpu(), x.cpu())
    out, mask = torch.native_dropout(x, 1.0, True)
    assert not bool(mask.any()) and not bool(out.cpu().any())
    out, mask = torch.native_dropout(x, 0.0, True)
    assert bool(mask.all()) and torch.equal(out.cpu(), x.cpu())
    e = torch.empty(0, 3, device="regen")
    out, mask = torch.native_dropout(e, 0.5, True)
    assert out.shape == (0, 3) and mask.shape == (0, 3) and mask.dtype == e.dtype
    # Transposed input: the mask and output keep its layout.
    t = torch.randn(6, 5, device="regen").t()
    out, mask = torch.native_dropout(t, 0.5, True)
    assert mask.stride() == t.stride() and out.shape == t.shape


# ---------------------------------------------------------------------------------------------
# RReLU: one slope per non-positive element, drawn in row-major order (bit for bit with CPU)


def rrelu_input(dtype, layout):
    """Values of both signs with zeros (drawn for), a NaN and infinities (not drawn for)."""
    x = torch.randn(7, 9, generator=torch.Generator().manual_seed(3)) * 3
    x[0, :3] = torch.tensor([0.0, -0.0, float("nan")])
    x[1, :2] = torch.tensor([float("inf"), float("-inf")])
    x = x.to(dtype)
    return x.t() if layout == "transposed" else x[1::2, ::2] if layout == "sliced" else x


# CPU's training kernel takes these (float16 raises, on the device too: ERRORS).
RRELU_FLOATS = [torch.float32, torch.float64, torch.bfloat16]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("dtype", RRELU_FLOATS)
def test_rrelu_training_matches_cpu(dtype, layout):
    x = rrelu_input(dtype, layout)
    xc, xd = x.clone().requires_grad_(), x.to("regen").requires_grad_()
    torch.manual_seed(11)
    expected = F.rrelu(xc, 0.1, 0.4, training=True)
    with counted("rrelu_with_noise"):
        got = F.rrelu(xd, 0.1, 0.4, training=True)
    bits_equal(got.detach(), expected.detach())
    assert torch.equal(torch.regen.get_rng_state(), torch.get_rng_state())
    # The backward multiplies by the kept slopes (ones where nothing was drawn).
    grad = torch.randn(x.shape, generator=torch.Generator().manual_seed(5)).to(dtype)
    expected.backward(grad)
    got.backward(grad.to("regen"))
    bits_equal(xd.grad, xc.grad)
    # In place (rrelu_with_noise_), from the same seed: the same values.
    y = x.to("regen")
    torch.manual_seed(11)
    with counted("rrelu_with_noise_"):
        F.rrelu(y, 0.1, 0.4, training=True, inplace=True)
    bits_equal(y, expected.detach())


@pytest.mark.parametrize("dtype", RRELU_FLOATS)
def test_rrelu_with_noise_out_and_noise(dtype):
    x = rrelu_input(dtype, "contiguous")
    noise, noise_d = torch.empty_like(x), torch.empty_like(x, device="regen")
    # The device resizes an empty `out`; CPU's kernel writes one of the wrong size out of bounds
    # (torch 2.15 crashes), so CPU gets one of the right size.
    out, out_d = torch.empty_like(x), torch.empty(0, dtype=dtype, device="regen")
    torch.manual_seed(2)
    torch.ops.aten.rrelu_with_noise.out(x, noise, 0.125, 1 / 3, True, out=out)
    with counted("rrelu_with_noise.out"):
        torch.ops.aten.rrelu_with_noise.out(x.to("regen"), noise_d, 0.125, 1 / 3, True, out=out_d)
    bits_equal(out_d, out)
    bits_equal(noise_d, noise)
    # Drawn slopes lie in [lower, upper]; elsewhere the factor is one.
    drawn = x <= 0
    assert bool(((noise[drawn] >= 0.125) & (noise[drawn] <= 1 / 3 + 1e-3)).all())
    assert bool((noise[~drawn] == 1).all())
    # Evaluation: leaky_relu with the mean slope, the noise untouched.
    before = noise_d.clone()
    with counted("rrelu_with_noise"):
        got = torch.ops.aten.rrelu_with_noise(x.to("regen"), noise_d, 0.125, 1 / 3, False)
    bits_equal(got, torch.ops.aten.rrelu_with_noise(x, noise, 0.125, 1 / 3, False))
    assert torch.equal(noise_d.cpu(), before.cpu())


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_multinomial(dtype, replacement):
    probs = torch.rand(4, 30, generator=torch.Generator().manual_seed(3)).to(dtype)
    probs[1, :10] = 0
    for p, n in [(probs, 1), (probs, 7), (probs[2], 12), (probs.t()[:8], 3)]:
        torch.manual_seed(17)
        expected = torch.multinomial(p, n, replacement)
        state = torch.get_rng_state()
        torch.manual_seed(17)
        with counted("multinomial"):
            got = torch.multinomial(p.to("regen"), n, replacement)
        bits_equal(got, expected)
        assert torch.equal(torch.regen.get_rng_state(), state)
    out = torch.empty(0, dtype=torch.int64, device="regen")
    torch.manual_seed(2)
    expected = torch.multinomial(probs, 5, replacement)
    torch.manual_seed(2)
    with counted("multinomial.out"):
        torch.multinomial(probs.to("regen"), 5, replacement, out=out)
    bits_equal(out, expected)


MULTINOMIAL_ERRORS = [
    (torch.ones(2, 2, 2), 1, True),
    (torch.ones(3, dtype=torch.int64), 1, True),
    (torch.ones(3), 0, True),
    (torch.ones(3), 4, False),
    (torch.tensor([0.5, -1.0, 0.5]), 1, False),
    (torch.tensor([0.5, float("inf"), 0.5]), 1, True),
    (torch.zeros(2, 3), 1, True),
    (torch.zeros(2, 3), 1, False),
]


@pytest.mark.parametrize("k", range(len(MULTINOMIAL_ERRORS)))
def test_multinomial_errors_are_cpus(k):
    p, n, replacement = MULTINOMIAL_ERRORS[k]
    with pytest.raises(Exception) as cpu:
        torch.multinomial(p, n, replacement)
    with pytest.raises(type(cpu.value)) as dev:
        torch.multinomial(p.to("regen"), n, replacement)
    assert str(dev.value).splitlines()[0].endswith(str(cpu.value).splitlines()[0]), (dev.value, cpu.value)
