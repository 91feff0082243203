// Nearest (and nearest-exact), linear (linear1d, bilinear2d, trilinear3d) and bicubic2d upsampling and
// their gradients, as position maps over the spatial dims (aten/native/axis_resample.h) computed with
// CPU's formulas (UpSample.h: compute_scales_value, area_pixel_compute_source_index,
// guard_index_and_lambda, get_cubic_upsample_coefficients) in CPU's precision: float for
// float/half/bfloat16, double for double.
// ATen's meta functions check the arguments.
#include <ATen/ATen.h>
#include <ATen/ops/_upsample_nearest_exact1d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact1d_meta.h>
#include <ATen/ops/_upsample_nearest_exact2d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact2d_meta.h>
#include <ATen/ops/_upsample_nearest_exact3d_backward_meta.h>
#include <ATen/ops/_upsample_nearest_exact3d_meta.h>
#include <ATen/ops/upsample_bicubic2d_backward_meta.h>
#include <ATen/ops/upsample_bicubic2d_meta.h>
#include <ATen/ops/upsample_bilinear2d_backward_meta.h>
#include <ATen/ops/upsample_bilinear2d_meta.h>
#include <ATen/ops/upsample_linear1d_backward_meta.h>
#include <ATen/ops/upsample_linear1d_meta.h>
#include <ATen/ops/upsample_nearest1d_backward_meta.h>
#include <ATen/ops/upsample_nearest1d_meta.h>
#include <ATen/ops/upsample_nearest2d_backward_meta.h>
#include <ATen/ops/upsample_nearest2d_meta.h>
#include <ATen/ops/upsample_nearest3d_backward_meta.h>
#include <ATen/ops/upsample_nearest3d_meta.h>
#include <ATen/ops/upsample_trilinear3d_backward_meta.h>
#include <ATen/ops/upsample_trilinear3d_meta.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "aten/native/axis_resample.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/structured.h"

namespace torch_opencl {
namespace {

using at::Tensor;
using Scales = std::vector<std::optional<double>>;

template <typename T>
T scales_value(std::optional<double> scale, int64_t in, int64_t out) {
  return (scale.has_value() && *scale > 0.) ? static_cast<T>(1.0 / *scale) : static_cast<T>(in) / out;
}

AxisMap nearest_axis(int64_t dim, int64_t in, int64_t out, std::optional<double> scale, bool exact) {
  AxisMap axis;
  axis.dim = dim;
  axis.in_size = in;
  auto& index = axis.idx.emplace_back();
  const float s = scales_value<float>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    int64_t i = 0;
    if (exact)
      i = std::min(static_cast<int64_t>(floorf(static_cast<float>((o + 0.5) * s))), in - 1);
    else if (out == in)
      i = o;
    else if (out == 2 * in)
      i = o >> 1;
    else
      i = std::min(static_cast<int64_t>(floorf(o * s)), in - 1);
    index.push_back(i);
  }
  return axis;
}

template <typename T>
AxisMap linear_axis(int64_t dim, int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  AxisMap axis;
  axis.dim = dim;
  axis.in_size = in;
  axis.idx.resize(1);
  if (out == in) {  // CPU copies: a plain gather of every position
    for (int64_t o = 0; o < out; ++o) axis.idx[0].push_back(o);
    return axis;
  }
  axis.idx.resize(2);
  axis.weight.resize(2);
  const T ratio = align_corners ? (out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0))
                                : scales_value<T>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    T real = align_corners ? ratio * o : ratio * (o + static_cast<T>(0.5)) - static_cast<T>(0.5);
    if (!align_corners && real < T(0)) real = T(0);
    const int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
    const T lambda1 = std::min(std::max(real - static_cast<T>(i0), T(0)), T(1));
    axis.idx[0].push_back(i0);
    axis.idx[1].push_back(i0 + (i0 < in - 1 ? 1 : 0));
    axis.weight[0].push_back(static_cast<double>(T(1) - lambda1));
    axis.weight[1].push_back(static_cast<double>(lambda1));
  }
  return axis;
}

// CPU's cubic convolution weights (A = -0.75) of the four taps around a point at t in [0, 1] past the second.
template <typename T>
std::array<T, 4> cubic_coefficients(T t) {
  const T A = -0.75;
  auto conv1 = [&](T x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
  auto conv2 = [&](T x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
  return {conv2(t + T(1)), conv1(t), conv1(T(1) - t), conv2(T(1) - t + T(1))};
}

// Bicubic: four taps from floor(source) - 1, clamped to the input (CPU's access_to_bounds), no copy special case.
template <typename T>
AxisMap cubic_axis(int64_t dim, int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  AxisMap axis;
  axis.dim = dim;
  axis.in_size = in;
  axis.idx.resize(4);
  axis.weight.resize(4);
  const T ratio = align_corners ? (out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0))
                                : scales_value<T>(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    const T real = align_corners ? ratio * o : ratio * (o + static_cast<T>(0.5)) - static_cast<T>(0.5);
    const int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
    const T t = std::min(std::max(real - static_cast<T>(i0), T(0)), T(1));
    const auto w = cubic_coefficients<T>(t);
    for (int k = 0; k < 4; ++k) {
      axis.idx[k].push_back(std::max<int64_t>(std::min<int64_t>(i0 - 1 + k, in - 1), 0));
      axis.weight[k].push_back(static_cast<double>(w[k]));
    }
  }
  return axis;
}

// Maps for the last output_size.size() dims, innermost first (the order CPU interpolates in).
std::vector<AxisMap> nearest_axes(at::IntArrayRef in_sizes, at::IntArrayRef output_size, const Scales& scales,
                                  bool exact) {
  std::vector<AxisMap> axes;
  const int64_t k = static_cast<int64_t>(output_size.size()), first = static_cast<int64_t>(in_sizes.size()) - k;
  for (int64_t s = k - 1; s >= 0; --s)
    axes.push_back(nearest_axis(first + s, in_sizes[first + s], output_size[s], scales[s], exact));
  return axes;
}

std::vector<AxisMap> linear_axes(at::IntArrayRef in_sizes, at::IntArrayRef output_size, bool align_corners,
                                 const Scales& scales, at::ScalarType dtype) {
  std::vector<AxisMap> axes;
  const int64_t k = static_cast<int64_t>(output_size.size()), first = static_cast<int64_t>(in_sizes.size()) - k;
  for (int64_t s = k - 1; s >= 0; --s) {
    const int64_t d = first + s;
    axes.push_back(dtype == at::kDouble ? linear_axis<double>(d, in_sizes[d], output_size[s], align_corners, scales[s])
                                        : linear_axis<float>(d, in_sizes[d], output_size[s], align_corners, scales[s]));
  }
  return axes;
}

std::vector<AxisMap> cubic_axes(at::IntArrayRef in_sizes, at::IntArrayRef output_size, bool align_corners,
                                const Scales& scales, at::ScalarType dtype) {
  std::vector<AxisMap> axes;
  const int64_t k = static_cast<int64_t>(output_size.size()), first = static_cast<int64_t>(in_sizes.size()) - k;
  for (int64_t s = k - 1; s >= 0; --s) {
    const int64_t d = first + s;
    axes.push_back(dtype == at::kDouble ? cubic_axis<double>(d, in_sizes[d], output_size[s], align_corners, scales[s])
                                        : cubic_axis<float>(d, in_sizes[d], output_size[s], align_corners, scales[s]));
  }
  return axes;
}

Tensor& write_out(const Tensor& result, Tensor& out) {
  TORCH_CHECK(out.dtype() == result.dtype(), "Expected out tensor to have dtype ", result.dtype(), ", but got ",
              out.dtype(), " instead");
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

// NAME(self, output_size, SCALES...) and NAME_backward(grad_output, output_size, input_size, SCALES...).
#define TOCL_NEAREST(NAME, EXACT, SCALE_PARAMS, SCALE_ARGS)                                                        \
  Tensor NAME##_kernel(const Tensor& self, at::IntArrayRef output_size SCALE_PARAMS) {                             \
    StructuredCheck<at::meta::structured_##NAME> check;                                                            \
    check.meta(self, output_size SCALE_ARGS);                                                                      \
    return resample_forward(self, nearest_axes(self.sizes(), output_size, Scales{SCALE_ARGS_LIST}, EXACT));        \
  }                                                                                                                \
  Tensor& NAME##_out_kernel(const Tensor& self, at::IntArrayRef output_size SCALE_PARAMS, Tensor& out) {           \
    return write_out(NAME##_kernel(self, output_size SCALE_ARGS), out);                                            \
  }                                                                                                                \
  Tensor NAME##_backward_kernel(const Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size \
                             SCALE_PARAMS) {                                                                       \
    StructuredCheck<at::meta::structured_##NAME##_backward> check;                                                 \
    check.meta(grad_output, output_size, input_size SCALE_ARGS);                                                   \
    return resample_backward(grad_output, input_size,                                                              \
                             nearest_axes(input_size, output_size, Scales{SCALE_ARGS_LIST}, EXACT));               \
  }                                                                                                                \
  Tensor& NAME##_backward_out_kernel(const Tensor& grad_output, at::IntArrayRef output_size,                       \
                              at::IntArrayRef input_size SCALE_PARAMS, Tensor& grad_input) {                       \
    return write_out(NAME##_backward_kernel(grad_output, output_size, input_size SCALE_ARGS), grad_input);         \
  }

// AXES: linear_axes or cubic_axes.
#define TOCL_INTERPOLATING(NAME, AXES, SCALE_PARAMS, SCALE_ARGS)                                                         \
  Tensor NAME##_kernel(const Tensor& self, at::IntArrayRef output_size, bool align_corners SCALE_PARAMS) {                \
    StructuredCheck<at::meta::structured_##NAME> check;                                                                   \
    check.meta(self, output_size, align_corners SCALE_ARGS);                                                              \
    return resample_forward(                                                                                              \
        self, AXES(self.sizes(), output_size, align_corners, Scales{SCALE_ARGS_LIST}, self.scalar_type()));               \
  }                                                                                                                       \
  Tensor& NAME##_out_kernel(const Tensor& self, at::IntArrayRef output_size, bool align_corners SCALE_PARAMS,             \
                     Tensor& out) {                                                                                       \
    return write_out(NAME##_kernel(self, output_size, align_corners SCALE_ARGS), out);                                    \
  }                                                                                                                       \
  Tensor NAME##_backward_kernel(const Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,       \
                         bool align_corners SCALE_PARAMS) {                                                               \
    StructuredCheck<at::meta::structured_##NAME##_backward> check;                                                        \
    check.meta(grad_output, output_size, input_size, align_corners SCALE_ARGS);                                           \
    return resample_backward(grad_output, input_size,                                                                     \
                             AXES(input_size, output_size, align_corners, Scales{SCALE_ARGS_LIST},                        \
                                  grad_output.scalar_type()));                                                            \
  }                                                                                                                       \
  Tensor& NAME##_backward_out_kernel(const Tensor& grad_output, at::IntArrayRef output_size, at::IntArrayRef input_size,  \
                              bool align_corners SCALE_PARAMS, Tensor& grad_input) {                                      \
    return write_out(NAME##_backward_kernel(grad_output, output_size, input_size, align_corners SCALE_ARGS), grad_input); \
  }

#define SCALES_1D , std::optional<double> scales
#define SCALES_1D_ARGS , scales
#define SCALES_2D , std::optional<double> scales_h, std::optional<double> scales_w
#define SCALES_2D_ARGS , scales_h, scales_w
#define SCALES_3D , std::optional<double> scales_d, std::optional<double> scales_h, std::optional<double> scales_w
#define SCALES_3D_ARGS , scales_d, scales_h, scales_w

#define SCALE_ARGS_LIST scales
TOCL_NEAREST(upsample_nearest1d, false, SCALES_1D, SCALES_1D_ARGS)
TOCL_NEAREST(_upsample_nearest_exact1d, true, SCALES_1D, SCALES_1D_ARGS)
TOCL_INTERPOLATING(upsample_linear1d, linear_axes, SCALES_1D, SCALES_1D_ARGS)
#undef SCALE_ARGS_LIST
#define SCALE_ARGS_LIST scales_h, scales_w
TOCL_NEAREST(upsample_nearest2d, false, SCALES_2D, SCALES_2D_ARGS)
TOCL_NEAREST(_upsample_nearest_exact2d, true, SCALES_2D, SCALES_2D_ARGS)
TOCL_INTERPOLATING(upsample_bilinear2d, linear_axes, SCALES_2D, SCALES_2D_ARGS)
TOCL_INTERPOLATING(upsample_bicubic2d, cubic_axes, SCALES_2D, SCALES_2D_ARGS)
#undef SCALE_ARGS_LIST
#define SCALE_ARGS_LIST scales_d, scales_h, scales_w
TOCL_NEAREST(upsample_nearest3d, false, SCALES_3D, SCALES_3D_ARGS)
TOCL_NEAREST(_upsample_nearest_exact3d, true, SCALES_3D, SCALES_3D_ARGS)
TOCL_INTERPOLATING(upsample_trilinear3d, linear_axes, SCALES_3D, SCALES_3D_ARGS)
#undef SCALE_ARGS_LIST

#undef TOCL_NEAREST
#undef TOCL_INTERPOLATING

}  // namespace

TOCL_LIBRARY_IMPL(m) {
#define TOCL_REGISTER_UPSAMPLE(NAME)                           \
  m.impl(#NAME, TORCH_FN(NAME##_kernel));                      \
  m.impl(#NAME ".out", TORCH_FN(NAME##_out_kernel));           \
  m.impl(#NAME "_backward", TORCH_FN(NAME##_backward_kernel)); \
  m.impl(#NAME "_backward.grad_input", TORCH_FN(NAME##_backward_out_kernel));
  TOCL_REGISTER_UPSAMPLE(upsample_nearest1d)
  TOCL_REGISTER_UPSAMPLE(upsample_nearest2d)
  TOCL_REGISTER_UPSAMPLE(upsample_nearest3d)
  TOCL_REGISTER_UPSAMPLE(_upsample_nearest_exact1d)
  TOCL_REGISTER_UPSAMPLE(_upsample_nearest_exact2d)
  TOCL_REGISTER_UPSAMPLE(_upsample_nearest_exact3d)
  TOCL_REGISTER_UPSAMPLE(upsample_linear1d)
  TOCL_REGISTER_UPSAMPLE(upsample_bilinear2d)
  TOCL_REGISTER_UPSAMPLE(upsample_bicubic2d)
  TOCL_REGISTER_UPSAMPLE(upsample_trilinear3d)
#undef TOCL_REGISTER_UPSAMPLE
}

}  // namespace torch_opencl
