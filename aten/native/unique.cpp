// unique (sorted, with inverse and counts), unique_consecutive, their dim forms, and repeat_interleave's
// Tensor-repeats form: results whose size depends on the data, each with one read back of that size (as on CUDA).
// unique sorts the flattened input (aten/native/sort.h, stable), then writes the runs of equal values in order
// (kernels_cl/unique.cl, with nonzero's chunked compaction: aten/native/nonzero.h); unique_consecutive writes the
// runs of the input as it is. The dim forms compare whole slices: they sort the slices by their elements, last
// element first (stable sorts of one column each), and compose the runs from native ops.
#include <ATen/ATen.h>
#include <ATen/WrapDimUtils.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/native/index_bounds.h"
#include "aten/native/nonzero.h"
#include "aten/native/sort.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

using at::Tensor;
using Result = std::tuple<Tensor, Tensor, Tensor>;

cl_long L(int64_t v) { return static_cast<cl_long>(v); }

// The runs of equal values of x (contiguous, 1-D, not empty): their values; where want_inverse, the run of each
// element (of perm[e] where perm is defined) in an int64 tensor of inverse_shape; where want_counts, each run's
// length.
Result write_runs(const Tensor& x, const Tensor& perm, bool want_inverse, bool want_counts,
                  at::IntArrayRef inverse_shape) {
  const int device = device_index(x);
  const int stream = current_stream_of(x);
  const int64_t n = x.numel(), chunks = compaction_chunks(n);
  const auto longs = x.options().dtype(at::kLong);
  Tensor offsets = at::empty({chunks + 1}, longs);
  cl_kernel count = dtype_kernel(x, "unique.cl", "count_run_starts");
  tocl::set_args(count, buffer_arg(offsets), buffer_arg(x), L(n), L(kCompactionChunk));
  tocl::enqueue_1d(device, stream, count, chunks);
  const int64_t runs = scan_chunk_counts(offsets, x);
  Tensor values = at::empty({runs}, x.options());
  Tensor inverse = want_inverse ? at::empty(inverse_shape, longs) : at::empty({0}, longs);
  Tensor starts = want_counts ? at::empty({runs + 1}, longs) : Tensor();
  const cl_int flags = (want_inverse ? 1 : 0) | (want_counts ? 2 : 0) | (perm.defined() ? 4 : 0);
  const tocl::BufferArg none{nullptr, 0};
  cl_kernel write = dtype_kernel(x, "unique.cl", "write_runs");
  tocl::set_args(write, buffer_arg(values), want_inverse ? buffer_arg(inverse) : none,
                 want_counts ? buffer_arg(starts) : none, buffer_arg(x), perm.defined() ? buffer_arg(perm) : none,
                 buffer_arg(offsets), L(n), L(kCompactionChunk), flags);
  tocl::enqueue_1d(device, stream, write, chunks);
  Tensor counts = at::empty({0}, longs);
  if (want_counts) {
    starts.narrow(0, runs, 1).fill_(n);
    counts = starts.narrow(0, 1, runs) - starts.narrow(0, 0, runs);
  }
  return {values, inverse, counts};
}

// CPU's result for an empty input: no values, an inverse of self's shape (where asked), no counts.
Result empty_result(const Tensor& self, bool return_inverse) {
  const auto longs = self.options().dtype(at::kLong);
  return {at::empty({0}, self.options()), return_inverse ? at::empty(self.sizes(), longs) : at::empty({0}, longs),
          at::empty({0}, longs)};
}

Result unique2(const Tensor& self, bool /*sorted: CPU always sorts*/, bool return_inverse, bool return_counts) {
  const c10::DeviceGuard guard(self.device());
  check_device_supports(self.scalar_type(), device_index(self), "unique");
  const int64_t n = self.numel();
  if (n == 0) return empty_result(self, return_inverse);
  const Tensor flat = self.reshape({-1}).contiguous();
  Tensor sorted = at::empty({n}, flat.options()), perm = at::empty({n}, flat.options().dtype(at::kLong));
  sort_rows(flat, 1, n, /*desc=*/false, sorted, perm);
  return write_runs(sorted, perm, return_inverse, return_counts, self.sizes());
}

std::tuple<Tensor, Tensor> unique(const Tensor& self, bool sorted, bool return_inverse) {
  auto [values, inverse, counts] = unique2(self, sorted, return_inverse, /*return_counts=*/false);
  return {values, inverse};
}

// ---- the dim forms: slices along dim compared whole ----

// The order of the rows of `rows` (contiguous, r x c, c > 0) by their elements, the first element deciding
// first: stable sorts by each column, from the last to the first.
Tensor lexicographic_order(const Tensor& rows) {
  const int64_t r = rows.size(0), c = rows.size(1);
  Tensor order = at::arange(r, rows.options().dtype(at::kLong));
  Tensor keys = at::empty({r}, rows.options()), positions = at::empty({r}, rows.options().dtype(at::kLong));
  for (int64_t col = c - 1; col >= 0; --col) {
    const Tensor column = rows.select(1, col).index_select(0, order).contiguous();
    sort_rows(column, 1, r, /*desc=*/false, keys, positions);
    order = order.index_select(0, positions);
  }
  return order;
}

// CPU's _unique_dim_cpu_template: the unique slices along dim (sorted, or the runs of equal neighbours where
// consecutive), each slice's run, and the runs' lengths (the last two always, whatever is asked).
Result unique_dim_impl(const Tensor& self, int64_t dim, bool consecutive) {
  const c10::DeviceGuard guard(self.device());
  check_device_supports(self.scalar_type(), device_index(self), "unique_dim");
  dim = at::maybe_wrap_dim(dim, self.dim());
  const auto longs = self.options().dtype(at::kLong);
  const auto sizes = self.sizes().vec();
  const auto num_zero_dims = std::count(sizes.begin(), sizes.end(), 0);
  if (self.size(dim) == 0) {
    TORCH_CHECK(num_zero_dims == 1, "Number of zero sized dimensions is more than one, so unique cannot be applied ");
    return {at::empty(sizes, self.options()), at::empty({0}, longs), at::empty({0}, longs)};
  }
  TORCH_CHECK(num_zero_dims == 0, "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
  const Tensor moved = self.moveaxis(dim, 0);
  auto out_sizes = moved.sizes().vec();
  const Tensor rows = moved.contiguous().view({moved.size(0), -1});
  const int64_t r = rows.size(0);
  Tensor order;
  Tensor sorted = rows;
  if (!consecutive) {
    order = lexicographic_order(rows);
    sorted = rows.index_select(0, order);
  }
  Tensor starts_run = at::empty({r}, self.options().dtype(at::kBool));
  starts_run.narrow(0, 0, 1).fill_(true);
  if (r > 1) {
    Tensor differs = starts_run.narrow(0, 1, r - 1);
    at::any_out(differs, sorted.narrow(0, 1, r - 1).ne(sorted.narrow(0, 0, r - 1)), 1);
  }
  const Tensor starts = at::nonzero(starts_run).view({-1});  // reads the count back
  const int64_t runs = starts.size(0);
  const Tensor run_of_sorted = starts_run.cumsum(0).sub_(1);
  const Tensor inverse = consecutive ? run_of_sorted : at::empty({r}, longs).index_copy_(0, order, run_of_sorted);
  const Tensor counts = at::diff(starts, 1, 0, std::nullopt, at::full({1}, r, longs));
  out_sizes[0] = runs;
  Tensor output = sorted.index_select(0, starts).view(out_sizes).moveaxis(0, dim);
  return {output, inverse, counts};
}

Result unique_dim(const Tensor& self, int64_t dim, bool /*sorted*/, bool /*return_inverse*/,
                  bool /*return_counts*/) {
  return unique_dim_impl(self, dim, /*consecutive=*/false);
}

Result unique_dim_consecutive(const Tensor& self, int64_t dim, bool /*return_inverse*/, bool /*return_counts*/) {
  return unique_dim_impl(self, dim, /*consecutive=*/true);
}

Result unique_consecutive(const Tensor& self, bool return_inverse, bool return_counts, std::optional<int64_t> dim) {
  if (dim.has_value() && !(*dim == 0 && self.dim() == 1))
    return unique_dim_impl(self, *dim, /*consecutive=*/true);
  const c10::DeviceGuard guard(self.device());
  check_device_supports(self.scalar_type(), device_index(self), "unique_consecutive");
  if (self.numel() == 0) return empty_result(self, return_inverse);
  return write_runs(self.reshape({-1}).contiguous(), Tensor(), return_inverse, return_counts, self.sizes());
}

// ---- repeat_interleave(repeats): i repeated repeats[i] times, in order ----

Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size) {
  TORCH_CHECK_NOT_IMPLEMENTED(repeats.scalar_type() == at::kLong || repeats.scalar_type() == at::kInt,
                              "\"repeat_interleave_cpu\" not implemented for '", repeats.scalar_type(), "'");
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  if (repeats.size(0) == 0) return at::empty_like(repeats, at::MemoryFormat::Contiguous);
  const c10::DeviceGuard guard(repeats.device());
  const int64_t n = repeats.size(0);
  const Tensor ends = repeats.cumsum(0, at::kLong);
  int64_t total = output_size.value_or(0);
  // CPU checks the repeats (and an output_size against their sum); where index checks are deferred, a given
  // output_size is taken as it is, as on CUDA, so that nothing waits.
  if (!output_size.has_value() || !index_checks_deferred(repeats)) {
    const auto read = at::stack({ends.narrow(0, n - 1, 1).squeeze(0), repeats.min().to(at::kLong)}).cpu();
    const int64_t sum = read[0].item<int64_t>(), min = read[1].item<int64_t>();
    if (output_size.has_value()) {
      TORCH_CHECK(total == sum, "allocated size does not match required size");
    } else {
      total = sum;
    }
    TORCH_CHECK(min >= 0, "repeats can not be negative");
  }
  Tensor result = at::empty({total}, repeats.options().memory_format(at::MemoryFormat::Contiguous));
  if (total == 0) return result;
  const int device = device_index(repeats);
  cl_kernel k = tocl::get_kernel(dtype_program(device, "unique.cl", at::kLong, repeats.scalar_type()),
                                 "repeat_positions");
  tocl::set_args(k, buffer_arg(result), buffer_arg(ends), L(total), L(n), L(kCompactionChunk));
  tocl::enqueue_1d(device, current_stream_of(repeats), k, compaction_chunks(total));
  return result;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("_unique", TORCH_FN(unique));
  m.impl("_unique2", TORCH_FN(unique2));
  m.impl("unique_dim", TORCH_FN(unique_dim));
  m.impl("unique_dim_consecutive", TORCH_FN(unique_dim_consecutive));
  m.impl("unique_consecutive", TORCH_FN(unique_consecutive));
  m.impl("repeat_interleave.Tensor", TORCH_FN(repeat_interleave));
}

}  // namespace torch_opencl
