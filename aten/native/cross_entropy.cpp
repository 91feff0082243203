// cross_entropy over class indices in two launches forward and one backward (kernels_cl/cross_entropy.cl)
// instead of CPU's composite, log_softmax + nll_loss: that writes log_softmax's (N, C) output, reads it
// back for the loss, checks the targets in launches of their own, and its backward zeroes, scatters and
// reads two (N, C) tensors. Logits (N, C), (N, C, d1, ...) or (C); label smoothing included. Registered
// for AutogradPrivateUse1, so the fused forward saves what its backward needs (the logits and two numbers
// per row). Everything it does not take runs the composite, unchanged: probability targets, integer targets
// other than int64, a weight that needs a gradient, tracing
// (torch.compile, export: Inductor fuses the composite itself), functorch transforms, dispatch modes and
// forward-mode AD. A backward that builds a graph (create_graph) recomputes the composite and
// differentiates it.
#include <ATen/ATen.h>
#include <ATen/core/Reduction.h>
#include <ATen/ops/cross_entropy_loss_native.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <climits>

#include "aten/kernel_support/acc_arg.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/line_geometry.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/native/index_bounds.h"
#include "runtime/deferred_errors.h"
#include "runtime/device.h"
#include "runtime/kernel_forms.h"
#include "runtime/memcpy.h"

namespace torch_opencl {
namespace {

using at::Tensor;

std::string target_out_of_bounds(int64_t target) { return "Target " + std::to_string(target) + " is out of bounds."; }

int error_site() {
  static const int site = tocl::error_site("cross_entropy", [](int64_t t, int64_t) { return target_out_of_bounds(t); });
  return site;
}

// Logits (N, C, d1, ...) as `rows` rows of C classes, `inner` = d1 * ... apart (1 for (N, C)).
struct Geometry {
  int64_t rows, C, inner;
};

Geometry geometry(const Tensor& x) {
  const int64_t C = x.size(1);
  return {x.numel() / C, C, x.numel() / (C * x.size(0))};
}

// How the kernels run: the rows form (seg == 0, a work-item per row, `groups` = rows) where the device is a
// CPU with rows enough for its cores and the rows are contiguous, else the lines form (seg items per row,
// `groups` work-groups).
struct Plan {
  int seg;
  size_t global, local;
  int64_t groups;
};

Plan plan(int device, const Geometry& g) {
  const auto& forms = tocl::kernel_forms(device);
  const int64_t units = std::max<int64_t>(1, tocl::device_info(device).compute_units);
  if (!forms.row_gpu_forms && g.inner == 1 && g.rows >= 8 * units) {
    const size_t local = 64;
    return {0, (static_cast<size_t>(g.rows) + local - 1) / local * local, local, g.rows};
  }
  const auto l = line_launch(device, g.C, g.inner, g.rows);
  return {l.seg, l.global, l.local, static_cast<int64_t>(l.global / l.local)};
}

// A tensor as the eager kernels see it: no tracing or transform wraps it, no mode watches the call.
bool plain_eager(const Tensor& t) {
  static const c10::DispatchKeySet wrapped({c10::DispatchKey::Python, c10::DispatchKey::PythonTLSSnapshot,
                                            c10::DispatchKey::Functionalize, c10::DispatchKey::FuncTorchBatched,
                                            c10::DispatchKey::FuncTorchGradWrapper,
                                            c10::DispatchKey::FuncTorchDynamicLayerFrontMode});
  return t.device().type() == c10::DeviceType::PrivateUse1 && !t.key_set().has_any(wrapped) &&
         !t._fw_grad(/*level=*/0).defined();
}

bool fused_applies(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, int64_t reduction,
                   double label_smoothing) {
  // Smoothing outside [0, 1] is the composite's error.
  if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0) || c10::impl::TorchDispatchModeTLS::stack_len() > 0)
    return false;
  if (c10::impl::tls_is_dispatch_key_included(c10::DispatchKey::FuncTorchDynamicLayerFrontMode)) return false;
  if (reduction < at::Reduction::None || reduction > at::Reduction::Sum) return false;  // as the composite treats it
  if (!plain_eager(self) || !plain_eager(target) || target.scalar_type() != at::kLong) return false;
  // (N, C, d1, ...) with target (N, d1, ...), or (C) with a 0-d target.
  const bool rows = self.dim() >= 2 && target.dim() == self.dim() - 1 && target.size(0) == self.size(0) &&
                    target.sizes().slice(1).equals(self.sizes().slice(2));
  const bool single = self.dim() == 1 && target.dim() == 0;
  if (!(rows || single) || self.numel() == 0 || target.numel() >= INT_MAX) return false;
  if (self.device() != target.device()) return false;
  const auto type = self.scalar_type();
  if (type != at::kFloat && !(type == at::kDouble && tocl::device_info(device_index(self)).fp64)) return false;
  if (weight.has_value() && weight->defined()) {
    const auto& w = *weight;
    if (!plain_eager(w) || w.requires_grad() || w.scalar_type() != type || w.device() != self.device() ||
        w.dim() != 1 || w.size(0) != self.size(self.dim() == 1 ? 0 : 1))
      return false;
  }
  return true;
}

struct Forward {
  Tensor loss, stats, total_weight;
};

// Raises CPU's error for the first bad target, read back from the forward's `bad` word.
void raise_first_bad_target(const Tensor& bad, const Tensor& target, int device, int stream) {
  int first = INT_MAX;
  tocl::copy_device_to_host(device, stream, &first, bad.const_data_ptr(), sizeof(first));
  if (first == INT_MAX) return;
  TORCH_CHECK_INDEX(false, target_out_of_bounds(target.reshape({-1})[first].item<int64_t>()));
}

// A call's contiguous operands, their geometry, device and stream, and how its kernels run.
struct Call {
  Tensor x, tgt, weight;  // weight: undefined without one
  Geometry g;
  int device, stream;
  Plan p;
  Call(const Tensor& self, const Tensor& target, const Tensor& weight_)
      : x(self.contiguous()),
        tgt(target.contiguous()),
        weight(weight_.defined() ? weight_.contiguous() : Tensor()),
        g(geometry(x)),
        device(device_index(x)),
        stream(current_stream_of(x)),
        p(plan(device, g)) {}

  const char* form(const char* rows, const char* lines) const { return p.seg > 0 ? lines : rows; }
  tocl::BufferArg weight_arg() const { return buffer_arg(weight.defined() ? weight : x); }
  bool is_double() const { return x.scalar_type() == at::kDouble; }

  // Sets the arguments (the lines form's own last) and launches.
  template <typename... Args>
  void launch(cl_kernel k, const Args&... args) const {
    if (p.seg > 0) {
      tocl::set_args(k, args..., static_cast<cl_long>(g.inner), static_cast<cl_int>(p.seg));
    } else {
      tocl::set_args(k, args...);
    }
    tocl::enqueue_1d(device, stream, k, p.global, p.local);
  }
};

Forward forward(const Tensor& self, const Tensor& target, const Tensor& weight, int64_t reduction,
                int64_t ignore_index, double smoothing) {
  const c10::DeviceGuard guard(self.device());
  const Call c(self, target, weight);
  const auto acc = c.x.options().dtype(c.is_double() ? at::kDouble : at::kFloat);
  const bool reduce = reduction != at::Reduction::None;
  Forward r{reduce ? at::empty({}, c.x.options()) : at::empty(c.tgt.sizes(), c.x.options()),
            at::empty({c.g.rows, 2}, acc), at::empty({}, c.x.options())};

  // Bad targets: recorded for the next wait where index checks are deferred, else read back below.
  const bool deferred = index_checks_deferred(c.tgt);
  Tensor bad_word;
  tocl::BufferArg bad;
  if (deferred) {
    const auto record = tocl::site_record(c.device, error_site());
    bad = tocl::BufferArg{record.buffer, record.offset / sizeof(int32_t)};
  } else {
    static const int kNone = INT_MAX;  // static: the copy does not wait
    bad_word = at::empty({1}, c.x.options().dtype(at::kInt));
    tocl::copy_host_to_device(c.device, c.stream, bad_word.mutable_data_ptr(), &kNone, sizeof(kNone), false);
    bad = buffer_arg(bad_word);
  }

  const auto partial = reduce ? at::empty({2 * c.p.groups}, acc) : r.stats;
  const AccArg smooth(smoothing, c.is_double());
  c.launch(dtype_kernel(c.x, "cross_entropy.cl", c.form("cross_entropy_rows", "cross_entropy_lines")),
           buffer_arg(r.loss), buffer_arg(partial), buffer_arg(r.stats), buffer_arg(c.x), buffer_arg(c.tgt),
           c.weight_arg(), static_cast<cl_int>(c.weight.defined()), bad, static_cast<cl_int>(!deferred),
           static_cast<cl_long>(c.g.rows), static_cast<cl_long>(c.g.C), static_cast<cl_long>(ignore_index),
           static_cast<cl_int>(reduce), smooth.arg);
  if (reduce) {
    cl_kernel finish = dtype_kernel(c.x, "loss_gpu.cl", "nll_reduce_finish");
    tocl::set_args(finish, buffer_arg(r.loss), buffer_arg(r.total_weight), buffer_arg(partial),
                   static_cast<cl_long>(c.p.groups), static_cast<cl_int>(reduction == at::Reduction::Mean));
    tocl::enqueue_1d(c.device, c.stream, finish, row_group(c.device), row_group(c.device));
  }
  if (deferred) {
    tocl::arm_error_site(c.device, c.stream, error_site());
  } else {
    raise_first_bad_target(bad_word, c.tgt, c.device, c.stream);
  }
  return r;
}

Tensor backward(const Tensor& grad, const Tensor& self, const Tensor& target, const Tensor& weight,
                const Tensor& stats, const Tensor& total_weight, int64_t reduction, int64_t ignore_index,
                double smoothing) {
  const c10::DeviceGuard guard(self.device());
  const Call c(self, target, weight);
  const bool none = reduction == at::Reduction::None;
  // 'none' reads one gradient per row, `go_stride` apart (0 where it was expanded from a sum).
  const auto go = none ? grad.reshape({-1}) : grad.reshape({-1}).narrow(0, 0, 1);
  auto grad_in = at::empty(c.x.sizes(), c.x.options());
  // With smoothing, every class's weight enters each row's gradient through their sum.
  const auto weight_sum = smoothing != 0 && c.weight.defined() ? c.weight.sum() : c.x;
  const AccArg smooth(smoothing, c.is_double());
  c.launch(dtype_kernel(c.x, "cross_entropy.cl", c.form("cross_entropy_backward_rows", "cross_entropy_backward_lines")),
           buffer_arg(grad_in), buffer_arg(go), static_cast<cl_long>(none ? go.stride(0) : 0), buffer_arg(c.x),
           buffer_arg(stats), buffer_arg(c.tgt), c.weight_arg(), static_cast<cl_int>(c.weight.defined()),
           buffer_arg(total_weight), buffer_arg(weight_sum), static_cast<cl_int>(reduction == at::Reduction::Mean),
           smooth.arg, static_cast<cl_long>(c.g.rows), static_cast<cl_long>(c.g.C), static_cast<cl_long>(ignore_index));
  return grad_in;
}

struct FusedCrossEntropy : public torch::autograd::Function<FusedCrossEntropy> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, const Tensor& self, const Tensor& target,
                        const std::optional<Tensor>& weight_arg, int64_t reduction, int64_t ignore_index,
                        double smoothing) {
    const Tensor weight = weight_arg.has_value() ? *weight_arg : Tensor();
    auto r = torch_opencl::forward(self, target, weight, reduction, ignore_index, smoothing);
    ctx->save_for_backward({self, target, weight, r.stats, r.total_weight});
    ctx->saved_data["reduction"] = reduction;
    ctx->saved_data["ignore_index"] = ignore_index;
    ctx->saved_data["smoothing"] = smoothing;
    return r.loss;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto& self = saved[0];
    const auto& target = saved[1];
    const auto& weight = saved[2];
    const auto reduction = ctx->saved_data["reduction"].toInt();
    const auto ignore_index = ctx->saved_data["ignore_index"].toInt();
    const auto smoothing = ctx->saved_data["smoothing"].toDouble();
    Tensor grad_self;
    if (at::GradMode::is_enabled()) {
      // create_graph: the gradient of the composite, recomputed, so that it has derivatives of its own.
      const auto loss = at::native::cross_entropy_loss_symint(
          self, target, weight.defined() ? std::optional<Tensor>(weight) : std::nullopt, reduction, ignore_index,
          smoothing);
      grad_self = torch::autograd::grad({loss}, {self}, {grads[0]}, /*retain_graph=*/true, /*create_graph=*/true)[0];
    } else {
      grad_self = torch_opencl::backward(grads[0], self, target, weight, saved[3], saved[4], reduction, ignore_index,
                                         smoothing);
    }
    return {grad_self, Tensor(), Tensor(), Tensor(), Tensor(), Tensor()};
  }
};

Tensor cross_entropy_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
                          int64_t reduction, c10::SymInt ignore_index, double label_smoothing) {
  if (!fused_applies(self, target, weight, reduction, label_smoothing))
    return at::native::cross_entropy_loss_symint(self, target, weight, reduction, std::move(ignore_index),
                                                 label_smoothing);
  const int64_t ignore = ignore_index.expect_int();
  if (self.dim() == 1) {  // (C,) with a 0-d target: one row
    auto loss =
        FusedCrossEntropy::apply(self.unsqueeze(0), target.unsqueeze(0), weight, reduction, ignore, label_smoothing);
    return reduction == at::Reduction::None ? loss.squeeze(0) : loss;
  }
  return FusedCrossEntropy::apply(self, target, weight, reduction, ignore, label_smoothing);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) { m.impl("cross_entropy_loss", TORCH_FN(cross_entropy_loss)); }

}  // namespace torch_opencl
