#pragma once
// Depthwise 1-D/2-D convolutions (groups == input channels > 1: MobileNet's and EfficientNet's layers) in
// direct forms, both kernel classes (kernels_cl/conv_depthwise.cl; kernel_forms' conv_depthwise_rows picks
// rows or elements). aten/native/convolution.cpp chooses them per call; float32 and float64.
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "aten/native/conv_shape.h"

namespace torch_opencl {

// Whether a regular (not transposed) convolution with these groups is depthwise.
inline bool is_depthwise(int64_t groups, const Shape& g) { return groups > 1 && groups == g.C; }

// x4 (N, C, H, W) and w (O, 1, KH, KW) with O a multiple of C, bias (O) or undefined -> (N, O, OH, OW).
at::Tensor depthwise_conv_forward(const Shape& g, const at::Tensor& x4, const at::Tensor& w, const at::Tensor& bias);

// grad_output (N, O, OH, OW) -> grad_input (N, C, H, W).
at::Tensor depthwise_conv_input_grad(const Shape& g, const at::Tensor& go4, const at::Tensor& w);

// x4 (N, C, H, W) and grad_output (N, O, OH, OW) -> grad_weight (O, 1, KH, KW).
at::Tensor depthwise_conv_weight_grad(const Shape& g, const at::Tensor& x4, const at::Tensor& go4);

}  // namespace torch_opencl
