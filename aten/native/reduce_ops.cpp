// Reduction operators over the engine in aten/reduce.cpp. ATen's structured
// meta functions decide output shapes, dtypes and argument errors as on CPU;
// each operator then names an op code and an accumulate dtype.
#include <ATen/ATen.h>
#include <ATen/MetaFunctions.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <cmath>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/out_arguments.h"
#include "aten/native/reduce.h"
#include "aten/kernel_support/structured.h"

namespace torch_opencl {
namespace {

using at::Tensor;

ReduceMask mask_of(const Tensor& self, at::OptionalIntArrayRef dims) {
  return at::native::make_dim_mask(dims, self.dim());
}

ReduceMask mask_of_dim(const Tensor& self, int64_t dim) {
  ReduceMask m;
  if (self.dim() > 0) m.set(c10::maybe_wrap_dim(dim, self.dim()));
  return m;
}

// Sums accumulate in the result dtype, widened: float for half/bfloat16, int64 for bool.
c10::ScalarType sum_acc(c10::ScalarType out) {
  if (out == c10::kBool) return c10::kLong;
  return accumulate_dtype(out);
}

// ---- functional and out= forms over a structured meta function ----

#define TOCL_EXPAND(...) __VA_ARGS__
#define REDUCE_OP(NAME, META, PARAMS, ARGS, BODY)                                   \
  Tensor NAME(const Tensor& self TOCL_EXPAND PARAMS) {                              \
    StructuredFunctional<at::meta::META> op;                                        \
    op.meta(self TOCL_EXPAND ARGS);                                                 \
    const Tensor& out = op.maybe_get_output(0);                                     \
    BODY;                                                                           \
    return op.take();                                                               \
  }                                                                                 \
  Tensor& NAME##_out(const Tensor& self TOCL_EXPAND PARAMS, Tensor& result) {       \
    StructuredOut<at::meta::META> op(result);                                       \
    op.meta(self TOCL_EXPAND ARGS);                                                 \
    const Tensor& out = op.maybe_get_output(0);                                     \
    BODY;                                                                           \
    op.finish();                                                                    \
    return result;                                                                  \
  }

using OptDims = at::OptionalIntArrayRef;
using OptType = std::optional<c10::ScalarType>;

REDUCE_OP(sum_dim, structured_sum_dim_IntList, (, OptDims dim, bool keepdim, OptType dtype), (, dim, keepdim, dtype),
          reduce_into(self, mask_of(self, dim), keepdim, out, ReduceOp::Sum, sum_acc(out.scalar_type())))
// ATen's meta function takes an out='s dtype as given; CPU's kernel (a sum divided in place) then refuses a mean
// of floats written to an integer out=, and so do we, rather than truncate.
REDUCE_OP(mean_dim, structured_mean_dim, (, OptDims dim, bool keepdim, OptType dtype), (, dim, keepdim, dtype),
          check_out_dtype(self.scalar_type(), out, "mean");
          reduce_into(self, mask_of(self, dim), keepdim, out, ReduceOp::Mean, accumulate_dtype(out.scalar_type())))
REDUCE_OP(prod_dim, structured_prod_dim_int, (, int64_t dim, bool keepdim, OptType dtype), (, dim, keepdim, dtype),
          reduce_into(self, mask_of_dim(self, dim), keepdim, out, ReduceOp::Prod, sum_acc(out.scalar_type())))
REDUCE_OP(amax, structured_amax, (, at::IntArrayRef dim, bool keepdim), (, dim, keepdim),
          reduce_into(self, mask_of(self, dim), keepdim, out, ReduceOp::Max, accumulate_dtype(self.scalar_type())))
REDUCE_OP(amin, structured_amin, (, at::IntArrayRef dim, bool keepdim), (, dim, keepdim),
          reduce_into(self, mask_of(self, dim), keepdim, out, ReduceOp::Min, accumulate_dtype(self.scalar_type())))
REDUCE_OP(argmax, structured_argmax, (, std::optional<int64_t> dim, bool keepdim), (, dim, keepdim),
          arg_reduce_into(self, dim ? mask_of_dim(self, *dim) : mask_of(self, std::nullopt), dim && keepdim,
                          Tensor(), out, true))
REDUCE_OP(argmin, structured_argmin, (, std::optional<int64_t> dim, bool keepdim), (, dim, keepdim),
          arg_reduce_into(self, dim ? mask_of_dim(self, *dim) : mask_of(self, std::nullopt), dim && keepdim,
                          Tensor(), out, false))
REDUCE_OP(any_dims, structured_any_dims, (, OptDims dim, bool keepdim), (, dim, keepdim),
          reduce_into(self, mask_of(self, dim), keepdim, out, ReduceOp::Any, accumulate_dtype(self.scalar_type())))
REDUCE_OP(any_dim, structured_any_dim, (, int64_t dim, bool keepdim), (, dim, keepdim),
          reduce_into(self, mask_of_dim(self, dim), keepdim, out, ReduceOp::Any,
                      accumulate_dtype(self.scalar_type())))
REDUCE_OP(any_all, structured_any, (), (),
          reduce_into(self, mask_of(self, std::nullopt), false, out, ReduceOp::Any,
                      accumulate_dtype(self.scalar_type())))
REDUCE_OP(all_dims, structured_all_dims, (, OptDims dim, bool keepdim), (, dim, keepdim),
          reduce_into(self, mask_of(self, dim), keepdim, out, ReduceOp::All, accumulate_dtype(self.scalar_type())))
REDUCE_OP(all_dim, structured_all_dim, (, int64_t dim, bool keepdim), (, dim, keepdim),
          reduce_into(self, mask_of_dim(self, dim), keepdim, out, ReduceOp::All,
                      accumulate_dtype(self.scalar_type())))
REDUCE_OP(all_all, structured_all, (), (),
          reduce_into(self, mask_of(self, std::nullopt), false, out, ReduceOp::All,
                      accumulate_dtype(self.scalar_type())))

// ---- norms ----

void vector_norm_into(const Tensor& self, double ord, ReduceMask mask, bool keepdim, const Tensor& out) {
  ReduceOp op = ReduceOp::NormP;
  if (ord == 0) op = ReduceOp::Norm0;
  else if (ord == 1) op = ReduceOp::Norm1;
  else if (ord == 2) op = ReduceOp::Norm2;
  else if (ord == INFINITY) op = ReduceOp::NormInf;
  else if (ord == -INFINITY) op = ReduceOp::NormNegInf;
  reduce_into(self, mask, keepdim, out, op, accumulate_dtype(out.scalar_type()), ord);
}

double ord_of(const std::optional<at::Scalar>& p) { return p.has_value() ? p->toDouble() : 2.0; }

at::OptionalScalarRef ref_of(const std::optional<at::Scalar>& p) {
  return p.has_value() ? at::OptionalScalarRef(&p.value()) : at::OptionalScalarRef();
}

REDUCE_OP(linalg_vector_norm, structured_linalg_vector_norm,
          (, const at::Scalar& ord, OptDims dim, bool keepdim, OptType dtype), (, ord, dim, keepdim, dtype),
          vector_norm_into(self, ord.toDouble(), mask_of(self, dim), keepdim, out))
REDUCE_OP(norm_dim, structured_norm_ScalarOpt_dim,
          (, const std::optional<at::Scalar>& p, at::IntArrayRef dim, bool keepdim), (, ref_of(p), dim, keepdim),
          vector_norm_into(self, ord_of(p), mask_of(self, dim), keepdim, out))
REDUCE_OP(norm_dim_dtype, structured_norm_ScalarOpt_dim_dtype,
          (, const std::optional<at::Scalar>& p, at::IntArrayRef dim, bool keepdim, c10::ScalarType dtype),
          (, ref_of(p), dim, keepdim, dtype), vector_norm_into(self, ord_of(p), mask_of(self, dim), keepdim, out))

// ---- max/min with dim: values and indices ----

#define MINMAX_DIM(NAME, META, IS_MAX)                                                                     \
  std::tuple<Tensor, Tensor> NAME(const Tensor& self, int64_t dim, bool keepdim) {                          \
    StructuredFunctional<at::meta::META, 2> op;                                                             \
    op.meta(self, dim, keepdim);                                                                            \
    arg_reduce_into(self, mask_of_dim(self, dim), keepdim, op.maybe_get_output(0), op.maybe_get_output(1), \
                    IS_MAX);                                                                                \
    return {op.take(0), op.take(1)};                                                                        \
  }                                                                                                         \
  std::tuple<Tensor&, Tensor&> NAME##_out(const Tensor& self, int64_t dim, bool keepdim, Tensor& values,    \
                                          Tensor& indices) {                                                \
    StructuredOut<at::meta::META, 2> op(values, indices);                                                   \
    op.meta(self, dim, keepdim);                                                                            \
    arg_reduce_into(self, mask_of_dim(self, dim), keepdim, op.maybe_get_output(0), op.maybe_get_output(1), \
                    IS_MAX);                                                                                \
    op.finish();                                                                                            \
    return {values, indices};                                                                               \
  }
MINMAX_DIM(max_dim, structured_max_dim, true)
MINMAX_DIM(min_dim, structured_min_dim, false)

// ---- full reductions that are not structured ----

Tensor& minmax_all_out(const Tensor& self, Tensor& out, bool is_max) {
  const char* name = is_max ? "max" : "min";
  TORCH_CHECK(self.numel() > 0, name, "(): Expected reduction dim to be specified for input.numel() == 0. ",
              "Specify the reduction dim with the 'dim' argument.");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ", self.scalar_type(),
              ", but got ", out.scalar_type(), " instead");
  at::native::resize_output(out, {});
  reduce_into(self, mask_of(self, std::nullopt), false, out, is_max ? ReduceOp::Max : ReduceOp::Min,
              accumulate_dtype(self.scalar_type()));
  return out;
}
Tensor max_all(const Tensor& self) {
  Tensor out = at::empty({}, self.options());
  return minmax_all_out(self, out, true);
}
Tensor min_all(const Tensor& self) {
  Tensor out = at::empty({}, self.options());
  return minmax_all_out(self, out, false);
}
Tensor& max_all_out(const Tensor& self, Tensor& out) { return minmax_all_out(self, out, true); }
Tensor& min_all_out(const Tensor& self, Tensor& out) { return minmax_all_out(self, out, false); }

Tensor prod_all(const Tensor& self, OptType dtype) {
  const auto type = at::native::get_dtype_from_self(self, dtype, /*promote_integers=*/true);
  Tensor out = at::empty({}, self.options().dtype(type));
  reduce_into(self, mask_of(self, std::nullopt), false, out, ReduceOp::Prod, sum_acc(type));
  return out;
}

// ---- nansum (nanmean is composite over it), aminmax ----

// As CPU: integers sum as sum does; float types skip NaNs, accumulating as sum.
Tensor& nansum_out(const Tensor& self, OptDims dim, bool keepdim, OptType dtype, Tensor& result) {
  TORCH_CHECK(!at::isComplexType(self.scalar_type()), "nansum does not support complex inputs");
  if (at::isIntegralType(self.scalar_type(), /*includeBool=*/true)) return at::sum_out(result, self, dim, keepdim, dtype);
  const auto type = dtype.value_or(result.scalar_type());
  TORCH_CHECK(result.scalar_type() == type, "nansum: provided dtype must match dtype of result. Got ",
              result.scalar_type(), " and ", type, ".");
  // CPU's and CUDA's nansum kernels exist for float types only: floats are not summed into an integer.
  check_out_dtype(self.scalar_type(), result, "nansum");
  const auto mask = mask_of(self, dim);
  at::native::resize_output(result, at::native::shape_from_dim_mask(self, mask, keepdim));
  reduce_into(self, mask, keepdim, result, ReduceOp::NanSum, sum_acc(type));
  return result;
}
Tensor nansum(const Tensor& self, OptDims dim, bool keepdim, OptType dtype) {
  const auto type = at::native::get_dtype_from_self(self, dtype, /*promote_integers=*/true);
  Tensor result = at::empty({0}, self.options().dtype(type));
  return nansum_out(self, dim, keepdim, type, result);
}

// The meta function checks shapes (no empty reduced dim) and sizes both outputs.
void aminmax_into(const Tensor& self, std::optional<int64_t> dim, bool keepdim, const Tensor& min, const Tensor& max) {
  const auto mask = dim ? mask_of_dim(self, *dim) : mask_of(self, std::nullopt);
  const bool keep = keepdim && self.dim() > 0;
  const auto acc = accumulate_dtype(self.scalar_type());
  reduce_into(self, mask, keep, min, ReduceOp::Min, acc);
  reduce_into(self, mask, keep, max, ReduceOp::Max, acc);
}
std::tuple<Tensor, Tensor> aminmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  StructuredFunctional<at::meta::structured_aminmax, 2> op;
  op.meta(self, dim, keepdim);
  aminmax_into(self, dim, keepdim, op.maybe_get_output(0), op.maybe_get_output(1));
  return {op.take(0), op.take(1)};
}
std::tuple<Tensor&, Tensor&> aminmax_out(const Tensor& self, std::optional<int64_t> dim, bool keepdim, Tensor& min,
                                         Tensor& max) {
  StructuredOut<at::meta::structured_aminmax, 2> op(min, max);
  op.meta(self, dim, keepdim);
  aminmax_into(self, dim, keepdim, op.maybe_get_output(0), op.maybe_get_output(1));
  op.finish();
  return {min, max};
}

// ---- variance and standard deviation (two passes: mean, then squared deviations) ----

// CPU's checks of std/var's input, made before the dims are looked at (CPU's order of errors).
void check_var_input(const Tensor& self, const char* name) {
  TORCH_CHECK(self.layout() == at::Layout::Strided, name, " only supports strided layout, got: ", self.layout());
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), name, " only support floating point and complex dtypes");
}

double correction_of(const std::optional<at::Scalar>& c) { return c.has_value() ? c->toDouble() : 1.0; }

Tensor& var_std_out(const Tensor& self, OptDims dim, const std::optional<at::Scalar>& correction, bool keepdim,
                    Tensor& out, bool is_std) {
  check_var_input(self, "std and var");
  const auto mask = mask_of(self, dim);
  const auto shape = at::native::shape_from_dim_mask(self, mask, keepdim);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ", self.scalar_type(),
              ", but got ", out.scalar_type(), " instead");
  at::native::resize_output(out, shape);
  reduce_into(self, mask, keepdim, out, is_std ? ReduceOp::Std : ReduceOp::Var,
              accumulate_dtype(self.scalar_type()), correction_of(correction));
  return out;
}

Tensor var_correction(const Tensor& self, OptDims dim, const std::optional<at::Scalar>& correction, bool keepdim) {
  Tensor out = at::empty({0}, self.options());
  return var_std_out(self, dim, correction, keepdim, out, false);
}
Tensor std_correction(const Tensor& self, OptDims dim, const std::optional<at::Scalar>& correction, bool keepdim) {
  Tensor out = at::empty({0}, self.options());
  return var_std_out(self, dim, correction, keepdim, out, true);
}
Tensor& var_correction_out(const Tensor& self, OptDims dim, const std::optional<at::Scalar>& correction,
                           bool keepdim, Tensor& out) {
  return var_std_out(self, dim, correction, keepdim, out, false);
}
Tensor& std_correction_out(const Tensor& self, OptDims dim, const std::optional<at::Scalar>& correction,
                           bool keepdim, Tensor& out) {
  return var_std_out(self, dim, correction, keepdim, out, true);
}

std::tuple<Tensor, Tensor> var_std_mean(const Tensor& self, OptDims dim, const std::optional<at::Scalar>& correction,
                                        bool keepdim, bool is_std) {
  check_var_input(self, is_std ? "std_mean" : "var_mean");
  const auto mask = mask_of(self, dim);
  const auto shape = at::native::shape_from_dim_mask(self, mask, keepdim);
  Tensor spread = at::empty(shape, self.options());
  Tensor mean = at::empty(shape, self.options());
  const auto acc = accumulate_dtype(self.scalar_type());
  reduce_into(self, mask, keepdim, spread, is_std ? ReduceOp::Std : ReduceOp::Var, acc, correction_of(correction));
  reduce_into(self, mask, keepdim, mean, ReduceOp::Mean, acc);
  return {spread, mean};
}
std::tuple<Tensor, Tensor> var_mean_correction(const Tensor& self, OptDims dim,
                                               const std::optional<at::Scalar>& correction, bool keepdim) {
  return var_std_mean(self, dim, correction, keepdim, false);
}
std::tuple<Tensor, Tensor> std_mean_correction(const Tensor& self, OptDims dim,
                                               const std::optional<at::Scalar>& correction, bool keepdim) {
  return var_std_mean(self, dim, correction, keepdim, true);
}

// ---- logsumexp: max, then log of the sum of exp(x - max), plus max ----

Tensor& logsumexp_out(const Tensor& self, at::IntArrayRef dim, bool keepdim, Tensor& out) {
  TORCH_CHECK(!at::isComplexType(self.scalar_type()), "logsumexp(): Expected floating point type. Got ",
              self.scalar_type());
  const auto mask = mask_of(self, dim);
  // Integers are promoted to the default float dtype, as CPU does.
  const auto type = at::isIntegralType(self.scalar_type(), true) ? at::typeMetaToScalarType(at::get_default_dtype())
                                                                 : self.scalar_type();
  TORCH_CHECK(out.scalar_type() == type, "Expected out tensor to have dtype ", type, ", but got ",
              out.scalar_type(), " instead");
  at::native::resize_output(out, at::native::shape_from_dim_mask(self, mask, keepdim));
  const Tensor input = self.scalar_type() == type ? self : self.to(type);
  reduce_into(input, mask, keepdim, out, ReduceOp::LogSumExp, accumulate_dtype(type));
  return out;
}
Tensor logsumexp(const Tensor& self, at::IntArrayRef dim, bool keepdim) {
  const auto type = at::isIntegralType(self.scalar_type(), true) ? at::typeMetaToScalarType(at::get_default_dtype())
                                                                 : self.scalar_type();
  Tensor out = at::empty({0}, self.options().dtype(type));
  return logsumexp_out(self, dim, keepdim, out);
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("sum.dim_IntList", TORCH_FN(sum_dim));
  m.impl("sum.IntList_out", TORCH_FN(sum_dim_out));
  m.impl("mean.dim", TORCH_FN(mean_dim));
  m.impl("mean.out", TORCH_FN(mean_dim_out));
  m.impl("prod", TORCH_FN(prod_all));
  m.impl("prod.dim_int", TORCH_FN(prod_dim));
  m.impl("prod.int_out", TORCH_FN(prod_dim_out));
  m.impl("amax", TORCH_FN(amax));
  m.impl("amax.out", TORCH_FN(amax_out));
  m.impl("amin", TORCH_FN(amin));
  m.impl("amin.out", TORCH_FN(amin_out));
  m.impl("max", TORCH_FN(max_all));
  m.impl("max.unary_out", TORCH_FN(max_all_out));
  m.impl("min", TORCH_FN(min_all));
  m.impl("min.unary_out", TORCH_FN(min_all_out));
  m.impl("max.dim", TORCH_FN(max_dim));
  m.impl("max.dim_max", TORCH_FN(max_dim_out));
  m.impl("min.dim", TORCH_FN(min_dim));
  m.impl("min.dim_min", TORCH_FN(min_dim_out));
  m.impl("argmax", TORCH_FN(argmax));
  m.impl("argmax.out", TORCH_FN(argmax_out));
  m.impl("argmin", TORCH_FN(argmin));
  m.impl("argmin.out", TORCH_FN(argmin_out));
  m.impl("any.dims", TORCH_FN(any_dims));
  m.impl("any.dims_out", TORCH_FN(any_dims_out));
  m.impl("any.dim", TORCH_FN(any_dim));
  m.impl("any.out", TORCH_FN(any_dim_out));
  m.impl("any", TORCH_FN(any_all));
  m.impl("any.all_out", TORCH_FN(any_all_out));
  m.impl("all.dims", TORCH_FN(all_dims));
  m.impl("all.dims_out", TORCH_FN(all_dims_out));
  m.impl("all.dim", TORCH_FN(all_dim));
  m.impl("all.out", TORCH_FN(all_dim_out));
  m.impl("all", TORCH_FN(all_all));
  m.impl("all.all_out", TORCH_FN(all_all_out));
  m.impl("linalg_vector_norm", TORCH_FN(linalg_vector_norm));
  m.impl("linalg_vector_norm.out", TORCH_FN(linalg_vector_norm_out));
  m.impl("norm.ScalarOpt_dim", TORCH_FN(norm_dim));
  m.impl("norm.out", TORCH_FN(norm_dim_out));
  m.impl("norm.ScalarOpt_dim_dtype", TORCH_FN(norm_dim_dtype));
  m.impl("norm.dtype_out", TORCH_FN(norm_dim_dtype_out));
  m.impl("var.correction", TORCH_FN(var_correction));
  m.impl("var.correction_out", TORCH_FN(var_correction_out));
  m.impl("std.correction", TORCH_FN(std_correction));
  m.impl("std.correction_out", TORCH_FN(std_correction_out));
  m.impl("var_mean.correction", TORCH_FN(var_mean_correction));
  m.impl("std_mean.correction", TORCH_FN(std_mean_correction));
  m.impl("logsumexp", TORCH_FN(logsumexp));
  m.impl("logsumexp.out", TORCH_FN(logsumexp_out));
  m.impl("nansum", TORCH_FN(nansum));
  m.impl("nansum.out", TORCH_FN(nansum_out));
  m.impl("aminmax", TORCH_FN(aminmax));
  m.impl("aminmax.out", TORCH_FN(aminmax_out));
}

}  // namespace torch_opencl
