// out = beta * self + alpha * (sparse @ dense) for a 2-D COO `sparse` with no dense dims: each
// stored entry (i, j, v) adds v * dense[j] to row i, so the product is index_select of dense's rows
// by the column indices, scaled by the values, and index_add_ of those rows by the row indices.
// Duplicate entries of an uncoalesced tensor add up as they would after coalesce, and nothing
// travels to the CPU. Calls outside that shape (hybrid or batched sparse, a sparse self or mat2,
// dtypes other than floating ones, mismatched sizes) run CPU's kernel on the fallback, which gives
// its results and its errors.
#include "aten/native/sparse_mm.h"

#include <ATen/ATen.h>
#include <ATen/native/Resize.h>

#include <string>

#include "aten/native/sparse_cpu_call.h"

namespace torch_opencl {
namespace {

bool is_floating(const at::Tensor& t) { return at::isFloatingType(t.scalar_type()); }

// Why the device path does not take this call; empty when it does.
std::string refusal(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2) {
  if (self.layout() != at::kStrided || mat1.layout() != at::kSparse || mat2.layout() != at::kStrided)
    return "only sparse COO @ strided is computed on the device";
  if (mat1.sparse_dim() != 2 || mat1.dense_dim() != 0 || mat2.dim() != 2)
    return "only a 2-D sparse COO matrix without dense dims and a 2-D dense one are computed on the device";
  if (mat1.size(1) != mat2.size(0)) return "the sizes do not match";
  if (!is_floating(mat1) || mat1.scalar_type() != mat2.scalar_type() || mat1.scalar_type() != self.scalar_type())
    return "only one floating dtype for all operands is computed on the device";
  if (mat1.device() != mat2.device() || mat1.device() != self.device()) return "the operands are on several devices";
  return {};
}

// alpha * (mat1 @ mat2) added into `out`, which holds beta * self already.
void add_product(const at::Tensor& mat1, const at::Tensor& mat2, const at::Scalar& alpha, at::Tensor& out) {
  if (mat1._nnz() == 0 || mat2.size(1) == 0) return;
  const at::Tensor indices = mat1._indices();
  const at::Tensor rows_of_dense = mat2.index_select(0, indices.select(0, 1));
  const at::Tensor contributions = rows_of_dense.mul_(mat1._values().unsqueeze(1));
  out.index_add_(0, indices.select(0, 0), contributions, alpha);
}

}  // namespace

at::Tensor& addmm_sparse_dense_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                                   const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  const std::string why = refusal(self, mat1, mat2);
  if (!why.empty() || out.layout() != at::kStrided || out.scalar_type() != self.scalar_type() ||
      out.device() != self.device())
    return sparse_call_on_cpu<at::Tensor&(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Scalar&,
                              const at::Scalar&, at::Tensor&)>("addmm.out", why.empty() ? "out= layout, dtype or device" : why,
                                                               self, mat1, mat2, beta, alpha, out);
  const std::vector<int64_t> size{mat1.size(0), mat2.size(1)};
  const at::Tensor expanded = self.expand(size);  // CPU's broadcasting error for a self that does not fit
  at::native::resize_output(out, size);
  // As CPU: beta == 0 ignores self (its NaN and Inf included).
  if (beta.toComplexDouble() == 0.0) {
    out.zero_();
  } else if (!out.is_same(self)) {
    out.copy_(expanded);
    if (beta.toComplexDouble() != 1.0) out.mul_(beta);
  } else if (beta.toComplexDouble() != 1.0) {
    out.mul_(beta);
  }
  add_product(mat1, mat2, alpha, out);
  return out;
}

at::Tensor addmm_sparse_dense(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                              const at::Scalar& beta, const at::Scalar& alpha) {
  const std::string why = refusal(self, mat1, mat2);
  if (!why.empty())
    return sparse_call_on_cpu<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Scalar&,
                             const at::Scalar&)>("addmm", why, self, mat1, mat2, beta, alpha);
  at::Tensor out = at::empty({0}, self.options());
  return addmm_sparse_dense_out(self, mat1, mat2, beta, alpha, out);
}

at::Tensor& addmm_sparse_dense_(at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                                const at::Scalar& beta, const at::Scalar& alpha) {
  const std::string why = refusal(self, mat1, mat2);
  if (!why.empty() || self.dim() != 2 || self.size(0) != mat1.size(0) || self.size(1) != mat2.size(1))
    return sparse_call_on_cpu<at::Tensor&(at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Scalar&,
                              const at::Scalar&)>("addmm_", why.empty() ? "self's shape" : why, self, mat1, mat2, beta, alpha);
  return addmm_sparse_dense_out(self, mat1, mat2, beta, alpha, self);
}

}  // namespace torch_opencl
