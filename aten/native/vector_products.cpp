// torch.trace, torch.vdot and torch.linalg.cross (torch.cross reaches linalg_cross through ATen's composite).
// trace and vdot compose native ops (a diagonal view and a sum; dot, or a product and a sum); linalg_cross
// runs ATen's structured meta function (CPU's shape checks and broadcast) and one kernel
// (kernels_cl/cross.cl). Each raises CPU's errors; complex tensors run on the CPU fallback.
#include <ATen/ATen.h>
#include <ATen/MetaFunctions.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <array>
#include <optional>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/kernel_support/structured.h"
#include "aten/native/blas.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

using at::Tensor;

// The real dtypes CPU's trace, dot and cross kernels take besides float32 and float64 (ATen's
// AT_DISPATCH_ALL_TYPES_AND2(Half, BFloat16)); bool and the unsigned types beyond uint8 are not among them.
bool all_types_and_reduced_floats(at::ScalarType type) {
  switch (type) {
    case at::kByte: case at::kChar: case at::kShort: case at::kInt: case at::kLong:
    case at::kHalf: case at::kBFloat16: case at::kFloat: case at::kDouble:
      return true;
    default:
      return false;
  }
}

// CPU's error for a dtype its kernel `name` does not take; complex tensors go to the CPU fallback.
void check_dtype(const Tensor& t, const char* name) {
  const auto type = t.scalar_type();
  if (at::isComplexType(type)) throw_dtype_not_native(c10::str(name, ": no OpenCL form for ", type));
  TORCH_CHECK_NOT_IMPLEMENTED(all_types_and_reduced_floats(type), "\"", name, "\" not implemented for '",
                              c10::toString(type), "'");
}

// ---- trace: the diagonal's sum, integers promoted to int64 (as CPU; it accumulates in the dtype's
// accumulate type, double for float32, where the sum here accumulates in float: results agree to rounding).

Tensor trace(const Tensor& self) {
  check_dtype(self, "trace");
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  const auto type = self.scalar_type();
  return at::diagonal(self).sum(at::isIntegralType(type, /*includeBool=*/false) ? at::kLong : type);
}

// ---- vdot: dot for real dtypes (conjugation is the identity), CPU's checks (those of its dot) first.

Tensor vdot(const Tensor& self, const Tensor& other) {
  if (self.is_complex()) throw_dtype_not_native(c10::str("vdot: no OpenCL form for ", self.scalar_type()));
  check_dot_operands(self, other);
  check_same_device({self, other});
  check_dtype(self, "dot");
  const c10::DeviceGuard guard(self.device());
  const auto type = self.scalar_type();
  // dot computes every real dtype but bool (half and bfloat16 in float, integers wrapping as CPU's).
  if (type != at::kBool) return at::dot(self, other);
  return at::mul(self, other).sum(type);
}

// ---- linalg_cross ----

struct CrossShape {  // as in kernels_cl/cross.cl
  cl_long inner, a_outer, a_k, a_inner, b_outer, b_k, b_inner;
};

// The stride that steps through dims [first, last) of t as one flattened dim, if they collapse so (size-1
// dims aside, each dim's stride is the next one's stride times its size; broadcast dims of stride 0 among
// them too). 0 when the range holds no dim of size above 1.
std::optional<int64_t> collapsed_stride(const Tensor& t, int64_t first, int64_t last) {
  std::optional<int64_t> stride, expect;
  for (int64_t d = last - 1; d >= first; --d) {
    if (t.size(d) == 1) continue;
    if (expect && t.stride(d) != *expect) return std::nullopt;
    if (!stride) stride = t.stride(d);
    expect = t.stride(d) * t.size(d);
  }
  return stride.value_or(0);
}

// t (broadcast to the output's sizes) as (outer, 3, inner) strides, through a contiguous copy where its dims
// do not collapse.
std::array<int64_t, 3> as_3d(Tensor& t, int64_t dim) {
  auto outer = collapsed_stride(t, 0, dim), inner = collapsed_stride(t, dim + 1, t.dim());
  if (!outer || !inner) {
    t = t.contiguous();
    outer = collapsed_stride(t, 0, dim);
    inner = collapsed_stride(t, dim + 1, t.dim());
  }
  return {*outer, t.stride(dim), *inner};
}

void cross_into(const Tensor& input, const Tensor& other, int64_t dim, const Tensor& out) {
  check_dtype(out, "cross");
  TORCH_CHECK(input.scalar_type() == out.scalar_type(), "expected scalar type ", out.scalar_type(), " but found ",
              input.scalar_type());
  TORCH_CHECK(other.scalar_type() == out.scalar_type(), "expected scalar type ", out.scalar_type(), " but found ",
              other.scalar_type());
  check_same_device({input, other, out});
  if (out.numel() == 0) return;
  const c10::DeviceGuard guard(out.device());
  dim = c10::maybe_wrap_dim(dim, out.dim());
  Tensor a = input.expand(out.sizes()), b = other.expand(out.sizes());
  const auto sa = as_3d(a, dim), sb = as_3d(b, dim);
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < out.dim(); ++d) inner *= out.size(d);
  const CrossShape s{inner, sa[0], sa[1], sa[2], sb[0], sb[1], sb[2]};
  const int64_t total = out.numel() / 3;
  const auto type = out.scalar_type();
  const int device = device_index(out);
  check_device_supports(type, device, "linalg_cross");
  cl_kernel k = tocl::get_kernel(dtype_program(device, "cross.cl", type, at::kLong, 0, round_to_dtype_define(type)),
                                 "linalg_cross");
  tocl::set_args(k, buffer_arg(out), buffer_arg(a), buffer_arg(b), s, static_cast<cl_long>(total));
  tocl::enqueue_1d(device_index(out), current_stream_of(out), k, total);
}

Tensor linalg_cross(const Tensor& self, const Tensor& other, int64_t dim) {
  StructuredFunctional<at::meta::structured_linalg_cross> op;
  op.meta(self, other, dim);
  cross_into(self, other, dim, op.maybe_get_output(0));
  return op.take();
}

Tensor& linalg_cross_out(const Tensor& self, const Tensor& other, int64_t dim, Tensor& out) {
  StructuredOut<at::meta::structured_linalg_cross> op(out);
  op.meta(self, other, dim);
  cross_into(self, other, dim, op.maybe_get_output(0));
  op.finish();
  return out;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("trace", TORCH_FN(trace));
  m.impl("vdot", TORCH_FN(vdot));
  m.impl("linalg_cross", TORCH_FN(linalg_cross));
  m.impl("linalg_cross.out", TORCH_FN(linalg_cross_out));
}

}  // namespace torch_opencl
