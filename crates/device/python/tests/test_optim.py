"""torch.optim on the "regen" device: the fused steps (kernels/ops/optim.rs) against CPU's fused
kernels and CPU's single-tensor optimizers over several steps, with amsgrad, maximize, weight
decay, nesterov, a tensor learning rate, bfloat16 and float64; grad_scale and found_inf of the ops
called directly; the foreach and single-tensor paths of the unfused optimizers, all native (no
copy to CPU)."""

import copy

import pytest
import torch

from devtest import counted, make, no_cpu_copy

CASES = [
    ("Adam", dict(lr=1e-2), "_fused_adam_"),
    ("Adam", dict(lr=1e-2, amsgrad=True, weight_decay=0.1, maximize=True), "_fused_adam_"),
    ("Adam", dict(lr=torch.tensor(1e-2)), "_fused_adam_.tensor_lr"),
    ("AdamW", dict(lr=1e-2, weight_decay=0.1), "_fused_adamw_"),
    ("AdamW", dict(lr=1e-2, betas=(0.2, 0.9), amsgrad=True), "_fused_adamw_"),
    ("SGD", dict(lr=0.1), "_fused_sgd_"),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01), "_fused_sgd_"),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True), "_fused_sgd_"),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1), "_fused_adagrad_"),
]

TOL = {
    torch.float32: dict(rtol=1e-5, atol=1e-6),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
}


def params(dtype, device="cpu"):
    # Sizes below and above a vector's width, and a 0-dim parameter.
    return [make(s, dtype, seed=i).to(device).requires_grad_() for i, s in enumerate([(3, 5), (37,), ()])]


def steps(opt_cls, kwargs, ps, n=3):
    opt = opt_cls(ps, **kwargs)
    for k in range(n):
        for i, p in enumerate(ps):
            p.grad = make(p.shape, p.dtype, seed=10 * k + i).to(p.device)
        opt.step()
    return opt


def compare_state(dev_opt, cpu_opt, dev_ps, cpu_ps, dtype):
    for d, c in zip(dev_ps, cpu_ps):
        torch.testing.assert_close(d.detach().cpu(), c.detach(), **TOL[dtype])
    for d, c in zip(dev_ps, cpu_ps):
        for key, value in cpu_opt.state[c].items():
            got = dev_opt.state[d][key]
            if torch.is_tensor(value):
                torch.testing.assert_close(got.cpu(), value, **TOL[dtype])


@pytest.mark.parametrize("name,kwargs,op", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_fused_step_matches_cpu(name, kwargs, op, dtype):
    cls = getattr(torch.optim, name)
    cpu_ps = params(dtype)
    dev_ps = [p.detach().to("regen").requires_grad_() for p in cpu_ps]
    kw = dict(kwargs, fused=True)
    with counted(op), no_cpu_copy():
        dev_opt = steps(cls, copy.deepcopy(kw), dev_ps)
    # CPU's own fused kernel: the same algorithm.
    cpu_opt = steps(cls, copy.deepcopy(kw), cpu_ps)
    compare_state(dev_opt, cpu_opt, dev_ps, cpu_ps, dtype)
    # And the reference single-tensor optimizer, within its own rounding.
    ref_ps = [p.detach().clone().requires_grad_() for p in params(dtype)]
    ref_opt = steps(cls, dict(kwargs, foreach=False), ref_ps)
    # (The single-tensor path computes with a tensor lr in its own dtype: float32.)
    loose = {torch.float32: dict(rtol=1e-4, atol=1e-5), torch.float64: dict(rtol=1e-7, atol=1e-9)}
    for d, r in zip(dev_ps, ref_ps):
        torch.testing.assert_close(d.detach().cpu(), r.detach(), **loose.get(dtype, TOL[dtype]))


@pytest.mark.parametrize("found", [0.0, 1.0])
def test_grad_scale_and_found_inf(found):
    """The GradScaler's arguments, through the op: gradients are unscaled in place, and a found
    inf skips the step entirely."""

    def run(device):
        ps = [make((4, 9), torch.float32, seed=s).to(device) for s in (1, 2)]
        gs = [make((4, 9), torch.float32, seed=s).to(device) * 8 for s in (3, 4)]
        m = [torch.zeros_like(p) for p in ps]
        v = [torch.zeros_like(p) for p in ps]
        st = [torch.tensor(1.0, device=device) for _ in ps]
        scale = torch.tensor(8.0, device=device)
        inf = torch.tensor(found, device=device)
        torch._fused_adamw_(
            ps, gs, m, v, [], st, lr=0.01, beta1=0.9, beta2=0.99, weight_decay=0.1, eps=1e-8,
            amsgrad=False, maximize=False, grad_scale=scale, found_inf=inf,
        )
        return ps + gs + m + v

    with counted("_fused_adamw_"):
        got = run("regen")
    for g, e in zip(got, run("cpu")):
        torch.testing.assert_close(g.cpu(), e, rtol=1e-6, atol=1e-7)


def test_errors():
    p = [torch.zeros(3, device="regen")]
    with pytest.raises(RuntimeError, match="tensor"):
        torch._fused_sgd_(p, [torch.zeros(4, device="regen")], [], weight_decay=0.0, momentum=0.0, lr=0.1,
                          dampening=0.0, nesterov=False, maximize=False, is_first_step=False)
    with pytest.raises(RuntimeError, match="max_exp_avg_sqs"):
        z = [torch.zeros(3, device="regen")]
        torch._fused_adam_(p, z, z, z, [], [torch.tensor(1.0, device="regen")], lr=0.1, beta1=0.9, beta2=0.9,
                           weight_decay=0.0, eps=1e-8, amsgrad=True, maximize=False)


@pytest.mark.parametrize("foreach", [True, False])
@pytest.mark.parametrize("name,kwargs", [
    ("Adam", dict(lr=1e-2, weight_decay=0.1)),
    ("AdamW", dict(lr=1e-2, amsgrad=True)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("RMSprop", dict(lr=1e-2, momentum=0.5, centered=True)),
    ("Adagrad", dict(lr=0.1)),
])
def test_unfused_optimizers_run_natively(name, kwargs, foreach):
    """The foreach (the device's default) and single-tensor paths: composite ops whose pieces are
    native, so nothing is copied to CPU."""
    cls = getattr(torch.optim, name)
    cpu_ps = params(torch.float32)
    dev_ps = [p.detach().to("regen").requires_grad_() for p in cpu_ps]
    with no_cpu_copy():
        dev_opt = steps(cls, dict(kwargs, foreach=foreach), dev_ps)
    cpu_opt = steps(cls, dict(kwargs, foreach=foreach), cpu_ps)
    compare_state(dev_opt, cpu_opt, dev_ps, cpu_ps, torch.float32)

