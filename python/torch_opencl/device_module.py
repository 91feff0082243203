"""``torch.opencl``: the device module, with the API people know from ``torch.cuda``."""
import contextlib
from typing import Any, Dict, Optional, Union

import torch

from . import _C

__all__ = [
    "is_available",
    "device_count",
    "current_device",
    "set_device",
    "device",
    "get_device_name",
    "get_device_properties",
    "synchronize",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "reset_peak_memory_stats",
    "reset_accumulated_memory_stats",
    "memory_stats",
    "memory_summary",
    "empty_cache",
    "fallback_stats",
    "reset_fallback_stats",
    "fallback_mode",
    "set_fallback_mode",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "is_initialized",
    "OpenCLError",
]

OpenCLError = _C.OpenCLError
_DeviceLike = Union[torch.device, str, int, None]


def is_available() -> bool:
    """True if at least one OpenCL device is selected. A selection variable that
    names nothing raises an error that lists what exists."""
    return _C._device_count() > 0


def is_initialized() -> bool:
    """True once this process has enumerated the OpenCL devices (the first device use does it;
    importing torch_opencl does not). A process forked after that cannot use the device."""
    return _C._is_initialized()


def device_count() -> int:
    return _C._device_count()


def _index(device: _DeviceLike = None, optional: bool = True) -> int:
    if device is None:
        return _C._current_device()
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "opencl":
            raise ValueError(f"Expected an opencl device, got {device}")
        return _C._current_device() if device.index is None else device.index
    if isinstance(device, int):
        return device
    raise TypeError(f"Expected a device index, an opencl device or None, got {device!r}")


def _checked_index(device: _DeviceLike = None) -> int:
    index = _index(device)
    count = _C._device_count()
    if not 0 <= index < count:
        raise RuntimeError(f"Invalid device opencl:{index}: {count} opencl device(s) are available")
    return index


def current_device() -> int:
    return _C._current_device()


def set_device(device: _DeviceLike) -> None:
    index = _index(device)
    if index >= 0:
        _C._set_device(_checked_index(index))


class device:
    """Context manager that makes ``device`` current and restores the previous one."""

    def __init__(self, device: _DeviceLike):
        self.index = _index(device)
        self.previous = -1

    def __enter__(self):
        self.previous = _C._current_device()
        if self.index >= 0 and self.index != self.previous:
            _C._set_device(_checked_index(self.index))
        return self

    def __exit__(self, *exc: Any):
        if self.previous != self.index and self.index >= 0:
            _C._set_device(self.previous)
        return False


class _DeviceProperties:
    def __init__(self, props: Dict[str, Any]):
        self.__dict__.update(props)

    def __repr__(self):
        return (
            f"_OpenCLDeviceProperties(name='{self.name}', vendor='{self.vendor}', platform='{self.platform}', "
            f"driver_version='{self.driver_version}', total_memory={self.total_memory // (1 << 20)}MB, "
            f"compute_units={self.compute_units}, fp64={self.fp64}, fp16={self.fp16})"
        )


def get_device_properties(device: _DeviceLike = None) -> _DeviceProperties:
    return _DeviceProperties(_C._device_properties(_checked_index(device)))


def get_device_name(device: _DeviceLike = None) -> str:
    return get_device_properties(device).name


def synchronize(device: _DeviceLike = None) -> None:
    """Waits for all work on every stream of the device."""
    _C._synchronize(_checked_index(device))


# --- Memory: the caching allocator's statistics, named as torch.cuda names them.


def memory_stats(device: _DeviceLike = None) -> Dict[str, int]:
    stats = _C._memory_stats(_checked_index(device))
    return dict(sorted(stats.items()))


def memory_allocated(device: _DeviceLike = None) -> int:
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device: _DeviceLike = None) -> int:
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device: _DeviceLike = None) -> int:
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device: _DeviceLike = None) -> int:
    return memory_stats(device)["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device: _DeviceLike = None) -> None:
    _C._reset_peak_memory_stats(_checked_index(device))


def reset_accumulated_memory_stats(device: _DeviceLike = None) -> None:
    _C._reset_accumulated_memory_stats(_checked_index(device))


def empty_cache() -> None:
    """Releases cached, unused blocks of every device back to the driver."""
    for index in range(device_count()):
        _C._empty_cache(index)


def _format_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return str(n)


def memory_summary(device: _DeviceLike = None, abbreviated: bool = False) -> str:
    index = _checked_index(device)
    stats = memory_stats(index)
    rows = [
        ("Allocated memory", "allocated_bytes", True),
        ("Active memory", "active_bytes", True),
        ("Requested memory", "requested_bytes", True),
        ("Reserved memory", "reserved_bytes", True),
        ("Non-releasable memory", "inactive_split_bytes", True),
        ("Allocations", "allocation", False),
        ("Active allocs", "active", False),
        ("Device reserved segments", "segment", False),
        ("Non-releasable allocs", "inactive_split", False),
    ]
    width = 75
    lines = [
        "=" * width,
        f" OpenCL memory summary, device opencl:{index} ({get_device_name(index)})",
        "-" * width,
        f" {'Metric':<26}{'Cur Usage':>12}{'Peak Usage':>12}{'Tot Alloc':>12}{'Tot Freed':>12}",
        "-" * width,
    ]
    for title, key, is_bytes in rows:
        fmt = _format_bytes if is_bytes else str
        pools = ("all",) if abbreviated else ("all", "large_pool", "small_pool")
        for pool in pools:
            prefix = f"{key}.{pool}."
            label = title if pool == "all" else f"  from {pool.replace('_', ' ')}"
            lines.append(
                f" {label:<26}{fmt(stats[prefix + 'current']):>12}{fmt(stats[prefix + 'peak']):>12}"
                f"{fmt(stats[prefix + 'allocated']):>12}{fmt(stats[prefix + 'freed']):>12}"
            )
        lines.append("-" * width)
    lines.append(
        f" Cache hits: {stats['cache_hits']}  misses: {stats['cache_misses']}  "
        f"alloc retries: {stats['num_alloc_retries']}  OOMs: {stats['num_ooms']}"
    )
    lines.append("=" * width)
    return "\n".join(lines) + "\n"


# --- The CPU fallback's report and mode.


def fallback_stats() -> Dict[str, int]:
    """{operator name: calls} for every operator the CPU fallback served since the last reset."""
    return dict(_C._fallback_stats())


def reset_fallback_stats() -> None:
    _C._reset_fallback_stats()


def fallback_mode() -> str:
    """'warn', 'silent' or 'error' (from TORCH_OPENCL_FALLBACK, or as last set)."""
    return _C._fallback_mode()


def set_fallback_mode(mode: str) -> None:
    _C._set_fallback_mode(mode)


# --- Random number generation: the device generators.


def _is_in_bad_fork() -> bool:
    """True in a process forked after the parent initialised OpenCL: the device is unusable there
    (use the 'spawn' start method). torch.manual_seed asks this before seeding."""
    return _C._is_in_bad_fork()


def _default_generator(index: int) -> torch.Generator:
    return _C._default_generator(index)


def manual_seed(seed: int) -> None:
    """Seeds the current device's generator."""
    _default_generator(_checked_index()).manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    # torch.manual_seed calls this for every registered backend: no device means nothing to seed.
    for index in range(device_count()):
        _default_generator(index).manual_seed(int(seed))


def seed() -> None:
    _default_generator(_checked_index()).seed()


def initial_seed() -> int:
    return _default_generator(_checked_index()).initial_seed()


def get_rng_state(device: _DeviceLike = "opencl") -> torch.Tensor:
    return _default_generator(_checked_index(device)).get_state()


def set_rng_state(new_state: torch.Tensor, device: _DeviceLike = "opencl") -> None:
    _default_generator(_checked_index(device)).set_state(new_state)


# --- Streams and events, RNG state of all devices, autocast, user kernels (one module per concern).

from .amp import get_amp_supported_dtype, is_bf16_supported, is_fp16_supported  # noqa: E402
from .random import get_rng_state_all, set_rng_state_all  # noqa: E402
from . import random as _random, streams as _streams  # noqa: E402
from .streams import Event, Stream, StreamContext, current_stream, default_stream, set_stream, stream  # noqa: E402
from .shader import LocalMemory, compile_shader  # noqa: E402

__all__ += _streams.__all__ + _random.__all__ + [
    "get_amp_supported_dtype",
    "is_bf16_supported",
    "is_fp16_supported",
    "compile_shader",
    "LocalMemory",
]


def __getattr__(name: str):
    # Inductor looks for a renamed PrivateUse1 backend's code generators here
    # (torch._inductor.codegen.common.init_backend_registration); importing them imports Inductor, so
    # only when asked.
    if name in ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen"):
        from . import _inductor

        return getattr(_inductor, name)
    raise AttributeError(f"module 'torch.opencl' has no attribute '{name}'")
