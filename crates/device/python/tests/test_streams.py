"""Streams, events, pinned memory and torch.accelerator on the "regen" device, as users of
torch.cuda expect them. Every kernel runs synchronously on the host (crates/runtime/cpp/guard.cpp), so
streams are always idle and events complete when recorded, but the bookkeeping is CUDA's: distinct
streams, a per-thread current stream, events that time the work between them, and CUDA's errors."""

import gc
import threading
import time

import pytest
import torch

import regen_device

from devtest import assert_sums_close, counted, make, steady_allocator

# How the glue, the runtime and the device module all word a device index that does not exist.
WRONG_INDEX = r"The device index is out of range: regen has 2 devices \(indices 0 to 1\), not regen:2 \(invalid device index\)"

DTYPES = [torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16, torch.float16, torch.complex64]


def layouts(t):
    """The same values as contiguous, transposed, sliced, expanded, 0-dim and empty tensors."""
    return [t, t.t(), t[1:, ::2], t[:1].expand(4, -1), t[0, 0], t[:0]]


def test_new_streams_are_distinct_idle_and_on_the_device():
    s1, s2 = torch.Stream("regen"), torch.Stream("regen")
    assert s1 != s2 and s1.stream_id != s2.stream_id
    assert s1 == s1
    for s in (s1, s2):
        assert s.device == torch.device("regen:0")
        assert s.query()
        s.synchronize()


def test_a_stream_on_a_device_index_that_does_not_exist_is_an_error():
    assert torch.Stream("regen:0").device == torch.device("regen:0")
    assert torch.Stream("regen:1").device == torch.device("regen:1")
    with pytest.raises(RuntimeError, match=WRONG_INDEX):
        torch.Stream("regen:2")


def test_current_stream_is_set_per_thread_and_restored():
    default = torch.accelerator.current_stream()
    assert default.device == torch.device("regen:0") and default.stream_id == 0
    s = torch.Stream("regen")
    with s:
        assert torch.accelerator.current_stream() == s
        seen = []
        t = threading.Thread(target=lambda: seen.append(torch.accelerator.current_stream()))
        t.start()
        t.join()
        assert seen == [default], "another thread keeps its own current stream"
        x = make((3, 4), torch.float32)
        with counted("add.Tensor"):
            y = x.to("regen") + 1
        torch.testing.assert_close(y.cpu(), x + 1)
    assert torch.accelerator.current_stream() == default
    torch.accelerator.set_stream(s)
    try:
        assert torch.accelerator.current_stream() == s
    finally:
        torch.accelerator.set_stream(default)
    assert torch.accelerator.current_stream() == default


def test_accelerator_is_the_device():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device("regen")
    assert torch.accelerator.device_count() == 2
    assert torch.accelerator.current_device_index() == 0
    torch.accelerator.synchronize()
    torch.accelerator.synchronize("regen:0")


def test_events_record_query_synchronize_and_wait():
    e = torch.Event("regen")
    assert e.query(), "an event never recorded counts as complete"
    e.synchronize()
    s = torch.Stream("regen")
    e.record(s)
    assert e.query()
    e.synchronize()
    other = torch.Stream("regen")
    other.wait_event(e)
    e.wait(other)
    assert other.query()
    recorded = s.record_event()
    assert isinstance(recorded, torch.Event) and recorded.query()
    other.wait_stream(s)
    # Work ordered through the calls above has the CPU's results.
    x, w = make((8, 16), torch.float32, 1), make((16, 4), torch.float32, 2)
    with s:
        xd = x.to("regen", non_blocking=True)
        done = s.record_event()
    with other:
        other.wait_event(done)
        with counted("mm.out"):
            yd = xd @ w.to("regen")
    other.synchronize()
    torch.testing.assert_close(yd.cpu(), x @ w)


def test_elapsed_time_measures_the_device_work_between_two_events():
    start, end = torch.Event("regen", enable_timing=True), torch.Event("regen", enable_timing=True)
    a = make((256, 256), torch.float32).to("regen")
    before = time.perf_counter()
    start.record()
    with counted("mm.out"):
        for _ in range(4):
            b = a @ a
    end.record()
    end.synchronize()
    wall_ms = (time.perf_counter() - before) * 1000
    ms = start.elapsed_time(end)
    assert 0 < ms <= wall_ms
    assert end.elapsed_time(start) == pytest.approx(-ms)
    # A sum of 256 products in the order MKL picks for this CPU: within the summation bound.
    assert_sums_close(b, a.cpu() @ a.cpu(), 256, a.cpu().abs() @ a.cpu().abs())


def test_elapsed_time_errors_as_cuda():
    timed = torch.Event("regen", enable_timing=True)
    untimed = torch.Event("regen")
    with pytest.raises(ValueError, match="must be recorded"):
        timed.elapsed_time(torch.Event("regen", enable_timing=True))
    timed.record()
    untimed.record()
    with pytest.raises(ValueError, match="enable_timing=True"):
        timed.elapsed_time(untimed)
    with pytest.raises(ValueError, match="enable_timing=True"):
        untimed.elapsed_time(timed)


@pytest.mark.parametrize("dtype", DTYPES)
def test_non_blocking_copies_both_ways_equal_cpu(dtype):
    for x in layouts(make((6, 5), dtype)):
        with counted("copy_"):
            d = x.to("regen", non_blocking=True)
        torch.accelerator.synchronize()
        assert d.device.type == "regen"
        with counted("copy_"):
            back = d.to("cpu", non_blocking=True)
        torch.accelerator.synchronize()
        assert back.device.type == "cpu"
        torch.testing.assert_close(back, x, rtol=0, atol=0)
        # As CUDA: a non-blocking copy to the host lands in pinned memory.
        if x.numel():
            assert back.is_pinned()
        # Into an existing tensor, from pinned memory (CPU's pin_memory refuses expanded tensors).
        p = x.contiguous().pin_memory()
        out = torch.empty_like(x, device="regen")
        out.copy_(p, non_blocking=True)
        torch.testing.assert_close(out.cpu(), x, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.complex64])
def test_pin_memory_gives_pinned_cpu_tensors_with_the_same_values(dtype):
    # Not the expanded layout: CPU's _pin_memory copies into the same strides, which it refuses
    # for overlapping memory whatever the accelerator.
    for x in [t for t in layouts(make((6, 5), dtype)) if 0 not in t.stride()]:
        assert not x.is_pinned()
        p = x.pin_memory()
        assert p.device.type == "cpu" and p.dtype == x.dtype and p.shape == x.shape
        torch.testing.assert_close(p, x, rtol=0, atol=0)
        if x.numel():
            assert p.is_pinned()
            assert p.pin_memory().data_ptr() == p.data_ptr(), "already pinned: returned as is"
        assert not x.is_pinned(), "the source stays pageable"
    block = torch.arange(10.0).pin_memory()
    assert block[3:].is_pinned() and block[3:].data_ptr() != block.data_ptr()
    assert torch.from_numpy(block[3:].numpy()).is_pinned(), "an address inside a pinned block is pinned"
    e = torch.empty(4, 3, pin_memory=True)
    assert e.is_pinned()
    assert not torch.empty(4, 3).is_pinned()
    assert not torch.ones(3, device="regen").is_pinned(), "only CPU tensors are pinned"


@steady_allocator()  # reads the allocator's process-wide counters
def test_accelerator_memory_statistics_follow_device_allocations():
    gc.collect()  # device tensors of earlier tests in reference cycles must not die mid-test
    torch.accelerator.empty_cache()
    torch.accelerator.reset_peak_memory_stats()
    base = torch.accelerator.memory_allocated()
    assert torch.accelerator.max_memory_allocated() == base
    x = torch.empty(1 << 18, dtype=torch.float32, device="regen")  # 1 MiB
    assert torch.accelerator.memory_allocated() == base + (1 << 20)
    assert torch.accelerator.memory_reserved() == base + (1 << 20)
    stats = torch.accelerator.memory_stats()
    assert stats["allocated_bytes.all.current"] == base + (1 << 20)
    del x
    assert torch.accelerator.memory_allocated() == base
    assert torch.accelerator.max_memory_allocated() >= base + (1 << 20)
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == base
    free, total = torch.accelerator.get_memory_info()
    assert 0 < free <= total
    assert torch.accelerator.memory_allocated("regen:1") == regen_device.bytes_in_use(1)
    with pytest.raises(RuntimeError, match="2 devices"):
        torch.accelerator.memory_allocated("regen:2")


@steady_allocator()  # reads the allocator's process-wide counters
def test_record_stream_takes_this_devices_streams_and_keeps_the_tensor():
    t = torch.arange(6.0, device="regen")
    s = torch.Stream("regen")
    with counted("record_stream"):
        t.record_stream(s)
    with counted("record_stream"):
        t.record_stream(torch.accelerator.current_stream())
    # Nothing waits for the stream here: the tensor stays readable and is freed as any other.
    assert torch.equal(t.cpu(), torch.arange(6.0))
    before = torch.regen.memory_allocated()
    del t
    gc.collect()
    assert torch.regen.memory_allocated() < before
    with pytest.raises(RuntimeError, match="expected a stream of this device"):
        torch.ones(2, device="regen").record_stream(torch.Stream("cpu"))
