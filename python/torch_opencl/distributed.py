"""torch.distributed for opencl tensors: the ``opencl_gloo`` backend.

opencl_gloo copies each collective's opencl tensors into pinned host buffers (after the work queued on
the caller's current stream), runs gloo's operation on them (a ProcessGroupGloo of its own), and
copies the results back, on a stream of its own; ``Work.wait()`` blocks until gloo is done and makes
the current stream wait for those copies (see aten/distributed/). Registered at import:

- ``init_process_group()`` (no backend; torch picks by ``torch.accelerator``) and
  ``init_process_group("opencl_gloo")``: opencl tensors through opencl_gloo, CPU tensors through gloo.
- ``init_process_group("gloo")``: the same (gloo alone cannot take opencl tensors).
- ``init_process_group("cpu:gloo,opencl:opencl_gloo")``: exactly as written.
"""
import torch
import torch.distributed as dist

from . import _C

BACKEND = "opencl_gloo"
_DEVICE = "opencl"


def _create(store, rank, size, timeout):
    # `store` is already this group's and this device type's prefix of the rendezvous store.
    gloo = dist.ProcessGroupGloo(store, rank, size, timeout)
    return _C._staging_backend(gloo, rank, size, timeout)


def _complete_device_map(config, backend):
    """Add the device type the user did not name where the one-word forms imply it."""
    devices = config.device_backend_map
    if ":" in str(backend):
        return  # "cpu:gloo,opencl:opencl_gloo": taken as written
    if devices.get("cpu") == dist.Backend.GLOO and _DEVICE not in devices:
        devices[_DEVICE] = dist.Backend(BACKEND)  # "gloo": its CPU tensors, and ours
        # gloo's CUDA entry would only create a second, unused gloo context in a build without CUDA.
        if devices.get("cuda") == dist.Backend.GLOO and not torch.cuda.is_available():
            del devices["cuda"]
    elif devices.get(_DEVICE) == BACKEND and "cpu" not in devices:
        devices["cpu"] = dist.Backend(dist.Backend.GLOO)  # no backend, or "opencl_gloo": CPU tensors too


def _patch_backend_config():
    config_class = dist.distributed_c10d.BackendConfig
    if getattr(config_class, "_torch_opencl_patched", False):
        return
    original_init = config_class.__init__

    def __init__(self, backend):
        original_init(self, backend)
        _complete_device_map(self, backend)

    config_class.__init__ = __init__
    config_class._torch_opencl_patched = True


def register():
    """Register opencl_gloo with torch.distributed (done when torch_opencl is imported)."""
    if not dist.is_available() or not dist.is_gloo_available():
        return
    if BACKEND.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND, _create, devices=[_DEVICE])
    _patch_backend_config()
