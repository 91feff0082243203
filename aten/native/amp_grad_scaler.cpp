// torch.amp.GradScaler's two operators, natively (they went to the CPU fallback, a host round trip for every
// gradient of every step): _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_, composed from
// native operators with CUDA's checks and semantics, and no host synchronisation.
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"

namespace torch_opencl {
namespace {

using at::Tensor;

void check_scaler_tensor(const Tensor& t, const char* name, const char* op) {
  TORCH_CHECK(t.numel() == 1, op, ": ", name, " must be a 1-element tensor, got ", t.numel(), " elements.");
  TORCH_CHECK(t.scalar_type() == at::kFloat, op, ": ", name, " must be a float tensor, got ", t.scalar_type(), ".");
}

// Each gradient times inv_scale, in place; found_inf becomes 1 if any of them holds an inf or a NaN (it is never
// reset: GradScaler passes one per device and step, zeroed).
void amp_foreach_non_finite_check_and_unscale_(at::TensorList grads, Tensor& found_inf, const Tensor& inv_scale) {
  constexpr const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  check_scaler_tensor(inv_scale, "inv_scale", op);
  check_scaler_tensor(found_inf, "found_inf", op);
  check_same_device({found_inf, inv_scale});
  if (grads.empty()) return;
  const c10::DeviceGuard guard(found_inf.device());
  const auto factor = inv_scale.reshape({});
  for (const auto& g : grads) {
    TORCH_CHECK(g.device() == found_inf.device(), op, ": every scaled gradient must be on ", found_inf.device(),
                " with found_inf and inv_scale, got one on ", g.device(), ".");
    TORCH_CHECK(g.layout() == at::kStrided, op, ": scaled gradients must be strided (not sparse) tensors.");
    TORCH_CHECK(at::isFloatingType(g.scalar_type()), op, ": scaled gradients must be floating point, got ",
                g.scalar_type(), ".");
    if (g.numel() == 0) continue;
    found_inf.masked_fill_(at::isfinite(g).all().logical_not(), 1.0);
    // The product in float for a reduced-precision gradient (CUDA's opmath), rounded once.
    Tensor& grad = const_cast<Tensor&>(g);
    if (g.scalar_type() == at::kFloat || g.scalar_type() == at::kDouble)
      grad.mul_(factor);
    else
      grad.copy_(g.to(at::kFloat).mul_(factor));
  }
}

// The scale halves (times backoff_factor) and the growth tracker resets after a step with an inf or NaN; after
// growth_interval steps without one the scale grows (times growth_factor) where that stays finite.
Tensor& amp_update_scale_(Tensor& scale, Tensor& growth_tracker, const Tensor& found_inf, double growth_factor,
                          double backoff_factor, int64_t growth_interval) {
  constexpr const char* op = "_amp_update_scale_";
  check_scaler_tensor(scale, "current_scale", op);
  check_scaler_tensor(found_inf, "found_inf", op);
  TORCH_CHECK(growth_tracker.numel() == 1, op, ": growth_tracker must be a 1-element tensor.");
  TORCH_CHECK(growth_tracker.scalar_type() == at::kInt, op, ": growth_tracker must be an int tensor, got ",
              growth_tracker.scalar_type(), ".");
  check_same_device({scale, growth_tracker, found_inf});
  const c10::DeviceGuard guard(scale.device());
  const auto found = found_inf.ne(0);
  const auto successful = growth_tracker.add(1);
  const auto grown = scale.mul(growth_factor);
  const auto grow = found.logical_not().logical_and(successful.eq(growth_interval));
  const auto new_scale =
      at::where(found, scale.mul(backoff_factor), at::where(grow.logical_and(at::isfinite(grown)), grown, scale));
  const auto new_tracker = at::where(found.logical_or(grow), at::zeros_like(successful), successful);
  scale.copy_(new_scale);
  growth_tracker.copy_(new_tracker);
  return scale;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("_amp_foreach_non_finite_check_and_unscale_", TORCH_FN(amp_foreach_non_finite_check_and_unscale_));
  m.impl("_amp_update_scale_", TORCH_FN(amp_update_scale_));
}

}  // namespace torch_opencl
