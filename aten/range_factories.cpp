// arange on the device: one pointwise kernel writes start + i * step, computed in
// double (float without fp64) as CPU computes it in its accumulate type.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/RangeUtils.h>
#include <torch/library.h>

#include "aten/cl_types.h"
#include "aten/dtype_fallback.h"
#include "aten/pointwise.h"
#include "runtime/device.h"

namespace torch_opencl {
namespace {

at::Tensor& arange_out(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step, at::Tensor& out) {
  int64_t size = 0;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "arange_opencl", [&] {
    size = at::native::compute_arange_size<scalar_t>(start, end, step);
  });
  if (out.numel() != size) out.resize_({size});  // as CPU: an out of the right numel keeps its shape
  if (size == 0) return out;
  const int device = out.device().index();
  const bool floating = at::isFloatingType(out.scalar_type());
  const c10::ScalarType compute =
      floating ? (tocl::device_info(device).fp64 ? at::kDouble : at::kFloat) : at::kLong;
  auto iter = at::TensorIterator::nullary_op(out);
  run_pointwise(iter, {"arange", "s0 + (C_T)lin * s1", "s0 + (C_T)lin * s1"}, {start, step}, compute);
  return out;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) { m.impl("arange.start_out", TORCH_FN(arange_out)); }

}  // namespace torch_opencl
