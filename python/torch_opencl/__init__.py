"""torch-opencl: an OpenCL accelerator backend for PyTorch.

Importing this package (plain ``import torch`` does it through the
``torch.backends`` entry point) renames PyTorch's PrivateUse1 backend to
``opencl``, registers ``torch.opencl`` and the ``.opencl()`` methods, and loads
the native kernels and the CPU fallback.
"""
import warnings

import torch

from torch_opencl_autoload import CUDA_CONFLICT, accelerator_build

if accelerator_build():
    warnings.warn(CUDA_CONFLICT.format(build=accelerator_build()), RuntimeWarning, stacklevel=2)

from . import _C  # noqa: E402,F401  (loads libtorch_opencl: guard, hooks, allocator, kernels)

_BACKEND = "opencl"


def _register():
    if torch._C._get_privateuse1_backend_name() != _BACKEND:
        torch.utils.rename_privateuse1_backend(_BACKEND)
    from . import device_module

    if not hasattr(torch, _BACKEND):
        torch._register_device_module(_BACKEND, device_module)
    if not hasattr(torch.Tensor, "is_opencl"):
        torch.utils.generate_methods_for_privateuse1_backend(
            for_tensor=True, for_module=True, for_storage=True, for_packed_sequence=True
        )


_register()

from . import distributed as _distributed  # noqa: E402

_distributed.register()

from .device_module import *  # noqa: E402,F401,F403



def _installed_version(source_version: str = "0.1.0") -> str:
    """The installed distribution's version, which names the torch a wheel was built for (0.1.0+torch2.13);
    the source tree's own where none is installed (PYTHONPATH=python)."""
    from importlib import metadata

    try:
        return metadata.version("torch-opencl")
    except metadata.PackageNotFoundError:
        return source_version


__version__ = _installed_version()



def _report_unraised_index_errors() -> None:
    """At exit: an index error a kernel recorded (GPU-class devices do not wait for their index checks,
    runtime/deferred_errors.h) that no synchronize or copy to the host raised is printed, not lost."""
    import sys

    try:
        if not _C._is_initialized() or _C._is_in_bad_fork():
            return
        devices = _C._device_count()
    except Exception:  # a failed device selection was reported where it happened
        return
    for device in range(devices):
        try:
            _C._synchronize(device)
        except IndexError as e:
            print(f"torch_opencl: at exit, an error no wait had raised: IndexError: {e}", file=sys.stderr)
        except Exception:  # the device's other failures are not this hook's to report
            pass


import atexit  # noqa: E402

atexit.register(_report_unraised_index_errors)
