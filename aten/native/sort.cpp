// sort (values and indices, stable or not: the kernels always give the stable order), and topk
// as a sort narrowed to its first k (or one pass per row for small k). Paths by shape: insertion
// sort per work-item for rows of <= 16; a merge sort per work-item when there are many rows; else, in the
// CPU form, merge sorts of chunks of the rows and merge passes over them; in the GPU form a bitonic network
// per row in local memory, multi-pass over global memory for long rows. The
// sorted dim is moved last and made contiguous; the rows are sorted by kernels_cl/sort.cl (one
// program per dtype) and the results copied back into the outputs' layout. argsort and the sort.values out= form reach these through ATen's composites.
#include <ATen/ATen.h>
#include <ATen/MetaFunctions.h>
#include <ATen/WrapDimUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <climits>
#include <utility>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/kernel_support/structured.h"
#include "aten/native/sort.h"
#include "runtime/device.h"
#include "runtime/kernel_forms.h"

namespace torch_opencl {
namespace {

using at::Tensor;

constexpr int64_t kSmallRow = 16;         // SMALL in kernels_cl/sort.cl
constexpr int64_t kMergeRowsPerUnit = 8;  // rows per compute unit from which each work-item sorts a row
constexpr int64_t kMaxLocalRow = 4096;    // the longest padded row sorted in one work-group
constexpr int64_t kMergeSpan = 256;       // outputs per work-item of a merge pass (the CPU form of few long rows)
// Work-groups are always row_group(device) items (fewer where the kernel allows less), whatever the row
// length: PoCL compiles a kernel again for every new work-group size.

int64_t next_pow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

int64_t prev_pow2(int64_t v) {
  int64_t p = 1;
  while (p * 2 <= v) p <<= 1;
  return p;
}

size_t kernel_group_limit(cl_kernel k, int device) {
  size_t size = 0;
  TOCL_CHECK(clGetKernelWorkGroupInfo(k, tocl::device_info(device).id, CL_KERNEL_WORK_GROUP_SIZE, sizeof(size),
                                      &size, nullptr));
  return size;
}

// Sets the two trailing __local arrays (count keys of key_size bytes, count ints) from argument `index`.
void set_local_arrays(cl_kernel k, cl_uint index, int64_t count, size_t key_size) {
  TOCL_CHECK(clSetKernelArg(k, index, static_cast<size_t>(count) * key_size, nullptr));
  TOCL_CHECK(clSetKernelArg(k, index + 1, static_cast<size_t>(count) * sizeof(cl_int), nullptr));
}

}  // namespace

void sort_rows(const Tensor& in, int64_t rows, int64_t n, bool desc, const Tensor& values, const Tensor& indices) {
  const int device = device_index(in);
  const int stream = current_stream_of(in);
  TORCH_CHECK(n < INT_MAX / 2, "sort: a dimension of ", n, " elements is too long for opencl (at most ", INT_MAX / 2,
              ")");
  const cl_int N = static_cast<cl_int>(n), D = desc ? 1 : 0;
  if (n <= kSmallRow) {
    cl_kernel k = dtype_kernel(in, "sort.cl", "sort_small");
    tocl::set_args(k, buffer_arg(values), buffer_arg(indices), buffer_arg(in), static_cast<cl_long>(rows), N, D);
    tocl::enqueue_1d(device, stream, k, rows);
    return;
  }
  const auto key_type = compute_dtype(in.scalar_type());
  const size_t key_size = c10::elementSize(key_type);
  const auto& info = tocl::device_info(device);
  if (rows >= kMergeRowsPerUnit * static_cast<int64_t>(info.compute_units)) {
    // Enough rows to keep every compute unit busy: a merge sort per row does n log n work, where the
    // bitonic network does n log^2 n.
    auto ka = at::empty({rows * n}, in.options().dtype(key_type));
    auto kb = at::empty({rows * n}, in.options().dtype(key_type));
    auto xa = at::empty({rows * n}, in.options().dtype(at::kInt));
    auto xb = at::empty({rows * n}, in.options().dtype(at::kInt));
    cl_kernel k = dtype_kernel(in, "sort.cl", "sort_rows_merge");
    tocl::set_args(k, buffer_arg(values), buffer_arg(indices), buffer_arg(in), buffer_arg(ka), buffer_arg(xa),
                   buffer_arg(kb), buffer_arg(xb), static_cast<cl_long>(rows), N, D);
    tocl::enqueue_1d(device, stream, k, rows);
    return;
  }
  if (tocl::kernel_forms(device).sort_chunk_merges) {
    // Chunks of a multiple of kMergeSpan, enough of them for 8 work-items per compute unit; merge passes over
    // spans of kMergeSpan outputs (sort.cl's sort_chunks and merge_pass).
    const int64_t target = kMergeRowsPerUnit * static_cast<int64_t>(info.compute_units);
    const int64_t per_row = std::max<int64_t>(1, (target + rows - 1) / rows);
    const int64_t chunk = std::max<int64_t>(kMergeSpan, ((n + per_row - 1) / per_row + kMergeSpan - 1) / kMergeSpan *
                                                            kMergeSpan);
    Tensor ka = at::empty({rows * n}, in.options().dtype(key_type)), kb = at::empty_like(ka);
    Tensor xa = at::empty({rows * n}, in.options().dtype(at::kInt)), xb = at::empty_like(xa);
    cl_kernel sort_chunks = dtype_kernel(in, "sort.cl", "sort_chunks");
    tocl::set_args(sort_chunks, buffer_arg(in), buffer_arg(ka), buffer_arg(xa), buffer_arg(kb), buffer_arg(xb),
                   static_cast<cl_long>(rows), N, static_cast<cl_int>(chunk), D);
    tocl::enqueue_1d(device, stream, sort_chunks, rows * ((n + chunk - 1) / chunk));
    cl_kernel pass = dtype_kernel(in, "sort.cl", "merge_pass");
    for (int64_t width = chunk; width < n; width *= 2) {
      tocl::set_args(pass, buffer_arg(ka), buffer_arg(xa), buffer_arg(kb), buffer_arg(xb), static_cast<cl_long>(rows),
                     N, static_cast<cl_int>(width), static_cast<cl_int>(kMergeSpan), D);
      tocl::enqueue_1d(device, stream, pass, rows * ((n + kMergeSpan - 1) / kMergeSpan));
      std::swap(ka, kb);
      std::swap(xa, xb);
    }
    cl_kernel write = dtype_kernel(in, "sort.cl", "sort_write");
    tocl::set_args(write, buffer_arg(values), buffer_arg(indices), buffer_arg(ka), buffer_arg(xa),
                   static_cast<cl_long>(rows * n), N, N);
    tocl::enqueue_1d(device, stream, write, rows * n);
    return;
  }
  // The longest power-of-two block whose keys and positions fit in local memory (with room to spare).
  const int64_t local_cap =
      std::min<int64_t>(kMaxLocalRow, prev_pow2(static_cast<int64_t>(info.local_mem_size / 2) /
                                                static_cast<int64_t>(key_size + sizeof(cl_int))));
  TORCH_CHECK(local_cap >= 2, "sort: the device's local memory is too small");
  const int64_t P = next_pow2(n);
  if (P <= local_cap) {
    cl_kernel k = dtype_kernel(in, "sort.cl", "sort_rows_local");
    const size_t group = std::min<size_t>(row_group(device), kernel_group_limit(k, device));
    tocl::set_args(k, buffer_arg(values), buffer_arg(indices), buffer_arg(in), N, static_cast<cl_int>(P), D);
    set_local_arrays(k, 9, P, key_size);
    tocl::enqueue_1d(device, stream, k, static_cast<size_t>(rows) * group, group);
    return;
  }
  // Rows longer than a work-group can hold: bitonic network over padded scratch rows.
  const int64_t B = local_cap;
  auto keys = at::empty({rows * P}, in.options().dtype(key_type));
  auto idx = at::empty({rows * P}, in.options().dtype(at::kInt));
  const cl_int Pi = static_cast<cl_int>(P), Bi = static_cast<cl_int>(B);
  const size_t blocks = static_cast<size_t>(rows * (P / B));
  cl_kernel init = dtype_kernel(in, "sort.cl", "sort_blocks_local");
  cl_kernel merge = dtype_kernel(in, "sort.cl", "bitonic_merge_local");
  cl_kernel step = dtype_kernel(in, "sort.cl", "bitonic_global_step");
  const size_t group =
      std::min<size_t>({row_group(device), kernel_group_limit(init, device), kernel_group_limit(merge, device)});
  tocl::set_args(init, buffer_arg(keys), buffer_arg(idx), buffer_arg(in), N, Pi, Bi, D);
  set_local_arrays(init, 10, B, key_size);
  tocl::enqueue_1d(device, stream, init, blocks * group, group);
  const int64_t pairs = rows * P / 2;
  for (int64_t k = 2 * B; k <= P; k <<= 1) {
    for (int64_t j = k / 2; j >= B; j >>= 1) {
      tocl::set_args(step, buffer_arg(keys), buffer_arg(idx), static_cast<cl_long>(pairs), N, Pi,
                     static_cast<cl_int>(k), static_cast<cl_int>(j), D);
      tocl::enqueue_1d(device, stream, step, pairs);
    }
    tocl::set_args(merge, buffer_arg(keys), buffer_arg(idx), N, Pi, Bi, static_cast<cl_int>(k), D);
    set_local_arrays(merge, 9, B, key_size);
    tocl::enqueue_1d(device, stream, merge, blocks * group, group);
  }
  cl_kernel write = dtype_kernel(in, "sort.cl", "sort_write");
  tocl::set_args(write, buffer_arg(values), buffer_arg(indices), buffer_arg(keys), buffer_arg(idx),
                 static_cast<cl_long>(rows * n), N, Pi);
  tocl::enqueue_1d(device, stream, write, rows * n);
}

namespace {

// Checks shared by sort and topk; true when nothing is left to do: no elements (`empty`), or a 0-d
// self (its value, index 0).
bool trivial_rows(const char* op, const Tensor& self, bool empty, const Tensor& values, const Tensor& indices) {
  check_same_device({self, values, indices});
  check_device_supports(self.scalar_type(), device_index(self), op);
  if (empty) return true;
  if (self.dim() == 0) {
    values.copy_(self);
    indices.zero_();
    return true;
  }
  return false;
}

// Outputs with `dim` moved last, written directly when that is contiguous, else through a
// contiguous temporary that finish() copies back.
struct LastDimOutputs {
  LastDimOutputs(const Tensor& values, const Tensor& indices, int64_t dim)
      : v(values.movedim(dim, -1)),
        i(indices.movedim(dim, -1)),
        values(v.is_contiguous() ? v : at::empty(v.sizes(), v.options())),
        indices(i.is_contiguous() ? i : at::empty(i.sizes(), i.options())) {}
  void finish() {
    if (!v.is_contiguous()) v.copy_(values);
    if (!i.is_contiguous()) i.copy_(indices);
  }
  Tensor v, i, values, indices;
};

// values and indices (any layout, self's shape) = self sorted along dim.
void sort_into(const Tensor& self, int64_t dim, bool desc, const Tensor& values, const Tensor& indices) {
  const c10::DeviceGuard guard(self.device());
  if (trivial_rows("sort", self, self.numel() == 0, values, indices)) return;
  dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t n = self.size(dim);
  const auto in = self.movedim(dim, -1).contiguous();
  LastDimOutputs out(values, indices, dim);
  sort_rows(in, in.numel() / n, n, desc, out.values, out.indices);
  out.finish();
}

std::tuple<Tensor, Tensor> sort_stable(const Tensor& self, std::optional<bool> stable, int64_t dim, bool descending) {
  StructuredFunctional<at::meta::structured_sort_stable, 2> op;
  op.meta(self, stable, dim, descending);
  sort_into(self, dim, descending, op.maybe_get_output(0), op.maybe_get_output(1));
  return {op.take(0), op.take(1)};
}

std::tuple<Tensor&, Tensor&> sort_stable_out(const Tensor& self, std::optional<bool> stable, int64_t dim,
                                             bool descending, Tensor& values, Tensor& indices) {
  StructuredOut<at::meta::structured_sort_stable, 2> op(values, indices);
  op.meta(self, stable, dim, descending);
  sort_into(self, dim, descending, op.maybe_get_output(0), op.maybe_get_output(1));
  op.finish();
  return {values, indices};
}

// ---- topk: the first k of the sorted rows (largest: descending), in sorted order; for small k
// one pass over each row instead of a sort ----

void topk_into(const Tensor& self, int64_t k, int64_t dim, bool largest, const Tensor& values,
               const Tensor& indices) {
  const c10::DeviceGuard guard(self.device());
  if (trivial_rows("topk", self, values.numel() == 0, values, indices)) return;
  dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t n = self.size(dim);
  if (k <= kSmallRow && n < INT_MAX) {  // one pass over each row keeping the first k
    const auto in = self.movedim(dim, -1).contiguous();
    LastDimOutputs out(values, indices, dim);
    const int64_t rows = in.numel() / n;
    cl_kernel kernel = dtype_kernel(in, "sort.cl", "topk_small");
    tocl::set_args(kernel, buffer_arg(out.values), buffer_arg(out.indices), buffer_arg(in),
                   static_cast<cl_long>(rows), static_cast<cl_int>(n), static_cast<cl_int>(k),
                   static_cast<cl_int>(largest));
    tocl::enqueue_1d(device_index(in), current_stream_of(in), kernel, rows);
    out.finish();
    return;
  }
  auto sorted_values = at::empty(self.sizes(), self.options());
  auto sorted_indices = at::empty(self.sizes(), self.options().dtype(at::kLong));
  sort_into(self, dim, largest, sorted_values, sorted_indices);
  values.copy_(sorted_values.narrow(dim, 0, k));
  indices.copy_(sorted_indices.narrow(dim, 0, k));
}

std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  StructuredFunctional<at::meta::structured_topk, 2> op;
  op.meta(self, k, dim, largest, sorted);
  topk_into(self, k, dim, largest, op.maybe_get_output(0), op.maybe_get_output(1));
  return {op.take(0), op.take(1)};
}

std::tuple<Tensor&, Tensor&> topk_out(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted,
                                      Tensor& values, Tensor& indices) {
  StructuredOut<at::meta::structured_topk, 2> op(values, indices);
  op.meta(self, k, dim, largest, sorted);
  topk_into(self, k, dim, largest, op.maybe_get_output(0), op.maybe_get_output(1));
  op.finish();
  return {values, indices};
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("sort.stable", TORCH_FN(sort_stable));
  m.impl("sort.values_stable", TORCH_FN(sort_stable_out));
  m.impl("topk", TORCH_FN(topk));
  m.impl("topk.values", TORCH_FN(topk_out));
}

}  // namespace torch_opencl
