// Nested tensors on opencl, as far as PyTorch's transformer fast path and its users take them:
// construction from a padded tensor and a padding mask (nn.TransformerEncoder's fast path), back to
// padded (to_padded_tensor), and the buffer-wise nested ops ATen writes device-generically (linear,
// relu/gelu, add, clone, copies and size queries), registered for NestedTensorPrivateUse1 as ATen
// registers them for NestedTensorCPU/CUDA. layer_norm is ours: ATen's nested form calls the CPU or
// CUDA kernel stub by name.
#include <ATen/ATen.h>
#include <ATen/NativeFunctions.h>
#include <ATen/NestedTensorImpl.h>
#include <ATen/native/nested/NestedTensorMath.h>
#include <torch/library.h>

#include <tuple>

#include "aten/native/nested_rows.h"

namespace torch_opencl {
namespace {

using at::Tensor;

// _nested_from_padded: rows by one gather; other shapes (and the 0213 transform the CPU/CUDA
// attention kernels ask for) by ATen's device-generic form.
Tensor nested_from_padded(const Tensor& padded, const Tensor& nested_sizes, bool fuse_transform_0213) {
  if (!fuse_transform_0213 && padded.dim() == 3 && nested_sizes.dim() == 2 && nested_sizes.size(1) == 2)
    return nested_rows::from_padded(padded, nested_sizes);
  return at::native::nested_from_padded_generic(padded, nested_sizes, fuse_transform_0213);
}

Tensor to_padded_tensor(const Tensor& self, double padding, at::OptionalIntArrayRef output_size) {
  if (!nested_rows::holds_rows(self) || self.numel() == 0)
    return at::native::NestedTensor_to_padded_tensor_generic(self, padding, output_size);
  const int64_t length = nested_rows::max_length(self);
  if (!output_size) return nested_rows::to_padded(self, padding, length);
  // CPU's rule: output_size names every dim and is at least the padded size in each.
  const auto want = *output_size;
  TORCH_CHECK(static_cast<int64_t>(want.size()) == self.dim(),
              "Length of output_size does not match NestedTensor dims. Broadcasting is not supported.");
  const Tensor& sizes = at::native::get_nested_tensor_impl(self)->get_nested_sizes();
  const int64_t have[3] = {sizes.size(0), length, sizes[0][1].item<int64_t>()};
  for (int i = 0; i < 3; ++i)
    TORCH_CHECK(want[i] >= have[i],
                "Value in output_size is less than NestedTensor padded size. Truncation is not supported.");
  const Tensor rows = nested_rows::to_padded(self, padding, want[1]);
  if (want[0] == have[0] && want[2] == have[2]) return rows;
  return at::constant_pad_nd(rows, {0, want[2] - have[2], 0, 0, 0, want[0] - have[0]}, padding);
}

// layer_norm over the trailing dims of every component: the buffer is [M, N] rows of the normalized size.
std::tuple<Tensor, Tensor, Tensor> nested_layer_norm(const Tensor& input, at::IntArrayRef normalized_shape,
                                                     const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias, double eps) {
  auto* impl = at::native::get_nested_tensor_impl(input);
  TORCH_CHECK(at::native::nested_tensor_impl_is_contiguous(impl),
              "NestedTensor layer_norm: the input must be contiguous (call .contiguous() first)");
  TORCH_CHECK(weight && weight->defined() && bias && bias->defined(),
              "NestedTensor layer_norm requires weight and bias");
  const auto [M, N] = at::native::_check_nested_layer_norm_inputs(*impl, normalized_shape, *weight, *bias);
  auto [out, mean, rstd] =
      at::native_layer_norm(impl->get_buffer().view({M, N}), {N}, weight->view({N}), bias->view({N}), eps);
  return {at::detail::make_tensor<at::native::NestedTensorImpl>(out.reshape({-1}), impl->get_nested_sizes()),
          mean.reshape({M}), rstd.reshape({M})};
}

}  // namespace

// Plain TORCH_LIBRARY_IMPL (as transformer_fast_paths.cpp says why).
// Dense inputs: the mask's nested tensor (ATen's composition of device ops, ending in _nested_from_padded).
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_nested_tensor_from_mask", TORCH_FN(at::native::NestedTensor_nested_tensor_from_mask));
  m.impl("_nested_tensor_from_mask_left_aligned",
         TORCH_FN(at::native::NestedTensor_nested_tensor_from_mask_left_aligned));
  m.impl("_nested_from_padded", TORCH_FN(nested_from_padded));
}

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  m.impl("to_padded_tensor", TORCH_FN(to_padded_tensor));
  m.impl("native_layer_norm", TORCH_FN(nested_layer_norm));
  m.impl("linear", TORCH_FN(at::native::nested_linear));
  m.impl("relu", TORCH_FN(at::native::NestedTensor_relu));
  m.impl("relu_", TORCH_FN(at::native::NestedTensor_relu_));
  m.impl("gelu", TORCH_FN(at::native::NestedTensor_gelu));
  m.impl("gelu_", TORCH_FN(at::native::NestedTensor_gelu_));
  m.impl("add.Tensor", TORCH_FN(at::native::NestedTensor_add_Tensor));
  m.impl("add_.Tensor", TORCH_FN(at::native::NestedTensor_add__Tensor));
  m.impl("clone", TORCH_FN(at::native::clone_nested));
  m.impl("detach", TORCH_FN(at::native::detach));
  m.impl("alias", TORCH_FN(at::native::alias_nested));
  m.impl("empty_like", TORCH_FN(at::native::empty_like_nested));
  m.impl("copy_", TORCH_FN(at::native::copy_nested_));
  m.impl("_to_copy", TORCH_FN(at::native::_to_copy_nested));
  m.impl("unbind.int", TORCH_FN(at::native::NestedTensor_unbind));
  m.impl("is_same_size", TORCH_FN(at::native::nested_is_same_size));
  m.impl("_nested_tensor_size", TORCH_FN(at::native::_nested_tensor_size));
  m.impl("_nested_tensor_strides", TORCH_FN(at::native::_nested_tensor_strides));
  m.impl("_nested_tensor_storage_offsets", TORCH_FN(at::native::_nested_tensor_storage_offsets));
}

}  // namespace torch_opencl
