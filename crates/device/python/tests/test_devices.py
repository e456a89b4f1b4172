"""Several devices (issue 27): the reference device has two, as torch_openreg has. A tensor made on
regen:1 stays there through native kernels, crosses to regen:0 and CPU by copies, refuses to meet a
regen:0 tensor in one op (CUDA's message), and each device has its own memory counters and random
generator; the current device is per thread and is what factories, the C++ device guard and the
kernels agree on."""

import copy
import io
import os
import subprocess
import sys
import threading

import pytest
import torch
import torch.nn as nn

import regen_device
from devtest import counted, make, steady_allocator


def test_the_reference_device_has_two_devices():
    assert torch.regen.device_count() == 2
    if hasattr(torch, "accelerator"):  # torch 2.6+
        assert torch.accelerator.device_count() == 2
    assert torch.regen.current_device() == 0


@pytest.mark.parametrize("index", [0, 1])
def test_native_kernels_keep_their_results_on_the_inputs_device(index):
    dev = torch.device("regen", index)
    a, b = make((4, 5), torch.float32, 1), make((5, 3), torch.float32, 2)
    x, y = a.to(dev), b.to(dev)
    assert x.device == dev
    with counted("mm.out", "add.Tensor", "sum.IntList_out", "index_select"):
        outs = [x @ y, x + 1, x.sum(dim=1), x.index_select(0, torch.tensor([2, 0], device=dev))]
    expected = [a @ b, a + 1, a.sum(dim=1), a.index_select(0, torch.tensor([2, 0]))]
    for out, want in zip(outs, expected):
        assert out.device == dev, "a kernel's new tensor lands on its inputs' device, not the current one"
        torch.testing.assert_close(out.cpu(), want)
    # A factory names its device; a device without an index is the current device.
    assert torch.zeros(2, device=dev).device == dev
    assert torch.zeros(2, device="regen").device == torch.device("regen:0")


def test_tensors_cross_devices_by_copies():
    a = make((3, 4), torch.float64, 3)
    x1 = a.to("regen:1")
    x0 = x1.to("regen:0")
    assert (x1.device, x0.device) == (torch.device("regen:1"), torch.device("regen:0"))
    assert torch.equal(x0.cpu(), a) and torch.equal(x1.cpu(), a)
    # copy_ between devices, both directions, and a strided source.
    dst = torch.empty(4, 3, dtype=torch.float64, device="regen:0")
    with counted("copy_"):
        dst.copy_(x1.t())
    assert torch.equal(dst.cpu(), a.t())
    back = torch.empty(3, 4, dtype=torch.float64, device="regen:1")
    back.copy_(dst.t())
    assert torch.equal(back.cpu(), a)


def test_an_op_on_two_devices_is_cudas_error():
    x0, x1 = torch.ones(3, device="regen:0"), torch.ones(3, device="regen:1")
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device, but found at least two devices, regen:1 and regen:0!"):
        x1 + x0
    with pytest.raises(RuntimeError, match=r"same device"):
        torch.add(x0, x0, out=torch.empty(3, device="regen:1"))
    # A CPU scalar still meets any device (`x + torch.tensor(2.0)`).
    torch.testing.assert_close((x1 + torch.tensor(2.0)).cpu(), torch.full((3,), 3.0))


def test_the_current_device_decides_where_factories_go_and_is_per_thread():
    m = torch.regen
    with m.device(1):
        assert m.current_device() == 1
        assert torch.empty(2, device="regen").device == torch.device("regen:1")
        assert torch.randn(2, device="regen").device == torch.device("regen:1")
        # A kernel call on device 0 inside does not move the current device.
        torch.ones(2, device="regen:0").exp()
        assert m.current_device() == 1
        seen = []
        t = threading.Thread(target=lambda: seen.append(m.current_device()))
        t.start()
        t.join()
        assert seen == [0], "a new thread starts on device 0, as CUDA's"
    assert m.current_device() == 0
    x = torch.ones(2, device="regen:1")
    with m.device_of(x):
        assert m.current_device() == 1
    m.set_device(1)
    try:
        if hasattr(torch, "accelerator"):  # torch 2.6+
            assert torch.accelerator.current_device_index() == 1
        assert torch.ones(1, device="regen").device.index == 1
    finally:
        m.set_device(0)


def test_each_device_has_its_own_generator():
    m = torch.regen
    m.manual_seed_all(7)
    torch.manual_seed(7)
    cpu = torch.rand(5)
    r0 = torch.rand(5, device="regen:0").cpu()
    r1 = torch.rand(5, device="regen:1").cpu()
    assert torch.equal(r0, cpu) and torch.equal(r1, cpu), "each device draws CPU's stream after the same seed"
    # Seeding the current device leaves the other alone.
    states = m.get_rng_state_all()
    assert len(states) == 2 and torch.equal(states[0], states[1])
    with m.device(1):
        m.manual_seed(123)
        assert m.initial_seed() == 123
    assert m.initial_seed() == 7
    assert not torch.equal(m.get_rng_state(1), states[1])
    m.set_rng_state_all(states)
    assert torch.equal(torch.rand(3, device="regen:1").cpu(), torch.rand(3, device="regen:0").cpu())
    # A generator made for a device belongs to it.
    g = torch.Generator("regen:1")
    assert g.device == torch.device("regen:1")
    g.manual_seed(3)
    torch.manual_seed(3)
    assert torch.equal(torch.rand(4, device="regen:1", generator=g).cpu(), torch.rand(4))


def test_a_model_trains_alike_on_both_devices_and_cpu():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5))
    data, target = torch.randn(8, 3, 8, 8), torch.randint(0, 5, (8,))

    def train(device):
        m = copy.deepcopy(model).to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(m(data.to(device)), target.to(device))
            loss.backward()
            opt.step()
        assert all(p.device == torch.device(device) for p in m.parameters())
        return {k: v.cpu() for k, v in m.state_dict().items()}

    cpu = train("cpu")
    with counted("convolution_overrideable", "convolution_backward_overrideable"):
        on0 = train("regen:0")
        on1 = train("regen:1")
    for k in cpu:
        assert torch.equal(on0[k], on1[k]), f"{k}: the two devices run the same kernels"
        torch.testing.assert_close(on1[k], cpu[k], rtol=1e-4, atol=1e-5)


def test_save_and_load_keep_the_device_index():
    x = make((2, 3), torch.float32, 5).to("regen:1")
    buf = io.BytesIO()
    torch.save(x, buf)
    buf.seek(0)
    y = torch.load(buf)
    assert y.device == torch.device("regen:1") and torch.equal(y.cpu(), x.cpu())
    buf.seek(0)
    z = torch.load(buf, map_location="regen:0")
    assert z.device == torch.device("regen:0")


@steady_allocator()
def test_a_device_memory_limit_is_per_device():
    m = torch.regen
    m.empty_cache()
    # The limit bounds each device's reserved bytes (what its allocator holds, cached or not).
    base0, base1 = m.memory_reserved(0), m.memory_reserved(1)
    previous = torch.regen.set_memory_limit(max(base0, base1) + (1 << 20))
    try:
        a = torch.empty(1 << 18, device="regen:0")  # 1 MiB: the limit on device 0
        b = torch.empty(1 << 18, device="regen:1")  # and on device 1, which counts its own
        # torch.OutOfMemoryError is torch 2.5's name for torch.cuda.OutOfMemoryError.
        with pytest.raises(getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError, match="on device 1"):
            torch.empty(1 << 18, device="regen:1")
        del a, b
    finally:
        torch.regen.set_memory_limit(previous)


def test_regen_device_count_sets_the_number_of_devices():
    code = "import torch, regen_device; print(torch.regen.device_count(), torch.ones(1, device='regen:2').device)"
    env = dict(os.environ, REGEN_DEVICE_COUNT="3")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3", "regen:2"]
    env["REGEN_DEVICE_COUNT"] = "0"
    out = subprocess.run([sys.executable, "-c", "import torch, regen_device; print(torch.regen.device_count())"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["2"], out.stderr
    assert "REGEN_DEVICE_COUNT=\"0\" is not a device count from 1 to 16; using 2" in out.stderr


def test_the_profiler_times_device_ops():
    # The glue's profiler hooks (profiler.cpp): a device event is a host timestamp, so times are
    # never negative and every op the loop ran is counted.
    with torch.autograd.profiler.profile(use_device="regen") as prof:
        x = torch.randn(64, 64, device="regen:1")
        for _ in range(3):
            x = x @ x / 64
    mm = [e for e in prof.key_averages() if e.key == "aten::mm"]
    assert mm and mm[0].count >= 3
    assert mm[0].device_time_total > 0, "the device's time between an op's two events"
    assert all(e.cpu_time_total >= 0 and e.device_time_total >= 0 for e in prof.key_averages())


def test_device_properties_and_memory_info_as_torch_cuda_has_them():
    m = torch.regen
    assert m.get_device_name(1) == "regen:1 (host memory)"
    assert m.get_device_name() == "regen:0 (host memory)"
    props = m.get_device_properties("regen:1")
    assert props.index == 1 and props.type == "regen" and props.total_memory > 0
    free, total = m.mem_get_info(1)
    assert 0 < free <= total
    summary = m.memory_summary(1)
    assert summary.startswith("regen:1 memory summary") and "Allocated memory" in summary
    previous = m.set_memory_limit(m.memory_reserved(1) + (1 << 20))
    try:
        free, total = m.mem_get_info(1)
        assert total == m.get_memory_limit() and free == total - m.memory_reserved(1)
    finally:
        m.set_memory_limit(previous)


def test_streams_are_per_device_and_the_stream_context_restores_them():
    m = torch.regen
    s = m.Stream("regen:1")
    assert m.current_stream(1) == m.default_stream(1)
    with m.stream(s) as entered:
        assert entered is s and m.current_stream(1) == s
        assert m.current_stream(0) == m.default_stream(0), "another device's current stream is its own"
        x = torch.ones(3, device="regen:1") * 2
    assert m.current_stream(1) == m.default_stream(1)
    assert m.current_device() == 0, "leaving the stream's context restores the device too"
    s.synchronize()
    assert s.query() and torch.equal(x.cpu(), torch.full((3,), 2.0))
    start, end = m.Event(enable_timing=True), m.Event(enable_timing=True)
    start.record(s)
    end.record(s)
    end.synchronize()
    assert start.elapsed_time(end) >= 0


@steady_allocator()
def test_the_caching_allocator_keeps_a_pool_per_stream_and_honours_record_stream():
    m = torch.regen
    if not hasattr(torch, "Stream"):
        pytest.skip("torch.Stream is newer (2.4)")
    m.empty_cache()
    allocs = lambda: m.memory_stats()["num_device_alloc"]  # noqa: E731
    s = m.Stream("regen:0")
    x = torch.empty(1 << 18, device="regen")  # 1 MiB on the default stream's pool
    del x
    before = allocs()
    with m.stream(s):
        y = torch.empty(1 << 18, device="regen")
    assert allocs() == before + 1, "another stream's pool: the default stream's cached block is not taken"
    del y
    with m.stream(s):
        y = torch.empty(1 << 18, device="regen")
    assert allocs() == before + 1, "the stream's own cached block"
    # record_stream: a block used on another stream waits for that stream's work, then returns to
    # its own pool (the host device's streams are always done, so at once).
    z = torch.ones(1 << 18, device="regen")
    z.record_stream(s)
    active = m.memory_stats()["active_bytes.all.current"]
    del z
    assert m.memory_stats()["active_bytes.all.current"] == active - (1 << 20)
    w = torch.empty(1 << 18, device="regen")
    assert allocs() == before + 1, "z's block, back in the default stream's pool"
    del w, y
    m.synchronize()
    m.empty_cache()
    assert m.memory_reserved() == m.memory_allocated()


def test_a_tensor_sent_to_another_process_is_refused_at_once():
    # torch 2.15 has no PrivateUse1 storage sharing (and regen no IPC hooks): a device tensor on a
    # multiprocessing queue reaches the receiver as a RuntimeError that says so, instead of an
    # error printed in the sender's feeder thread while the receiver waits forever.
    import multiprocessing

    q = multiprocessing.get_context("spawn").Queue()
    q.put(torch.arange(4.0, device="regen:1"))
    with pytest.raises(RuntimeError, match="regen tensors cannot be shared between processes: send tensor.cpu()"):
        q.get(timeout=60)
    q.put(torch.arange(4.0, device="regen").untyped_storage())
    with pytest.raises(RuntimeError, match="cannot be shared between processes"):
        q.get(timeout=60)
    # CPU tensors still cross, and the device tensor's CPU copy does.
    q.put(torch.arange(4.0, device="regen").cpu())
    assert q.get(timeout=60).tolist() == [0.0, 1.0, 2.0, 3.0]


def test_import_torch_brings_the_device_when_regen_autoload_names_it():
    # torch's backend autoload (the `torch.backends` entry point, as torch_openreg's), opt-in:
    # PrivateUse1 is one slot and several regen devices may be installed side by side.
    from importlib.metadata import entry_points

    if not any(e.name == "regen_device" for e in entry_points(group="torch.backends")):
        pytest.skip("regen_device is not pip-installed here (a PYTHONPATH build has no entry points)")
    code = "import sys, torch; print(torch.ones(2, device='regen:1').device, 'regen_device' in sys.modules)"
    env = {k: v for k, v in os.environ.items() if k != "REGEN_AUTOLOAD"}
    on = subprocess.run([sys.executable, "-c", code], env=dict(env, REGEN_AUTOLOAD="regen_device"),
                        capture_output=True, text=True, timeout=300)
    assert on.returncode == 0 and on.stdout.split() == ["regen:1", "True"], on.stderr
    off = subprocess.run([sys.executable, "-c", "import sys, torch; print('regen_device' in sys.modules)"], env=env,
                         capture_output=True, text=True, timeout=300)
    assert off.returncode == 0 and off.stdout.split() == ["False"], off.stderr
