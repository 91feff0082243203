// Pooling: max_pool2d_with_indices, max_pool3d_with_indices, avg_pool2d, avg_pool3d, _adaptive_avg_pool2d,
// _adaptive_avg_pool3d, adaptive_max_pool2d, adaptive_max_pool3d and their backwards. ATen's structured meta functions (or CPU's
// checks, restated) check arguments and shape outputs as on CPU; kernels in kernels_cl/pooling.cl run over
// contiguous (N * C, [D,] H, W) planes, one work-item per output (forward) or input (backward) element; the
// average pooling kernels take 2-d pooling as depth 1.
// Max pooling picks among loop-free kernels PoCL vectorises (windows up to 3x3; a scatter
// backward for windows that cannot overlap; a gather one for up to 3 windows per point) and
// looping ones for larger windows. Adaptive pooling to 1x1 of large planes is a mean where the
// kernel forms want coalesced reductions (runtime/kernel_forms.h).
#include <ATen/ATen.h>
#include <ATen/MetaFunctions.h>
#include <ATen/native/Pool.h>
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

struct Pool {  // as in kernels_cl/pooling.cl; 2-d pooling has depth 1 (kernel, stride and dilation 1, no padding)
  cl_long kD, kH, kW, dD, dH, dW, padD, padH, padW, dilD, dilH, dilW;
  cl_long ID, IH, IW, OD, OH, OW;
};

// ATen's argument conventions for `dims` (2 or 3) spatial dims: one value means all; an empty stride means the
// kernel size; an empty dilation means 1.
Pool pool_params(int dims, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                 const Tensor& input, const Tensor& output) {
  const int first = 3 - dims;  // 2-d pooling fills from H
  int64_t k[3] = {1, 1, 1}, d[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dil[3] = {1, 1, 1}, in[3] = {1, 1, 1},
          out[3] = {1, 1, 1};
  for (int i = 0; i < dims; ++i) {
    const int at = first + i;
    k[at] = kernel.size() == 1 ? kernel[0] : kernel[i];
    d[at] = stride.empty() ? k[at] : stride.size() == 1 ? stride[0] : stride[i];
    pad[at] = padding.size() == 1 ? padding[0] : padding[i];
    dil[at] = dilation.empty() ? 1 : dilation.size() == 1 ? dilation[0] : dilation[i];
    in[at] = input.size(i - dims);
    out[at] = output.size(i - dims);
  }
  return {k[0], k[1], k[2], d[0], d[1], d[2], pad[0], pad[1], pad[2], dil[0], dil[1], dil[2],
          in[0], in[1], in[2], out[0], out[1], out[2]};
}

Pool pool_params(IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                 const Tensor& input, const Tensor& output) {
  return pool_params(2, kernel, stride, padding, dilation, input, output);
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

// ---- avg_pool2d, avg_pool3d (one kernel: 2-d pooling is depth 1) ----

// CPU's avg_pool3d kernels take float, double and int64 only.
void check_avg_pool3d_dtype(const Tensor& t, const char* kernel_name) {
  const auto type = t.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble || type == at::kLong, "\"", kernel_name,
                              "\" not implemented for '", c10::toString(type), "'");
}

void avg_forward(int dims, const Tensor& self, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                 bool count_include_pad, std::optional<int64_t> divisor, const Tensor& out) {
  if (dims == 3) check_avg_pool3d_dtype(self, "avg_pool3d_out_frame");
  if (out.numel() == 0) return;
  const c10::DeviceGuard guard(self.device());
  const auto in = self.contiguous();
  const Pool p = pool_params(dims, kernel, stride, padding, {}, in, out);
  into(out, [&](const Tensor& o) {
    cl_kernel k = dtype_kernel(in, "pooling.cl", "avg_pool_forward");
    tocl::set_args(k, buffer_arg(o), buffer_arg(in), static_cast<cl_long>(o.numel()), p,
                   static_cast<cl_int>(count_include_pad), static_cast<cl_long>(divisor.value_or(0)));
    launch(in, "avg_pool_forward", o.numel(), k);
  });
}

void avg_backward(int dims, const Tensor& grad_output, const Tensor& self, IntArrayRef kernel, IntArrayRef stride,
                  IntArrayRef padding, bool count_include_pad, std::optional<int64_t> divisor,
                  const Tensor& grad_input) {
  check_same_device({grad_output, self, grad_input});
  if (dims == 3) check_avg_pool3d_dtype(self, "avg_pool3d_backward_out_frame");
  if (grad_input.numel() == 0) return;
  const c10::DeviceGuard guard(self.device());
  const auto go = grad_output.contiguous();
  const Pool p = pool_params(dims, kernel, stride, padding, {}, self, go);
  into(grad_input, [&](const Tensor& gi) {
    cl_kernel k = dtype_kernel(gi, "pooling.cl", "avg_pool_backward");
    tocl::set_args(k, buffer_arg(gi), buffer_arg(go.numel() ? go : gi), static_cast<cl_long>(gi.numel()), p,
                   static_cast<cl_int>(count_include_pad), static_cast<cl_long>(divisor.value_or(0)));
    launch(gi, "avg_pool_backward", gi.numel(), k);
  });
}

// The four registered forms of avg_pool{2,3}d and their backwards, over ATen's structured meta functions
// (which check the arguments and shape the outputs as on CPU).
template <int dims, class Meta>
Tensor avg_pool(const Tensor& self, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                bool count_include_pad, std::optional<int64_t> divisor) {
  StructuredFunctional<Meta> op;
  op.meta(self, kernel, stride, padding, ceil_mode, count_include_pad, divisor);
  avg_forward(dims, self, kernel, stride, padding, count_include_pad, divisor, op.maybe_get_output(0));
  return op.take();
}

template <int dims, class Meta>
Tensor& avg_pool_out(const Tensor& self, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                     bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor, Tensor& out) {
  StructuredOut<Meta> op(out);
  op.meta(self, kernel, stride, padding, ceil_mode, count_include_pad, divisor);
  avg_forward(dims, self, kernel, stride, padding, count_include_pad, divisor, op.maybe_get_output(0));
  op.finish();
  return out;
}

template <int dims, class Meta>
Tensor avg_pool_backward(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel, IntArrayRef stride,
                         IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                         std::optional<int64_t> divisor) {
  StructuredFunctional<Meta> op;
  op.meta(grad_output, self, kernel, stride, padding, ceil_mode, count_include_pad, divisor);
  avg_backward(dims, grad_output, self, kernel, stride, padding, count_include_pad, divisor, op.maybe_get_output(0));
  return op.take();
}

template <int dims, class Meta>
Tensor& avg_pool_backward_out(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel,
                              IntArrayRef stride, IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                              std::optional<int64_t> divisor, Tensor& grad_input) {
  StructuredOut<Meta> op(grad_input);
  op.meta(grad_output, self, kernel, stride, padding, ceil_mode, count_include_pad, divisor);
  avg_backward(dims, grad_output, self, kernel, stride, padding, count_include_pad, divisor, op.maybe_get_output(0));
  op.finish();
  return grad_input;
}

// ---- _adaptive_avg_pool2d, _adaptive_avg_pool3d (not structured: CPU's checks, restated) ----

constexpr int64_t kGlobalPoolAsMean = 64;  // plane elements from which a 1x1 output is a mean (GPU forms)

// CPU's adaptive average pooling takes the floating dtypes (half and bfloat16 included).
void check_adaptive_avg_dtype(const Tensor& t, const char* kernel_name) {
  const auto type = t.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16,
                              "\"", kernel_name, "\" not implemented for '", c10::toString(type), "'");
}

// The output of adaptive average pooling over the last `dims` dims of self, after CPU's checks.
Tensor adaptive_avg_output(int dims, const Tensor& self, IntArrayRef output_size) {
  const char* name = dims == 2 ? "adaptive_avg_pool2d" : "adaptive_avg_pool3d";
  TORCH_CHECK(static_cast<int>(output_size.size()) == dims, name, ": output_size must be ", dims);
  if (dims == 2)
    TORCH_CHECK(output_size[0] >= 0 && output_size[1] >= 0,
                "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {",
                output_size[0], ", ", output_size[1], "}");
  TORCH_CHECK(self.dim() == dims + 1 || self.dim() == dims + 2, name, "(): Expected ", dims + 1, "D or ", dims + 2,
              "D tensor, but got ", self.sizes());
  for (int64_t i = 1; i < self.dim(); ++i)
    TORCH_CHECK(self.size(i) > 0, name, "(): Expected input to have non-zero size for non-batch ",
                "dimensions, but input has sizes ", self.sizes(), " with dimension ", i, " being empty");
  auto sizes = self.sizes().vec();
  for (int i = 0; i < dims; ++i) {
    TORCH_CHECK(output_size[i] >= 0, name, ": elements of output_size must be greater than or equal to 0 but ",
                "received ", output_size);
    sizes[self.dim() - dims + i] = output_size[i];
  }
  return at::empty(sizes, self.options());
}

Tensor adaptive_avg_pool(int dims, const Tensor& self, IntArrayRef output_size) {
  auto out = adaptive_avg_output(dims, self, output_size);
  check_adaptive_avg_dtype(self, dims == 2 ? "adaptive_avg_pool2d" : "adaptive_avg_pool3d_cpu");
  if (out.numel() == 0) return out;
  const c10::DeviceGuard guard(self.device());
  // Global pooling of large planes is a reduction: where the kernel forms want coalesced reductions
  // (GPUs), the reduction engine beats a work-item walking a whole plane.
  int64_t plane = 1;
  for (int i = 1; i <= dims; ++i) plane *= self.size(-i);
  if (plane >= kGlobalPoolAsMean &&
      std::all_of(output_size.begin(), output_size.end(), [](int64_t o) { return o == 1; }) &&
      tocl::kernel_forms(device_index(self)).reduce_coalesced) {
    std::vector<int64_t> last(dims);
    for (int i = 0; i < dims; ++i) last[i] = -1 - i;
    at::mean_out(out, self, last, /*keepdim=*/true);
    return out;
  }
  const auto in = self.contiguous();
  const Pool p = pool_params(dims, {1}, {}, {0}, {}, in, out);
  cl_kernel k = dtype_kernel(in, "pooling.cl", "adaptive_avg_pool_forward");
  tocl::set_args(k, buffer_arg(out), buffer_arg(in), static_cast<cl_long>(out.numel()), p);
  launch(in, "adaptive_avg_pool_forward", out.numel(), k);
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) { return adaptive_avg_pool(2, self, output_size); }
Tensor adaptive_avg_pool3d(const Tensor& self, IntArrayRef output_size) { return adaptive_avg_pool(3, self, output_size); }

Tensor& adaptive_avg_pool3d_out(const Tensor& self, IntArrayRef output_size, Tensor& out) {
  auto result = adaptive_avg_pool(3, self, output_size);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "expected dtype ", self.scalar_type(),
              " for `output` but got dtype ", out.scalar_type());
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

Tensor adaptive_avg_backward(int dims, const Tensor& grad_output, const Tensor& self) {
  if (dims == 2) {
    TORCH_CHECK(grad_output.dim() == self.dim() && (self.dim() == 3 || self.dim() == 4),
                "adaptive_avg_pool2d_backward(): Expected 3D or 4D grad_output and input of the same rank, got ",
                grad_output.sizes(), " and ", self.sizes());
  } else {
    TORCH_CHECK(self.dim() == 4 || self.dim() == 5,
                "adaptive_avg_pool3d_backward(): Expected 4D or 5D input, but got ", self.sizes());
    TORCH_CHECK(grad_output.dim() == self.dim(), "adaptive_avg_pool3d_backward_out_cpu_template: Expected dimensions ",
                self.dim(), " for `gradOutput_` but got dimensions ", grad_output.dim());
    for (int64_t i = 1; i < grad_output.dim(); ++i)
      TORCH_CHECK(grad_output.size(i) > 0, "adaptive_avg_pool3d_backward(): Expected grad_output to have non-zero ",
                  "size for non-batch dimensions, but grad_output has sizes ", grad_output.sizes(), " with dimension ",
                  i, " being empty");
  }
  if (dims == 2) {
    TORCH_CHECK(grad_output.scalar_type() == self.scalar_type(), "expected dtype ", self.scalar_type(),
                " for `grad_output` but got dtype ", grad_output.scalar_type());
  } else {
    TORCH_CHECK(grad_output.scalar_type() == self.scalar_type(), "expected scalar type ", self.scalar_type(),
                " but found ", grad_output.scalar_type());
  }
  check_same_device({grad_output, self});
  check_adaptive_avg_dtype(self, dims == 2 ? "adaptive_avg_pool2d_backward" : "adaptive_avg_pool3d_backward_cpu");
  const c10::DeviceGuard guard(self.device());
  auto grad_input = at::empty(self.sizes(), self.options());
  if (grad_input.numel() == 0) return grad_input;
  const auto go = grad_output.contiguous();
  const Pool p = pool_params(dims, {1}, {}, {0}, {}, self, go);
  cl_kernel k = dtype_kernel(grad_input, "pooling.cl", "adaptive_avg_pool_backward");
  tocl::set_args(k, buffer_arg(grad_input), buffer_arg(go.numel() ? go : grad_input),
                 static_cast<cl_long>(grad_input.numel()), p);
  launch(grad_input, "adaptive_avg_pool_backward", grad_input.numel(), k);
  return grad_input;
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& self) {
  return adaptive_avg_backward(2, grad_output, self);
}
Tensor adaptive_avg_pool3d_backward(const Tensor& grad_output, const Tensor& self) {
  return adaptive_avg_backward(3, grad_output, self);
}

Tensor& adaptive_avg_pool3d_backward_out(const Tensor& grad_output, const Tensor& self, Tensor& grad_input) {
  auto result = adaptive_avg_backward(3, grad_output, self);
  at::native::resize_output(grad_input, result.sizes());
  grad_input.copy_(result);
  return grad_input;
}

// ---- max_pool3d_with_indices (not structured: CPU's checks, restated, with ATen's pool3d_shape_check) ----

struct MaxPool3dArgs {
  int kT, kH, kW, dT, dH, dW, pT, pH, pW, dilT, dilH, dilW;
};

MaxPool3dArgs max_pool3d_args(IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation) {
  using at::native::safe_downcast;
  MaxPool3dArgs a{};
  TORCH_CHECK(kernel.size() == 1 || kernel.size() == 3,
              "max_pool3d: kernel_size must either be a single int, or a tuple of three ints")
  a.kT = safe_downcast<int, int64_t>(kernel[0]);
  a.kH = kernel.size() == 1 ? a.kT : safe_downcast<int, int64_t>(kernel[1]);
  a.kW = kernel.size() == 1 ? a.kT : safe_downcast<int, int64_t>(kernel[2]);
  TORCH_CHECK(stride.empty() || stride.size() == 1 || stride.size() == 3,
              "max_pool3d: stride must either be omitted, a single int, or a tuple of three ints")
  a.dT = stride.empty() ? a.kT : safe_downcast<int, int64_t>(stride[0]);
  a.dH = stride.empty() ? a.kH : stride.size() == 1 ? a.dT : safe_downcast<int, int64_t>(stride[1]);
  a.dW = stride.empty() ? a.kW : stride.size() == 1 ? a.dT : safe_downcast<int, int64_t>(stride[2]);
  TORCH_CHECK(padding.size() == 1 || padding.size() == 3,
              "max_pool3d: padding must either be a single int, or a tuple of three ints");
  a.pT = safe_downcast<int, int64_t>(padding[0]);
  a.pH = padding.size() == 1 ? a.pT : safe_downcast<int, int64_t>(padding[1]);
  a.pW = padding.size() == 1 ? a.pT : safe_downcast<int, int64_t>(padding[2]);
  TORCH_CHECK(dilation.size() == 1 || dilation.size() == 3,
              "max_pool3d: dilation must be either a single int, or a tuple of three ints");
  a.dilT = safe_downcast<int, int64_t>(dilation[0]);
  a.dilH = dilation.size() == 1 ? a.dilT : safe_downcast<int, int64_t>(dilation[1]);
  a.dilW = dilation.size() == 1 ? a.dilT : safe_downcast<int, int64_t>(dilation[2]);
  return a;
}

// The output sizes of max_pool3d over input, after CPU's checks.
std::vector<int64_t> max_pool3d_output_sizes(const Tensor& input, const MaxPool3dArgs& a, bool ceil_mode,
                                             const char* fn_name) {
  const auto format = input.suggest_memory_format();
  if (format == at::MemoryFormat::ChannelsLast3d) {
    TORCH_CHECK(input.dim() == 5, "non-empty 5D (batch mode) tensor expected for input with channels_last_3d layout");
  } else {
    TORCH_CHECK(input.dim() == 4 || input.dim() == 5, "non-empty 4D or 5D (batch mode) tensor expected for input");
  }
  const int64_t nslices = input.size(-4), itime = input.size(-3), iheight = input.size(-2), iwidth = input.size(-1);
  const int64_t otime = at::native::pooling_output_shape<int64_t>(itime, a.kT, a.pT, a.dT, a.dilT, ceil_mode);
  const int64_t oheight = at::native::pooling_output_shape<int64_t>(iheight, a.kH, a.pH, a.dH, a.dilH, ceil_mode);
  const int64_t owidth = at::native::pooling_output_shape<int64_t>(iwidth, a.kW, a.pW, a.dW, a.dilW, ceil_mode);
  at::native::pool3d_shape_check(input, nslices, a.kT, a.kH, a.kW, a.dT, a.dH, a.dW, a.pT, a.pH, a.pW, a.dilT,
                                 a.dilH, a.dilW, itime, iheight, iwidth, otime, oheight, owidth, fn_name);
  auto sizes = input.sizes().vec();
  sizes[sizes.size() - 3] = otime;
  sizes[sizes.size() - 2] = oheight;
  sizes[sizes.size() - 1] = owidth;
  return sizes;
}

void max_pool3d_forward(const Tensor& self, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef dilation, const Tensor& out, const Tensor& indices) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBool, "\"max_pool3d\" not implemented for 'Bool'");
  if (out.numel() == 0) return;
  const c10::DeviceGuard guard(self.device());
  const auto in = self.contiguous();
  const Pool p = pool_params(3, kernel, stride, padding, dilation, in, out);
  auto ind = indices.is_contiguous() ? indices : at::empty(indices.sizes(), indices.options());
  into(out, [&](const Tensor& o) {
    cl_kernel k = dtype_kernel(in, "pooling.cl", "max_pool3d_forward");
    tocl::set_args(k, buffer_arg(o), buffer_arg(ind), buffer_arg(in), static_cast<cl_long>(o.numel()), p);
    launch(in, "max_pool3d_forward", o.numel(), k);
  });
  if (!ind.is_same(indices)) indices.copy_(ind);
}

std::tuple<Tensor, Tensor> max_pool3d_with_indices_functional(const Tensor& self, IntArrayRef kernel, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  const auto a = max_pool3d_args(kernel, stride, padding, dilation);
  const auto sizes =
      max_pool3d_output_sizes(self, a, ceil_mode, "max_pool3d_with_indices_out_cpu_template()");
  const auto format = self.suggest_memory_format();
  auto out = at::empty(sizes, self.options().memory_format(format));
  auto indices = at::empty(sizes, self.options().dtype(at::kLong).memory_format(format));
  max_pool3d_forward(self, kernel, stride, padding, dilation, out, indices);
  return {out, indices};
}

std::tuple<Tensor&, Tensor&> max_pool3d_with_indices_out(const Tensor& self, IntArrayRef kernel, IntArrayRef stride,
                                                         IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                                         Tensor& out, Tensor& indices) {
  auto [o, i] = max_pool3d_with_indices_functional(self, kernel, stride, padding, dilation, ceil_mode);
  at::native::resize_output(out, o.sizes());
  at::native::resize_output(indices, i.sizes());
  out.copy_(o);
  indices.copy_(i);
  return {out, indices};
}

Tensor max_pool3d_with_indices_backward_functional(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel,
                                        IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation, bool ceil_mode,
                                        const Tensor& indices) {
  const auto a = max_pool3d_args(kernel, stride, padding, dilation);
  TORCH_CHECK(self.dim() == 4 || self.dim() == 5, "non-empty 4D or 5D (batch mode) tensor expected for input");
  check_same_device({grad_output, self, indices});
  TORCH_CHECK(grad_output.scalar_type() == self.scalar_type(), "expected scalar type ", self.scalar_type(),
              " but found ", grad_output.scalar_type());
  TORCH_CHECK(indices.scalar_type() == at::kLong, "expected scalar type Long but found ", indices.scalar_type());
  const auto type = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16,
                              "\"max_pool3d_backward\" not implemented for '", c10::toString(type), "'");
  at::native::max_pool3d_backward_shape_check(
      self, grad_output, indices, self.size(-4), a.kT, a.kH, a.kW, a.dT, a.dH, a.dW, a.pT, a.pH, a.pW, a.dilT, a.dilH,
      a.dilW, self.size(-3), self.size(-2), self.size(-1), grad_output.size(-3), grad_output.size(-2),
      grad_output.size(-1), "max_pool3d_with_indices_backward_out_cpu_template()");
  const c10::DeviceGuard guard(self.device());
  auto grad_input = at::empty(self.sizes(), self.options().memory_format(self.suggest_memory_format()));
  if (grad_input.numel() == 0) return grad_input;
  const auto go = grad_output.contiguous();
  const auto ind = indices.contiguous();
  const Pool p = pool_params(3, kernel, stride, padding, dilation, self, go);
  // Windows that cannot overlap let each output element store its gradient (one writer per input element).
  const bool disjoint = p.dD >= (p.kD - 1) * p.dilD + 1 && p.dH >= (p.kH - 1) * p.dilH + 1 &&
                        p.dW >= (p.kW - 1) * p.dilW + 1;
  into(grad_input, [&](const Tensor& gi) {
    if (disjoint || go.numel() == 0) {
      gi.zero_();
      if (go.numel() == 0) return;
      cl_kernel k = dtype_kernel(gi, "pooling.cl", "max_pool3d_backward_scatter");
      tocl::set_args(k, buffer_arg(gi), buffer_arg(go), buffer_arg(ind), static_cast<cl_long>(go.numel()), p);
      launch(gi, "max_pool3d_backward_scatter", go.numel(), k);
      return;
    }
    cl_kernel k = dtype_kernel(gi, "pooling.cl", "max_pool3d_backward");
    tocl::set_args(k, buffer_arg(gi), buffer_arg(go), buffer_arg(ind), static_cast<cl_long>(gi.numel()), p);
    launch(gi, "max_pool3d_backward", gi.numel(), k);
  });
  return grad_input;
}

Tensor& max_pool3d_with_indices_backward_out(const Tensor& grad_output, const Tensor& self, IntArrayRef kernel,
                                             IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                                             bool ceil_mode, const Tensor& indices, Tensor& grad_input) {
  auto result = max_pool3d_with_indices_backward_functional(grad_output, self, kernel, stride, padding, dilation,
                                                            ceil_mode, indices);
  at::native::resize_output(grad_input, result.sizes());
  grad_input.copy_(result);
  return grad_input;
}

// ---- adaptive_max_pool2d and adaptive_max_pool3d (structured: ATen's meta functions check and shape the
// outputs, channels_last as the input; 2-d runs the 3-d kernels with depth 1) ----

// CPU's kernels take the floating dtypes (half and bfloat16 included); others raise its error, which names
// CPU's kernel (`cpu_name`).
void check_adaptive_max_dtype(const Tensor& t, const char* cpu_name) {
  const auto type = t.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16,
                              "\"", cpu_name, "\" not implemented for '", c10::toString(type), "'");
}

template <int dims>
void adaptive_max_forward(const Tensor& self, const Tensor& out, const Tensor& indices) {
  check_adaptive_max_dtype(self, dims == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d_cpu");
  if (out.numel() == 0) return;
  const c10::DeviceGuard guard(self.device());
  const auto in = self.contiguous();
  const Pool p = pool_params(dims, {1}, {}, {0}, {}, in, out);
  auto ind = indices.is_contiguous() ? indices : at::empty(indices.sizes(), indices.options());
  into(out, [&](const Tensor& o) {
    cl_kernel k = dtype_kernel(in, "pooling.cl", "adaptive_max_pool_forward");
    tocl::set_args(k, buffer_arg(o), buffer_arg(ind), buffer_arg(in), static_cast<cl_long>(o.numel()), p);
    launch(in, "adaptive_max_pool_forward", o.numel(), k);
  });
  if (!ind.is_same(indices)) indices.copy_(ind);
}

template <int dims>
void adaptive_max_backward(const Tensor& grad_output, const Tensor& self, const Tensor& indices,
                           const Tensor& grad_input) {
  check_same_device({grad_output, self, indices, grad_input});
  check_adaptive_max_dtype(self, dims == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d_backward");
  if (grad_input.numel() == 0) return;
  const c10::DeviceGuard guard(self.device());
  const auto go = grad_output.contiguous();
  const auto ind = indices.contiguous();
  const Pool p = pool_params(dims, {1}, {}, {0}, {}, self, go);
  into(grad_input, [&](const Tensor& gi) {
    if (go.numel() == 0) {
      gi.zero_();
      return;
    }
    // Windows that tile the input: a scatter, one writer per input element.
    if (p.ID % p.OD == 0 && p.IH % p.OH == 0 && p.IW % p.OW == 0) {
      gi.zero_();
      cl_kernel k = dtype_kernel(gi, "pooling.cl", "adaptive_max_pool_backward_scatter");
      tocl::set_args(k, buffer_arg(gi), buffer_arg(go), buffer_arg(ind), static_cast<cl_long>(go.numel()), p);
      launch(gi, "adaptive_max_pool_backward_scatter", go.numel(), k);
      return;
    }
    cl_kernel k = dtype_kernel(gi, "pooling.cl", "adaptive_max_pool_backward");
    tocl::set_args(k, buffer_arg(gi), buffer_arg(go), buffer_arg(ind), static_cast<cl_long>(gi.numel()), p);
    launch(gi, "adaptive_max_pool_backward", gi.numel(), k);
  });
}

template <int dims, class Meta>
std::tuple<Tensor, Tensor> adaptive_max_pool(const Tensor& self, IntArrayRef output_size) {
  StructuredFunctional<Meta, 2> op;
  op.meta(self, output_size);
  adaptive_max_forward<dims>(self, op.maybe_get_output(0), op.maybe_get_output(1));
  return {op.take(0), op.take(1)};
}

template <int dims, class Meta>
std::tuple<Tensor&, Tensor&> adaptive_max_pool_out(const Tensor& self, IntArrayRef output_size, Tensor& out,
                                                   Tensor& indices) {
  StructuredOut<Meta, 2> op(out, indices);
  op.meta(self, output_size);
  adaptive_max_forward<dims>(self, op.maybe_get_output(0), op.maybe_get_output(1));
  op.finish();
  return {out, indices};
}

template <int dims, class Meta>
Tensor adaptive_max_pool_backward(const Tensor& grad_output, const Tensor& self, const Tensor& indices) {
  StructuredFunctional<Meta> op;
  op.meta(grad_output, self, indices);
  adaptive_max_backward<dims>(grad_output, self, indices, op.maybe_get_output(0));
  return op.take();
}

template <int dims, class Meta>
Tensor& adaptive_max_pool_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& indices,
                                       Tensor& grad_input) {
  StructuredOut<Meta> op(grad_input);
  op.meta(grad_output, self, indices);
  adaptive_max_backward<dims>(grad_output, self, indices, op.maybe_get_output(0));
  op.finish();
  return grad_input;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("max_pool2d_with_indices", TORCH_FN(max_pool2d_with_indices_functional));
  m.impl("max_pool2d_with_indices.out", TORCH_FN(max_pool2d_with_indices_out));
  m.impl("max_pool2d_with_indices_backward", TORCH_FN(max_pool2d_with_indices_backward));
  m.impl("max_pool2d_with_indices_backward.grad_input", TORCH_FN(max_pool2d_with_indices_backward_out));
  using at::meta::structured_avg_pool2d, at::meta::structured_avg_pool2d_backward;
  using at::meta::structured_avg_pool3d, at::meta::structured_avg_pool3d_backward;
  m.impl("avg_pool2d", TORCH_FN((avg_pool<2, structured_avg_pool2d>)));
  m.impl("avg_pool2d.out", TORCH_FN((avg_pool_out<2, structured_avg_pool2d>)));
  m.impl("avg_pool2d_backward", TORCH_FN((avg_pool_backward<2, structured_avg_pool2d_backward>)));
  m.impl("avg_pool2d_backward.grad_input", TORCH_FN((avg_pool_backward_out<2, structured_avg_pool2d_backward>)));
  m.impl("avg_pool3d", TORCH_FN((avg_pool<3, structured_avg_pool3d>)));
  m.impl("avg_pool3d.out", TORCH_FN((avg_pool_out<3, structured_avg_pool3d>)));
  m.impl("avg_pool3d_backward", TORCH_FN((avg_pool_backward<3, structured_avg_pool3d_backward>)));
  m.impl("avg_pool3d_backward.grad_input", TORCH_FN((avg_pool_backward_out<3, structured_avg_pool3d_backward>)));
  m.impl("_adaptive_avg_pool2d", TORCH_FN(adaptive_avg_pool2d));
  m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(adaptive_avg_pool2d_backward));
  m.impl("_adaptive_avg_pool3d", TORCH_FN(adaptive_avg_pool3d));
  m.impl("adaptive_avg_pool3d.out", TORCH_FN(adaptive_avg_pool3d_out));
  m.impl("_adaptive_avg_pool3d_backward", TORCH_FN(adaptive_avg_pool3d_backward));
  m.impl("adaptive_avg_pool3d_backward.grad_input", TORCH_FN(adaptive_avg_pool3d_backward_out));
  m.impl("max_pool3d_with_indices", TORCH_FN(max_pool3d_with_indices_functional));
  m.impl("max_pool3d_with_indices.out", TORCH_FN(max_pool3d_with_indices_out));
  m.impl("max_pool3d_with_indices_backward", TORCH_FN(max_pool3d_with_indices_backward_functional));
  m.impl("max_pool3d_with_indices_backward.grad_input", TORCH_FN(max_pool3d_with_indices_backward_out));
  using at::meta::structured_adaptive_max_pool2d, at::meta::structured_adaptive_max_pool2d_backward;
  using at::meta::structured_adaptive_max_pool3d, at::meta::structured_adaptive_max_pool3d_backward;
  m.impl("adaptive_max_pool2d", TORCH_FN((adaptive_max_pool<2, structured_adaptive_max_pool2d>)));
  m.impl("adaptive_max_pool2d.out", TORCH_FN((adaptive_max_pool_out<2, structured_adaptive_max_pool2d>)));
  m.impl("adaptive_max_pool2d_backward",
         TORCH_FN((adaptive_max_pool_backward<2, structured_adaptive_max_pool2d_backward>)));
  m.impl("adaptive_max_pool2d_backward.grad_input",
         TORCH_FN((adaptive_max_pool_backward_out<2, structured_adaptive_max_pool2d_backward>)));
  m.impl("adaptive_max_pool3d", TORCH_FN((adaptive_max_pool<3, structured_adaptive_max_pool3d>)));
  m.impl("adaptive_max_pool3d.out", TORCH_FN((adaptive_max_pool_out<3, structured_adaptive_max_pool3d>)));
  m.impl("adaptive_max_pool3d_backward",
         TORCH_FN((adaptive_max_pool_backward<3, structured_adaptive_max_pool3d_backward>)));
  m.impl("adaptive_max_pool3d_backward.grad_input",
         TORCH_FN((adaptive_max_pool_backward_out<3, structured_adaptive_max_pool3d_backward>)));
}

}  // namespace torch_opencl
