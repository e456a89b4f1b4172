"""Smoke test of the "{{ device }}" device in real torch: run with `python -m pytest tests`."""

import subprocess
import sys

import torch

import {{ package }}

{% if reference -%}
# The reference kernels implement the functional add itself (PyTorch would otherwise derive it
# from add.out).
{% endif -%}
ADD = "{% if reference %}add.Tensor{% else %}add.out{% endif %}"


def test_add_runs_in_rust():
    before = {{ package }}.native_calls(ADD)
    x = torch.ones(3, device="{{ device }}")
    y = x + x
    assert y.device.type == "{{ device }}"
    assert torch.equal(y.cpu(), torch.full((3,), 2.0))
    assert {{ package }}.native_calls(ADD) > before


def test_other_ops_fall_back_to_cpu():
    x = torch.arange(6.0).reshape(2, 3)
{%- if reference %}
    # An op the reference kernels leave to the fallback.
    before = {{ package }}.fallback_calls("renorm.out")
    torch.testing.assert_close(x.to("{{ device }}").renorm(2, 0, 1.0).cpu(), x.renorm(2, 0, 1.0))
    assert {{ package }}.fallback_calls("renorm.out") > before
{%- else %}
    torch.testing.assert_close(x.to("{{ device }}").cumsum(1).cpu(), x.cumsum(1))
{%- endif %}


def test_device_module():
    assert torch.{{ device }}.is_available() and torch.{{ device }}.device_count() == 1
    assert torch.{{ device }}.current_device() == 0


def test_loads_without_dispatcher_warnings():
    # A signature mismatch would abort the process, so load in a subprocess.
    code = "import torch, {{ package }}; print((torch.ones(3, device='{{ device }}') * 2).cpu())"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "tensor([2., 2., 2.])" in proc.stdout
    assert "Warning" not in proc.stderr, proc.stderr
