// out = self + alpha * other for a strided self and a COO other of the same size: the sparse
// indices become one linear row index into out seen as (rows of the sparse dims, dense dims), and
// index_add_ adds the values there; duplicates of an uncoalesced tensor add up as coalesce would.
// Other calls (sparse + sparse, sparse + dense, dtype promotion, sizes that differ) run CPU's
// kernel on the fallback, which gives its results and its errors.
#include "aten/native/sparse_accumulate.h"

#include <ATen/ATen.h>
#include <ATen/native/Resize.h>

#include <string>
#include <vector>

#include "aten/native/sparse_cpu_call.h"

namespace torch_opencl {
namespace {

std::string refusal(const at::Tensor& self, const at::Tensor& other) {
  if (self.layout() != at::kStrided || other.layout() != at::kSparse)
    return "only strided + sparse COO is computed on the device";
  if (self.sizes() != other.sizes()) return "the sizes differ";
  if (self.scalar_type() != other.scalar_type() || self.scalar_type() == at::kBool || self.is_complex())
    return "only one real dtype for both operands is computed on the device";
  if (self.device() != other.device()) return "the operands are on several devices";
  return {};
}

// alpha * other added into `out` (strided, other's size and dtype).
void accumulate(const at::Tensor& other, const at::Scalar& alpha, at::Tensor& out) {
  if (other._nnz() == 0 || out.numel() == 0) return;
  const int64_t sparse_dim = other.sparse_dim();
  at::Tensor target = out.is_contiguous() ? out : out.contiguous();
  std::vector<int64_t> strides(sparse_dim);
  int64_t rows = 1;
  for (int64_t d = sparse_dim - 1; d >= 0; --d) {
    strides[d] = rows;
    rows *= other.size(d);
  }
  const at::Tensor indices = other._indices();
  const at::Tensor linear =
      sparse_dim == 1 ? indices.select(0, 0)
                      : indices.mul(at::tensor(strides, indices.options().device(at::kCPU)).to(indices.device())
                                        .unsqueeze(1))
                            .sum(0);
  std::vector<int64_t> shape{rows};
  for (int64_t d = sparse_dim; d < other.dim(); ++d) shape.push_back(other.size(d));
  target.view(shape).index_add_(0, linear, other._values(), alpha);
  if (!target.is_same(out)) out.copy_(target);
}

}  // namespace

at::Tensor& add_sparse_into_dense_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha,
                                      at::Tensor& out) {
  const std::string why = refusal(self, other);
  if (!why.empty() || out.layout() != at::kStrided || out.scalar_type() != self.scalar_type() ||
      out.device() != self.device())
    return sparse_call_on_cpu<at::Tensor&(const at::Tensor&, const at::Tensor&, const at::Scalar&, at::Tensor&)>(
        "add.out", why.empty() ? "out= layout, dtype or device" : why, self, other, alpha, out);
  if (!out.is_same(self)) {
    at::native::resize_output(out, self.sizes());
    out.copy_(self);
  }
  accumulate(other, alpha, out);
  return out;
}

at::Tensor add_sparse_into_dense(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  const std::string why = refusal(self, other);
  if (!why.empty())
    return sparse_call_on_cpu<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Scalar&)>(
        "add.Tensor", why, self, other, alpha);
  at::Tensor out = self.clone(at::MemoryFormat::Contiguous);
  accumulate(other, alpha, out);
  return out;
}

at::Tensor& add_sparse_into_dense_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  const std::string why = refusal(self, other);
  if (!why.empty())
    return sparse_call_on_cpu<at::Tensor&(at::Tensor&, const at::Tensor&, const at::Scalar&)>("add_.Tensor", why, self,
                                                                                            other, alpha);
  accumulate(other, alpha, self);
  return self;
}

}  // namespace torch_opencl
