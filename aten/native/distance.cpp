// pdist: _pdist_forward and _pdist_backward (F.pdist, torch.pdist) in kernels_cl/distance.cl, a work-item per
// pair (forward) or per input element gathering its pairs (backward), with CPU's per-p formulas. cdist stays on
// the CPU fallback.
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>

#include "aten/kernel_support/acc_arg.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"

namespace torch_opencl {
namespace {

using at::Tensor;

// The kernels' mode for p (kernels_cl/distance.cl).
cl_int pdist_mode(double p) {
  if (p == 0.0) return 0;
  if (p == 1.0) return 1;
  if (p == 2.0) return 2;
  if (std::isinf(p)) return 3;
  return p < 2.0 ? 5 : 4;
}

void check_dtype(const Tensor& t, const char* name) {
  const auto type = t.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble, "\"", name, "\" not implemented for '",
                              c10::toString(type), "'");
}

Tensor pdist_forward(const Tensor& self, double p) {
  TORCH_CHECK(self.is_contiguous(), "_pdist_forward requires contiguous input");
  TORCH_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
  check_dtype(self, "pdist");
  const c10::DeviceGuard guard(self.device());
  const int64_t n = self.size(0), m = self.size(1);
  auto result = at::empty({n <= 1 ? 0 : n * (n - 1) / 2}, self.options());
  if (result.numel() == 0) return result;
  if (m == 0) return result.zero_();
  cl_kernel k = dtype_kernel(self, "distance.cl", "pdist_forward");
  const AccArg p_arg(p, self.scalar_type() == at::kDouble);
  tocl::set_args(k, buffer_arg(result), buffer_arg(self), static_cast<cl_long>(n), static_cast<cl_long>(m),
                 static_cast<cl_long>(result.numel()), p_arg.arg, pdist_mode(p));
  tocl::enqueue_1d(device_index(self), current_stream_of(self), k, result.numel());
  return result;
}

Tensor pdist_backward(const Tensor& grad, const Tensor& self, double p, const Tensor& pdist) {
  TORCH_CHECK(self.is_contiguous(), "_pdist_backward requires self to be contiguous");
  TORCH_CHECK(pdist.is_contiguous(), "_pdist_backward requires pdist to be contiguous");
  check_same_device({grad, self, pdist});
  check_dtype(self, "pdist_backward");
  const c10::DeviceGuard guard(self.device());
  const int64_t n = self.size(0), m = self.size(1);
  auto result = at::empty_like(self, at::MemoryFormat::Contiguous);
  if (result.numel() == 0) return result;
  if (n <= 1) return result.zero_();
  TORCH_CHECK(grad.numel() == n * (n - 1) / 2 && pdist.numel() == grad.numel(), "_pdist_backward: expected grad and ",
              "pdist of ", n * (n - 1) / 2, " elements, got ", grad.sizes(), " and ", pdist.sizes());
  const auto g = grad.contiguous();
  cl_kernel k = dtype_kernel(self, "distance.cl", "pdist_backward");
  const AccArg p_arg(p, self.scalar_type() == at::kDouble);
  tocl::set_args(k, buffer_arg(result), buffer_arg(g), buffer_arg(self), buffer_arg(pdist), static_cast<cl_long>(n),
                 static_cast<cl_long>(m), p_arg.arg, pdist_mode(p));
  tocl::enqueue_1d(device_index(self), current_stream_of(self), k, result.numel());
  return result;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("_pdist_forward", TORCH_FN(pdist_forward));
  m.impl("_pdist_backward", TORCH_FN(pdist_backward));
}

}  // namespace torch_opencl
