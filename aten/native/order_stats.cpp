// kthvalue, median, nanmedian and mode select from the rows along dim in the stable order (equal values by
// position, NaN last): kthvalue and the medians by a quickselect per row in the CPU form, by sorting the rows
// (aten/native/sort.h) and picking in the GPU form; mode sorts the rows and walks their runs
// (kernels_cl/order_stats.cl). Values equal CPU's. Indices: CPU's median and nanmedian order equal values by
// position (nth_element over (value, index)), so the median's index is the stable order's, as here; a NaN row's
// median is its first NaN, as CPU's. kthvalue (CPU: quickselect) and mode (CPU: std::sort, not stable past 16
// elements) leave the index among equal values open: here the k-th in the stable order, and for mode the last of
// its run (the largest index holding the mode, which CPU also gives for rows of up to 16).
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/SortingUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <climits>
#include <cmath>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/kernel_support/out_arguments.h"
#include "aten/native/sort.h"
#include "runtime/kernel_forms.h"

namespace torch_opencl {
namespace {

using at::Tensor;

cl_long L(int64_t v) { return static_cast<cl_long>(v); }

enum Selection : cl_int { kKth = 0, kMedian = 1, kNanMedian = 2 };  // as in kernels_cl/order_stats.cl

// The dtypes selected natively: CPU's (all integer and floating types; half and bfloat16, whose support varies
// by op on CPU, take the fallback, which gives CPU's answer or error), and bool where the op takes it (mode).
void check_native_dtype(const Tensor& self, const char* op, bool allow_bool = false) {
  const auto type = self.scalar_type();
  const bool native = type == at::kFloat || type == at::kDouble || c10::isIntegralType(type, allow_bool);
  if (!native) throw_dtype_not_native(c10::str(op, " of ", type));
  check_device_supports(type, device_index(self), op);
}

// Rows sorted: contiguous (rows, n).
struct SortedRows {
  Tensor values, positions;
  int64_t rows, n;
};

// self's rows along dim (all of it where dim is nullopt, or for a 0-d self), contiguous.
Tensor rows_along(const Tensor& self, std::optional<int64_t> dim) {
  return (!dim.has_value() || self.dim() == 0 ? self.reshape({-1}) : self.movedim(*dim, -1)).contiguous();
}

SortedRows sort_along(const Tensor& self, std::optional<int64_t> dim) {
  const Tensor in = rows_along(self, dim);
  const int64_t n = in.size(-1), rows = in.numel() / n;
  SortedRows s{at::empty({rows, n}, in.options()), at::empty({rows, n}, in.options().dtype(at::kLong)), rows, n};
  sort_rows(in, rows, n, /*desc=*/false, s.values, s.positions);
  return s;
}

// values and indices (a reduction's outputs, any layout: their elements in row-major order are the rows') written by
// `launch` into contiguous tensors.
template <class Launch>
void write_rows(const Tensor& values, const Tensor& indices, const Launch& launch) {
  if (values.is_contiguous() && indices.is_contiguous()) return launch(values, indices);
  const Tensor v = at::empty(values.sizes(), values.options()), i = at::empty(indices.sizes(), indices.options());
  launch(v, i);
  values.copy_(v);
  indices.copy_(i);
}

// The element of rank k (kKth) or the median of each row of self along dim (all of it where dim is nullopt) into
// values and indices: quickselect per row in the CPU form (kernel_forms' quickselect_rows), else the rows sorted
// and one kernel picking from them.
void select_into(const Tensor& self, std::optional<int64_t> dim, int64_t k, Selection selection, const Tensor& values,
                 const Tensor& indices) {
  const int device = device_index(self);
  if (tocl::kernel_forms(device).quickselect_rows) {
    const Tensor in = rows_along(self, dim);
    const int64_t n = in.size(-1), rows = in.numel() / n;
    TORCH_CHECK(n < INT_MAX, "a dimension of ", n, " elements is too long for opencl's selection (at most ",
                INT_MAX - 1, ")");
    const Tensor keys = at::empty({rows * n}, in.options().dtype(compute_dtype(in.scalar_type())));
    const Tensor positions = at::empty({rows * n}, in.options().dtype(at::kInt));
    write_rows(values, indices, [&](const Tensor& v, const Tensor& i) {
      cl_kernel kernel = dtype_kernel(in, "order_stats.cl", "select_rows");
      tocl::set_args(kernel, buffer_arg(v), buffer_arg(i), buffer_arg(in), buffer_arg(keys), buffer_arg(positions),
                     L(rows), static_cast<cl_int>(n), L(k), static_cast<cl_int>(selection));
      tocl::enqueue_1d(device, current_stream_of(v), kernel, rows);
    });
    return;
  }
  const SortedRows s = sort_along(self, dim);
  write_rows(values, indices, [&](const Tensor& v, const Tensor& i) {
    cl_kernel kernel = dtype_kernel(s.values, "order_stats.cl", "select_sorted");
    tocl::set_args(kernel, buffer_arg(v), buffer_arg(i), buffer_arg(s.values), buffer_arg(s.positions), L(s.rows),
                   L(s.n), L(k), static_cast<cl_int>(selection));
    tocl::enqueue_1d(device, current_stream_of(v), kernel, s.rows);
  });
}

// ---- kthvalue: CPU's kthvalue_out_impl_cpu (its checks in their order) ----

std::tuple<Tensor&, Tensor&> kthvalue_out(const Tensor& self, int64_t k, int64_t dim_, bool keepdim, Tensor& values,
                                          Tensor& indices) {
  const int64_t dim = at::maybe_wrap_dim(dim_, self.dim(), /*wrap_scalar=*/true);
  at::native::zero_numel_check_dims(self, dim, "kthvalue()");
  TORCH_CHECK(k >= 1 && k <= (self.dim() > 0 ? self.size(dim) : 1),
              "kthvalue(): selected number k out of range for dimension ", dim);
  check_native_dtype(self, "kthvalue");
  check_same_device({self, values, indices});
  const c10::DeviceGuard guard(self.device());
  at::assert_no_overlap(self, values);
  at::native::_reduction_with_indices_allocate_or_resize_output(values, indices, self, dim_, keepdim);
  if (self.dim() == 0) {
    values.copy_(self);
    indices.zero_();
  } else if (self.numel() > 0) {
    select_into(self, dim, k - 1, kKth, values, indices);
  }
  if (!keepdim) {
    values.squeeze_(dim);
    indices.squeeze_(dim);
  }
  return {values, indices};
}

// ---- median and nanmedian: CPU's median_with_indices_impl and median_impl ----

std::tuple<Tensor&, Tensor&> median_with_indices(const Tensor& self, int64_t dim, bool keepdim, Tensor& values,
                                                 Tensor& indices, bool ignore_nan) {
  const char* op = ignore_nan ? "nanmedian" : "median";
  dim = at::maybe_wrap_dim(dim, self.dim());
  at::native::zero_numel_check_dims(self, dim, "median()");
  check_same_device({self, values, indices});
  TORCH_CHECK(indices.scalar_type() == at::kLong, "Expected tensor for argument #1 'indices' to have scalar type Long; but got ",
              indices.scalar_type(), " instead (while checking arguments for median)");
  TORCH_CHECK(values.scalar_type() == self.scalar_type(), "Expected tensor for argument #0 'values' to have the same type as tensor for argument #2 'self'; but type ",
              values.scalar_type(), " does not equal ", self.scalar_type(), " (while checking arguments for median)");
  check_native_dtype(self, op);
  const c10::DeviceGuard guard(self.device());
  std::vector<int64_t> out_shape = self.sizes().vec();
  if (self.dim() > 0) {
    if (keepdim)
      out_shape[dim] = 1;
    else
      out_shape.erase(out_shape.begin() + dim);
  }
  at::native::resize_output(values, out_shape);
  at::native::resize_output(indices, out_shape);
  if (values.numel() == 0) return {values, indices};
  select_into(self, dim, 0, ignore_nan ? kNanMedian : kMedian, values, indices);
  return {values, indices};
}

std::tuple<Tensor&, Tensor&> median_dim_out(const Tensor& self, int64_t dim, bool keepdim, Tensor& values,
                                            Tensor& indices) {
  return median_with_indices(self, dim, keepdim, values, indices, /*ignore_nan=*/false);
}

std::tuple<Tensor&, Tensor&> nanmedian_dim_out(const Tensor& self, int64_t dim, bool keepdim, Tensor& values,
                                               Tensor& indices) {
  return median_with_indices(self, dim, keepdim, values, indices, /*ignore_nan=*/true);
}

Tensor median_all(const Tensor& self, bool ignore_nan) {
  check_native_dtype(self, ignore_nan ? "nanmedian" : "median");
  const c10::DeviceGuard guard(self.device());
  // CPU's median of nothing: NaN, converted to self's dtype (the smallest int32 or int64, 0 for smaller integers).
  if (self.numel() == 0) return at::full({}, NAN, self.options().dtype(at::kFloat)).to(self.scalar_type());
  Tensor value = at::empty({}, self.options());
  select_into(self, std::nullopt, 0, ignore_nan ? kNanMedian : kMedian, value,
              at::empty({}, self.options().dtype(at::kLong)));
  return value;
}

Tensor median(const Tensor& self) { return median_all(self, /*ignore_nan=*/false); }
Tensor nanmedian(const Tensor& self) { return median_all(self, /*ignore_nan=*/true); }

// ---- mode: CPU's mode (its values and indices allocated, as mode_out does) ----

std::tuple<Tensor, Tensor> mode(const Tensor& self, int64_t dim, bool keepdim) {
  check_native_dtype(self, "mode", /*allow_bool=*/true);
  const c10::DeviceGuard guard(self.device());
  dim = at::maybe_wrap_dim(dim, self.dim());
  Tensor values = at::empty({0}, self.options());
  Tensor indices = at::empty({0}, self.options().dtype(at::kLong));
  if (self.numel() == 1 && self.dim() == 0) {
    values.resize_({});
    values.fill_(self);
    indices.resize_({}).fill_(0);
    return {values, indices};
  }
  at::native::zero_numel_check_dims(self, dim, "mode()");
  at::native::_reduction_with_indices_allocate_or_resize_output(values, indices, self, dim, keepdim);
  if (self.numel() > 0) {
    const SortedRows s = sort_along(self, dim);
    write_rows(values, indices, [&](const Tensor& v, const Tensor& i) {
      cl_kernel kernel = dtype_kernel(s.values, "order_stats.cl", "mode_rows");
      tocl::set_args(kernel, buffer_arg(v), buffer_arg(i), buffer_arg(s.values), buffer_arg(s.positions), L(s.n));
      const size_t group = row_group(device_index(v));
      tocl::enqueue_1d(device_index(v), current_stream_of(v), kernel, static_cast<size_t>(s.rows) * group, group);
    });
  }
  if (!keepdim && self.dim() > 0) {
    values.squeeze_(dim);
    indices.squeeze_(dim);
  }
  return {values, indices};
}

// mode.values: ATen's composite out= form admits CPU, CUDA and XPU only; its checks, then mode above.
std::tuple<Tensor&, Tensor&> mode_out(const Tensor& self, int64_t dim, bool keepdim, Tensor& values, Tensor& indices) {
  check_out_device(values, self.device(), "mode");
  check_out_device(indices, self.device(), "mode");
  TORCH_CHECK(self.scalar_type() == values.scalar_type(), "expected scalar type '", self.scalar_type(),
              "' but got '", values.scalar_type(), "' for values output");
  TORCH_CHECK(indices.scalar_type() == at::kLong, "expected scalar type '", at::kLong, "' but got '",
              indices.scalar_type(), "' for indices output");
  auto [v, i] = at::mode(self, dim, keepdim);
  if (self.dim() == 0) {  // as CPU: a scalar's mode takes the out= tensors to 0-dim without a resize warning
    values.resize_({});
    indices.resize_({});
  }
  at::native::resize_output(values, v.sizes());
  at::native::resize_output(indices, i.sizes());
  values.copy_(v);
  indices.copy_(i);
  return {values, indices};
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("kthvalue.values", TORCH_FN(kthvalue_out));
  m.impl("median", TORCH_FN(median));
  m.impl("median.dim_values", TORCH_FN(median_dim_out));
  m.impl("nanmedian", TORCH_FN(nanmedian));
  m.impl("nanmedian.dim_values", TORCH_FN(nanmedian_dim_out));
  m.impl("mode", TORCH_FN(mode));
  m.impl("mode.values", TORCH_FN(mode_out));
}

}  // namespace torch_opencl
