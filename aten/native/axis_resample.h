#pragma once
// Operators that read each output element from one, two or four input positions along each of a few
// dims (padding by reflection or replication, nearest, linear and cubic upsampling), composed from
// native index_select / index_add_ with the position maps computed on the host, axis by axis.
#include <ATen/core/Tensor.h>

#include <vector>

namespace torch_opencl {

// Along `dim`: out[o] = in[idx[0][o]] when `weight` is empty, else the sum over taps t, in their order, of
// weight[t][o] * in[idx[t][o]] (the weights as CPU computes them, in the element type's precision).
struct AxisMap {
  int64_t dim = 0;
  int64_t in_size = 0;
  std::vector<std::vector<int64_t>> idx;   // [tap][output position]
  std::vector<std::vector<double>> weight;  // [tap][output position]; empty: a plain gather
  bool identity() const;
};

// Applies the maps in order (the output of one is the input of the next).
at::Tensor resample_forward(const at::Tensor& input, const std::vector<AxisMap>& axes);

// The gradient of resample_forward with respect to its input (sizes `input_sizes`).
at::Tensor resample_backward(const at::Tensor& grad_output, at::IntArrayRef input_sizes,
                             const std::vector<AxisMap>& axes);

}  // namespace torch_opencl
