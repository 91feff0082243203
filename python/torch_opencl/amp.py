"""Autocast for opencl: ``torch.autocast("opencl")`` with PyTorch's operator lists
(registered for AutocastPrivateUse1 in aten/autocast.cpp).

The default lower-precision dtype is bfloat16 on every device: it is stored in 16
bits and computed in float, so it needs no extension. float16 is accepted too
(``torch.autocast("opencl", dtype=torch.float16)``) where every selected device
has cl_khr_fp16. The default is not chosen per device at import because asking
the devices enumerates the OpenCL platforms, which would make every process
forked after ``import torch`` unable to use the device (see runtime/fork.h).
``torch.set_autocast_dtype`` is per thread, as it is for CUDA: the default is set
in the thread that imports torch_opencl.
"""
from typing import List

import torch

from . import _C

__all__ = ["get_amp_supported_dtype", "is_bf16_supported", "is_fp16_supported"]


def is_fp16_supported() -> bool:
    """True if every selected device has cl_khr_fp16."""
    count = _C._device_count()
    return count > 0 and all(_C._device_properties(i)["fp16"] for i in range(count))


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bfloat16 is stored as 16 bits and computed in float on every OpenCL device."""
    return _C._device_count() > 0


def get_amp_supported_dtype() -> List[torch.dtype]:
    """The dtypes torch.autocast("opencl", dtype=...) accepts (autocast asks the device module)."""
    return [torch.bfloat16, torch.float16] if is_fp16_supported() else [torch.bfloat16]


def _set_default_autocast_dtype() -> None:
    torch.set_autocast_dtype("opencl", torch.bfloat16)
