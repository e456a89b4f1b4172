"""The rejection samplers (kernels/ops/samplers.rs) against CPU's: after the same seed, poisson
(both of its algorithms, every float dtype), binomial (inversion and BTRS, on p and on 1 - p),
_standard_gamma (with the boost below alpha = 1) and the gamma's reparameterised gradient equal
CPU's bit for bit (_sample_dirichlet's gamma draws too, its normalisation within an ulp), for contiguous, transposed, sliced and
broadcast inputs, and leave the generator where CPU's is. torch.distributions' samplers and
rsample gradients run on the device; errors are CPU's."""

import pytest
import torch

from devtest import counted

LAYOUTS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.t(),
    "sliced": lambda t: t[1::2, ::3],
}


def bits_equal(got, expected):
    assert got.device.type == "regen"
    got, expected = got.cpu().contiguous(), expected.contiguous()
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, expected.dtype, got.shape, expected.shape)
    assert torch.equal(got.reshape(-1).view(torch.uint8), expected.reshape(-1).view(torch.uint8)), (got, expected)


def same_samples(fn, *inputs, seed=99):
    """fn(*inputs) on CPU and on the device after the same seed: equal bits, equal generator states."""
    torch.manual_seed(seed)
    expected = fn(*inputs)
    got = fn(*(t.to("regen") for t in inputs))
    bits_equal(got, expected)
    assert torch.equal(torch.regen.get_rng_state(), torch.get_rng_state())
    return got


def rates(dtype, layout, low, high):
    g = torch.Generator().manual_seed(5)
    t = (torch.rand(8, 9, generator=g, dtype=torch.float64) * (high - low) + low).to(dtype)
    t[0, 0] = 0  # a zero rate draws nothing
    return LAYOUTS[layout](t)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("low,high", [(0.0, 9.0), (10.0, 500.0)], ids=["product", "ptrs"])
def test_poisson(dtype, layout, low, high):
    with counted("poisson"):
        same_samples(torch.poisson, rates(dtype, layout, low, high))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("count_high", [15.0, 400.0], ids=["inversion", "btrs"])
def test_binomial(dtype, layout, count_high):
    count = rates(dtype, layout, 0.0, count_high).round()
    g = torch.Generator().manual_seed(6)
    prob = LAYOUTS[layout](torch.rand(8, 9, generator=g, dtype=dtype))
    prob[0, 1] = 0.0
    prob[0, 2] = 1.0
    prob[1, 1] = 0.97  # 1 - p is the rarer outcome
    with counted("binomial"):
        same_samples(torch.binomial, count, prob)


def test_binomial_broadcasts_prob():
    count = torch.full((4, 5), 30.0)
    prob = torch.tensor([0.1, 0.5, 0.7, 0.9, 0.2])
    same_samples(torch.binomial, count, prob)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_standard_gamma(dtype, layout):
    alpha = rates(dtype, layout, 0.05, 20.0)
    alpha[1, 1] = 0.5  # boosted by a uniform power
    with counted("_standard_gamma"):
        same_samples(torch._standard_gamma, alpha)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sample_dirichlet(dtype):
    alpha = rates(dtype, "contiguous", 0.1, 5.0)
    alpha[0, 0] = 0.3
    torch.manual_seed(99)
    expected = torch._sample_dirichlet(alpha)
    with counted("_sample_dirichlet"):
        got = torch._sample_dirichlet(alpha.to("regen"))
    # The gamma draws are CPU's (the generators end equal); the normalising sums are the
    # device's, whose order differs from SumKernel.cpp's: a double can differ in its last bit.
    assert torch.equal(torch.regen.get_rng_state(), torch.get_rng_state())
    torch.testing.assert_close(got.cpu(), expected, rtol=4 * torch.finfo(dtype).eps, atol=0)
    assert torch.allclose(got.cpu().sum(-1).double(), torch.ones(8, dtype=torch.float64), atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_standard_gamma_grad(dtype):
    # Each branch: small x (Taylor), large alpha near and away from x (Rice), the rational fit.
    alpha = torch.tensor([0.5, 3.0, 20.0, 20.0, 20.0, 2.0, 7.5], dtype=dtype)
    x = torch.tensor([0.3, 0.1, 20.5, 5.0, 40.0, 1.7, 9.0], dtype=dtype)
    expected = torch._standard_gamma_grad(alpha, x)
    with counted("_standard_gamma_grad"):
        got = torch._standard_gamma_grad(alpha.to("regen"), x.to("regen"))
    bits_equal(got, expected)


def test_distributions_sample_and_rsample_on_the_device():
    """torch.distributions draws through these ops; the gradient of a Gamma rsample flows back."""
    for make in [
        lambda d: torch.distributions.Poisson(torch.tensor([1.0, 30.0], device=d)),
        lambda d: torch.distributions.Binomial(20, torch.tensor([0.2, 0.8], device=d)),
        lambda d: torch.distributions.Beta(torch.tensor([0.5, 2.0], device=d), torch.tensor([1.5, 3.0], device=d)),
        lambda d: torch.distributions.Dirichlet(torch.tensor([0.5, 1.0, 2.0], device=d)),
    ]:
        torch.manual_seed(3)
        expected = make("cpu").sample((4,))
        torch.manual_seed(3)
        bits_equal(make("regen").sample((4,)), expected)

    grads = []
    for d in ["cpu", "regen"]:
        torch.manual_seed(4)
        conc = torch.tensor([0.7, 2.5, 9.0], dtype=torch.float64, device=d, requires_grad=True)
        torch.distributions.Gamma(conc, torch.ones(3, dtype=torch.float64, device=d)).rsample((5,)).sum().backward()
        grads.append(conc.grad)
    # The per-sample gradients are CPU's bits; summing them over the samples is the device's sum,
    # whose order differs from CPU's.
    torch.testing.assert_close(grads[1].cpu(), grads[0], rtol=1e-14, atol=0)


@pytest.mark.parametrize(
    "fn,args",
    [
        (torch.poisson, [torch.tensor([1.0, -2.0])]),
        (torch.poisson, [torch.tensor([1, 2])]),
        (torch.binomial, [torch.tensor([3, 4]), torch.tensor([0.5, 0.5])]),
        (torch.binomial, [torch.tensor([3.0, 4.0]), torch.tensor([1, 0])]),
        (torch.binomial, [torch.tensor([3.0, 4.0], dtype=torch.bfloat16), torch.tensor([0.5, 0.5], dtype=torch.bfloat16)]),
        (torch._standard_gamma, [torch.tensor([1.0, 2.0], dtype=torch.float16)]),
    ],
    ids=["negative-rate", "int-rate", "int-count", "int-prob", "bf16-binomial", "half-gamma"],
)
def test_errors_are_cpus(fn, args):
    with pytest.raises(Exception) as cpu:
        fn(*args)
    with pytest.raises(type(cpu.value)) as dev:
        fn(*(a.to("regen") for a in args))
    assert str(dev.value).splitlines()[0].endswith(str(cpu.value).splitlines()[0]), (dev.value, cpu.value)
