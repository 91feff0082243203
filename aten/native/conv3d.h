#pragma once
// 3-D convolutions as sums of 2-D ones over the kernel's depth taps: tap kd of an output depth slice od
// reads input depth od * SD + kd * DD - PD, so each tap is one 2-D convolution of the batch's depth slices
// (N * OD samples) with the weight's slice kd. A transposed one is the adjoint: tap kd of input depth i adds
// a transposed 2-D convolution into output depth i * SD + kd * DD - PD. The 2-D convolutions are this
// backend's own (Winograd, 1x1 GEMMs, im2col + GEMM: convolution.cpp), forward and backward.
#include <ATen/core/Tensor.h>

#include <array>
#include <tuple>

namespace torch_opencl {

// input (N, C, D, H, W), weight (O, C / groups, KD, KH, KW) or, transposed, (C, O / groups, KD, KH, KW);
// float32 or float64; shapes already checked by ATen's _convolution.
at::Tensor conv3d_forward(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                          at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                          at::IntArrayRef output_padding, int64_t groups);

std::tuple<at::Tensor, at::Tensor, at::Tensor> conv3d_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask);

}  // namespace torch_opencl
