// Segmented sums over a stably sorted index (see segment_sum.h and kernels_cl/segment_sum.cl).
#include "aten/native/segment_sum.h"

#include <ATen/ATen.h>
#include <c10/core/DeviceGuard.h>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/kernel_forms.h"

namespace torch_opencl {
namespace {

constexpr int64_t kChunk = 32;  // sorted positions per chunk: the serial part of each work-item
constexpr int64_t kColumnWidth = 64;  // the CPU form's columns per work-item: four AVX-512 vectors of floats

// Laid out as `Segments` in kernels_cl/segment_sum.cl.
struct Segments {
  cl_long N, C, inner, chunk;
  cl_long t_row, t_outer, t_inner;
  cl_long s_row, s_outer, s_inner;
  cl_long skip_row, accumulate, scale_by_freq;
  cl_long rows;
};

// Dims [from, to) of t as one run: their element count and the innermost stride; false when their
// strides do not chain (size-1 dims do not count).
bool one_run(const at::Tensor& t, int64_t from, int64_t to, int64_t& size, int64_t& stride) {
  size = 1;
  stride = 1;
  int64_t inner = -1;  // the last dim with size > 1 seen, walking outward
  for (int64_t d = to - 1; d >= from; --d) {
    if (t.size(d) == 1) continue;
    if (inner < 0) stride = t.stride(d);
    else if (t.stride(d) != t.stride(inner) * t.size(inner)) return false;
    size *= t.size(d);
    inner = d;
  }
  return true;
}

struct Columns {
  int64_t outer, inner, outer_stride, inner_stride;
};

bool columns_of(const at::Tensor& t, int64_t dim, Columns& c) {
  return one_run(t, 0, dim, c.outer, c.outer_stride) && one_run(t, dim + 1, t.dim(), c.inner, c.inner_stride);
}

}  // namespace

bool segment_sums_serve(const at::Tensor& target, const at::Tensor& source, int64_t dim) {
  const auto type = target.scalar_type();
  if (type == at::kBool || at::isComplexType(type) || source.scalar_type() != type) return false;
  Columns a, b;
  return columns_of(target, dim, a) && columns_of(source, dim, b);
}

void segment_sums_into(const at::Tensor& target, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                       bool accumulate, int64_t skip, bool scale_by_freq) {
  const c10::DeviceGuard guard(target.device());
  Columns t, s;
  TORCH_CHECK(columns_of(target, dim, t) && columns_of(source, dim, s),
              "segment sums: operands whose dims around ", dim, " do not form one strided run each");
  const int64_t N = index.numel();
  const int64_t C = t.outer * t.inner;
  if (N == 0 || C == 0) return;
  const int device = device_index(target);
  const int stream = current_stream_of(target);
  const Segments g{N, C, t.inner, kChunk, target.stride(dim), t.outer_stride, t.inner_stride, source.stride(dim),
                   s.outer_stride, s.inner_stride, skip, accumulate ? 1 : 0, scale_by_freq ? 1 : 0,
                   target.size(dim)};
  if (!tocl::kernel_forms(device).sorted_segment_sums && accumulate && !scale_by_freq) {
    // The CPU form: each work-item walks the index in order over its own columns (segment_column_walk).
    const at::Tensor keys = index.reshape({-1}).contiguous();
    const int64_t per_outer = (t.inner + kColumnWidth - 1) / kColumnWidth;
    cl_kernel walk = dtype_kernel(target, "segment_sum.cl", "segment_column_walk", keys.scalar_type());
    tocl::set_args(walk, buffer_arg(target), buffer_arg(source), buffer_arg(keys), static_cast<cl_long>(kColumnWidth), g);
    tocl::enqueue_runs(device, stream, walk, t.outer * per_outer);  // line_lanes items a run of columns
    return;
  }
  // Stable: the positions of one index keep their order, so each sum runs in the order of n.
  const auto [keys, perm] = at::sort(index.reshape({-1}), /*stable=*/true, 0, /*descending=*/false);
  const int64_t nchunks = (N + kChunk - 1) / kChunk;
  const at::Tensor partial =
      nchunks > 1 ? at::empty({2 * nchunks * C}, target.options().dtype(compute_dtype(target.scalar_type()))) : target;
  cl_kernel sums = dtype_kernel(target, "segment_sum.cl", "segment_chunk_sums", keys.scalar_type());
  tocl::set_args(sums, buffer_arg(target), buffer_arg(source), buffer_arg(keys), buffer_arg(perm), buffer_arg(partial),
                 static_cast<cl_long>(nchunks), g);
  tocl::enqueue_1d(device, stream, sums, nchunks * C);
  if (nchunks == 1) return;
  cl_kernel joins = dtype_kernel(target, "segment_sum.cl", "segment_chunk_joins", keys.scalar_type());
  tocl::set_args(joins, buffer_arg(target), buffer_arg(keys), buffer_arg(partial), static_cast<cl_long>(nchunks), g);
  tocl::enqueue_1d(device, stream, joins, nchunks * C);
}

}  // namespace torch_opencl
