#include "aten/native/conv_winograd.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/native/blas.h"
#include "runtime/kernel_forms.h"
#include "runtime/launch.h"

namespace torch_opencl {
namespace {

constexpr int64_t kIndexLimit = int64_t{1} << 31;  // the kernels' 32-bit element indices

int64_t tiles(int64_t size) { return (size + 1) / 2; }

// A (16, rows, P) tensor whose 16 planes lie a little more than rows * P elements apart. The transforms
// write (input) or read (output) all 16 planes of a tile at once; when the planes' distance is a multiple
// of 4 KiB, those 16 streams fall into the same cache sets, and on PoCL's CPU device the input transform
// took 1.5-3x as long, the output transform up to 2.5x. The batched GEMM takes any batch stride.
at::Tensor planes(int64_t rows, int64_t P, const at::TensorOptions& options) {
  const int64_t plane = (rows * P + 15) / 16 * 16 + 16;
  return at::empty({16 * plane}, options).as_strided({16, rows, P}, {plane, P, 1});
}

cl_int i32(int64_t v) { return static_cast<cl_int>(v); }
cl_long i64(int64_t v) { return static_cast<cl_long>(v); }

// V (16, Q, P): B^T d B of the 4x4 patch of every (channel q of x, tile p), tiles (th, tw) per sample, the
// patch of tile (ty, tx) starting at row 2 ty - pad_h and column 2 tx - pad_w. x has any strides.
at::Tensor transformed_input(const at::Tensor& x, int64_t pad_h, int64_t pad_w, int64_t th, int64_t tw) {
  const int64_t N = x.size(0), Q = x.size(1), P = N * th * tw;
  const int device = device_index(x);
  const auto& forms = tocl::kernel_forms(device);
  const bool lines = forms.winograd_lines;  // the transforms' CPU form
  auto v = planes(Q, P, x.options());
  cl_kernel k = dtype_kernel(v, "winograd.cl", lines ? "winograd_input_lines" : "winograd_input");
  tocl::set_args(k, buffer_arg(x), buffer_arg(v), i32(Q), i32(x.size(2)), i32(x.size(3)), i64(x.stride(0)),
                 i64(x.stride(1)), i64(x.stride(2)), i64(x.stride(3)), i32(pad_h), i32(pad_w), i32(th), i32(tw),
                 i32(P), i32(v.stride(0)));
  tocl::enqueue_1d(device, tocl::current_stream(device), k, lines ? Q * N * th : Q * P, forms.elementwise_group);
  return v;
}

}  // namespace

bool winograd_serves(int device, int64_t N, int64_t C, int64_t O, int64_t H, int64_t W, int64_t OH, int64_t OW) {
  const auto& forms = tocl::kernel_forms(device);
  if (!forms.conv_winograd) return false;
  const auto min_channels = static_cast<int64_t>(std::max<size_t>(1, forms.winograd_min_channels));
  if (C < min_channels || O < min_channels || N == 0 || OH <= 0 || OW <= 0) return false;
  // The forward's tiles cover (OH, OW), the input gradient's (H, W); V, M and the NCHW tensors of both.
  const int64_t P = N * std::max(tiles(OH) * tiles(OW), tiles(H) * tiles(W));
  const int64_t channels = std::max(C, O);
  return 16 * (channels * P + 32) < kIndexLimit && N * channels * std::max(H * W, OH * OW) < kIndexLimit;
}

at::Tensor winograd_conv2d(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias, int64_t pad_h,
                           int64_t pad_w, bool adjoint) {
  const int64_t N = x.size(0), Q = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t R = adjoint ? w.size(1) : w.size(0);  // output channels
  TORCH_INTERNAL_ASSERT(w.size(adjoint ? 0 : 1) == Q && w.size(2) == 3 && w.size(3) == 3);
  const int64_t OH = H + 2 * pad_h - 2, OW = W + 2 * pad_w - 2;
  const int64_t th = tiles(OH), tw = tiles(OW), P = N * th * tw;
  auto out = at::empty({N, R, OH, OW}, x.options());
  if (out.numel() == 0) return out;
  const int device = device_index(x);
  const int stream = tocl::current_stream(device);
  const auto& forms = tocl::kernel_forms(device);
  const bool lines = forms.winograd_lines;  // the transforms' CPU form

  // U (16, R, Q): the transformed filter, every call (weights change in place between steps).
  auto u = at::empty({16, R, Q}, x.options());
  {
    cl_kernel k = dtype_kernel(u, "winograd.cl", "winograd_filter");
    const cl_long w_sr = w.stride(adjoint ? 1 : 0), w_sq = w.stride(adjoint ? 0 : 1);
    tocl::set_args(k, buffer_arg(w), buffer_arg(u), i32(R), i32(Q), w_sr, w_sq, i64(w.stride(2)), i64(w.stride(3)),
                   i32(adjoint));
    tocl::enqueue_1d(device, stream, k, R * Q, forms.elementwise_group);
  }
  // V (16, Q, P): the transformed input patches.
  const auto v = transformed_input(x, pad_h, pad_w, th, tw);
  // M[e] = U[e] @ V[e], all 16 in one batched GEMM.
  auto m = planes(R, P, x.options());
  gemm_batched(u, v, m, 1, 0);
  {
    const at::Tensor b = bias.defined() ? bias.to(out.scalar_type()).contiguous() : out;
    cl_kernel k = dtype_kernel(out, "winograd.cl", lines ? "winograd_output_lines" : "winograd_output");
    tocl::set_args(k, buffer_arg(m), buffer_arg(out), buffer_arg(b), static_cast<cl_int>(bias.defined()), i32(R),
                   i32(OH), i32(OW), i32(th), i32(tw), i32(P), i32(m.stride(0)));
    tocl::enqueue_1d(device, stream, k, lines ? R * N * th : R * P, forms.elementwise_group);
  }
  return out;
}

at::Tensor winograd_weight_grad(const at::Tensor& x, const at::Tensor& grad_out, int64_t pad_h, int64_t pad_w) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t O = grad_out.size(1), OH = grad_out.size(2), OW = grad_out.size(3);
  TORCH_INTERNAL_ASSERT(grad_out.size(0) == N && OH == H + 2 * pad_h - 2 && OW == W + 2 * pad_w - 2);
  auto gw = at::empty({O, C, 3, 3}, x.options());
  if (gw.numel() == 0) return gw;
  if (N == 0 || OH <= 0 || OW <= 0) return gw.zero_();
  const int64_t th = tiles(OH), tw = tiles(OW), P = N * th * tw;
  const int device = device_index(x);
  const int stream = tocl::current_stream(device);
  const auto& forms = tocl::kernel_forms(device);
  const bool lines = forms.winograd_lines;

  // V (16, C, P): the forward's transformed input patches over the tiles of (OH, OW).
  const auto v = transformed_input(x, pad_h, pad_w, th, tw);
  // Hg (16, O, P): the transformed 2x2 tiles of grad_output.
  auto hg = planes(O, P, x.options());
  {
    cl_kernel k = dtype_kernel(hg, "winograd.cl", lines ? "winograd_grad_output_lines" : "winograd_grad_output");
    tocl::set_args(k, buffer_arg(grad_out), buffer_arg(hg), i32(O), i32(OH), i32(OW), i64(grad_out.stride(0)),
                   i64(grad_out.stride(1)), i64(grad_out.stride(2)), i64(grad_out.stride(3)), i32(th), i32(tw),
                   i32(P), i32(hg.stride(0)));
    tocl::enqueue_1d(device, stream, k, lines ? O * N * th : O * P, forms.elementwise_group);
  }
  // M[e] (O, C) = Hg[e] @ V[e]^T: the sum over tiles is the GEMMs' depth.
  auto m = planes(O, C, x.options());
  gemm_batched(hg, v.transpose(1, 2), m, 1, 0);
  {
    cl_kernel k = dtype_kernel(gw, "winograd.cl", "winograd_weight");
    tocl::set_args(k, buffer_arg(m), buffer_arg(gw), i32(O * C), i32(m.stride(0)));
    tocl::enqueue_1d(device, stream, k, O * C, forms.elementwise_group);
  }
  return gw;
}

}  // namespace torch_opencl
