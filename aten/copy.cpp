// Tensor copies in every direction: host <-> device, device <-> device (same
// or another device), any dtype pair and any strides.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/resize_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/kernel_support/cl_types.h"
#include "aten/copy_kernels.h"
#include "aten/minimal_ops.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/host_allocator.h"
#include "runtime/memcpy.h"

namespace torch_opencl {
namespace {

bool is_opencl(const at::Tensor& t) { return t.device().is_privateuseone(); }

// Same math bits on both sides: then the stored bytes carry over unchanged (negation and
// conjugation are their own inverses), whatever the bits are.
bool same_math_bits(const at::Tensor& dst, const at::Tensor& src) {
  return dst.is_neg() == src.is_neg() && dst.is_conj() == src.is_conj();
}

bool plain_bytes(const at::Tensor& dst, const at::Tensor& src) {
  return dst.scalar_type() == src.scalar_type() && dst.sizes().equals(src.sizes()) && dst.is_contiguous() &&
         src.is_contiguous() && same_math_bits(dst, src);
}

// A non_blocking copy is asynchronous where the host side is pinned memory, whose block the
// host allocator then keeps until the stream has passed the copy; otherwise it blocks, as on CUDA.
bool async_with(const at::Tensor& host, bool non_blocking) {
  return non_blocking && tocl::is_pinned(host.const_data_ptr());
}

void host_to_device(const at::Tensor& dst, const at::Tensor& src, bool non_blocking = false) {
  const int device = device_index(dst);
  const int stream = current_stream_of(dst);
  if (plain_bytes(dst, src)) {
    const bool async = async_with(src, non_blocking);
    tocl::copy_host_to_device(device, stream, dst.data_ptr(), src.const_data_ptr(), dst.nbytes(), !async);
    if (async) tocl::host_record_use(src.const_data_ptr(), device, stream);
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

void device_to_host(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  const int device = device_index(src);
  const int stream = current_stream_of(src);
  if (plain_bytes(dst, src)) {
    const bool async = async_with(dst, non_blocking);
    tocl::copy_device_to_host(device, stream, dst.data_ptr(), src.const_data_ptr(), dst.nbytes(), !async);
    if (async) tocl::host_record_use(dst.const_data_ptr(), device, stream);
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
  if (dst.numel() == 0) {
    // Nothing to write, but CPU's TensorIterator still broadcasts: a source that does not fit is an error.
    const auto shape = at::infer_size(dst.sizes(), self.sizes());
    TORCH_CHECK(dst.sizes().equals(shape), "output with shape ", dst.sizes(), " doesn't match the broadcast shape ",
                c10::IntArrayRef(shape));
    return dst;
  }
  // As CPU's copy_ (through TensorIterator): no written element may alias another, and on one
  // device source and destination either coincide exactly or not at all.
  at::assert_no_internal_overlap(dst);
  if (self.device() == dst.device()) {
    at::assert_no_partial_overlap(dst, self);
    if (self.scalar_type() == dst.scalar_type() && same_math_bits(dst, self) &&
        at::get_overlap_status(dst, self) == at::MemOverlapStatus::Full && dst.strides().equals(self.strides()) &&
        dst.sizes().equals(self.sizes()))
      return dst;  // the same elements: nothing to do
  }
  if (is_opencl(dst) && self.device().is_cpu()) {
    const c10::DeviceGuard guard(dst.device());
    host_to_device(dst, self, non_blocking);
  } else if (is_opencl(self) && dst.device().is_cpu()) {
    const c10::DeviceGuard guard(self.device());
    device_to_host(dst, self, non_blocking);
  } else if (is_opencl(self) && is_opencl(dst) && self.device() == dst.device()) {
    const c10::DeviceGuard guard(dst.device());
    // A source that may share elements with the destination without being it (a column of dst expanded
    // over it, as addmm's self given as part of out=) is read from a copy, so that no work-item reads an
    // element while another writes it (a race on GPUs, even where the values agree).
    if (dst.storage().is_alias_of(self.storage()) &&
        at::get_overlap_status(dst, self) == at::MemOverlapStatus::TooHard) {
      dst.copy_(self.clone());
      return dst;
    }
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

// Tensors with the conjugate or negative bit reach _copy_from with the bit still set: copy_from
// honours both bits itself (see same_math_bits and host_mirror). Without these fallthroughs
// the math-bit fallbacks would resolve the bit with clone(), which calls copy_, which
// calls _copy_from again, without end. Only backends outside CPU/CUDA call _copy_from.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

}  // namespace torch_opencl
