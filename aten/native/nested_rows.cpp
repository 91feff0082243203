// Nested tensors of rows on opencl (nested_rows.h): between the nested form and the padded one with
// one gather or scatter of whole rows, their indices computed on the host from the nested sizes
// (which PyTorch keeps on the CPU).
#include "aten/native/nested_rows.h"

#include <ATen/ATen.h>
#include <ATen/NestedTensorImpl.h>

#include <vector>

namespace torch_opencl::nested_rows {
namespace {

using at::Tensor;

// Flat row indices into a [B, length, D] tensor viewed as [B * length, D] of each component's rows.
Tensor row_indices(const Tensor& nested_sizes, int64_t length, const at::Device& device) {
  const auto sizes = nested_sizes.contiguous();
  const int64_t batch = sizes.size(0);
  const int64_t* s = sizes.data_ptr<int64_t>();
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < s[2 * b]; ++t) rows.push_back(b * length + t);
  return at::tensor(rows, at::kLong).to(device);
}

}  // namespace

bool holds_rows(const Tensor& nt) {
  if (!nt.is_nested()) return false;
  auto* impl = at::native::get_nested_tensor_impl(nt);
  const Tensor& sizes = impl->get_nested_sizes();
  if (sizes.dim() != 2 || sizes.size(0) == 0 || sizes.size(1) != 2) return false;
  if (!at::native::nested_tensor_impl_is_contiguous(impl)) return false;
  const auto widths = sizes.select(1, 1);
  return (widths == widths[0]).all().item<bool>();
}

int64_t max_length(const Tensor& nt) {
  return at::native::get_nested_tensor_impl(nt)->get_nested_sizes().select(1, 0).max().item<int64_t>();
}

Tensor to_padded(const Tensor& nt, double padding, int64_t length) {
  auto* impl = at::native::get_nested_tensor_impl(nt);
  const Tensor& sizes = impl->get_nested_sizes();
  const Tensor buffer = impl->get_buffer();
  const int64_t batch = sizes.size(0), width = sizes[0][1].item<int64_t>();
  Tensor out = at::full({batch, length, width}, padding, buffer.options());
  if (buffer.numel() > 0)
    out.view({batch * length, width}).index_copy_(0, row_indices(sizes, length, buffer.device()),
                                                  buffer.view({-1, width}));
  return out;
}

Tensor from_padded(const Tensor& padded, const Tensor& nested_sizes) {
  TORCH_CHECK(padded.dim() == 3 && nested_sizes.dim() == 2 && nested_sizes.size(1) == 2 &&
                  nested_sizes.size(0) == padded.size(0),
              "nested rows from padded: expected a [B, T, D] tensor and [B, 2] sizes, got ", padded.sizes(),
              " and ", nested_sizes.sizes());
  const int64_t batch = padded.size(0), length = padded.size(1), width = padded.size(2);
  TORCH_CHECK((nested_sizes.select(1, 0) <= length).all().item<bool>() &&
                  (nested_sizes.select(1, 1) == width).all().item<bool>(),
              "nested rows from padded: the sizes ", nested_sizes, " do not fit a padded tensor of shape ",
              padded.sizes());
  const Tensor buffer = padded.reshape({batch * length, width})
                            .index_select(0, row_indices(nested_sizes, length, padded.device()))
                            .reshape({-1});
  return at::detail::make_tensor<at::native::NestedTensorImpl>(buffer, nested_sizes.clone());
}

Tensor padding_mask(const Tensor& nt, int64_t length) {
  const Tensor lengths = at::native::get_nested_tensor_impl(nt)->get_nested_sizes().select(1, 0);
  const auto device = at::native::get_nested_tensor_impl(nt)->get_buffer().device();
  const Tensor positions = at::arange(length, at::TensorOptions().dtype(at::kLong).device(device));
  return positions.unsqueeze(0) >= lengths.to(device).unsqueeze(1);
}

}  // namespace torch_opencl::nested_rows
