"""The device module `torch._register_device_module("regen", ...)` needs: one device, index 0."""

import torch

_current = 0


def is_available() -> bool:
    return True


def device_count() -> int:
    return 1


def current_device() -> int:
    return _current


def set_device(device) -> None:
    index = torch.device(device).index if not isinstance(device, int) else device
    if index not in (None, 0):
        raise ValueError(f"regen has one device (index 0), not {index}")


def synchronize(device=None) -> None:
    """Kernels run synchronously on the host: nothing to wait for."""


def is_initialized() -> bool:
    return True


def _lazy_init() -> None:
    pass


def _is_in_bad_fork() -> bool:
    return False


def manual_seed(seed: int) -> None:
    # Random ops run through the CPU fallback and draw from the CPU generator. (torch.manual_seed
    # itself calls manual_seed_all here, so seed the generator directly.)
    torch.default_generator.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    torch.default_generator.manual_seed(seed)


def get_rng_state(device="regen"):
    return torch.get_rng_state()


def set_rng_state(state, device="regen") -> None:
    torch.set_rng_state(state)
