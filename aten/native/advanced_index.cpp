// Advanced indexing: index.Tensor (x[idx], x[:, idx], x[mask], several broadcast index tensors)
// and _index_put_impl_ (index_put_, x[idx] = v, accumulate or not). The index tensors are prepared
// as ATen's make_info does (masks become nonzero() coordinates, all are broadcast together, and
// when they are not adjacent the indexed dims move to the front), stacked into one int64 buffer,
// bounds-checked on the device, and read by kernels_cl/scatter_gather.cl over strided operands.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/IndexingUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorAdvancedIndexingUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <sstream>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/native/index_bounds.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/native/scatter_program.h"
#include "aten/native/segment_sum.h"
#include "runtime/kernel_forms.h"

namespace torch_opencl {
namespace {

using at::Tensor;
using IndexList = c10::List<std::optional<Tensor>>;

// What make_info computes, with the indexed dims described for the kernels.
struct IndexPlan {
  Tensor self;                     // self, its indexed dims moved to the front when they were apart
  std::vector<int64_t> shape;      // the result's shape: dims before, the broadcast index shape, dims after
  std::vector<int64_t> restrided;  // self's strides over `shape`: 0 across the index shape
  std::vector<int64_t> index_strides;  // the stacked indices' strides over `shape`
  Tensor stacked;                  // (count, index numel) int64, contiguous
  Indexed indexed{};
  int64_t first_indexed = 0;       // self's first indexed dim
};

std::string shapes_of(const std::vector<Tensor>& tensors) {
  std::ostringstream os;
  bool first = true;
  for (const auto& t : tensors) {
    if (!t.defined()) continue;
    if (!first) os << ", ";
    os << t.sizes();
    first = false;
  }
  return os.str();
}

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return n;
}

IndexPlan plan_index(const Tensor& self_in, const IndexList& indices_in) {
  TORCH_CHECK_INDEX(indices_in.size() <= static_cast<size_t>(self_in.dim()), "too many indices for tensor of dimension ",
                    self_in.dim(), " (got ", indices_in.size(), ")");
  for (const std::optional<Tensor>& index : indices_in)
    if (index.has_value() && index->defined())
      TORCH_CHECK(index->is_cpu() || index->device() == self_in.device(), "indices should be either on ", at::kCPU,
                  " or on the same device as the indexed tensor (", self_in.device(), ")");
  at::native::checkIndexTensorTypes(indices_in, /*allow_int=*/true);
  auto indices = at::native::expandTensors(self_in, indices_in, /*ensure_same_device=*/true);
  try {
    indices = at::expand_outplace(indices);
  } catch (std::exception&) {
    TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together with shapes ",
                      shapes_of(indices));
  }
  while (indices.size() < static_cast<size_t>(self_in.dim())) indices.emplace_back();
  IndexPlan plan;
  plan.self = self_in;
  if (!at::native::hasContiguousSubspace(indices)) std::tie(plan.self, indices) = at::native::transposeToFront(self_in, indices);
  const Tensor& self = plan.self;

  std::vector<Tensor> defined;
  std::vector<int64_t> before, after, index_shape;
  int64_t dims_before = 0;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (indices[d].defined()) {
      defined.push_back(indices[d].to(at::kLong));
      index_shape = indices[d].sizes().vec();
      TORCH_CHECK(defined.size() <= static_cast<size_t>(kMaxIndices), "index: on opencl, at most ", kMaxIndices,
                  " index tensors are supported, got more");
      plan.indexed.sizes[defined.size() - 1] = self.size(d);
      plan.indexed.strides[defined.size() - 1] = self.stride(d);
    } else if (defined.empty()) {
      ++dims_before;
    }
  }
  const auto count = static_cast<int64_t>(defined.size());
  int64_t index_numel = 1;
  for (auto s : index_shape) index_numel *= s;
  for (int64_t k = 0; k < count; ++k)
    if (plan.indexed.sizes[k] == 0 && index_numel != 0)
      TORCH_CHECK_INDEX(false, "index is out of bounds for dimension with size 0");

  // The result's shape, self's strides over it (0 across the index shape) and the stacked indices'.
  const int64_t dims_after = self.dim() - dims_before - count;
  plan.first_indexed = dims_before;
  std::vector<int64_t> contiguous(index_shape.size());
  for (int64_t d = static_cast<int64_t>(index_shape.size()) - 1, s = 1; d >= 0; --d) {
    contiguous[d] = s;
    s *= index_shape[d];
  }
  for (int64_t d = 0; d < dims_before; ++d) {
    plan.shape.push_back(self.size(d));
    plan.restrided.push_back(self.stride(d));
    plan.index_strides.push_back(0);
  }
  for (size_t d = 0; d < index_shape.size(); ++d) {
    plan.shape.push_back(index_shape[d]);
    plan.restrided.push_back(0);
    plan.index_strides.push_back(contiguous[d]);
  }
  for (int64_t d = self.dim() - dims_after; d < self.dim(); ++d) {
    plan.shape.push_back(self.size(d));
    plan.restrided.push_back(self.stride(d));
    plan.index_strides.push_back(0);
  }
  plan.indexed.count = count;
  plan.indexed.row_stride = index_numel;
  if (count > 0 && index_numel > 0) {
    plan.stacked = count == 1 ? defined[0].contiguous() : at::stack(defined);
    // CPU checks each index as its kernel reads it: where the result has no elements (another of
    // self's dims is 0) no index is read, and none is refused.
    const bool reads_none = numel_of(plan.shape) == 0;
    for (int64_t k = 0; k < count && !reads_none; ++k) {
      const Tensor row = count == 1 ? plan.stacked : plan.stacked[k];
      const auto bad = first_out_of_range(row, -plan.indexed.sizes[k], plan.indexed.sizes[k]);
      TORCH_CHECK_INDEX(!bad.has_value(), "index ", bad ? bad->value : 0, " is out of bounds for dimension ", k,
                        " with size ", plan.indexed.sizes[k]);
    }
  }
  return plan;
}

// out (the result's shape) = self[indices].
void index_into(const IndexPlan& plan, const Tensor& out) {
  const int64_t total = numel_of(plan.shape);
  if (total == 0) return;
  const Geometry g = make_geometry(plan.shape, {out.strides().vec(), plan.restrided, plan.index_strides}, "index");
  cl_kernel k = scatter_gather_kernel(plan.self, "index_gather", at::kLong);
  const Tensor& indices = plan.stacked.defined() ? plan.stacked : out;  // unread when nothing is indexed
  tocl::set_args(k, buffer_arg(out), buffer_arg(plan.self), buffer_arg(indices), static_cast<cl_long>(total), g,
                 plan.indexed);
  tocl::enqueue_1d(device_index(out), current_stream_of(out), k, work_items(total, device_index(out)));
}

Tensor index(const Tensor& self, const IndexList& indices) {
  const c10::DeviceGuard guard(self.device());
  const IndexPlan plan = plan_index(self, indices);
  auto out = at::empty(plan.shape, self.options());
  index_into(plan, out);
  return out;
}

Tensor& index_out(const Tensor& self, const IndexList& indices, Tensor& out) {
  const c10::DeviceGuard guard(self.device());
  check_same_device({self, out});
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "index_out: self (", self.scalar_type(), ") and result (",
              out.scalar_type(), ") must have the same scalar type");
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  for (const std::optional<Tensor>& index : indices)
    if (index.has_value() && index->defined()) at::assert_no_overlap(out, *index);
  const IndexPlan plan = plan_index(self, indices);
  at::native::resize_output(out, plan.shape);
  index_into(plan, out);
  return out;
}

// index_put_(accumulate=True) with one index tensor as sorted segmented sums where the kernel forms
// want them, and wherever the order of the additions must not vary (the atomics add in any order).
// False when it does not serve (then the atomics do).
bool index_put_by_segments(const IndexPlan& plan, const Tensor& broadcast) {
  if (!tocl::kernel_forms(device_index(plan.self)).sorted_segment_sums && !at::globalContext().deterministicAlgorithms())
    return false;
  const int64_t dim = plan.first_indexed;
  const int64_t index_dims = static_cast<int64_t>(plan.shape.size()) - plan.self.dim() + 1;
  std::vector<int64_t> source_shape(plan.shape.begin(), plan.shape.begin() + dim);
  source_shape.push_back(plan.indexed.row_stride);  // the index's elements
  source_shape.insert(source_shape.end(), plan.shape.begin() + dim + index_dims, plan.shape.end());
  const Tensor source = broadcast.reshape(source_shape);
  if (!segment_sums_serve(plan.self, source, dim)) return false;
  // Negative indices count from the end (they were bounds-checked).
  const Tensor index = plan.stacked.reshape({-1}).remainder(plan.self.size(dim));
  segment_sums_into(plan.self, dim, index, source, /*accumulate=*/true);
  return true;
}

Tensor& index_put_impl(Tensor& self, const IndexList& indices, const Tensor& value, bool accumulate, bool unsafe) {
  (void)unsafe;
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK_INDEX(indices.size() <= static_cast<size_t>(self.dim()), "too many indices for tensor of dimension ",
                    self.dim(), " (got ", indices.size(), ")");
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes)
    TORCH_WARN("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before performing this ",
               "operation. This also applies to advanced indexing e.g. tensor[indices] = tensor");
  if (!accumulate) {
    auto [use_fill, mask] = at::native::canDispatchToMaskedFill(self, indices, value);
    if (use_fill) return self.masked_fill_(mask, value.item());
  }
  Tensor values = value;
  if (value.device() != self.device() && value.numel() == 1 && value.dim() == 0) values = value.to(self.device());
  check_same_device({self, values});
  at::assert_no_overlap(self, value);
  for (const std::optional<Tensor>& index : indices)
    if (index.has_value() && index->defined()) at::assert_no_overlap(self, *index);
  const IndexPlan plan = plan_index(self, indices);
  TORCH_CHECK(at::is_expandable_to(values.sizes(), plan.shape), "shape mismatch: value tensor of shape ",
              values.sizes(), " cannot be broadcast to indexing result of shape ", c10::IntArrayRef(plan.shape));
  TORCH_CHECK(values.scalar_type() == self.scalar_type(),
              "Index put requires the source and destination dtypes match, got ", self.scalar_type(),
              " for the destination and ", values.scalar_type(), " for the source.");
  const int64_t total = numel_of(plan.shape);
  if (total == 0) return self;
  const Tensor broadcast = values.expand(plan.shape);
  if (accumulate && plan.indexed.count == 1 && index_put_by_segments(plan, broadcast)) return self;
  const Geometry g =
      make_geometry(plan.shape, {plan.restrided, broadcast.strides().vec(), plan.index_strides}, "index_put_");
  cl_kernel k = scatter_gather_kernel(plan.self, "index_put", at::kLong);
  const Tensor& stacked = plan.stacked.defined() ? plan.stacked : self;  // unread when nothing is indexed
  tocl::set_args(k, buffer_arg(plan.self), buffer_arg(broadcast), buffer_arg(stacked), static_cast<cl_long>(total), g,
                 plan.indexed);
  enqueue_update(self, k, /*first_update_arg=*/9, accumulate ? Update::Add : Update::Assign, total);
  return self;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("index.Tensor", TORCH_FN(index));
  m.impl("index.Tensor_out", TORCH_FN(index_out));
  m.impl("_index_put_impl_", TORCH_FN(index_put_impl));
}

}  // namespace torch_opencl
