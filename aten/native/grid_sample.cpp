// grid_sampler_2d and grid_sampler_2d_backward (F.grid_sample of 4-D inputs): bilinear, nearest and bicubic
// interpolation, zeros/border/reflection padding, both align_corners, in kernels_cl/grid_sample.cl. The input's
// gradient is a scatter (each output point adds to up to four input points): the kernel writes each point's
// taps (a row of an (N * IH * IW + 1, C) table and a weight) and the project's deterministic segment sums
// (grid_sample_gradient.h, over segment_sum.h) add the weighted grad_output rows in CPU's order, without
// atomics. Bicubic interpolation takes 16 taps, each padded on its own, as CPU's.
#include <ATen/ATen.h>
#include <ATen/native/GridSamplerUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <tuple>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/native/grid_sample_gradient.h"

namespace torch_opencl {
namespace {

using at::Tensor;

struct GridSample {  // as in kernels_cl/grid_sample.cl
  cl_long N, C, IH, IW, OH, OW;
  cl_int interpolation, padding, align_corners, taps;
};

constexpr int64_t kBicubic = 2;

GridSample params(const Tensor& input, const Tensor& grid, int64_t interpolation, int64_t padding,
                  bool align_corners) {
  return {input.size(0), input.size(1), input.size(2), input.size(3), grid.size(1), grid.size(2),
          static_cast<cl_int>(interpolation), static_cast<cl_int>(padding), static_cast<cl_int>(align_corners),
          interpolation == 1 ? 1 : interpolation == kBicubic ? 16 : 4};
}

void check_args(const Tensor& input, const Tensor& grid, int64_t interpolation, int64_t padding) {
  at::native::check_grid_sampler_common(input, grid);
  at::native::check_grid_sampler_2d(input, grid);
  TORCH_CHECK(input.scalar_type() == grid.scalar_type(), "grid_sampler(): expected input and grid to have the same ",
              "dtype, but input has ", input.scalar_type(), " and grid has ", grid.scalar_type());
  const auto type = input.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16,
                              "\"grid_sampler_2d_cpu_kernel_impl\" not implemented for '", c10::toString(type), "'");
  TORCH_CHECK(interpolation >= 0 && interpolation <= 2, "grid_sampler(): unknown interpolation mode ", interpolation);
  TORCH_CHECK(padding >= 0 && padding <= 2, "grid_sampler(): unknown padding mode ", padding);
}

Tensor grid_sampler_2d(const Tensor& input, const Tensor& grid, int64_t interpolation, int64_t padding,
                       bool align_corners) {
  check_args(input, grid, interpolation, padding);
  const c10::DeviceGuard guard(input.device());
  auto out = at::empty({input.size(0), input.size(1), grid.size(1), grid.size(2)}, input.options());
  if (out.numel() == 0) return out;
  const auto in = input.contiguous();
  const auto g = grid.contiguous();
  cl_kernel k = dtype_kernel(in, "grid_sample.cl", "grid_sampler_2d_forward");
  tocl::set_args(k, buffer_arg(out), buffer_arg(in), buffer_arg(g), static_cast<cl_long>(out.numel()),
                 params(in, g, interpolation, padding, align_corners));
  tocl::enqueue_1d(device_index(out), current_stream_of(out), k, out.numel());
  return out;
}

std::tuple<Tensor, Tensor> grid_sampler_2d_backward(const Tensor& grad_output, const Tensor& input,
                                                    const Tensor& grid, int64_t interpolation, int64_t padding,
                                                    bool align_corners, std::array<bool, 2> output_mask) {
  check_args(input, grid, interpolation, padding);
  check_same_device({grad_output, input, grid});
  TORCH_CHECK(grad_output.dim() == 4 && grad_output.size(0) == input.size(0) && grad_output.size(1) == input.size(1) &&
                  grad_output.size(2) == grid.size(1) && grad_output.size(3) == grid.size(2),
              "grid_sampler_2d_backward(): expected grad_output of sizes ",
              at::IntArrayRef({input.size(0), input.size(1), grid.size(1), grid.size(2)}), " but got ",
              grad_output.sizes());
  TORCH_CHECK(grad_output.scalar_type() == input.scalar_type(), "grid_sampler_2d_backward(): expected grad_output ",
              "of dtype ", input.scalar_type(), " but got ", grad_output.scalar_type());
  const c10::DeviceGuard guard(input.device());
  const bool want_input = output_mask[0];
  const auto in = input.contiguous();
  const auto g = grid.contiguous();
  const auto go = grad_output.contiguous();
  auto grad_grid = at::empty(grid.sizes(), grid.options());
  const GridSample p = params(in, g, interpolation, padding, align_corners);
  const int64_t points = p.N * p.OH * p.OW;
  auto rows = at::empty({want_input ? points * p.taps : 0}, in.options().dtype(at::kLong));
  auto weights = at::empty({want_input ? points * p.taps : 0}, in.options());
  if (points > 0) {
    cl_kernel k = dtype_kernel(in, "grid_sample.cl", "grid_sampler_2d_backward");
    tocl::set_args(k, buffer_arg(grad_grid), buffer_arg(rows), buffer_arg(weights), buffer_arg(go), buffer_arg(in),
                   buffer_arg(g), static_cast<cl_long>(points), p, static_cast<cl_int>(want_input));
    tocl::enqueue_1d(device_index(grad_grid), current_stream_of(grad_grid), k, points);
  }
  Tensor grad_input;
  if (want_input) grad_input = grid_sample_input_gradient(go, rows, weights, p.taps, in.sizes());
  return {grad_input, grad_grid};
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("grid_sampler_2d", TORCH_FN(grid_sampler_2d));
  m.impl("grid_sampler_2d_backward", TORCH_FN(grid_sampler_2d_backward));
}

}  // namespace torch_opencl
