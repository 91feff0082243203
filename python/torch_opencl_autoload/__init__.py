"""The ``torch.backends`` entry point of torch-opencl: ``import torch`` calls ``load()``.

It is a package of its own, apart from ``torch_opencl``, because importing anything inside
``torch_opencl`` runs its ``__init__``, which registers the backend; here the choice not to load can
be made without importing it.

In a CUDA or ROCm build of torch, registering a PrivateUse1 backend makes it torch's accelerator,
and from then on CUDA's autograd engine fails every backward pass
(``opt_ready_stream && opt_parent_stream INTERNAL ASSERT FAILED``, PyTorch issue 161129). So
``import torch`` does not load torch-opencl in such a build, and an explicit ``import torch_opencl``
loads it and says once what that costs.
"""

CUDA_CONFLICT = (
    "torch_opencl: this torch is a {build} build. With the opencl backend registered, backward passes "
    "on CUDA tensors fail in this process (PyTorch issue 161129); opencl itself works. Use cuda and "
    "opencl in separate processes, or a CPU build of torch for opencl. (In such a build, `import torch` "
    "does not load torch_opencl; `import torch_opencl` does.)"
)


def accelerator_build():
    """'CUDA 13.0' or 'ROCm 6.2' where torch was built for one, else None."""
    import torch

    cuda = getattr(torch.version, "cuda", None)
    if cuda:
        return f"CUDA {cuda}"
    hip = getattr(torch.version, "hip", None)
    if hip:
        return f"ROCm {hip}"
    return None


def load():
    if accelerator_build():
        return
    import torch_opencl  # noqa: F401  (importing registers the backend)
