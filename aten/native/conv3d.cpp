#include "aten/native/conv3d.h"

#include <ATen/ATen.h>

namespace torch_opencl {
namespace {

struct Depth {
  int64_t D, KD, SD, PD, DD, OD;
};

Depth depth_of(const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride, at::IntArrayRef padding,
               at::IntArrayRef dilation) {
  Depth d{input.size(2), weight.size(2), stride[0], padding[0], dilation[0], 0};
  d.OD = (d.D + 2 * d.PD - d.DD * (d.KD - 1) - 1) / d.SD + 1;
  return d;
}

// The input, zero-padded in depth, as (N, D + 2 PD, C, H, W): each tap's depth slices are then a strided
// range of dimension 1.
at::Tensor depth_major(const at::Tensor& input, int64_t pd) {
  const at::Tensor padded = pd > 0 ? at::constant_pad_nd(input, {0, 0, 0, 0, pd, pd}) : input;
  return padded.permute({0, 2, 1, 3, 4}).contiguous();
}

// Tap kd's input: (N * OD, C, H, W), depth slices kd * DD + SD * j.
at::Tensor tap_input(const at::Tensor& xt, const Depth& d, int64_t kd) {
  const auto taps = xt.slice(1, kd * d.DD, kd * d.DD + d.SD * (d.OD - 1) + 1, d.SD);
  return taps.reshape({-1, xt.size(2), xt.size(3), xt.size(4)});
}

std::array<int64_t, 2> last2(at::IntArrayRef v) { return {v[1], v[2]}; }

}  // namespace

at::Tensor conv3d_forward(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                          at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, int64_t groups) {
  const Depth d = depth_of(input, weight, stride, padding, dilation);
  const int64_t N = input.size(0), O = weight.size(0);
  const at::Tensor xt = depth_major(input, d.PD);
  at::Tensor acc;
  for (int64_t kd = 0; kd < d.KD; ++kd) {
    const at::Tensor y = at::convolution(tap_input(xt, d, kd), weight.select(2, kd), kd == 0 ? bias : at::Tensor(),
                                         last2(stride), last2(padding), last2(dilation), false, {0, 0}, groups);
    if (kd == 0) acc = y;
    else acc.add_(y);
  }
  // (N * OD, O, OH, OW) -> (N, O, OD, OH, OW), contiguous as CPU's result.
  return acc.view({N, d.OD, O, acc.size(2), acc.size(3)}).permute({0, 2, 1, 3, 4}).contiguous();
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> conv3d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                                               const at::Tensor& weight, at::IntArrayRef stride,
                                                               at::IntArrayRef padding, at::IntArrayRef dilation,
                                                               int64_t groups, std::array<bool, 3> output_mask) {
  const Depth d = depth_of(input, weight, stride, padding, dilation);
  const at::Tensor xt = depth_major(input, d.PD);
  const at::Tensor go = grad_output.permute({0, 2, 1, 3, 4}).reshape({-1, grad_output.size(1), grad_output.size(3),
                                                                       grad_output.size(4)});
  at::Tensor grad_xt, grad_weight;
  if (output_mask[0]) grad_xt = at::zeros(xt.sizes(), xt.options());
  if (output_mask[1]) grad_weight = at::empty(weight.sizes(), weight.options());
  for (int64_t kd = 0; kd < d.KD; ++kd) {
    const at::Tensor w = weight.select(2, kd);
    auto [gi, gw, gb] = at::convolution_backward(go, tap_input(xt, d, kd), w, std::nullopt, last2(stride),
                                                 last2(padding), last2(dilation), false, {0, 0}, groups,
                                                 {output_mask[0], output_mask[1], false});
    if (output_mask[0]) {
      grad_xt.slice(1, kd * d.DD, kd * d.DD + d.SD * (d.OD - 1) + 1, d.SD)
          .add_(gi.view({input.size(0), d.OD, gi.size(1), gi.size(2), gi.size(3)}));
    }
    if (output_mask[1]) grad_weight.select(2, kd).copy_(gw);
  }
  at::Tensor grad_input;
  if (output_mask[0])
    grad_input = grad_xt.slice(1, d.PD, d.PD + d.D).permute({0, 2, 1, 3, 4}).contiguous();
  at::Tensor grad_bias;
  if (output_mask[2]) grad_bias = grad_output.sum({0, 2, 3, 4});
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace torch_opencl
