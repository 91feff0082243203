// Tensor copies in every direction: host <-> device, device <-> device (same
// or another device), any dtype pair and any strides.
#include <ATen/ATen.h>
#include <ATen/ops/resize_native.h>
#include <c10/core/DeviceGuard.h>

#include "aten/cl_types.h"
#include "aten/copy_kernels.h"
#include "aten/minimal_ops.h"
#include "aten/opencl_tensor.h"
#include "runtime/memcpy.h"

namespace torch_opencl {
namespace {

bool is_opencl(const at::Tensor& t) { return t.device().is_privateuseone(); }

bool plain_bytes(const at::Tensor& dst, const at::Tensor& src) {
  return dst.scalar_type() == src.scalar_type() && dst.sizes().equals(src.sizes()) && dst.is_contiguous() &&
         src.is_contiguous() && !src.is_neg() && !src.is_conj();
}

void host_to_device(const at::Tensor& dst, const at::Tensor& src) {
  const int device = device_index(dst);
  const int stream = current_stream_of(dst);
  if (plain_bytes(dst, src)) {
    tocl::copy_host_to_device(device, stream, dst.data_ptr(), src.const_data_ptr(), dst.nbytes());
    return;
  }
  if (device_supports(src.scalar_type(), device) && device_supports(dst.scalar_type(), device)) {
    // Upload as it is, then convert and lay out on the device.
    const auto staged_src = src.resolve_neg().resolve_conj().contiguous();
    auto staged = at::empty(staged_src.sizes(), staged_src.options().device(dst.device()));
    tocl::copy_host_to_device(device, stream, staged.data_ptr(), staged_src.const_data_ptr(), staged.nbytes());
    if (device_copy(dst, staged)) return;
  }
  // dtypes the device cannot compute with (complex, ...): convert on the host, in place over dst's bytes.
  auto mirror = host_mirror(dst);
  mirror.copy_(src);
  write_back_mirror(dst, mirror);
}

void device_to_host(const at::Tensor& dst, const at::Tensor& src) {
  const int device = device_index(src);
  if (plain_bytes(dst, src)) {
    tocl::copy_device_to_host(device, current_stream_of(src), dst.data_ptr(), src.const_data_ptr(), dst.nbytes());
    return;
  }
  if (device_supports(src.scalar_type(), device) && device_supports(dst.scalar_type(), device)) {
    // Convert and compact on the device, download, then lay out on the host.
    auto compact = at::empty(dst.sizes(), dst.options().device(src.device()));
    if (device_copy(compact, src)) {
      auto host = at::empty(dst.sizes(), dst.options());
      tocl::copy_device_to_host(device, current_stream_of(src), host.data_ptr(), compact.const_data_ptr(),
                                host.nbytes());
      dst.copy_(host);
      return;
    }
  }
  dst.copy_(host_mirror(src));
}

}  // namespace

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  // `self` is the source, as in ATen's schema _copy_from(Tensor self, Tensor dst).
  TORCH_CHECK(self.defined() && dst.defined(), "copy_: both tensors must be defined");
  if (dst.numel() == 0) return dst;
  if (is_opencl(dst) && self.device().is_cpu()) {
    const c10::DeviceGuard guard(dst.device());
    host_to_device(dst, self);
  } else if (is_opencl(self) && dst.device().is_cpu()) {
    const c10::DeviceGuard guard(self.device());
    device_to_host(dst, self);
  } else if (is_opencl(self) && is_opencl(dst) && self.device() == dst.device()) {
    const c10::DeviceGuard guard(dst.device());
    if (!device_copy(dst, self)) {
      auto mirror = host_mirror(dst);
      mirror.copy_(host_mirror(self));
      write_back_mirror(dst, mirror);
    }
  } else if (is_opencl(self) && is_opencl(dst)) {
    // Another opencl device: devices of different platforms share no memory, so go through the host.
    at::Tensor host;
    {
      const c10::DeviceGuard guard(self.device());
      host = self.to(at::kCPU);
    }
    const c10::DeviceGuard guard(dst.device());
    host_to_device(dst, host);
  } else {
    TORCH_CHECK(false, "copy_ between ", self.device(), " and ", dst.device(),
                " is not supported by the opencl backend");
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  at::native::resize_(dst, self.sizes(), std::nullopt);
  return copy_from(self, dst, false);
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  const c10::DeviceGuard guard(self.device());
  return host_mirror(self).item();
}

}  // namespace torch_opencl
