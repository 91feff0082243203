#pragma once
// Bindings that live in files of their own, added to torch_opencl._C by module.cpp.
#include <pybind11/pybind11.h>

namespace torch_opencl {

void bind_distributed(pybind11::module& m);  // distributed.cpp

}  // namespace torch_opencl
