"""RNG state of every device at once, as ``torch.cuda.get_rng_state_all`` gives it.

The per-device functions (``manual_seed``, ``seed``, ``get_rng_state``...) live in
``device_module``; each device has one default ``torch.Generator("opencl:N")``.
"""
from typing import Iterable, List

import torch

from . import _C

__all__ = ["get_rng_state_all", "set_rng_state_all"]


def get_rng_state_all() -> List[torch.Tensor]:
    """The state (a ByteTensor) of every device's default generator, in device order."""
    return [_C._default_generator(i).get_state() for i in range(_C._device_count())]


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    """Sets every device's default generator from ``get_rng_state_all()``'s list."""
    states = list(new_states)
    count = _C._device_count()
    if len(states) > count:
        raise ValueError(f"set_rng_state_all got {len(states)} states for {count} opencl device(s)")
    for index, state in enumerate(states):
        _C._default_generator(index).set_state(state)
