#pragma once
// The pointwise engine: ATen's TensorIterator decides shapes, broadcasting,
// type promotion and strides; this turns an OpenCL C expression and the
// operands' dtypes into a kernel, compiled on first use and cached.
#include <ATen/TensorIterator.h>
#include <c10/core/Scalar.h>

#include <initializer_list>
#include <string>

namespace torch_opencl {

struct PointwiseExpr {
  const char* name;           // names the program family, e.g. "add"
  const char* float_expr;     // over a, b, c (inputs) and s0, s1, s2 (scalars), for float and double
  const char* int_expr;       // the same for integer and bool compute types; nullptr: floating types only
  // A Python-number operand of a half or bfloat16 tensor is rounded to that dtype first, as CPU does for
  // most ops; mul and the divisions take a second operand unrounded in float (CPU's mul/div kernels read it
  // that way).
  bool unrounded_scalar_operand = false;
  // float_expr evaluates as written with float16 operands too (arithmetic, builtins with vector forms and
  // the helpers pointwise_functions.cl gives float16 versions): on devices whose kernel forms ask for it
  // (runtime/kernel_forms.h's pointwise_vectors), contiguous float32 operands take the vector kernel.
  bool vectorizes = false;
  // The float expression calls kernels_cl/special_functions.cl (lgamma_of, digamma_of, i0_of, ...): the
  // file is appended to this expression's programs only, so the others do not grow.
  bool special_functions = false;
};

// A floating-point-only expression over special_functions.cl.
constexpr PointwiseExpr special_expr(const char* name, const char* float_expr) {
  return PointwiseExpr{name, float_expr, nullptr, false, false, true};
}

// Runs out = EXPR(inputs...) over a built iterator (one output, up to three inputs).
// The compute type is the iterator's common dtype (float for half/bfloat16)
// unless `compute` is given; scalars are passed in the compute type.
void run_pointwise(at::TensorIteratorBase& iter, const PointwiseExpr& expr,
                   std::initializer_list<c10::Scalar> scalars = {},
                   std::optional<c10::ScalarType> compute = std::nullopt);

// A scalar argument that CPU converts to a half or bfloat16 tensor's own dtype (add's alpha, clamp's bounds,
// threshold's value, masked_fill's value, logit's eps), checked against that dtype as CPU checks it: 70000
// for a half tensor is an error. (run_pointwise checks every scalar against the type it computes in, float.)
c10::Scalar stored_scalar(const c10::Scalar& s, c10::ScalarType dtype);

}  // namespace torch_opencl
