#pragma once
// Operators that read each output element from one or two input positions along each of a few
// dims (padding by reflection or replication, nearest and linear upsampling), composed from
// native index_select / index_add_ with the position maps computed on the host, axis by axis.
#include <ATen/core/Tensor.h>

#include <vector>

namespace torch_opencl {

// Along `dim`: out[o] = in[idx0[o]] or, when lambda1 is given, (1 - lambda1[o]) * in[idx0[o]] +
// lambda1[o] * in[idx1[o]] (the weights as CPU computes them, in the element type's precision).
struct AxisMap {
  int64_t dim = 0;
  int64_t in_size = 0;
  std::vector<int64_t> idx0, idx1;
  std::vector<double> lambda0, lambda1;  // empty: a plain gather
  bool identity() const;
};

// Applies the maps in order (the output of one is the input of the next).
at::Tensor resample_forward(const at::Tensor& input, const std::vector<AxisMap>& axes);

// The gradient of resample_forward with respect to its input (sizes `input_sizes`).
at::Tensor resample_backward(const at::Tensor& grad_output, at::IntArrayRef input_sizes,
                             const std::vector<AxisMap>& axes);

}  // namespace torch_opencl
