"""The ``torch.regen`` device module as users of ``torch.cuda`` expect it (rendered from regen's
templates/new/python/_device.py, so every backend made by `regen new` has it): the current-device
context managers, memory statistics, and ``torch.save`` / ``torch.load`` of device tensors,
modules and optimizer state."""

import io

import pytest
import torch

import regen_device
from devtest import steady_allocator

# How the glue, the runtime and the device module all word a device index that does not exist.
WRONG_INDEX = r"The device index is out of range: regen has 2 devices \(indices 0 to 1\), not regen:2 \(invalid device index\)"


def test_device_index_forms_and_errors():
    m = torch.regen
    assert m._get_device_index("regen", optional=True) == 0
    assert m._get_device_index(torch.device("regen:0")) == 0
    assert m._get_device_index(0) == 0
    assert m._get_device_index("regen:1") == 1
    assert m._get_device_index(None, optional=True) == m.current_device() == 0
    for bad in (2, "regen:2", torch.device("cpu"), "cpu", 2.0):
        with pytest.raises(ValueError):
            m._get_device_index(bad)
    for no_index in (None, "regen"):
        with pytest.raises(ValueError):
            m._get_device_index(no_index)
    with pytest.raises(ValueError, match=WRONG_INDEX):
        m.set_device(2)
    m.set_device("regen:1")
    assert m.current_device() == 1
    m.set_device("regen:0")
    assert m.current_device() == 0


def test_device_context_managers():
    m = torch.regen
    with m.device("regen:0") as d:
        assert isinstance(d, m.device) and m.current_device() == 0
    with m.device(-1):  # changes nothing, as torch.cuda.device(-1)
        assert m.current_device() == 0
    x = torch.ones(2, device="regen")
    with m.device_of(x):
        assert m.current_device() == 0
    with m.device_of(torch.ones(2)):  # a CPU tensor: nothing to change
        assert m.current_device() == 0
    with pytest.raises(ValueError):
        m.device("regen:3")


@steady_allocator()  # reads the allocator's process-wide counters
def test_memory_statistics_follow_allocations():
    m = torch.regen
    m.empty_cache()
    base, reserved = m.memory_allocated(), m.memory_reserved()
    assert base == regen_device.bytes_in_use(0)
    m.reset_peak_memory_stats()
    assert m.max_memory_allocated() == base and m.max_memory_reserved() == reserved
    x = torch.empty(1 << 18, dtype=torch.float32, device="regen")  # 1 MiB
    assert m.memory_allocated() == base + (1 << 20)
    y = torch.empty(1 << 17, dtype=torch.float64, device="regen")  # 1 MiB more
    assert m.memory_allocated("regen") == base + (2 << 20)
    assert m.max_memory_allocated(0) == base + (2 << 20)
    assert m.memory_reserved() == reserved + (2 << 20), "nothing was cached: both blocks are new"
    del x, y
    assert m.memory_allocated() == base
    assert m.max_memory_allocated() == base + (2 << 20), "the peak outlives the tensors"
    stats = m.memory_stats()
    assert stats["allocated_bytes.all.current"] == base and stats["allocated_bytes.all.peak"] == base + (2 << 20)
    # The caching allocator keeps the freed blocks (reserved, not allocated) and hands one out
    # again for the next request of its size, without asking the device.
    assert m.memory_reserved() == reserved + (2 << 20) and m.max_memory_reserved() == reserved + (2 << 20)
    device_allocs = stats["num_device_alloc"]
    z = torch.empty(1 << 18, dtype=torch.float32, device="regen")
    assert m.memory_stats()["num_device_alloc"] == device_allocs, "served from the cache"
    assert m.memory_reserved() == reserved + (2 << 20)
    del z
    m.empty_cache()
    assert m.memory_reserved() == reserved, "empty_cache gives the cached blocks back"
    assert m.memory_stats()["num_device_free"] >= 2
    for key in ("active_bytes.all.current", "requested_bytes.all.peak", "segment.all.current", "num_ooms",
                "num_alloc_retries", "allocation.all.allocated"):
        assert key in stats, key
    m.reset_peak_memory_stats()
    assert m.max_memory_allocated() == base
    # Each device counts its own memory.
    base1 = m.memory_allocated(1)
    z = torch.empty(1 << 18, dtype=torch.float32, device="regen:1")
    assert m.memory_allocated(1) == base1 + (1 << 20) and m.memory_allocated(0) == base
    assert m.memory_allocated() == base, "the current device is 0"
    with m.device(1):
        assert m.memory_allocated() == base1 + (1 << 20)
    del z
    assert m.memory_allocated(1) == base1
    with pytest.raises(ValueError):
        m.memory_allocated(2)


def roundtrip(obj, **load):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load)


def test_save_and_load_device_tensors():
    x = torch.randn(3, 4).to("regen")
    view = x[:, 1::2]  # a view: its storage is saved whole, the view's geometry kept
    back = roundtrip({"x": x, "view": view})
    assert back["x"].device.type == "regen" and back["view"].device.type == "regen"
    assert torch.equal(back["x"].cpu(), x.cpu()) and torch.equal(back["view"].cpu(), view.cpu())
    assert back["view"].untyped_storage().data_ptr() == back["x"].untyped_storage().data_ptr(), "one storage, shared"
    on_cpu = roundtrip(x, map_location="cpu")
    assert on_cpu.device.type == "cpu" and torch.equal(on_cpu, x.cpu())
    cpu_checkpoint = torch.arange(6.0).reshape(2, 3)
    onto = roundtrip(cpu_checkpoint, map_location="regen")
    assert onto.device.type == "regen" and torch.equal(onto.cpu(), cpu_checkpoint)
    for dtype in (torch.bfloat16, torch.int64, torch.bool, torch.complex64):
        t = torch.ones(5, dtype=dtype).to("regen")
        assert torch.equal(roundtrip(t).cpu(), t.cpu())


def test_save_and_load_a_trained_model_and_its_optimizer():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)).to("regen")
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    data, target = torch.randn(16, 4).to("regen"), torch.randn(16, 1).to("regen")
    for _ in range(3):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(data), target).backward()
        opt.step()
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)

    def load(map_location):
        buf.seek(0)
        ckpt = torch.load(buf, map_location=map_location)
        fresh = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)).to(map_location)
        fresh.load_state_dict(ckpt["model"])
        fresh_opt = torch.optim.Adam(fresh.parameters(), lr=1e-2)
        fresh_opt.load_state_dict(ckpt["opt"])
        return fresh, fresh_opt

    for where in ("regen", "cpu"):
        fresh, fresh_opt = load(where)
        for a, b in zip(fresh.state_dict().values(), model.state_dict().values()):
            assert a.device.type == where and torch.equal(a.cpu(), b.cpu())
        moments = [s["exp_avg"] for s in fresh_opt.state_dict()["state"].values()]
        want = [s["exp_avg"] for s in opt.state_dict()["state"].values()]
        assert all(m.device.type == where and torch.equal(m.cpu(), w.cpu()) for m, w in zip(moments, want))
        # Training goes on from the same state: one more step gives the same parameters.
        fresh_opt.zero_grad()
        torch.nn.functional.mse_loss(fresh(data.to(where)), target.to(where)).backward()
        fresh_opt.step()
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(data), target).backward()
    opt.step()
    for a, b in zip(fresh.state_dict().values(), model.state_dict().values()):  # the CPU copy's step
        torch.testing.assert_close(a, b.cpu(), rtol=1e-5, atol=1e-6)


# Every way of naming a device index: regen:0 and regen:1 work, regen:2 (which does not exist)
# raises, as CUDA raises for an ordinal it lacks, instead of silently giving regen:0.
INDEXED = {
    "randn": lambda d: torch.randn(2, device=d),
    "empty": lambda d: torch.empty(2, 3, device=d),
    "zeros": lambda d: torch.zeros(2, device=d),
    "empty_strided": lambda d: torch.empty_strided((2,), (1,), device=d),
    "tril_indices": lambda d: torch.tril_indices(3, 3, device=d),
    "cpu tensor .to": lambda d: torch.arange(3.0).to(d),
    "device tensor .to": lambda d: torch.arange(3.0, device="regen").to(d),
    "Generator": lambda d: torch.Generator(d),
    "UntypedStorage": lambda d: torch.UntypedStorage(4, device=d),
    "Stream": lambda d: torch.Stream(d),
}


@pytest.mark.parametrize("what", INDEXED, ids=list(INDEXED))
def test_a_device_index_that_does_not_exist_is_an_error(what):
    for index in (0, 1):
        made = INDEXED[what](f"regen:{index}")
        assert made.device == torch.device("regen", index)
    with pytest.raises(RuntimeError, match=WRONG_INDEX):
        INDEXED[what]("regen:2")


def test_accelerator_device_index_checks_the_index():
    with torch.accelerator.device_index(0):
        assert torch.accelerator.current_device_index() == 0
    with torch.accelerator.device_index(1):
        assert torch.accelerator.current_device_index() == 1
    assert torch.accelerator.current_device_index() == 0
    with pytest.raises(RuntimeError, match=WRONG_INDEX):
        with torch.accelerator.device_index(2):
            pass
    with pytest.raises(RuntimeError, match=WRONG_INDEX):
        torch.accelerator.set_device_index(2)
    assert torch.accelerator.current_device_index() == 0
