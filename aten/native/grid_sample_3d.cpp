// grid_sampler_3d and grid_sampler_3d_backward (F.grid_sample of 5-D inputs): trilinear ("bilinear") and nearest
// interpolation, zeros/border/reflection padding, both align_corners, in kernels_cl/grid_sample_3d.cl, with
// CPU's scalar formulas. As grid_sample.cpp's 2-D backward, the input's gradient is a scatter (each output point
// adds to up to eight input points): the kernel writes each point's taps and weights and the deterministic
// segment sums (grid_sample_gradient.h) add the weighted grad_output rows in CPU's order, without atomics.
// float32 and float64 here; half and bfloat16 (which CPU computes rounding every step) on the counted fallback.
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

struct GridSample3d {  // as in kernels_cl/grid_sample_3d.cl
  cl_long N, C, ID, IH, IW, OD, OH, OW;
  cl_int interpolation, padding, align_corners, taps;
};

GridSample3d params(const Tensor& input, const Tensor& grid, int64_t interpolation, int64_t padding,
                    bool align_corners) {
  return {input.size(0), input.size(1), input.size(2), input.size(3), input.size(4), grid.size(1), grid.size(2),
          grid.size(3), static_cast<cl_int>(interpolation), static_cast<cl_int>(padding),
          static_cast<cl_int>(align_corners), interpolation == 1 ? 1 : 8};
}

void check_args(const Tensor& input, const Tensor& grid, int64_t interpolation, int64_t padding) {
  at::native::check_grid_sampler_common(input, grid);
  at::native::check_grid_sampler_3d(input, grid, interpolation);
  // CPU dispatches on the input's dtype, then reads the grid as that dtype: its errors in that order.
  const auto type = input.scalar_type();
  if (type == at::kHalf || type == at::kBFloat16)
    throw_dtype_not_native(c10::str("grid_sampler_3d of ", type, " (CPU rounds every step)"));
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble,
                              "\"grid_sampler3d_cpu\" not implemented for '", c10::toString(type), "'");
  TORCH_CHECK(grid.scalar_type() == type, "expected scalar type ", type, " but found ", grid.scalar_type());
  TORCH_CHECK(interpolation >= 0 && interpolation <= 1, "grid_sampler(): unknown interpolation mode ", interpolation);
  TORCH_CHECK(padding >= 0 && padding <= 2, "grid_sampler(): unknown padding mode ", padding);
}

Tensor grid_sampler_3d(const Tensor& input, const Tensor& grid, int64_t interpolation, int64_t padding,
                       bool align_corners) {
  check_args(input, grid, interpolation, padding);
  const c10::DeviceGuard guard(input.device());
  auto out = at::empty({input.size(0), input.size(1), grid.size(1), grid.size(2), grid.size(3)}, input.options());
  if (out.numel() == 0) return out;
  const auto in = input.contiguous();
  const auto g = grid.contiguous();
  cl_kernel k = dtype_kernel(in, "grid_sample_3d.cl", "grid_sampler_3d_forward");
  tocl::set_args(k, buffer_arg(out), buffer_arg(in), buffer_arg(g), static_cast<cl_long>(out.numel()),
                 params(in, g, interpolation, padding, align_corners));
  tocl::enqueue_1d(device_index(out), current_stream_of(out), k, out.numel());
  return out;
}

std::tuple<Tensor, Tensor> grid_sampler_3d_backward(const Tensor& grad_output, const Tensor& input,
                                                    const Tensor& grid, int64_t interpolation, int64_t padding,
                                                    bool align_corners, std::array<bool, 2> output_mask) {
  check_args(input, grid, interpolation, padding);
  check_same_device({grad_output, input, grid});
  const std::vector<int64_t> out_sizes{input.size(0), input.size(1), grid.size(1), grid.size(2), grid.size(3)};
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(out_sizes), "grid_sampler_3d_backward(): expected grad_output ",
              "of sizes ", at::IntArrayRef(out_sizes), " but got ", grad_output.sizes());
  TORCH_CHECK(grad_output.scalar_type() == input.scalar_type(), "grid_sampler_3d_backward(): expected grad_output ",
              "of dtype ", input.scalar_type(), " but got ", grad_output.scalar_type());
  const c10::DeviceGuard guard(input.device());
  const bool want_input = output_mask[0];
  const auto in = input.contiguous();
  const auto g = grid.contiguous();
  const auto go = grad_output.contiguous();
  auto grad_grid = at::empty(grid.sizes(), grid.options());
  const GridSample3d p = params(in, g, interpolation, padding, align_corners);
  const int64_t points = p.N * p.OD * p.OH * p.OW;
  auto rows = at::empty({want_input ? points * p.taps : 0}, in.options().dtype(at::kLong));
  auto weights = at::empty({want_input ? points * p.taps : 0}, in.options());
  if (points > 0) {
    cl_kernel k = dtype_kernel(in, "grid_sample_3d.cl", "grid_sampler_3d_backward");
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
  m.impl("grid_sampler_3d", TORCH_FN(grid_sampler_3d));
  m.impl("grid_sampler_3d_backward", TORCH_FN(grid_sampler_3d_backward));
}

}  // namespace torch_opencl
