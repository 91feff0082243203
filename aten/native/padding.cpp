// Reflection and replication padding (1-D, 2-D, 3-D) and their gradients, as position maps
// over the padded dims (aten/native/axis_resample.h) with CPU's index formulas, negative padding
// (cropping) included. Arguments are checked by ATen's meta functions where the operator is
// structured, and with CPU's messages otherwise.
#include <ATen/ATen.h>
#include <ATen/ops/reflection_pad1d_backward_meta.h>
#include <ATen/ops/reflection_pad1d_meta.h>
#include <ATen/ops/reflection_pad3d_backward_meta.h>
#include <ATen/ops/reflection_pad3d_meta.h>
#include <ATen/ops/replication_pad1d_backward_meta.h>
#include <ATen/ops/replication_pad1d_meta.h>
#include <ATen/ops/replication_pad2d_meta.h>
#include <ATen/ops/replication_pad3d_meta.h>
#include <torch/library.h>

#include <algorithm>

#include "aten/native/axis_resample.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/structured.h"

namespace torch_opencl {
namespace {

using at::Tensor;

enum class PadMode { kReflect, kReplicate };

// One map per padded dim; padding lists (left, right) pairs from the last dim backwards.
std::vector<AxisMap> pad_axes(at::IntArrayRef sizes, at::IntArrayRef padding, PadMode mode) {
  std::vector<AxisMap> axes;
  const int64_t ndim = static_cast<int64_t>(sizes.size());
  for (size_t pair = 0; pair < padding.size() / 2; ++pair) {
    AxisMap axis;
    axis.dim = ndim - 1 - static_cast<int64_t>(pair);
    const int64_t n = sizes[axis.dim], pad_l = padding[2 * pair], pad_r = padding[2 * pair + 1];
    axis.in_size = n;
    auto& index = axis.idx.emplace_back();
    const int64_t i_start = std::max<int64_t>(0, -pad_l), o_start = std::max<int64_t>(0, pad_l);
    for (int64_t j = 0; j < n + pad_l + pad_r; ++j) {
      int64_t ip = j;
      if (mode == PadMode::kReflect)
        ip = j < pad_l ? 2 * pad_l - j : (j < n + pad_l ? j : 2 * (n + pad_l - 1) - j);
      else
        ip = j < pad_l ? pad_l : (j < n + pad_l ? j : n + pad_l - 1);
      index.push_back(ip - o_start + i_start);
    }
    axes.push_back(std::move(axis));
  }
  return axes;
}

// reflection_pad2d is not structured in ATen: CPU's checks, written out.
void check_reflection_pad2d(const Tensor& input, at::IntArrayRef padding) {
  TORCH_CHECK(padding.size() == 4, "padding size is expected to be 4, but got: ", padding.size());
  // As CPU's padding::check_valid_input<2>: 3-D, or 4-D whose batch (only) may be empty.
  bool valid = input.dim() == 3 || input.dim() == 4;
  for (int64_t d = input.dim() == 4 ? 1 : 0; valid && d < input.dim(); ++d) valid = input.size(d) != 0;
  TORCH_CHECK(valid,
              "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
              "input, but got: ",
              input.sizes());
  const int64_t dim_w = input.dim() - 1, dim_h = input.dim() - 2;
  const int64_t in_w = input.size(dim_w), in_h = input.size(dim_h);
  TORCH_CHECK(padding[0] < in_w && padding[1] < in_w,
              "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding (",
              padding[0], ", ", padding[1], ") at dimension ", dim_w, " of input ", input.sizes());
  TORCH_CHECK(padding[2] < in_h && padding[3] < in_h,
              "Argument #6: Padding size should be less than the corresponding input dimension, but got: padding (",
              padding[2], ", ", padding[3], ") at dimension ", dim_h, " of input ", input.sizes());
  const int64_t out_w = in_w + padding[0] + padding[1], out_h = in_h + padding[2] + padding[3];
  TORCH_CHECK(out_w >= 1 || out_h >= 1, "input (H: ", in_h, ", W: ", in_w, ")is too small.  Calculated output H: ",
              out_h, " W: ", out_w);
}

// For gradients of the non-structured operators: grad_output must have the forward's shape.
void check_grad_output(const char* op, const Tensor& grad_output, const Tensor& input, at::IntArrayRef padding,
                       size_t padded_dims) {
  TORCH_CHECK(padding.size() == 2 * padded_dims, op, ": padding size is expected to be ", 2 * padded_dims,
              ", but got: ", padding.size());
  TORCH_CHECK(static_cast<size_t>(input.dim()) >= padded_dims, op, ": expected an input with at least ", padded_dims,
              " dims, got ", input.sizes());
  std::vector<int64_t> expected(input.sizes().begin(), input.sizes().end());
  for (size_t pair = 0; pair < padded_dims; ++pair)
    expected[input.dim() - 1 - pair] += padding[2 * pair] + padding[2 * pair + 1];
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(expected), op, ": grad_output has size ", grad_output.sizes(),
              " but the padded input has size ", at::IntArrayRef(expected));
}

Tensor& write_out(const Tensor& result, Tensor& out) {
  TORCH_CHECK(out.dtype() == result.dtype(), "Expected out tensor to have dtype ", result.dtype(), ", but got ",
              out.dtype(), " instead");
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

// Structured operators: the meta function checks, the maps compute.
#define TOCL_PAD_STRUCTURED(NAME, MODE)                                                 \
  Tensor NAME##_kernel(const Tensor& self, at::IntArrayRef padding) {                   \
    StructuredCheck<at::meta::structured_##NAME> check;                                 \
    check.meta(self, padding);                                                          \
    return resample_forward(self, pad_axes(self.sizes(), padding, MODE));               \
  }                                                                                     \
  Tensor& NAME##_out_kernel(const Tensor& self, at::IntArrayRef padding, Tensor& out) { \
    return write_out(NAME##_kernel(self, padding), out);                                \
  }
TOCL_PAD_STRUCTURED(reflection_pad1d, PadMode::kReflect)
TOCL_PAD_STRUCTURED(reflection_pad3d, PadMode::kReflect)
TOCL_PAD_STRUCTURED(replication_pad1d, PadMode::kReplicate)
TOCL_PAD_STRUCTURED(replication_pad2d, PadMode::kReplicate)
TOCL_PAD_STRUCTURED(replication_pad3d, PadMode::kReplicate)
#undef TOCL_PAD_STRUCTURED

#define TOCL_PAD_BACKWARD_STRUCTURED(NAME, MODE)                                                             \
  Tensor NAME##_backward_kernel(const Tensor& grad_output, const Tensor& self, at::IntArrayRef padding) {    \
    StructuredCheck<at::meta::structured_##NAME##_backward> check;                                           \
    check.meta(grad_output, self, padding);                                                                  \
    return resample_backward(grad_output, self.sizes(), pad_axes(self.sizes(), padding, MODE));              \
  }                                                                                                          \
  Tensor& NAME##_backward_out_kernel(const Tensor& grad_output, const Tensor& self, at::IntArrayRef padding, \
                              Tensor& grad_input) {                                                          \
    return write_out(NAME##_backward_kernel(grad_output, self, padding), grad_input);                        \
  }
TOCL_PAD_BACKWARD_STRUCTURED(reflection_pad1d, PadMode::kReflect)
TOCL_PAD_BACKWARD_STRUCTURED(reflection_pad3d, PadMode::kReflect)
TOCL_PAD_BACKWARD_STRUCTURED(replication_pad1d, PadMode::kReplicate)
#undef TOCL_PAD_BACKWARD_STRUCTURED

#define TOCL_PAD_BACKWARD_CHECKED(NAME, MODE, DIMS)                                                          \
  Tensor NAME##_backward_kernel(const Tensor& grad_output, const Tensor& self, at::IntArrayRef padding) {    \
    check_grad_output(#NAME "_backward", grad_output, self, padding, DIMS);                                  \
    return resample_backward(grad_output, self.sizes(), pad_axes(self.sizes(), padding, MODE));              \
  }                                                                                                          \
  Tensor& NAME##_backward_out_kernel(const Tensor& grad_output, const Tensor& self, at::IntArrayRef padding, \
                              Tensor& grad_input) {                                                          \
    return write_out(NAME##_backward_kernel(grad_output, self, padding), grad_input);                        \
  }
TOCL_PAD_BACKWARD_CHECKED(reflection_pad2d, PadMode::kReflect, 2)
TOCL_PAD_BACKWARD_CHECKED(replication_pad2d, PadMode::kReplicate, 2)
TOCL_PAD_BACKWARD_CHECKED(replication_pad3d, PadMode::kReplicate, 3)
#undef TOCL_PAD_BACKWARD_CHECKED

Tensor reflection_pad2d_kernel(const Tensor& self, at::IntArrayRef padding) {
  check_reflection_pad2d(self, padding);
  return resample_forward(self, pad_axes(self.sizes(), padding, PadMode::kReflect));
}
Tensor& reflection_pad2d_out_kernel(const Tensor& self, at::IntArrayRef padding, Tensor& out) {
  return write_out(reflection_pad2d_kernel(self, padding), out);
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
#define TOCL_REGISTER_PAD(NAME)                                \
  m.impl(#NAME, TORCH_FN(NAME##_kernel));                      \
  m.impl(#NAME ".out", TORCH_FN(NAME##_out_kernel));           \
  m.impl(#NAME "_backward", TORCH_FN(NAME##_backward_kernel)); \
  m.impl(#NAME "_backward.grad_input", TORCH_FN(NAME##_backward_out_kernel));
  TOCL_REGISTER_PAD(reflection_pad1d)
  TOCL_REGISTER_PAD(reflection_pad2d)
  TOCL_REGISTER_PAD(reflection_pad3d)
  TOCL_REGISTER_PAD(replication_pad1d)
  TOCL_REGISTER_PAD(replication_pad2d)
  TOCL_REGISTER_PAD(replication_pad3d)
#undef TOCL_REGISTER_PAD
}

}  // namespace torch_opencl
