// _softmax, _log_softmax and their backwards: ATen's structured meta functions
// check arguments and shape the output as on CPU; the kernels run over a contiguous
// (outer, dim, inner) view. CPU forms (kernels_cl/softmax.cl): one work-item per row in
// 16-element vectors (inner == 1), one work-group per row when there are too few rows to
// share the compute units, one work-item per 16 adjacent columns (inner > 1). GPU forms
// (kernels_cl/softmax_gpu.cl, where runtime/kernel_forms.h says row_gpu_forms): segments of a
// work-group per row or column, coalesced, the line kept in registers.
#include <ATen/ATen.h>
#include <ATen/MetaFunctions.h>
#include <ATen/WrapDimUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>
#include <string>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/line_geometry.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/kernel_support/structured.h"
#include "runtime/device.h"
#include "runtime/kernel_forms.h"

namespace torch_opencl {
namespace {

struct RowGeometry {
  int64_t dim_size, inner, rows;
};

RowGeometry row_geometry(const at::Tensor& t, int64_t dim) {
  if (t.dim() == 0) return {1, 1, 1};
  const int64_t d = t.size(dim);
  int64_t inner = 1;
  for (int64_t k = dim + 1; k < t.dim(); ++k) inner *= t.size(k);
  return {d, inner, t.numel() / d};
}

// Which of softmax.cl's kernel forms runs a geometry ("_rows", "_rows_group", "_columns"), and how.
struct RowLaunch {
  const char* suffix;
  size_t global, local;
};

RowLaunch plan(const RowGeometry& g, int device) {
  const int64_t units = std::max<int64_t>(1, tocl::device_info(device).compute_units);
  // Items past the last row (the global size rounded up to the group) store nothing.
  const auto rounded = [&](const char* suffix, int64_t local) {
    return RowLaunch{suffix, static_cast<size_t>((g.rows + local - 1) / local * local), static_cast<size_t>(local)};
  };
  if (g.inner > 1) {  // a work-item per 16 adjacent columns (COLUMN_LANES in kernels_cl/softmax.cl)
    const int64_t items = g.rows / g.inner * ((g.inner + 15) / 16);
    return {"_columns", static_cast<size_t>((items + 7) / 8 * 8), 8};
  }
  // Too few rows to keep the compute units busy one item per row: a work-group per row.
  if (g.rows < 8 * units) return {"_rows_group", static_cast<size_t>(g.rows) * row_group(device), row_group(device)};
  // Groups of up to 64 rows, about 4 groups per compute unit at least.
  int64_t local = 64;
  while (local > 1 && local * 4 * units > g.rows) local /= 2;
  return rounded("_rows", local);
}

// Runs `fill(contiguous_out)` into `out`, through a temporary when `out` is not contiguous.
template <class F>
void into(const at::Tensor& out, F fill) {
  if (out.is_contiguous()) return fill(out);
  auto tmp = at::empty(out.sizes(), out.options());
  fill(tmp);
  out.copy_(tmp);
}

// The forward kernels' mode: softmax, log_softmax, or _safe_softmax (rows of -inf only give 0, not NaN).
enum Mode : cl_int { kSoftmax = 0, kLogSoftmax = 1, kSafeSoftmax = 2 };

void softmax_forward(const at::Tensor& input, int64_t dim, bool half_to_float, Mode mode, const at::Tensor& out) {
  const bool log = mode == kLogSoftmax;
  TORCH_CHECK(!half_to_float, log ? "_log_softmax" : "_softmax",
              ": conversion from half to float is not supported on opencl; call softmax on a float tensor");
  // As CPU: softmax is defined for floating types only (the structured meta does not check it), and
  // CPU returns an empty input's empty result before it looks at the dtype.
  if (input.numel() == 0) return;
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(input.scalar_type()), "\"", log ? "log_softmax" : "softmax",
                              "\" not implemented for '", input.scalar_type(), "'");
  const c10::DeviceGuard guard(input.device());
  dim = at::maybe_wrap_dim(dim, input.dim());
  const auto in = input.contiguous();
  const auto g = row_geometry(in, dim);
  into(out, [&](const at::Tensor& o) {
    const int device = device_index(in);
    if (tocl::kernel_forms(device).row_gpu_forms) {
      const auto p = line_launch(device, g.dim_size, g.inner, g.rows);
      cl_kernel k = dtype_kernel(in, "softmax_gpu.cl", "softmax_lines");
      tocl::set_args(k, buffer_arg(o), buffer_arg(in), static_cast<cl_long>(g.dim_size), static_cast<cl_long>(g.inner),
                     static_cast<cl_long>(g.rows), static_cast<cl_int>(p.seg), static_cast<cl_int>(mode));
      tocl::enqueue_1d(device, current_stream_of(in), k, p.global, p.local);
      return;
    }
    const auto p = plan(g, device);
    cl_kernel k = dtype_kernel(in, "softmax.cl", (std::string("softmax") + p.suffix).c_str());
    tocl::set_args(k, buffer_arg(o), buffer_arg(in), static_cast<cl_long>(g.dim_size), static_cast<cl_long>(g.inner),
                   static_cast<cl_long>(g.rows), static_cast<cl_int>(mode));
    tocl::enqueue_1d(device_index(in), current_stream_of(in), k, p.global, p.local);
  });
}

void softmax_backward(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim, bool log,
                      const at::Tensor& grad_input) {
  TORCH_CHECK(grad_output.scalar_type() == grad_input.scalar_type(), log ? "_log_softmax" : "_softmax",
              "_backward_data: grad_output of dtype ", grad_output.scalar_type(), " and input_dtype ",
              grad_input.scalar_type(), " differ; opencl does not support the half-to-float form");
  check_same_device({grad_output, output, grad_input});
  if (output.numel() == 0) return;
  const c10::DeviceGuard guard(output.device());
  dim = at::maybe_wrap_dim(dim, output.dim());
  const auto go = grad_output.contiguous();
  const auto y = output.contiguous();
  const auto g = row_geometry(y, dim);
  into(grad_input, [&](const at::Tensor& gi) {
    const int device = device_index(y);
    if (tocl::kernel_forms(device).row_gpu_forms) {
      const auto p = line_launch(device, g.dim_size, g.inner, g.rows);
      cl_kernel k = dtype_kernel(y, "softmax_gpu.cl", "softmax_backward_lines");
      tocl::set_args(k, buffer_arg(gi), buffer_arg(go), buffer_arg(y), static_cast<cl_long>(g.dim_size),
                     static_cast<cl_long>(g.inner), static_cast<cl_long>(g.rows), static_cast<cl_int>(p.seg),
                     static_cast<cl_int>(log));
      tocl::enqueue_1d(device, current_stream_of(y), k, p.global, p.local);
      return;
    }
    const auto p = plan(g, device);
    cl_kernel k = dtype_kernel(y, "softmax.cl", (std::string("softmax_backward") + p.suffix).c_str());
    tocl::set_args(k, buffer_arg(gi), buffer_arg(go), buffer_arg(y), static_cast<cl_long>(g.dim_size),
                   static_cast<cl_long>(g.inner), static_cast<cl_long>(g.rows), static_cast<cl_int>(log));
    tocl::enqueue_1d(device_index(y), current_stream_of(y), k, p.global, p.local);
  });
}

#define SOFTMAX_OPS(NAME, MODE)                                                                                       \
  at::Tensor NAME(const at::Tensor& self, int64_t dim, bool half_to_float) {                                          \
    StructuredFunctional<at::meta::structured_##NAME> op;                                                             \
    op.meta(self, dim, half_to_float);                                                                                \
    softmax_forward(self, dim, half_to_float, MODE, op.maybe_get_output(0));                                          \
    return op.take();                                                                                                 \
  }                                                                                                                   \
  at::Tensor& NAME##_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out) {                  \
    StructuredOut<at::meta::structured_##NAME> op(out);                                                               \
    op.meta(self, dim, half_to_float);                                                                                \
    softmax_forward(self, dim, half_to_float, MODE, op.maybe_get_output(0));                                          \
    op.finish();                                                                                                      \
    return out;                                                                                                       \
  }                                                                                                                   \
  at::Tensor NAME##_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim, at::ScalarType dt) {      \
    StructuredFunctional<at::meta::structured_##NAME##_backward_data> op;                                             \
    op.meta(grad, output, dim, dt);                                                                                   \
    softmax_backward(grad, output, dim, MODE == kLogSoftmax, op.maybe_get_output(0));                                 \
    return op.take();                                                                                                 \
  }                                                                                                                   \
  at::Tensor& NAME##_backward_out(const at::Tensor& grad, const at::Tensor& output, int64_t dim,                      \
                                  at::ScalarType dt, at::Tensor& out) {                                               \
    StructuredOut<at::meta::structured_##NAME##_backward_data> op(out);                                               \
    op.meta(grad, output, dim, dt);                                                                                   \
    softmax_backward(grad, output, dim, MODE == kLogSoftmax, op.maybe_get_output(0));                                 \
    op.finish();                                                                                                      \
    return out;                                                                                                       \
  }

SOFTMAX_OPS(_softmax, kSoftmax)
SOFTMAX_OPS(_log_softmax, kLogSoftmax)
#undef SOFTMAX_OPS

// softmax whose rows of -inf only give 0 (scaled_dot_product_attention's masked rows): one kernel
// instead of CPU's composite (softmax, eq, all, where). Its backward is _softmax_backward_data.
at::Tensor _safe_softmax(const at::Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  const auto in = dtype.has_value() ? self.to(*dtype) : self;
  auto out = at::empty(in.sizes(), in.options());
  softmax_forward(in, dim, false, kSafeSoftmax, out);
  return out;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("_softmax", TORCH_FN(_softmax));
  m.impl("_softmax.out", TORCH_FN(_softmax_out));
  m.impl("_log_softmax", TORCH_FN(_log_softmax));
  m.impl("_log_softmax.out", TORCH_FN(_log_softmax_out));
  m.impl("_softmax_backward_data", TORCH_FN(_softmax_backward));
  m.impl("_softmax_backward_data.out", TORCH_FN(_softmax_backward_out));
  m.impl("_log_softmax_backward_data", TORCH_FN(_log_softmax_backward));
  m.impl("_log_softmax_backward_data.out", TORCH_FN(_log_softmax_backward_out));
  m.impl("_safe_softmax", TORCH_FN(_safe_softmax));
}

}  // namespace torch_opencl
