"""Not from upstream: how regen runs PyTorch's reference PrivateUse1 suite (torch_openreg's
tests/, adapted only in the device name) as a checklist of what a device must do.

torch_openreg is imported by torch's backend autoload (its `torch.backends` entry point), so most
upstream files never import it; regen_device has no such entry point on a PYTHONPATH, so it is
imported here for every file instead.

known_failures.txt lists each test that fails on the reference device, with its reason: such a
test is an expected failure, strictly (if it starts passing, the run fails until the entry is
removed), or skipped where running it would hang or take the run down. Whole files that cannot be
collected on this torch are left out below, with their reason.
"""

import os

import pytest

import regen_device  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))

# Files left out of the run, and why.
collect_ignore = [
    # Calls sys.exit(0) at import unless torch_openreg's own distributed backend ("occl") is
    # present; regen's torch.distributed support is issue 28.
    "test_distributed.py",
    # Imports `skip` and `skipOps` from torch.testing._internal.common_methods_invocations, which
    # torch 2.15 moved (common_device_type, another signature); regen's OpInfo sweep
    # (opinfo/sweep.py) runs PyTorch's OpInfo samples on the device instead.
    "test_opinfo.py",
]


def _known():
    known = {}
    with open(os.path.join(HERE, "known_failures.txt")) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            test, status, reason = line.split(maxsplit=2)
            # `:reference`: the reference device's only (xtask drops such lines for other devices).
            status = status.removesuffix(":reference")
            assert status in ("xfail", "skip"), f"known_failures.txt: {line!r}"
            known[test] = (status, reason)
    return known


def pytest_collection_modifyitems(config, items):
    known = _known()
    seen = set()
    for item in items:
        # "test_device.py::TestDevice::test_x", whatever directory pytest runs from.
        test = item.nodeid.split("/")[-1]
        if test not in known:
            continue
        seen.add(test)
        status, reason = known[test]
        if status == "skip":
            item.add_marker(pytest.mark.skip(reason=reason))
        else:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
    # An entry that names no collected test is stale (a renamed test, a typo), unless its file
    # was not collected at all (a run of some files only).
    files = {item.nodeid.split("/")[-1].split("::")[0] for item in items}
    stale = [t for t in known if t not in seen and t.split("::")[0] in files]
    assert not stale, f"known_failures.txt names tests that do not exist: {stale}"
