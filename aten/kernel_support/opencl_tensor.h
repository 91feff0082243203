#pragma once
// Small helpers to hand tensors to OpenCL kernels.
#include <ATen/core/Tensor.h>

#include "runtime/allocator.h"
#include "runtime/launch.h"
#include "runtime/stream.h"

namespace torch_opencl {

inline int device_index(const at::Tensor& t) { return t.device().index(); }

inline int current_stream_of(const at::Tensor& t) { return tocl::current_stream(device_index(t)); }

// The tensor's buffer and element offset (data_ptr may sit inside a block). An empty tensor
// has no memory to address (its data_ptr is null even when it views a live storage, possibly
// just past its end): it gets a null buffer, which kernels never read, having no elements.
inline tocl::BufferArg buffer_arg(const at::Tensor& t) {
  if (t.numel() == 0 || !t.storage().data()) return {nullptr, 0};
  const auto r = tocl::resolve(t.const_data_ptr());
  return {r.buffer, r.offset / t.element_size()};
}

}  // namespace torch_opencl
