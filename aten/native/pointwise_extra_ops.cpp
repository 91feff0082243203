// Pointwise operators that are not structured in ATen: the iterator is built
// here as CPU builds it (TensorIterator / TensorIteratorConfig), the kernel is
// one expression for the pointwise engine. Some are thin wrappers over native
// ops, as CPU defines them (relu is clamp_min, hardtanh is clamp, isnan is ne).
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/MetaFunctions.h>
#include <ATen/ScalarOps.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <limits>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/native/pointwise.h"
#include "aten/kernel_support/structured.h"

namespace torch_opencl {
namespace {

at::Tensor& abs_out(const at::Tensor& self, at::Tensor& out) {
  auto iter = at::TensorIterator::unary_op(out, self);
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBool, "\"abs\" is not implemented for 'Bool' (as on CPU)");
  run_pointwise(iter, {"abs", "fabs(a)", "(C_T)abs(a)"});
  return out;
}

// ---- angle of real tensors (complex ones go to the CPU fallback) and frexp, as CPU's UnaryOps.cpp: angle is 0, or
// pi below zero, NaN kept, in the default float dtype for integers; frexp's mantissa keeps self's dtype and its
// exponent is int32.

void run_angle(at::TensorIteratorBase& iter) {
  run_pointwise(iter, {"angle", "isnan(a) ? a : (a < (C_T)0 ? (C_T)M_PI : (C_T)0)", nullptr});
}

at::Tensor& angle_out(const at::Tensor& self, at::Tensor& out) {
  if (self.is_complex()) throw_dtype_not_native("angle of a complex tensor");
  auto iter = at::TensorIterator::unary_float_op(out, self);
  run_angle(iter);
  return out;
}

at::Tensor angle(const at::Tensor& self) {
  if (self.is_complex()) throw_dtype_not_native("angle of a complex tensor");
  at::Tensor out;
  auto iter = at::TensorIterator::unary_float_op(out, self);
  run_angle(iter);
  return iter.output();
}

std::tuple<at::Tensor&, at::Tensor&> frexp_out(const at::Tensor& self, at::Tensor& mantissa, at::Tensor& exponent) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "torch.frexp() only supports floating-point dtypes");
  TORCH_CHECK(mantissa.dtype() == self.dtype(), "torch.frexp() expects mantissa to have dtype ", self.dtype(),
              " but got ", mantissa.dtype());
  TORCH_CHECK(exponent.dtype() == at::kInt, "torch.frexp() expects exponent to have int dtype but got ",
              exponent.dtype());
  // CPU's two-output iterator resizes both outputs and checks their overlap; the engine writes one output a launch.
  at::TensorIteratorConfig()
      .add_output(mantissa)
      .add_output(exponent)
      .add_const_input(self)
      .check_all_same_dtype(false)
      .set_check_mem_overlap(true)
      .build();
  auto launch = [&](at::Tensor& out, const PointwiseExpr& expr) {
    auto iter = at::TensorIteratorConfig().add_output(out).add_const_input(self).check_all_same_dtype(false).build();
    run_pointwise(iter, expr, {}, compute_dtype(self.scalar_type()));
  };
  // The exponent first: the mantissa may be self (frexp(x, out=(x, e))).
  launch(exponent, {"frexp_exponent", "frexp_exponent_of(a)", nullptr});
  launch(mantissa, {"frexp_mantissa", "frexp_mantissa_of(a)", nullptr});
  return {mantissa, exponent};
}

// ---- where and masked_fill

c10::Device operand_device(std::initializer_list<const at::Tensor*> ts) {
  for (const auto* t : ts)
    if (!t->device().is_cpu()) return t->device();
  return (*ts.begin())->device();
}

at::Tensor& where_out(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  const auto result_type = at::native::result_type(self, other);
  TORCH_CHECK(out.scalar_type() == result_type, "Expected out type to be ", result_type, " but got ",
              out.scalar_type());
  at::Tensor cond = condition;
  if (cond.scalar_type() == c10::kByte) {
    TORCH_WARN_ONCE("where received a uint8 condition tensor. This behavior is deprecated and will be removed in a "
                    "future version of PyTorch. Use a boolean condition instead.");
  } else {
    TORCH_CHECK(cond.scalar_type() == c10::kBool,
                "where expected condition to be a boolean tensor, but got a tensor with dtype ", cond.scalar_type());
  }
  const auto device = out.device();
  // 0-d CPU operands other than wrapped numbers (which the engine takes as scalars) move to the device.
  auto to_device = [&](const at::Tensor& t) {
    return (t.device() != device && t.dim() == 0 && !t.unsafeGetTensorImpl()->is_wrapped_number()) ? t.to(device) : t;
  };
  cond = to_device(cond);
  const at::Tensor a = to_device(self.scalar_type() != result_type ? self.to(result_type) : self);
  const at::Tensor b = to_device(other.scalar_type() != result_type ? other.to(result_type) : other);
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .add_output(out)
                  .add_const_input(cond)
                  .add_const_input(a)
                  .add_const_input(b)
                  .build();
  run_pointwise(iter, {"where", "a != (C_T)0 ? b : c", "a != (C_T)0 ? b : c"}, {}, compute_dtype(result_type));
  return out;
}

at::Tensor where(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
  const auto result_type = at::native::result_type(self, other);
  at::Tensor out = at::empty({0}, self.options().dtype(result_type).device(operand_device({&condition, &self, &other})));
  return where_out(condition, self, other, out);
}

// self = mask ? value : self, where `value` is a host scalar or a 0-d device tensor.
at::Tensor& masked_fill_impl(at::Tensor& self, const at::Tensor& mask, const c10::Scalar* value,
                             const at::Tensor* value_tensor) {
  TORCH_CHECK(mask.dtype() == at::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.dtype());
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN("Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before performing "
               "this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar");
  }
  at::assert_no_partial_overlap(self, mask);
  at::TensorIteratorConfig config;
  config.set_check_mem_overlap(false)
      .check_all_same_dtype(false)
      .resize_outputs(false)
      .add_output(self)
      .add_const_input(self)
      .add_const_input(mask);
  if (value_tensor) config.add_const_input(*value_tensor);
  auto iter = config.build();
  const auto compute = compute_dtype(self.scalar_type());
  if (value_tensor)
    run_pointwise(iter, {"masked_fill_tensor", "b != (C_T)0 ? c : a", "b != (C_T)0 ? c : a"}, {}, compute);
  else
    run_pointwise(iter, {"masked_fill", "b != (C_T)0 ? s0 : a", "b != (C_T)0 ? s0 : a"},
                  {stored_scalar(*value, self.scalar_type())}, compute);
  return self;
}

at::Tensor& masked_fill_scalar_(at::Tensor& self, const at::Tensor& mask, const c10::Scalar& value) {
  return masked_fill_impl(self, mask, &value, nullptr);
}

at::Tensor& masked_fill_tensor_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  if (value.device().is_cpu()) {
    const c10::Scalar v = value.item();
    return masked_fill_impl(self, mask, &v, nullptr);
  }
  TORCH_CHECK(value.device() == self.device(), "masked_fill_: the value tensor is on ", value.device(),
              " but self is on ", self.device());
  return masked_fill_impl(self, mask, nullptr, &value);  // no host sync for a device value
}

// ---- NaN and infinity

at::Tensor isnan(const at::Tensor& self) { return self.ne(self); }

at::Tensor& nan_to_num_out(const at::Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                           std::optional<double> neginf, at::Tensor& out) {
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "nan_to_num: dtype of out: ", out.scalar_type(),
              " should be same as input: ", self.scalar_type());
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/true)) {
    at::native::resize_output(out, self.sizes());
    out.copy_(self);
    return out;
  }
  double max = 0;
  switch (self.scalar_type()) {
    case c10::kFloat: max = std::numeric_limits<float>::max(); break;
    case c10::kDouble: max = std::numeric_limits<double>::max(); break;
    case c10::kHalf: max = 65504.0; break;
    case c10::kBFloat16: max = 3.3895313892515355e38; break;
    default: TORCH_CHECK(false, "nan_to_num is not implemented for ", self.scalar_type(), " on opencl");
  }
  // CPU casts the replacements to the dtype unchecked (nan=1e300 gives inf in float32).
  const auto cast = [&](double v) { return cast_to_dtype(v, self.scalar_type()); };
  auto iter = at::TensorIterator::unary_op(out, self);
  run_pointwise(iter, {"nan_to_num", "nan_to_num_of(a, s0, s1, s2)", nullptr},
                {cast(nan.value_or(0.)), cast(posinf.value_or(max)), cast(neginf.value_or(-max))});
  return out;
}

// ---- logical

#define LOGICAL_BINARY(name, expr)                                                                   \
  at::Tensor& name##_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {         \
    auto iter = at::TensorIterator::comparison_op(out, self, other);                                 \
    run_pointwise(iter, {#name, expr, expr});                                                        \
    return out;                                                                                      \
  }
LOGICAL_BINARY(logical_and, "(a != (C_T)0) && (b != (C_T)0)")
LOGICAL_BINARY(logical_or, "(a != (C_T)0) || (b != (C_T)0)")
LOGICAL_BINARY(logical_xor, "(a != (C_T)0) != (b != (C_T)0)")
#undef LOGICAL_BINARY

at::Tensor& logical_not_out(const at::Tensor& self, at::Tensor& out) {
  auto iter = at::TensorIteratorConfig().check_all_same_dtype(false).add_output(out).add_const_input(self).build();
  run_pointwise(iter, {"logical_not", "a == (C_T)0", "a == (C_T)0"}, {}, compute_dtype(self.scalar_type()));
  return out;
}

// ---- pow with a scalar base, remainder with a scalar dividend

at::Tensor& pow_scalar_base_out(const c10::Scalar& base, const at::Tensor& exponent, at::Tensor& out) {
  const auto type = at::result_type(base, exponent);
  TORCH_CHECK_NOT_IMPLEMENTED(type != at::kBool, "\"pow\" not implemented for 'Bool'");
  const at::Tensor exp = exponent.to(type);
  // CPU computes pow(wrapped_scalar_tensor(base), exponent), whose base is cast, not checked: 300 ** a uint8
  // tensor raises 44 to the powers.
  const c10::Scalar cast_base = c10::scalar_to_tensor(base).to(type).item();
  auto iter = at::TensorIterator::unary_op(out, exp);
  run_pointwise(iter, {"pow_scalar_base", "pow_of(s0, a)", "pow_of(s0, a)"}, {cast_base});
  return out;
}

at::Tensor pow_scalar_base(const c10::Scalar& base, const at::Tensor& exponent) {
  at::Tensor out = at::empty({0}, exponent.options().dtype(at::result_type(base, exponent)));
  return pow_scalar_base_out(base, exponent, out);
}

at::Tensor remainder_scalar_tensor(const c10::Scalar& self, const at::Tensor& other) {
  at::Tensor wrapped = c10::scalar_to_tensor(self);
  wrapped.unsafeGetTensorImpl()->set_wrapped_number(true);
  return at::remainder(wrapped, other);
}

// ---- Python operator spellings and aliases, as CPU defines them

at::Tensor lshift_tensor(const at::Tensor& self, const at::Tensor& other) { return at::bitwise_left_shift(self, other); }
at::Tensor lshift_scalar(const at::Tensor& self, const c10::Scalar& other) { return at::bitwise_left_shift(self, other); }
at::Tensor& ilshift_tensor(at::Tensor& self, const at::Tensor& other) { return self.bitwise_left_shift_(other); }
at::Tensor& ilshift_scalar(at::Tensor& self, const c10::Scalar& other) { return self.bitwise_left_shift_(other); }
at::Tensor rshift_tensor(const at::Tensor& self, const at::Tensor& other) { return at::bitwise_right_shift(self, other); }
at::Tensor rshift_scalar(const at::Tensor& self, const c10::Scalar& other) { return at::bitwise_right_shift(self, other); }
at::Tensor& irshift_tensor(at::Tensor& self, const at::Tensor& other) { return self.bitwise_right_shift_(other); }
at::Tensor& irshift_scalar(at::Tensor& self, const c10::Scalar& other) { return self.bitwise_right_shift_(other); }

// floor_divide is div with rounding_mode="floor" (same iterator: no promotion of integers to float).
at::Tensor floor_divide(const at::Tensor& self, const at::Tensor& other) { return at::div(self, other, "floor"); }
at::Tensor& floor_divide_(at::Tensor& self, const at::Tensor& other) { return self.div_(other, "floor"); }
at::Tensor& floor_divide_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  return at::div_out(out, self, other, "floor");
}

at::Tensor rsub(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  return at::sub(other, self, alpha);
}

// logit: without eps (or eps < 0) log(x / (1 - x)); with eps the input is clamped to [eps, 1 - eps]
// first, NaN passing through, as on CPU.
void run_logit(at::TensorIteratorBase& iter, std::optional<double> eps) {
  if (eps && *eps >= 0) {
    stored_scalar(*eps, iter.common_dtype());
    run_pointwise(iter,
                  {"logit_eps",
                   "log((a < s0 ? s0 : (a > s1 ? s1 : a)) / ((C_T)1 - (a < s0 ? s0 : (a > s1 ? s1 : a))))", nullptr},
                  {*eps, 1.0 - *eps});
  } else {
    run_pointwise(iter, {"logit", "log(a / ((C_T)1 - a))", nullptr});
  }
}
at::Tensor& logit_out(const at::Tensor& self, std::optional<double> eps, at::Tensor& out) {
  auto iter = at::TensorIterator::unary_float_op(out, self);
  run_logit(iter, eps);
  return out;
}
at::Tensor logit(const at::Tensor& self, std::optional<double> eps) {
  at::Tensor out;
  auto iter = at::TensorIterator::unary_float_op(out, self);
  run_logit(iter, eps);
  return iter.output();
}
at::Tensor& logit_(at::Tensor& self, std::optional<double> eps) { return logit_out(self, eps, self); }

// torch.equal: same sizes and equal elements (NaN never equals), as CPU's cpu_equal.
bool equal(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different devices. Got: ",
              self.device(), " and ", other.device());
  if (!self.is_same_size(other)) return false;
  if (self.numel() == 0) return true;
  // The same elements in the same layout are equal unless a floating element is NaN.
  if (self.is_alias_of(other) && self.storage_offset() == other.storage_offset() && self.dtype() == other.dtype() &&
      self.strides().equals(other.strides()) && self.is_neg() == other.is_neg() && self.is_conj() == other.is_conj() &&
      c10::isIntegralType(self.scalar_type(), /*includeBool=*/true))
    return true;
  return at::eq(self, other).all().item<bool>();
}

// ---- activations

at::Tensor& hardtanh_out(const at::Tensor& self, const c10::Scalar& min, const c10::Scalar& max, at::Tensor& out) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Bool inputs not supported for hardtanh");
  if (at::isIntegralType(self.scalar_type(), /*includeBool=*/false)) {
    const int64_t lo = min.toLong(), hi = max.toLong();
    TORCH_CHECK(self.dtype() != at::kByte || (lo >= 0 && hi >= 0),
                "cannot do hardtanh on an unsigned type with negative limits");
    return at::clamp_out(out, self, c10::Scalar(lo), c10::Scalar(hi));
  }
  return at::clamp_out(out, self, min, max);
}
at::Tensor hardtanh(const at::Tensor& self, const c10::Scalar& min, const c10::Scalar& max) {
  at::Tensor out = at::empty_like(self);
  return hardtanh_out(self, min, max, out);
}
at::Tensor& hardtanh_(at::Tensor& self, const c10::Scalar& min, const c10::Scalar& max) {
  return hardtanh_out(self, min, max, self);
}

at::Tensor& hardtanh_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const c10::Scalar& min,
                                  const c10::Scalar& max, at::Tensor& grad_input) {
  auto iter = at::TensorIterator::borrowing_binary_op(grad_input, grad_output, self);
  run_pointwise(iter, {"hardtanh_backward", "(b <= s0 || b >= s1) ? (C_T)0 : a", "(b <= s0 || b >= s1) ? (C_T)0 : a"},
                {min, max});
  return grad_input;
}
at::Tensor hardtanh_backward(const at::Tensor& grad_output, const at::Tensor& self, const c10::Scalar& min,
                             const c10::Scalar& max) {
  at::Tensor grad_input;
  auto iter = at::TensorIterator::borrowing_binary_op(grad_input, grad_output, self);
  run_pointwise(iter, {"hardtanh_backward", "(b <= s0 || b >= s1) ? (C_T)0 : a", "(b <= s0 || b >= s1) ? (C_T)0 : a"},
                {min, max});
  return iter.output();
}

constexpr PointwiseExpr kHardswish{"hardswish", "a * fmin(fmax(a + (C_T)3, (C_T)0), (C_T)6) / (C_T)6", nullptr};
at::Tensor hardswish(const at::Tensor& self) {
  at::Tensor out;
  auto iter = at::TensorIterator::unary_op(out, self);
  run_pointwise(iter, kHardswish);
  return iter.output();
}
at::Tensor& hardswish_out(const at::Tensor& self, at::Tensor& out) {
  auto iter = at::TensorIterator::unary_op(out, self);
  run_pointwise(iter, kHardswish);
  return out;
}
at::Tensor& hardswish_(at::Tensor& self) {
  auto iter = at::TensorIterator::unary_op(self, self);
  run_pointwise(iter, kHardswish);
  return self;
}
at::Tensor hardswish_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  at::Tensor grad_input;
  auto iter = at::TensorIterator::borrowing_binary_op(grad_input, grad_output, self);
  run_pointwise(iter, {"hardswish_backward",
                       "b <= (C_T)-3 ? (C_T)0 : (b < (C_T)3 ? a * (b / (C_T)3 + (C_T)0.5) : a)", nullptr});
  return iter.output();
}

// log_sigmoid as CPU computes it: buffer = exp(-|x|), output = min(x, 0) - log1p(buffer); the
// backward reads the buffer. Contiguous outputs, as CPU's.
std::tuple<at::Tensor&, at::Tensor&> log_sigmoid_forward_out(const at::Tensor& self, at::Tensor& output,
                                                             at::Tensor& buffer) {
  output.resize_as_(self);
  buffer.resize_as_(self, at::MemoryFormat::Contiguous);
  TORCH_CHECK(buffer.is_contiguous(), "Contiguous buffer required for log_sigmoid with out parameter");
  const at::Tensor input = self.contiguous();
  at::Tensor result = output.is_contiguous() ? output : at::empty_like(output, at::MemoryFormat::Contiguous);
  auto buffer_iter = at::TensorIteratorConfig().add_output(buffer).add_const_input(input).build();
  run_pointwise(buffer_iter, {"log_sigmoid_buffer", "exp(-fabs(a))", nullptr});
  auto iter = at::TensorIteratorConfig().add_output(result).add_const_input(input).add_const_input(buffer).build();
  run_pointwise(iter, {"log_sigmoid_forward", "fmin(a, (C_T)0) - log1p(b)", nullptr});
  if (!result.is_same(output)) output.copy_(result);
  return {output, buffer};
}
std::tuple<at::Tensor, at::Tensor> log_sigmoid_forward(const at::Tensor& self) {
  at::Tensor output = at::empty_like(self, at::MemoryFormat::Contiguous);
  at::Tensor buffer = at::empty_like(self, at::MemoryFormat::Contiguous);
  log_sigmoid_forward_out(self, output, buffer);
  return {output, buffer};
}

constexpr PointwiseExpr kLogSigmoidBackward{
    "log_sigmoid_backward", "(a < (C_T)0 ? (C_T)1 - b / ((C_T)1 + b) : b / ((C_T)1 + b)) * c", nullptr};
at::Tensor& log_sigmoid_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& buffer,
                                     at::Tensor& grad_input) {
  auto iter = at::TensorIteratorConfig()
                  .add_output(grad_input)
                  .add_const_input(self)
                  .add_const_input(buffer)
                  .add_const_input(grad_output)
                  .build();
  run_pointwise(iter, kLogSigmoidBackward);
  return grad_input;
}
at::Tensor log_sigmoid_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& buffer) {
  at::Tensor grad_input = at::empty_like(grad_output);
  return log_sigmoid_backward_out(grad_output, self, buffer, grad_input);
}

at::Tensor relu(const at::Tensor& self) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Boolean inputs not supported for relu");
  return at::clamp_min(self, 0);
}
at::Tensor& relu_(at::Tensor& self) {
  TORCH_CHECK(self.scalar_type() != at::kBool, "Boolean inputs not supported for relu");
  return at::clamp_min_(self, 0);
}

// ---- polygamma (n first in its schema, so not a pointwise_ops.def line): n = 0 is digamma's program,
// n = 1 trigamma's, larger n the Hurwitz zeta's (kernels_cl/special_functions.cl), as CPU's kernel branches.
void run_polygamma(at::TensorIteratorBase& iter, int64_t n) {
  if (n == 0) return run_pointwise(iter, special_expr("digamma", "digamma_of(a)"));
  if (n == 1) return run_pointwise(iter, special_expr("trigamma", "trigamma_of(a)"));
  run_pointwise(iter, special_expr("polygamma", "polygamma_of(s0, a)"), {c10::Scalar(n)});
}
at::Tensor polygamma(int64_t n, const at::Tensor& self) {
  StructuredFunctional<at::meta::structured_polygamma> op;
  op.meta(n, self);  // n >= 0, a float result
  run_polygamma(op, n);
  return op.take();
}
at::Tensor& polygamma_out(int64_t n, const at::Tensor& self, at::Tensor& out) {
  StructuredOut<at::meta::structured_polygamma> op(out);
  op.meta(n, self);
  run_polygamma(op, n);
  op.finish();
  return out;
}

// ---- glu's gradient, as CPU builds it (GatedLinearUnit.cpp): the first half's gradient is sigmoid(b) * grad,
// the second's (1 - sigmoid(b)) sigmoid(b) a grad, from an iterator over the first half's result.
at::Tensor& glu_backward_out(const at::Tensor& grad_output, const at::Tensor& input, int64_t dim,
                             at::Tensor& grad_input) {
  TORCH_CHECK(input.dim() > 0, "glu does not support 0-dimensional tensors");
  const int64_t wrap_dim = at::maybe_wrap_dim(dim, input.dim());
  const int64_t n = input.size(wrap_dim);
  TORCH_CHECK(n % 2 == 0, "Halving dimension must be even, but dimension ", wrap_dim, " is size ", n);
  grad_input.resize_as_(input);
  const int64_t half = n / 2;
  const at::Tensor first = input.narrow(wrap_dim, 0, half);
  const at::Tensor second = input.narrow(wrap_dim, half, half);
  at::Tensor grad_first = grad_input.narrow(wrap_dim, 0, half);
  at::Tensor grad_second = grad_input.narrow(wrap_dim, half, half);
  at::sigmoid_out(grad_first, second);
  auto iter = at::TensorIteratorConfig()
                  .add_output(grad_second)
                  .add_const_input(grad_first)
                  .add_const_input(first)
                  .add_const_input(grad_output)
                  .build();
  run_pointwise(iter, {"glu_backward", "((C_T)1 - a) * a * b * c", nullptr});
  grad_first.mul_(grad_output);
  return grad_input;
}
at::Tensor glu_backward(const at::Tensor& grad_output, const at::Tensor& input, int64_t dim) {
  at::Tensor grad_input = at::empty({0}, input.options());
  return glu_backward_out(grad_output, input, dim, grad_input);
}

// ---- prelu's kernels (F.prelu reshapes the weight to broadcast and calls these), as CPU's Activation.cpp:
// one iterator over self and the broadcast weight (same dtype); the backward's two outputs have the
// broadcast shape (autograd sums the weight's down to its shape).
at::Tensor prelu_kernel(const at::Tensor& self, const at::Tensor& weight) {
  at::Tensor result = at::empty_like(self);
  auto iter = at::TensorIteratorConfig().add_output(result).add_const_input(self).add_const_input(weight).build();
  run_pointwise(iter, {"prelu", "a > (C_T)0 ? a : b * a", nullptr});
  return result;
}
std::tuple<at::Tensor, at::Tensor> prelu_kernel_backward(const at::Tensor& grad_out, const at::Tensor& self,
                                                         const at::Tensor& weight) {
  at::Tensor grad_self = at::empty({0}, self.options());
  at::Tensor grad_weight = at::empty({0}, weight.options());
  // CPU's two-output iterator decides both outputs' shape and layout (and checks the dtypes); the
  // engine takes one output a launch, so each output then gets its own iterator over the same inputs.
  at::TensorIteratorConfig()
      .add_output(grad_self)
      .add_output(grad_weight)
      .add_const_input(self)
      .add_const_input(weight)
      .add_const_input(grad_out)
      .build();
  auto launch = [&](at::Tensor& out, const PointwiseExpr& expr) {
    auto iter = at::TensorIteratorConfig()
                    .add_output(out)
                    .add_const_input(self)
                    .add_const_input(weight)
                    .add_const_input(grad_out)
                    .build();
    run_pointwise(iter, expr);
  };
  launch(grad_self, {"prelu_backward_self", "a > (C_T)0 ? c : b * c", nullptr});
  launch(grad_weight, {"prelu_backward_weight", "a > (C_T)0 ? (C_T)0 : a * c", nullptr});
  return {grad_self, grad_weight};
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("abs.out", TORCH_FN(abs_out));
  m.impl("angle", TORCH_FN(angle));
  m.impl("angle.out", TORCH_FN(angle_out));
  m.impl("frexp.Tensor_out", TORCH_FN(frexp_out));
  m.impl("where.self", TORCH_FN(where));
  m.impl("where.self_out", TORCH_FN(where_out));
  m.impl("masked_fill_.Scalar", TORCH_FN(masked_fill_scalar_));
  m.impl("masked_fill_.Tensor", TORCH_FN(masked_fill_tensor_));
  m.impl("isnan", TORCH_FN(isnan));
  m.impl("nan_to_num.out", TORCH_FN(nan_to_num_out));
  m.impl("logical_and.out", TORCH_FN(logical_and_out));
  m.impl("logical_or.out", TORCH_FN(logical_or_out));
  m.impl("logical_xor.out", TORCH_FN(logical_xor_out));
  m.impl("logical_not.out", TORCH_FN(logical_not_out));
  m.impl("pow.Scalar", TORCH_FN(pow_scalar_base));
  m.impl("pow.Scalar_out", TORCH_FN(pow_scalar_base_out));
  m.impl("remainder.Scalar_Tensor", TORCH_FN(remainder_scalar_tensor));
  m.impl("hardtanh", TORCH_FN(hardtanh));
  m.impl("hardtanh_", TORCH_FN(hardtanh_));
  m.impl("hardtanh.out", TORCH_FN(hardtanh_out));
  m.impl("hardtanh_backward", TORCH_FN(hardtanh_backward));
  m.impl("hardtanh_backward.grad_input", TORCH_FN(hardtanh_backward_out));
  m.impl("hardswish", TORCH_FN(hardswish));
  m.impl("hardswish_", TORCH_FN(hardswish_));
  m.impl("hardswish.out", TORCH_FN(hardswish_out));
  m.impl("hardswish_backward", TORCH_FN(hardswish_backward));
  m.impl("log_sigmoid_forward", TORCH_FN(log_sigmoid_forward));
  m.impl("log_sigmoid_forward.output", TORCH_FN(log_sigmoid_forward_out));
  m.impl("log_sigmoid_backward", TORCH_FN(log_sigmoid_backward));
  m.impl("log_sigmoid_backward.grad_input", TORCH_FN(log_sigmoid_backward_out));
  m.impl("__lshift__.Tensor", TORCH_FN(lshift_tensor));
  m.impl("__lshift__.Scalar", TORCH_FN(lshift_scalar));
  m.impl("__ilshift__.Tensor", TORCH_FN(ilshift_tensor));
  m.impl("__ilshift__.Scalar", TORCH_FN(ilshift_scalar));
  m.impl("__rshift__.Tensor", TORCH_FN(rshift_tensor));
  m.impl("__rshift__.Scalar", TORCH_FN(rshift_scalar));
  m.impl("__irshift__.Tensor", TORCH_FN(irshift_tensor));
  m.impl("__irshift__.Scalar", TORCH_FN(irshift_scalar));
  m.impl("floor_divide", TORCH_FN(floor_divide));
  m.impl("floor_divide_.Tensor", TORCH_FN(floor_divide_));
  m.impl("floor_divide.out", TORCH_FN(floor_divide_out));
  m.impl("rsub.Tensor", TORCH_FN(rsub));
  m.impl("logit", TORCH_FN(logit));
  m.impl("logit_", TORCH_FN(logit_));
  m.impl("logit.out", TORCH_FN(logit_out));
  m.impl("equal", TORCH_FN(equal));
  m.impl("relu", TORCH_FN(relu));
  m.impl("relu_", TORCH_FN(relu_));
  m.impl("polygamma", TORCH_FN(polygamma));
  m.impl("polygamma.out", TORCH_FN(polygamma_out));
  m.impl("glu_backward", TORCH_FN(glu_backward));
  m.impl("glu_backward.grad_input", TORCH_FN(glu_backward_out));
  m.impl("_prelu_kernel", TORCH_FN(prelu_kernel));
  m.impl("_prelu_kernel_backward", TORCH_FN(prelu_kernel_backward));
}

}  // namespace torch_opencl
