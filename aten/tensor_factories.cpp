#include <ATen/EmptyTensor.h>
#include <ATen/native/TensorFactories.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include "aten/kernel_support/cl_types.h"
#include "aten/minimal_ops.h"

namespace torch_opencl {
namespace {

constexpr c10::DispatchKeySet kOpenCLKeys(c10::DispatchKey::PrivateUse1);

c10::Device check_options(std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                          std::optional<bool> pin_memory) {
  const auto d = c10::device_or_default(device);
  TORCH_CHECK(d.is_privateuseone(), "expected an opencl device, got ", d);
  TORCH_CHECK(c10::layout_or_default(layout) == c10::Layout::Strided,
              "opencl supports only strided tensors; got layout ", c10::layout_or_default(layout));
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory), "pin_memory applies to CPU tensors only");
  return d;
}

}  // namespace

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format) {
  const auto d = check_options(layout, device, pin_memory);
  const c10::DeviceGuard guard(d);
  return at::detail::empty_generic(size, c10::GetAllocator(c10::DeviceType::PrivateUse1), kOpenCLKeys,
                                   c10::dtype_or_default(dtype), memory_format);
}

// A zero tensor without storage (autograd's zero gradients: sgn's of a real input, ...): the ZeroTensor key
// makes ATen read it as zeros and materialise it where an op needs memory, as CUDA's _efficientzerotensor.
// (Through the CPU fallback it was a null host pointer copied to the device: an OpenCL error.)
at::Tensor efficient_zero_tensor(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                                 std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                                 std::optional<bool> pin_memory) {
  auto d = check_options(layout, device, pin_memory);
  if (!d.has_index()) d = c10::impl::VirtualGuardImpl(c10::DeviceType::PrivateUse1).getDevice();
  at::native::ZeroTensorAllocator allocator(d);
  const auto keys = kOpenCLKeys | c10::DispatchKeySet(c10::DispatchKey::ZeroTensor);
  return at::detail::empty_generic(size, &allocator, keys, c10::dtype_or_default(dtype), std::nullopt);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory) {
  const auto d = check_options(layout, device, pin_memory);
  const c10::DeviceGuard guard(d);
  return at::detail::empty_strided_generic(size, stride, c10::GetAllocator(c10::DeviceType::PrivateUse1),
                                           kOpenCLKeys, c10::dtype_or_default(dtype));
}

}  // namespace torch_opencl
