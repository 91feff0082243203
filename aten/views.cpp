#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/resize_native.h>
#include <ATen/ops/set_cpu_dispatch.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>

#include "aten/minimal_ops.h"

namespace torch_opencl {

// These only touch metadata, so ATen's own implementations serve; they check
// that a view stays inside its storage, as on CPU.
at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset) {
  return at::native::as_strided_tensorimpl(self, size, stride, storage_offset);
}

at::Tensor view(const at::Tensor& self, c10::IntArrayRef size) { return at::native::view(self, size); }

at::Tensor reshape_alias(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::native::_reshape_alias(self, size, stride);
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size, std::optional<c10::MemoryFormat> format) {
  return at::native::resize_(self, size, format);
}

at::Tensor& set_source_tensor_(at::Tensor& self, const at::Tensor& source) {
  return at::native::set_tensor_(self, source);
}

at::Tensor& set_source_storage_(at::Tensor& self, c10::Storage source) { return at::native::set_(self, source); }

at::Tensor& set_source_storage_offset_(at::Tensor& self, c10::Storage source, int64_t storage_offset,
                                       c10::IntArrayRef size, c10::IntArrayRef stride) {
  return at::cpu::set_(self, source, storage_offset, size, stride);
}

}  // namespace torch_opencl
