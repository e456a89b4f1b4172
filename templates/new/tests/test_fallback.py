"""The slow path made visible on the "{{ device }}" device: what the CPU fallback served, its
warn and raise modes, excluded ops named as such, and no spurious warnings from the fallback.
Run with `python -m pytest tests`."""

import subprocess
import sys
import warnings

import pytest
import torch

import {{ package }}


@pytest.fixture(autouse=True)
def quiet_fallback():
    previous = {{ package }}.set_fallback_mode("quiet")
    yield
    {{ package }}.set_fallback_mode(previous)


def test_fallback_calls_count_each_op_that_ran_on_cpu():
    x = torch.arange(6.0, device="{{ device }}").reshape(2, 3)
    before = {{ package }}.fallback_calls("cumsum.out")
    for _ in range(3):
        torch.testing.assert_close(x.cumsum(1).cpu(), torch.arange(6.0).reshape(2, 3).cumsum(1))
    assert {{ package }}.fallback_calls("cumsum.out") == before + 3
    assert {{ package }}.fallback_calls()["cumsum.out"] == before + 3
    # add.out has a Rust kernel: it never reaches the fallback.
    assert "add.out" not in {{ package }}.fallback_calls()
    x + x
    assert {{ package }}.fallback_calls("add.out") == 0
    {{ package }}.reset_fallback_calls()
    assert {{ package }}.fallback_calls() == {}


def test_an_op_name_torch_does_not_have_is_an_error():
    with pytest.raises(ValueError, match=r"no op 'mul\.outt'.*'mul\.out'"):
        {{ package }}.native_calls("mul.outt")
    with pytest.raises(ValueError, match="no op 'cumsum.outt'"):
        {{ package }}.fallback_calls("cumsum.outt")
    # An op torch has but this backend serves on CPU: no native call, not an error.
    assert {{ package }}.native_calls("cumsum.out") == 0
    # The qualified name counts the same kernel.
    torch.ones(2, device="{{ device }}") + torch.ones(2, device="{{ device }}")
    assert {{ package }}.native_calls("aten::add.out") == {{ package }}.native_calls("add.out") > 0


def test_warn_mode_warns_once_per_op_and_raise_mode_refuses():
    x = torch.arange(6.0, device="{{ device }}")
    {{ package }}.set_fallback_mode("warn")
    {{ package }}.reset_fallback_calls()
    with pytest.warns(UserWarning, match=r"aten::cumprod.out' has no kernel for the '{{ device }}' device: it runs on CPU"):
        x.cumprod(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.cumprod(0)  # the second call of the same op is quiet
    assert {{ package }}.set_fallback_mode("raise") == "warn"
    with pytest.raises(NotImplementedError, match="REGEN_FALLBACK=raise"):
        x.cumprod(0)
    assert {{ package }}.fallback_calls("cumprod.out") == 2
    with pytest.raises(ValueError, match="fallback mode"):
        {{ package }}.set_fallback_mode("loud")


def test_the_environment_sets_the_mode():
    code = ("import torch, {{ package }}; x = torch.ones(3, device='{{ device }}')\n"
            "try:\n    x.cumprod(0)\nexcept NotImplementedError as e:\n    print('refused', {{ package }}.fallback_mode())\n")
    env = {"REGEN_FALLBACK": "raise", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.stdout.strip() == "refused raise", out.stderr[-2000:]


def test_an_excluded_op_says_so():
    # regen.toml excludes convolution_overrideable (CPU has no kernel for it): the call names the
    # exclusion, not PyTorch's "convolution_overrideable not implemented".
    x, w = torch.ones(1, 1, 4, 4, device="{{ device }}"), torch.ones(1, 1, 2, 2, device="{{ device }}")
    with pytest.raises(NotImplementedError, match=r"convolution_overrideable' is excluded in regen.toml \(by name\)"):
        torch.nn.functional.conv2d(x, w)


def test_losses_through_the_fallback_do_not_warn():
    # PyTorch runs mse_loss as mse_loss.out with a 0-d output, which CPU's meta function first
    # resizes: the fallback must not pass that warning on.
    a, b = torch.randn(3, 4), torch.randn(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for f in (torch.nn.functional.mse_loss, torch.nn.functional.smooth_l1_loss):
            got = f(a.to("{{ device }}"), b.to("{{ device }}"))
            torch.testing.assert_close(got.cpu(), f(a, b))
    # A user's out= of another shape still gets CPU's warning.
    with pytest.warns(UserWarning, match="An output with one or more elements was resized"):
        torch._C._nn.mse_loss(a.to("{{ device }}"), b.to("{{ device }}"), out=torch.empty(5, device="{{ device }}"))
