#pragma once
// Winograd convolution for 3x3 stride-1 convolutions, both kernel classes (kernels_cl/winograd.cl): input
// transform -> 16 GEMMs through the batched GEMM -> output transform. F(2x2, 3x3) for the forward and the
// input gradient, 16 multiplies per 2x2 output tile and channel pair where im2col + GEMM does 36; F(3x3, 2x2)
// for the weight gradient, 16 per tile and pair where im2col + GEMM does 36, without im2col's matrix.
// runtime/kernel_forms.h says where it serves (conv_winograd, winograd_min_channels, winograd_lines);
// aten/native/convolution.cpp chooses it per call.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace torch_opencl {

// Whether the form serves a single-group 3x3, stride-1, dilation-1 convolution of input (N, C, H, W) to
// output (N, O, OH, OW) on `device`, forward and both gradients alike: the device's forms choose it, both
// channel counts reach their minimum, and every buffer of either direction fits the kernels' 32-bit indices.
bool winograd_serves(int device, int64_t N, int64_t C, int64_t O, int64_t H, int64_t W, int64_t OH, int64_t OW);

// conv2d(x, w, bias, stride 1, padding (pad_h, pad_w)) for x (N, C, H, W) and w (O, C, 3, 3), both with any
// strides; bias (O) or undefined. -> (N, O, OH, OW) contiguous.
//
// With `adjoint`, w is read as its flipped, channel-transposed self w'[c][o][i][j] = w[o][c][2-i][2-j]
// (x is then (N, O, ., .) and the result has C channels): called with grad_output as x and padding
// 2 - p, this is the input gradient of the convolution with w and padding p.
at::Tensor winograd_conv2d(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias, int64_t pad_h,
                           int64_t pad_w, bool adjoint);

// The weight gradient of conv2d(x, w, stride 1, padding (pad_h, pad_w)) with w (O, C, 3, 3), from x (N, C, H, W)
// and grad_out (N, O, OH, OW), both with any strides. -> (O, C, 3, 3) contiguous.
at::Tensor winograd_weight_grad(const at::Tensor& x, const at::Tensor& grad_out, int64_t pad_h, int64_t pad_w);

}  // namespace torch_opencl
