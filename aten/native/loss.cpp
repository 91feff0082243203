// nll_loss and nll_loss2d, forward and backward (cross_entropy is log_softmax +
// nll_loss). The input is viewed as (N, C, S) with S = 1 for nll_loss and H * W
// for nll_loss2d; kernels in kernels_cl/loss.cl. Targets are bounds-checked on
// the device first, so a bad target raises CPU's IndexError.
#include <ATen/ATen.h>
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <tuple>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/native/index_bounds.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/native/pointwise.h"
#include "aten/kernel_support/structured.h"
#include "runtime/kernel_forms.h"

namespace torch_opencl {
namespace {

using at::Tensor;
using OptTensor = std::optional<Tensor>;

struct NllGeometry {
  int64_t N, C, S;
};

NllGeometry geometry(const Tensor& input, bool spatial) {
  if (spatial) return {input.size(0), input.size(1), input.size(2) * input.size(3)};
  if (input.dim() == 1) return {1, input.size(0), 1};
  return {input.size(0), input.size(1), 1};
}

Tensor weight_or_empty(const OptTensor& weight) {
  return weight.has_value() && weight->defined() ? *weight : Tensor();
}

at::OptionalTensorRef weight_ref(const OptTensor& weight) {
  return weight.has_value() && weight->defined() ? at::OptionalTensorRef(*weight) : at::OptionalTensorRef();
}

std::string target_out_of_bounds(int64_t target) { return "Target " + std::to_string(target) + " is out of bounds."; }

void check_target_dtype(const Tensor& target) {
  TORCH_CHECK(target.scalar_type() == at::kLong || target.scalar_type() == at::kByte,
              "expected scalar type Long but found ", target.scalar_type());
}

// Records a target outside [0, classes) (but ignore_index) for the next wait (the kernels skip it).
void record_bad_targets(const Tensor& target, int64_t classes, int64_t ignore_index) {
  static const int site = tocl::error_site("nll_loss", [](int64_t t, int64_t) { return target_out_of_bounds(t); });
  record_out_of_range(target, 0, classes, ignore_index, site);
}

// Targets outside [0, classes) (but ignore_index): CPU's IndexError, at the call or, where index checks
// are deferred, at the next wait.
void check_targets(const Tensor& target, int64_t classes, int64_t ignore_index) {
  check_target_dtype(target);
  if (index_checks_deferred(target)) return record_bad_targets(target, classes, ignore_index);
  const auto bad = first_out_of_range(target, 0, classes, ignore_index);
  TORCH_CHECK_INDEX(!bad.has_value(), target_out_of_bounds(bad ? bad->value : 0));
}

void check_weight(const Tensor& input, const Tensor& weight) {
  if (!weight.defined()) return;
  TORCH_CHECK(weight.scalar_type() == input.scalar_type(), "expected scalar type ", input.scalar_type(),
              " but found ", weight.scalar_type(), " (nll_loss weight)");
  TORCH_CHECK(weight.device() == input.device(), "nll_loss: weight is on ", weight.device(), ", input on ",
              input.device());
}

// 'sum'/'mean', GPU form (kernels_cl/loss_gpu.cl): groups of a target or so per item write partial
// sums, one group adds them up. A 0-element input still writes 0 ('sum') or 0/0 = nan ('mean').
void nll_reduce_gpu(const Tensor& in, const Tensor& tgt, const Tensor& weight, bool mean, int64_t ignore_index,
                    const NllGeometry& g, const Tensor& output, const Tensor& total_weight) {
  const int device = device_index(in);
  const int stream = current_stream_of(in);
  const auto& forms = tocl::kernel_forms(device);
  const auto wg = static_cast<int64_t>(forms.row_group);
  const int64_t groups =
      std::max<int64_t>(1, std::min<int64_t>(static_cast<int64_t>(forms.busy_groups), (g.N * g.S + wg - 1) / wg));
  const auto acc = in.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  auto partial = at::empty({2 * groups}, in.options().dtype(acc));
  cl_kernel k = dtype_kernel(in, "loss_gpu.cl", "nll_reduce_partials", tgt.scalar_type());
  tocl::set_args(k, buffer_arg(partial), buffer_arg(in.numel() ? in : output), buffer_arg(tgt.numel() ? tgt : partial),
                 buffer_arg(weight.defined() ? weight : output), static_cast<cl_int>(weight.defined()),
                 static_cast<cl_long>(g.N), static_cast<cl_long>(g.C), static_cast<cl_long>(g.S),
                 static_cast<cl_long>(ignore_index));
  tocl::enqueue_1d(device, stream, k, static_cast<size_t>(groups * wg), static_cast<size_t>(wg));
  cl_kernel k2 = dtype_kernel(in, "loss_gpu.cl", "nll_reduce_finish", tgt.scalar_type());
  tocl::set_args(k2, buffer_arg(output), buffer_arg(total_weight), buffer_arg(partial), static_cast<cl_long>(groups),
                 static_cast<cl_int>(mean));
  tocl::enqueue_1d(device, stream, k2, static_cast<size_t>(wg), static_cast<size_t>(wg));
}

void nll_forward(const Tensor& input, const Tensor& target, const Tensor& weight_, int64_t reduction,
                 int64_t ignore_index, bool spatial, const Tensor& output, const Tensor& total_weight) {
  check_same_device({input, target, weight_});
  const c10::DeviceGuard guard(input.device());
  check_weight(input, weight_);
  const auto g = geometry(input, spatial);
  check_targets(target, g.C, ignore_index);
  const auto in = input.contiguous();
  const auto tgt = target.contiguous();
  const auto weight = weight_.defined() ? weight_.contiguous() : in;
  const int device = device_index(in);
  const int stream = current_stream_of(in);
  const auto weight_arg = buffer_arg(weight);
  if (reduction == at::Reduction::None) {
    total_weight.zero_();
    if (output.numel() == 0) return;
    auto out = output.is_contiguous() ? output : at::empty(output.sizes(), output.options());
    cl_kernel k = dtype_kernel(in, "loss.cl", "nll_forward_none", tgt.scalar_type());
    tocl::set_args(k, buffer_arg(out), buffer_arg(in), buffer_arg(tgt), weight_arg,
                   static_cast<cl_int>(weight_.defined()), static_cast<cl_long>(g.N), static_cast<cl_long>(g.C),
                   static_cast<cl_long>(g.S), static_cast<cl_long>(ignore_index));
    tocl::enqueue_1d(device, stream, k, g.N * g.S);
    if (!out.is_same(output)) output.copy_(out);
    return;
  }
  if (tocl::kernel_forms(device).row_gpu_forms) {
    nll_reduce_gpu(in, tgt, weight_.defined() ? weight : Tensor(), reduction == at::Reduction::Mean, ignore_index, g, output, total_weight);
    return;
  }
  cl_kernel k = dtype_kernel(in, "loss.cl", "nll_forward_reduce", tgt.scalar_type());
  // A 0-element input still writes its result: 0 for 'sum', 0/0 = nan for 'mean', as CPU.
  tocl::set_args(k, buffer_arg(output), buffer_arg(total_weight), buffer_arg(in.numel() ? in : output),
                 buffer_arg(tgt.numel() ? tgt : output), weight_.defined() ? weight_arg : buffer_arg(output),
                 static_cast<cl_int>(weight_.defined()), static_cast<cl_long>(g.N), static_cast<cl_long>(g.C),
                 static_cast<cl_long>(g.S), static_cast<cl_long>(ignore_index),
                 static_cast<cl_int>(reduction == at::Reduction::Mean));
  tocl::enqueue_1d(device, stream, k, row_group(device), row_group(device));
}

void nll_backward(const Tensor& grad_output, const Tensor& input, const Tensor& target, const Tensor& weight_,
                  int64_t reduction, int64_t ignore_index, const Tensor& total_weight, bool spatial,
                  const Tensor& grad_input) {
  check_same_device({grad_output, input, target, weight_, total_weight, grad_input});
  const c10::DeviceGuard guard(input.device());
  check_weight(input, weight_);
  grad_input.zero_();
  const auto g = geometry(input, spatial);
  if (g.N * g.S == 0) return;
  // The forward checked these targets; a direct call's bad one is recorded for the next wait on every
  // device: one launch instead of a wait per training step.
  check_target_dtype(target);
  record_bad_targets(target, g.C, ignore_index);
  const auto tgt = target.contiguous();
  const auto go = grad_output.contiguous();
  const auto tw = total_weight.contiguous();
  const auto weight = weight_.defined() ? weight_.contiguous() : go;
  auto gi = grad_input.is_contiguous() ? grad_input : at::zeros(grad_input.sizes(), grad_input.options());
  cl_kernel k = dtype_kernel(gi, "loss.cl", "nll_backward", tgt.scalar_type());
  const int r = reduction == at::Reduction::None ? 0 : reduction == at::Reduction::Mean ? 1 : 2;
  tocl::set_args(k, buffer_arg(gi), buffer_arg(go), buffer_arg(tgt), buffer_arg(weight),
                 static_cast<cl_int>(weight_.defined()), buffer_arg(tw), static_cast<cl_long>(g.N),
                 static_cast<cl_long>(g.C), static_cast<cl_long>(g.S), static_cast<cl_long>(ignore_index),
                 static_cast<cl_int>(r));
  tocl::enqueue_1d(device_index(gi), current_stream_of(gi), k, g.N * g.S);
  if (!gi.is_same(grad_input)) grad_input.copy_(gi);
}

// ---- nll_loss (structured: ATen's meta checks shapes as on CPU) ----

std::tuple<Tensor, Tensor> nll_loss_forward_functional(const Tensor& self, const Tensor& target, const OptTensor& weight,
                                            int64_t reduction, int64_t ignore_index) {
  StructuredFunctional<at::meta::structured_nll_loss_forward, 2> op;
  op.meta(self, target, weight_ref(weight), reduction, ignore_index);
  nll_forward(self, target, weight_or_empty(weight), reduction, ignore_index, false, op.maybe_get_output(0),
              op.maybe_get_output(1));
  return {op.take(0), op.take(1)};
}

std::tuple<Tensor&, Tensor&> nll_loss_forward_out(const Tensor& self, const Tensor& target, const OptTensor& weight,
                                                  int64_t reduction, int64_t ignore_index, Tensor& output,
                                                  Tensor& total_weight) {
  auto [o, tw] = nll_loss_forward_functional(self, target, weight, reduction, ignore_index);
  at::native::resize_output(output, o.sizes());
  at::native::resize_output(total_weight, tw.sizes());
  output.copy_(o);
  total_weight.copy_(tw);
  return {output, total_weight};
}

Tensor nll_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target, const OptTensor& weight,
                         int64_t reduction, int64_t ignore_index, const Tensor& total_weight) {
  StructuredFunctional<at::meta::structured_nll_loss_backward> op;
  op.meta(grad_output, self, target, weight_ref(weight), reduction, ignore_index, total_weight);
  nll_backward(grad_output, self, target, weight_or_empty(weight), reduction, ignore_index, total_weight, false,
               op.maybe_get_output(0));
  return op.take();
}

Tensor& nll_loss_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                              const OptTensor& weight, int64_t reduction, int64_t ignore_index,
                              const Tensor& total_weight, Tensor& grad_input) {
  StructuredOut<at::meta::structured_nll_loss_backward> op(grad_input);
  op.meta(grad_output, self, target, weight_ref(weight), reduction, ignore_index, total_weight);
  nll_backward(grad_output, self, target, weight_or_empty(weight), reduction, ignore_index, total_weight, false,
               op.maybe_get_output(0));
  op.finish();
  return grad_input;
}

// ---- nll_loss2d (not structured: CPU's checks, restated) ----

void check_2d(const Tensor& input, const Tensor& target, const Tensor& weight) {
  TORCH_CHECK(target.dim() == 3, "only batches of spatial targets supported (3D tensors) but got targets of dimension: ",
              target.dim());
  TORCH_CHECK(input.dim() == 4, "only batches of spatial inputs supported (4D tensors), but got input of dimension: ",
              input.dim());
  TORCH_CHECK(!weight.defined() || weight.numel() == input.size(1),
              "weight tensor should be defined either for all or no classes");
  TORCH_CHECK(input.size(0) == target.size(0) && input.size(2) == target.size(1) && input.size(3) == target.size(2),
              "input and target batch or spatial sizes don't match: target ", target.sizes(), ", input ",
              input.sizes());
}

std::tuple<Tensor&, Tensor&> nll_loss2d_forward_out(const Tensor& self, const Tensor& target,
                                                    const OptTensor& weight, int64_t reduction, int64_t ignore_index,
                                                    Tensor& output, Tensor& total_weight) {
  const auto w = weight_or_empty(weight);
  check_2d(self, target, w);
  at::native::resize_output(total_weight, {});
  if (reduction == at::Reduction::None)
    at::native::resize_output(output, {self.size(0), self.size(2), self.size(3)});
  else
    at::native::resize_output(output, {});
  nll_forward(self, target, w, reduction, ignore_index, true, output, total_weight);
  return {output, total_weight};
}

std::tuple<Tensor, Tensor> nll_loss2d_forward(const Tensor& self, const Tensor& target, const OptTensor& weight,
                                              int64_t reduction, int64_t ignore_index) {
  auto output = at::empty({0}, self.options());
  auto total_weight = at::empty({0}, self.options());
  nll_loss2d_forward_out(self, target, weight, reduction, ignore_index, output, total_weight);
  return {output, total_weight};
}

Tensor& nll_loss2d_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                const OptTensor& weight, int64_t reduction, int64_t ignore_index,
                                const Tensor& total_weight, Tensor& grad_input) {
  const auto w = weight_or_empty(weight);
  check_2d(self, target, w);
  TORCH_CHECK(total_weight.numel() == 1, "expected total_weight to be a single element tensor, got: ",
              total_weight.sizes(), " (", total_weight.numel(), " elements)");
  if (reduction == at::Reduction::None) {
    TORCH_CHECK(grad_output.dim() == 3 && grad_output.sizes() == target.sizes(),
                "grad_output must have the target's shape ", target.sizes(), " for reduction='none', got ",
                grad_output.sizes());
  } else {
    TORCH_CHECK(grad_output.numel() == 1, "Expected a single element grad_output tensor, but got: ",
                grad_output.sizes());
  }
  at::native::resize_output(grad_input, self.sizes());
  nll_backward(grad_output, self, target, w, reduction, ignore_index, total_weight, true, grad_input);
  return grad_input;
}

Tensor nll_loss2d_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                           const OptTensor& weight, int64_t reduction, int64_t ignore_index,
                           const Tensor& total_weight) {
  auto grad_input = at::empty(self.sizes(), self.options());
  return nll_loss2d_backward_out(grad_output, self, target, weight, reduction, ignore_index, total_weight, grad_input);
}

// ---- elementwise losses: the pointwise engine computes the unreduced loss, the device's reductions reduce ----

// out (0-d) = mean or sum of the loss, as CPU's apply_loss_reduction: the reductions of reduce_ops.cpp use
// every core (compute unit) and their vector forms. (A kernel of one work-group did this before: on PoCL one
// core walking 1M elements with a stride, 1.4 ms where sum takes 0.2; on a GPU one compute unit.)
void reduce_loss(const Tensor& loss, int64_t reduction, const Tensor& out) {
  const auto flat = loss.reshape({-1});
  Tensor result = out;  // the same tensor: the *_out functions take a non-const handle
  if (reduction == at::Reduction::Mean) {
    at::mean_out(result, flat, 0);
  } else {
    at::sum_out(result, flat, 0);
  }
}

// Returns the result: `out`, or the iterator's new output when `out` is undefined.
template <class Run>
Tensor elementwise_loss_out(const Tensor& self, const Tensor& target, int64_t reduction, const Tensor& out, Run run) {
  const c10::DeviceGuard guard(self.device());
  if (reduction == at::Reduction::None) {
    auto iter = at::TensorIterator::borrowing_binary_op(out, self, target);
    run(iter);
    return iter.output();
  }
  Tensor loss;
  auto iter = at::TensorIterator::borrowing_binary_op(loss, self, target);
  run(iter);
  at::native::resize_output(out, {});
  TORCH_CHECK(out.scalar_type() == iter.output().scalar_type(), "Expected out tensor to have dtype ",
              iter.output().scalar_type(), ", but got ", out.scalar_type(), " instead");
  reduce_loss(iter.output(), reduction, out);
  return out;
}

// grad_input = EXPR(self, target, grad_output) with s0 = the reduction's norm (and s1 = beta).
Tensor& elementwise_loss_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                      const PointwiseExpr& expr, std::initializer_list<c10::Scalar> scalars,
                                      Tensor& grad_input) {
  const c10::DeviceGuard guard(self.device());
  auto iter = at::TensorIteratorConfig()
                  .add_output(grad_input)
                  .add_const_input(self)
                  .add_const_input(target)
                  .add_const_input(grad_output)
                  .promote_inputs_to_common_dtype(true)
                  .build();
  run_pointwise(iter, expr, scalars);
  return grad_input;
}

double loss_norm(const Tensor& self, int64_t reduction, double base) {
  return reduction == at::Reduction::Mean ? base / static_cast<double>(self.numel()) : base;
}

Tensor mse_loss_into(const Tensor& self, const Tensor& target, int64_t reduction, const Tensor& out) {
  return elementwise_loss_out(self, target, reduction, out, [](at::TensorIteratorBase& iter) {
    run_pointwise(iter, {"mse_loss", "(a - b) * (a - b)", nullptr});
  });
}

Tensor& mse_loss_out(const Tensor& self, const Tensor& target, int64_t reduction, Tensor& out) {
  mse_loss_into(self, target, reduction, out);
  return out;
}

Tensor mse_loss(const Tensor& self, const Tensor& target, int64_t reduction) {
  return mse_loss_into(self, target, reduction,
                       reduction == at::Reduction::None ? Tensor() : at::empty({}, self.options()));
}

Tensor& mse_loss_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                              int64_t reduction, Tensor& grad_input) {
  at::native::resize_output(grad_input, self.sizes());
  return elementwise_loss_backward_out(grad_output, self, target,
                                       {"mse_loss_backward", "s0 * (a - b) * c", nullptr},
                                       {loss_norm(self, reduction, 2.0)}, grad_input);
}

Tensor mse_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target, int64_t reduction) {
  auto grad_input = at::empty(self.sizes(), self.options());
  return mse_loss_backward_out(grad_output, self, target, reduction, grad_input);
}

Tensor smooth_l1_loss_into(const Tensor& self, const Tensor& target, int64_t reduction, double beta,
                           const Tensor& out) {
  TORCH_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  if (beta == 0) {  // as CPU: plain l1
    return elementwise_loss_out(self, target, reduction, out, [](at::TensorIteratorBase& iter) {
      run_pointwise(iter, {"l1_loss", "fabs(a - b)", nullptr});
    });
  }
  return elementwise_loss_out(self, target, reduction, out, [beta](at::TensorIteratorBase& iter) {
    run_pointwise(iter,
                  {"smooth_l1_loss", "fabs(a - b) < s0 ? (C_T)0.5 * (a - b) * (a - b) / s0 : fabs(a - b) - (C_T)0.5 * s0",
                   nullptr},
                  {beta});
  });
}

Tensor& smooth_l1_loss_out(const Tensor& self, const Tensor& target, int64_t reduction, double beta, Tensor& out) {
  smooth_l1_loss_into(self, target, reduction, beta, out);
  return out;
}

Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  return smooth_l1_loss_into(self, target, reduction, beta,
                             reduction == at::Reduction::None ? Tensor() : at::empty({}, self.options()));
}

Tensor& smooth_l1_loss_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                    int64_t reduction, double beta, Tensor& grad_input) {
  at::native::resize_output(grad_input, self.sizes());
  return elementwise_loss_backward_out(
      grad_output, self, target,
      {"smooth_l1_loss_backward",
       "s0 * c * ((a - b) <= -s1 ? (C_T)-1 : (a - b) >= s1 ? (C_T)1 : (a - b) / s1)", nullptr},
      {loss_norm(self, reduction, 1.0), beta}, grad_input);
}

Tensor smooth_l1_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                               int64_t reduction, double beta) {
  auto grad_input = at::empty(self.sizes(), self.options());
  return smooth_l1_loss_backward_out(grad_output, self, target, reduction, beta, grad_input);
}

// ---- huber_loss: smooth_l1 scaled by delta, as CPU ----

Tensor huber_loss_into(const Tensor& self, const Tensor& target, int64_t reduction, double delta, const Tensor& out) {
  TORCH_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  return elementwise_loss_out(self, target, reduction, out, [delta](at::TensorIteratorBase& iter) {
    run_pointwise(iter,
                  {"huber_loss", "fabs(a - b) < s0 ? (C_T)0.5 * (a - b) * (a - b) : s0 * (fabs(a - b) - (C_T)0.5 * s0)",
                   nullptr},
                  {delta});
  });
}

Tensor& huber_loss_out(const Tensor& self, const Tensor& target, int64_t reduction, double delta, Tensor& out) {
  huber_loss_into(self, target, reduction, delta, out);
  return out;
}

Tensor huber_loss(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  return huber_loss_into(self, target, reduction, delta,
                         reduction == at::Reduction::None ? Tensor() : at::empty({}, self.options()));
}

Tensor& huber_loss_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                int64_t reduction, double delta, Tensor& grad_input) {
  at::native::resize_output(grad_input, self.sizes());
  return elementwise_loss_backward_out(
      grad_output, self, target,
      {"huber_loss_backward", "s0 * c * ((a - b) <= -s1 ? -s1 : (a - b) >= s1 ? s1 : (a - b))", nullptr},
      {loss_norm(self, reduction, 1.0), delta}, grad_input);
}

Tensor huber_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target, int64_t reduction,
                           double delta) {
  auto grad_input = at::empty(self.sizes(), self.options());
  return huber_loss_backward_out(grad_output, self, target, reduction, delta, grad_input);
}

// ---- binary_cross_entropy: as CPU, the elementwise loss (log clamped at -100), times weight, reduced ----

// CPU's errors for probabilities outside [0, 1] (NaN included): one pointwise pass and a read back.
void check_probabilities(const Tensor& input, const Tensor& target) {
  if (input.numel() == 0) return;
  auto codes = at::empty(input.sizes(), input.options().dtype(at::kByte));
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .add_output(codes)
                  .add_const_input(input)
                  .add_const_input(target)
                  .build();
  run_pointwise(iter,
                {"bce_range", "!(a >= (C_T)0 && a <= (C_T)1) ? (C_T)2 : (!(b >= (C_T)0 && b <= (C_T)1) ? (C_T)1 : (C_T)0)",
                 nullptr},
                {}, compute_dtype(input.scalar_type()));
  const int worst = at::max(codes).item<int>();
  TORCH_CHECK(worst != 2, "all elements of input should be between 0 and 1");
  TORCH_CHECK(worst != 1, "all elements of target should be between 0 and 1");
}

Tensor bce_loss(const Tensor& self, const Tensor& target, const OptTensor& weight_opt,
                            int64_t reduction) {
  const auto weight = weight_or_empty(weight_opt);
  check_same_device({self, target, weight});
  const c10::DeviceGuard guard(self.device());
  check_probabilities(self, target);
  Tensor loss = at::empty_like(self);
  auto iter = at::TensorIteratorConfig()
                  .add_owned_output(at::squeeze(loss))
                  .add_owned_const_input(at::squeeze(self))
                  .add_owned_const_input(at::squeeze(target))
                  .build();
  run_pointwise(iter, {"binary_cross_entropy",
                       "(b - (C_T)1) * fmax(log1p(-a), (C_T)-100) - b * fmax(log(a), (C_T)-100)", nullptr});
  if (weight.defined()) loss.mul_(weight);
  if (reduction == at::Reduction::Mean) return loss.mean();
  if (reduction == at::Reduction::Sum) return loss.sum();
  return loss;
}

Tensor& bce_loss_out(const Tensor& self, const Tensor& target, const OptTensor& weight,
                                 int64_t reduction, Tensor& out) {
  const auto loss = bce_loss(self, target, weight, reduction);
  at::native::resize_output(out, loss.sizes());
  out.copy_(loss);
  return out;
}

// grad * (x - y) / max((1 - x) * x, 1e-12), times weight, divided by numel for 'mean'.
Tensor& bce_loss_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                          const OptTensor& weight_opt, int64_t reduction, Tensor& grad_input) {
  const auto weight = weight_or_empty(weight_opt);
  check_same_device({grad_output, self, target, weight, grad_input});
  const c10::DeviceGuard guard(self.device());
  at::native::resize_output(grad_input, self.sizes());
  auto iter = at::TensorIteratorConfig()
                  .add_owned_output(at::squeeze(grad_input))
                  .add_owned_const_input(at::squeeze(grad_output))
                  .add_owned_const_input(at::squeeze(self))
                  .add_owned_const_input(at::squeeze(target))
                  .build();
  run_pointwise(iter, {"binary_cross_entropy_backward", "a * (b - c) / fmax(((C_T)1 - b) * b, (C_T)1e-12)", nullptr});
  if (weight.defined()) grad_input.mul_(weight);
  if (reduction == at::Reduction::Mean) grad_input.div_(self.numel());
  return grad_input;
}

Tensor bce_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                     const OptTensor& weight, int64_t reduction) {
  auto grad_input = at::empty_like(self);
  return bce_loss_backward_out(grad_output, self, target, weight, reduction, grad_input);
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("nll_loss_forward", TORCH_FN(nll_loss_forward_functional));
  m.impl("nll_loss_forward.output", TORCH_FN(nll_loss_forward_out));
  m.impl("nll_loss_backward", TORCH_FN(nll_loss_backward));
  m.impl("nll_loss_backward.grad_input", TORCH_FN(nll_loss_backward_out));
  m.impl("nll_loss2d_forward", TORCH_FN(nll_loss2d_forward));
  m.impl("nll_loss2d_forward.output", TORCH_FN(nll_loss2d_forward_out));
  m.impl("nll_loss2d_backward", TORCH_FN(nll_loss2d_backward));
  m.impl("nll_loss2d_backward.grad_input", TORCH_FN(nll_loss2d_backward_out));
  m.impl("mse_loss", TORCH_FN(mse_loss));
  m.impl("mse_loss.out", TORCH_FN(mse_loss_out));
  m.impl("mse_loss_backward", TORCH_FN(mse_loss_backward));
  m.impl("mse_loss_backward.grad_input", TORCH_FN(mse_loss_backward_out));
  m.impl("smooth_l1_loss", TORCH_FN(smooth_l1_loss));
  m.impl("smooth_l1_loss.out", TORCH_FN(smooth_l1_loss_out));
  m.impl("smooth_l1_loss_backward", TORCH_FN(smooth_l1_loss_backward));
  m.impl("smooth_l1_loss_backward.grad_input", TORCH_FN(smooth_l1_loss_backward_out));
  m.impl("huber_loss", TORCH_FN(huber_loss));
  m.impl("huber_loss.out", TORCH_FN(huber_loss_out));
  m.impl("huber_loss_backward", TORCH_FN(huber_loss_backward));
  m.impl("huber_loss_backward.out", TORCH_FN(huber_loss_backward_out));
  m.impl("binary_cross_entropy", TORCH_FN(bce_loss));
  m.impl("binary_cross_entropy.out", TORCH_FN(bce_loss_out));
  m.impl("binary_cross_entropy_backward", TORCH_FN(bce_loss_backward));
  m.impl("binary_cross_entropy_backward.grad_input", TORCH_FN(bce_loss_backward_out));
}

}  // namespace torch_opencl
