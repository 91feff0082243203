"""``torch.opencl.compile_shader``: OpenCL C kernels of your own, called with tensors.

    lib = torch.opencl.compile_shader('''
        __kernel void saxpy(__global float* y, __global const float* x, float a, int n) {
            int i = get_global_id(0);
            if (i < n) y[i] += a * x[i];
        }''')
    lib.saxpy(y, x, 2.0, y.numel(), threads=y.numel())

A tensor argument reaches a ``__global T*`` (or ``__constant T*``) parameter as a pointer to its first
element, a view's storage offset included, whatever the offset (runtime/kernel_signature.h says how).
Python ints and floats go to by-value parameters, ``LocalMemory(nbytes)`` to ``__local T*`` ones.
Everything is checked against the kernel's signature before the launch, which is enqueued on the
current stream like any operator. Programs go through the program cache (memory and disk).
"""
from typing import Any, List, Optional, Sequence, Union

import torch

from . import _C

__all__ = ["compile_shader", "ShaderLibrary", "ShaderKernel", "LocalMemory"]

LocalMemory = _C.LocalMemory
_Sizes = Union[int, Sequence[int]]


class ShaderKernel:
    """One kernel of a :class:`ShaderLibrary`; calling it enqueues a launch."""

    __slots__ = ("_program", "_index", "_require_contiguous", "name", "parameters")

    def __init__(self, program, index: int, name: str, require_contiguous: bool):
        self._program = program
        self._index = index
        self._require_contiguous = require_contiguous
        self.name = name
        self.parameters: List[str] = program.parameters(index)

    def __call__(self, *args: Any, threads: Optional[_Sizes] = None, group_size: Optional[_Sizes] = None) -> None:
        """Launches with ``threads`` work-items (an int, or up to three sizes) in groups of ``group_size``
        (the driver chooses when left out; otherwise threads must be a multiple of it). Without
        ``threads``, one work-item per element of the first tensor argument."""
        if threads is None:
            first = next((a for a in args if isinstance(a, torch.Tensor)), None)
            if first is None:
                raise TypeError(f"kernel '{self.name}': pass threads= (no tensor argument gives a size)")
            threads = first.numel()
        self._program.launch(self._index, args, threads, group_size, self._require_contiguous)

    def __repr__(self) -> str:
        return f"<opencl kernel {self.name}({', '.join(self.parameters)})>"


class ShaderLibrary:
    """The kernels of one OpenCL C program, as attributes."""

    def __init__(self, source: str, options: str = "", require_contiguous: bool = True, device=None):
        self._program = _C._UserProgram(source, options)
        self._kernels = {
            name: ShaderKernel(self._program, i, name, require_contiguous)
            for i, name in enumerate(self._program.kernel_names())
        }
        # As instance attributes, so that lib.name is a plain lookup (__getattr__ took 3 us of a 9 us launch);
        # a kernel named like one of the class's attributes stays reachable through getattr's fallback only
        # where the class has no such attribute, as before.
        for name, kernel in self._kernels.items():
            if not hasattr(type(self), name):
                self.__dict__[name] = kernel
        # Built now, so that a source that does not compile fails here with the driver's log.
        from .device_module import _checked_index

        self._program.build(_checked_index(device))

    def __getattr__(self, name: str) -> ShaderKernel:
        kernels = self.__dict__.get("_kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(f"The program has no kernel '{name}'; its kernels are: {', '.join(kernels)}")

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._kernels))

    @property
    def kernel_names(self) -> List[str]:
        return list(self._kernels)

    @property
    def built_source(self) -> str:
        """The source as built: pointer parameters rewritten to a buffer and a byte offset."""
        return self._program.built_source


def compile_shader(source: str, *, options: str = "", require_contiguous: bool = True, device=None) -> ShaderLibrary:
    """Compiles OpenCL C ``source`` for the current (or given) opencl device and returns its kernels.

    ``options`` go to the OpenCL compiler (``-D`` defines, ``-cl-fast-relaxed-math``). A tensor passed to
    a pointer parameter must be contiguous unless ``require_contiguous=False`` (then the kernel must
    index with strides it is given). A build error raises ``torch.opencl.OpenCLError`` carrying the
    driver's log, whose line numbers are those of ``source``.
    """
    if not isinstance(source, str):
        raise TypeError(f"compile_shader takes the OpenCL C source as a str, got {type(source).__name__}")
    return ShaderLibrary(source, options, require_contiguous, device)
