"""sim, the simulated accelerator: device memory the host cannot touch, work on stream workers,
events with the device's times, and regen's reference kernels run there. What these tests show is
that regen-runtime's device layer carries a device that is not host memory: every copy crosses
with the layer's copies, every kernel runs on a stream, and a program that forgets to synchronize
gets wrong data, as on a GPU."""

import copy
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import regen_sim

M = torch.sim


def run_python(code, **env):
    """Runs `code` in a new interpreter (a fault must not take the test process down)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=dict(os.environ, **env),
                          capture_output=True, text=True, timeout=300)


def test_tensors_cross_to_the_device_and_kernels_run_there():
    x = torch.randn(64, 32)
    d = x.to("sim")
    assert d.device == torch.device("sim:0")
    before = regen_sim.native_calls("mm.out")
    y = d @ d.T + 1
    assert regen_sim.native_calls("mm.out") == before + 1, "the reference kernel, not the CPU fallback"
    torch.testing.assert_close(y.cpu(), x @ x.T + 1)
    assert y.sum().item() == pytest.approx(float((x @ x.T + 1).sum()), rel=1e-4)
    # Non-contiguous, broadcast and converting copies each way.
    torch.testing.assert_close(d.T.contiguous().cpu(), x.T.contiguous())
    torch.testing.assert_close(x.T.to("sim").cpu(), x.T)
    z = torch.empty(32, 64, dtype=torch.float64, device="sim")
    z.copy_(x.T)
    torch.testing.assert_close(z.cpu(), x.T.double())
    w = torch.zeros(3, 4)
    w.copy_(torch.arange(4, device="sim"))
    assert torch.equal(w, torch.arange(4.0).expand(3, 4))
    c = torch.randn(5, dtype=torch.complex64)
    torch.testing.assert_close(c.to("sim").conj().cpu(), c.conj())
    assert torch.tensor([1, 2, 3], device="sim").tolist() == [1, 2, 3]


def test_device_memory_faults_when_the_host_reads_it():
    # Reading a device tensor's memory from the host is a fault (SIGSEGV), not a silent success: the
    # arena is PROT_NONE but while device work runs.
    read = run_python("""
        import ctypes, torch, regen_sim
        x = torch.ones(4, device="sim")
        ctypes.string_at(x.data_ptr(), 16)
        print("read")
    """)
    assert read.returncode == -11 and "read" not in read.stdout, (read.returncode, read.stdout, read.stderr)
    # The same program reading a copy on the host is fine.
    fine = run_python("""
        import ctypes, torch, regen_sim
        x = torch.ones(4, device="sim").cpu()
        assert ctypes.string_at(x.data_ptr(), 16) == torch.ones(4).numpy().tobytes()
        print("read")
    """)
    assert fine.returncode == 0 and fine.stdout.strip() == "read", fine.stderr


def test_a_missing_synchronization_reads_wrong_data():
    # Each task waits 20 ms on a slow device (REGEN_SIM_DELAY_US): a non-blocking copy into pinned
    # memory has not landed when the host reads it at once; after synchronize it has.
    done = run_python("""
        import torch, regen_sim
        x = torch.full((1 << 12,), 7.0, device="sim")
        out = torch.zeros(1 << 12, pin_memory=True)
        assert out.is_pinned()
        out.copy_(x, non_blocking=True)
        early = out[0].item()
        torch.sim.synchronize()
        late = out[0].item()
        # A non-blocking copy from pinned memory reads the source when the device gets to it.
        src = torch.full((1 << 12,), 1.0, pin_memory=True)
        y = src.to("sim", non_blocking=True)
        src.fill_(2.0)
        torch.sim.synchronize()
        print(early, late, y[0].item())
    """, REGEN_SIM_DELAY_US="20000")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0.0", "7.0", "2.0"], done.stdout


def test_in_place_kernels_run_after_the_call_returns():
    # An in-place kernel is queued as a CUDA launch is: the call returns before it ran. Work on a
    # side stream that the default stream was not told to wait for is not seen there (wrong data);
    # wait_stream orders it. A queued kernel's error comes at the next synchronization.
    done = run_python("""
        import torch, regen_sim
        M = torch.sim
        x = torch.zeros(1 << 12, device="sim")
        M.synchronize()
        s = M.Stream()
        calls = regen_sim.native_calls("fill_.Scalar")
        with M.stream(s):
            for _ in range(9):
                x.fill_(0.0)
            x.fill_(1.0)
            queued = not s.query()
        stale = x.cpu()[0].item()
        M.current_stream().wait_stream(s)
        fresh = x.cpu()[0].item()
        print(queued, stale, fresh, regen_sim.native_calls("fill_.Scalar") - calls)
        y = torch.zeros(4, device="sim")
        y.index_put_((torch.tensor([7], device="sim"),), torch.tensor(1.0, device="sim"))
        print("returned")
        try:
            M.synchronize()
            print("no error")
        except RuntimeError as e:
            print(e)
        print(y.add(1).cpu().tolist())
    """, REGEN_SIM_DELAY_US="20000")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["True", "0.0", "1.0", "10"], done.stdout
    assert lines[1] == "returned", done.stdout
    assert "aten::_index_put_impl_" in lines[2] and "queued earlier on sim:0" in lines[2], done.stdout
    assert "7" in lines[2], done.stdout
    assert lines[3] == "[1.0, 1.0, 1.0, 1.0]", "reported once; the device goes on"


def test_a_forked_child_gets_cudas_error_instead_of_waiting_forever():
    # The streams' workers are the parent's threads: a fork has none, so device work there is
    # refused (as CUDA refuses a forked subprocess) instead of waiting for a worker that is gone.
    done = run_python("""
        import os, sys, torch, regen_sim
        x = torch.ones(4, device="sim")
        torch.sim.synchronize()
        pid = os.fork()
        if pid == 0:
            try:
                torch.ones(4, device="sim")
                print("ran")
            except RuntimeError as e:
                print("child:", e)
            print("child bad fork:", torch.sim._is_in_bad_fork())
            sys.stdout.flush()
            os._exit(0)
        os.waitpid(pid, 0)
        print("parent:", x.add(1).cpu().tolist())
    """)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("child: sim: the device cannot be used in a forked subprocess"), done.stdout
    assert "'spawn' start method" in lines[0], done.stdout
    assert lines[1:] == ["child bad fork: True", "parent: [2.0, 2.0, 2.0, 2.0]"], done.stdout


def test_streams_run_work_in_order_and_events_time_it():
    x = torch.randn(256, 256, device="sim")
    s = M.Stream("sim:0")
    start, end = torch.Event(enable_timing=True), torch.Event(enable_timing=True)
    with M.stream(s):
        start.record()
        y = x @ x
        end.record()
    end.synchronize()
    assert start.query() and end.query()
    assert start.elapsed_time(end) >= 0
    s.synchronize()
    assert s.query()
    # The default stream waits for the side stream's work through an event.
    e = torch.Event()
    e.record(s)
    M.current_stream().wait_event(e)
    torch.testing.assert_close(y.cpu(), x.cpu() @ x.cpu(), rtol=1e-4, atol=1e-4)


def test_memory_is_the_devices_own():
    M.empty_cache()
    free, total = M.mem_get_info(1)
    assert total == M.get_device_properties(1).total_memory and 0 < free <= total
    assert M.get_device_name(1) == "sim:1 (simulated accelerator)"
    before = M.memory_allocated(1)
    x = torch.empty(1 << 18, device="sim:1")
    assert M.memory_allocated(1) == before + (1 << 20)
    assert M.mem_get_info(1)[0] <= free - (1 << 20), "the arena's free bytes went down"
    del x
    assert M.memory_allocated(1) == before
    y = torch.arange(10.0, device="sim:0").to("sim:1")
    assert y.device == torch.device("sim:1") and torch.equal(y.cpu(), torch.arange(10.0))


def test_the_same_model_trains_on_both_devices_as_on_cpu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    data, target = torch.randn(64, 16), torch.randint(0, 4, (64,))

    def train(device):
        m = copy.deepcopy(model).to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        x, t = data.to(device), target.to(device)
        for _ in range(5):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(m(x), t)
            loss.backward()
            opt.step()
        return [p.detach().cpu() for p in m.parameters()], loss.item()

    cpu, cpu_loss = train("cpu")
    for device in ("sim:0", "sim:1"):
        params, loss = train(device)
        assert loss == pytest.approx(cpu_loss, rel=1e-4)
        for p, q in zip(params, cpu):
            torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)
