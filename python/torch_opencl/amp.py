"""Autocast for opencl: ``torch.autocast("opencl")`` with PyTorch's operator lists
(registered for AutocastPrivateUse1 in aten/autocast.cpp).

The default lower-precision dtype is float16 where every selected device has
cl_khr_fp16, and bfloat16 otherwise. Both are accepted on every device, as CUDA
accepts both: each is stored in 16 bits and computed in float (vload_half and
vstore_half are core OpenCL), so cl_khr_fp16 changes no result, only which
dtype a region gets when it names none. Choosing needs the
devices, and enumerating the OpenCL platforms at import would make every process
forked after ``import torch`` unable to use the device (see runtime/fork.h), so
the choice is lazy (aten/autocast.h): the importing thread holds bfloat16 until
the devices are first selected, and PyTorch's autocast dtype being per thread,
each thread gets the default when the devices are selected in it or when
``torch.autocast("opencl")`` first asks ``get_amp_supported_dtype`` there. A dtype
set with ``torch.set_autocast_dtype`` before that is kept.
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
    """The dtypes torch.autocast("opencl", dtype=...) accepts (autocast asks the device module): both
    16-bit dtypes, on every device. Also gives the calling thread its default autocast dtype, once (see
    the module's docstring)."""
    _C._autocast_apply_default(is_fp16_supported())
    return [torch.bfloat16, torch.float16]
