// F.ctc_loss on the device: aten::_ctc_loss and its backward (kernels_cl/ctc_loss.cl, one work-group per
// batch element), with CPU's argument checks and messages. The lengths arrive as host lists (the .Tensor
// forms read theirs back, as CPU's do). Labels are checked against the class count where CPU reads out of
// bounds: at the call on CPU-class devices, recorded for the next wait on GPU-class ones.
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/native/index_bounds.h"
#include "runtime/device.h"
#include "runtime/embedded_sources.h"
#include "runtime/kernel_forms.h"
#include "runtime/launch.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

cl_program ctc_program(int device, c10::ScalarType type) {
  static std::mutex mutex;
  static std::map<std::pair<int, c10::ScalarType>, cl_program> programs;
  std::lock_guard<std::mutex> lock(mutex);
  auto& program = programs[{device, type}];
  if (!program)
    program = tocl::get_program(device, program_prelude({type}) + "#define F " + storage_type(type) + "\n" +
                                            tocl::embedded_sources().at("ctc_loss.cl"));
  return program;
}

// What both kernels read: the checked arguments, targets as int64 and each batch element's first label.
struct CtcCall {
  int64_t T, B, C, S;
  at::Tensor targets, tg_batch, in_len, tg_len;
  int64_t tg_stride;
};

at::Tensor long_tensor(at::IntArrayRef values, const at::Tensor& like) {
  return at::tensor(values, at::TensorOptions().dtype(at::kLong)).to(like.device(), /*non_blocking=*/true);
}

CtcCall prepare(const at::Tensor& log_probs, const at::Tensor& targets, at::IntArrayRef input_lengths,
                at::IntArrayRef target_lengths, int64_t blank, const char* c) {
  TORCH_CHECK(log_probs.scalar_type() == at::kFloat || log_probs.scalar_type() == at::kDouble,
              "\"ctc_loss\" not implemented for '", log_probs.scalar_type(), "'");
  TORCH_CHECK(log_probs.dim() == 3, "Expected 3-dimensional tensor, but got ", log_probs.dim(),
              "-dimensional tensor for argument #1 'log_probs' (while checking arguments for ", c, ")");
  TORCH_CHECK(targets.dim() >= 1 && targets.dim() <= 2, "Expected 1 to 2 dimensions, but got ", targets.dim(),
              "-dimensional tensor for argument #2 'targets' (while checking arguments for ", c, ")");
  TORCH_CHECK(targets.device() == log_probs.device(), "ctc_loss: expected targets on ", log_probs.device(),
              ", got ", targets.device());
  CtcCall call;
  call.T = log_probs.size(0);
  call.B = log_probs.size(1);
  call.C = log_probs.size(2);
  TORCH_CHECK(blank < call.C && blank >= 0, "blank must be in label range");
  TORCH_CHECK(static_cast<int64_t>(input_lengths.size()) == call.B, "input_lengths must be of size batch_size");
  TORCH_CHECK(static_cast<int64_t>(target_lengths.size()) == call.B, "target_lengths must be of size batch_size");
  // Offsets and strides are those of what the kernels read: int64 targets (CPU takes any dtype).
  call.targets = targets.scalar_type() == at::kLong ? targets : targets.to(at::kLong);
  const at::Tensor& tg = call.targets;
  int64_t max_target = 0;
  std::vector<int64_t> first(call.B);
  const bool concatenated = targets.dim() == 1;
  int64_t position = 0;
  for (int64_t b = 0; b < call.B; ++b) {
    TORCH_CHECK(target_lengths[b] >= 0, "Expected target_lengths to have value at least 0, but got value ",
                target_lengths[b], " (while checking arguments for ", c, ")");
    TORCH_CHECK(input_lengths[b] >= 0, "Expected input_lengths to have value at least 0, but got value ",
                input_lengths[b], " (while checking arguments for ", c, ")");
    TORCH_CHECK(input_lengths[b] <= call.T, "Expected input_lengths to have value at most ", call.T,
                ", but got value ", input_lengths[b], " (while checking arguments for ", c, ")");
    max_target = std::max(max_target, target_lengths[b]);
    first[b] = concatenated ? position * tg.stride(0) : b * tg.stride(0);
    position += target_lengths[b];
  }
  if (concatenated) {
    TORCH_CHECK(targets.size(0) == position, "Expected tensor to have size ", position,
                " at dimension 0, but got size ", targets.size(0), " for argument #2 'targets' (while checking "
                "arguments for ", c, ")");
    call.tg_stride = tg.stride(0);
  } else {
    TORCH_CHECK(targets.size(0) == call.B, "Expected tensor to have size ", call.B, " at dimension 0, but got size ",
                targets.size(0), " for argument #2 'targets' (while checking arguments for ", c, ")");
    TORCH_CHECK(targets.size(1) >= max_target, "Expected tensor to have size at least ", max_target,
                " at dimension 1, but got size ", targets.size(1), " for argument #2 'targets' (while checking "
                "arguments for ", c, ")");
    call.tg_stride = tg.stride(1);
  }
  call.S = 2 * max_target + 1;
  call.tg_batch = long_tensor(first, log_probs);
  call.in_len = long_tensor(input_lengths, log_probs);
  call.tg_len = long_tensor(target_lengths, log_probs);
  return call;
}

// The labels the loss reads (each batch element's first target_length) must be classes: the kernels clamp
// them, so a bad one raises here (CPU reads out of bounds).
void check_labels(const CtcCall& call) {
  if (call.S == 1) return;
  const at::Tensor& t = call.targets;
  at::Tensor used;
  if (t.dim() == 1) {
    used = t;
  } else {
    const auto positions = at::arange(t.size(1), t.options()).unsqueeze(0);
    used = at::where(positions < call.tg_len.unsqueeze(1), t, at::zeros({}, t.options()));
  }
  if (index_checks_deferred(used)) {
    static const int site = tocl::error_site("ctc_loss", [](int64_t v, int64_t classes) {
      return "ctc_loss: target label " + std::to_string(v) + " is not a class index in [0, " +
             std::to_string(classes) + ")";
    });
    record_out_of_range(used, 0, call.C, std::nullopt, site);
  } else {
    const auto bad = first_out_of_range(used, 0, call.C);
    TORCH_CHECK_INDEX(!bad.has_value(), "ctc_loss: target label ", bad ? bad->value : 0,
                      " is not a class index in [0, ", call.C, ")");
  }
}

size_t group_size(int device) {
  return std::min<size_t>(tocl::kernel_forms(device).reduce_group, tocl::device_info(device).max_work_group_size);
}

std::tuple<at::Tensor, at::Tensor> ctc_loss(const at::Tensor& log_probs, const at::Tensor& targets,
                                            at::IntArrayRef input_lengths, at::IntArrayRef target_lengths,
                                            int64_t blank, bool /*zero_infinity: the composite applies it*/) {
  const c10::DeviceGuard guard(log_probs.device());
  const CtcCall call = prepare(log_probs, targets, input_lengths, target_lengths, blank, "ctc_loss_allocate_outputs");
  const int device = device_index(log_probs);
  auto nll = at::empty({call.B}, log_probs.options());
  auto log_alpha = at::full({call.B, call.T, call.S}, -std::numeric_limits<double>::infinity(), log_probs.options());
  if (call.B == 0) return {nll, log_alpha};
  check_labels(call);
  const auto lp_stride = [&](int64_t d) -> cl_long { return log_probs.stride(d); };
  cl_kernel k = tocl::get_kernel(ctc_program(device, log_probs.scalar_type()), "ctc_alpha");
  tocl::set_args(k, buffer_arg(log_probs), lp_stride(0), lp_stride(1), lp_stride(2), buffer_arg(call.targets),
                 static_cast<cl_long>(call.tg_stride), buffer_arg(call.tg_batch), buffer_arg(call.in_len),
                 buffer_arg(call.tg_len), buffer_arg(log_alpha), static_cast<cl_int>(call.T),
                 static_cast<cl_int>(call.S), buffer_arg(nll), static_cast<cl_int>(blank), static_cast<cl_int>(call.C));
  const size_t wg = group_size(device);
  tocl::enqueue_1d(device, current_stream_of(log_probs), k, static_cast<size_t>(call.B) * wg, wg);
  return {nll, log_alpha};
}

at::Tensor ctc_loss_backward(const at::Tensor& grad, const at::Tensor& log_probs, const at::Tensor& targets,
                             at::IntArrayRef input_lengths, at::IntArrayRef target_lengths,
                             const at::Tensor& neg_log_likelihood, const at::Tensor& log_alpha, int64_t blank,
                             bool zero_infinity) {
  const c10::DeviceGuard guard(log_probs.device());
  const CtcCall call = prepare(log_probs, targets, input_lengths, target_lengths, blank, "ctc_loss_backward");
  const int device = device_index(log_probs);
  auto out = at::empty({call.T, call.B, call.C}, log_probs.options());
  if (out.numel() == 0) return out;
  TORCH_CHECK(log_alpha.sizes() == at::IntArrayRef({call.B, call.T, call.S}) && log_alpha.is_contiguous() &&
                  neg_log_likelihood.numel() == call.B && grad.numel() == call.B,
              "ctc_loss_backward: log_alpha, neg_log_likelihood and grad must be the forward's");
  const auto log_beta = at::full_like(log_alpha, -std::numeric_limits<double>::infinity());
  const auto nll = neg_log_likelihood.contiguous();
  const auto g = grad.expand({call.B});
  const auto lp_stride = [&](int64_t d) -> cl_long { return log_probs.stride(d); };
  cl_kernel k = tocl::get_kernel(ctc_program(device, log_probs.scalar_type()), "ctc_grad");
  tocl::set_args(k, buffer_arg(log_probs), lp_stride(0), lp_stride(1), lp_stride(2), buffer_arg(call.targets),
                 static_cast<cl_long>(call.tg_stride), buffer_arg(call.tg_batch), buffer_arg(call.in_len),
                 buffer_arg(call.tg_len), buffer_arg(log_alpha), buffer_arg(log_beta), static_cast<cl_int>(call.T),
                 static_cast<cl_int>(call.S), buffer_arg(nll), buffer_arg(g), static_cast<cl_long>(g.stride(0)),
                 buffer_arg(out), static_cast<cl_int>(call.B), static_cast<cl_int>(blank),
                 static_cast<cl_int>(call.C), static_cast<cl_int>(zero_infinity));
  const size_t wg = group_size(device);
  tocl::enqueue_1d(device, current_stream_of(log_probs), k, static_cast<size_t>(call.B) * wg, wg);
  return out;
}

std::vector<int64_t> host_lengths(const at::Tensor& t, const char* name) {
  TORCH_CHECK(at::isIntegralType(t.scalar_type(), /*includeBool=*/false), name, " must be integral");
  const auto h = t.to(at::kCPU, at::kLong).contiguous();
  return std::vector<int64_t>(h.const_data_ptr<int64_t>(), h.const_data_ptr<int64_t>() + h.numel());
}

std::tuple<at::Tensor, at::Tensor> ctc_loss_tensor(const at::Tensor& log_probs, const at::Tensor& targets,
                                                   const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                                                   int64_t blank, bool zero_infinity) {
  return ctc_loss(log_probs, targets, host_lengths(input_lengths, "input_lengths"),
                  host_lengths(target_lengths, "target_lengths"), blank, zero_infinity);
}

at::Tensor ctc_loss_backward_tensor(const at::Tensor& grad, const at::Tensor& log_probs, const at::Tensor& targets,
                                    const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                                    const at::Tensor& neg_log_likelihood, const at::Tensor& log_alpha, int64_t blank,
                                    bool zero_infinity) {
  return ctc_loss_backward(grad, log_probs, targets, host_lengths(input_lengths, "input_lengths"),
                           host_lengths(target_lengths, "target_lengths"), neg_log_likelihood, log_alpha, blank,
                           zero_infinity);
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("_ctc_loss", TORCH_FN(ctc_loss));
  m.impl("_ctc_loss.Tensor", TORCH_FN(ctc_loss_tensor));
  m.impl("_ctc_loss_backward", TORCH_FN(ctc_loss_backward));
  m.impl("_ctc_loss_backward.Tensor", TORCH_FN(ctc_loss_backward_tensor));
}

}  // namespace torch_opencl
