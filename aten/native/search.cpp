// searchsorted, bucketize and isin: binary searches on the device (kernels_cl/search.cl), one work-item per
// value searched. searchsorted and bucketize follow CPU's Bucketization.cpp (its checks, its common dtype, its
// comparisons); isin sorts the test elements (aten/native/sort.h) and searches each element among them, where
// CPU picks a brute-force loop or a sort-based composition by size (the same answer).
#include <ATen/ATen.h>
#include <ATen/native/BucketizationUtils.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/isin_meta.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/kernel_support/structured.h"
#include "aten/native/sort.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

using at::Tensor;

cl_long L(int64_t v) { return static_cast<cl_long>(v); }

// The dtype CPU compares in (searchsorted_maybe_trim_input_tensors): the result type of boundaries and input, a
// wrapped number (the Scalar forms) taking part as in binary ops.
c10::ScalarType common_search_dtype(const Tensor& boundaries, const Tensor& input) {
  if (input.scalar_type() == boundaries.scalar_type()) return input.scalar_type();
  at::native::ResultTypeState state = {};
  state = at::native::update_result_type_state(boundaries, state);
  state = at::native::update_result_type_state(input, state);
  return at::native::result_type(state);
}

void check_search_dtype(c10::ScalarType type, const char* op) {
  // CPU's kernels dispatch over all types but bool (and complex, which has no OpenCL form anyway).
  TORCH_CHECK_NOT_IMPLEMENTED(type != at::kBool, "\"", op, "\" not implemented for 'Bool'");
}

Tensor& searchsorted_out(const Tensor& sorted_sequence, const Tensor& self, bool out_int32, bool right,
                         std::optional<c10::string_view> side, const std::optional<Tensor>& sorter_opt,
                         Tensor& result) {
  const Tensor sorter = sorter_opt.value_or(Tensor());
  at::native::searchsorted_pre_check(sorted_sequence, self, result, out_int32, right, side, sorter);
  check_same_device({sorted_sequence, self, result});
  const c10::DeviceGuard guard(self.device());
  at::native::resize_output(result, self.sizes());
  const bool is_right = side ? *side == "right" : right;
  if (self.numel() == 0) return result;
  const auto type = common_search_dtype(sorted_sequence, self);
  check_search_dtype(type, "searchsorted_out_cpu");
  const Tensor input = self.to(type).contiguous();
  const Tensor boundaries = sorted_sequence.to(type).contiguous();
  const Tensor order = sorter.defined() ? sorter.contiguous() : sorter;
  Tensor out = result.is_contiguous() ? result : at::empty(result.sizes(), result.options());
  const int64_t inner_in = input.dim() == 0 ? 1 : input.size(-1);
  const int64_t inner_bd = boundaries.size(-1);
  const int device = device_index(input);
  check_device_supports(type, device, "searchsorted");
  cl_kernel k = tocl::get_kernel(dtype_program(device, "search.cl", type, out.scalar_type()), "searchsorted");
  tocl::set_args(k, buffer_arg(out), buffer_arg(input), buffer_arg(boundaries),
                 order.defined() ? buffer_arg(order) : tocl::BufferArg{nullptr, 0}, L(input.numel()), L(inner_in),
                 L(inner_bd), static_cast<cl_int>(boundaries.dim() == 1), static_cast<cl_int>(is_right),
                 static_cast<cl_int>(order.defined()));
  tocl::enqueue_1d(device, current_stream_of(input), k, input.numel());
  if (!out.is_same(result)) result.copy_(out);
  return result;
}

Tensor searchsorted_tensor(const Tensor& sorted_sequence, const Tensor& self, bool out_int32, bool right,
                    std::optional<c10::string_view> side, const std::optional<Tensor>& sorter) {
  Tensor result = at::empty({0}, self.options().dtype(out_int32 ? at::kInt : at::kLong));
  return searchsorted_out(sorted_sequence, self, out_int32, right, side, sorter, result);
}

Tensor& searchsorted_scalar_out(const Tensor& sorted_sequence, const c10::Scalar& self, bool out_int32, bool right,
                                std::optional<c10::string_view> side, const std::optional<Tensor>& sorter,
                                Tensor& result) {
  return searchsorted_out(sorted_sequence, at::native::searchsorted_scalar_tensor(self, sorted_sequence.device()),
                          out_int32, right, side, sorter, result);
}

Tensor searchsorted_scalar(const Tensor& sorted_sequence, const c10::Scalar& self, bool out_int32, bool right,
                           std::optional<c10::string_view> side, const std::optional<Tensor>& sorter) {
  return searchsorted_tensor(sorted_sequence, at::native::searchsorted_scalar_tensor(self, sorted_sequence.device()),
                      out_int32, right, side, sorter);
}

Tensor& bucketize_out(const Tensor& self, const Tensor& boundaries, bool out_int32, bool right, Tensor& result) {
  TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(), ")");
  return searchsorted_out(boundaries, self, out_int32, right, std::nullopt, std::nullopt, result);
}

Tensor bucketize_tensor(const Tensor& self, const Tensor& boundaries, bool out_int32, bool right) {
  Tensor result = at::empty({0}, self.options().dtype(out_int32 ? at::kInt : at::kLong));
  return bucketize_out(self, boundaries, out_int32, right, result);
}

Tensor bucketize_scalar(const c10::Scalar& self, const Tensor& boundaries, bool out_int32, bool right) {
  return bucketize_tensor(at::native::searchsorted_scalar_tensor(self, boundaries.device()), boundaries, out_int32, right);
}

// ---- isin ----

// out (bool, elements' shape) = elements in test_elements, != invert.
void isin_into(const Tensor& elements, const Tensor& test_elements, bool invert, const Tensor& out) {
  if (elements.numel() == 0) return;
  check_same_device({elements, test_elements, out});
  const c10::DeviceGuard guard(out.device());
  if (test_elements.numel() == 0) {
    out.fill_(invert);
    return;
  }
  const auto type = at::result_type(elements, test_elements);
  const Tensor e = elements.to(out.device(), type).contiguous();
  const Tensor t = test_elements.to(out.device(), type).reshape({-1}).contiguous();
  const int64_t ntest = t.numel();
  const Tensor sorted = at::empty({ntest}, t.options());
  sort_rows(t, 1, ntest, /*desc=*/false, sorted, at::empty({ntest}, t.options().dtype(at::kLong)));
  Tensor o = out.is_contiguous() ? out : at::empty(out.sizes(), out.options());
  cl_kernel k = dtype_kernel(e, "search.cl", "isin_sorted");
  tocl::set_args(k, buffer_arg(o), buffer_arg(e), buffer_arg(sorted), L(e.numel()), L(ntest),
                 static_cast<cl_int>(invert));
  tocl::enqueue_1d(device_index(e), current_stream_of(e), k, e.numel());
  if (!o.is_same(out)) out.copy_(o);
}

Tensor isin_tensors(const Tensor& elements, const Tensor& test_elements, bool assume_unique, bool invert) {
  StructuredFunctional<at::meta::structured_isin_Tensor_Tensor> op;
  op.meta(elements, test_elements, assume_unique, invert);
  isin_into(elements, test_elements, invert, op.maybe_get_output(0));
  return op.take();
}

Tensor& isin_tensors_out(const Tensor& elements, const Tensor& test_elements, bool assume_unique, bool invert, Tensor& out) {
  StructuredOut<at::meta::structured_isin_Tensor_Tensor> op(out);
  op.meta(elements, test_elements, assume_unique, invert);
  isin_into(elements, test_elements, invert, op.maybe_get_output(0));
  op.finish();
  return out;
}

// The scalar forms as CPU's: eq / ne against a scalar test element; a scalar element as a wrapped number.
Tensor isin_tensor_scalar(const Tensor& elements, const c10::Scalar& test_element, bool assume_unique, bool invert) {
  return invert ? at::ne(elements, test_element) : at::eq(elements, test_element);
}

Tensor& isin_tensor_scalar_out(const Tensor& elements, const c10::Scalar& test_element, bool assume_unique,
                               bool invert, Tensor& out) {
  return invert ? at::ne_out(out, elements, test_element) : at::eq_out(out, elements, test_element);
}

Tensor isin_scalar_tensor(const c10::Scalar& element, const Tensor& test_elements, bool assume_unique, bool invert) {
  return isin_tensors(at::native::wrapped_scalar_tensor(element, test_elements.device()), test_elements, assume_unique,
              invert);
}

Tensor& isin_scalar_tensor_out(const c10::Scalar& element, const Tensor& test_elements, bool assume_unique,
                               bool invert, Tensor& out) {
  return isin_tensors_out(at::native::wrapped_scalar_tensor(element, test_elements.device()), test_elements, assume_unique,
                  invert, out);
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("searchsorted.Tensor", TORCH_FN(searchsorted_tensor));
  m.impl("searchsorted.Tensor_out", TORCH_FN(searchsorted_out));
  m.impl("searchsorted.Scalar", TORCH_FN(searchsorted_scalar));
  m.impl("searchsorted.Scalar_out", TORCH_FN(searchsorted_scalar_out));
  m.impl("bucketize.Tensor", TORCH_FN(bucketize_tensor));
  m.impl("bucketize.Tensor_out", TORCH_FN(bucketize_out));
  m.impl("bucketize.Scalar", TORCH_FN(bucketize_scalar));
  m.impl("isin.Tensor_Tensor", TORCH_FN(isin_tensors));
  m.impl("isin.Tensor_Tensor_out", TORCH_FN(isin_tensors_out));
  m.impl("isin.Tensor_Scalar", TORCH_FN(isin_tensor_scalar));
  m.impl("isin.Tensor_Scalar_out", TORCH_FN(isin_tensor_scalar_out));
  m.impl("isin.Scalar_Tensor", TORCH_FN(isin_scalar_tensor));
  m.impl("isin.Scalar_Tensor_out", TORCH_FN(isin_scalar_tensor_out));
}

}  // namespace torch_opencl
