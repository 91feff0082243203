// F.unfold and F.fold: aten::im2col and aten::col2im (each the other's gradient, by PyTorch's own
// derivative formulas), in the operators' layout: image (N, C, H, W), columns (N, C * KH * KW, L),
// batch-less inputs as a batch of one. CPU's argument and shape checks are restated here (ATen's
// im2col_shape_check and col2im_shape_check, in their order and words); kernels_cl/unfold.cl reads its
// input through its strides and writes a contiguous output, as CPU returns. (Convolution's im2col.cl lays
// its patches out as (N * L, K) rows for its GEMMs, or with the batch folded into the columns: neither is
// this layout, so the operators have their own kernels.) float32, float64, half, bfloat16 and bool as CPU;
// complex on the CPU fallback; other dtypes raise CPU's error.
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <climits>
#include <string>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/kernel_forms.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

using at::IntArrayRef;
using at::Tensor;

struct Blocks {  // as in kernels_cl/unfold.cl: the image (C, H, W), the kernel, and OH x OW sliding blocks
  cl_long C, H, W, KH, KW, PH, PW, SH, SW, DH, DW, OH, OW;
};
struct ImageStrides {
  cl_long n, c, h, w;
};
struct ColumnStrides {
  cl_long n, k, l;
};

// Division rounding toward negative infinity (ATen's div_rtn), as the shape checks compute block counts.
int64_t div_rtn(int64_t x, int64_t y) {
  int64_t q = x / y;
  const int64_t r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) --q;
  return q;
}

void check_pair(IntArrayRef v, const char* name) {
  TORCH_CHECK(v.size() == 2, "It is expected ", name, " equals to 2, but got size ", v.size());
}

// The dtypes CPU's kernels take: float32, float64, half, bfloat16 and bool run here, complex on the fallback.
void check_dtype(const Tensor& t, const char* cpu_name) {
  const auto type = t.scalar_type();
  if (at::isComplexType(type)) throw_dtype_not_native(c10::str(cpu_name, ": no OpenCL form for ", type));
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble || type == at::kHalf ||
                                  type == at::kBFloat16 || type == at::kBool,
                              "\"", cpu_name, "\" not implemented for '", c10::toString(type), "'");
}

// kernels_cl/unfold.cl for t's dtype, with ROUND_T: fold's gather rounds each partial sum to the dtype as
// CPU's col2im, which adds in the dtype (half and bfloat16 round, bool saturates at true).
cl_kernel unfold_kernel(const Tensor& t, const char* name) {
  const auto type = t.scalar_type();
  const int device = device_index(t);
  check_device_supports(type, device, name);
  return tocl::get_kernel(dtype_program(device, "unfold.cl", type, at::kLong, 0, round_to_dtype_define(type)), name);
}

tocl::BufferArg shifted(const Tensor& t, int64_t elements) {
  auto b = buffer_arg(t);
  b.offset += elements;
  return b;
}

// Whether the per-element forms' 32-bit index math is exact: image and columns of a sample below 2^31
// elements, and every coordinate a window reaches (padding and dilation included) within int.
bool fits_int(const Blocks& g) {
  const int64_t K = g.C * g.KH * g.KW, L = g.OH * g.OW;
  const int64_t reach_h = g.H + g.PH + g.DH * g.KH + g.SH * g.OH, reach_w = g.W + g.PW + g.DW * g.KW + g.SW * g.OW;
  return K * L < INT_MAX && g.C * g.H * g.W < INT_MAX && reach_h < INT_MAX && reach_w < INT_MAX;
}

// Whether the rows forms run: CPU devices (kernel_forms' copy_lines), and samples too large for 32-bit math.
bool rows_form(const Tensor& t, const Blocks& g) { return tocl::kernel_forms(device_index(t)).copy_lines || !fits_int(g); }

// The elements forms run over chunks of whole samples of `per_sample` elements, under 2^31 each:
// launch_chunk(first sample, samples).
template <class F>
void for_sample_chunks(int64_t N, int64_t per_sample, F launch_chunk) {
  const int64_t chunk = std::max<int64_t>((INT_MAX - 1) / std::max<int64_t>(per_sample, 1), 1);
  for (int64_t first = 0; first < N; first += chunk) launch_chunk(first, std::min(chunk, N - first));
}

void enqueue(const Tensor& like, cl_kernel k, int64_t total) {
  tocl::enqueue_1d(device_index(like), current_stream_of(like), k, total);
}

// col (N, K, L) contiguous <- the blocks of image (N, C, H, W), any strides.
void unfold_into(const Tensor& col, const Tensor& image, const Blocks& g) {
  if (col.numel() == 0) return;
  const int64_t N = image.size(0), K = g.C * g.KH * g.KW, L = g.OH * g.OW;
  const ImageStrides s{image.stride(0), image.stride(1), image.stride(2), image.stride(3)};
  if (rows_form(col, g)) {
    cl_kernel k = unfold_kernel(col, "unfold_rows");
    const int64_t total = N * K * g.OH;
    tocl::set_args(k, buffer_arg(col), buffer_arg(image), s, g, static_cast<cl_long>(total));
    enqueue(col, k, total);
    return;
  }
  cl_kernel k = unfold_kernel(col, "unfold_elements");
  for_sample_chunks(N, K * L, [&](int64_t first, int64_t n) {
    const int64_t total = n * K * L;
    tocl::set_args(k, shifted(col, first * K * L), shifted(image, first * s.n), s, g, static_cast<cl_int>(total));
    enqueue(col, k, total);
  });
}

// image (N, C, H, W) contiguous <- the sums of the blocks in col (N, K, L), any strides.
void fold_into(const Tensor& image, const Tensor& col, const Blocks& g) {
  if (image.numel() == 0) return;
  const int64_t N = image.size(0), per_sample = g.C * g.H * g.W;
  const ColumnStrides s{col.stride(0), col.stride(1), col.stride(2)};
  if (rows_form(image, g)) {
    cl_kernel k = unfold_kernel(image, "fold_rows");
    const int64_t total = N * g.C * g.H;
    tocl::set_args(k, buffer_arg(image), buffer_arg(col), s, g, static_cast<cl_long>(total));
    enqueue(image, k, total);
    return;
  }
  cl_kernel k = unfold_kernel(image, "fold_elements");
  for_sample_chunks(N, per_sample, [&](int64_t first, int64_t n) {
    const int64_t total = n * per_sample;
    tocl::set_args(k, shifted(image, first * per_sample), shifted(col, first * s.n), s, g,
                   static_cast<cl_int>(total));
    enqueue(image, k, total);
  });
}

// ---- im2col (F.unfold) ----

Tensor unfold_op(const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
                 IntArrayRef stride) {
  check_pair(kernel_size, "kernel_size");
  check_pair(dilation, "dilation");
  check_pair(padding, "padding");
  check_pair(stride, "stride");
  const int64_t KH = kernel_size[0], KW = kernel_size[1], DH = dilation[0], DW = dilation[1];
  const int64_t PH = padding[0], PW = padding[1], SH = stride[0], SW = stride[1];
  // ATen's im2col_shape_check.
  TORCH_CHECK(KW > 0 && KH > 0, "kernel size should be greater than zero, but got kernel_height: ", KH,
              " kernel_width: ", KW);
  TORCH_CHECK(DW > 0 && DH > 0, "dilation should be greater than zero, but got dilation_height: ", DH,
              " dilation_width: ", DW);
  TORCH_CHECK(PW >= 0 && PH >= 0, "padding should be non-negative, but got pad_height: ", PH, " pad_width: ", PW);
  TORCH_CHECK(SW > 0 && SH > 0, "stride should be greater than zero, but got stride_height: ", SH,
              " stride_width: ", SW);
  const int64_t ndim = self.dim();
  const bool valid_dims = self.size(1) != 0 && self.size(2) != 0;  // a 1-D or 2-D input raises IndexError here, as on CPU
  TORCH_CHECK((ndim == 3 && self.size(0) && valid_dims) || (ndim == 4 && valid_dims && self.size(3) != 0),
              "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for "
              "input, but got: ",
              self.sizes());
  const int64_t H = self.size(-2), W = self.size(-1);
  const int64_t OH = div_rtn(H + 2 * PH - (DH * (KH - 1) + 1), SH) + 1;
  const int64_t OW = div_rtn(W + 2 * PW - (DW * (KW - 1) + 1), SW) + 1;
  TORCH_CHECK(OH >= 1 && OW >= 1, "Given input with spatial size (", H, ", ", W, "), kernel_size=(", KH, ", ", KW,
              "), dilation=(", DH, ", ", DW, "), padding=(", PH, ", ", PW,
              "), calculated shape of the array of sliding blocks as (", OH, ", ", OW,
              "), but its components must be at least one.");
  check_dtype(self, "im2col_out_cpu");
  const c10::DeviceGuard guard(self.device());
  const Tensor image = ndim == 3 ? self.unsqueeze(0) : self;
  const int64_t C = image.size(1);
  const Blocks g{C, H, W, KH, KW, PH, PW, SH, SW, DH, DW, OH, OW};
  auto col = at::empty({image.size(0), C * KH * KW, OH * OW}, self.options());
  unfold_into(col, image, g);
  return ndim == 3 ? col.squeeze(0) : col;
}

// ---- col2im (F.fold) ----

Tensor fold_op(const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
               IntArrayRef padding, IntArrayRef stride) {
  check_pair(output_size, "output_size");
  check_pair(kernel_size, "kernel_size");
  check_pair(dilation, "dilation");
  check_pair(padding, "padding");
  check_pair(stride, "stride");
  const int64_t H = output_size[0], W = output_size[1], KH = kernel_size[0], KW = kernel_size[1];
  const int64_t DH = dilation[0], DW = dilation[1], PH = padding[0], PW = padding[1], SH = stride[0], SW = stride[1];
  // ATen's col2im_shape_check.
  TORCH_CHECK(KW > 0 && KH > 0, "kernel size should be greater than zero, but got kernel_height: ", KH,
              " kernel_width: ", KW);
  TORCH_CHECK(SW > 0 && SH > 0, "stride should be greater than zero, but got stride_height: ", SH,
              " stride_width: ", SW);
  TORCH_CHECK(DW > 0 && DH > 0, "dilation should be greater than zero, but got dilation_height: ", DH,
              " dilation_width: ", DW);
  TORCH_CHECK(PW >= 0 && PH >= 0, "padding should be non-negative, but got pad_height: ", PH, " pad_width: ", PW);
  const int64_t ndim = self.dim();
  TORCH_CHECK((ndim == 2 && self.size(0) != 0 && self.size(1) != 0) ||
                  (ndim == 3 && self.size(1) != 0 && self.size(2) != 0),
              "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions "
              "for input, but got: ",
              self.sizes());
  const int64_t batch_dim = ndim == 3 ? 0 : -1;
  const int64_t planes = self.size(batch_dim + 1);
  uint64_t kernel_elements = 0;
  TORCH_CHECK(!__builtin_mul_overflow(static_cast<uint64_t>(KW), static_cast<uint64_t>(KH), &kernel_elements),
              "Given kernel_width = ", KW, " and kernel_height = ", KH,
              " the product of kernel_width and kernel_height overflowed.");
  TORCH_CHECK(planes % (KW * KH) == 0,
              "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
              "input.size(1)=",
              planes, " and kernel_size=(", KH, ", ", KW, ").");
  const int64_t length = self.size(batch_dim + 2);
  const int64_t OH = div_rtn(H + 2 * PH - DH * (KH - 1) - 1, SH) + 1;
  const int64_t OW = div_rtn(W + 2 * PW - DW * (KW - 1) - 1, SW) + 1;
  TORCH_CHECK(length == OH * OW, "Given output_size=(", H, ", ", W, "), kernel_size=(", KH, ", ", KW,
              "), dilation=(", DH, ", ", DW, "), padding=(", PH, ", ", PW, "), stride=(", SH, ", ", SW,
              "), expected size of input's dimension 2 to match the calculated number of sliding blocks ", OH,
              " * ", OW, " = ", OH * OW, ", but got input.size(2)=", length, ".");
  TORCH_CHECK(OH >= 1 && OW >= 1, "Given output_size=(", H, ", ", W, "), kernel_size=(", KH, ", ", KW,
              "), dilation=(", DH, ", ", DW, "), padding=(", PH, ", ", PW, "), stride=(", SH, ", ", SW,
              "), calculated shape of the array of sliding blocks as (", OH, ", ", OW,
              "), which is too small (non-positive)");
  TORCH_CHECK(W >= 1 && H >= 1, "Expected output spatial size to be positive, but got: output_size=(", H, ", ", W,
              ").");
  check_dtype(self, "col2im_out_cpu");
  const c10::DeviceGuard guard(self.device());
  const Tensor col = ndim == 2 ? self.unsqueeze(0) : self;
  const int64_t C = planes / (KH * KW);
  const Blocks g{C, H, W, KH, KW, PH, PW, SH, SW, DH, DW, OH, OW};
  auto image = at::empty({col.size(0), C, H, W}, self.options());
  fold_into(image, col, g);
  return ndim == 2 ? image.squeeze(0) : image;
}

Tensor& write_out(const Tensor& result, Tensor& out) {
  TORCH_CHECK(out.scalar_type() == result.scalar_type(), "Expected out tensor to have dtype ", result.scalar_type(),
              ", but got ", out.scalar_type(), " instead");
  check_same_device({result, out});
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

Tensor& unfold_out(const Tensor& self, IntArrayRef kernel_size, IntArrayRef dilation, IntArrayRef padding,
                   IntArrayRef stride, Tensor& out) {
  return write_out(unfold_op(self, kernel_size, dilation, padding, stride), out);
}

Tensor& fold_out(const Tensor& self, IntArrayRef output_size, IntArrayRef kernel_size, IntArrayRef dilation,
                 IntArrayRef padding, IntArrayRef stride, Tensor& out) {
  return write_out(fold_op(self, output_size, kernel_size, dilation, padding, stride), out);
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("im2col", TORCH_FN(unfold_op));
  m.impl("im2col.out", TORCH_FN(unfold_out));
  m.impl("col2im", TORCH_FN(fold_op));
  m.impl("col2im.out", TORCH_FN(fold_out));
}

}  // namespace torch_opencl
