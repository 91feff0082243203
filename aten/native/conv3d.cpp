#include "aten/native/conv3d.h"

#include <ATen/ATen.h>

namespace torch_opencl {
namespace {

// The depth dimension of a 3-D convolution. Regular: input depth D, output OD. Transposed: input depth D,
// output OD, through a buffer of `full` = OD + 2 PD planes (the output before its padding is cropped).
struct Depth {
  int64_t D, KD, SD, PD, DD, OD, full;
};

Depth depth_of(const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride, at::IntArrayRef padding,
               at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding) {
  Depth d{input.size(2), weight.size(2), stride[0], padding[0], dilation[0], 0, 0};
  if (transposed) {
    d.full = (d.D - 1) * d.SD + d.DD * (d.KD - 1) + output_padding[0] + 1;
    d.OD = d.full - 2 * d.PD;
  } else {
    d.OD = (d.D + 2 * d.PD - d.DD * (d.KD - 1) - 1) / d.SD + 1;
  }
  return d;
}

// (N, C, D, H, W) <-> (N, D, C, H, W): each tap's depth slices are then a strided range of dimension 1.
at::Tensor depth_major(const at::Tensor& t) { return t.permute({0, 2, 1, 3, 4}).contiguous(); }
at::Tensor channels_major(const at::Tensor& t) { return t.permute({0, 2, 1, 3, 4}).contiguous(); }

// Planes first, first + step, ... (count of them) of a depth-major tensor.
at::Tensor planes(const at::Tensor& t, int64_t first, int64_t step, int64_t count) {
  return t.slice(1, first, first + step * (count - 1) + 1, step);
}

// A depth-major (N, P, C, H, W) tensor as a batch of 2-D samples (N * P, C, H, W) (a copy where strided).
at::Tensor as_samples(const at::Tensor& t) { return t.reshape({-1, t.size(2), t.size(3), t.size(4)}); }

std::array<int64_t, 2> last2(at::IntArrayRef v) { return {v[1], v[2]}; }

}  // namespace

at::Tensor conv3d_forward(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                          at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                          at::IntArrayRef output_padding, int64_t groups) {
  const Depth d = depth_of(input, weight, stride, padding, dilation, transposed, output_padding);
  const int64_t N = input.size(0);
  const auto conv2d = [&](const at::Tensor& x, int64_t kd) {
    return at::convolution(x, weight.select(2, kd), at::Tensor(), last2(stride), last2(padding), last2(dilation),
                           transposed, last2(output_padding), groups);
  };
  at::Tensor out;
  if (!transposed) {
    // Input zero-padded in depth, so that tap kd of output plane od reads plane od * SD + kd * DD.
    const at::Tensor xt = depth_major(d.PD > 0 ? at::constant_pad_nd(input, {0, 0, 0, 0, d.PD, d.PD}) : input);
    at::Tensor acc;
    for (int64_t kd = 0; kd < d.KD; ++kd) {
      const at::Tensor y = conv2d(as_samples(planes(xt, kd * d.DD, d.SD, d.OD)), kd);
      if (kd == 0) acc = y;
      else acc.add_(y);
    }
    out = acc.view({N, d.OD, acc.size(1), acc.size(2), acc.size(3)});
  } else {
    // Tap kd of input plane i adds into plane i * SD + kd * DD of the uncropped output.
    const at::Tensor xs = as_samples(depth_major(input));
    at::Tensor full;
    for (int64_t kd = 0; kd < d.KD; ++kd) {
      const at::Tensor y = conv2d(xs, kd);
      if (kd == 0) full = at::zeros({N, d.full, y.size(1), y.size(2), y.size(3)}, y.options());
      planes(full, kd * d.DD, d.SD, d.D).add_(y.view({N, d.D, y.size(1), y.size(2), y.size(3)}));
    }
    out = full.slice(1, d.PD, d.PD + d.OD);
  }
  out = channels_major(out);  // (N, O, OD, OH, OW), contiguous as CPU's result
  if (bias.defined()) out.add_(bias.view({1, -1, 1, 1, 1}));
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> conv3d_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  const Depth d = depth_of(input, weight, stride, padding, dilation, transposed, output_padding);
  const int64_t N = input.size(0);
  const auto backward2d = [&](const at::Tensor& go, const at::Tensor& x, int64_t kd) {
    return at::convolution_backward(go, x, weight.select(2, kd), std::nullopt, last2(stride), last2(padding),
                                    last2(dilation), transposed, last2(output_padding), groups,
                                    {output_mask[0], output_mask[1], false});
  };
  at::Tensor grad_input, grad_weight;
  if (output_mask[1]) grad_weight = at::empty(weight.sizes(), weight.options());
  if (!transposed) {
    const at::Tensor xt = depth_major(d.PD > 0 ? at::constant_pad_nd(input, {0, 0, 0, 0, d.PD, d.PD}) : input);
    const at::Tensor go = as_samples(depth_major(grad_output));
    at::Tensor grad_xt;
    if (output_mask[0]) grad_xt = at::zeros(xt.sizes(), xt.options());
    for (int64_t kd = 0; kd < d.KD; ++kd) {
      auto [gi, gw, gb] = backward2d(go, as_samples(planes(xt, kd * d.DD, d.SD, d.OD)), kd);
      if (output_mask[0])
        planes(grad_xt, kd * d.DD, d.SD, d.OD).add_(gi.view({N, d.OD, gi.size(1), gi.size(2), gi.size(3)}));
      if (output_mask[1]) grad_weight.select(2, kd).copy_(gw);
    }
    if (output_mask[0]) grad_input = channels_major(grad_xt.slice(1, d.PD, d.PD + d.D));
  } else {
    // grad_output placed in the uncropped output's planes; tap kd's gradient reads planes i * SD + kd * DD.
    const at::Tensor go = depth_major(grad_output);
    at::Tensor go_full = at::zeros({N, d.full, go.size(2), go.size(3), go.size(4)}, go.options());
    go_full.slice(1, d.PD, d.PD + d.OD).copy_(go);
    const at::Tensor xs = as_samples(depth_major(input));
    at::Tensor grad_xs;
    for (int64_t kd = 0; kd < d.KD; ++kd) {
      auto [gi, gw, gb] = backward2d(as_samples(planes(go_full, kd * d.DD, d.SD, d.D)), xs, kd);
      if (output_mask[0]) {
        if (kd == 0) grad_xs = gi;
        else grad_xs.add_(gi);
      }
      if (output_mask[1]) grad_weight.select(2, kd).copy_(gw);
    }
    if (output_mask[0])
      grad_input = channels_major(grad_xs.view({N, d.D, grad_xs.size(1), grad_xs.size(2), grad_xs.size(3)}));
  }
  at::Tensor grad_bias;
  if (output_mask[2]) grad_bias = grad_output.sum({0, 2, 3, 4});
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace torch_opencl
