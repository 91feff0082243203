// torch.renorm (functional, in-place and out=): each slice along `dim` whose p-norm exceeds maxnorm is scaled
// by maxnorm / (norm + 1e-7), as CPU's structured kernel computes it: the norm (linalg_vector_norm in the
// accumulation type), the factor in self's dtype, one multiply. All native; ATen's meta function checks.
// embedding_renorm_ (nn.Embedding's max_norm) scales the rows of an embedding that indices name, the same way.
#include <ATen/ATen.h>
#include <ATen/AccumulateType.h>
#include <ATen/TensorUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/renorm_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <numeric>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/structured.h"

namespace torch_opencl {
namespace {

using at::Tensor;

void renorm_into(const Tensor& self, const at::Scalar& p, int64_t dim, const at::Scalar& maxnorm, const Tensor& out) {
  if (self.numel() == 0) return;
  const c10::DeviceGuard guard(self.device());
  dim = c10::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> reduce_dims(self.dim());
  std::iota(reduce_dims.begin(), reduce_dims.end(), 0);
  reduce_dims.erase(reduce_dims.begin() + dim);
  const auto acc_type = at::toAccumulateType(self.scalar_type(), /*is_cuda=*/true);
  const auto norm = at::linalg_vector_norm(self, p, reduce_dims, /*keepdim=*/true, acc_type);
  const double limit = maxnorm.toDouble();
  const auto factor = at::where(norm > limit, limit / (norm + 1e-7), 1.0).to(self.scalar_type());
  at::mul_out(const_cast<Tensor&>(out), self, factor);
}

Tensor renorm_functional(const Tensor& self, const at::Scalar& p, int64_t dim, const at::Scalar& maxnorm) {
  StructuredFunctional<at::meta::structured_renorm> op;
  op.meta(self, p, dim, maxnorm);
  renorm_into(self, p, dim, maxnorm, op.maybe_get_output(0));
  return op.take();
}

Tensor& renorm_out_kernel(const Tensor& self, const at::Scalar& p, int64_t dim, const at::Scalar& maxnorm, Tensor& out) {
  StructuredOut<at::meta::structured_renorm> op(out, /*in_place=*/out.is_same(self));
  op.meta(self, p, dim, maxnorm);
  renorm_into(self, p, dim, maxnorm, op.maybe_get_output(0));
  op.finish();
  return out;
}

Tensor& renorm_inplace(Tensor& self, const at::Scalar& p, int64_t dim, const at::Scalar& maxnorm) {
  return renorm_out_kernel(self, p, dim, maxnorm, self);
}

// Each row of the 2-D weight that indices name, if its norm_type-norm exceeds max_norm, scaled in place by
// max_norm / (norm + 1e-7), the factor and the product in the accumulation type as CPU's row *= scale. A repeated
// index scales its row once: every copy is scaled from the original row, and all write the same values.
Tensor& embedding_renorm_(Tensor& self, const Tensor& indices, double max_norm, double norm_type) {
  // CPU's checks and messages.
  at::checkDim("embedding_renorm_", at::TensorArg(self, "self", 1), 2);
  at::checkScalarTypes("embedding_renorm_", at::TensorArg(indices, "indices", 2), {at::kLong, at::kInt});
  check_same_device({self, indices});
  if (indices.numel() == 0 || self.numel() == 0) return self;
  const c10::DeviceGuard guard(self.device());
  const auto index = indices.reshape({-1}).to(at::kLong);  // index_copy_ takes int64 only
  const auto rows = self.index_select(0, index);  // checks the indices against the rows
  const auto acc_type = at::toAccumulateType(self.scalar_type(), /*is_cuda=*/true);
  const auto norm = at::linalg_vector_norm(rows, norm_type, {1}, /*keepdim=*/true, acc_type);
  const auto factor = at::where(norm > max_norm, max_norm / (norm + 1e-7), 1.0);
  self.index_copy_(0, index, (rows.to(acc_type) * factor).to(self.scalar_type()));
  return self;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("embedding_renorm_", TORCH_FN(embedding_renorm_));
  m.impl("renorm", TORCH_FN(renorm_functional));
  m.impl("renorm.out", TORCH_FN(renorm_out_kernel));
  m.impl("renorm_", TORCH_FN(renorm_inplace));
}

}  // namespace torch_opencl
