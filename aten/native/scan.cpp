// Scans along a dim (cumsum, cumprod, logcumsumexp, and cummax/cummin with their
// indices): ATen's meta functions (or CPU's checks) decide the result dtype and
// shape; kernels_cl/scan.cl scans each line in the accumulate type CPU uses
// (double for float32 where the device has fp64): a work-item per line, or, where the kernel forms
// (runtime/kernel_forms.h) want parallel scans, lanes of a work-group per line or chunk of one.
#include <ATen/ATen.h>
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/kernel_support/structured.h"
#include "runtime/embedded_sources.h"
#include "runtime/kernel_forms.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

using at::Tensor;

constexpr int kMaxDims = 12;  // MAX_DIMS in kernels_cl/scan.cl

struct ScanGeometry {
  cl_int ndim;
  cl_long sizes[kMaxDims];
  cl_long in_strides[kMaxDims];
  cl_long out_strides[kMaxDims];
  cl_long idx_strides[kMaxDims];
};

cl_program scan_program(int device, c10::ScalarType in, c10::ScalarType acc, c10::ScalarType out) {
  static std::mutex mutex;
  static std::map<std::tuple<int, c10::ScalarType, c10::ScalarType, c10::ScalarType>, cl_program> programs;
  std::lock_guard<std::mutex> lock(mutex);
  auto& program = programs[{device, in, acc, out}];
  if (!program) {
    const char* forms = tocl::kernel_forms(device).scan_parallel ? "#define SCAN_GPU_FORMS 1\n" : "";
    const std::string source = program_prelude({in, acc, out}) + forms + operand_defines("IN", in) +
                               operand_defines("OUT", out) + "#define ACC_T " + storage_type(acc) +
                               "\n#define ACC_IS_FLOAT " + (at::isFloatingType(acc) ? "1" : "0") + "\n" +
                               tocl::embedded_sources().at("scan.cl");
    program = tocl::get_program(device, source);
  }
  return program;
}

// As CPU's acc_type: double for float types (float where the device lacks fp64), int64 for integers.
c10::ScalarType scan_acc(c10::ScalarType out, int device) {
  if (at::isFloatingType(out)) return device_supports(c10::kDouble, device) ? c10::kDouble : c10::kFloat;
  return c10::kLong;
}

enum ScanOp { kSum = 0, kProd = 1, kLogSumExp = 2, kMax = 3, kMin = 4 };

const char* scan_name(int op) {
  switch (op) {
    case kSum: return "cumsum";
    case kProd: return "cumprod";
    case kLogSumExp: return "logcumsumexp";
    case kMax: return "cummax";
    default: return "cummin";
  }
}

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// The parallel form: lanes per line sized to it (short lines share a group), long lines split into
// chunks when too few groups would run (totals, carries, then the chunks' scans).
void scan_parallel(cl_program program, const Tensor& self, const Tensor& o, const Tensor& idx, int op,
                   int64_t lines, int64_t N, int64_t in_step, int64_t out_step, int64_t idx_step,
                   const ScanGeometry& g, c10::ScalarType acc) {
  const int device = device_index(self);
  const int stream = current_stream_of(self);
  const auto& forms = tocl::kernel_forms(device);
  const int64_t group = static_cast<int64_t>(forms.reduce_group);
  const int64_t fill = static_cast<int64_t>(forms.reduce_fill_groups);
  const int64_t lanes = std::min(group, pow2_at_least(N));
  const int64_t units_per_group = group / lanes;
  const int64_t groups = (lines + units_per_group - 1) / units_per_group;
  int64_t nchunks = 1;
  if (groups < fill && N >= 16 * lanes) nchunks = std::min((fill + groups - 1) / groups, N / (8 * lanes));
  // Whole tiles per chunk.
  const int64_t chunk = ((N + nchunks - 1) / nchunks + lanes - 1) / lanes * lanes;
  nchunks = (N + chunk - 1) / chunk;
  const int64_t units = lines * nchunks;
  const size_t global = static_cast<size_t>((units + units_per_group - 1) / units_per_group * group);
  const tocl::LocalArg sv{static_cast<size_t>(group) * c10::elementSize(acc)}, si{static_cast<size_t>(group) * sizeof(cl_long)};
  const Tensor& indices = idx.defined() ? idx : o;  // unread by the value scans
  Tensor cv = o, ci = o;                           // unread with one chunk
  if (nchunks > 1) {
    cv = at::empty({units}, self.options().dtype(acc));
    ci = at::empty({units}, self.options().dtype(at::kLong));
    cl_kernel totals = tocl::get_kernel(program, "scan_chunk_totals");
    tocl::set_args(totals, buffer_arg(self), buffer_arg(cv), buffer_arg(ci), static_cast<cl_int>(op),
                   static_cast<cl_long>(lines), static_cast<cl_long>(N), static_cast<cl_long>(in_step), g,
                   static_cast<cl_long>(chunk), static_cast<cl_long>(nchunks), static_cast<cl_int>(lanes), sv, si);
    tocl::enqueue_1d(device, stream, totals, global, group);
    cl_kernel carries = tocl::get_kernel(program, "scan_chunk_carries");
    tocl::set_args(carries, buffer_arg(cv), buffer_arg(ci), static_cast<cl_int>(op), static_cast<cl_long>(lines),
                   static_cast<cl_long>(nchunks));
    tocl::enqueue_1d(device, stream, carries, lines);
  }
  cl_kernel k = tocl::get_kernel(program, "scan_tiles");
  tocl::set_args(k, buffer_arg(self), buffer_arg(o), buffer_arg(indices), buffer_arg(cv), buffer_arg(ci),
                 static_cast<cl_int>(op), static_cast<cl_long>(lines), static_cast<cl_long>(N),
                 static_cast<cl_long>(in_step), static_cast<cl_long>(out_step), static_cast<cl_long>(idx_step), g,
                 static_cast<cl_long>(chunk), static_cast<cl_long>(nchunks), static_cast<cl_int>(lanes), sv, si);
  tocl::enqueue_1d(device, stream, k, global, group);
}

// Scans `self` along `dim` into `out` (and, for cummax/cummin, `indices`), all of self's shape.
void scan_into(const Tensor& self_in, int64_t dim, const Tensor& out, int op, const Tensor& indices = Tensor()) {
  const int device = device_index(self_in);
  const auto acc = scan_acc(out.scalar_type(), device);
  const char* name = scan_name(op);
  check_device_supports(self_in.scalar_type(), device, name);
  check_device_supports(out.scalar_type(), device, name);
  if (out.numel() == 0) return;
  Tensor self = self_in;
  if (self.dim() == 0) self = self.reshape({1});
  const Tensor o = out.dim() == 0 ? out.reshape({1}) : out;
  const Tensor idx = !indices.defined() ? Tensor() : indices.dim() == 0 ? indices.reshape({1}) : indices;
  dim = c10::maybe_wrap_dim(dim, self.dim());
  struct D {
    int64_t size, in_stride, out_stride, idx_stride;
  };
  std::vector<D> dims;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (d != dim && self.size(d) != 1)
      dims.push_back({self.size(d), self.stride(d), o.stride(d), idx.defined() ? idx.stride(d) : 0});
  std::stable_sort(dims.begin(), dims.end(), [](const D& a, const D& b) { return a.in_stride < b.in_stride; });
  TORCH_CHECK(static_cast<int>(dims.size()) <= kMaxDims, name, ": tensors with more than ", kMaxDims + 1,
              " non-trivial dims are not supported on opencl");
  ScanGeometry g{};
  g.ndim = static_cast<cl_int>(dims.size());
  int64_t lines = 1;
  for (size_t k = 0; k < dims.size(); ++k) {
    g.sizes[k] = dims[k].size;
    g.in_strides[k] = dims[k].in_stride;
    g.out_strides[k] = dims[k].out_stride;
    g.idx_strides[k] = dims[k].idx_stride;
    lines *= dims[k].size;
  }
  cl_program program = scan_program(device, self.scalar_type(), acc, out.scalar_type());
  const int64_t N = self.size(dim);
  // A work-item per line reads adjacent memory across items only when the scanned dim is strided and
  // there are lines enough to fill the device; otherwise the parallel form, where the forms want it.
  const auto& forms = tocl::kernel_forms(device);
  if (forms.scan_parallel &&
      (self.stride(dim) == 1 || lines < 32 * static_cast<int64_t>(forms.reduce_fill_groups))) {
    scan_parallel(program, self, o, idx, op, lines, N, self.stride(dim), o.stride(dim),
                  idx.defined() ? idx.stride(dim) : 0, g, acc);
    return;
  }
  if (op == kMax || op == kMin) {
    cl_kernel k = tocl::get_kernel(program, "scan_extreme_lines");
    tocl::set_args(k, buffer_arg(self), buffer_arg(o), buffer_arg(idx), static_cast<cl_int>(op == kMax),
                   static_cast<cl_long>(lines), static_cast<cl_long>(self.size(dim)),
                   static_cast<cl_long>(self.stride(dim)), static_cast<cl_long>(o.stride(dim)),
                   static_cast<cl_long>(idx.stride(dim)), g);
    tocl::enqueue_1d(device, current_stream_of(self), k, lines);
    return;
  }
  if (forms.line_lanes > 1 && self.stride(dim) == 1 && o.stride(dim) == 1) {
    // Blocks of line_lanes contiguous lines through tiles in local memory (scan.cl's scan_lines_tiles).
    cl_kernel k = tocl::get_kernel(program, "scan_lines_tiles");
    tocl::set_args(k, buffer_arg(self), buffer_arg(o), static_cast<cl_int>(op), static_cast<cl_long>(lines),
                   static_cast<cl_long>(N), g);
    tocl::enqueue_runs(device, current_stream_of(self), k,
                       static_cast<size_t>((lines + forms.line_lanes - 1) / forms.line_lanes));
    return;
  }
  cl_kernel k = tocl::get_kernel(program, "scan_lines");
  tocl::set_args(k, buffer_arg(self), buffer_arg(o), static_cast<cl_int>(op), static_cast<cl_long>(lines),
                 static_cast<cl_long>(self.size(dim)), static_cast<cl_long>(self.stride(dim)),
                 static_cast<cl_long>(o.stride(dim)), g);
  tocl::enqueue_1d(device, current_stream_of(self), k, lines);
}

// _cummax_helper / _cummin_helper: cummax's composite form has checked and sized values
// (self's dtype) and indices (int64) and handles 0-d and empty inputs.
void cummax_helper(const Tensor& self, Tensor& values, Tensor& indices, int64_t dim) {
  scan_into(self, dim, values, kMax, indices);
}
void cummin_helper(const Tensor& self, Tensor& values, Tensor& indices, int64_t dim) {
  scan_into(self, dim, values, kMin, indices);
}

// _logcumsumexp: floating types only, as on CPU; the result takes self's shape.
Tensor& logcumsumexp_out(const Tensor& self, int64_t dim, Tensor& out) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "logcumsumexp: expected a floating point input, got ",
              self.scalar_type());
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "logcumsumexp: expected out tensor to have dtype ",
              self.scalar_type(), ", but got ", out.scalar_type(), " instead");
  if (out.sizes() != self.sizes()) at::native::resize_output(out, self.sizes());
  c10::maybe_wrap_dim(dim, self.dim());  // the error CPU gives for a bad dim, also for empty inputs
  scan_into(self, dim, out, kLogSumExp);
  return out;
}
Tensor logcumsumexp(const Tensor& self, int64_t dim) {
  Tensor out = at::empty_like(self, at::MemoryFormat::Contiguous);
  return logcumsumexp_out(self, dim, out);
}

// In-place scans read and write the same memory line by line in order, which is safe.
#define SCAN_OP(NAME, META, OPCODE)                                                    \
  Tensor NAME(const Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype) { \
    StructuredFunctional<at::meta::META> op;                                           \
    op.meta(self, dim, dtype);                                                         \
    scan_into(self, dim, op.maybe_get_output(0), OPCODE);                              \
    return op.take();                                                                  \
  }                                                                                    \
  Tensor& NAME##_(Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype) {   \
    StructuredOut<at::meta::META> op(self, /*in_place=*/true);                         \
    op.meta(self, dim, dtype);                                                         \
    scan_into(self, dim, op.maybe_get_output(0), OPCODE);                              \
    op.finish();                                                                       \
    return self;                                                                       \
  }                                                                                    \
  Tensor& NAME##_out(const Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype, Tensor& out) { \
    StructuredOut<at::meta::META> op(out);                                             \
    op.meta(self, dim, dtype);                                                         \
    scan_into(self, dim, op.maybe_get_output(0), OPCODE);                              \
    op.finish();                                                                       \
    return out;                                                                        \
  }
SCAN_OP(cumsum, structured_cumsum, 0)
SCAN_OP(cumprod, structured_cumprod, 1)

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("cumsum", TORCH_FN(cumsum));
  m.impl("cumsum_", TORCH_FN(cumsum_));
  m.impl("cumsum.out", TORCH_FN(cumsum_out));
  m.impl("cumprod", TORCH_FN(cumprod));
  m.impl("cumprod_", TORCH_FN(cumprod_));
  m.impl("cumprod.out", TORCH_FN(cumprod_out));
  m.impl("_cummax_helper", TORCH_FN(cummax_helper));
  m.impl("_cummin_helper", TORCH_FN(cummin_helper));
  m.impl("_logcumsumexp", TORCH_FN(logcumsumexp));
  m.impl("_logcumsumexp.out", TORCH_FN(logcumsumexp_out));
}

}  // namespace torch_opencl
