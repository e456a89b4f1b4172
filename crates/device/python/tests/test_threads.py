"""Every kernel family under PyTorch's intra-op pool: a representative op with inputs above its
kernel's parallel grain (iter.rs GRAIN = ATen's 32768 elements; matmul.rs MIN_WORK; the per-row,
per-plane and per-channel grains of norm.rs, pool.rs, index.rs, scan.rs, sort.rs, conv.rs) runs at
torch.set_num_threads(1), 2 and 4 and is compared with CPU at the same count: bit for bit where
CPU's result does not depend on the thread count or the vector unit, to a bound derived from the
summation length where it does (a BLAS library's or the vector width's order: never bit for bit),
and equal across thread counts where the device kernel splits work so that every output is
computed by one thread in a fixed order."""

import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from devtest import ATEN_VECTORISED, assert_sums_close, counted, make

THREADS = (1, 2, 4)


def exact(got, want):
    assert got.device.type == "regen"
    got = got.cpu()
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    assert torch.equal(got, want), (got, want)


def close(got, want):
    """For kernels whose rounding follows the vector width or an accumulation order CPU picks per
    instruction set (exp in softmax, rsqrt in the norms, the interpolation weights)."""
    torch.testing.assert_close(got.cpu(), want)


def drawn(got, want):
    # The same draws; ATen's scalar build transforms them with separate roundings (as test_random).
    (exact if ATEN_VECTORISED else close)(got, want)


def sums(k, terms):
    """A comparison for sums of `k` terms whose |values| add up to `terms(*cpu_inputs)`."""
    return lambda got, want, inputs: assert_sums_close(got, want, k, terms(*inputs))


def plain(check):
    return lambda got, want, inputs: check(got, want)


def _conv_terms(x, w):
    return F.conv2d(x.abs().double(), w.abs().double(), padding=1).float()


def _bn(x):
    return F.batch_norm(x, None, None, training=True)


def _nll(x, t):
    return F.nll_loss(F.log_softmax(x, 1), t)


def _scatter_add(x, i):
    return torch.zeros(64, 256, dtype=torch.int64, device=x.device).scatter_add_(0, i, x)


def _pool(x):
    return F.max_pool2d(x, 3, 2, 1, return_indices=True)


def _sort(x):
    return torch.sort(x, dim=1, stable=True)


def _uniform(x):
    torch.manual_seed(77)
    return x.uniform_(-2, 3)


# (id, native op counted, function, CPU inputs, comparison with CPU, equal across thread counts on
# the device). The last is True where the kernel hands each output to one thread whole (reading
# the kernel): elementwise loops, copies and index ops by ranges of outputs, reductions with at
# least as many outputs as threads (reduce.rs reduces each whole), softmax, layer norm and
# log-softmax by rows, batch norm by channel, pooling, resampling and scans by plane or line.
# Full reductions to one value (split per thread, partial sums merged) and the GEMMs of mm and
# conv (blocks whose packing the gemm crate picks) promise no such thing.
CASES = [
    # Transcendental: CPU's rounding follows its vector unit (devtest.VECTOR_ROUNDING); not even
    # CPU's float32 sqrt is correctly rounded in torch 2.15 (0.6 ulp off where the device's is
    # IEEE's), so no unary op but the trivial ones could be compared bit for bit on every CPU.
    ("unary-exp", "exp", torch.exp, lambda: [make((200_000,), torch.float32)], plain(close), True),
    ("binary-add-broadcast", "add.out", lambda a, b: torch.add(a, b, alpha=3, out=torch.empty_like(a)),
     lambda: [make((500, 400), torch.float32, 1), make((400,), torch.float32, 2)], plain(exact), True),
    ("binary-mul-strided", "mul.out", lambda a, b: torch.mul(a.t(), b, out=torch.empty(400, 500, device=a.device)),
     lambda: [make((500, 400), torch.float64, 3), make((400, 500), torch.float64, 4)], plain(exact), True),
    ("reduce-sum-rows", "sum.IntList_out", lambda x: x.sum(1), lambda: [make((64, 8192), torch.float32, 5)],
     sums(8192, lambda x: x.abs().sum(1)), True),
    ("reduce-sum-all", "sum.IntList_out", lambda x: x.sum(), lambda: [make((300_000,), torch.float32, 6)],
     sums(300_000, lambda x: x.abs().sum()), False),
    ("reduce-amax-columns", "amax.out", lambda x: x.amax(0), lambda: [make((4096, 64), torch.float32, 7)],
     plain(exact), True),
    ("matmul-mm", "mm.out", torch.mm, lambda: [make((256, 256), torch.float32, 8), make((256, 256), torch.float32, 9)],
     sums(256, lambda a, b: a.abs() @ b.abs()), False),
    ("conv2d", "convolution_overrideable", lambda x, w: F.conv2d(x, w, padding=1),
     lambda: [make((8, 8, 32, 32), torch.float32, 10), make((16, 8, 3, 3), torch.float32, 11)],
     sums(8 * 9, _conv_terms), False),
    ("norm-layer", "native_layer_norm", lambda x: F.layer_norm(x, (256,)), lambda: [make((512, 256), torch.float32, 12)],
     plain(close), True),
    ("norm-batch-training", "native_batch_norm", _bn, lambda: [make((16, 32, 16, 16), torch.float32, 13)],
     plain(close), True),
    ("pool-max2d", "max_pool2d_with_indices.out", _pool, lambda: [make((8, 16, 64, 64), torch.float32, 14)],
     plain(exact), True),
    ("resample-bilinear", "upsample_bilinear2d.out", lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"),
     lambda: [make((4, 8, 64, 64), torch.float32, 15)], plain(close), True),
    ("index-select", "index_select", lambda x, i: x.index_select(0, i),
     lambda: [make((4096, 64), torch.float32, 16), torch.randint(0, 4096, (4096,), generator=torch.Generator().manual_seed(1))],
     plain(exact), True),
    ("index-gather", "gather.out", lambda x, i: x.gather(1, i),
     lambda: [make((1024, 256), torch.float32, 17), torch.randint(0, 256, (1024, 256), generator=torch.Generator().manual_seed(2))],
     plain(exact), True),
    ("index-scatter-add", "scatter_add.out", _scatter_add,
     lambda: [make((1024, 256), torch.int64, 18), torch.randint(0, 64, (1024, 256), generator=torch.Generator().manual_seed(3))],
     plain(exact), True),
    ("index-advanced", "index.Tensor_out", lambda x, i: x[i, 3:],
     lambda: [make((4096, 64), torch.float32, 19), torch.randint(0, 4096, (2048,), generator=torch.Generator().manual_seed(4))],
     plain(exact), True),
    ("softmax", "_softmax", lambda x: torch.softmax(x, -1), lambda: [make((512, 256), torch.float32, 20)],
     plain(close), True),
    ("loss-nll", "nll_loss_forward.output", _nll,
     lambda: [make((4096, 100), torch.float32, 21), torch.randint(0, 100, (4096,), generator=torch.Generator().manual_seed(5))],
     plain(close), True),
    ("shape-cat", "cat.out", lambda a, b: torch.cat([a, b], 1),
     lambda: [make((1000, 100), torch.float32, 22), make((1000, 60), torch.float32, 23)], plain(exact), True),
    ("copy-transpose", "copy_", lambda x: x.t().contiguous(), lambda: [make((512, 512), torch.float32, 24)],
     plain(exact), True),
    ("copy-cast", "copy_", lambda x: x.to(torch.float64), lambda: [make((200_000,), torch.float32, 25)],
     plain(exact), True),
    ("scan-cumsum", "cumsum.out", lambda x: x.cumsum(1), lambda: [make((256, 1024), torch.float32, 26)],
     plain(close), True),
    ("sort-stable", "sort.values_stable", _sort, lambda: [make((256, 1024), torch.float32, 27)], plain(exact), True),
    ("random-uniform", "uniform_", _uniform, lambda: [torch.empty(200_000)], plain(drawn), True),
]


@pytest.fixture
def set_threads():
    """set_threads(n): torch.set_num_threads(n) for the test; the count comes back afterwards."""
    old = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(old)


def outputs(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


@pytest.mark.parametrize("name, op, fn, inputs, compare, same_across", CASES, ids=[c[0] for c in CASES])
def test_matches_cpu_at_every_thread_count(set_threads, name, op, fn, inputs, compare, same_across):
    cpu_inputs = inputs()
    first = None
    for threads in THREADS:
        set_threads(threads)
        assert torch.get_num_threads() == threads
        dev_inputs = [x.to("regen") for x in cpu_inputs]
        with counted(op):
            got = outputs(fn(*dev_inputs))
        want = outputs(fn(*[x.clone() for x in cpu_inputs]))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            if g.dtype == torch.int64 and w.dtype == torch.int64:
                exact(g, w)  # indices (max_pool2d's, sort's) are exact whatever the values' check
            else:
                compare(g, w, cpu_inputs)
        got = [g.cpu() for g in got]
        if first is None:
            first = got
        elif same_across:
            for g, f in zip(got, first):
                assert torch.equal(g, f), f"{name}: {threads} threads differ from 1 on the device"
        else:
            # Another split, another rounding: still within the sums' bound of the 1-thread result.
            for g, f in zip(got, first):
                compare(g, f, cpu_inputs)


def test_backward_kernels_follow_every_set_num_threads(set_threads):
    # The device's backward runs on autograd's thread for the device, which reads the intra-op
    # count (OpenMP's, kept per thread) when it starts; torch.set_num_threads sets the caller's.
    # After each change the device's kernels on that thread must use the new count, as CPU's
    # backward (on the calling thread) does.
    seen = []

    class Probe(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            out = grad * 2  # a device kernel above the grain, on autograd's thread for the device
            seen.append(torch.get_num_threads())
            return out

    for threads in (1, 2, 1, 3):
        set_threads(threads)
        x = torch.ones(1 << 17, device="regen", requires_grad=True)
        Probe.apply(x).sum().backward()
        assert x.grad.cpu().eq(2).all()
    assert seen == [1, 2, 1, 3]


def pool_threads():
    """The names of this process's threads that belong to the runtime's pool (Linux's /proc)."""
    names = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                names.append(f.read().strip())
        except OSError:
            pass  # a thread that ended meanwhile
    return [n for n in names if n.startswith("regen-pool")]


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through Linux's /proc")
def test_forward_and_backward_share_one_pool(set_threads):
    # OpenMP gives each thread that starts a parallel loop a team of its own; the device's forward
    # (this thread) and backward (autograd's thread for the device) alternating between two teams
    # left one's workers spinning while the other's ran. The runtime keeps one pool for both: a
    # backward on autograd's thread starts no worker a forward on this thread did not.
    set_threads(3)
    x = torch.randn(1 << 18, device="regen", requires_grad=True)
    with counted("mul.Tensor"):
        y = x * x  # a device loop above the grain, on this thread: 2 workers and this thread
    after_forward = pool_threads()
    assert len(after_forward) >= 2, after_forward
    y.sum().backward()  # mul's backward on autograd's thread
    assert pool_threads() == after_forward
    torch.testing.assert_close(x.grad.cpu(), 2 * x.detach().cpu(), rtol=0, atol=0)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_runs_its_loops(set_threads):
    # The pool's workers are the parent's: a child fork made (a DataLoader worker, a launcher) has
    # none of them, and must still finish its parallel loops (on its own thread).
    set_threads(2)
    x = torch.arange(1 << 18, dtype=torch.float32, device="regen")
    assert torch.equal((x * 2).cpu(), torch.arange(1 << 18, dtype=torch.float32) * 2)  # starts the pool
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            # No CPU op here: CPU's parallel loops (GNU OpenMP) hang in a child of a parent that ran them.
            y = torch.arange(1 << 18, dtype=torch.float32, device="regen") * 3
            code = 0 if y.cpu().tolist() == [3.0 * i for i in range(1 << 18)] else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_script_that_ends_after_a_backward_exits_cleanly():
    # Autograd's thread for the device takes the GIL to drop a finished backward; a script that
    # ends at once used to abort ("terminate called without an active exception", status 134)
    # in most runs. The package lets that thread finish at exit.
    script = (
        "import torch, regen_device\n"
        "torch.set_num_threads(2)\n"
        "x = torch.randn(1, 32, 32, 32, device='regen', requires_grad=True)\n"
        "w = torch.randn(64, 32, 3, 3, device='regen', requires_grad=True)\n"
        "for _ in range(30):\n"
        "    torch.nn.functional.conv2d(x, w, None, 1, 1).sum().backward()\n"
    )
    for _ in range(4):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
