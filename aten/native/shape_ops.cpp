// flip, roll and repeat (what tile calls): one gather kernel (kernels_cl/shape_ops.cl) that maps
// each output coordinate to its source coordinate, over the input's own strides. Elements are
// moved as raw bits, so one program per element size serves every dtype.
// unfold_backward composes native ops over unfold's view.
#include <ATen/ATen.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

using at::Tensor;

constexpr int kMaxDims = 16;  // MAX_DIMS in kernels_cl/shape_ops.cl

struct GatherGeometry {
  cl_int ndim;
  cl_long out_sizes[kMaxDims];
  cl_long in_sizes[kMaxDims];
  cl_long out_strides[kMaxDims];
  cl_long in_strides[kMaxDims];
  cl_long shifts[kMaxDims];
  cl_int flips[kMaxDims];
};

// One dim of the gather, outermost first as ATen lists them.
struct GatherDim {
  int64_t out_size, in_size, out_stride, in_stride, shift;
  bool flip;
  bool identity() const { return !flip && shift == 0 && out_size == in_size; }
};

// The integer type of the same width: the kernel copies bits.
c10::ScalarType bits_type(const Tensor& t) {
  switch (t.element_size()) {
    case 1: return at::kByte;
    case 2: return at::kShort;
    case 4: return at::kInt;
    case 8: return at::kLong;
    default: TORCH_CHECK(false, "dtype ", t.scalar_type(), " is not supported on opencl");
  }
}

// out[i] = in[source(i)] for the dims given (out and in of `dims.size()` dims, any strides).
void gather(const Tensor& out, const Tensor& in, std::vector<GatherDim> dims, const char* op) {
  check_device_supports(in.scalar_type(), device_index(in), op);
  if (out.numel() == 0) return;
  // Drop size-1 dims; merge neighbours that both copy unchanged, or both flip, over mergeable strides.
  std::vector<GatherDim> merged;
  for (const auto& d : dims) {
    if (d.out_size == 1 && d.in_size == 1) continue;
    if (!merged.empty()) {
      auto& outer = merged.back();
      const bool same_kind = (outer.identity() && d.identity()) ||
                             (outer.flip && d.flip && outer.shift == 0 && d.shift == 0 &&
                              outer.out_size == outer.in_size && d.out_size == d.in_size);
      if (same_kind && outer.in_stride == d.in_stride * d.in_size && outer.out_stride == d.out_stride * d.out_size) {
        outer = {outer.out_size * d.out_size, outer.in_size * d.in_size, d.out_stride, d.in_stride, 0, d.flip};
        continue;
      }
    }
    merged.push_back(d);
  }
  TORCH_CHECK(static_cast<int>(merged.size()) <= kMaxDims, op, ": tensors with more than ", kMaxDims,
              " dims that cannot be merged are not supported on opencl (got ", merged.size(), ")");
  GatherGeometry g{};
  g.ndim = static_cast<cl_int>(merged.size());
  for (int k = 0; k < g.ndim; ++k) {  // innermost first
    const auto& d = merged[merged.size() - 1 - k];
    g.out_sizes[k] = d.out_size;
    g.in_sizes[k] = d.in_size;
    g.out_strides[k] = d.out_stride;
    g.in_strides[k] = d.in_stride;
    g.shifts[k] = d.shift;
    g.flips[k] = d.flip ? 1 : 0;
  }
  const int device = device_index(in);
  int64_t in_extent = 1, out_extent = out.numel();
  for (const auto& d : merged) {
    in_extent += (d.in_size - 1) * d.in_stride;
    out_extent += (d.out_size - 1) * d.out_stride;
  }
  const bool narrow = std::max(in_extent, out_extent) < (int64_t{1} << 31) - 1;
  cl_kernel k = tocl::get_kernel(dtype_program(device, "shape_ops.cl", bits_type(in), narrow ? at::kInt : at::kLong),
                                 "gather_nd");
  tocl::set_args(k, buffer_arg(out), buffer_arg(in), static_cast<cl_long>(out.numel()), g);
  tocl::enqueue_1d(device, current_stream_of(in), k, out.numel());
}

Tensor flip(const Tensor& self, at::IntArrayRef dims) {
  const c10::DeviceGuard guard(self.device());
  const auto flipped = at::dim_list_to_bitset(dims, self.dim());  // CPU's errors for bad or repeated dims
  auto out = at::empty_like(self, at::MemoryFormat::Preserve);
  std::vector<GatherDim> g;
  for (int64_t d = 0; d < self.dim(); ++d)
    g.push_back({self.size(d), self.size(d), out.stride(d), self.stride(d), 0, static_cast<bool>(flipped[d]) && self.size(d) > 1});
  gather(out, self, g, "flip");
  return out;
}

Tensor roll_gather(const Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims) {
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty() && shifts.size() == 1) {  // as CPU: roll the flattened tensor
    const auto flat = self.contiguous().view(self.numel());
    return roll_gather(flat, shifts, {0}).view(self.sizes());
  }
  TORCH_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ", shifts.size(),
              ", dims:", dims.size());
  std::vector<int64_t> total(self.dim(), 0);
  for (size_t k = 0; k < dims.size(); ++k) {
    const int64_t d = at::maybe_wrap_dim(dims[k], self.dim());
    const int64_t size = self.size(d);
    if (size > 0) total[d] = ((total[d] - shifts[k]) % size + size) % size;  // source = (i - shift) mod size
  }
  auto out = at::empty(self.sizes(), self.options());
  std::vector<GatherDim> g;
  for (int64_t d = 0; d < self.dim(); ++d)
    g.push_back({self.size(d), self.size(d), out.stride(d), self.stride(d), total[d], false});
  gather(out, self, g, "roll");
  return out;
}

Tensor repeat(const Tensor& self, at::IntArrayRef repeats) {
  const c10::DeviceGuard guard(self.device());
  TORCH_CHECK(repeats.size() >= static_cast<size_t>(self.dim()),
              "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
  const int64_t pad = static_cast<int64_t>(repeats.size()) - self.dim();
  std::vector<int64_t> sizes(repeats.size());
  for (size_t d = 0; d < repeats.size(); ++d)
    sizes[d] = repeats[d] * (static_cast<int64_t>(d) < pad ? 1 : self.size(d - pad));
  auto out = at::empty(sizes, self.options());  // raises CPU's error for a negative repeat
  std::vector<GatherDim> g;
  for (size_t d = 0; d < repeats.size(); ++d) {
    const bool padded = static_cast<int64_t>(d) < pad;
    g.push_back({sizes[d], padded ? 1 : self.size(d - pad), out.stride(d), padded ? 0 : self.stride(d - pad), 0,
                 false});
  }
  gather(out, self, g, "repeat");
  return out;
}

// unfold's gradient: each input element gathers the gradients of the windows holding it.
Tensor unfold_backward(const Tensor& grad, at::IntArrayRef input_sizes, int64_t dim, int64_t size, int64_t step) {
  auto grad_input = at::zeros(input_sizes, grad.options());
  auto windows = grad_input.unfold(dim, size, step);  // a view of grad_input shaped like grad
  if (step >= size) {  // windows do not overlap
    windows.copy_(grad);
    return grad_input;
  }
  // Overlapping windows: one offset within the window at a time, whose elements are distinct.
  for (int64_t j = 0; j < size; ++j) windows.select(-1, j).add_(grad.select(-1, j));
  return grad_input;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("flip", TORCH_FN(flip));
  m.impl("unfold_backward", TORCH_FN(unfold_backward));
  m.impl("roll", TORCH_FN(roll_gather));
  m.impl("repeat", TORCH_FN(repeat));
}

}  // namespace torch_opencl
