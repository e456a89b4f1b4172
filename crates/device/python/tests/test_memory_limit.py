"""The device's memory cap (REGEN_MEMORY_LIMIT, torch.regen.set_memory_limit): an allocation that
would take the device's reserved bytes past it, even after the caching allocator gave its cache
back, raises torch.OutOfMemoryError naming the request, the cap and what is in use, and the process
goes on, with the allocator's counters as they were (but for the refusals counted)."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

import regen_device  # noqa: F401  (registers torch.regen)
from devtest import counted, steady_allocator

# torch.OutOfMemoryError is torch 2.5's name for the class torch.cuda.OutOfMemoryError already was.
OOM = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
MiB = 1 << 20


@pytest.fixture
def cap():
    """set(extra): caps device memory `extra` bytes above what is reserved now (the cache given
    back first); returns the cap.
    The cap in force before the test comes back afterwards whatever happens: one left behind
    would fail every later test that allocates. The tests read the allocator's counters, so they
    hold devtest.steady_allocator (no garbage collected mid-test moves them)."""
    previous = torch.regen.get_memory_limit()

    def set_cap(extra):
        torch.regen.empty_cache()
        limit = torch.regen.memory_reserved() + extra
        torch.regen.set_memory_limit(limit)
        return limit

    with steady_allocator():
        try:
            yield set_cap
        finally:
            torch.regen.set_memory_limit(previous)
    assert torch.regen.get_memory_limit() == previous


def counters():
    return torch.regen.memory_allocated(), torch.regen.max_memory_allocated(), regen_device.bytes_in_use()


def stats_but_refusals():
    """memory_stats() without the counts a refusal moves (out-of-memory refusals, retries)."""
    return {k: v for k, v in torch.regen.memory_stats().items() if k not in ("num_ooms", "num_alloc_retries")}


def test_an_allocation_over_the_cap_raises_out_of_memory_and_the_process_goes_on(cap):
    torch.regen.reset_peak_memory_stats()
    in_use = torch.regen.memory_allocated()
    limit = cap(MiB)
    assert torch.regen.get_memory_limit() == limit
    before, stats = counters(), stats_but_refusals()
    ooms = torch.regen.memory_stats()["num_ooms"]
    request = 2 * MiB + 4096  # float32 elements of 2 MiB + 4 KiB
    with pytest.raises(OOM) as raised:
        torch.empty(request // 4, dtype=torch.float32, device="regen")
    assert isinstance(raised.value, RuntimeError), "CUDA's OutOfMemoryError is a RuntimeError too"
    message = str(raised.value)
    # Exact byte counts and CUDA's human-readable sizes: what was asked, the cap, what is in use.
    assert "out of device memory" in message and "Tried to allocate 2.00 MiB" in message, message
    assert f"({request} bytes)" in message, message
    assert f"({limit} bytes)" in message, message
    assert f"({in_use} bytes) is in use by tensors" in message, message
    assert "REGEN_MEMORY_LIMIT" in message and "torch.regen.set_memory_limit" in message, message
    # The refused allocation counted nothing: not in use, and no peak.
    assert counters() == before
    assert stats_but_refusals() == stats
    assert torch.regen.memory_stats()["num_ooms"] == ooms + 1, "the refusal is counted, as CUDA's num_ooms"

    # The process goes on: an allocation under the cap and a native op both run.
    x = torch.arange(1000, dtype=torch.float32, device="regen")
    with counted("add.Tensor"):
        y = x + 1
    assert torch.equal(y.cpu(), torch.arange(1000, dtype=torch.float32) + 1)
    assert torch.regen.memory_allocated() == in_use + 2 * 4096, "4000 bytes each, in blocks of 512"
    del x, y
    assert counters()[0] == before[0]


def test_up_to_the_cap_exactly_is_allowed(cap):
    cap(4096)
    x = torch.empty(1024, dtype=torch.float32, device="regen")  # 4096 bytes: the cap exactly
    with pytest.raises(OOM):
        torch.empty(1, dtype=torch.uint8, device="regen")
    # Nothing to allocate is never refused.
    assert torch.empty(0, device="regen").numel() == 0
    del x
    torch.empty(1, dtype=torch.uint8, device="regen")


def test_an_op_whose_output_is_over_the_cap_raises_cleanly(cap):
    x = torch.randn(256, 256).to("regen")  # 256 KiB
    cap(128 * 1024)
    before, stats = counters(), stats_but_refusals()
    # Outputs PyTorch allocates before the kernel runs (a structured op's, a view's copy, a cat's).
    for op in (lambda: x * 2, lambda: x.t().contiguous(), lambda: torch.cat([x, x]), lambda: x @ x):
        with pytest.raises(OOM, match="Tried to allocate"):
            op()
        assert counters() == before
    # An output the Rust kernel allocates itself, through the glue's empty_strided service.
    with pytest.raises(OOM, match="Tried to allocate"):
        torch.nn.functional.layer_norm(x, (256,))
    assert counters() == before
    assert stats_but_refusals() == stats
    # A small result still fits, from the intact input.
    with counted("amax.out"):
        rows = x.amax(1)
    assert torch.equal(rows.cpu(), x.cpu().amax(1))


def test_a_cap_below_what_is_in_use_keeps_the_tensors(cap):
    x = torch.arange(4096, dtype=torch.float64, device="regen")  # 32 KiB
    cap(-16 * 1024)  # below what is in use
    with pytest.raises(OOM):
        torch.empty(1, device="regen")
    assert torch.equal(x.cpu(), torch.arange(4096, dtype=torch.float64)), "held memory is not touched"
    del x  # frees 32 KiB into the cache; the next allocation gives the cache back: 16 KiB under the cap
    torch.empty(1024, device="regen")
    assert torch.regen.memory_stats()["num_alloc_retries"] >= 1


def test_set_memory_limit_returns_the_previous_cap_and_checks_its_argument(cap):
    cap(MiB)
    limit = torch.regen.get_memory_limit()
    assert torch.regen.set_memory_limit(None) == limit
    assert torch.regen.get_memory_limit() is None
    assert torch.regen.set_memory_limit(limit) is None
    for bad in (-1, 1.5, True, "1G", 2**64 - 1):
        with pytest.raises(ValueError, match="memory limit"):
            torch.regen.set_memory_limit(bad)
    assert torch.regen.get_memory_limit() == limit, "a refused argument changes nothing"


def run_with_limit(value, code):
    env = dict(os.environ, REGEN_MEMORY_LIMIT=value)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=120)


def test_regen_memory_limit_caps_a_new_process():
    # A process of its own: the variable is read once, at the first allocation.
    done = run_with_limit("1M", """
        import torch, regen_device
        assert torch.regen.get_memory_limit() == 1 << 20, torch.regen.get_memory_limit()
        x = torch.empty(1 << 18, device="regen")  # 1 MiB of float32: the cap exactly
        try:
            torch.empty(1, device="regen")
        except getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError as e:
            assert "(1048576 bytes)" in str(e), str(e)
            print("refused")
    """)
    assert done.returncode == 0 and done.stdout.strip() == "refused", (done.stdout, done.stderr)


def test_a_bad_regen_memory_limit_is_reported_and_ignored():
    done = run_with_limit("lots", """
        import torch, regen_device
        assert torch.regen.get_memory_limit() is None
        torch.empty(1 << 20, device="regen")
    """)
    assert done.returncode == 0, done.stderr
    assert 'REGEN_MEMORY_LIMIT="lots" is not a number of bytes' in done.stderr, done.stderr
