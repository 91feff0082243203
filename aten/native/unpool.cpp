// max_unpool2d (F.max_unpool2d, and F.max_unpool1d through it) and max_unpool3d: each plane's values stored at
// their indices into a zeroed (oH, oW) plane or (oT, oH, oW) volume, as a native scatter_ over (planes, size)
// rows, after CPU's checks. The gradient is ATen's max_pool_double_backward, a gather. Indices outside the plane raise CPU's error (at the
// call, or at the next wait where the device defers index checks); the scatter never writes out of bounds.
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <string>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/native/index_bounds.h"
#include "runtime/deferred_errors.h"

namespace torch_opencl {
namespace {

using at::IntArrayRef;
using at::Tensor;

// self's planes scattered into zeroed planes of output_size (the last 2 or 3 dims), by indices already checked
// for shape; an index outside a plane raises CPU's error. `site_name` names the deferred check's site.
Tensor unpool(const Tensor& self, const Tensor& indices, IntArrayRef output_size, const char* site_name) {
  const c10::DeviceGuard guard(self.device());
  const int dims = static_cast<int>(output_size.size());
  auto sizes = self.sizes().vec();
  int64_t plane = 1;
  std::string extent;
  for (int i = 0; i < dims; ++i) {
    sizes[sizes.size() - dims + i] = output_size[i];
    plane *= output_size[i];
    extent += (i ? "x" : "") + std::to_string(output_size[i]);
  }
  auto out = at::zeros(sizes, self.options());
  if (out.numel() > 0 && self.numel() > 0) {
    const auto message = [extent](int64_t v) {
      return "Found an invalid max index: " + std::to_string(v) + " (output volumes are of size " + extent + ")";
    };
    if (index_checks_deferred(indices)) {
      // The site's message needs the plane's size, so each size gets its own site.
      const int site = tocl::error_site(std::string(site_name) + " " + extent,
                                        [message](int64_t v, int64_t) { return message(v); });
      record_out_of_range(indices, 0, plane, std::nullopt, site);
    } else {
      const auto bad = first_out_of_range(indices, 0, plane);
      TORCH_CHECK(!bad.has_value(), message(bad ? bad->value : 0));
    }
    int64_t in_plane = 1;
    for (int i = 1; i <= dims; ++i) in_plane *= self.size(-i);
    const int64_t planes = self.numel() / in_plane;
    out.view({planes, plane}).scatter_(1, indices.reshape({planes, -1}), self.reshape({planes, -1}));
  }
  return out;
}

Tensor max_unpool2d_functional(const Tensor& self, const Tensor& indices, IntArrayRef output_size) {
  TORCH_CHECK(indices.scalar_type() == at::kLong, "elements in indices should be type int64 but got: ",
              indices.scalar_type());
  TORCH_CHECK(output_size.size() == 2, "There should be exactly two elements (height, width) in output_size, but got ",
              output_size.size(), " elements.");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a ",
              "tensor with ", self.dim(), " dimensions.");
  TORCH_CHECK(self.sizes() == indices.sizes(), "Expected shape of indices to be same as that of the input tensor (",
              self.sizes(), ") but got indices tensor with shape: ", indices.sizes());
  for (int64_t i = 1; i < self.dim(); ++i)
    TORCH_CHECK(self.size(i) > 0, "max_unpooling2d_forward_out_cpu(): ", "Expected input to have non-zero size for ",
                "non-batch dimensions, but got ", self.sizes(), " with dimension ", i, " being empty.");
  TORCH_CHECK(self.device() == indices.device(), "Expected all tensors to be on the same device, but found at least ",
              "two devices, ", self.device(), " and ", indices.device(), "!");
  const auto out = unpool(self, indices, output_size, "max_unpool2d");
  const auto format = self.suggest_memory_format();
  return format == at::MemoryFormat::Contiguous ? out : out.contiguous(format);
}

Tensor& max_unpool2d_out(const Tensor& self, const Tensor& indices, IntArrayRef output_size, Tensor& out) {
  auto result = max_unpool2d_functional(self, indices, output_size);
  TORCH_CHECK(out.scalar_type() == result.scalar_type(), "Expected out tensor to have dtype ", result.scalar_type(),
              ", but got ", out.scalar_type(), " instead");
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

// CPU's max_unpooling3d_shape_check (its order and words) and dtype dispatch; the result is contiguous, as CPU's.
Tensor max_unpool3d_functional(const Tensor& self, const Tensor& indices, IntArrayRef output_size, IntArrayRef stride,
                               IntArrayRef padding) {
  TORCH_CHECK(indices.scalar_type() == at::kLong, "elements in indices should be type int64");
  TORCH_CHECK(self.dim() == 4 || self.dim() == 5, "Input to max_unpooling3d should be a 4d or 5d Tensor, but got a ",
              "tensor with ", self.dim(), " dimensions.");
  TORCH_CHECK(output_size.size() == 3, "There should be exactly three elements (depth, height, width) in output_size,",
              " but got ", output_size.size(), " elements.");
  TORCH_CHECK(stride.size() == 3, "There should be exactly three elements (depth, height, width) in stride, but got: ",
              stride.size(), " elements.");
  TORCH_CHECK(padding.size() == 3, "There should be exactly three elements (depth, height, width) in padding, but ",
              "got: ", padding.size(), " elements.");
  TORCH_CHECK(self.sizes() == indices.sizes(), "Expected shape of indices to be same as that of the input tensor (",
              self.sizes(), ") but got indices tensor with shape: ", indices.sizes());
  for (int64_t i = 1; i < self.dim(); ++i)
    TORCH_CHECK(self.size(i) > 0, "max_unpooling3d_forward_out_cpu(): Expected input to have non-zero size for ",
                "non-batch dimensions, but got ", self.sizes(), " with dimension ", i, " being empty.");
  TORCH_CHECK(stride[0] > 0 && stride[1] > 0 && stride[2] > 0, "strides should be greater than zero, but got stride: ",
              stride);
  TORCH_CHECK(self.device() == indices.device(), "Expected all tensors to be on the same device, but found at least ",
              "two devices, ", self.device(), " and ", indices.device(), "!");
  const auto type = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16,
                              "\"max_unpool3d\" not implemented for '", c10::toString(type), "'");
  return unpool(self, indices, output_size, "max_unpool3d");
}

Tensor& max_unpool3d_out(const Tensor& self, const Tensor& indices, IntArrayRef output_size, IntArrayRef stride,
                         IntArrayRef padding, Tensor& out) {
  auto result = max_unpool3d_functional(self, indices, output_size, stride, padding);
  TORCH_CHECK(out.scalar_type() == result.scalar_type(), "Expected out tensor to have dtype ", result.scalar_type(),
              ", but got ", out.scalar_type(), " instead");
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("max_unpool2d", TORCH_FN(max_unpool2d_functional));
  m.impl("max_unpool2d.out", TORCH_FN(max_unpool2d_out));
  m.impl("max_unpool3d", TORCH_FN(max_unpool3d_functional));
  m.impl("max_unpool3d.out", TORCH_FN(max_unpool3d_out));
}

}  // namespace torch_opencl
