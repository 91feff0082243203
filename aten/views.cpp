#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ResizeCommon.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/DeviceGuard.h>

#include "aten/minimal_ops.h"

namespace torch_opencl {
namespace {

// Grows the tensor's storage to new_bytes if it holds fewer, keeping its contents (the
// device counterpart of at::native::maybe_resize_storage_cpu, whose memcpy cannot reach
// device memory).
void maybe_resize_storage(c10::TensorImpl* self, size_t new_bytes) {
  // A storage is never resized to hold 0 elements (a positive offset would break it), as on CPU and CUDA.
  if (self->numel() == 0) return;
  const c10::Storage& storage = self->unsafe_storage();
  if (!storage) {
    auto fresh = c10::make_intrusive<c10::StorageImpl>(c10::StorageImpl::use_byte_size_t(), new_bytes,
                                                       c10::GetAllocator(c10::DeviceType::PrivateUse1), true);
    self->set_storage_keep_dtype(std::move(fresh));
  } else if (new_bytes > storage.nbytes()) {
    const c10::DeviceGuard guard(storage.device());
    at::detail::getPrivateUse1Hooks().resizePrivateUse1Bytes(storage, new_bytes);
  }
}

// at::native::resize_impl_cpu_ with device storage.
void resize_impl(c10::TensorImpl* self, c10::IntArrayRef size, at::OptionalIntArrayRef stride) {
  if (self->sizes() == size && (!stride || self->strides() == stride.value())) return;
  const auto itemsize = self->dtype().itemsize();
  const auto offset = self->storage_offset();
  size_t bytes = 1;
  if (stride) {
    self->set_sizes_and_strides(size, *stride);
    bytes = at::detail::computeStorageNbytes(size, *stride, itemsize, offset);
  } else {
    self->set_sizes_contiguous(size);
    bytes = at::detail::computeStorageNbytesContiguous(size, itemsize, offset);
  }
  maybe_resize_storage(self, bytes);
}

}  // namespace

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

// at::native::resize_ (CPU) but growing device storage with a device copy of the old bytes.
const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size, std::optional<c10::MemoryFormat> format) {
  at::detail::check_size_nonnegative(size);
  auto* impl = self.unsafeGetTensorImpl();
  const int64_t old_bytes = impl->unsafe_storage() ? static_cast<int64_t>(impl->unsafe_storage().nbytes()) : 0;
  resize_impl(impl, size, std::nullopt);
  if (format.has_value()) {
    TORCH_CHECK(*format != c10::MemoryFormat::Preserve, "Unsupported memory format", *format);
    impl->empty_tensor_restride(*format);
  }
  if (at::globalContext().deterministicAlgorithms() && at::globalContext().deterministicFillUninitializedMemory())
    at::native::fill_resize_deterministic_(self, old_bytes);
  return self;
}

at::Tensor& set_source_tensor_(at::Tensor& self, const at::Tensor& source) {
  return at::native::set_tensor_(self, source);  // redispatches to set_.source_Storage_storage_offset
}

at::Tensor& set_source_storage_(at::Tensor& self, c10::Storage source) {
  return at::native::set_(self, source);  // redispatches to set_.source_Storage_storage_offset
}

// at::native::set_storage_cpu_, growing device storage (a view past the end of the storage
// grows it, as on CPU) with resize_impl instead of the CPU memcpy.
at::Tensor& set_source_storage_offset_(at::Tensor& self, c10::Storage source, int64_t storage_offset,
                                       c10::IntArrayRef size, c10::IntArrayRef stride) {
  at::native::checkSetStorage(self, std::move(source), storage_offset, size, stride);
  self.unsafeGetTensorImpl()->set_storage_offset(storage_offset);
  const at::OptionalIntArrayRef stride_opt =
      stride.data() != nullptr ? at::OptionalIntArrayRef(stride) : std::nullopt;
  resize_impl(self.unsafeGetTensorImpl(), size, stride_opt);
  return self;
}

}  // namespace torch_opencl
