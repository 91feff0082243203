// Operators whose result size depends on the data: nonzero (what torch.where(cond), argwhere and
// boolean-mask indexing call; nonzero_static and count_nonzero too), masked_select (what printing a tensor calls), and masked_scatter_
// (masked_select's backward). Each counts per chunk, scans the counts and reads the total back
// (they synchronise, as on CUDA), then writes in element order. Kernels in kernels_cl/nonzero.cl.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/native/nonzero.h"
#include "runtime/memcpy.h"

namespace torch_opencl {
namespace {

using at::Tensor;

constexpr int kNonzeroMaxDims = 25;  // NONZERO_MAX_DIMS in kernels_cl/nonzero.cl

struct Shape {
  cl_long ndim;
  cl_long sizes[kNonzeroMaxDims];
};

cl_long L(int64_t v) { return static_cast<cl_long>(v); }

void warn_if_byte_mask(const Tensor& mask, const char* op) {
  if (mask.scalar_type() == at::kByte)
    TORCH_WARN(op, " received a mask with dtype torch.uint8, this behavior is now deprecated,",
               "please use a mask with dtype torch.bool instead.");
}

// ---- nonzero ----

Tensor& nonzero_out(const Tensor& self, Tensor& out) {
  check_same_device({self, out});
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(out.scalar_type() == at::kLong, "nonzero: Expected out tensor to have scalar type Long but got scalar type",
              out.scalar_type());
  TORCH_CHECK(self.dim() <= kNonzeroMaxDims, "nonzero is not supported for tensors with more than ", kNonzeroMaxDims,
              " dimensions");
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  const int64_t ndim = self.dim();
  if (self.numel() == 0) {
    at::native::resize_output(out, {0, ndim});
    return out;
  }
  const Tensor x = self.contiguous();
  const auto [offsets, total] = count_nonzero_chunks(x);
  at::native::resize_output(out, {total, ndim});
  if (total == 0 || ndim == 0) return out;
  Tensor o = out.is_contiguous() ? out : at::empty({total, ndim}, out.options());
  Shape shape{};
  shape.ndim = ndim;
  for (int64_t d = 0; d < ndim; ++d) shape.sizes[d] = x.size(d);
  cl_kernel k = dtype_kernel(x, "nonzero.cl", "nonzero_coords");
  tocl::set_args(k, buffer_arg(o), buffer_arg(x), buffer_arg(offsets), L(x.numel()), L(kCompactionChunk), shape);
  tocl::enqueue_1d(device_index(x), current_stream_of(x), k, compaction_chunks(x.numel()));
  if (!o.is_same(out)) out.copy_(o);
  return out;
}

// CPU and CUDA return the coordinates column by column (strides (1, N)), so nonzero().t() is
// contiguous: sparse indices built from it (to_sparse) are then contiguous as there, which CPU's
// sparse kernels that the fallback runs rely on (a coalesced COO tensor with strided indices
// converts to a wrong CSR tensor on CPU).
Tensor nonzero(const Tensor& self) {
  auto rows = at::empty({0}, self.options().dtype(at::kLong));
  nonzero_out(self, rows);
  auto columns = at::empty({rows.size(1), rows.size(0)}, rows.options()).t();
  if (rows.numel() > 0) columns.copy_(rows);
  return columns;
}

// The first `size` rows of nonzero(self), padded with fill_value.
Tensor& nonzero_static_out(const Tensor& self, int64_t size, int64_t fill_value, Tensor& out) {
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer");
  check_same_device({self, out});
  TORCH_CHECK(out.scalar_type() == at::kLong, "nonzero_static: Expected out tensor to have scalar type Long but got ",
              "scalar type", out.scalar_type());
  const auto all = at::nonzero(self);
  at::native::resize_output(out, {size, self.dim()});
  if (out.numel() == 0) return out;
  const int64_t kept = std::min(size, all.size(0));
  if (kept > 0) out.narrow(0, 0, kept).copy_(all.narrow(0, 0, kept));
  if (kept < size) out.narrow(0, kept, size - kept).fill_(fill_value);
  return out;
}

Tensor nonzero_static(const Tensor& self, int64_t size, int64_t fill_value) {
  auto out = at::empty({0}, self.options().dtype(at::kLong));
  return nonzero_static_out(self, size, fill_value, out);
}

// As CPU: the sum of (self != 0) over dims, int64.
Tensor count_nonzero(const Tensor& self, at::IntArrayRef dims) { return (self != 0).sum(dims); }

// ---- masked_select ----

Tensor& masked_select_out(const Tensor& self, const Tensor& mask, Tensor& out) {
  check_same_device({self, mask, out});
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(mask.scalar_type() == at::kByte || mask.scalar_type() == at::kBool,
              "masked_select: expected BoolTensor or ByteTensor for mask");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "masked_select(): self and result must have the same scalar type");
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, mask);
  warn_if_byte_mask(mask, "masked_select");
  auto [m, s] = at::expand_outplace(mask, self);
  if (s->numel() == 0) {
    at::native::resize_output(out, {0});
    return out;
  }
  const Tensor flags = m->contiguous(), x = s->contiguous();
  const auto [offsets, total] = count_nonzero_chunks(flags);
  at::native::resize_output(out, {total});
  if (total == 0) return out;
  Tensor o = out.is_contiguous() ? out : at::empty({total}, out.options());
  cl_kernel k = dtype_kernel(x, "nonzero.cl", "masked_select");
  tocl::set_args(k, buffer_arg(o), buffer_arg(x), buffer_arg(flags), buffer_arg(offsets), L(x.numel()), L(kCompactionChunk));
  tocl::enqueue_1d(device_index(x), current_stream_of(x), k, compaction_chunks(x.numel()));
  if (!o.is_same(out)) out.copy_(o);
  return out;
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  auto out = at::empty({0}, self.options());
  return masked_select_out(self, mask, out);
}

// ---- masked_scatter_ ----

Tensor& masked_scatter_(Tensor& self, const Tensor& mask, const Tensor& source) {
  check_same_device({self, mask, source});
  const c10::DeviceGuard guard(self.device());
  at::assert_no_internal_overlap(self);
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter_: expected self and source to have same dtypes but got", self.scalar_type(), " and ",
              source.scalar_type());
  TORCH_CHECK(mask.scalar_type() == at::kBool || mask.scalar_type() == at::kByte,
              "masked_scatter_ only supports boolean masks, but got mask with dtype ", mask.scalar_type());
  warn_if_byte_mask(mask, "masked_scatter_");
  auto m = at::expand_inplace(self, mask, "masked_scatter_");
  if (self.numel() == 0) return self;
  const Tensor flags = m->contiguous();
  const auto [offsets, total] = count_nonzero_chunks(flags);
  TORCH_CHECK(total <= source.numel(), "Number of elements of source < number of ones in mask");
  if (total == 0) return self;
  const Tensor src = source.contiguous();
  Tensor target = self.is_contiguous() ? self : self.contiguous();
  cl_kernel k = dtype_kernel(target, "nonzero.cl", "masked_scatter");
  tocl::set_args(k, buffer_arg(target), buffer_arg(src), buffer_arg(flags), buffer_arg(offsets), L(target.numel()),
                 L(kCompactionChunk));
  tocl::enqueue_1d(device_index(target), current_stream_of(target), k, compaction_chunks(target.numel()));
  if (!target.is_same(self)) self.copy_(target);
  return self;
}

}  // namespace

int64_t compaction_chunks(int64_t n) { return (n + kCompactionChunk - 1) / kCompactionChunk; }

int64_t scan_chunk_counts(const Tensor& offsets, const Tensor& like) {
  const int device = device_index(offsets);
  const int stream = current_stream_of(offsets);
  const int64_t chunks = offsets.numel() - 1;
  cl_kernel scan = dtype_kernel(like, "nonzero.cl", "exclusive_scan");
  tocl::set_args(scan, buffer_arg(offsets), L(chunks));
  tocl::enqueue_1d(device, stream, scan, row_group(device), row_group(device));
  int64_t total = 0;
  tocl::copy_device_to_host(device, stream, &total,
                            static_cast<const char*>(offsets.const_data_ptr()) + chunks * sizeof(int64_t),
                            sizeof(total));
  return total;
}

std::pair<Tensor, int64_t> count_nonzero_chunks(const Tensor& flags) {
  const int64_t n = flags.numel(), chunks = compaction_chunks(n);
  auto offsets = at::empty({chunks + 1}, flags.options().dtype(at::kLong));
  cl_kernel count = dtype_kernel(flags, "nonzero.cl", "count_chunks");
  tocl::set_args(count, buffer_arg(offsets), buffer_arg(flags), L(n), L(kCompactionChunk));
  tocl::enqueue_1d(device_index(flags), current_stream_of(flags), count, chunks);
  return {offsets, scan_chunk_counts(offsets, flags)};
}

TOCL_LIBRARY_IMPL(m) {
  m.impl("nonzero", TORCH_FN(nonzero));
  m.impl("nonzero.out", TORCH_FN(nonzero_out));
  m.impl("nonzero_static", TORCH_FN(nonzero_static));
  m.impl("nonzero_static.out", TORCH_FN(nonzero_static_out));
  m.impl("count_nonzero.dim_IntList", TORCH_FN(count_nonzero));
  m.impl("masked_select", TORCH_FN(masked_select));
  m.impl("masked_select.out", TORCH_FN(masked_select_out));
  m.impl("masked_scatter_", TORCH_FN(masked_scatter_));
}

}  // namespace torch_opencl
