// index_add, index_copy, index_fill_, index_reduce, take and put_: indexing along one dim (or the flattened
// tensor) expressed as index_put_ over the native advanced-indexing kernels (index_reduce as scatter_reduce). ATen's structured
// meta functions check arguments and shapes where the operator has them; indices are
// bounds-checked on the device with CPU's messages (index_add and index_copy refuse negative
// indices, as CPU does; the others wrap them).
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/index_add_meta.h>
#include <ATen/ops/index_copy_meta.h>
#include <ATen/ops/index_reduce_meta.h>
#include <torch/library.h>

#include <functional>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/native/index_bounds.h"
#include "aten/native/segment_sum.h"
#include "aten/kernel_support/structured.h"

namespace torch_opencl {
namespace {

using at::Tensor;

// The index list selecting `index` along `dim` (all of every other dim), for index_put_.
c10::List<std::optional<Tensor>> along_dim(int64_t dim, const Tensor& index) {
  c10::List<std::optional<Tensor>> indices;
  for (int64_t d = 0; d < dim; ++d) indices.push_back(std::nullopt);
  indices.push_back(index.reshape({-1}));
  return indices;
}

// 0-d tensors take part as 1-element vectors, as CPU treats them.
Tensor at_least_1d(const Tensor& t) { return t.dim() == 0 ? t.unsqueeze(0) : t; }

// Calls fail(value) with the first index outside [lo, hi). Waits for the device.
void check_bounds(const Tensor& index, int64_t lo, int64_t hi, const std::function<void(int64_t)>& fail) {
  if (index.numel() == 0) return;
  if (const auto bad = first_out_of_range(index.reshape({-1}), lo, hi)) fail(bad->value);
}

// Index tensors may come from the CPU; the kernels read them on the device.
Tensor on_device_of(const Tensor& index, const Tensor& self) {
  return index.device() == self.device() ? index : index.to(self.device());
}

// out (already self's copy, or self) += alpha * source at `index` along dim.
void index_add_into(const Tensor& out, int64_t dim, const Tensor& index_in, const Tensor& source,
                    const c10::Scalar& alpha) {
  if (index_in.numel() == 0) return;
  const Tensor index = on_device_of(index_in, out);
  const Tensor target = at_least_1d(out);
  dim = at::maybe_wrap_dim(dim, target.dim());
  check_bounds(index, 0, target.size(dim),
               [](int64_t) { TORCH_CHECK_INDEX(false, "index out of range in self"); });
  Tensor values = at_least_1d(source);
  if (!(alpha.isIntegral(true) && alpha.to<int64_t>() == 1) && !(alpha.isFloatingPoint() && alpha.to<double>() == 1))
    values = values.mul(alpha);
  values = values.to(target.scalar_type());
  // Segment sums (aten/native/segment_sum.h), deterministic in both kernel classes, wherever they serve the
  // operands; index_put_'s atomics (which add in any order) otherwise.
  if (segment_sums_serve(target, values, dim)) {
    segment_sums_into(target, dim, index, values, /*accumulate=*/true);
    return;
  }
  target.index_put_(along_dim(dim, index), values, /*accumulate=*/true);
}

void index_copy_into(const Tensor& out, int64_t dim, const Tensor& index_in, const Tensor& source) {
  if (index_in.numel() == 0) return;
  const Tensor index = on_device_of(index_in, out);
  const Tensor target = at_least_1d(out);
  dim = at::maybe_wrap_dim(dim, target.dim());
  const int64_t size = target.size(dim);
  check_bounds(index, 0, size, [&](int64_t bad) {
    TORCH_CHECK_INDEX(false, "index_copy_(): index ", bad, " is out of bounds for dimension ", dim, " with size ",
                      size);
  });
  target.index_put_(along_dim(dim, index), at_least_1d(source), /*accumulate=*/false);
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const c10::Scalar& alpha) {
  StructuredFunctional<at::meta::structured_index_add> op;
  const auto pre = op.meta(self, dim, index, source, alpha);
  Tensor out = op.take();
  out.copy_(self);
  index_add_into(out, pre.dim, index, source, alpha);
  return out;
}

Tensor& index_add_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                      const c10::Scalar& alpha, Tensor& out) {
  StructuredOut<at::meta::structured_index_add> op(out, /*in_place=*/out.is_same(self));
  const auto pre = op.meta(self, dim, index, source, alpha);
  op.finish();
  if (!out.is_same(self)) out.copy_(self);
  index_add_into(out, pre.dim, index, source, alpha);
  return out;
}

Tensor& index_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const c10::Scalar& alpha) {
  return index_add_out(self, dim, index, source, alpha, self);
}

Tensor index_copy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  StructuredFunctional<at::meta::structured_index_copy> op;
  const auto pre = op.meta(self, dim, index, source);
  Tensor out = op.take();
  out.copy_(self);
  index_copy_into(out, pre.dim, index, source);
  return out;
}

Tensor& index_copy_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, Tensor& out) {
  StructuredOut<at::meta::structured_index_copy> op(out, /*in_place=*/out.is_same(self));
  const auto pre = op.meta(self, dim, index, source);
  op.finish();
  if (!out.is_same(self)) out.copy_(self);
  index_copy_into(out, pre.dim, index, source);
  return out;
}

Tensor& index_copy_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  return index_copy_out(self, dim, index, source, self);
}

// CPU's index_fill_ checks, then value written at `index` along dim (negative indices wrap).
Tensor& index_fill_impl(Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong, "index_fill_(): Expected dtype int64 for index.");
  at::assert_no_overlap(self, index);
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN("Use of index_fill_ on expanded tensors is deprecated. Please clone() the tensor before performing "
               "this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar");
  }
  TORCH_CHECK(self.is_complex() || !value.is_complex(),
              "index_fill_(): Converting complex Scalar to non-complex type is not supported");
  const Tensor target = at_least_1d(self);
  dim = at::maybe_wrap_dim(dim, target.dim());
  TORCH_CHECK(index.dim() <= 1, "Index has to be a vector/scalar");
  // CPU converts the value with a check (300 into uint8 is an error, not 44), before looking at the index.
  const c10::Scalar fill_value = value.item();
  check_scalar_fits(fill_value, self.scalar_type());
  if (index.numel() == 0) return self;
  const int64_t size = target.size(dim);
  check_bounds(on_device_of(index, self), -size, size, [&](int64_t bad) {
    TORCH_CHECK_INDEX(false, "index ", bad, " is out of bounds for dimension ", dim, " with size ", size);
  });
  const Tensor fill = at::scalar_tensor(fill_value, self.options());
  target.index_put_(along_dim(dim, on_device_of(index, self)), fill, /*accumulate=*/false);
  return self;
}

Tensor& index_fill_scalar_(Tensor& self, int64_t dim, const Tensor& index, const c10::Scalar& value) {
  return index_fill_impl(self, dim, index, at::scalar_tensor(value, self.options().dtype(value.type())));
}

Tensor& index_fill_tensor_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  return index_fill_impl(self, dim, index, value);
}

// take and put_ index the flattened tensor; negative indices wrap, as on CPU.
void check_flat_bounds(const Tensor& index, int64_t numel) {
  check_bounds(index, -numel, numel, [&](int64_t bad) {
    TORCH_CHECK_INDEX(false, "out of range: tried to access index ", bad, " on a tensor of ", numel, " elements.");
  });
}

Tensor& take_out(const Tensor& self, const Tensor& index, Tensor& out) {
  TORCH_CHECK(index.scalar_type() == at::kLong, "take(): Expected a long tensor for index, but got ",
              index.scalar_type());
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "take(): self and out expected to have the same dtype, but got self.dtype = ",
              self.scalar_type(), " and out.dtype = ", out.scalar_type());
  TORCH_CHECK(self.device() == out.device() && self.device() == index.device(),
              "take(): self, index and out expected to be in the same device, but got self.device = ", self.device(),
              ", index.device = ", index.device(), ", and out.device = ", out.device());
  TORCH_CHECK_INDEX(!(self.numel() == 0 && index.numel() != 0), "take(): tried to take from an empty tensor");
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, index);
  at::assert_no_overlap(out, self);
  at::native::resize_output(out, index.sizes());
  if (index.numel() == 0) return out;
  check_flat_bounds(index, self.numel());
  out.copy_(at::index(self.reshape({-1}), {std::optional<Tensor>(index.reshape({-1}))}).view(index.sizes()));
  return out;
}

Tensor take(const Tensor& self, const Tensor& index) {
  Tensor out = at::empty(index.sizes(), self.options());
  return take_out(self, index, out);
}

Tensor& put_(Tensor& self, const Tensor& index, const Tensor& source, bool accumulate) {
  TORCH_CHECK_INDEX(index.scalar_type() == at::kLong, "put_(): Expected a long tensor for index, but got ",
                    index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "put_(): self and source expected to have the same dtype, but got self.dtype = ",
              self.scalar_type(), " and source.dtype = ", source.scalar_type());
  TORCH_CHECK(self.device() == source.device() && self.device() == index.device(),
              "put_(): self, index and source expected to be in the same device, but got self.device = ",
              self.device(), ", index.device = ", index.device(), ", and source.device = ", source.device());
  TORCH_CHECK_INDEX(index.numel() == source.numel(), "put_(): Expected source and index to have the same number of elements, but got source.numel() = ",
                    source.numel(), ", index.numel() = ", index.numel());
  TORCH_CHECK_INDEX(!(self.numel() == 0 && index.numel() != 0), "put_(): Tried to put elements into an empty tensor");
  at::assert_no_internal_overlap(self);
  at::assert_no_overlap(self, index);
  at::assert_no_overlap(self, source);
  if (index.numel() == 0) return self;
  check_flat_bounds(index, self.numel());
  const c10::List<std::optional<Tensor>> flat_index({std::optional<Tensor>(index.reshape({-1}))});
  if (self.is_contiguous()) {
    self.view({-1}).index_put_(flat_index, source.reshape({-1}), accumulate);
  } else {
    Tensor flat = self.contiguous().view({-1});
    flat.index_put_(flat_index, source.reshape({-1}), accumulate);
    self.copy_(flat.view(self.sizes()));
  }
  return self;
}

// ---- index_reduce: scatter_reduce_ with the index spread over source's shape (source slice n goes to slice
// index[n]), which reduces (prod, mean, amax, amin, include_self or not) as CPU's index_reduce does ----

void index_reduce_into(const Tensor& out, int64_t dim, const Tensor& index_in, const Tensor& source,
                       c10::string_view reduce, bool include_self) {
  if (index_in.numel() == 0) return;
  const Tensor index = on_device_of(index_in, out);
  const Tensor target = at_least_1d(out), values = at_least_1d(source);
  dim = at::maybe_wrap_dim(dim, target.dim());
  check_bounds(index, 0, target.size(dim), [](int64_t) { TORCH_CHECK_INDEX(false, "index out of range in self"); });
  std::vector<int64_t> along(values.dim(), 1);
  along[dim] = -1;
  target.scatter_reduce_(dim, index.to(at::kLong).reshape(along).expand(values.sizes()), values, reduce,
                         include_self);
}

Tensor& index_reduce_out(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                         c10::string_view reduce, bool include_self, Tensor& out) {
  StructuredOut<at::meta::structured_index_reduce> op(out, /*in_place=*/out.is_same(self));
  const auto pre = op.meta(self, dim, index, source, reduce, include_self);
  op.finish();
  if (!out.is_same(self)) out.copy_(self);
  index_reduce_into(out, pre.dim, index, source, reduce, include_self);
  return out;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("index_reduce.out", TORCH_FN(index_reduce_out));
  m.impl("index_add", TORCH_FN(index_add));
  m.impl("index_add_", TORCH_FN(index_add_));
  m.impl("index_add.out", TORCH_FN(index_add_out));
  m.impl("index_copy", TORCH_FN(index_copy));
  m.impl("index_copy_", TORCH_FN(index_copy_));
  m.impl("index_copy.out", TORCH_FN(index_copy_out));
  m.impl("index_fill_.int_Scalar", TORCH_FN(index_fill_scalar_));
  m.impl("index_fill_.int_Tensor", TORCH_FN(index_fill_tensor_));
  m.impl("take", TORCH_FN(take));
  m.impl("take.out", TORCH_FN(take_out));
  m.impl("put_", TORCH_FN(put_));
}

}  // namespace torch_opencl
