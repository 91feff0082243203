// multi_margin_loss and its backward (F.multi_margin_loss, p = 1 or 2, optional class weights, every reduction),
// composed from native gather/scatter, pointwise ops and row sums with CPU's formulas: per sample,
// sum over classes d != y of max(0, margin - x[y] + x[d])^p (times weight[y]), divided by the class count.
#include <ATen/ATen.h>
#include <ATen/core/Reduction.h>
#include <ATen/native/LossMulti.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/native/index_bounds.h"

namespace torch_opencl {
namespace {

using at::Scalar;
using at::Tensor;

struct Shape {
  int64_t frames, classes;
};

// CPU's multi_margin_loss_shape_check, and its other checks, with its messages.
Shape check_arguments(const Tensor& self, const Tensor& target, const Scalar& p,
                      const std::optional<Tensor>& weight) {
  // ATen's own shape check, so the messages are this torch's (2.11 words the target's one differently).
  const int64_t ndims = self.dim();
  int64_t frames = 0, classes = 0;
  at::native::multi_margin_loss_shape_check(frames, classes, ndims, self, target, weight);
  const Shape s{frames, classes};
  TORCH_CHECK(p.toLong() == 1 || p.toLong() == 2, "only p == 1 and p == 2 supported");
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ", target.scalar_type());
  const auto type = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble,
                              "\"multi_margin_loss_cpu_kernel\" not implemented for '", c10::toString(type), "'");
  check_same_device({self, target});
  if (weight.has_value() && weight->defined()) check_same_device({self, *weight});
  return s;
}

// The per-class hinge terms z = margin - x[y] + x[d] of (frames, classes) x, and the targets as a column.
std::pair<Tensor, Tensor> hinge_terms(const Tensor& self, const Tensor& target, const Scalar& margin, Shape s) {
  const auto x = self.reshape({s.frames, s.classes});
  const auto y = target.reshape({s.frames, 1});
  if (y.numel() > 0) {
    const auto bad = first_out_of_range(y, 0, s.classes);
    TORCH_CHECK(!bad.has_value(), "target out of range");
  }
  return {(margin.toDouble() - x.gather(1, y)) + x, y};
}

// weight[y] per frame as a column, or an undefined tensor.
Tensor class_weights(const std::optional<Tensor>& weight, const Tensor& y) {
  if (!weight.has_value() || !weight->defined()) return Tensor();
  return weight->reshape({-1}).index_select(0, y.reshape({-1})).reshape({-1, 1});
}

Tensor multi_margin_loss_functional(const Tensor& self, const Tensor& target, const Scalar& p, const Scalar& margin,
                         const std::optional<Tensor>& weight, int64_t reduction) {
  const Shape s = check_arguments(self, target, p, weight);
  const c10::DeviceGuard guard(self.device());
  const auto [z, y] = hinge_terms(self, target, margin, s);
  auto h = at::where(z > 0, p.toLong() == 1 ? z : z * z, 0);
  if (auto w = class_weights(weight, y); w.defined()) h = h * w;
  h = h.scatter(1, y, 0);  // the target's own class adds nothing
  const auto per_frame = h.sum(1) / static_cast<double>(s.classes);
  if (reduction == at::Reduction::None) return target.dim() > 0 ? per_frame : per_frame.reshape({});
  const auto total = per_frame.sum();
  return reduction == at::Reduction::Mean ? total / static_cast<double>(s.frames) : total;
}

Tensor& multi_margin_loss_out(const Tensor& self, const Tensor& target, const Scalar& p, const Scalar& margin,
                              const std::optional<Tensor>& weight, int64_t reduction, Tensor& out) {
  const auto result = multi_margin_loss_functional(self, target, p, margin, weight, reduction);
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

Tensor multi_margin_loss_backward_functional(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                  const Scalar& p, const Scalar& margin, const std::optional<Tensor>& weight,
                                  int64_t reduction) {
  const Shape s = check_arguments(self, target, p, weight);
  check_same_device({grad_output, self});
  const c10::DeviceGuard guard(self.device());
  const auto [z, y] = hinge_terms(self, target, margin, s);
  // CPU: g = 1 / classes (and 1 / frames for mean); each positive term's slope (g, or 2 g z), times
  // weight[y]; the target's own class gets minus their sum; all times grad_output.
  const double g = reduction == at::Reduction::Mean ? 1. / (static_cast<double>(s.frames) * s.classes)
                                                    : 1. / static_cast<double>(s.classes);
  auto h = at::where(z > 0, p.toLong() == 1 ? at::full_like(z, g) : z * (2 * g), 0);
  if (auto w = class_weights(weight, y); w.defined()) h = h * w;
  h = h.scatter(1, y, 0);
  auto grad = h.scatter(1, y, -h.sum(1, /*keepdim=*/true));
  grad = reduction == at::Reduction::None && target.dim() > 0 ? grad * grad_output.reshape({s.frames, 1})
                                                              : grad * grad_output.reshape({});
  return grad.reshape(self.sizes());
}

Tensor& multi_margin_loss_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                       const Scalar& p, const Scalar& margin, const std::optional<Tensor>& weight,
                                       int64_t reduction, Tensor& grad_input) {
  const auto result = multi_margin_loss_backward_functional(grad_output, self, target, p, margin, weight, reduction);
  at::native::resize_output(grad_input, result.sizes());
  return grad_input.copy_(result);
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("multi_margin_loss", TORCH_FN(multi_margin_loss_functional));
  m.impl("multi_margin_loss.out", TORCH_FN(multi_margin_loss_out));
  m.impl("multi_margin_loss_backward", TORCH_FN(multi_margin_loss_backward_functional));
  m.impl("multi_margin_loss_backward.grad_input", TORCH_FN(multi_margin_loss_backward_out));
}

}  // namespace torch_opencl
