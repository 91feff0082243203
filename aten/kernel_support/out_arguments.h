#pragma once
// The rules an out= (or other written) tensor argument meets before an operator writes it, as CUDA's
// kernels and TensorIterator apply them. Shared by the boxed CPU fallback (fallback/fallback.cpp, for every
// written argument) and by native out= kernels, so that both refuse what CPU and CUDA refuse.
#include <ATen/ATen.h>

namespace torch_opencl {

// A written tensor is on the device the operator runs on, whatever its dimensions: CPU 0-dim tensors mix with
// device tensors as inputs only (TensorIterator exempts CPU scalars that are not outputs).
void check_out_device(const at::Tensor& out, c10::Device device, const char* op);

// A result of dtype `result` is written to `out` only where it casts without loss of kind (at::canCast: no
// float into an integer, no complex into a real, nothing but bool into bool), as CPU's out= kernels check.
void check_out_dtype(c10::ScalarType result, const at::Tensor& out, const char* op);

}  // namespace torch_opencl
