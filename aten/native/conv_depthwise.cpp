// Depthwise convolutions in direct forms (see conv_depthwise.h). im2col and a GEMM per group launched two
// kernels for each of a layer's hundreds of channels; these are one launch per direction.
#include "aten/native/conv_depthwise.h"

#include <ATen/ATen.h>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/kernel_forms.h"
#include "runtime/launch.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

cl_kernel kernel(const at::Tensor& like, const char* name) {
  const int device = device_index(like);
  const auto type = like.scalar_type();
  return tocl::get_kernel(dtype_program(device, "conv_depthwise.cl", type, c10::ScalarType::Long, 0,
                                        std::string("#define T ") + storage_type(type) + "\n"),
                          name);
}

bool rows_form(const at::Tensor& t) { return tocl::kernel_forms(device_index(t)).conv_depthwise_rows; }

void enqueue(const at::Tensor& like, cl_kernel k, int64_t total, size_t local = 0) {
  const int device = device_index(like);
  tocl::enqueue_1d(device, tocl::current_stream(device), k, static_cast<size_t>(total), local);
}

}  // namespace

at::Tensor depthwise_conv_forward(const Shape& g, const at::Tensor& x4, const at::Tensor& w, const at::Tensor& bias) {
  const int64_t N = x4.size(0), O = w.size(0);
  auto out = at::empty({N, O, g.OH, g.OW}, x4.options());
  if (out.numel() == 0) return out;
  const auto x = x4.contiguous(), wc = w.contiguous();
  const auto b = bias.defined() ? bias.to(out.scalar_type()).contiguous() : at::Tensor();
  const bool rows = rows_form(out);
  cl_kernel k = kernel(out, rows ? "depthwise_forward_rows" : "depthwise_forward");
  const int64_t total = rows ? N * O * g.OH : out.numel();
  tocl::set_args(k, buffer_arg(x), buffer_arg(wc), b.defined() ? buffer_arg(b) : buffer_arg(wc),
                 static_cast<cl_int>(b.defined()), buffer_arg(out), g, static_cast<cl_long>(O / g.C),
                 static_cast<cl_long>(O), static_cast<cl_long>(total));
  enqueue(out, k, total);
  return out;
}

at::Tensor depthwise_conv_input_grad(const Shape& g, const at::Tensor& go4, const at::Tensor& w) {
  const int64_t N = go4.size(0), O = w.size(0);
  auto gi = at::empty({N, g.C, g.H, g.W}, go4.options());
  if (gi.numel() == 0) return gi;
  if (go4.numel() == 0) return gi.zero_();
  const auto go = go4.contiguous(), wc = w.contiguous();
  const bool rows = rows_form(gi);
  cl_kernel k = kernel(gi, rows ? "depthwise_input_grad_rows" : "depthwise_input_grad");
  const int64_t total = rows ? N * g.C * g.H : gi.numel();
  tocl::set_args(k, buffer_arg(go), buffer_arg(wc), buffer_arg(gi), g, static_cast<cl_long>(O / g.C),
                 static_cast<cl_long>(total));
  enqueue(gi, k, total);
  return gi;
}

at::Tensor depthwise_conv_weight_grad(const Shape& g, const at::Tensor& x4, const at::Tensor& go4) {
  const int64_t N = x4.size(0), O = go4.size(1);
  auto gw = at::empty({O, 1, g.KH, g.KW}, x4.options());
  if (gw.numel() == 0) return gw;
  if (go4.numel() == 0) return gw.zero_();
  const auto x = x4.contiguous(), go = go4.contiguous();
  const int64_t M = O / g.C;
  if (rows_form(gw)) {
    cl_kernel k = kernel(gw, "depthwise_weight_grad_rows");
    tocl::set_args(k, buffer_arg(go), buffer_arg(x), buffer_arg(gw), g, static_cast<cl_long>(M),
                   static_cast<cl_long>(O), static_cast<cl_long>(N), static_cast<cl_long>(gw.numel()));
    enqueue(gw, k, gw.numel());
    return gw;
  }
  // A work-group per weight element, of the reductions' power-of-two group size.
  const size_t group = tocl::kernel_forms(device_index(gw)).reduce_group;
  cl_kernel k = kernel(gw, "depthwise_weight_grad");
  tocl::set_args(k, buffer_arg(go), buffer_arg(x), buffer_arg(gw), g, static_cast<cl_long>(M),
                 static_cast<cl_long>(O), static_cast<cl_long>(N), tocl::LocalArg{group * gw.element_size()});
  enqueue(gw, k, gw.numel() * static_cast<int64_t>(group), group);
  return gw;
}

}  // namespace torch_opencl
