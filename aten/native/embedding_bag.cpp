// embedding_bag: _embedding_bag and _embedding_bag_forward_only (F.embedding_bag's forward, modes sum, mean and
// max, per_sample_weights, include_last_offset, padding_idx), _embedding_bag_dense_backward and
// _embedding_bag_per_sample_weights_backward. The forward is kernels_cl/embedding_bag.cl, a work-item per
// (bag, column); its auxiliary outputs (offset2bag, bag_size, max_indices) hold what CPU's hold, which the
// backward reads. The backwards compose native ops: the weight's gradient of sum and mean is the project's
// deterministic segment sums (segment_sum.h, as embedding's backward) of the bags' gradient rows, that of max
// a scatter_add of each bag's gradient to its chosen rows.
#include <ATen/ATen.h>
#include <ATen/TensorUtils.h>
#include <ATen/ops/_embedding_bag_backward_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <tuple>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/native/index_bounds.h"
#include "aten/native/segment_sum.h"
#include "runtime/deferred_errors.h"

namespace torch_opencl {
namespace {

using at::Tensor;

enum Mode : int64_t { kSum = 0, kMean = 1, kMax = 2 };

struct EmbeddingBag {  // as in kernels_cl/embedding_bag.cl
  cl_long n, bags, offsets_len, D, num_weights, padding_idx;
  cl_long weight_stride0, weight_stride1;
  cl_int mode, has_weights;
};

// CPU's argument checks (EmbeddingBag.cpp: check_arguments, make_offset2bag), with its messages. The offsets'
// first and last values are read back (one small wait) for its two checks of them.
void check_arguments(const Tensor& weight, const Tensor& indices, const Tensor& offsets, int64_t mode,
                     const std::optional<Tensor>& per_sample_weights, bool include_last_offset) {
  at::TensorArg weight_arg(weight, "weight", 1), indices_arg(indices, "indices", 1), offsets_arg(offsets, "offsets", 1);
  at::checkScalarTypes("embedding_bag", indices_arg, {at::kLong, at::kInt});
  at::checkScalarTypes("embedding_bag", offsets_arg, {at::kLong, at::kInt});
  at::checkScalarTypes("embedding_bag", weight_arg, {at::kHalf, at::kBFloat16, at::kFloat, at::kDouble});
  TORCH_CHECK(mode >= kSum && mode <= kMax, "`mode` must be sum, mean, or max.");
  TORCH_CHECK(weight.dim() == 2, "embedding_bag: weight has to be a 2-D tensor, but got a ", weight.dim(),
              "-D tensor");
  TORCH_CHECK(offsets.dim() == 1, "offsets has to be a 1D Tensor, but got a ", offsets.dim(), "-D tensor");
  if (include_last_offset)
    TORCH_CHECK(offsets.size(0) >= 1, "include_last_offset: number of offset should be at least 1");
  if (per_sample_weights.has_value() && per_sample_weights->defined()) {
    TORCH_CHECK(mode == kSum, "embedding_bag: per_sample_weights only supported with mode='sum'");
    at::TensorArg psw_arg(*per_sample_weights, "per_sample_weights", 1);
    at::checkSameType("embedding_bag", weight_arg, psw_arg);
    TORCH_CHECK(per_sample_weights->dim() == 1);
    TORCH_CHECK(per_sample_weights->numel() == indices.numel());
  }
  check_same_device({weight, indices, offsets});
  if (per_sample_weights.has_value()) check_same_device({weight, *per_sample_weights});
  if (offsets.numel() > 0) {
    const auto ends = at::stack({offsets[0], offsets[-1]}).to(at::kLong).cpu();
    const int64_t first = ends[0].item<int64_t>(), last = ends[1].item<int64_t>();
    TORCH_CHECK(first == 0, "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from ",
                "position 0. However, got ", first);
    TORCH_CHECK(last <= indices.numel(), "offsets[-1] can not be greater than input's length ", indices.numel(),
                " but got offsets[-1] of ", last);
  }
}

// Indices out of [0, num_weights) (but padding_idx) raise CPU's error: at the call, or, where the device defers
// index checks, at the next wait (the kernel clamps them meanwhile). CPU words it by its path: its fast path
// (sum or mean of float, half or bfloat16 rows, no padding_idx) names the index's position.
void check_indices(const Tensor& indices, int64_t num_weights, int64_t padding_idx, int64_t mode,
                   at::ScalarType type) {
  if (indices.numel() == 0) return;
  const std::optional<int64_t> skip = padding_idx >= 0 ? std::optional<int64_t>(padding_idx) : std::nullopt;
  if (index_checks_deferred(indices)) {
    static const int site = tocl::error_site("embedding_bag", [](int64_t v, int64_t) {
      return "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be " + std::to_string(v);
    });
    record_out_of_range(indices, 0, num_weights, skip, site);
    return;
  }
  const auto bad = first_out_of_range(indices, 0, num_weights, skip);
  if (!bad.has_value()) return;
  const bool fast_path = mode != kMax && padding_idx < 0 && type != at::kDouble;
  TORCH_CHECK(!fast_path, "Index ", bad->position, " of input takes value ", bad->value,
              " which is not in the valid range [0, ", num_weights, ")");
  TORCH_CHECK(false, "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be ", bad->value);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> embedding_bag_forward(
    const Tensor& weight, const Tensor& indices_in, const Tensor& offsets_in, bool /*scale_grad_by_freq*/,
    int64_t mode, bool /*sparse*/, const std::optional<Tensor>& per_sample_weights, bool include_last_offset,
    int64_t padding_idx) {
  check_arguments(weight, indices_in, offsets_in, mode, per_sample_weights, include_last_offset);
  const c10::DeviceGuard guard(weight.device());
  // One index dtype for both, as CPU's promoteIndicesAndOffsets.
  const auto index_type = indices_in.scalar_type() == at::kLong || offsets_in.scalar_type() == at::kLong
                              ? at::kLong : at::kInt;
  const auto indices = indices_in.reshape({-1}).to(index_type).contiguous();
  const auto offsets = offsets_in.to(index_type).contiguous();
  const bool has_weights = per_sample_weights.has_value() && per_sample_weights->defined();
  const auto psw = has_weights ? per_sample_weights->contiguous() : Tensor();
  const int64_t num_weights = weight.size(0), D = weight.size(1), n = indices.numel();
  const int64_t bags = include_last_offset ? offsets.size(0) - 1 : offsets.size(0);
  check_indices(indices, num_weights, padding_idx, mode, weight.scalar_type());

  auto long_options = indices.options().dtype(at::kLong);
  auto output = at::empty({bags, D}, weight.options());
  auto offset2bag = at::empty({n}, long_options);
  auto bag_size = at::empty({bags}, long_options);
  auto max_indices = at::empty(mode == kMax ? at::IntArrayRef({bags, D}) : at::IntArrayRef({bags}), long_options);
  const EmbeddingBag p{n,  bags, offsets.size(0), D, num_weights, padding_idx, weight.stride(0), weight.stride(1),
                       static_cast<cl_int>(mode), static_cast<cl_int>(has_weights)};
  const auto device = device_index(weight);
  if (n > 0 && bags > 0) {
    cl_kernel k = dtype_kernel(weight, "embedding_bag.cl", "embedding_bag_offset2bag", index_type);
    tocl::set_args(k, buffer_arg(offset2bag), buffer_arg(offsets), p);
    tocl::enqueue_1d(device, current_stream_of(weight), k, n);
  } else if (n > 0) {
    offset2bag.zero_();
  }
  if (bags > 0 && D > 0) {
    cl_kernel k = dtype_kernel(weight, "embedding_bag.cl", "embedding_bag_forward", index_type);
    tocl::set_args(k, buffer_arg(output), buffer_arg(max_indices), buffer_arg(bag_size), buffer_arg(weight),
                   buffer_arg(indices), buffer_arg(offsets), buffer_arg(has_weights ? psw : weight), p);
    tocl::enqueue_1d(device, current_stream_of(weight), k, bags * D);
  } else {
    bag_size.zero_();  // D == 0: no work-item to count the bags' rows
  }
  if (mode == kSum) max_indices.zero_();
  if (mode == kMean) max_indices.copy_(bag_size);  // CPU's mean returns the sizes there too
  return {output, offset2bag, bag_size, max_indices};
}

Tensor embedding_bag_dense_backward(const Tensor& grad, const Tensor& indices_in, const Tensor& offset2bag,
                                    const Tensor& bag_size, const Tensor& maximum_indices, int64_t num_weights,
                                    bool scale_grad_by_freq, int64_t mode,
                                    const std::optional<Tensor>& per_sample_weights, int64_t padding_idx) {
  check_same_device({grad, indices_in, offset2bag, bag_size, maximum_indices});
  const c10::DeviceGuard guard(grad.device());
  TORCH_CHECK(grad.dim() == 2, "embedding_bag_backward: expected a 2-D grad, got ", grad.sizes());
  const int64_t D = grad.size(1);
  auto grad_weight = at::zeros({num_weights, D}, grad.options());
  const auto indices = indices_in.reshape({-1});
  if (indices.numel() == 0 || grad_weight.numel() == 0) return grad_weight;
  if (mode == kMax) {
    // Each nonempty bag's gradient goes to the rows it chose; empty bags to a spare row, dropped.
    auto rows = at::where(bag_size.unsqueeze(1) > 0, maximum_indices, num_weights);
    auto with_spare = at::zeros({num_weights + 1, D}, grad.options());
    with_spare.scatter_add_(0, rows, grad);
    return with_spare.narrow(0, 0, num_weights).contiguous();
  }
  // Sum and mean: index i's row gets grad[bag(i)], scaled by its per-sample weight and, for mean, 1 / bag size.
  auto rows = grad.index_select(0, offset2bag);
  if (per_sample_weights.has_value() && per_sample_weights->defined())
    rows = rows * per_sample_weights->reshape({-1, 1});
  if (mode == kMean) rows = rows / bag_size.index_select(0, offset2bag).unsqueeze(1).to(grad.scalar_type());
  segment_sums_into(grad_weight, 0, indices.contiguous(), rows.contiguous(), /*accumulate=*/true, padding_idx,
                    scale_grad_by_freq);
  return grad_weight;
}

Tensor embedding_bag_per_sample_weights_backward(const Tensor& grad, const Tensor& weight, const Tensor& indices_in,
                                                 const Tensor& /*offsets*/, const Tensor& offset2bag, int64_t mode,
                                                 int64_t padding_idx) {
  TORCH_CHECK(mode == kSum, "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  check_same_device({grad, weight, indices_in, offset2bag});
  const c10::DeviceGuard guard(grad.device());
  const auto indices = indices_in.reshape({-1});
  if (indices.numel() == 0) return at::zeros({0}, grad.options());
  // grad of index i's weight: its bag's gradient . its row, 0 for padding_idx.
  auto dots = (grad.index_select(0, offset2bag) * weight.index_select(0, indices)).sum(1);
  if (padding_idx >= 0) dots = dots.masked_fill(indices == padding_idx, 0);
  return dots;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  // ATen's own (device-generic) backward: checks, then the dense (or sparse) backward below.
  m.impl("_embedding_bag_backward", TORCH_FN(at::native::_embedding_bag_backward_symint));
  m.impl("_embedding_bag", TORCH_FN(embedding_bag_forward));
  m.impl("_embedding_bag_forward_only", TORCH_FN(embedding_bag_forward));
  m.impl("_embedding_bag_dense_backward", TORCH_FN(embedding_bag_dense_backward));
  m.impl("_embedding_bag_per_sample_weights_backward", TORCH_FN(embedding_bag_per_sample_weights_backward));
}

}  // namespace torch_opencl
