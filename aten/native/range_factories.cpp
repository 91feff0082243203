// arange, linspace and logspace on the device: pointwise kernels over the element's
// index, with CPU's formulas and types (RangeFactories.cpp, cpu/RangeFactoriesKernel.cpp):
// arange in the accumulate type; linspace in the output type (double for integers), the
// first half counted up from start and the second down from end; logspace as pow(base, the
// same exponents in double).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/RangeUtils.h>
#include <torch/library.h>

#include <cmath>
#include <type_traits>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/native/pointwise.h"
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

// The type CPU computes linspace in: the output's own (float for half and bfloat16, whose
// rounding after each step is not reproduced), double for integers (float without fp64).
c10::ScalarType linspace_compute(c10::ScalarType out, int device) {
  if (at::isFloatingType(out)) return compute_dtype(out);
  return tocl::device_info(device).fp64 ? at::kDouble : at::kFloat;
}

// Element i of a 1-D contiguous out of n >= 2 elements, as CPU's linspace_kernel: counted up from first
// for i < n / 2, down from last otherwise (n is the engine's element count).
#define TWO_SIDED_RAMP "(lin < n / 2 ? s0 + s2 * (C_T)lin : s1 - s2 * (C_T)(n - lin - 1))"

at::Tensor& linspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  TORCH_CHECK(!at::isComplexType(out.scalar_type()) && out.scalar_type() != at::kBool, "\"linspace\" not implemented for '",
              out.scalar_type(), "' on opencl");
  if (out.numel() != steps) out.resize_({steps});
  if (steps == 0) return out;
  if (steps == 1) return out.fill_(start);
  const int device = out.device().index();
  check_device_supports(out.scalar_type(), device, "linspace");
  double first = 0, last = 0, step = 0;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "linspace_opencl", [&] {
    const scalar_t s = start.to<scalar_t>(), e = end.to<scalar_t>();
    first = static_cast<double>(s);
    last = static_cast<double>(e);
    if constexpr (std::is_integral_v<scalar_t>) {
      step = (static_cast<double>(e) - static_cast<double>(s)) / static_cast<double>(steps - 1);
    } else {
      step = static_cast<double>((e - s) / static_cast<scalar_t>(steps - 1));  // in scalar_t, as CPU
    }
  });
  auto r = out.is_contiguous() ? out : at::empty({steps}, out.options());
  auto iter = at::TensorIterator::nullary_op(r);
  run_pointwise(iter, {"linspace", TWO_SIDED_RAMP, nullptr}, {first, last, step},
                linspace_compute(out.scalar_type(), device));
  if (!r.is_same(out)) out.copy_(r);
  return out;
}

at::Tensor& logspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, double base,
                         at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  TORCH_CHECK(!at::isComplexType(out.scalar_type()) && out.scalar_type() != at::kBool, "\"logspace\" not implemented for '",
              out.scalar_type(), "' on opencl");
  if (out.numel() != steps) out.resize_({steps});
  if (steps == 0) return out;
  if (steps == 1) return out.fill_(std::pow(base, start.to<double>()));
  const int device = out.device().index();
  check_device_supports(out.scalar_type(), device, "logspace");
  double first = 0, last = 0, step = 0, b = base;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "logspace_opencl", [&] {
    const scalar_t s = start.to<scalar_t>(), e = end.to<scalar_t>();
    first = static_cast<double>(s);
    last = static_cast<double>(e);
    step = static_cast<double>(e - s) / static_cast<double>(steps - 1);  // the difference in scalar_t, as CPU
    if constexpr (std::is_integral_v<scalar_t>) b = static_cast<float>(base);  // CPU's base is a float here
  });
  const auto compute = tocl::device_info(device).fp64 ? at::kDouble : at::kFloat;
  auto r = out.is_contiguous() ? out : at::empty({steps}, out.options());
  // The base is a host scalar input (a): the three scalar arguments hold the ramp.
  const auto base_tensor = at::scalar_tensor(b, at::TensorOptions().dtype(at::kDouble));
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .allow_cpu_scalars(true)
                  .resize_outputs(false)
                  .add_output(r)
                  .add_const_input(base_tensor)
                  .build();
  run_pointwise(iter, {"logspace", "pow(a, " TWO_SIDED_RAMP ")", nullptr}, {first, last, step}, compute);
  if (!r.is_same(out)) out.copy_(r);
  return out;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("arange.start_out", TORCH_FN(arange_out));
  m.impl("linspace.out", TORCH_FN(linspace_out));
  m.impl("logspace.out", TORCH_FN(logspace_out));
}

}  // namespace torch_opencl
