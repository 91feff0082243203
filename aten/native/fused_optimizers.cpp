// torch.optim's fused=True steps: _fused_sgd_, _fused_adam_, _fused_adamw_
// (float and tensor lr). One launch per parameter, no host synchronisation:
// step counts, a tensor lr, grad_scale and found_inf are read on the device.
// Kernels: kernels_cl/optim.cl, one program per parameter dtype.
#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <mutex>
#include <unordered_map>
#include <vector>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/embedded_sources.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

constexpr int64_t kPerItem = 16;  // PER_ITEM in kernels_cl/optim.cl

cl_program optim_program(int device, c10::ScalarType type) {
  static std::mutex mutex;
  static std::unordered_map<int64_t, cl_program> programs;
  const int64_t key = device * 64 + static_cast<int>(type);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = programs.find(key);
  if (it != programs.end()) return it->second;
  std::string source = program_prelude({type});
  source += operand_defines("P", type);
  source += tocl::embedded_sources().at("optim.cl");
  cl_program program = tocl::get_program(device, source);
  programs.emplace(key, program);
  return program;
}

// A float32 device scalar for the kernel (converted or moved there when it is not one).
at::Tensor device_float(const at::Tensor& t, c10::Device device, const char* what) {
  TORCH_CHECK(t.numel() == 1, "fused optimizer: ", what, " must have one element, got ", t.numel());
  if (t.device() == device && t.scalar_type() == c10::kFloat) return t;
  return t.to(device, c10::kFloat);
}

// Kernel arguments of several widths, set in order.
class Args {
 public:
  Args(cl_kernel k, bool wide) : args_(k), wide_(wide) {}
  Args& buf(const at::Tensor& t) { return set(buffer_arg(t)); }
  Args& math(double v) { return wide_ ? set(static_cast<cl_double>(v)) : set(static_cast<cl_float>(v)); }
  Args& flag(bool v) { return set(static_cast<cl_int>(v)); }
  Args& ulong(uint64_t v) { return set(static_cast<cl_ulong>(v)); }
  // An optional float32 device scalar: a flag, then a buffer (`fallback` stands in when absent).
  Args& optional(const std::optional<at::Tensor>& t, const at::Tensor& fallback) {
    flag(t.has_value());
    return buf(t.has_value() ? *t : fallback);
  }
  template <typename T>
  Args& set(const T& v) {
    args_.set(v);
    return *this;
  }

 private:
  tocl::ArgSetter args_;
  bool wide_;
};

// Runs `body(i, contiguous tensors...)` for each parameter: tensors that are not
// contiguous are computed in contiguous copies and copied back.
struct Workspace {
  std::vector<std::pair<at::Tensor, at::Tensor>> write_back;  // (original, contiguous copy)
  at::Tensor use(const at::Tensor& t, bool mutated) {
    if (!t.defined() || t.is_contiguous()) return t;
    at::Tensor c = t.contiguous();
    if (mutated) write_back.emplace_back(t, c);
    return c;
  }
  void finish() {
    for (auto& [orig, copy] : write_back) orig.copy_(copy);
  }
};

void check_lists(const char* op, at::TensorList params, std::initializer_list<at::TensorList> others) {
  for (auto list : others)
    TORCH_CHECK(list.empty() || list.size() == params.size(), op, ": tensor lists must have the same length, got ",
                params.size(), " and ", list.size());
  for (size_t i = 0; i < params.size(); ++i) {
    TORCH_CHECK(!params[i].device().is_cpu(), op, ": expected opencl tensors, got a CPU parameter");
    for (auto list : others) {
      if (list.empty()) continue;
      TORCH_CHECK(list[i].device() == params[i].device() || list[i].numel() == 1, op,
                  ": all tensors must be on the parameter's device ", params[i].device(), ", got ", list[i].device());
      TORCH_CHECK(list[i].numel() == 1 || list[i].sizes() == params[i].sizes(), op, ": tensor ", i,
                  " has size ", list[i].sizes(), " but the parameter has ", params[i].sizes());
    }
  }
}

// The per-step scalars every fused step takes: lr (a CPU tensor is read once into *lr, a
// device one stays on the device, so no sync), and the AMP grad_scale and found_inf.
struct StepTensors {
  std::optional<at::Tensor> lr, grad_scale, found_inf;
  StepTensors(c10::Device device, const std::optional<at::Tensor>& lr_tensor,
              const std::optional<at::Tensor>& scale, const std::optional<at::Tensor>& inf, double* lr_value) {
    if (lr_tensor.has_value()) {
      if (lr_tensor->device().is_cpu())
        *lr_value = lr_tensor->item<double>();
      else
        lr = device_float(*lr_tensor, device, "lr");
    }
    if (scale.has_value()) grad_scale = device_float(*scale, device, "grad_scale");
    if (inf.has_value()) found_inf = device_float(*inf, device, "found_inf");
  }
};

void fused_adam_impl(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs,
                     at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs, at::TensorList steps, double lr,
                     const std::optional<at::Tensor>& lr_tensor, double beta1, double beta2, double weight_decay,
                     double eps, bool amsgrad, bool maximize, const std::optional<at::Tensor>& grad_scale,
                     const std::optional<at::Tensor>& found_inf, bool adamw) {
  const char* op = adamw ? "_fused_adamw_" : "_fused_adam_";
  check_lists(op, params, {grads, exp_avgs, exp_avg_sqs, amsgrad ? max_exp_avg_sqs : at::TensorList(), steps});
  TORCH_CHECK(grads.size() == params.size() && exp_avgs.size() == params.size() &&
                  exp_avg_sqs.size() == params.size() && steps.size() == params.size(),
              op, ": expected ", params.size(), " gradients, states and steps");
  TORCH_CHECK(!amsgrad || max_exp_avg_sqs.size() == params.size(), op, ": amsgrad needs max_exp_avg_sqs");
  if (params.empty()) return;
  const c10::Device device = params[0].device();
  const c10::DeviceGuard guard(device);
  const StepTensors st(device, lr_tensor, grad_scale, found_inf, &lr);
  const auto& [lr_t, scale_t, inf_t] = st;
  Workspace ws;
  for (size_t i = 0; i < params.size(); ++i) {
    const at::Tensor& p0 = params[i];
    if (p0.numel() == 0) continue;
    TORCH_CHECK(p0.device() == device, op, ": all parameters must be on one device, got ", device, " and ",
                p0.device());
    const auto type = p0.scalar_type();
    TORCH_CHECK(at::isFloatingType(type), op, ": parameters must be floating point, got ", type);
    for (const auto& t : {grads[i], exp_avgs[i], exp_avg_sqs[i]})
      TORCH_CHECK(t.scalar_type() == type, op, ": gradients and states must have the parameter's dtype ", type,
                  ", got ", t.scalar_type());
    check_device_supports(type, device.index(), op);
    const at::Tensor p = ws.use(p0, true), g = ws.use(grads[i], false), m = ws.use(exp_avgs[i], true),
                     v = ws.use(exp_avg_sqs[i], true);
    const at::Tensor vmax = amsgrad ? ws.use(max_exp_avg_sqs[i], true) : v;
    const at::Tensor step = device_float(steps[i], device, "state_steps");
    cl_kernel k = tocl::get_kernel(optim_program(device.index(), type), "fused_adam");
    Args a(k, type == c10::kDouble);
    a.buf(p).buf(g).buf(m).buf(v).buf(vmax).buf(step).ulong(p.numel()).math(lr).flag(lr_t.has_value());
    a.buf(lr_t.has_value() ? *lr_t : step).math(beta1).math(beta2).math(weight_decay).math(eps);
    a.flag(amsgrad).flag(maximize).flag(adamw).optional(scale_t, step).optional(inf_t, step);
    tocl::enqueue_1d(device.index(), tocl::current_stream(device.index()), k, (p.numel() + kPerItem - 1) / kPerItem);
  }
  ws.finish();
}

void fused_sgd_impl(at::TensorList params, at::TensorList grads, at::TensorList bufs, double weight_decay,
                    double momentum, double lr, const std::optional<at::Tensor>& lr_tensor, double dampening,
                    bool nesterov, bool maximize, bool first_step, const std::optional<at::Tensor>& grad_scale,
                    const std::optional<at::Tensor>& found_inf) {
  const char* op = "_fused_sgd_";
  check_lists(op, params, {grads, bufs});
  TORCH_CHECK(grads.size() == params.size(), op, ": expected ", params.size(), " gradients, got ", grads.size());
  TORCH_CHECK(momentum == 0 || bufs.size() == params.size(), op, ": momentum needs momentum buffers");
  if (params.empty()) return;
  const c10::Device device = params[0].device();
  const c10::DeviceGuard guard(device);
  const StepTensors st(device, lr_tensor, grad_scale, found_inf, &lr);
  const auto& [lr_t, scale_t, inf_t] = st;
  Workspace ws;
  for (size_t i = 0; i < params.size(); ++i) {
    const at::Tensor& p0 = params[i];
    if (p0.numel() == 0) continue;
    const auto type = p0.scalar_type();
    TORCH_CHECK(at::isFloatingType(type), op, ": parameters must be floating point, got ", type);
    TORCH_CHECK(grads[i].scalar_type() == type, op, ": gradients must have the parameter's dtype ", type, ", got ",
                grads[i].scalar_type());
    check_device_supports(type, device.index(), op);
    const bool has_buf = !bufs.empty() && bufs[i].defined();
    const at::Tensor p = ws.use(p0, true), g = ws.use(grads[i], false);
    const at::Tensor b = has_buf ? ws.use(bufs[i], true) : p;
    cl_kernel k = tocl::get_kernel(optim_program(device.index(), type), "fused_sgd");
    Args a(k, type == c10::kDouble);
    a.buf(p).buf(g).buf(b).flag(has_buf).ulong(p.numel()).math(lr).flag(lr_t.has_value());
    a.buf(lr_t.has_value() ? *lr_t : p).math(weight_decay).math(momentum).math(dampening);
    a.flag(nesterov).flag(maximize).flag(first_step).optional(scale_t, p).optional(inf_t, p);
    tocl::enqueue_1d(device.index(), tocl::current_stream(device.index()), k, (p.numel() + kPerItem - 1) / kPerItem);
  }
  ws.finish();
}

#define ADAM_PARAMS                                                                                              \
  at::TensorList self, at::TensorList grads, at::TensorList exp_avgs, at::TensorList exp_avg_sqs,               \
      at::TensorList max_exp_avg_sqs, at::TensorList state_steps
#define ADAM_TAIL                                                                                                \
  double beta1, double beta2, double weight_decay, double eps, bool amsgrad, bool maximize,                     \
      const std::optional<at::Tensor>&grad_scale, const std::optional<at::Tensor>&found_inf

void fused_adam_(ADAM_PARAMS, double lr, ADAM_TAIL) {
  fused_adam_impl(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, std::nullopt, beta1, beta2,
                  weight_decay, eps, amsgrad, maximize, grad_scale, found_inf, false);
}
void fused_adam_tensor_lr_(ADAM_PARAMS, const at::Tensor& lr, ADAM_TAIL) {
  fused_adam_impl(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, 0, lr, beta1, beta2,
                  weight_decay, eps, amsgrad, maximize, grad_scale, found_inf, false);
}
void fused_adamw_(ADAM_PARAMS, double lr, ADAM_TAIL) {
  fused_adam_impl(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, std::nullopt, beta1, beta2,
                  weight_decay, eps, amsgrad, maximize, grad_scale, found_inf, true);
}
void fused_adamw_tensor_lr_(ADAM_PARAMS, const at::Tensor& lr, ADAM_TAIL) {
  fused_adam_impl(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, 0, lr, beta1, beta2,
                  weight_decay, eps, amsgrad, maximize, grad_scale, found_inf, true);
}
#undef ADAM_PARAMS
#undef ADAM_TAIL

void fused_sgd_(at::TensorList self, at::TensorList grads, at::TensorList bufs, double weight_decay, double momentum,
                double lr, double dampening, bool nesterov, bool maximize, bool is_first_step,
                const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  fused_sgd_impl(self, grads, bufs, weight_decay, momentum, lr, std::nullopt, dampening, nesterov, maximize,
                 is_first_step, grad_scale, found_inf);
}
void fused_sgd_tensor_lr_(at::TensorList self, at::TensorList grads, at::TensorList bufs, double weight_decay,
                          double momentum, const at::Tensor& lr, double dampening, bool nesterov, bool maximize,
                          bool is_first_step, const std::optional<at::Tensor>& grad_scale,
                          const std::optional<at::Tensor>& found_inf) {
  fused_sgd_impl(self, grads, bufs, weight_decay, momentum, 0, lr, dampening, nesterov, maximize, is_first_step,
                 grad_scale, found_inf);
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("_fused_adam_", TORCH_FN(fused_adam_));
  m.impl("_fused_adam_.tensor_lr", TORCH_FN(fused_adam_tensor_lr_));
  m.impl("_fused_adamw_", TORCH_FN(fused_adamw_));
  m.impl("_fused_adamw_.tensor_lr", TORCH_FN(fused_adamw_tensor_lr_));
  m.impl("_fused_sgd_", TORCH_FN(fused_sgd_));
  m.impl("_fused_sgd_.tensor_lr", TORCH_FN(fused_sgd_tensor_lr_));
}

}  // namespace torch_opencl
