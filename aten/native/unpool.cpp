// max_unpool2d (F.max_unpool2d, and F.max_unpool1d through it): each plane's values stored at their indices
// into a zeroed (oH, oW) plane, as a native scatter_ over (planes, oH * oW) rows, after CPU's checks. The
// gradient is ATen's max_pool_double_backward, a gather. Indices outside the plane raise CPU's error (at the
// call, or at the next wait where the device defers index checks); the scatter never writes out of bounds.
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/native/index_bounds.h"
#include "runtime/deferred_errors.h"

namespace torch_opencl {
namespace {

using at::IntArrayRef;
using at::Tensor;

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
  const c10::DeviceGuard guard(self.device());
  const int64_t oH = output_size[0], oW = output_size[1];
  auto sizes = self.sizes().vec();
  sizes[sizes.size() - 2] = oH;
  sizes[sizes.size() - 1] = oW;
  auto out = at::zeros(sizes, self.options());
  if (out.numel() > 0 && self.numel() > 0) {
    const auto message = [oH, oW](int64_t v) {
      return "Found an invalid max index: " + std::to_string(v) + " (output volumes are of size " +
             std::to_string(oH) + "x" + std::to_string(oW) + ")";
    };
    if (index_checks_deferred(indices)) {
      // The site's message needs the plane's size, so each size gets its own site.
      const int site = tocl::error_site("max_unpool2d " + std::to_string(oH) + "x" + std::to_string(oW),
                                        [message](int64_t v, int64_t) { return message(v); });
      record_out_of_range(indices, 0, oH * oW, std::nullopt, site);
    } else {
      const auto bad = first_out_of_range(indices, 0, oH * oW);
      TORCH_CHECK(!bad.has_value(), message(bad ? bad->value : 0));
    }
    const int64_t planes = self.numel() / (self.size(-1) * self.size(-2));
    out.view({planes, oH * oW}).scatter_(1, indices.reshape({planes, -1}), self.reshape({planes, -1}));
  }
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

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("max_unpool2d", TORCH_FN(max_unpool2d_functional));
  m.impl("max_unpool2d.out", TORCH_FN(max_unpool2d_out));
}

}  // namespace torch_opencl
