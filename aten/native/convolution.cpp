// Convolution reaches PrivateUse1 as convolution_overrideable and
// convolution_backward_overrideable (ATen has checked the shapes by then).
// 1-D and 2-D convolutions of float32/float64, transposed ones included, run natively. On devices of the
// GPU kernel class the batch is folded into the GEMMs' columns (see "GPU form" below). 3x3 stride-1
// single-group convolutions of 16 channels or more run as Winograd (aten/native/conv_winograd.h), 1x1
// stride-1 unpadded single-group ones as batched GEMMs (see "1x1" below), depthwise ones (groups equal to
// the input channels) in direct forms (aten/native/conv_depthwise.h), all in both classes. The CPU form:
// im2col (kernels_cl/im2col.cl) laid out (N*L, C*KH*KW) and one GEMM per group over the whole batch, col2im
// for grad_input, GEMM for grad_weight, column sums for grad_bias. The GEMMs' (N * L, O) rows reach the
// NCHW output through rows_to_channels (adding the bias), and grad_output becomes rows through
// channels_to_rows (a view when grad_output is channels_last). A transposed convolution is the adjoint of a
// regular one: its forward is that one's input gradient (GEMM + col2im), its grad_input that one's forward.
// 3-D convolutions run as 2-D ones over the depth taps (aten/native/conv3d.h); other dtypes run CPU's
// convolution on copies, counted as fallbacks.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "aten/native/blas.h"
#include "aten/native/conv3d.h"
#include "aten/native/conv_depthwise.h"
#include "aten/native/conv_shape.h"
#include "aten/native/conv_winograd.h"
#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "fallback/fallback.h"
#include "runtime/embedded_sources.h"
#include "runtime/kernel_forms.h"
#include "runtime/launch.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

// --- CPU path (3-D, dtypes CLBlast does not compute)

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

// A 1-D or 2-D convolution seen as 2-D (a height of 1 added for 1-D): the regular convolution
// of an input (N, C, H, W) with a weight (O, C / groups, KH, KW). A transposed convolution is
// described by the regular one it is the adjoint of: its output is that one's input.
struct Conv2d {
  Shape g{};
  int64_t N = 0, O = 0, groups = 1;
  bool one_d = false;
  at::TensorOptions options;
  int64_t L() const { return g.OH * g.OW; }
  int64_t rows() const { return g.C * g.KH * g.KW; }          // im2col rows, all groups
  int64_t K() const { return rows() / groups; }               // GEMM depth per group
  int64_t Og() const { return O / groups; }
};

at::Tensor as_4d(const at::Tensor& t, bool one_d) { return (one_d ? t.unsqueeze(2) : t).contiguous(); }

// The same, left channels_last when it is (channels_last grad_output is already the GEMMs' row layout).
at::Tensor as_dense_4d(const at::Tensor& t, bool one_d) {
  const auto t4 = one_d ? t.unsqueeze(2) : t;
  return t4.is_contiguous(at::MemoryFormat::ChannelsLast) ? t4 : t4.contiguous();
}

// in: the regular convolution's input sizes (N, C, H[, W]); w: its weight sizes (O, C / groups, KH[, KW]).
Conv2d describe(at::IntArrayRef in, at::IntArrayRef w, at::IntArrayRef stride, at::IntArrayRef padding,
                at::IntArrayRef dilation, int64_t groups, const at::TensorOptions& options) {
  Conv2d c;
  c.one_d = in.size() == 3;
  auto at2 = [&](at::IntArrayRef v, int64_t i, int64_t one_d_value) {
    if (c.one_d) return i == 0 ? one_d_value : v[0];
    return v[i];
  };
  c.N = in[0];
  c.O = w[0];
  c.groups = groups;
  c.options = options;
  auto& g = c.g;
  g.C = in[1];
  g.H = c.one_d ? 1 : in[2];
  g.W = in.back();
  g.KH = c.one_d ? 1 : w[2];
  g.KW = w.back();
  g.SH = at2(stride, 0, 1), g.SW = at2(stride, 1, 1);
  g.PH = at2(padding, 0, 0), g.PW = at2(padding, 1, 0);
  g.DH = at2(dilation, 0, 1), g.DW = at2(dilation, 1, 1);
  g.OH = (g.H + 2 * g.PH - g.DH * (g.KH - 1) - 1) / g.SH + 1;
  g.OW = (g.W + 2 * g.PW - g.DW * (g.KW - 1) - 1) / g.SW + 1;
  return c;
}

// The transposed convolution of input (N, C_in, H[, W]) with weight (C_in, C_out / groups, KH[, KW]) as the
// adjoint of a regular convolution of (N, C_out, OH[, OW]) with the same weight.
Conv2d describe_transposed(const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
                           at::IntArrayRef padding, at::IntArrayRef dilation, at::IntArrayRef output_padding,
                           int64_t groups) {
  std::vector<int64_t> out{input.size(0), weight.size(1) * groups};
  for (int64_t i = 2; i < input.dim(); ++i) {
    const int64_t d = i - 2;
    out.push_back((input.size(i) - 1) * stride[d] - 2 * padding[d] + dilation[d] * (weight.size(i) - 1) +
                  output_padding[d] + 1);
  }
  return describe(out, weight.sizes(), stride, padding, dilation, groups, input.options());
}

// Whether the regular convolution maps the transposed one's output back onto its input's size (not so when an
// output_padding of at least the stride, allowed below the dilation, adds a position no input fed).
bool adjoint_fits(const Conv2d& c, const at::Tensor& input) {
  return c.g.OW == input.size(-1) && (c.one_d || c.g.OH == input.size(2));
}

constexpr int64_t kChunk = int64_t{1} << 22;  // the layout kernels' index math is exact below this

// Whether one sample's output (O * L elements) stays under kChunk: the layout kernels then run over
// chunks of samples; larger samples change layout through ATen's permute and copy.
bool small_samples(const Conv2d& c) { return c.O * c.L() < kChunk; }

// im2col/col2im over the whole batch, contiguous tensors.
void launch(const char* name, const Conv2d& c, const at::Tensor& src, const at::Tensor& dst, int64_t total) {
  if (total == 0) return;
  const int device = device_index(dst);
  cl_kernel k = tocl::get_kernel(im2col_program(device, dst.scalar_type()), name);
  // col is (N * L, C * KH * KW) row-major: element (n, k, l) at (n * L + l) * rows + k.
  tocl::set_args(k, buffer_arg(src), buffer_arg(dst), c.g, static_cast<cl_long>(c.L() * c.rows()),
                 static_cast<cl_long>(1), static_cast<cl_long>(c.rows()), static_cast<cl_long>(total));
  tocl::enqueue_1d(device, tocl::current_stream(device), k, total);
}

tocl::BufferArg shifted(const at::Tensor& t, int64_t elements) {
  auto b = buffer_arg(t);
  b.offset += elements;
  return b;
}

// Whether the layout kernels take their CPU form, a work-item per line (kernel_forms' copy_lines).
bool lines(const at::Tensor& t) { return tocl::kernel_forms(device_index(t)).copy_lines; }

// Runs a layout kernel over the batch in chunks of whole samples of O * L elements each:
// set(kernel, first sample, samples) sets the arguments and returns the chunk's work-item count.
template <class Set>
void launch_by_samples(const char* name, const Conv2d& c, const at::Tensor& dst, Set set) {
  const int64_t chunk = std::max<int64_t>((kChunk - 1) / std::max<int64_t>(c.O * c.L(), 1), 1);
  const int device = device_index(dst);
  cl_kernel k = tocl::get_kernel(im2col_program(device, dst.scalar_type()), name);
  for (int64_t first = 0; first < c.N; first += chunk) {
    const int64_t total = set(k, first, std::min(chunk, c.N - first));
    if (total > 0) tocl::enqueue_1d(device, tocl::current_stream(device), k, total);
  }
}

// The GEMMs run over the whole batch with the patches as rows: col (N * L, C * KH * KW) @ W^T (K, O) per group.
// (N GEMMs of (O, K) @ (K, L) each cost a CLBlast launch; W (O, K) @ col^T (K, N * L) reads rows N * L apart,
// which measured 3-10x slower on PoCL than this layout, whose operands are read along contiguous rows.)

// x4: the convolution input (N, C, H, W) -> col (N * L, C * KH * KW).
at::Tensor im2col(const Conv2d& c, const at::Tensor& x4) {
  auto col = at::empty({c.N * c.L(), c.rows()}, c.options);
  launch("im2col", c, x4.contiguous(), col, c.N * c.g.OH);  // a work-item per row of output positions
  return col;
}

// t4 (N, O, OH, OW) as (N * L, O), contiguous: a view of a channels_last t4, else a transposing copy.
at::Tensor channels_last(const Conv2d& c, const at::Tensor& t4) {
  const int64_t N = t4.size(0), O = t4.size(1), L = t4.size(2) * t4.size(3);
  if (t4.is_contiguous(at::MemoryFormat::ChannelsLast)) return t4.permute({0, 2, 3, 1}).reshape({N * L, O});
  if (!small_samples(c)) return t4.reshape({N, O, L}).permute({0, 2, 1}).contiguous().view({N * L, O});
  const auto in = t4.contiguous();
  auto rows = at::empty({N * L, O}, t4.options());
  if (rows.numel() == 0) return rows;
  if (lines(rows)) {
    launch_by_samples("channels_to_rows_lines", c, rows, [&](cl_kernel k, int64_t first, int64_t n) {
      tocl::set_args(k, shifted(in, first * O * L), shifted(rows, first * O * L), static_cast<cl_int>(O),
                     static_cast<cl_int>(L), static_cast<cl_int>(n * L));
      return n * L;
    });
    return rows;
  }
  launch_by_samples("channels_to_rows", c, rows, [&](cl_kernel k, int64_t first, int64_t n) {
    tocl::set_args(k, shifted(in, first * O * L), shifted(rows, first * O * L), static_cast<cl_int>(O),
                   static_cast<cl_int>(L), 1.0f / O, 1.0f / L, static_cast<cl_int>(n * O * L));
    return n * O * L;
  });
  return rows;
}

// The regular convolution: x4 (N, C, H, W) contiguous, w2 the weight as (O, K) -> (N, O, OH, OW).
at::Tensor conv_forward(const Conv2d& c, const at::Tensor& x4, const at::Tensor& w2, const at::Tensor& bias) {
  const auto& g = c.g;
  auto out = at::empty({c.N, c.O, g.OH, g.OW}, c.options);
  if (out.numel() == 0) return out;
  const int64_t L = c.L(), K = c.K(), Og = c.Og(), N = c.N;
  const auto col = im2col(c, x4);
  const auto outR = at::empty({N * L, c.O}, c.options);
  for (int64_t gi = 0; gi < c.groups; ++gi)
    gemm(col.narrow(1, gi * K, K), w2.narrow(0, gi * Og, Og).t(), outR.narrow(1, gi * Og, Og), 1, 0);
  // One pass puts (N, L, O) into (N, O, L) and adds the bias.
  const int64_t O = c.O;
  if (!small_samples(c)) {
    auto out3 = out.view({N, O, L});
    const auto permuted = outR.view({N, L, O}).permute({0, 2, 1});
    if (bias.defined()) at::add_out(out3, permuted, bias.view({1, O, 1}));
    else out3.copy_(permuted);
    return out;
  }
  const at::Tensor b = bias.defined() ? bias.to(out.scalar_type()).contiguous() : out;
  if (lines(out)) {
    launch_by_samples("rows_to_channels_lines", c, out, [&](cl_kernel k, int64_t first, int64_t n) {
      tocl::set_args(k, shifted(outR, first * L * O), shifted(out, first * O * L), buffer_arg(b),
                     static_cast<cl_int>(bias.defined()), static_cast<cl_int>(O), static_cast<cl_int>(L),
                     static_cast<cl_int>(n * O));
      return n * O;
    });
    return out;
  }
  launch_by_samples("rows_to_channels", c, out, [&](cl_kernel k, int64_t first, int64_t n) {
    tocl::set_args(k, shifted(outR, first * L * O), shifted(out, first * O * L), buffer_arg(b),
                   static_cast<cl_int>(bias.defined()), static_cast<cl_int>(O), static_cast<cl_int>(L), 1.0f / O,
                   1.0f / L, static_cast<cl_int>(n * O * L));
    return n * O * L;
  });
  return out;
}

// The regular convolution's input gradient from goR (N * L, O): (N, C, H, W).
// gcol (N * L, rows) = goR (N * L, O) @ W (O, K) per group; col2im gathers it.
at::Tensor conv_input_grad(const Conv2d& c, const at::Tensor& goR, const at::Tensor& w2) {
  const auto& g = c.g;
  auto grad_input = at::empty({c.N, g.C, g.H, g.W}, c.options);
  if (grad_input.numel() == 0) return grad_input;
  const int64_t L = c.L(), K = c.K(), Og = c.Og(), N = c.N;
  const auto gcol = at::empty({N * L, c.rows()}, c.options);
  if (gcol.numel() == 0 || Og == 0) return grad_input.zero_();
  for (int64_t gi = 0; gi < c.groups; ++gi)
    gemm(goR.narrow(1, gi * Og, Og), w2.narrow(0, gi * Og, Og), gcol.narrow(1, gi * K, K), 1, 0);
  launch("col2im", c, gcol, grad_input, N * g.C);  // a work-item per input plane
  return grad_input;
}

// The regular convolution's weight gradient, as (O, K): goR^T (O, N * L) @ col (N * L, K) per group.
at::Tensor conv_weight_grad(const Conv2d& c, const at::Tensor& x4, const at::Tensor& goR) {
  auto gw = at::empty({c.O, c.K()}, c.options);
  if (gw.numel() == 0) return gw;
  const int64_t K = c.K(), Og = c.Og();
  const auto col = im2col(c, x4);
  for (int64_t gi = 0; gi < c.groups; ++gi)
    gemm(goR.narrow(1, gi * Og, Og).t(), col.narrow(1, gi * K, K), gw.narrow(0, gi * Og, Og), 1, 0);
  return gw;
}

// ATen's shared checks refuse negative dilations only; CPU's kernels also refuse 0 (which would
// give every kernel tap the same input position), except a transposed convolution's with a kernel of one
// tap per dim, where dilation multiplies nothing and CPU's oneDNN path computes it (its batch-1 path
// refuses it; the device computes it at every batch size).
void check_dilation(at::IntArrayRef dilation, const at::Tensor& weight, bool transposed) {
  bool one_tap = weight.dim() >= 3;
  for (int64_t i = 2; i < weight.dim(); ++i) one_tap = one_tap && weight.size(i) == 1;
  if (transposed && one_tap) return;
  for (const int64_t d : dilation) TORCH_CHECK(d > 0, "non-positive dilation is not supported");  // CPU's text
}

// CPU's kernels refuse an empty kernel window (this one would give a larger output than its input).
void check_kernel_size(const at::Tensor& weight, bool one_d) {
  const int64_t kh = one_d ? 1 : weight.size(2), kw = weight.size(one_d ? 2 : 3);
  TORCH_CHECK(kh > 0 && kw > 0, "kernel size should be greater than zero, but got kernel_height: ", kh,
              " kernel_width: ", kw);
}

// --- GPU form (kernel_forms' conv_batch_folded): the batch folded into the GEMMs' columns. col is
// (C * KH * KW, N * L); the forward GEMM W (O, K) @ col (K, N * L) has O x N * L outputs however small
// each sample's L, and the layout kernels run a work-item per element along contiguous memory.

bool folded(const Conv2d& c, int device) {
  const int64_t limit = int64_t{1} << 31;  // the layout kernels' 32-bit index math
  return tocl::kernel_forms(device).conv_batch_folded && c.rows() * c.N * c.L() < limit &&
         c.N * c.g.C * c.g.H * c.g.W < limit && c.O * c.N * c.L() < limit;
}

// x4 (N, C, H, W) contiguous -> col (C * KH * KW, N * L).
at::Tensor im2col_folded(const Conv2d& c, const at::Tensor& x4) {
  auto col = at::empty({c.rows(), c.N * c.L()}, c.options);
  if (col.numel() == 0) return col;
  const int device = device_index(col);
  cl_kernel k = tocl::get_kernel(im2col_program(device, col.scalar_type()), "im2col_folded");
  tocl::set_args(k, buffer_arg(x4), buffer_arg(col), c.g, static_cast<cl_int>(col.numel()));
  tocl::enqueue_1d(device, tocl::current_stream(device), k, col.numel(), tocl::kernel_forms(device).elementwise_group);
  return col;
}

// t4 (N, O, OH, OW) in any layout -> (O, N * L) contiguous.
at::Tensor fold_batch(const at::Tensor& t4) {
  const int64_t N = t4.size(0), O = t4.size(1), L = t4.size(2) * t4.size(3);
  return t4.reshape({N, O, L}).permute({1, 0, 2}).contiguous().view({O, N * L});
}

at::Tensor conv_forward_folded(const Conv2d& c, const at::Tensor& x4, const at::Tensor& w2, const at::Tensor& bias) {
  auto out = at::empty({c.N, c.O, c.g.OH, c.g.OW}, c.options);
  if (out.numel() == 0) return out;
  const int64_t L = c.L(), K = c.K(), Og = c.Og(), N = c.N, O = c.O;
  const auto col = im2col_folded(c, x4.contiguous());
  auto product = at::empty({O, N * L}, c.options);
  for (int64_t gi = 0; gi < c.groups; ++gi)
    gemm(w2.narrow(0, gi * Og, Og), col.narrow(0, gi * K, K), product.narrow(0, gi * Og, Og), 1, 0);
  // (O, N, L) -> (N, O, L), adding the bias in the same pass.
  auto out3 = out.view({N, O, L});
  const auto permuted = product.view({O, N, L}).permute({1, 0, 2});
  if (bias.defined()) at::add_out(out3, permuted, bias.view({1, O, 1}));
  else out3.copy_(permuted);
  return out;
}

// The regular convolution's input gradient from go_f (O, N * L): gcol = W^T go_f, gathered by col2im.
at::Tensor conv_input_grad_folded(const Conv2d& c, const at::Tensor& go_f, const at::Tensor& w2) {
  auto grad_input = at::empty({c.N, c.g.C, c.g.H, c.g.W}, c.options);
  if (grad_input.numel() == 0) return grad_input;
  const int64_t K = c.K(), Og = c.Og(), NL = c.N * c.L();
  if (NL == 0 || Og == 0) return grad_input.zero_();
  auto gcol = at::empty({c.rows(), NL}, c.options);
  for (int64_t gi = 0; gi < c.groups; ++gi)
    gemm(w2.narrow(0, gi * Og, Og).t(), go_f.narrow(0, gi * Og, Og), gcol.narrow(0, gi * K, K), 1, 0);
  const int device = device_index(grad_input);
  cl_kernel k = tocl::get_kernel(im2col_program(device, grad_input.scalar_type()), "col2im_folded");
  tocl::set_args(k, buffer_arg(gcol), buffer_arg(grad_input), c.g, static_cast<cl_int>(NL),
                 static_cast<cl_int>(grad_input.numel()));
  tocl::enqueue_1d(device, tocl::current_stream(device), k, grad_input.numel(),
                   tocl::kernel_forms(device).elementwise_group);
  return grad_input;
}

// The regular convolution's weight gradient (O, K) = go_f (O, N * L) @ col^T (N * L, K) per group.
at::Tensor conv_weight_grad_folded(const Conv2d& c, const at::Tensor& x4, const at::Tensor& go_f) {
  auto gw = at::empty({c.O, c.K()}, c.options);
  if (gw.numel() == 0) return gw;
  const int64_t K = c.K(), Og = c.Og();
  if (c.N * c.L() == 0) return gw.zero_();
  const auto col = im2col_folded(c, x4.contiguous());
  for (int64_t gi = 0; gi < c.groups; ++gi)
    gemm(go_f.narrow(0, gi * Og, Og), col.narrow(0, gi * K, K).t(), gw.narrow(0, gi * Og, Og), 1, 0);
  return gw;
}

// --- 1x1, stride-1, unpadded, single-group convolutions (both classes): every output position is one input
// position, so im2col is a copy and col2im a scatter, both slow (22 and 15 ms of a 53 ms forward + backward of
// (32, 256 -> 64, 14x14) on PoCL). The forward and the input gradient are one batched GEMM over the samples,
// out[n] (O, L) = W (O, C) @ x[n] (C, L), reading x and writing the output as they lie (NCHW), the bias in
// the GEMM; the weight gradient is one GEMM over the whole batch with both operands as the layout kernels'
// rows (CPU class) or with the batch folded into the columns (GPU class).
bool one_by_one(const Conv2d& c) {
  const auto& g = c.g;
  return c.groups == 1 && g.KH == 1 && g.KW == 1 && g.SH == 1 && g.SW == 1 && g.PH == 0 && g.PW == 0 && g.C > 0;
}

// t4 (N, C, H, W) as (N, C, H * W), a view where t4's layout allows (NCHW, or channels_last: per sample a
// column-major (C, L) matrix, which the GEMMs read in place).
at::Tensor samples_as_matrices(const at::Tensor& t4) {
  return t4.reshape({t4.size(0), t4.size(1), t4.size(2) * t4.size(3)});
}

at::Tensor conv1x1_forward(const Conv2d& c, const at::Tensor& x4, const at::Tensor& w2, const at::Tensor& bias) {
  auto out = at::empty({c.N, c.O, c.g.OH, c.g.OW}, c.options);
  if (out.numel() == 0) return out;
  const at::Tensor b = bias.defined() ? bias.to(out.scalar_type()).view({1, c.O, 1}) : at::Tensor();
  gemm_batched(w2.expand({c.N, c.O, c.g.C}), samples_as_matrices(x4), out.view({c.N, c.O, c.L()}), 1,
               b.defined() ? 1 : 0, b);
  return out;
}

at::Tensor conv1x1_input_grad(const Conv2d& c, const at::Tensor& go4, const at::Tensor& w2) {
  auto grad_input = at::empty({c.N, c.g.C, c.g.H, c.g.W}, c.options);
  if (grad_input.numel() == 0) return grad_input;
  gemm_batched(w2.t().expand({c.N, c.g.C, c.O}), samples_as_matrices(go4), grad_input.view({c.N, c.g.C, c.L()}), 1, 0);
  return grad_input;
}

at::Tensor conv1x1_weight_grad(const Conv2d& c, const at::Tensor& x4, const at::Tensor& go4, int device) {
  auto gw = at::empty({c.O, c.g.C}, c.options);
  if (gw.numel() == 0) return gw;
  if (c.N * c.L() == 0) return gw.zero_();
  if (folded(c, device)) {  // (O, N * L) @ (N * L, C)
    gemm(fold_batch(go4), fold_batch(x4).t(), gw, 1, 0);
    return gw;
  }
  Conv2d cx = c;  // x as rows (N * L, C): the layout kernels' chunks count C channels a sample
  cx.O = c.g.C;
  gemm(channels_last(c, go4).t(), channels_last(cx, x4), gw, 1, 0);
  return gw;
}

// --- Winograd F(2x2, 3x3) (kernel_forms' conv_winograd, aten/native/conv_winograd.h) for single-group 3x3,
// stride-1, dilation-1 2-D convolutions: the forward, the input gradient as the Winograd convolution of
// grad_output with the flipped, channel-transposed weight and padding 2 - p, and the weight gradient as
// F(3x3, 2x2) (winograd_weight_grad).
bool winograd(const Conv2d& c, int device) {
  const auto& g = c.g;
  return !c.one_d && c.groups == 1 && g.KH == 3 && g.KW == 3 && g.SH == 1 && g.SW == 1 && g.DH == 1 && g.DW == 1 &&
         winograd_serves(device, c.N, g.C, c.O, g.H, g.W, g.OH, g.OW);
}

bool native_dtype(const at::Tensor& input, const at::Tensor& weight) {
  const auto type = input.scalar_type();
  return (type == at::kFloat || type == at::kDouble) && weight.scalar_type() == type;
}

bool native(const at::Tensor& input, const at::Tensor& weight) {
  return (input.dim() == 3 || input.dim() == 4) && native_dtype(input, weight);
}

// 3-D convolutions as 2-D ones over the depth taps (conv3d.h).
bool native_3d(const at::Tensor& input, const at::Tensor& weight) {
  return input.dim() == 5 && weight.dim() == 5 && native_dtype(input, weight);
}

// float16 and bfloat16 convolutions (autocast's) run in float32 and are rounded once at the end, as CPU
// computes them; operands of mixed dtypes keep CPU's error (on the CPU path).
bool through_float(std::initializer_list<const at::Tensor*> operands) {
  const auto type = (*operands.begin())->scalar_type();
  if (!computed_in_float(type)) return false;
  for (const at::Tensor* t : operands)
    if (t->defined() && t->scalar_type() != type) return false;
  return true;
}

at::Tensor as_float(const at::Tensor& t) { return t.defined() ? t.to(at::kFloat) : t; }
at::Tensor as_type(const at::Tensor& t, at::ScalarType type) { return t.defined() ? t.to(type) : t; }

at::Tensor squeeze_1d(const at::Tensor& t, bool one_d) { return one_d ? t.squeeze(2) : t; }

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                       at::IntArrayRef output_padding, int64_t groups) {
  TORCH_CHECK(weight.device() == input.device() && (!bias || !bias->defined() || bias->device() == input.device()),
              "Expected all tensors to be on the same device, but found at least two devices, ", input.device(),
              " and ", weight.device() != input.device() ? weight.device() : bias->device(), "!");
  check_dilation(dilation, weight, transposed);
  const at::Tensor bias_or_none = bias ? *bias : at::Tensor();
  if (through_float({&input, &weight, &bias_or_none})) {
    const auto out = torch_opencl::convolution(as_float(input), as_float(weight), std::optional<at::Tensor>(as_float(bias_or_none)),
                                 stride, padding, dilation, transposed, output_padding, groups);
    return out.to(input.scalar_type());
  }
  if (native_3d(input, weight))
    return conv3d_forward(input, weight, bias_or_none, stride, padding, dilation, transposed, output_padding, groups);
  if (!native(input, weight))
    return convolution_on_cpu(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  const bool one_d = input.dim() == 3;
  if (weight.dim() == input.dim()) check_kernel_size(weight, one_d);  // other shapes: describe()'s errors
  const at::Tensor b = bias && bias->defined() ? *bias : at::Tensor();
  const auto w4 = as_4d(weight, one_d);
  const int device = device_index(input);
  if (!transposed) {
    const Conv2d c = describe(input.sizes(), weight.sizes(), stride, padding, dilation, groups, input.options());
    if (winograd(c, device)) return winograd_conv2d(input, weight, b, c.g.PH, c.g.PW, false);
    if (is_depthwise(c.groups, c.g)) return squeeze_1d(depthwise_conv_forward(c.g, as_4d(input, one_d), w4, b), one_d);
    const auto w2 = w4.view({c.O, c.K()});
    if (one_by_one(c)) return squeeze_1d(conv1x1_forward(c, as_dense_4d(input, one_d), w2, b), one_d);
    if (folded(c, device)) return squeeze_1d(conv_forward_folded(c, as_4d(input, one_d), w2, b), one_d);
    return squeeze_1d(conv_forward(c, as_dense_4d(input, one_d), w2, b), one_d);
  }
  // A transposed convolution is the input gradient of the regular one, with its input as grad_output.
  const Conv2d c = describe_transposed(input, weight, stride, padding, dilation, output_padding, groups);
  // CPU's shape check (ATen's check_shape_forward, which sees a 1-D convolution as 2-D): no output size
  // below 1.
  TORCH_CHECK(c.g.H > 0 && c.g.W > 0, "Given input size per channel: (", one_d ? 1 : input.size(2), " x ",
              input.size(-1), "). Calculated output size per channel: (", c.g.H, " x ", c.g.W,
              "). Output size is too small");
  if (!adjoint_fits(c, input))
    return convolution_on_cpu(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  if (winograd(c, device)) return winograd_conv2d(input, weight, b, 2 - c.g.PH, 2 - c.g.PW, true);
  const auto w2 = w4.view({c.O, c.K()});
  const auto in4 = as_dense_4d(input, one_d);
  auto out = folded(c, device) ? conv_input_grad_folded(c, fold_batch(in4), w2)
                               : conv_input_grad(c, channels_last(c, in4), w2);
  if (b.defined()) out.add_(b.view({1, c.g.C, 1, 1}));
  return squeeze_1d(out, one_d);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding,
    int64_t groups, std::array<bool, 3> output_mask) {
  check_dilation(dilation, weight, transposed);
  if (through_float({&input, &weight, &grad_output})) {
    const auto [gi, gw, gb] = torch_opencl::convolution_backward(as_float(grad_output), as_float(input), as_float(weight), stride,
                                                   padding, dilation, transposed, output_padding, groups,
                                                   output_mask);
    const auto type = input.scalar_type();
    return {as_type(gi, type), as_type(gw, type), as_type(gb, type)};
  }
  if (native_3d(input, weight) && grad_output.scalar_type() == input.scalar_type())
    return conv3d_backward(grad_output, input, weight, stride, padding, dilation, transposed, output_padding, groups,
                           output_mask);
  if (!native(input, weight) || grad_output.scalar_type() != input.scalar_type())
    return convolution_backward_on_cpu(grad_output, input, weight, stride, padding, dilation, transposed,
                                       output_padding, groups, output_mask);
  const bool one_d = input.dim() == 3;
  const auto w4 = as_4d(weight, one_d);
  const auto go4 = as_dense_4d(grad_output, one_d), x4 = as_dense_4d(input, one_d);
  at::Tensor grad_input, grad_weight, grad_bias;
  const int device = device_index(input);
  if (!transposed) {
    const Conv2d c = describe(input.sizes(), weight.sizes(), stride, padding, dilation, groups, input.options());
    const auto w2 = w4.view({c.O, c.K()});
    if (winograd(c, device)) {  // every gradient from grad_output as it is laid out
      if (output_mask[0]) grad_input = winograd_conv2d(go4, weight, at::Tensor(), 2 - c.g.PH, 2 - c.g.PW, true);
      if (output_mask[1]) grad_weight = winograd_weight_grad(x4, go4, c.g.PH, c.g.PW);
      // PoCL, (64, 32, 8, 8): 136 us, against 225 for the layout change and the column sums below.
      if (output_mask[2]) grad_bias = go4.sum({0, 2, 3});
      return {grad_input, grad_weight, grad_bias};
    }
    if (is_depthwise(c.groups, c.g)) {
      if (output_mask[0]) grad_input = squeeze_1d(depthwise_conv_input_grad(c.g, go4, w4), one_d);
      if (output_mask[1]) grad_weight = depthwise_conv_weight_grad(c.g, x4, go4).view(weight.sizes());
      if (output_mask[2]) grad_bias = go4.sum({0, 2, 3});
      return {grad_input, grad_weight, grad_bias};
    }
    if (one_by_one(c)) {
      if (output_mask[0]) grad_input = squeeze_1d(conv1x1_input_grad(c, go4, w2), one_d);
      if (output_mask[1]) grad_weight = conv1x1_weight_grad(c, x4, go4, device).view(weight.sizes());
      if (output_mask[2]) grad_bias = go4.sum({0, 2, 3});
      return {grad_input, grad_weight, grad_bias};
    }
    if (folded(c, device)) {
      const auto go_f = fold_batch(go4);  // (O, N * L)
      if (output_mask[0]) grad_input = squeeze_1d(conv_input_grad_folded(c, go_f, w2), one_d);
      if (output_mask[1]) grad_weight = conv_weight_grad_folded(c, x4, go_f).view(weight.sizes());
      if (output_mask[2]) grad_bias = go_f.sum(1);
      return {grad_input, grad_weight, grad_bias};
    }
    // grad_output as (N * L, O): one GEMM per group over the whole batch for each gradient.
    const auto goR = channels_last(c, go4);
    if (output_mask[0]) grad_input = squeeze_1d(conv_input_grad(c, goR, w2), one_d);
    if (output_mask[1]) grad_weight = conv_weight_grad(c, x4, goR).view(weight.sizes());
    // Column sums (reduce_columns): CLBlast's GEMV with a ones vector took 62-108 us for (4096, 16-32) on
    // PoCL, 4.2 ms for (65536, 64); the sums 25 us and 0.37 ms.
    if (output_mask[2]) grad_bias = goR.sum(0);
    return {grad_input, grad_weight, grad_bias};
  }
  // Transposed: y = A^T x for the regular convolution A (input y-shaped, grad_output x-shaped), so
  // grad_x = A grad_y (the regular forward) and grad_weight is the regular one with x as grad_output.
  const Conv2d c = describe_transposed(input, weight, stride, padding, dilation, output_padding, groups);
  if (!adjoint_fits(c, input))
    return convolution_backward_on_cpu(grad_output, input, weight, stride, padding, dilation, transposed,
                                       output_padding, groups, output_mask);
  const auto w2 = w4.view({c.O, c.K()});
  const bool wino = winograd(c, device);
  if (output_mask[0] && wino) grad_input = winograd_conv2d(go4, weight, at::Tensor(), c.g.PH, c.g.PW, false);
  if (output_mask[1] && wino) grad_weight = winograd_weight_grad(go4, x4, c.g.PH, c.g.PW);
  if (folded(c, device)) {
    if (output_mask[0] && !wino) grad_input = squeeze_1d(conv_forward_folded(c, go4, w2, at::Tensor()), one_d);
    if (output_mask[1] && !wino) grad_weight = conv_weight_grad_folded(c, go4, fold_batch(x4)).view(weight.sizes());
  } else {
    if (output_mask[0] && !wino) grad_input = squeeze_1d(conv_forward(c, go4, w2, at::Tensor()), one_d);
    if (output_mask[1] && !wino) grad_weight = conv_weight_grad(c, go4, channels_last(c, x4)).view(weight.sizes());
  }
  if (output_mask[2]) grad_bias = go4.sum({0, 2, 3});
  return {grad_input, grad_weight, grad_bias};
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward));
}

}  // namespace torch_opencl
