"""The opencl device as Dynamo and Inductor see it (torch._dynamo.device_interface)."""
from collections import namedtuple
from typing import Any

import torch
from torch._dynamo.device_interface import DeviceInterface

from .. import _C, device_module, streams

_Properties = namedtuple("OpenCLProperties", ["name", "multi_processor_count", "total_memory", "kernel_class"])


def _properties(device: Any = None):
    p = device_module.get_device_properties(device)
    return _Properties(p.name, p.compute_units, p.total_memory, p.kernel_class)


class OpenCLInterface(DeviceInterface):
    device = device_module.device  # type: ignore[assignment]
    Event = streams.Event  # type: ignore[assignment]
    Stream = streams.Stream  # type: ignore[assignment]

    class Worker:
        @staticmethod
        def set_device(device: int) -> None:
            device_module.set_device(device)

        @staticmethod
        def current_device() -> int:
            return device_module.current_device()

        @staticmethod
        def get_device_properties(device: Any = None):
            return _properties(device)

    current_device = staticmethod(device_module.current_device)
    set_device = staticmethod(device_module.set_device)
    device_count = staticmethod(device_module.device_count)
    is_available = staticmethod(device_module.is_available)
    synchronize = staticmethod(device_module.synchronize)
    stream = staticmethod(streams.stream)
    current_stream = staticmethod(streams.current_stream)
    set_stream = staticmethod(streams.set_stream)
    get_device_properties = staticmethod(_properties)

    @staticmethod
    def maybe_exchange_device(device: int) -> int:
        previous = _C._current_device()
        if device >= 0 and device != previous:
            device_module.set_device(device)
        return previous

    exchange_device = maybe_exchange_device

    @staticmethod
    def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
        _C._set_current_stream(device_index, stream_id)

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        return _C._current_stream_id(device_idx)

    @staticmethod
    def get_compute_capability(device: Any = None) -> str:
        return ""

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True  # stored as ushort, computed in float

    @classmethod
    def is_dtype_supported(cls, dtype: torch.dtype, including_emulation: bool = False) -> bool:
        if dtype == torch.float64:
            return bool(device_module.get_device_properties().fp64)
        return not dtype.is_complex

    @staticmethod
    def memory_allocated(device: Any = None) -> int:
        return device_module.memory_allocated(device)

    @staticmethod
    def is_triton_capable(device: Any = None) -> bool:
        return False
