"""Paths for C++ extensions that register opencl kernels of their own (``examples/custom_op/``).

CMake::

    cmake -DCMAKE_PREFIX_PATH="$(python -c 'import torch_opencl.cpp_extension as e; print(e.cmake_prefix_path)')" ...
    find_package(TorchOpenCL REQUIRED)          # also finds the torch installed beside torch_opencl
    target_link_libraries(myops PRIVATE TorchOpenCL::torch_opencl)

The public headers (``#include <torch_opencl/extension.h>``) are under :func:`include_paths`, the
library under :func:`library_paths`, as ``torch.utils.cpp_extension`` names torch's.
"""
import os

_ROOT = os.path.dirname(os.path.abspath(__file__))

#: The directory to add to CMAKE_PREFIX_PATH for ``find_package(TorchOpenCL)``.
cmake_prefix_path = os.path.join(_ROOT, "share", "cmake")


def include_paths():
    """Directories holding ``torch_opencl/extension.h`` and the headers it includes."""
    return [os.path.join(_ROOT, "include")]


def library_paths():
    """Directories holding ``libtorch_opencl.so``."""
    return [os.path.join(_ROOT, "lib")]
