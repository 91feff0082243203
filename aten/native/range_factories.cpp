// arange, linspace, logspace and eye on the device: pointwise kernels over the element's
// index, with CPU's formulas and types (RangeFactories.cpp, cpu/RangeFactoriesKernel.cpp):
// arange in the accumulate type; linspace in the output type (double for integers), the
// first half counted up from start and the second down from end; logspace as pow(base, the
// same exponents in double; integer logspace on the host, as CPU computes it, for CPU's integers).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/RangeUtils.h>
#include <torch/library.h>

#include <algorithm>
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
  if (out.numel() != size) {  // as CPU: an out of the right numel keeps its shape; one with elements warns
    if (out.numel() > 0)
      TORCH_WARN("The number of elements in the out tensor of shape ", out.sizes(), " is ", out.numel(),
                 " which does not match the computed number of elements ", size,
                 ". Note that this may occur as a result of rounding error. "
                 "The out tensor will be resized to a tensor of shape (", size, ",).");
    out.resize_({size});
  }
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
  // An integer element is CPU's double pow truncated, and a pow 1 ulp off changes it wherever the value is an
  // integer (logspace(0, 100, 70, 10.0, dtype=int64)[11] on Intel's OpenCL CPU runtime; OpenCL allows pow
  // 16 ulp): the host computes integer ramps, as CPU does, and the device gets the result.
  if (at::isIntegralType(out.scalar_type(), /*includeBool=*/false)) {
    return out.copy_(at::logspace(start, end, steps, base, out.options().device(at::kCPU)));
  }
  double first = 0, last = 0, step = 0, b = base;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "logspace_opencl", [&] {
    const scalar_t s = start.to<scalar_t>(), e = end.to<scalar_t>();
    first = static_cast<double>(s);
    last = static_cast<double>(e);
    step = static_cast<double>(e - s) / static_cast<double>(steps - 1);  // the difference in scalar_t, as CPU
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

// eye as CPU's eye_out_cpu: out resized to (n, m) (resize_, no warning), ones on the diagonal. One kernel over
// the element's index: in a contiguous (n, m), element lin is on the diagonal where lin = i * (m + 1) for a row i
// below min(n, m).
at::Tensor& eye_m_out(int64_t n, int64_t m, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  out.resize_({n, m});
  if (out.numel() == 0) return out;
  auto r = out.is_contiguous() ? out : at::empty({n, m}, out.options());
  auto iter = at::TensorIterator::nullary_op(r);
  const int64_t step = m + 1;
  run_pointwise(iter, {"eye", "(lin % s0 == 0 && lin < s1) ? 1 : 0", "(lin % s0 == 0 && lin < s1) ? 1 : 0"},
                {step, std::min(n, m) * step}, at::kLong);
  if (!r.is_same(out)) out.copy_(r);
  return out;
}

at::Tensor& eye_out(int64_t n, at::Tensor& out) { return eye_m_out(n, n, out); }

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("eye.out", TORCH_FN(eye_out));
  m.impl("eye.m_out", TORCH_FN(eye_m_out));
  m.impl("arange.start_out", TORCH_FN(arange_out));
  m.impl("linspace.out", TORCH_FN(linspace_out));
  m.impl("logspace.out", TORCH_FN(logspace_out));
}

}  // namespace torch_opencl
