"""Training steps of whole models on the regen device against PyTorch's CPU kernels (a benchmark,
not a test): a ResNet-18 step (SGD) and a GPT-2-shaped 2-layer transformer step (AdamW, tied
embeddings), each at 1 thread and at every core, the same torch thread count on both sides,
medians. Unlike bench_device.py's single-op tables, each side runs in a process of its own (the
processes alternating, device first, then CPU first): each side's idle workers spin for a while
after a parallel loop (CPU's OpenMP team, the runtime's pool) and take cores from the other side's
step that follows in the same process (CPU's ResNet-18 step at 2 threads took 76-80 ms beside the
device, 40-49 ms alone, when the device still ran on OpenMP teams).

    cd /tmp && /work/main/.venv/bin/python /work/main/crates/device/python/bench/bench_models.py [--quick]
    (or `cargo xtask bench`, which builds the device first)

Prints per model and thread count the step time of each side and their ratio device/CPU (goal
<= 1.0), then per model the speed-up from 1 thread to N of each side (goal: the device's at
least CPU's). The models are plain torch.nn code (torchvision's ResNet-18 layout; GPT-2's block
with causal scaled-dot-product attention), built once and copied to each side with the same
weights.
"""

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import regen_device  # noqa: F401  (registers the device)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_device import print_header  # noqa: E402


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x if self.down is None else self.down(x)
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = self.bn2(self.conv2(out))
        out += identity
        return F.relu(out, inplace=True)


class ResNet18(nn.Module):
    """torchvision's resnet18 layout: a 7x7 stem, max pooling, four stages of two blocks."""

    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """GPT-2's shape: token and position embeddings, pre-norm blocks, the head tied to the
    token embedding (so `model.to()` must keep one Parameter)."""

    def __init__(self, vocab=2048, d=256, heads=4, layers=2, context=128):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(context, d)
        self.blocks = nn.Sequential(*[Block(d, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        return self.head(self.ln(self.blocks(x)))


def resnet_step(batch, size):
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(batch, 3, size, size, generator=g), torch.randint(0, 1000, (batch,), generator=g)
    torch.manual_seed(0)
    model = ResNet18()

    def make(device):
        m = copy.deepcopy(model).to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
        return m, opt, x.to(device), y.to(device)

    def step(s):
        m, opt, xs, ys = s
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(m(xs), ys)
        loss.backward()
        opt.step()
        return loss.item()

    return make, step


def gpt_step(batch, context):
    g = torch.Generator().manual_seed(0)
    idx = torch.randint(0, 2048, (batch, context + 1), generator=g)
    torch.manual_seed(0)
    model = GPT(context=context)

    def make(device):
        m = copy.deepcopy(model).to(device)
        assert m.head.weight is m.tok.weight, "model.to() untied the head from the embedding"
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3, foreach=False)
        return m, opt, idx[:, :-1].to(device), idx[:, 1:].to(device)

    def step(s):
        m, opt, xs, ys = s
        opt.zero_grad(set_to_none=True)
        logits = m(xs)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ys.reshape(-1))
        loss.backward()
        opt.step()
        return loss.item()

    return make, step


def models(batch, size):
    return {
        f"resnet18 b{batch} {size}x{size} sgd": lambda: resnet_step(batch, size),
        "gpt 2x256 b4 t128 adamw": lambda: gpt_step(4, 128),
    }


def run_one(args):
    """--one: in this process, `reps` timed steps of one model on one device at one thread count
    (after 3 warm-up steps), printed as a JSON list of seconds."""
    name, device, threads, reps = args.one
    torch.set_num_threads(int(threads))
    make, step = models(args.batch, args.size)[name]()
    state = make(device)
    for _ in range(3):
        step(state)
    times = []
    for _ in range(int(reps)):
        start = time.perf_counter()
        step(state)
        times.append(time.perf_counter() - start)
    print(json.dumps(times))


def side(args, name, device, threads, reps):
    """The step times of one side, from a process of its own."""
    cmd = [sys.executable, os.path.abspath(__file__), "--batch", str(args.batch), "--size", str(args.size),
           "--one", name, device, str(threads), str(reps)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer steps")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="the N of 1 -> N threads (default: cores)")
    parser.add_argument("--batch", type=int, default=4, help="ResNet-18 batch (default 4)")
    parser.add_argument("--size", type=int, default=64, help="ResNet-18 image side (default 64)")
    parser.add_argument("--only", help="comma-separated substrings of the model names to run")
    parser.add_argument("--one", nargs=4, metavar=("MODEL", "DEVICE", "THREADS", "REPS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        return run_one(args)
    reps = 4 if args.quick else 10
    print_header(f"{', then '.join(map(str, sorted({1, args.threads})))} torch threads for CPU and device")
    width = 34
    print(f"{'step':<{width}}{'threads':>8}{'regen ms':>11}{'cpu ms':>11}{'ratio':>8}{'reps':>6}")
    times = {}
    for threads in sorted({1, args.threads}):
        for name in models(args.batch, args.size):
            if args.only and not any(s in name for s in args.only.split(",")):
                continue
            samples = {"regen": [], "cpu": []}
            for order in (("regen", "cpu"), ("cpu", "regen")):
                for device in order:
                    samples[device] += side(args, name, device, threads, reps)
            d, c = statistics.median(samples["regen"]), statistics.median(samples["cpu"])
            repeat = len(samples["regen"])
            times[name, threads] = (d, c)
            print(f"{name:<{width}}{threads:>8}{d * 1e3:>11.1f}{c * 1e3:>11.1f}{d / c:>8.2f}{repeat:>6}", flush=True)
    if args.threads > 1:
        print(f"speed-up from 1 to {args.threads} threads (goal: the device's >= CPU's)")
        for name in models(args.batch, args.size):
            if (name, 1) in times and (name, args.threads) in times:
                (d1, c1), (dn, cn) = times[name, 1], times[name, args.threads]
                verdict = "ok" if d1 / dn >= c1 / cn * 0.95 else "BELOW CPU"
                print(f"  {name:<{width}} regen {d1 / dn:5.2f}x  cpu {c1 / cn:5.2f}x  {verdict}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
