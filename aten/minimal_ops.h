#pragma once
// The minimum operator set every PrivateUse1 backend provides natively.
#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/Storage.h>

#include <optional>

namespace torch_opencl {

// tensor_factories.cpp
at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format);
at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory);
at::Tensor efficient_zero_tensor(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                                 std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                                 std::optional<bool> pin_memory);

// views.cpp
at::Tensor as_strided(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride,
                      std::optional<int64_t> storage_offset);
at::Tensor view(const at::Tensor& self, c10::IntArrayRef size);
at::Tensor reshape_alias(const at::Tensor& self, c10::IntArrayRef size, c10::IntArrayRef stride);
const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size, std::optional<c10::MemoryFormat> format);
at::Tensor& set_source_tensor_(at::Tensor& self, const at::Tensor& source);
at::Tensor& set_source_storage_(at::Tensor& self, c10::Storage source);
at::Tensor& set_source_storage_offset_(at::Tensor& self, c10::Storage source, int64_t storage_offset,
                                       c10::IntArrayRef size, c10::IntArrayRef stride);

// copy.cpp
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking);
at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst);
c10::Scalar local_scalar_dense(const at::Tensor& self);

// shallow_copy.cpp
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from);

// fill.cpp
at::Tensor& fill_scalar_(at::Tensor& self, const c10::Scalar& value);
at::Tensor& fill_tensor_(at::Tensor& self, const at::Tensor& value);
at::Tensor& zero_(at::Tensor& self);

}  // namespace torch_opencl
