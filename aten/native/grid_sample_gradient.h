#pragma once
// The input gradient of grid_sample, 2-D and 3-D (aten/native/grid_sample.cpp, grid_sample_3d.cpp), from what
// their backward kernels record: for each output point and interpolation tap, the input row it read and its
// weight.
#include <ATen/core/Tensor.h>

namespace torch_opencl {

// rows[point * taps + t]: the row n * spatial + position of tap t of `point` (N * spatial: a tap outside the input,
// skipped); weights alike. grad_output (N, C, out...) contiguous; input_sizes (N, C, in...). The rows of weighted
// gradients, (point, tap, channel), are summed in that order, as CPU adds them. Returns (N, C, in...) contiguous.
at::Tensor grid_sample_input_gradient(const at::Tensor& grad_output, const at::Tensor& rows, const at::Tensor& weights,
                                      int64_t taps, at::IntArrayRef input_sizes);

}  // namespace torch_opencl
