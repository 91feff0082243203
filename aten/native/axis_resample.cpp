#include "aten/native/axis_resample.h"

#include <ATen/ATen.h>

namespace torch_opencl {
namespace {

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
  if (!lambda1.empty() || static_cast<int64_t>(idx0.size()) != in_size) return false;
  for (size_t o = 0; o < idx0.size(); ++o)
    if (idx0[o] != static_cast<int64_t>(o)) return false;
  return true;
}

at::Tensor resample_forward(const at::Tensor& input, const std::vector<AxisMap>& axes) {
  at::Tensor x = input;
  for (const AxisMap& axis : axes) {
    if (axis.identity()) continue;
    const at::Tensor first = x.index_select(axis.dim, index_on(axis.idx0, x));
    if (axis.lambda1.empty()) {
      x = first;
      continue;
    }
    const at::Tensor second = x.index_select(axis.dim, index_on(axis.idx1, x));
    // lambda0 * first + lambda1 * second, in CPU's order of operations.
    x = at::addcmul(first * weights_on(axis.lambda0, axis.dim, x.dim(), x), second,
                    weights_on(axis.lambda1, axis.dim, x.dim(), x));
  }
  return x.is_same(input) ? input.clone() : x;
}

at::Tensor resample_backward(const at::Tensor& grad_output, at::IntArrayRef input_sizes,
                             const std::vector<AxisMap>& axes) {
  at::Tensor g = grad_output;
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
    const AxisMap& axis = *it;
    if (axis.identity()) continue;
    std::vector<int64_t> shape(g.sizes().begin(), g.sizes().end());
    shape[axis.dim] = axis.in_size;
    at::Tensor gi = at::zeros(shape, g.options());
    if (axis.lambda1.empty()) {
      gi.index_add_(axis.dim, index_on(axis.idx0, g), g);
    } else {
      gi.index_add_(axis.dim, index_on(axis.idx0, g), g * weights_on(axis.lambda0, axis.dim, g.dim(), g));
      gi.index_add_(axis.dim, index_on(axis.idx1, g), g * weights_on(axis.lambda1, axis.dim, g.dim(), g));
    }
    g = gi;
  }
  TORCH_INTERNAL_ASSERT(g.sizes() == input_sizes);
  return g.is_same(grad_output) ? grad_output.clone() : g;
}

}  // namespace torch_opencl
