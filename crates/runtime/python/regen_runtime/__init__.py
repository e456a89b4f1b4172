"""The "regen" device: PyTorch's PrivateUse1 backend with kernels written in Rust.

Importing this package loads the extension (its static initialisers register the allocator,
the device guard, the PrivateUse1 hooks and every generated kernel), renames PrivateUse1 to
"regen", registers the device module and generates the tensor/module methods, so that
``torch.ones(2, device="regen")``, ``t.to("regen")``, ``t.regen()`` and ``t.cpu()`` work.
"""

import ctypes
import os

import torch

_LIBRARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_regen_runtime.so")
if not os.path.exists(_LIBRARY):
    raise ImportError(f"{_LIBRARY} is missing: build it with `cargo xtask e2e` (or `cargo xtask build-extension`)")

torch.ops.load_library(_LIBRARY)
_native = ctypes.CDLL(_LIBRARY)
_native.regen_runtime_native_calls.restype = ctypes.c_uint64
_native.regen_runtime_native_calls.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
_native.regen_runtime_set_panic_on.restype = None
_native.regen_runtime_set_panic_on.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
_native.regen_runtime_bytes_in_use.restype = ctypes.c_uint64
_native.regen_runtime_bytes_in_use.argtypes = []

from . import device as _device  # noqa: E402

torch.utils.rename_privateuse1_backend("regen")
torch._register_device_module("regen", _device)
torch.utils.generate_methods_for_privateuse1_backend(for_storage=True)


def native_calls(op: str) -> int:
    """How many times the Rust kernel of ``op`` (e.g. ``"add.out"``) has run."""
    name = op.encode()
    return int(_native.regen_runtime_native_calls(name, len(name)))


def bytes_in_use() -> int:
    """Bytes of device memory currently allocated."""
    return int(_native.regen_runtime_bytes_in_use())


def _panic_on(op: str) -> None:
    """Test hook: make the Rust kernel of ``op`` panic ("" to stop)."""
    name = op.encode()
    _native.regen_runtime_set_panic_on(name, len(name))
