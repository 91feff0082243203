"""Helpers shared by the test files."""
import contextlib

import torch


@contextlib.contextmanager
def native_only():
    """Runs the block with the CPU fallback refusing, so every operator in it must be native."""
    previous = torch.opencl.fallback_mode()
    torch.opencl.set_fallback_mode("error")
    try:
        yield
    finally:
        torch.opencl.set_fallback_mode(previous)
