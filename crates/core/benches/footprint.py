"""Whole-process footprint: `regen --header H --out DIR` against torchgen's gen_backend_stubs.

Run through `cargo xtask footprint [--runs N]` (it builds regen in release mode and passes the
paths). Both tools generate a PrivateUse1 backend's registrations for the required ops of the same
release: regen from the header, torchgen from a backend yaml listing those ops (minus the few its
codegen rejects, found by running it). Runs alternate between the tools in one process, each
into a fresh output directory (wall clock, and peak RSS as `/usr/bin/time -v` reports it); the medians and
their ratio are printed. Measure on a quiet machine: other load slows both, unevenly.
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(command):
    """(wall seconds, peak RSS KiB) of `command(out)`, which must succeed. It runs twice, each time
    into a fresh output directory (removed after). The wall time is of a run started with
    posix_spawn: not rounded to 10 ms as time(1)'s, and without the cost of forking this Python.
    The peak RSS is `/usr/bin/time -f %M` of the other run, what `/usr/bin/time -v` prints as
    "Maximum resident set size", from a process time(1) forks: a child of this Python would
    inherit its high-water mark through exec."""
    fresh = lambda: f"{tempfile.gettempdir()}/footprint-{os.getpid()}-{time.perf_counter_ns()}"
    cmd = command(fresh())
    devnull = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_WRONLY, 0) for fd in (1, 2)]
    start = time.perf_counter()
    pid = os.posix_spawn(cmd[0], cmd, os.environ, file_actions=devnull)
    _, status, _ = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    shutil.rmtree(cmd[-1], ignore_errors=True)
    cmd = command(fresh())
    r = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    shutil.rmtree(cmd[-1], ignore_errors=True)
    if os.waitstatus_to_exitcode(status) != 0 or r.returncode != 0:
        sys.exit(f"footprint: {' '.join(cmd)} failed:\n{r.stderr[-3000:]}")
    return (wall, int(r.stderr.strip().splitlines()[-1]))


def torchgen_yaml(python, required, work):
    """A backend yaml of `required`, without the ops gen_backend_stubs rejects (an out overload it
    cannot group takes its group with it)."""
    keys = list(required)
    while True:
        path = work / "backend.yaml"
        path.write_text("backend: PrivateUse1\ncpp_namespace: regen\nsupported:\n" + "".join(f"- {k}\n" for k in keys))
        r = subprocess.run(
            [python, "-m", "torchgen.gen_backend_stubs", "-s", str(path), "-o", str(work / "probe")],
            capture_output=True,
            text=True,
        )
        if r.returncode == 0:
            return path, len(keys), sorted(set(required) - set(keys))
        found = re.findall(r"native_functions.yaml:\d+:\n    ([A-Za-z0-9_.]+)\(", r.stderr)
        if not found:
            sys.exit(f"footprint: torchgen failed for a reason other than an op:\n{r.stderr[-3000:]}")
        bad = found[0]
        gone = [k for k in keys if k == bad] or [k for k in keys if k.split(".")[0] == bad.split(".")[0]]
        if not gone:
            sys.exit(f"footprint: torchgen rejects {bad}, which is not listed")
        keys = [k for k in keys if k not in gone]


def main():
    regen, header, python, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run([regen, "--header", header, "--out", str(work / "model")], check=True, capture_output=True)
        ops = json.loads((work / "model" / "ops.json").read_text())["ops"]
        required = [o["key"] for o in ops if o["required"]]
        yaml, listed, rejected = torchgen_yaml(python, required, work)
        print(f"{len(required)} required ops; torchgen handles {listed} (rejects {', '.join(rejected)})")
        results = {"regen": [], "torchgen": []}
        for _ in range(runs):
            results["regen"].append(timed(lambda out: [regen, "--header", header, "--out", out]))
            results["torchgen"].append(
                timed(lambda out: [python, "-m", "torchgen.gen_backend_stubs", "-s", str(yaml), "-o", out])
            )
        med = {t: (statistics.median(w for w, _ in r), statistics.median(m for _, m in r)) for t, r in results.items()}
        for tool, (wall, rss) in med.items():
            print(f"{tool:9} median of {runs}: {wall * 1000:8.1f} ms wall, {rss / 1024:6.1f} MiB peak RSS")
        ratio = med["torchgen"][0] / med["regen"][0]
        print(f"regen is {ratio:.0f}x faster than torchgen (goal: >= 50x); peak RSS {med['regen'][1] / 1024:.1f} MiB (goal: <= 16 MiB)")


if __name__ == "__main__":
    main()
