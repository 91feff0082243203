// _weight_norm_interface and its backward (nn.utils.weight_norm, torch._weight_norm over the first or last
// dim): w = v * (g / ||v||) with the norm over every dim but `dim`, composed from native reductions and
// pointwise ops in CPU's order. float16 and bfloat16 compute in float and round once, and return the norms in
// float, as CPU's kernels do.
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <tuple>
#include <vector>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"

namespace torch_opencl {
namespace {

using at::Tensor;

// The dims the norm reduces (all but `dim`) and v's shape with 1 in each of them.
std::pair<std::vector<int64_t>, std::vector<int64_t>> reduced_dims(const Tensor& v, int64_t dim) {
  std::vector<int64_t> dims, keep(v.sizes().begin(), v.sizes().end());
  for (int64_t d = 0; d < v.dim(); ++d)
    if (d != dim) {
      dims.push_back(d);
      keep[d] = 1;
    }
  return {dims, keep};
}

void check_dim(const Tensor& v, int64_t dim) {
  TORCH_CHECK(dim == 0 || dim == v.dim() - 1, "fused kernels can only be applied for first or last dim");
}

std::tuple<Tensor, Tensor> weight_norm_interface(const Tensor& v, const Tensor& g, int64_t dim) {
  check_same_device({v, g});
  check_dim(v, dim);
  const c10::DeviceGuard guard(v.device());
  const auto [dims, keep] = reduced_dims(v, dim);
  TORCH_CHECK(g.numel() == (v.dim() == 0 ? 1 : v.size(dim)), "weight_norm: expected g with ",
              v.dim() == 0 ? 1 : v.size(dim), " elements, got ", g.sizes());
  const auto norm_type = compute_dtype(g.scalar_type());
  const auto acc = at::promote_types(compute_dtype(v.scalar_type()), compute_dtype(g.scalar_type()));
  const auto norm = at::linalg_vector_norm(v, 2, dims, /*keepdim=*/true, acc);
  const auto w = (v.to(acc) * (g.reshape(keep).to(acc) / norm)).to(v.scalar_type());
  auto norms = at::empty_strided(g.sizes(), g.strides(), g.options().dtype(norm_type));
  norms.copy_(norm.reshape(g.sizes()));
  return {w.contiguous(), norms};
}

std::tuple<Tensor, Tensor> weight_norm_interface_backward(const Tensor& grad_w, const Tensor& saved_v, const Tensor& saved_g,
                                                const Tensor& saved_norms, int64_t dim) {
  TORCH_CHECK(saved_v.is_contiguous(), "saved_v must be contiguous");
  TORCH_CHECK(saved_g.is_contiguous(), "saved_g must be contiguous");
  TORCH_CHECK(saved_norms.is_contiguous(), "saved_norm must be contiguous");
  check_same_device({grad_w, saved_v, saved_g, saved_norms});
  check_dim(saved_v, dim);
  const c10::DeviceGuard guard(saved_v.device());
  const auto [dims, keep] = reduced_dims(saved_v, dim);
  const auto acc = at::promote_types(compute_dtype(saved_v.scalar_type()), compute_dtype(saved_norms.scalar_type()));
  const auto norm = saved_norms.reshape(keep).to(acc);
  const auto g = saved_g.reshape(keep).to(acc);
  // a = sum(grad_w * v) per slice; grad_g = a / norm; grad_v = (g / norm) * (grad_w - v * a / norm^2).
  const auto a = (grad_w.to(acc) * saved_v.to(acc)).sum(dims, /*keepdim=*/true);
  const auto grad_g = (a / norm).reshape(saved_g.sizes()).to(saved_g.scalar_type());
  const auto grad_v = ((g / norm) * (grad_w.to(acc) - saved_v.to(acc) * (a / (norm * norm)))).to(saved_v.scalar_type());
  return {grad_v.contiguous(), grad_g.contiguous()};
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("_weight_norm_interface", TORCH_FN(weight_norm_interface));
  m.impl("_weight_norm_interface_backward", TORCH_FN(weight_norm_interface_backward));
}

}  // namespace torch_opencl
