// Indexing and assembly: index_select (what embedding's forward calls),
// embedding_dense_backward (a work-item per row, or sorted segmented sums where the kernel forms
// want them: aten/native/segment_sum.h), tril/triu. Kernels in kernels_cl/indexing.cl over
// contiguous operands; indices are bounds-checked on the device first.
#include <ATen/ATen.h>
#include <ATen/MetaFunctions.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/native/index_bounds.h"
#include "aten/native/segment_sum.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/kernel_support/structured.h"
#include "runtime/kernel_forms.h"

namespace torch_opencl {
namespace {

using at::Tensor;

cl_long L(int64_t v) { return static_cast<cl_long>(v); }

Tensor& index_select_out(const Tensor& self, int64_t dim, const Tensor& index, Tensor& out) {
  const c10::DeviceGuard guard(self.device());
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt,
              "index_select(): Expected dtype int32 or int64 for index");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "index_select(): self and result must have the same scalar ",
              "type");
  TORCH_CHECK(index.device() == self.device() && out.device() == self.device(),
              "index_select(): expected self, index and out on the same device, got ", self.device(), ", ",
              index.device(), " and ", out.device());
  TORCH_CHECK(self.dim() > 0 || index.numel() == 1, "index_select(): Index to scalar can have only 1 value, got ",
              index.numel(), " value(s)");
  const int64_t D = self.dim() == 0 ? 1 : self.size(dim);
  // CPU's check for 2-d and more; for fewer dims any index is out of range of an empty self (IndexError below).
  TORCH_CHECK(self.dim() <= 1 || D > 0 || index.numel() == 0, "index_select(): self indexing axis dim should be positive");
  auto sizes = self.sizes().vec();
  if (self.dim() > 0) sizes[dim] = index.numel();
  at::native::resize_output(out, sizes);
  // CPU's error class follows its path: for 2-d and more, an empty self or dim 1 (its fast path)
  // raise RuntimeError, every other case IndexError, which may be deferred (the kernel clamps).
  const bool runtime_error = self.dim() > 1 && (self.numel() == 0 || dim == 1);
  if (index.numel() > 0 && D > 0 && !runtime_error && index_checks_deferred(index)) {
    static const int site = tocl::error_site("index_select (embedding)",
                                             [](int64_t, int64_t) { return std::string("index out of range in self"); });
    record_out_of_range(index, 0, D, std::nullopt, site);
  } else if (index.numel() > 0) {
    const auto bad = first_out_of_range(index, 0, D);
    TORCH_CHECK(!bad.has_value() || !runtime_error, "INDICES element is out of DATA bounds, id=", bad->value,
                " axis_dim=", D);
    TORCH_CHECK_INDEX(!bad.has_value(), "index out of range in self");
  }
  if (out.numel() == 0) return out;
  const auto in = self.contiguous();
  const auto idx = index.contiguous();
  int64_t inner = 1;
  for (int64_t k = dim + 1; k < self.dim(); ++k) inner *= self.size(k);
  auto o = out.is_contiguous() ? out : at::empty(sizes, out.options());
  const auto& forms = tocl::kernel_forms(device_index(in));
  if (forms.copy_lines && inner > 1) {  // a work-item per run of a selected row (runtime/kernel_forms.h)
    const int64_t run = static_cast<int64_t>(forms.copy_run);
    const int64_t chunks = (inner + run - 1) / run;
    const int64_t runs = o.numel() / inner * chunks;
    cl_kernel k = dtype_kernel(in, "indexing.cl", "index_select_lines", idx.scalar_type());
    tocl::set_args(k, buffer_arg(o), buffer_arg(in), buffer_arg(idx), L(runs), L(chunks), L(run), L(index.numel()),
                   L(D), L(inner));
    tocl::enqueue_runs(device_index(in), current_stream_of(in), k, runs);
  } else if (forms.copy_lines) {  // inner == 1: a work-item per run of a row's selected elements
    const int64_t run = static_cast<int64_t>(forms.copy_run), K = index.numel();
    const int64_t chunks = (K + run - 1) / run;
    const int64_t runs = o.numel() / K * chunks;
    cl_kernel k = dtype_kernel(in, "indexing.cl", "index_select_columns", idx.scalar_type());
    tocl::set_args(k, buffer_arg(o), buffer_arg(in), buffer_arg(idx), L(runs), L(chunks), L(run), L(K), L(D));
    tocl::enqueue_runs(device_index(in), current_stream_of(in), k, runs);
  } else {
    cl_kernel k = dtype_kernel(in, "indexing.cl", "index_select", idx.scalar_type());
    tocl::set_args(k, buffer_arg(o), buffer_arg(in), buffer_arg(idx), L(o.numel()), L(index.numel()), L(D), L(inner));
    tocl::enqueue_1d(device_index(in), current_stream_of(in), k, o.numel());
  }
  if (!o.is_same(out)) out.copy_(o);
  return out;
}

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  auto out = at::empty({0}, self.options());
  return index_select_out(self, dim, index, out);
}

Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices, int64_t num_weights,
                                int64_t padding_idx, bool scale_grad_by_freq) {
  check_same_device({grad_output, indices});
  const c10::DeviceGuard guard(grad_output.device());
  TORCH_CHECK(indices.scalar_type() == at::kLong || indices.scalar_type() == at::kInt,
              "embedding_backward: expected indices of dtype int32 or int64, got ", indices.scalar_type());
  const int64_t D = grad_output.size(-1);
  auto grad_weight = at::empty({num_weights, D}, grad_output.options());
  if (grad_weight.numel() == 0) return grad_weight;
  const auto grad = grad_output.contiguous();
  const auto idx = indices.contiguous();
  TORCH_CHECK(grad.numel() == idx.numel() * D, "embedding_backward: grad_output of shape ", grad_output.sizes(),
              " does not match indices of shape ", indices.sizes());
  // Embedding's forward checked these indices, so only a direct call can bring a bad one, whose gradient
  // would be dropped (the kernels skip rows out of range; CPU's crashes): one launch records it for the
  // next wait, on every device, rather than a wait per step.
  static const int site = tocl::error_site("embedding_dense_backward", [](int64_t v, int64_t rows) {
    return "embedding_dense_backward: index " + std::to_string(v) + " is out of range for " + std::to_string(rows) +
           " rows";
  });
  record_out_of_range(idx, 0, num_weights, std::nullopt, site);
  // Segment sums (aten/native/segment_sum.h), deterministic: the rows of each index summed in order. Added
  // to zeros, which is a store, and which the CPU form's walk over the indices takes (without scale_by_freq).
  grad_weight.zero_();
  if (idx.numel() > 0)
    segment_sums_into(grad_weight, 0, idx, grad.view({idx.numel(), D}), /*accumulate=*/true, padding_idx,
                      scale_grad_by_freq);
  return grad_weight;
}

// ---- tril / triu (structured) ----

void triangle(const Tensor& self, int64_t diagonal, bool lower, const Tensor& out) {
  if (self.numel() == 0) return;
  const c10::DeviceGuard guard(self.device());
  const auto in = self.contiguous();
  auto o = out.is_contiguous() ? out : at::empty(out.sizes(), out.options());
  cl_kernel k = dtype_kernel(in, "indexing.cl", "triangle");
  tocl::set_args(k, buffer_arg(o), buffer_arg(in), L(in.numel()), L(in.size(-2)), L(in.size(-1)), L(diagonal),
                 static_cast<cl_int>(lower));
  tocl::enqueue_1d(device_index(in), current_stream_of(in), k, in.numel());
  if (!o.is_same(out)) out.copy_(o);
}

#define TRIANGLE_OPS(NAME, LOWER)                                                  \
  Tensor NAME(const Tensor& self, int64_t diagonal) {                              \
    StructuredFunctional<at::meta::structured_##NAME> op;                          \
    op.meta(self, diagonal);                                                       \
    triangle(self, diagonal, LOWER, op.maybe_get_output(0));                       \
    return op.take();                                                              \
  }                                                                                \
  Tensor& NAME##_(Tensor& self, int64_t diagonal) {                                \
    StructuredOut<at::meta::structured_##NAME> op(self, /*in_place=*/true);        \
    op.meta(self, diagonal);                                                       \
    triangle(self, diagonal, LOWER, op.maybe_get_output(0));                       \
    op.finish();                                                                   \
    return self;                                                                   \
  }                                                                                \
  Tensor& NAME##_out(const Tensor& self, int64_t diagonal, Tensor& out) {          \
    StructuredOut<at::meta::structured_##NAME> op(out);                            \
    op.meta(self, diagonal);                                                       \
    triangle(self, diagonal, LOWER, op.maybe_get_output(0));                       \
    op.finish();                                                                   \
    return out;                                                                    \
  }

TRIANGLE_OPS(tril, true)
TRIANGLE_OPS(triu, false)
#undef TRIANGLE_OPS

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("index_select", TORCH_FN(index_select));
  m.impl("index_select.out", TORCH_FN(index_select_out));
  m.impl("embedding_dense_backward", TORCH_FN(embedding_dense_backward));
  m.impl("tril", TORCH_FN(tril));
  m.impl("tril_", TORCH_FN(tril_));
  m.impl("tril.out", TORCH_FN(tril_out));
  m.impl("triu", TORCH_FN(triu));
  m.impl("triu_", TORCH_FN(triu_));
  m.impl("triu.out", TORCH_FN(triu_out));
}

}  // namespace torch_opencl
