// gather, scatter (src and value forms, reduce="add"/"multiply"), scatter_add and
// scatter_reduce.two (sum/prod/mean/amax/amin, include_self). ATen's own structured
// operators run: their meta functions check shapes and dtypes, and their impl functions copy
// self into out, prepare include_self=False, divide for "mean", and call the DispatchStubs this
// file registers for PrivateUse1. Kernels in kernels_cl/scatter_gather.cl over strided operands;
// duplicate indices of a reduction meet in atomic updates.
#include <ATen/ATen.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/ReductionType.h>
#include <ATen/native/TensorAdvancedIndexing.h>
#include <ATen/ops/gather_native.h>
#include <ATen/ops/scatter_add_native.h>
#include <ATen/ops/scatter_native.h>
#include <ATen/ops/scatter_reduce_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/native/index_bounds.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/native/scatter_program.h"
#include "aten/kernel_support/structured.h"

namespace torch_opencl {
namespace {

using at::Tensor;

Tensor at_least_1d(const Tensor& t) { return t.dim() == 0 ? t.view({1}) : t; }

std::vector<int64_t> strides_of(const Tensor& t) { return t.strides().vec(); }

// CPU's error for an index outside [0, size) along dim.
void check_index_range(const Tensor& index, int64_t dim, int64_t size) {
  const auto bad = first_out_of_range(index, 0, size);
  TORCH_CHECK(!bad.has_value(), "index ", bad ? bad->value : 0, " is out of bounds for dimension ", dim, " with size ",
              size);
}

void gather_kernel(const Tensor& result, const Tensor& self_in, int64_t dim, const Tensor& index_in) {
  check_same_device({result, self_in, index_in});
  if (index_in.numel() == 0) return;
  const c10::DeviceGuard guard(self_in.device());
  const Tensor self = at_least_1d(self_in), index = at_least_1d(index_in), out = at_least_1d(result);
  check_index_range(index, dim, self.size(dim));
  auto self_strides = strides_of(self);
  self_strides[dim] = 0;
  const Geometry g = make_geometry(index.sizes(), {strides_of(out), self_strides, strides_of(index)}, "gather");
  cl_kernel k = scatter_gather_kernel(self, "gather", index.scalar_type());
  tocl::set_args(k, buffer_arg(out), buffer_arg(self), buffer_arg(index), static_cast<cl_long>(index.numel()), g,
                 static_cast<cl_long>(self.stride(dim)));
  tocl::enqueue_1d(device_index(self), current_stream_of(self), k, work_items(index.numel(), device_index(self)));
}

// self[..., index[i], ...] (update)= src[i] over the index's shape; `src` is either a tensor at least
// as large as index or a one-element tensor holding a value (broadcast with zero strides).
void scatter_into(const Tensor& self_in, int64_t dim, const Tensor& index_in, const Tensor& src_in, Update update,
                  bool is_value) {
  check_same_device({self_in, index_in, src_in});
  if (index_in.numel() == 0 || self_in.numel() == 0) {
    if (index_in.numel() > 0) check_index_range(index_in, dim, 0);
    return;
  }
  const c10::DeviceGuard guard(self_in.device());
  const Tensor self = at_least_1d(self_in), index = at_least_1d(index_in), src = at_least_1d(src_in);
  check_index_range(index, dim, self.size(dim));
  auto self_strides = strides_of(self);
  self_strides[dim] = 0;
  const auto src_strides = is_value ? std::vector<int64_t>(index.dim(), 0) : strides_of(src);
  const Geometry g = make_geometry(index.sizes(), {self_strides, src_strides, strides_of(index)}, "scatter");
  cl_kernel k = scatter_gather_kernel(self, "scatter", index.scalar_type());
  tocl::set_args(k, buffer_arg(self), buffer_arg(src), buffer_arg(index), static_cast<cl_long>(index.numel()), g,
                 static_cast<cl_long>(self.stride(dim)));
  enqueue_update(self, k, /*first_update_arg=*/9, update, index.numel());
}

Tensor value_tensor(const Tensor& self, const c10::Scalar& value) { return at::full({1}, value, self.options()); }

Update update_of(at::native::ReductionType reduce) {
  switch (reduce) {
    case at::native::ReductionType::SUM:
    case at::native::ReductionType::MEAN: return Update::Add;  // ATen's impl divides by the count afterwards
    case at::native::ReductionType::PROD: return Update::Mul;
    case at::native::ReductionType::MAX: return Update::Max;
    case at::native::ReductionType::MIN: return Update::Min;
  }
  TORCH_CHECK(false, "scatter: unknown reduction");
}

void scatter_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  scatter_into(self, dim, index, src, Update::Assign, false);
}

void scatter_fill_kernel(const Tensor& self, int64_t dim, const Tensor& index, const c10::Scalar& value) {
  scatter_into(self, dim, index, value_tensor(self, value), Update::Assign, true);
}

void scatter_add_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  scatter_into(self, dim, index, src, Update::Add, false);
}

void scatter_reduce_kernel(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                           const at::native::ReductionType& reduce) {
  scatter_into(self, dim, index, src, update_of(reduce), false);
}

void scatter_scalar_reduce_kernel(const Tensor& self, int64_t dim, const Tensor& index, const c10::Scalar& value,
                                  const at::native::ReductionType& reduce) {
  scatter_into(self, dim, index, value_tensor(self, value), update_of(reduce), true);
}

// ---- the out= operators (the functional and in-place forms reach them through ATen's
// CompositeExplicitAutogradNonFunctional kernels, which run the same meta first) ----

Tensor& gather_out(const Tensor& self, int64_t dim, const Tensor& index, bool sparse_grad, Tensor& out) {
  StructuredOut<at::native::structured_gather_out> op(out);
  op.meta(self, dim, index, sparse_grad);
  op.impl(self, dim, index, sparse_grad, op.maybe_get_output(0));
  op.finish();
  return out;
}

Tensor& scatter_src_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Tensor& out) {
  StructuredOut<at::native::structured_scatter_src_out> op(out, self.is_same(out));
  op.meta(self, dim, index, src);
  op.impl(self, dim, index, src, op.maybe_get_output(0));
  op.finish();
  return out;
}

Tensor& scatter_value_out(const Tensor& self, int64_t dim, const Tensor& index, const c10::Scalar& value,
                          Tensor& out) {
  StructuredOut<at::native::structured_scatter_value_out> op(out, self.is_same(out));
  op.meta(self, dim, index, value);
  op.impl(self, dim, index, value, op.maybe_get_output(0));
  op.finish();
  return out;
}

Tensor& scatter_reduce_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                           c10::string_view reduce, Tensor& out) {
  StructuredOut<at::native::structured_scatter_reduce_out> op(out, self.is_same(out));
  op.meta(self, dim, index, src, reduce);
  op.impl(self, dim, index, src, reduce, op.maybe_get_output(0));
  op.finish();
  return out;
}

Tensor& scatter_value_reduce_out(const Tensor& self, int64_t dim, const Tensor& index, const c10::Scalar& value,
                                 c10::string_view reduce, Tensor& out) {
  StructuredOut<at::native::structured_scatter_value_reduce_out> op(out, self.is_same(out));
  op.meta(self, dim, index, value, reduce);
  op.impl(self, dim, index, value, reduce, op.maybe_get_output(0));
  op.finish();
  return out;
}

Tensor& scatter_add_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, Tensor& out) {
  StructuredOut<at::native::structured_scatter_add> op(out, self.is_same(out));
  op.meta(self, dim, index, src);
  op.impl(self, dim, index, src, op.maybe_get_output(0));
  op.finish();
  return out;
}

Tensor& scatter_reduce_two_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                               c10::string_view reduce, bool include_self, Tensor& out) {
  StructuredOut<at::native::structured_scatter_reduce_two> op(out, self.is_same(out));
  op.meta(self, dim, index, src, reduce, include_self);
  op.impl(self, dim, index, src, reduce, include_self, op.maybe_get_output(0));
  op.finish();
  return out;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("gather.out", TORCH_FN(gather_out));
  m.impl("scatter.src_out", TORCH_FN(scatter_src_out));
  m.impl("scatter.value_out", TORCH_FN(scatter_value_out));
  m.impl("scatter.reduce_out", TORCH_FN(scatter_reduce_out));
  m.impl("scatter.value_reduce_out", TORCH_FN(scatter_value_reduce_out));
  m.impl("scatter_add.out", TORCH_FN(scatter_add_out));
  m.impl("scatter_reduce.two_out", TORCH_FN(scatter_reduce_two_out));
}

}  // namespace torch_opencl

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(gather_stub, &torch_opencl::gather_kernel)
REGISTER_PRIVATEUSE1_DISPATCH(scatter_stub, &torch_opencl::scatter_kernel)
REGISTER_PRIVATEUSE1_DISPATCH(scatter_fill_stub, &torch_opencl::scatter_fill_kernel)
REGISTER_PRIVATEUSE1_DISPATCH(scatter_add_stub, &torch_opencl::scatter_add_kernel)
REGISTER_PRIVATEUSE1_DISPATCH(scatter_reduce_stub, &torch_opencl::scatter_reduce_kernel)
REGISTER_PRIVATEUSE1_DISPATCH(scatter_scalar_reduce_stub, &torch_opencl::scatter_scalar_reduce_kernel)
REGISTER_PRIVATEUSE1_DISPATCH(scatter_reduce_two_stub, &torch_opencl::scatter_reduce_kernel)
}  // namespace at::native
