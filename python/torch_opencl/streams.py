"""Streams and events for ``torch.opencl``, modelled on ``torch.cuda.Stream``/``Event``.

A stream is one of the device's in-order OpenCL command queues (id 0 is the
default stream, 1..31 a pool handed out round-robin, as CUDA's pool is). Every
operator enqueues on the calling thread's current stream. ``Stream`` and
``Event`` subclass ``torch.Stream`` and ``torch.Event``, so they work wherever
PyTorch takes those (``torch.accelerator``, ``Tensor.record_stream``).
"""
from typing import Any, Optional

import torch

from . import _C

__all__ = [
    "Stream",
    "Event",
    "StreamContext",
    "stream",
    "current_stream",
    "default_stream",
    "set_stream",
]


def _device_index(device: Any = None) -> int:
    if device is None:
        return _C._current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != "opencl":
        raise ValueError(f"Expected an opencl device, got {device}")
    return _C._current_device() if device.index is None else device.index


def _wrap(s: torch.Stream) -> "Stream":
    return Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


class Stream(torch.Stream):
    """An OpenCL command queue. ``Stream(device=None, priority=0)`` takes a queue from the
    device's pool; priorities are accepted and ignored (OpenCL 1.2 queues have none)."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs):
        if "stream_id" in kwargs:  # wrapping an existing stream
            return super().__new__(cls, **kwargs)
        index = _device_index(device)
        with torch.opencl.device(index):
            return super().__new__(cls, device=torch.device("opencl", index), priority=priority)

    def wait_event(self, event: torch.Event) -> None:
        """Makes all future work on this stream wait for ``event`` (returns without blocking the host)."""
        event.wait(self)

    def wait_stream(self, stream: torch.Stream) -> None:
        """Makes all future work on this stream wait for the work enqueued on ``stream`` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: Optional[torch.Event] = None) -> "Event":
        """Records ``event`` (a new ``Event`` if None) on this stream and returns it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def query(self) -> bool:
        """True if all work enqueued on this stream has finished."""
        return super().query()

    def synchronize(self) -> None:
        """Blocks the host until all work enqueued on this stream has finished."""
        super().synchronize()

    def __eq__(self, other) -> bool:
        if isinstance(other, torch.Stream):
            return super().__eq__(other)
        return False

    def __hash__(self):
        return hash((self.stream_id, self.device))

    def __repr__(self):
        return f"<torch.opencl.Stream device={self.device} stream_id={self.stream_id}>"


class Event(torch.Event):
    """A marker in a stream: ordering between streams, queries, and timing
    (every queue has profiling enabled, so ``enable_timing`` costs nothing)."""

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
        if interprocess:
            raise RuntimeError("Interprocess events are not supported on opencl")
        return super().__new__(
            cls, device=torch.device("opencl", _C._current_device()), enable_timing=enable_timing, blocking=blocking
        )

    def record(self, stream: Optional[torch.Stream] = None) -> None:
        """Records the event on ``stream`` (default: the current stream)."""
        super().record(current_stream() if stream is None else stream)

    def wait(self, stream: Optional[torch.Stream] = None) -> None:
        """Makes all future work on ``stream`` (default: the current stream) wait for this event."""
        super().wait(current_stream() if stream is None else stream)

    def query(self) -> bool:
        """True once the work the event marks has finished (an unrecorded event counts as done)."""
        return super().query()

    def synchronize(self) -> None:
        """Blocks the host until the work the event marks has finished."""
        super().synchronize()

    def elapsed_time(self, end_event: torch.Event) -> float:
        """Milliseconds between this event and ``end_event`` (both recorded; waits for them)."""
        return _C._event_elapsed_time(self, end_event)

    def __repr__(self):
        return f"<torch.opencl.Event device={self.device} event_id={self.event_id:#x}>"


def current_stream(device: Any = None) -> Stream:
    """The calling thread's current stream on ``device`` (default: the current device)."""
    index = _device_index(device)
    return Stream(stream_id=_C._current_stream_id(index), device_index=index, device_type=_PRIVATEUSE1)


def default_stream(device: Any = None) -> Stream:
    """The default stream (id 0) of ``device``."""
    return Stream(stream_id=0, device_index=_device_index(device), device_type=_PRIVATEUSE1)


def set_stream(stream: Optional[torch.Stream]) -> None:
    """Makes ``stream`` the current stream of its device (no-op for None). Prefer ``with stream(s):``."""
    if stream is None:
        return
    if stream.device.type != "opencl":
        raise ValueError(f"Expected an opencl stream, got {stream}")
    _C._set_current_stream(stream.device_index, stream.stream_id)


class StreamContext:
    """Context manager that makes ``stream`` current on its device and restores the previous one."""

    def __init__(self, stream: Optional[torch.Stream]):
        self.stream = stream
        self.prev: Optional[Stream] = None

    def __enter__(self):
        if self.stream is None:
            return None
        self.prev = current_stream(self.stream.device_index)
        set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc: Any):
        if self.prev is not None:
            set_stream(self.prev)
        return False


def stream(stream: Optional[torch.Stream]) -> StreamContext:
    """``with torch.opencl.stream(s):`` runs the block's operators on ``s``."""
    return StreamContext(stream)


# c10::DeviceType::PrivateUse1, as torch.Stream's device_type field spells it.
_PRIVATEUSE1 = 20
