// Convolution reaches PrivateUse1 as convolution_overrideable and
// convolution_backward_overrideable, whose default kernels only raise, so the
// boxed fallback never sees them. Until the native im2col/GEMM kernels exist,
// these run CPU's convolution on copies, counted like any other fallback.
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "fallback/fallback.h"

namespace torch_opencl {
namespace {

at::Tensor to_cpu(const at::Tensor& t) { return t.defined() ? t.to(at::kCPU) : t; }

at::Tensor convolution_on_cpu(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                              at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                              bool transposed, at::IntArrayRef output_padding, int64_t groups) {
  record_fallback_call("aten::convolution_overrideable");
  TORCH_CHECK(weight.device() == input.device() && (!bias || !bias->defined() || bias->device() == input.device()),
              "Expected all tensors to be on the same device, but found at least two devices, ", input.device(),
              " and ", weight.device() != input.device() ? weight.device() : bias->device(), "!");
  std::optional<at::Tensor> cpu_bias;
  if (bias && bias->defined()) cpu_bias = to_cpu(*bias);
  const auto out = at::convolution(to_cpu(input), to_cpu(weight), cpu_bias, stride, padding, dilation, transposed,
                                   output_padding, groups);
  return out.to(input.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_on_cpu(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  record_fallback_call("aten::convolution_backward_overrideable");
  const int64_t bias_size = transposed ? weight.size(1) * groups : weight.size(0);
  auto [grad_input, grad_weight, grad_bias] =
      at::convolution_backward(to_cpu(grad_output), to_cpu(input), to_cpu(weight), at::IntArrayRef{bias_size}, stride,
                               padding, dilation, transposed, output_padding, groups, output_mask);
  const auto device = input.device();
  auto back = [&](const at::Tensor& t) { return t.defined() ? t.to(device) : t; };
  return {back(grad_input), back(grad_weight), back(grad_bias)};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution_on_cpu));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward_on_cpu));
}

}  // namespace torch_opencl
