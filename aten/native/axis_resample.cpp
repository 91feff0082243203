#include "aten/native/axis_resample.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "aten/kernel_support/cl_types.h"

namespace torch_opencl {
namespace {

// float16 and bfloat16 run the composition on a float32 copy and round once at the end, as CPU's and CUDA's
// kernels compute them: in their own dtype each tap's product, each partial sum, each index_add_ and each
// axis would round again (thousands of units off near 0; nearest's gradient too, from its sums).
bool through_float(const at::Tensor& t, const std::vector<AxisMap>& axes, bool weighted_only) {
  return computed_in_float(t.scalar_type()) && std::any_of(axes.begin(), axes.end(), [&](const AxisMap& a) {
           return weighted_only ? !a.weight.empty() : !a.identity();
         });
}

at::Tensor index_on(const std::vector<int64_t>& idx, const at::Tensor& like) {
  return at::tensor(idx, at::TensorOptions().dtype(at::kLong)).to(like.device());
}

// lambda as a tensor that broadcasts along `dim` of a tensor with `ndim` dims.
at::Tensor weights_on(const std::vector<double>& w, int64_t dim, int64_t ndim, const at::Tensor& like) {
  std::vector<int64_t> shape(ndim, 1);
  shape[dim] = static_cast<int64_t>(w.size());
  return at::tensor(w, at::TensorOptions().dtype(at::kDouble)).to(like.options()).view(shape);
}

}  // namespace

bool AxisMap::identity() const {
  if (!weight.empty() || static_cast<int64_t>(idx[0].size()) != in_size) return false;
  for (size_t o = 0; o < idx[0].size(); ++o)
    if (idx[0][o] != static_cast<int64_t>(o)) return false;
  return true;
}

at::Tensor resample_forward(const at::Tensor& input, const std::vector<AxisMap>& axes) {
  // Gathers alone (nearest, padding) move values without rounding them.
  if (through_float(input, axes, /*weighted_only=*/true))
    return resample_forward(input.to(at::kFloat), axes).to(input.scalar_type());
  at::Tensor x = input;
  for (const AxisMap& axis : axes) {
    if (axis.identity()) continue;
    const at::Tensor first = x.index_select(axis.dim, index_on(axis.idx[0], x));
    if (axis.weight.empty()) {
      x = first;
      continue;
    }
    // w0 * tap0 + w1 * tap1 + ..., in CPU's order of operations.
    at::Tensor sum = first * weights_on(axis.weight[0], axis.dim, x.dim(), x);
    for (size_t t = 1; t < axis.idx.size(); ++t)
      sum = at::addcmul(sum, x.index_select(axis.dim, index_on(axis.idx[t], x)),
                        weights_on(axis.weight[t], axis.dim, x.dim(), x));
    x = sum;
  }
  return x.is_same(input) ? input.clone() : x;
}

at::Tensor resample_backward(const at::Tensor& grad_output, at::IntArrayRef input_sizes,
                             const std::vector<AxisMap>& axes) {
  if (through_float(grad_output, axes, /*weighted_only=*/false))
    return resample_backward(grad_output.to(at::kFloat), input_sizes, axes).to(grad_output.scalar_type());
  at::Tensor g = grad_output;
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
    const AxisMap& axis = *it;
    if (axis.identity()) continue;
    std::vector<int64_t> shape(g.sizes().begin(), g.sizes().end());
    shape[axis.dim] = axis.in_size;
    at::Tensor gi = at::zeros(shape, g.options());
    if (axis.weight.empty()) {
      gi.index_add_(axis.dim, index_on(axis.idx[0], g), g);
    } else {
      for (size_t t = 0; t < axis.idx.size(); ++t)
        gi.index_add_(axis.dim, index_on(axis.idx[t], g), g * weights_on(axis.weight[t], axis.dim, g.dim(), g));
    }
    g = gi;
  }
  TORCH_INTERNAL_ASSERT(g.sizes() == input_sizes);
  return g.is_same(grad_output) ? grad_output.clone() : g;
}

}  // namespace torch_opencl
