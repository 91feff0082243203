// Convolution reaches PrivateUse1 as convolution_overrideable and
// convolution_backward_overrideable (ATen has checked the shapes by then).
// 1-D and 2-D convolutions of float32/float64 run natively: im2col
// (kernels_cl/im2col.cl) and CLBlast GEMM per group, col2im for grad_input,
// GEMM for grad_weight, GEMV with a ones vector for grad_bias. Transposed and
// 3-D convolutions, and other dtypes, run CPU's convolution on copies, counted
// as fallbacks.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <map>
#include <mutex>

#include "aten/blas.h"
#include "aten/cl_types.h"
#include "aten/dtype_fallback.h"
#include "aten/opencl_tensor.h"
#include "fallback/fallback.h"
#include "runtime/embedded_sources.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

// --- CPU path (transposed, 3-D, dtypes CLBlast does not compute)

at::Tensor to_cpu(const at::Tensor& t) { return t.defined() ? t.to(at::kCPU) : t; }

at::Tensor convolution_on_cpu(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                              at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                              bool transposed, at::IntArrayRef output_padding, int64_t groups) {
  record_fallback_call("aten::convolution_overrideable");
  std::optional<at::Tensor> cpu_bias;
  if (bias && bias->defined()) cpu_bias = to_cpu(*bias);
  const auto out = at::convolution(to_cpu(input), to_cpu(weight), cpu_bias, stride, padding, dilation, transposed,
                                   output_padding, groups);
  return out.to(input.device());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_on_cpu(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  record_fallback_call("aten::convolution_backward_overrideable");
  const int64_t bias_size = transposed ? weight.size(1) * groups : weight.size(0);
  auto [grad_input, grad_weight, grad_bias] =
      at::convolution_backward(to_cpu(grad_output), to_cpu(input), to_cpu(weight), at::IntArrayRef{bias_size}, stride,
                               padding, dilation, transposed, output_padding, groups, output_mask);
  const auto device = input.device();
  auto back = [&](const at::Tensor& t) { return t.defined() ? t.to(device) : t; };
  return {back(grad_input), back(grad_weight), back(grad_bias)};
}

// --- native path

struct ConvGeometry {  // ConvGeometry in kernels_cl/im2col.cl
  cl_long C, H, W, KH, KW, PH, PW, SH, SW, DH, DW, OH, OW;
};

cl_program im2col_program(int device, at::ScalarType type) {
  static std::mutex mutex;
  static std::map<std::pair<int, at::ScalarType>, cl_program> programs;
  std::lock_guard<std::mutex> lock(mutex);
  auto& program = programs[{device, type}];
  if (!program) {
    const std::string source = program_prelude({type}) + "#define T " + storage_type(type) + "\n" +
                               tocl::embedded_sources().at("im2col.cl");
    program = tocl::get_program(device, source);
  }
  return program;
}

// A 1-D or 2-D convolution seen as 2-D: input and weight with a height of 1 added for 1-D.
struct Conv2d {
  at::Tensor input, weight;  // 4-D, contiguous
  ConvGeometry g{};
  int64_t N = 0, O = 0, groups = 1;
  bool one_d = false;
  int64_t L() const { return g.OH * g.OW; }
  int64_t rows() const { return g.C * g.KH * g.KW; }          // im2col rows, all groups
  int64_t K() const { return rows() / groups; }               // GEMM depth per group
  int64_t Og() const { return O / groups; }
};

Conv2d describe(const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride, at::IntArrayRef padding,
                at::IntArrayRef dilation, int64_t groups) {
  Conv2d c;
  c.one_d = input.dim() == 3;
  c.input = (c.one_d ? input.unsqueeze(2) : input).contiguous();
  c.weight = (c.one_d ? weight.unsqueeze(2) : weight).contiguous();
  auto at2 = [&](at::IntArrayRef v, int64_t i, int64_t one_d_value) {
    if (c.one_d) return i == 0 ? one_d_value : v[0];
    return v[i];
  };
  c.N = c.input.size(0);
  c.O = c.weight.size(0);
  c.groups = groups;
  auto& g = c.g;
  g.C = c.input.size(1);
  g.H = c.input.size(2);
  g.W = c.input.size(3);
  g.KH = c.weight.size(2);
  g.KW = c.weight.size(3);
  g.SH = at2(stride, 0, 1), g.SW = at2(stride, 1, 1);
  g.PH = at2(padding, 0, 0), g.PW = at2(padding, 1, 0);
  g.DH = at2(dilation, 0, 1), g.DW = at2(dilation, 1, 1);
  g.OH = (g.H + 2 * g.PH - g.DH * (g.KH - 1) - 1) / g.SH + 1;
  g.OW = (g.W + 2 * g.PW - g.DW * (g.KW - 1) - 1) / g.SW + 1;
  return c;
}

void launch(const char* name, const Conv2d& c, const at::Tensor& src, const at::Tensor& dst, int64_t col_sn,
            int64_t col_sk, int64_t total) {
  if (total == 0) return;
  const int device = device_index(dst);
  cl_kernel k = tocl::get_kernel(im2col_program(device, dst.scalar_type()), name);
  tocl::set_args(k, buffer_arg(src), buffer_arg(dst), c.g, static_cast<cl_long>(col_sn), static_cast<cl_long>(col_sk),
                 static_cast<cl_long>(total));
  tocl::enqueue_1d(device, tocl::current_stream(device), k, total);
}

// col with element (n, k, l) at n * col_sn + k * col_sk + l.
at::Tensor im2col(const Conv2d& c, int64_t col_sn, int64_t col_sk, at::IntArrayRef col_sizes) {
  auto col = at::empty(col_sizes, c.input.options());
  launch("im2col", c, c.input, col, col_sn, col_sk, c.N * c.rows() * c.L());
  return col;
}

bool native(const at::Tensor& input, const at::Tensor& weight, bool transposed) {
  return !transposed && (input.dim() == 3 || input.dim() == 4) && blas_supports(input.scalar_type()) &&
         weight.scalar_type() == input.scalar_type();
}

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                       at::IntArrayRef output_padding, int64_t groups) {
  TORCH_CHECK(weight.device() == input.device() && (!bias || !bias->defined() || bias->device() == input.device()),
              "Expected all tensors to be on the same device, but found at least two devices, ", input.device(),
              " and ", weight.device() != input.device() ? weight.device() : bias->device(), "!");
  if (!native(input, weight, transposed))
    return convolution_on_cpu(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  const Conv2d c = describe(input, weight, stride, padding, dilation, groups);
  const auto& g = c.g;
  auto out = at::empty({c.N, c.O, g.OH, g.OW}, c.input.options());
  if (out.numel() > 0) {
    const int64_t L = c.L(), K = c.K(), Og = c.Og();
    const auto col = im2col(c, c.rows() * L, L, {c.N, c.rows(), L});
    const auto out3 = out.view({c.N, c.O, L});
    const auto w2 = c.weight.view({c.O, K});
    for (int64_t gi = 0; gi < groups; ++gi) {
      gemm_batched(w2.narrow(0, gi * Og, Og).unsqueeze(0).expand({c.N, Og, K}), col.narrow(1, gi * K, K),
                   out3.narrow(1, gi * Og, Og), 1, 0);
    }
    if (bias && bias->defined()) out.add_(bias->view({1, c.O, 1, 1}));
  }
  return c.one_d ? out.squeeze(2) : out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  if (!native(input, weight, transposed) || grad_output.scalar_type() != input.scalar_type())
    return convolution_backward_on_cpu(grad_output, input, weight, stride, padding, dilation, transposed,
                                       output_padding, groups, output_mask);
  const Conv2d c = describe(input, weight, stride, padding, dilation, groups);
  const auto& g = c.g;
  const int64_t L = c.L(), K = c.K(), Og = c.Og(), N = c.N;
  const auto go3 = (c.one_d ? grad_output.unsqueeze(2) : grad_output).contiguous().view({N, c.O, L});
  at::Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) {
    grad_input = at::empty(c.input.sizes(), c.input.options());
    if (grad_input.numel() > 0) {
      const auto gcol = at::empty({N, c.rows(), L}, c.input.options());
      const auto w2 = c.weight.view({c.O, K});
      for (int64_t gi = 0; gi < groups; ++gi) {
        gemm_batched(w2.narrow(0, gi * Og, Og).t().unsqueeze(0).expand({N, K, Og}), go3.narrow(1, gi * Og, Og),
                     gcol.narrow(1, gi * K, K), 1, 0);
      }
      launch("col2im", c, gcol, grad_input, c.rows() * L, L, grad_input.numel());
    }
    if (c.one_d) grad_input = grad_input.squeeze(2);
  }
  // grad_output as (O, N * L): one GEMM (and one GEMV) over the whole batch.
  at::Tensor goT;
  if (output_mask[1] || output_mask[2]) goT = go3.permute({1, 0, 2}).contiguous().view({c.O, N * L});
  if (output_mask[1]) {
    auto gw = at::empty({c.O, K}, c.input.options());
    const auto colT = im2col(c, L, N * L, {c.rows(), N * L});
    for (int64_t gi = 0; gi < groups; ++gi)
      gemm(goT.narrow(0, gi * Og, Og), colT.narrow(0, gi * K, K).t(), gw.narrow(0, gi * Og, Og), 1, 0);
    grad_weight = gw.view(weight.sizes());
  }
  if (output_mask[2]) {
    grad_bias = at::empty({c.O}, c.input.options());
    gemv(goT, at::ones({N * L}, c.input.options()), grad_bias, 1, 0);
  }
  (void)g;
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward));
}

}  // namespace torch_opencl
