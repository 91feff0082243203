#pragma once
// Device-side copies: dtype conversion and any strides, one program per dtype pair.
#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

namespace torch_opencl {

// dst[...] = src[...] converted, both on the same opencl device, src broadcast to dst.
// Returns false if the geometry or dtypes need the host path instead.
bool device_copy(const at::Tensor& dst, const at::Tensor& src);

// Every element of dst (any strides) set to value. Returns false if dst's dtype needs the host path.
bool device_fill(const at::Tensor& dst, const c10::Scalar& value);

// A CPU tensor with t's sizes and strides over a copy of the device bytes it covers.
at::Tensor host_mirror(const at::Tensor& t);
// Writes a host mirror (from host_mirror(t), then modified) back to t's device bytes.
void write_back_mirror(const at::Tensor& t, const at::Tensor& mirror);

}  // namespace torch_opencl
