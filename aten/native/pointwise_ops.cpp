// Structured pointwise operators: ATen's meta functions build the iterator
// (shapes, promotion, checks as on CPU); each operator is one expression.
// The list is pointwise_ops.def.
#include <ATen/ATen.h>
#include <ATen/MetaFunctions.h>
#include <torch/library.h>

#include <cmath>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/native/pointwise.h"
#include "aten/kernel_support/structured.h"

namespace torch_opencl {
namespace {

// Integer division, remainder and fmod: CPU raises ZeroDivisionError for a divisor of 0 (CUDA returns
// garbage); this reads one flag back from the device, as CPU's check reads every divisor. None of
// them is defined for bool on CPU (NotImplementedError, even for empty tensors).
void run_integer_division(at::TensorIteratorBase& op, const PointwiseExpr& expr) {
  TORCH_CHECK_NOT_IMPLEMENTED(op.common_dtype() != at::kBool, "\"", expr.name,
                              "\" is not implemented for 'Bool' (as on CPU)");
  if (at::isIntegralType(op.common_dtype(), /*includeBool=*/false) && op.numel() > 0) {
    // The divisor as the kernel sees it: a 0-d int64 divisor of an int32 tensor is cast first, so
    // INT64_MIN divides by 0 there, as on CPU.
    const at::Tensor divisor = at::Tensor(op.input(1)).to(op.common_dtype());
    TORCH_CHECK(!divisor.eq(0).any().item<bool>(), "ZeroDivisionError");
  }
  run_pointwise(op, expr);
}

void run_div_mode(at::TensorIteratorBase& op, std::optional<c10::string_view> mode) {
  if (!mode.has_value()) {
    run_pointwise(op, {"div", "a / b", nullptr, true});
  } else if (*mode == "trunc") {
    run_integer_division(op, {"div_trunc", "trunc(a / b)", "trunc_divide(a, b)", true});
  } else {
    TORCH_CHECK(*mode == "floor", "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '",
                *mode, "'");
    run_integer_division(op, {"div_floor", "floor_divide(a, b)", "floor_divide(a, b)", true});
  }
}

// pow of two tensors (or a scalar base) has no bool form on CPU (NotImplementedError); a bool tensor to a
// scalar power is defined there, since the exponent can only be 0 or 1 (run_pow_scalar).
void run_pow(at::TensorIteratorBase& op) {
  TORCH_CHECK_NOT_IMPLEMENTED(op.common_dtype() != at::kBool, "\"pow\" not implemented for 'Bool'");
  run_pointwise(op, {"pow", "pow_of(a, b)", "pow_of(a, b)"});
}

void run_pow_scalar(at::TensorIteratorBase& op, const c10::Scalar& exponent) {
  // Exact forms for the common exponents, as CPU uses. 1 is the backward of square (2 * x^1): PoCL's pow
  // takes about 100 ns an element, and the GELU MLP's loss (square().mean()) spent 2.9 ms a step in it.
  if (!exponent.isComplex()) {
    const double e = exponent.to<double>();
    if (e == 0) return run_pointwise(op, {"pow0", "(C_T)1", "(C_T)1"});
    if (e == 1) return run_pointwise(op, {"pow1", "a", "a"});
    if (e == 2) return run_pointwise(op, {"pow2", "a * a", "a * a"});
    if (e == 3) return run_pointwise(op, {"pow3", "a * a * a", "a * a * a"});
    if (e == 0.5) return run_pointwise(op, {"pow_half", "sqrt(a)", nullptr});
    if (e == -0.5) return run_pointwise(op, {"pow_mhalf", "(C_T)1 / sqrt(a)", nullptr});
    if (e == -1) return run_pointwise(op, {"pow_m1", "(C_T)1 / a", nullptr});
    if (e == -2) return run_pointwise(op, {"pow_m2", "(C_T)1 / (a * a)", nullptr});
  }
  // CPU raises float tensors to the exponent as a double, never checking that it fits float: one beyond
  // float's range is inf here, which pow_of treats as CPU's double does. Half and bfloat16 tensors take it
  // checked and rounded to their dtype, as CPU does.
  const auto common = op.common_dtype();
  c10::Scalar e = exponent;
  if (common == at::kFloat && !exponent.isComplex()) e = c10::Scalar(cast_to_dtype(exponent.to<double>(), common));
  if (common == at::kHalf) e = c10::Scalar(static_cast<double>(exponent.to<c10::Half>()));
  if (common == at::kBFloat16) e = c10::Scalar(static_cast<double>(exponent.to<c10::BFloat16>()));
  run_pointwise(op, {"pow_scalar", "pow_of(a, s0)", "pow_of(a, s0)"}, {e});
}

void run_clamp(at::TensorIteratorBase& op, const std::optional<c10::Scalar>& min,
               const std::optional<c10::Scalar>& max) {
  if (min) stored_scalar(*min, op.common_dtype());
  if (max) stored_scalar(*max, op.common_dtype());
  if (min && max) {
    run_pointwise(op, {"clamp", "isnan(a) ? a : fmin(fmax(a, s0), s1)", "min(max(a, s0), s1)"}, {*min, *max});
  } else if (min) {
    run_pointwise(op, {"clamp_min", "isnan(a) ? a : fmax(a, s0)", "max(a, s0)"}, {*min});
  } else {
    TORCH_CHECK(max.has_value(), "torch.clamp: At least one of 'min' or 'max' must not be None");
    run_pointwise(op, {"clamp_max", "isnan(a) ? a : fmin(a, s0)", "min(a, s0)"}, {*max});
  }
}

// Bounds given as tensors (inputs: self, then min and/or max), with CPU's NaN rules:
// a NaN bound gives NaN, a NaN input stays NaN.
void run_clamp_tensor(at::TensorIteratorBase& op, bool min, bool max) {
  if (min && max) {
    run_pointwise(op, {"clamp_tensor", "(isnan(b) || isnan(c)) ? b + c : (isnan(a) ? a : fmin(fmax(a, b), c))",
                       "min(max(a, b), c)"});
  } else if (min) {
    run_pointwise(op, {"clamp_min_tensor", "(isnan(b) || a < b) ? b : a", "max(a, b)"});
  } else {
    TORCH_CHECK(max, "torch.clamp: At least one of 'min' or 'max' must not be None");
    run_pointwise(op, {"clamp_max_tensor", "(isnan(b) || a > b) ? b : a", "min(a, b)"});
  }
}

// CPU's shifts: a count below 0 or at least the bit width gives 0 (left) or the sign fill (right);
// integer types only (CPU dispatches uint8, int8, int16, int32, int64).
void run_shift(at::TensorIteratorBase& op, bool left) {
  const auto dtype = op.common_dtype();
  const bool supported = dtype == c10::kByte || dtype == c10::kChar || dtype == c10::kShort || dtype == c10::kInt ||
                         dtype == c10::kLong;
  TORCH_CHECK(supported, left ? "bitwise_left_shift" : "bitwise_right_shift", " is not implemented for '", dtype,
              "'; it takes integer tensors (uint8, int8, int16, int32 or int64)");
#define TOCL_WIDTH "(long)(sizeof(C_T) * 8)"
#define TOCL_RSHIFT_MAX "(sizeof(C_T) * 8 - ((C_T)-1 < (C_T)0))"
  if (left) {
    run_pointwise(op, {"lshift", nullptr, "((long)b < 0 || (long)b >= " TOCL_WIDTH ") ? (C_T)0 : (C_T)(a << b)"});
  } else {
    run_pointwise(op, {"rshift", nullptr,
                       "((long)b < 0 || (long)b >= (long)" TOCL_RSHIFT_MAX ") ? (C_T)(a >> " TOCL_RSHIFT_MAX
                       ") : (C_T)(a >> b)"});
  }
#undef TOCL_WIDTH
#undef TOCL_RSHIFT_MAX
}

// floor, ceil, round and trunc: integers come back unchanged; bool is refused as on CPU
// (NotImplementedError, even for empty tensors).
void run_rounding(at::TensorIteratorBase& op, const char* name, const char* float_expr) {
  TORCH_CHECK_NOT_IMPLEMENTED(op.common_dtype() != at::kBool, "\"", name,
                              "\" is not implemented for 'Bool' (as on CPU)");
  run_pointwise(op, {name, float_expr, "a"});
}

// CPU's round(decimals): scale by 10^|decimals| in the element type, rint, scale back
// (dividing first when decimals <= 0).
void run_round_decimals(at::TensorIteratorBase& op, int64_t decimals) {
  const bool scale_down = decimals <= 0;
  const double ten_pow = std::pow(10.0, static_cast<double>(scale_down ? -decimals : decimals));
  if (scale_down)
    run_pointwise(op, {"round_decimals_down", "rint(a / s0) * s0", nullptr}, {ten_pow});
  else
    run_pointwise(op, {"round_decimals", "rint(a * s0) / s0", nullptr}, {ten_pow});
}

// A scalar CPU's kernel converts to the tensor's own dtype (Scalar::to<scalar_t>, checked): rounded for half
// and bfloat16, whose kernels here compute in float (hardshrink's lambda).
c10::Scalar in_dtype(const c10::Scalar& s, c10::ScalarType dtype) {
  if (dtype == at::kHalf) return c10::Scalar(static_cast<double>(s.to<c10::Half>()));
  if (dtype == at::kBFloat16) return c10::Scalar(static_cast<double>(s.to<c10::BFloat16>()));
  return s;
}

// nextafter steps in the tensor's own dtype: half and bfloat16 (which this engine computes in float) run on
// the CPU fallback rather than step by a float's ulp.
void run_nextafter(at::TensorIteratorBase& op) {
  const auto dtype = op.common_dtype();
  if (dtype == at::kHalf || dtype == at::kBFloat16)
    throw_dtype_not_native(c10::str("nextafter: no opencl kernel steps by a ", dtype, " ulp"));
  run_pointwise(op, {"nextafter", "nextafter(a, b)", nullptr});
}

#define TOCL_EXPAND(...) __VA_ARGS__

#define OP(NAME, META, PARAMS, ARGS, LAUNCH, F, I, O)                                 \
  at::Tensor NAME(const at::Tensor& self TOCL_EXPAND PARAMS) {                        \
    StructuredFunctional<at::meta::META> op;                                          \
    op.meta(self TOCL_EXPAND ARGS);                                                   \
    LAUNCH;                                                                           \
    return op.take();                                                                 \
  }                                                                                   \
  at::Tensor& NAME##_(at::Tensor& self TOCL_EXPAND PARAMS) {                          \
    StructuredOut<at::meta::META> op(self, /*in_place=*/true);                        \
    op.meta(self TOCL_EXPAND ARGS);                                                   \
    LAUNCH;                                                                           \
    op.finish();                                                                      \
    return self;                                                                      \
  }                                                                                   \
  at::Tensor& NAME##_out(const at::Tensor& self TOCL_EXPAND PARAMS, at::Tensor& out) { \
    StructuredOut<at::meta::META> op(out);                                            \
    op.meta(self TOCL_EXPAND ARGS);                                                   \
    LAUNCH;                                                                           \
    op.finish();                                                                      \
    return out;                                                                       \
  }
#include "aten/native/pointwise_ops.def"
#undef OP

}  // namespace

TOCL_LIBRARY_IMPL(m) {
#define OP(NAME, META, PARAMS, ARGS, LAUNCH, F, I, O) \
  if (*F) m.impl(F, TORCH_FN(NAME));                  \
  if (*I) m.impl(I, TORCH_FN(NAME##_));               \
  if (*O) m.impl(O, TORCH_FN(NAME##_out));
#include "aten/native/pointwise_ops.def"
#undef OP
}

}  // namespace torch_opencl
