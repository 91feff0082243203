// rrelu_with_noise (F.rrelu, nn.RReLU): in training each element x <= 0 is scaled by a slope drawn uniformly
// from [lower, upper] (native Philox uniform_), recorded in `noise` (1 elsewhere), which the backward,
// ATen's rrelu_with_noise_backward (grad * noise), reads; in evaluation a leaky_relu of slope
// (lower + upper) / 2, as CPU.
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"

namespace torch_opencl {
namespace {

using at::Scalar;
using at::Tensor;

Tensor& rrelu_with_noise_into(const Tensor& self, Tensor& noise, const Scalar& lower, const Scalar& upper,
                              bool training, std::optional<at::Generator> generator, Tensor& out) {
  check_same_device({self, noise, out});
  const c10::DeviceGuard guard(self.device());
  if (!training) {
    const double slope = (lower.to<double>() + upper.to<double>()) / 2;
    return at::leaky_relu_out(out, self, slope);
  }
  TORCH_CHECK(noise.sizes() == self.sizes(), "rrelu_with_noise: noise of shape ", noise.sizes(),
              " does not match the input's ", self.sizes());
  const double from = lower.to<double>(), to = upper.to<double>();
  TORCH_CHECK(from <= to);  // CPU's uniform_ check, in its words
  auto slopes = at::empty_like(self).uniform_(from, to, generator);
  noise.copy_(at::where(self <= 0, slopes, 1));
  return at::mul_out(out, self, noise);
}

Tensor rrelu_with_noise_functional(const Tensor& self, Tensor& noise, const Scalar& lower, const Scalar& upper, bool training,
                        std::optional<at::Generator> generator) {
  auto out = at::empty_like(self);
  return rrelu_with_noise_into(self, noise, lower, upper, training, generator, out);
}

Tensor& rrelu_with_noise_out_kernel(const Tensor& self, Tensor& noise, const Scalar& lower, const Scalar& upper,
                             bool training, std::optional<at::Generator> generator, Tensor& out) {
  return rrelu_with_noise_into(self, noise, lower, upper, training, generator, out);
}

Tensor& rrelu_with_noise_inplace(Tensor& self, Tensor& noise, const Scalar& lower, const Scalar& upper, bool training,
                                 std::optional<at::Generator> generator) {
  return rrelu_with_noise_into(self, noise, lower, upper, training, generator, self);
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("rrelu_with_noise", TORCH_FN(rrelu_with_noise_functional));
  m.impl("rrelu_with_noise.out", TORCH_FN(rrelu_with_noise_out_kernel));
  m.impl("rrelu_with_noise_", TORCH_FN(rrelu_with_noise_inplace));
}

}  // namespace torch_opencl
