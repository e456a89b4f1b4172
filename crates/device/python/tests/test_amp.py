"""Mixed precision on the "regen" device: torch.autocast(device_type="regen") casts what CPU
autocast casts, by CPU's policies (regen.toml `autocast = "cpu"`), and torch.amp.GradScaler("regen")
trains through the device's native `_amp_foreach_non_finite_check_and_unscale_` and
`_amp_update_scale_` (kernels/ops/amp.rs), which match CPU's kernels bit for bit."""

import pytest
import torch
import torch.nn.functional as F

from devtest import counted, make

LOW = [torch.bfloat16, torch.float16]
UNSCALE = "_amp_foreach_non_finite_check_and_unscale_"
UPDATE = "_amp_update_scale_"


def registrations(key):
    return sorted(op for op in torch._C._dispatch_get_registrations_for_dispatch_key(key) if op.startswith("aten::"))


def test_autocast_registrations_are_cpus():
    assert registrations("AutocastPrivateUse1") == registrations("AutocastCPU")
    assert torch.amp.is_autocast_available("regen")
    assert set(torch.regen.get_amp_supported_dtype()) == {torch.float16, torch.bfloat16}


# Each case: a function of CPU tensors made from float32 inputs, run under autocast on both devices.
def _linear(x, w, b):
    return F.linear(x, w, b)


def _conv(x, w, b):
    return F.conv2d(x.reshape(2, 3, 4, 4), w[0].reshape(4, 3, 2, 2), b[:4], padding=1)


def _matmul(x, w, b):
    return x @ w.t()


def _mse(x, w, b):
    # mse_loss is in CPU's fp32 list: its low-precision inputs are cast back up.
    y = F.linear(x, w)
    return F.mse_loss(y, torch.zeros_like(y))


def _cat(x, w, b):
    # cat is in CPU's promote list: a bfloat16 and a float32 tensor join as float32.
    return torch.cat([F.linear(x, w), x[:, :4]], dim=1)


def _relu(x, w, b):
    # On no list: runs in its input's dtype.
    return F.relu(F.linear(x, w, b)), F.relu(x)


CASES = [_linear, _conv, _matmul, _mse, _cat, _relu]


def _inputs():
    return make((2, 48), torch.float32, 1), make((48, 48), torch.float32, 2) * 0.2, make((48,), torch.float32, 3)


@pytest.mark.parametrize("dtype", LOW, ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_autocast_matches_cpu(case, dtype):
    x, w, b = _inputs()
    with torch.autocast("cpu", dtype=dtype):
        want = case(x, w, b)
    with torch.autocast("regen", dtype=dtype):
        got = case(x.to("regen"), w.to("regen"), b.to("regen"))
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    for g, c in zip(got, want):
        assert g.device.type == "regen"
        assert g.dtype == c.dtype, case.__name__
        torch.testing.assert_close(g.cpu(), c, rtol=2e-2, atol=2e-2)


def test_autocast_casts_to_low_precision_and_nests():
    x, w, b = (t.to("regen") for t in _inputs())
    assert F.linear(x, w, b).dtype == torch.float32
    with torch.autocast("regen", dtype=torch.bfloat16):
        assert torch.is_autocast_enabled("regen") and torch.get_autocast_dtype("regen") == torch.bfloat16
        assert F.linear(x, w, b).dtype == torch.bfloat16
        with torch.autocast("regen", enabled=False):
            assert F.linear(x, w, b).dtype == torch.float32
        with torch.autocast("regen", dtype=torch.float16):
            assert F.linear(x, w, b).dtype == torch.float16
        assert F.linear(x, w, b).dtype == torch.bfloat16
        # A float64 input is left alone, as on CPU.
        assert (x.double() @ w.double()).dtype == torch.float64
    assert F.linear(x, w, b).dtype == torch.float32
    # CPU's autocast leaves the device's tensors alone, and the device's leaves CPU's alone.
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert F.linear(x, w, b).dtype == torch.float32
    with torch.autocast("regen", dtype=torch.bfloat16):
        assert F.linear(x.cpu(), w.cpu(), b.cpu()).dtype == torch.float32


def test_device_module_reads_and_writes_torchs_autocast_state():
    # torch 2.1 to 2.3's torch.autocast keeps its state through these four functions of the device
    # module; later releases keep it themselves: both must see one state.
    mod = torch.regen
    assert not mod.is_autocast_enabled()
    before = torch.get_autocast_dtype("regen")
    assert mod.get_autocast_dtype() == before
    with torch.autocast("regen", dtype=torch.float16):
        assert mod.is_autocast_enabled() and mod.get_autocast_dtype() == torch.float16
        with torch.autocast("regen", enabled=False):
            assert not mod.is_autocast_enabled()
        assert mod.is_autocast_enabled()
    assert not mod.is_autocast_enabled() and mod.get_autocast_dtype() == before
    try:
        for dtype in (torch.bfloat16, torch.float32, torch.float64, torch.float16):
            mod.set_autocast_dtype(dtype)
            assert torch.get_autocast_dtype("regen") == dtype == mod.get_autocast_dtype()
        mod.set_autocast_enabled(True)
        assert torch.is_autocast_enabled("regen")
        x = torch.ones(2, 2, device="regen")
        assert torch.mm(x, x).dtype == torch.float16
    finally:
        mod.set_autocast_enabled(False)
        mod.set_autocast_dtype(before)
    assert not torch.is_autocast_enabled("regen")
    with pytest.raises(TypeError, match="regen: autocast casts to one of .* not torch.int32"):
        mod.set_autocast_dtype(torch.int32)
    assert mod.get_autocast_dtype() == before


def test_autocast_backward_gives_float32_gradients():
    x, w, b = _inputs()
    grads = []
    for device in ("cpu", "regen"):
        wd = w.to(device).detach().requires_grad_()
        with torch.autocast(device, dtype=torch.bfloat16):
            loss = F.mse_loss(F.linear(x.to(device), wd, b.to(device)), torch.ones(2, 48, device=device))
        loss.backward()
        assert wd.grad.dtype == torch.float32
        grads.append(wd.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], rtol=2e-2, atol=2e-3)


# ---------------------------------------------------------------------------------------------
# GradScaler


def _train(device, steps=7, inf_step=2):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler(device, init_scale=2.0**10, growth_interval=2)
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(32, 8, generator=g), torch.randn(32, 1, generator=g)
    x, y = x.to(device), y.to(device)
    losses, scales = [], []
    for step in range(steps):
        opt.zero_grad()
        with torch.autocast(device, dtype=torch.bfloat16):
            loss = F.mse_loss(model(x).float(), y)
        scaler.scale(loss).backward()
        if step == inf_step:
            with torch.no_grad():
                model[0].weight.grad[0, 0] = float("inf")
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
        scales.append(scaler.get_scale())
    return losses, scales, [p.detach().cpu() for p in model.parameters()]


def test_grad_scaler_trains_like_cpu():
    cpu_losses, cpu_scales, cpu_params = _train("cpu")
    with counted(UNSCALE), counted(UPDATE):
        losses, scales, params = _train("regen")
    # The inf step is skipped and backs the scale off; two clean steps in a row grow it.
    assert cpu_scales == [2.0**10, 2.0**11, 2.0**10, 2.0**10, 2.0**11, 2.0**11, 2.0**12]
    assert scales == cpu_scales
    assert losses[2] == pytest.approx(losses[3], rel=1e-6), "the inf step must not update the model"
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(cpu_losses), rtol=2e-2, atol=1e-3)
    assert losses[-1] < losses[0]
    for p, c in zip(params, cpu_params):
        torch.testing.assert_close(p, c, rtol=2e-2, atol=2e-3)


# ---------------------------------------------------------------------------------------------
# The kernels called directly, against CPU's


def _layouts(dtype, seed):
    base = make((6, 5), dtype, seed) * 100
    return [
        base.clone(),
        base.clone().t(),
        base.clone()[::2, 1:],
        make((), dtype, seed + 1) * 3,
        torch.empty(0, 3, dtype=dtype),
    ]


def _unscale_both(tensors, found_inf, inv_scale):
    cpu = [_copy(t, "cpu") for t in tensors]
    dev = [_copy(t, "regen") for t in tensors]
    f_cpu, f_dev = torch.tensor([found_inf]), torch.tensor([found_inf], device="regen")
    i_cpu, i_dev = torch.tensor([inv_scale]), torch.tensor([inv_scale], device="regen")
    torch._amp_foreach_non_finite_check_and_unscale_(cpu, f_cpu, i_cpu)
    with counted(UNSCALE):
        torch._amp_foreach_non_finite_check_and_unscale_(dev, f_dev, i_dev)
    for d, c in zip(dev, cpu):
        assert d.stride() == c.stride()
        torch.testing.assert_close(d.cpu(), c, rtol=0, atol=0, equal_nan=True)
    assert f_dev.item() == f_cpu.item()
    return f_cpu.item()


def _copy(t, device):
    """A copy of `t` on `device` with its strides and storage offset (`clone` and `.to` would make
    a slice dense)."""
    storage = torch.zeros(t.untyped_storage().nbytes() // t.element_size(), dtype=t.dtype)
    storage.as_strided(t.shape, t.stride(), t.storage_offset()).copy_(t)
    return storage.to(device).as_strided(t.shape, t.stride(), t.storage_offset())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("inv_scale", [1 / 1024, 1.0, 3.0])
def test_unscale_matches_cpu(dtype, inv_scale):
    assert _unscale_both(_layouts(dtype, 0), 0.0, inv_scale) == 0.0


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
def test_unscale_finds_non_finite_values_in_mixed_lists(bad):
    tensors = _layouts(torch.float32, 1) + _layouts(torch.bfloat16, 2) + _layouts(torch.float64, 3)
    tensors[7][1, 1] = bad  # the bfloat16 transposed view
    assert _unscale_both(tensors, 0.0, 0.5) == 1.0
    # found_inf is only ever raised, never cleared.
    assert _unscale_both(_layouts(torch.float16, 4), 1.0, 0.5) == 1.0
    # A float16 value that overflows when unscaled is written as inf but was finite when checked.
    assert _unscale_both([torch.full((3,), 60000.0, dtype=torch.float16)], 0.0, 4.0) == 0.0


def test_unscale_of_nothing_checks_nothing():
    found = torch.zeros(2, dtype=torch.float64, device="regen")
    torch._amp_foreach_non_finite_check_and_unscale_([], found, found)
    assert found.tolist() == [0.0, 0.0]


def _error(fn, device):
    with pytest.raises(Exception) as e:
        fn(device)
    # The device's messages name the op first ("aten::op: ...").
    return e.type, str(e.value).split("\n")[0].split(": ", 1)[-1]


@pytest.mark.parametrize(
    "fn",
    [
        lambda d: torch._amp_foreach_non_finite_check_and_unscale_(
            [torch.ones(2, device=d)], torch.zeros(1, device=d), torch.ones(1, dtype=torch.float64, device=d)
        ),
        lambda d: torch._amp_foreach_non_finite_check_and_unscale_(
            [torch.ones(2, device=d)], torch.zeros(2, device=d), torch.ones(1, device=d)
        ),
        lambda d: torch._amp_foreach_non_finite_check_and_unscale_(
            [torch.ones(2, dtype=torch.int64, device=d)], torch.zeros(1, device=d), torch.ones(1, device=d)
        ),
        lambda d: torch._amp_update_scale_(
            torch.ones(1, device=d), torch.zeros(1, device=d), torch.zeros(1, device=d), 2.0, 0.5, 3
        ),
        lambda d: torch._amp_update_scale_(
            torch.ones(2, device=d), torch.zeros(1, dtype=torch.int32, device=d), torch.zeros(1, device=d), 2.0, 0.5, 3
        ),
    ],
)
def test_errors_match_cpu(fn):
    assert _error(fn, "regen") == _error(fn, "cpu")


def test_unscale_refuses_another_devices_tensors():
    with pytest.raises(RuntimeError, match="found_inf must be a regen tensor"):
        torch._amp_foreach_non_finite_check_and_unscale_(
            [torch.ones(2, device="regen")], torch.zeros(1), torch.ones(1, device="regen")
        )


@pytest.mark.parametrize(
    "scale, tracker, found, interval",
    [
        (1024.0, 0, 1.0, 3),  # an inf: back off, restart the count
        (1024.0, 2, float("nan"), 3),  # any non-zero found_inf counts
        (1024.0, 0, 0.0, 3),  # a clean step: count it
        (1024.0, 2, 0.0, 3),  # the third clean step in a row: grow
        (3e38, 0, 0.0, 1),  # growing past float32's range: the scale stays, the count restarts
        (1e-45, 0, 1.0, 1),  # backing off below the smallest subnormal
    ],
)
def test_update_scale_matches_cpu(scale, tracker, found, interval):
    results = []
    for device in ("cpu", "regen"):
        s = torch.tensor([scale], device=device)
        t = torch.tensor([tracker], dtype=torch.int32, device=device)
        f = torch.tensor([found], device=device)
        with counted(UPDATE) if device == "regen" else _nothing():
            out = torch._amp_update_scale_(s, t, f, 2.0, 0.5, interval)
        assert out is s
        results.append((s.item(), t.item()))
    assert results[1] == results[0]


class _nothing:
    def __enter__(self):
        pass

    def __exit__(self, *exc):
        pass
