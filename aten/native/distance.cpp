// pdist and cdist: _pdist_forward, _pdist_backward, _cdist_forward and _cdist_backward (F.pdist, torch.cdist
// where ATen does not take its matrix-product form) in kernels_cl/distance.cl, a work-item per distance
// (forward) or per input element gathering its distances (backward), with CPU's per-p formulas and checks.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <c10/util/accumulate.h>
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

// x1 (..., r1, m) and x2 (..., r2, m) with their batch dims broadcast, as contiguous (B, r, m), and the batch.
struct CdistOperands {
  Tensor x1, x2;
  std::vector<int64_t> batch;
  int64_t batches;
};

CdistOperands cdist_operands(const Tensor& x1, const Tensor& x2) {
  const int64_t r1 = x1.size(-2), r2 = x2.size(-2), c = x1.size(-1);
  auto batch = at::infer_size(x1.sizes().slice(0, x1.dim() - 2), x2.sizes().slice(0, x2.dim() - 2));
  const int64_t batches = c10::multiply_integers(batch);
  auto size1 = batch, size2 = batch;
  size1.insert(size1.end(), {r1, c});
  size2.insert(size2.end(), {r2, x2.size(-1)});
  return {x1.expand(size1).reshape({batches, r1, c}).contiguous(),
          x2.expand(size2).reshape({batches, r2, x2.size(-1)}).contiguous(), batch, batches};
}

Tensor cdist_forward(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t> compute_mode) {
  TORCH_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  TORCH_CHECK(at::isFloatingType(x1.scalar_type()), "cdist only supports floating-point dtypes, X1 got: ",
              x1.scalar_type());
  TORCH_CHECK(at::isFloatingType(x2.scalar_type()), "cdist only supports floating-point dtypes, X2 got: ",
              x2.scalar_type());
  TORCH_CHECK(p >= 0, "cdist only supports non-negative p values");
  check_same_device({x1, x2});
  const int64_t mode = compute_mode.value_or(0);
  TORCH_CHECK(mode >= 0 && mode <= 2, "possible modes: 0, 1, 2, but was: ", mode);
  check_dtype(x1, "cdist");
  const c10::DeviceGuard guard(x1.device());
  const int64_t r1 = x1.size(-2), r2 = x2.size(-2), c = x1.size(-1);
  auto batch = at::infer_size(x1.sizes().slice(0, x1.dim() - 2), x2.sizes().slice(0, x2.dim() - 2));
  auto shape = batch;
  shape.insert(shape.end(), {r1, r2});
  auto result = at::empty(shape, x1.options());
  if (result.numel() == 0) return result;
  if (c == 0) return result.zero_();
  const auto ops = cdist_operands(x1, x2);
  cl_kernel k = dtype_kernel(x1, "distance.cl", "cdist_forward");
  const AccArg p_arg(p, x1.scalar_type() == at::kDouble);
  tocl::set_args(k, buffer_arg(result), buffer_arg(ops.x1), buffer_arg(ops.x2), static_cast<cl_long>(ops.batches),
                 static_cast<cl_long>(r1), static_cast<cl_long>(r2), static_cast<cl_long>(c), p_arg.arg,
                 pdist_mode(p));
  tocl::enqueue_1d(device_index(x1), current_stream_of(x1), k, result.numel());
  return result;
}

Tensor cdist_backward(const Tensor& grad, const Tensor& x1, const Tensor& x2, double p, const Tensor& cdist) {
  check_same_device({grad, x1, x2, cdist});
  check_dtype(x1, "cdist_backward");
  const c10::DeviceGuard guard(x1.device());
  const int64_t r1 = x1.size(-2), r2 = x2.size(-2), c = x1.size(-1);
  const auto ops = cdist_operands(x1, x2);
  if (r1 == 0 || r2 == 0 || c == 0 || ops.batches == 0) return at::zeros_like(x1);
  // As CPU: the gradient of the broadcast x1 (the autograd engine sums it back to x1's shape).
  auto size1 = ops.batch;
  size1.insert(size1.end(), {r1, c});
  auto grad_x1 = at::empty({ops.batches, r1, c}, x1.options());
  const auto g = grad.contiguous();
  const auto d = cdist.contiguous();
  cl_kernel k = dtype_kernel(x1, "distance.cl", "cdist_backward");
  const AccArg p_arg(p, x1.scalar_type() == at::kDouble);
  tocl::set_args(k, buffer_arg(grad_x1), buffer_arg(g), buffer_arg(ops.x1), buffer_arg(ops.x2), buffer_arg(d),
                 static_cast<cl_long>(ops.batches), static_cast<cl_long>(r1), static_cast<cl_long>(r2),
                 static_cast<cl_long>(c), p_arg.arg, pdist_mode(p));
  tocl::enqueue_1d(device_index(x1), current_stream_of(x1), k, grad_x1.numel());
  return grad_x1.view(size1);
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("_cdist_forward", TORCH_FN(cdist_forward));
  m.impl("_cdist_backward", TORCH_FN(cdist_backward));
  m.impl("_pdist_forward", TORCH_FN(pdist_forward));
  m.impl("_pdist_backward", TORCH_FN(pdist_backward));
}

}  // namespace torch_opencl
