"""The ``torch.backends`` entry point: ``import torch`` calls ``load()``.

It lives outside ``__init__`` so that ``import torch_opencl`` (which imports
torch, which runs this entry point) meets no half-initialised package attribute.
"""


def load():
    import torch_opencl  # noqa: F401  (importing registers the backend)
