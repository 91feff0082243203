// 2-d pooling: max_pool2d_with_indices, avg_pool2d, _adaptive_avg_pool2d, adaptive_max_pool2d and
// their backwards. ATen's structured meta functions check arguments and shape
// outputs as on CPU; kernels in kernels_cl/pooling.cl run over contiguous
// (N * C, H, W) planes, one work-item per output (forward) or input (backward) element.
// Max pooling picks among loop-free kernels PoCL vectorises (windows up to 3x3; a scatter
// backward for windows that cannot overlap; a gather one for up to 3 windows per point) and
// looping ones for larger windows. Adaptive pooling to 1x1 of large planes is a mean where the
// kernel forms want coalesced reductions (runtime/kernel_forms.h).
#include <ATen/ATen.h>
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <tuple>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/kernel_support/structured.h"
#include "fallback/fallback.h"
#include "runtime/kernel_forms.h"

namespace torch_opencl {
namespace {

using at::IntArrayRef;
using at::Tensor;

struct Pool {  // as in kernels_cl/pooling.cl
  cl_long kH, kW, dH, dW, padH, padW, dilH, dilW;
  cl_long IH, IW, OH, OW;
};

// ATen's argument conventions: one value means both; an empty stride means the kernel size.
Pool pool_params(IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                 const Tensor& input, const Tensor& output) {
  Pool p{};
  p.kH = kernel[0];
  p.kW = kernel.size() == 1 ? p.kH : kernel[1];
  p.dH = stride.empty() ? p.kH : stride[0];
  p.dW = stride.empty() ? p.kW : stride.size() == 1 ? p.dH : stride[1];
  p.padH = padding[0];
  p.padW = padding.size() == 1 ? p.padH : padding[1];
  p.dilH = dilation.empty() ? 1 : dilation[0];
  p.dilW = dilation.empty() ? 1 : dilation.size() == 1 ? p.dilH : dilation[1];
  p.IH = input.size(-2);
  p.IW = input.size(-1);
  p.OH = output.size(-2);
  p.OW = output.size(-1);
  return p;
}

// Runs `fill(contiguous)` for `out`, through a contiguous temporary when `out` is not (channels_last).
template <class F>
void into(const Tensor& out, F fill) {
  if (out.numel() == 0) return;
  if (out.is_contiguous()) return fill(out);
  auto tmp = at::empty(out.sizes(), out.options());
  fill(tmp);
  out.copy_(tmp);
}

void launch(const Tensor& like, const char* name, int64_t total, cl_kernel k) {
  tocl::enqueue_1d(device_index(like), current_stream_of(like), k, total);
}

// ---- max_pool2d_with_indices ----

struct MaxPool {  // as in kernels_cl/pooling.cl: 32-bit sizes and the reciprocals its divisions use
  cl_int kH, kW, dH, dW, padH, padW, dilH, dilW;
  cl_int IH, IW, OH, OW;
  cl_float inv_IW, inv_IH, inv_OW, inv_OH, inv_dH, inv_dW, inv_dilH, inv_dilW;
};

constexpr int64_t kChunk = int64_t{1} << 22;  // the kernels' index math is exact below this

// Planes of kChunk elements or more run on the CPU (counted as a fallback).
bool max_pool_fits(const Pool& p) { return p.IH * p.IW < kChunk && p.OH * p.OW < kChunk; }

MaxPool max_pool_params(const Pool& p) {
  auto i = [](int64_t v) { return static_cast<cl_int>(v); };
  auto inv = [](int64_t v) { return 1.0f / static_cast<float>(v); };
  return {i(p.kH), i(p.kW), i(p.dH), i(p.dW), i(p.padH), i(p.padW), i(p.dilH), i(p.dilW),
          i(p.IH), i(p.IW), i(p.OH), i(p.OW),
          inv(p.IW), inv(p.IH), inv(p.OW), inv(p.OH), inv(p.dH), inv(p.dW), inv(p.dilH), inv(p.dilW)};
}

// The kernels' index math is exact below kChunk: planes go in chunks of fewer than kChunk elements (input and
// output), each launch shifting the buffers' offsets. launch_chunk(first plane, planes).
template <class F>
void for_plane_chunks(int64_t planes, const Pool& p, F launch_chunk) {
  const int64_t per_plane = std::max<int64_t>({p.IH * p.IW, p.OH * p.OW, 1});
  const int64_t chunk = std::max<int64_t>((kChunk - 1) / per_plane, 1);
  for (int64_t first = 0; first < planes; first += chunk) launch_chunk(first, std::min(chunk, planes - first));
}

// 2x2 windows of stride 2, unpadded and undilated, inside the input: kernels_cl/pooling.cl's 2x2 forward.
bool two_by_two(const Pool& p) {
  return p.kH == 2 && p.kW == 2 && p.dH == 2 && p.dW == 2 && p.padH == 0 && p.padW == 0 && p.dilH == 1 &&
         p.dilW == 1 && 2 * p.OH <= p.IH && 2 * p.OW <= p.IW;
}

tocl::BufferArg shifted(const Tensor& t, int64_t elements) {
  auto b = buffer_arg(t);
  b.offset += elements;
  return b;
}

void max_pool_forward(const Tensor& self, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                      IntArrayRef dilation, bool ceil_mode, const Tensor& out, const Tensor& indices) {
  if (out.numel() == 0) return;
  const c10::DeviceGuard guard(self.device());
  const auto in = self.contiguous();
  const Pool p = pool_params(kernel, stride, padding, dilation, in, out);
  if (!max_pool_fits(p)) {
    record_fallback_call("aten::max_pool2d_with_indices");
    auto [o, i] = at::max_pool2d_with_indices(self.cpu(), kernel, stride, padding, dilation, ceil_mode);
    out.copy_(o);
    indices.copy_(i);
    return;
  }
  const MaxPool mp = max_pool_params(p);
  auto ind = indices.is_contiguous() ? indices : at::empty(indices.sizes(), indices.options());
  into(out, [&](const Tensor& o) {
    const char* name = two_by_two(p)                ? "max_pool2d_forward_2x2"
                       : p.kH <= 3 && p.kW <= 3 ? "max_pool2d_forward_3x3"
                                                : "max_pool2d_forward";
    cl_kernel k = dtype_kernel(in, "pooling.cl", name);
    for_plane_chunks(o.numel() / (p.OH * p.OW), p, [&](int64_t first, int64_t planes) {
      const int64_t at = first * p.OH * p.OW, total = planes * p.OH * p.OW;
      tocl::set_args(k, shifted(o, at), shifted(ind, at), shifted(in, first * p.IH * p.IW),
                     static_cast<cl_int>(total), mp);
      launch(in, name, total, k);
    });
  });
  if (!ind.is_same(indices)) indices.copy_(ind);
}

void max_pool_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel, IntArrayRef stride,
                       IntArrayRef padding, IntArrayRef dilation, bool ceil_mode, const Tensor& indices,
                       const Tensor& grad_input) {
  check_same_device({grad_output, self, indices, grad_input});
  if (grad_input.numel() == 0) return;
  const c10::DeviceGuard guard(self.device());
  const auto go = grad_output.contiguous();
  const auto ind = indices.contiguous();
  const Pool p = pool_params(kernel, stride, padding, dilation, self, go);
  if (!max_pool_fits(p)) {
    record_fallback_call("aten::max_pool2d_with_indices_backward");
    grad_input.copy_(at::max_pool2d_with_indices_backward(grad_output.cpu(), self.cpu(), kernel, stride, padding,
                                                           dilation, ceil_mode, indices.cpu()));
    return;
  }
  const MaxPool mp = max_pool_params(p);
  // Windows that cannot overlap let each output element store its gradient (one writer per input element).
  const bool disjoint = p.dH >= (p.kH - 1) * p.dilH + 1 && p.dW >= (p.kW - 1) * p.dilW + 1;
  into(grad_input, [&](const Tensor& gi) {
    const int64_t planes = gi.numel() / (p.IH * p.IW);
    if (disjoint) {
      gi.zero_();
      if (go.numel() == 0) return;
      cl_kernel k = dtype_kernel(gi, "pooling.cl", "max_pool2d_backward_scatter");
      for_plane_chunks(planes, p, [&](int64_t first, int64_t n) {
        const int64_t at = first * p.OH * p.OW, total = n * p.OH * p.OW;
        tocl::set_args(k, shifted(gi, first * p.IH * p.IW), shifted(go, at), shifted(ind, at),
                       static_cast<cl_int>(total), mp);
        launch(gi, "max_pool2d_backward_scatter", total, k);
      });
      return;
    }
    // At most 3 windows per dimension hold a point: the unrolled kernel.
    const bool few = (p.kH - 1) * p.dilH + 1 <= 3 * p.dH && (p.kW - 1) * p.dilW + 1 <= 3 * p.dW;
    const char* name = few ? "max_pool2d_backward_3x3" : "max_pool2d_backward";
    cl_kernel k = dtype_kernel(gi, "pooling.cl", name);
    for_plane_chunks(planes, p, [&](int64_t first, int64_t n) {
      const int64_t at = first * p.OH * p.OW, total = n * p.IH * p.IW;
      tocl::set_args(k, shifted(gi, first * p.IH * p.IW), go.numel() ? shifted(go, at) : buffer_arg(gi),
                     ind.numel() ? shifted(ind, at) : buffer_arg(gi), static_cast<cl_int>(total), mp);
      launch(gi, name, total, k);
    });
  });
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices_functional(const Tensor& self, IntArrayRef kernel, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  StructuredFunctional<at::meta::structured_max_pool2d_with_indices, 2> op;
  op.meta(self, kernel, stride, padding, dilation, ceil_mode);
  max_pool_forward(self, kernel, stride, padding, dilation, ceil_mode, op.maybe_get_output(0), op.maybe_get_output(1));
  return {op.take(0), op.take(1)};
}

std::tuple<Tensor&, Tensor&> max_pool2d_with_indices_out(const Tensor& self, IntArrayRef kernel, IntArrayRef stride,
                                                         IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                                         Tensor& out, Tensor& indices) {
  auto [o, i] = max_pool2d_with_indices_functional(self, kernel, stride, padding, dilation, ceil_mode);
  at::native::resize_output(out, o.sizes());
  at::native::resize_output(indices, i.sizes());
  out.copy_(o);
  indices.copy_(i);
  return {out, indices};
}

Tensor max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel,
                                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                        const Tensor& indices) {
  StructuredFunctional<at::meta::structured_max_pool2d_with_indices_backward> op;
  op.meta(grad_output, self, kernel, stride, padding, dilation, ceil_mode, indices);
  max_pool_backward(grad_output, self, kernel, stride, padding, dilation, ceil_mode, indices, op.maybe_get_output(0));
  return op.take();
}

Tensor& max_pool2d_with_indices_backward_out(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel,
                                             IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                             bool ceil_mode, const Tensor& indices, Tensor& grad_input) {
  StructuredOut<at::meta::structured_max_pool2d_with_indices_backward> op(grad_input);
  op.meta(grad_output, self, kernel, stride, padding, dilation, ceil_mode, indices);
  max_pool_backward(grad_output, self, kernel, stride, padding, dilation, ceil_mode, indices, op.maybe_get_output(0));
  op.finish();
  return grad_input;
}

// ---- avg_pool2d ----

void avg_forward(const Tensor& self, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                 bool count_include_pad, std::optional<int64_t> divisor, const Tensor& out) {
  if (out.numel() == 0) return;
  const c10::DeviceGuard guard(self.device());
  const auto in = self.contiguous();
  const Pool p = pool_params(kernel, stride, padding, {}, in, out);
  into(out, [&](const Tensor& o) {
    cl_kernel k = dtype_kernel(in, "pooling.cl", "avg_pool2d_forward");
    tocl::set_args(k, buffer_arg(o), buffer_arg(in), static_cast<cl_long>(o.numel()), p,
                   static_cast<cl_int>(count_include_pad), static_cast<cl_long>(divisor.value_or(0)));
    launch(in, "avg_pool2d_forward", o.numel(), k);
  });
}

void avg_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel, IntArrayRef stride,
                  IntArrayRef padding, bool count_include_pad, std::optional<int64_t> divisor,
                  const Tensor& grad_input) {
  check_same_device({grad_output, self, grad_input});
  if (grad_input.numel() == 0) return;
  const c10::DeviceGuard guard(self.device());
  const auto go = grad_output.contiguous();
  const Pool p = pool_params(kernel, stride, padding, {}, self, go);
  into(grad_input, [&](const Tensor& gi) {
    cl_kernel k = dtype_kernel(gi, "pooling.cl", "avg_pool2d_backward");
    tocl::set_args(k, buffer_arg(gi), buffer_arg(go.numel() ? go : gi), static_cast<cl_long>(gi.numel()), p,
                   static_cast<cl_int>(count_include_pad), static_cast<cl_long>(divisor.value_or(0)));
    launch(gi, "avg_pool2d_backward", gi.numel(), k);
  });
}

Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor) {
  StructuredFunctional<at::meta::structured_avg_pool2d> op;
  op.meta(self, kernel, stride, padding, ceil_mode, count_include_pad, divisor);
  avg_forward(self, kernel, stride, padding, count_include_pad, divisor, op.maybe_get_output(0));
  return op.take();
}

Tensor& avg_pool2d_out(const Tensor& self, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                       bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor, Tensor& out) {
  StructuredOut<at::meta::structured_avg_pool2d> op(out);
  op.meta(self, kernel, stride, padding, ceil_mode, count_include_pad, divisor);
  avg_forward(self, kernel, stride, padding, count_include_pad, divisor, op.maybe_get_output(0));
  op.finish();
  return out;
}

Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel, IntArrayRef stride,
                           IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor) {
  StructuredFunctional<at::meta::structured_avg_pool2d_backward> op;
  op.meta(grad_output, self, kernel, stride, padding, ceil_mode, count_include_pad, divisor);
  avg_backward(grad_output, self, kernel, stride, padding, count_include_pad, divisor, op.maybe_get_output(0));
  return op.take();
}

Tensor& avg_pool2d_backward_out(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel,
                                IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                                std::optional<int64_t> divisor, Tensor& grad_input) {
  StructuredOut<at::meta::structured_avg_pool2d_backward> op(grad_input);
  op.meta(grad_output, self, kernel, stride, padding, ceil_mode, count_include_pad, divisor);
  avg_backward(grad_output, self, kernel, stride, padding, count_include_pad, divisor, op.maybe_get_output(0));
  op.finish();
  return grad_input;
}

// ---- _adaptive_avg_pool2d (not structured: CPU's checks, restated) ----

constexpr int64_t kGlobalPoolAsMean = 64;  // plane elements from which a 1x1 output is a mean (GPU forms)

Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) {
  TORCH_CHECK(output_size.size() == 2, "adaptive_avg_pool2d: output_size must be 2");
  TORCH_CHECK(output_size[0] >= 0 && output_size[1] >= 0,
              "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {",
              output_size[0], ", ", output_size[1], "}");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ",
              self.sizes());
  for (int64_t i = 1; i < self.dim(); ++i)
    TORCH_CHECK(self.size(i) > 0, "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch ",
                "dimensions, but input has sizes ", self.sizes(), " with dimension ", i, " being empty");
  const c10::DeviceGuard guard(self.device());
  auto sizes = self.sizes().vec();
  sizes[self.dim() - 2] = output_size[0];
  sizes[self.dim() - 1] = output_size[1];
  auto out = at::empty(sizes, self.options());
  if (out.numel() == 0) return out;
  // Global pooling of large planes is a reduction: where the kernel forms want coalesced reductions
  // (GPUs), the reduction engine beats a work-item walking a whole plane.
  if (output_size[0] == 1 && output_size[1] == 1 && self.size(-1) * self.size(-2) >= kGlobalPoolAsMean &&
      tocl::kernel_forms(device_index(self)).reduce_coalesced) {
    at::mean_out(out, self, {-2, -1}, /*keepdim=*/true);
    return out;
  }
  const auto in = self.contiguous();
  const Pool p = pool_params({1}, {}, {0}, {}, in, out);
  cl_kernel k = dtype_kernel(in, "pooling.cl", "adaptive_avg_pool2d_forward");
  tocl::set_args(k, buffer_arg(out), buffer_arg(in), static_cast<cl_long>(out.numel()), p);
  launch(in, "adaptive_avg_pool2d_forward", out.numel(), k);
  return out;
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self) {
  TORCH_CHECK(grad_output.dim() == self.dim() && (self.dim() == 3 || self.dim() == 4),
              "adaptive_avg_pool2d_backward(): Expected 3D or 4D grad_output and input of the same rank, got ",
              grad_output.sizes(), " and ", self.sizes());
  TORCH_CHECK(grad_output.scalar_type() == self.scalar_type(), "expected dtype ", self.scalar_type(),
              " for `grad_output` but got dtype ", grad_output.scalar_type());
  check_same_device({grad_output, self});
  const c10::DeviceGuard guard(self.device());
  auto grad_input = at::empty(self.sizes(), self.options());
  if (grad_input.numel() == 0) return grad_input;
  const auto go = grad_output.contiguous();
  const Pool p = pool_params({1}, {}, {0}, {}, self, go);
  cl_kernel k = dtype_kernel(grad_input, "pooling.cl", "adaptive_avg_pool2d_backward");
  tocl::set_args(k, buffer_arg(grad_input), buffer_arg(go.numel() ? go : grad_input),
                 static_cast<cl_long>(grad_input.numel()), p);
  launch(grad_input, "adaptive_avg_pool2d_backward", grad_input.numel(), k);
  return grad_input;
}

// ---- adaptive_max_pool2d (structured: ATen's meta functions check and shape the outputs, channels_last
// as the input) ----

// CPU's kernels take the floating dtypes (half and bfloat16 included); others raise its error.
void check_adaptive_max_dtype(const Tensor& t) {
  const auto type = t.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16,
                              "\"adaptive_max_pool2d\" not implemented for '", c10::toString(type), "'");
}

void adaptive_max_forward(const Tensor& self, const Tensor& out, const Tensor& indices) {
  check_adaptive_max_dtype(self);
  if (out.numel() == 0) return;
  const c10::DeviceGuard guard(self.device());
  const auto in = self.contiguous();
  const Pool p = pool_params({1}, {}, {0}, {}, in, out);
  auto ind = indices.is_contiguous() ? indices : at::empty(indices.sizes(), indices.options());
  into(out, [&](const Tensor& o) {
    cl_kernel k = dtype_kernel(in, "pooling.cl", "adaptive_max_pool2d_forward");
    tocl::set_args(k, buffer_arg(o), buffer_arg(ind), buffer_arg(in), static_cast<cl_long>(o.numel()), p);
    launch(in, "adaptive_max_pool2d_forward", o.numel(), k);
  });
  if (!ind.is_same(indices)) indices.copy_(ind);
}

void adaptive_max_backward(const Tensor& grad_output, const Tensor& self, const Tensor& indices,
                           const Tensor& grad_input) {
  check_same_device({grad_output, self, indices, grad_input});
  check_adaptive_max_dtype(self);
  if (grad_input.numel() == 0) return;
  const c10::DeviceGuard guard(self.device());
  const auto go = grad_output.contiguous();
  const auto ind = indices.contiguous();
  const Pool p = pool_params({1}, {}, {0}, {}, self, go);
  into(grad_input, [&](const Tensor& gi) {
    if (go.numel() == 0) {
      gi.zero_();
      return;
    }
    // Windows that tile the input: a scatter, one writer per input element.
    if (p.IH % p.OH == 0 && p.IW % p.OW == 0) {
      gi.zero_();
      cl_kernel k = dtype_kernel(gi, "pooling.cl", "adaptive_max_pool2d_backward_scatter");
      tocl::set_args(k, buffer_arg(gi), buffer_arg(go), buffer_arg(ind), static_cast<cl_long>(go.numel()), p);
      launch(gi, "adaptive_max_pool2d_backward_scatter", go.numel(), k);
      return;
    }
    cl_kernel k = dtype_kernel(gi, "pooling.cl", "adaptive_max_pool2d_backward");
    tocl::set_args(k, buffer_arg(gi), buffer_arg(go), buffer_arg(ind), static_cast<cl_long>(gi.numel()), p);
    launch(gi, "adaptive_max_pool2d_backward", gi.numel(), k);
  });
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& self, IntArrayRef output_size) {
  StructuredFunctional<at::meta::structured_adaptive_max_pool2d, 2> op;
  op.meta(self, output_size);
  adaptive_max_forward(self, op.maybe_get_output(0), op.maybe_get_output(1));
  return {op.take(0), op.take(1)};
}

std::tuple<Tensor&, Tensor&> adaptive_max_pool2d_out(const Tensor& self, IntArrayRef output_size, Tensor& out,
                                                     Tensor& indices) {
  StructuredOut<at::meta::structured_adaptive_max_pool2d, 2> op(out, indices);
  op.meta(self, output_size);
  adaptive_max_forward(self, op.maybe_get_output(0), op.maybe_get_output(1));
  op.finish();
  return {out, indices};
}

Tensor adaptive_max_pool2d_backward(const Tensor& grad_output, const Tensor& self, const Tensor& indices) {
  StructuredFunctional<at::meta::structured_adaptive_max_pool2d_backward> op;
  op.meta(grad_output, self, indices);
  adaptive_max_backward(grad_output, self, indices, op.maybe_get_output(0));
  return op.take();
}

Tensor& adaptive_max_pool2d_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& indices,
                                         Tensor& grad_input) {
  StructuredOut<at::meta::structured_adaptive_max_pool2d_backward> op(grad_input);
  op.meta(grad_output, self, indices);
  adaptive_max_backward(grad_output, self, indices, op.maybe_get_output(0));
  op.finish();
  return grad_input;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("max_pool2d_with_indices", TORCH_FN(max_pool2d_with_indices_functional));
  m.impl("max_pool2d_with_indices.out", TORCH_FN(max_pool2d_with_indices_out));
  m.impl("max_pool2d_with_indices_backward", TORCH_FN(max_pool2d_with_indices_backward));
  m.impl("max_pool2d_with_indices_backward.grad_input", TORCH_FN(max_pool2d_with_indices_backward_out));
  m.impl("avg_pool2d", TORCH_FN(avg_pool2d));
  m.impl("avg_pool2d.out", TORCH_FN(avg_pool2d_out));
  m.impl("avg_pool2d_backward", TORCH_FN(avg_pool2d_backward));
  m.impl("avg_pool2d_backward.grad_input", TORCH_FN(avg_pool2d_backward_out));
  m.impl("_adaptive_avg_pool2d", TORCH_FN(adaptive_avg_pool2d));
  m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(adaptive_avg_pool2d_backward));
  m.impl("adaptive_max_pool2d", TORCH_FN(adaptive_max_pool2d));
  m.impl("adaptive_max_pool2d.out", TORCH_FN(adaptive_max_pool2d_out));
  m.impl("adaptive_max_pool2d_backward", TORCH_FN(adaptive_max_pool2d_backward));
  m.impl("adaptive_max_pool2d_backward.grad_input", TORCH_FN(adaptive_max_pool2d_backward_out));
}

}  // namespace torch_opencl
