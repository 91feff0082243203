// flip, roll and repeat (what tile calls): one gather kernel (kernels_cl/shape_ops.cl) that maps
// each output coordinate to its source coordinate, over the input's own strides. cat (what
// torch.stack calls): one kernel copies up to eight inputs into their slices. Elements are moved as
// raw bits, so one program per element size serves every dtype.
// unfold_backward composes native ops over unfold's view; channel_shuffle is one strided copy.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/MetaFunctions.h>
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
#include "aten/kernel_support/structured.h"
#include "runtime/kernel_forms.h"
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

// One more than the largest element index `t` reaches from its offset.
int64_t index_extent(const Tensor& t) {
  int64_t extent = 1;
  for (int64_t d = 0; d < t.dim(); ++d) extent += (t.size(d) - 1) * std::abs(t.stride(d));
  return extent;
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
  const bool narrow = std::max({index_extent(in), index_extent(out), out.numel()}) < (int64_t{1} << 31) - 1;
  const cl_program program = dtype_program(device, "shape_ops.cl", bits_type(in), narrow ? at::kInt : at::kLong);
  const auto& forms = tocl::kernel_forms(device);
  if (forms.copy_lines && g.ndim > 0) {
    const int64_t run = static_cast<int64_t>(forms.copy_run);
    const int64_t chunks = (g.out_sizes[0] + run - 1) / run;
    const int64_t runs = out.numel() / g.out_sizes[0] * chunks;
    cl_kernel k = tocl::get_kernel(program, "gather_lines");
    tocl::set_args(k, buffer_arg(out), buffer_arg(in), static_cast<cl_long>(runs), static_cast<cl_long>(chunks),
                   static_cast<cl_long>(run), g);
    tocl::enqueue_runs(device, current_stream_of(in), k, runs);
    return;
  }
  cl_kernel k = tocl::get_kernel(program, "gather_nd");
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
  // CPU and CUDA return an empty tensor's copy before looking at dims (roll(empty, 1, 5) is no error).
  if (self.numel() == 0) return self.clone(at::MemoryFormat::Preserve);
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

// ---- cat (structured: ATen's meta checks shapes, promotes dtypes and picks the memory format) ----

constexpr int kCatParts = 8, kCatDims = 4;  // CAT_PARTS, CAT_DIMS in kernels_cl/shape_ops.cl

struct CatGeometry {
  cl_long sizes[kCatDims];
  cl_long out_strides[kCatDims];
  cl_long in_strides[kCatParts][kCatDims];
  cl_long starts[kCatParts + 1];
  cl_int cat_dim;
  cl_int parts;
};

// An input with elements to copy and where its slice starts along the cat dim.
struct CatPart {
  const Tensor* tensor;
  int64_t start;
};

// Whether cat_parts can copy `t` into `out` as raw bits: same dtype, no lazy conj/neg bit.
bool copies_as_bits(const Tensor& t, const Tensor& out) {
  const auto size = out.element_size();
  return t.scalar_type() == out.scalar_type() && !t.is_conj() && !t.is_neg() &&
         (size == 1 || size == 2 || size == 4 || size == 8);
}

// Copies `parts` (each copies_as_bits) into `out` with cat_parts, kCatParts per launch. Returns
// false, having done nothing, where their dims do not merge into kCatDims.
bool cat_launches(const std::vector<CatPart>& parts, int64_t dim, const Tensor& out) {
  struct Dim {
    int64_t size, out_stride;
    std::vector<int64_t> in_strides;  // one per part
    bool cat;
  };
  std::vector<Dim> dims;  // outermost first; size-1 dims dropped, neighbours that stride alike merged
  for (int64_t d = 0; d < out.dim(); ++d) {
    const bool cat = d == dim;
    if (!cat && out.size(d) == 1) continue;
    Dim cur{out.size(d), out.stride(d), {}, cat};
    for (const auto& p : parts) cur.in_strides.push_back(p.tensor->stride(d));
    if (!dims.empty() && !cat && !dims.back().cat) {
      auto& outer = dims.back();
      bool merges = outer.out_stride == cur.out_stride * cur.size;
      for (size_t j = 0; merges && j < parts.size(); ++j) merges = outer.in_strides[j] == cur.in_strides[j] * cur.size;
      if (merges) {
        outer = {outer.size * cur.size, cur.out_stride, cur.in_strides, false};
        continue;
      }
    }
    dims.push_back(std::move(cur));
  }
  if (dims.size() > static_cast<size_t>(kCatDims)) return false;

  // 32-bit indexing where every element index of every operand fits.
  int64_t extent = index_extent(out);
  for (const auto& p : parts) extent = std::max(extent, index_extent(*p.tensor));
  const bool narrow = extent < (int64_t{1} << 31) - 1;
  const int device = device_index(out);
  const auto& forms = tocl::kernel_forms(device);
  cl_kernel k = tocl::get_kernel(dtype_program(device, "shape_ops.cl", bits_type(out), narrow ? at::kInt : at::kLong),
                                 forms.copy_lines ? "cat_lines" : "cat_parts");
  const int ndim = static_cast<int>(dims.size());
  for (size_t first = 0; first < parts.size(); first += kCatParts) {
    const size_t count = std::min<size_t>(kCatParts, parts.size() - first);
    CatGeometry g{};
    const auto& last = parts[first + count - 1];
    for (size_t j = 0; j < count; ++j) g.starts[j] = parts[first + j].start;
    g.starts[count] = last.start + last.tensor->size(dim);
    g.parts = static_cast<cl_int>(count);
    int64_t total = 1;
    for (int i = 0; i < kCatDims; ++i) {  // innermost first; dims past ndim have size 1
      g.sizes[i] = 1;
      if (i >= ndim) continue;
      const auto& d = dims[ndim - 1 - i];
      g.sizes[i] = d.cat ? g.starts[count] - g.starts[0] : d.size;
      g.out_strides[i] = d.out_stride;
      for (size_t j = 0; j < count; ++j) g.in_strides[j][i] = d.in_strides[first + j];
      if (d.cat) g.cat_dim = i;
      total *= g.sizes[i];
    }
    tocl::ArgSetter args(k);
    args.set(buffer_arg(out));
    for (size_t j = 0; j < kCatParts; ++j) args.set(buffer_arg(*parts[first + std::min(j, count - 1)].tensor));
    if (forms.copy_lines && total > 0) {  // runs of dim 0 (innermost) instead of elements
      const int64_t run = static_cast<int64_t>(forms.copy_run);
      const int64_t chunks = (g.sizes[0] + run - 1) / run;
      const int64_t runs = total / g.sizes[0] * chunks;
      args.set(static_cast<cl_long>(runs)).set(static_cast<cl_long>(chunks)).set(static_cast<cl_long>(run)).set(g);
      tocl::enqueue_runs(device, current_stream_of(out), k, static_cast<size_t>(runs));
      continue;
    }
    args.set(static_cast<cl_long>(total)).set(g);
    tocl::enqueue_1d(device, current_stream_of(out), k, static_cast<size_t>(total));
  }
  return true;
}

void check_cat_devices(const at::ITensorListRef& tensors) {
  const Tensor* first = nullptr;
  for (const Tensor& t : tensors) {
    if (!first) first = &t;
    check_same_device({*first, t});
  }
}

// Inputs of the output's dtype go through cat_parts together; the others (and all, where the dims
// do not merge) through the native strided copy, which converts dtypes.
void cat_into(const at::ITensorListRef& tensors, int64_t dim, const Tensor& out) {
  const auto inputs = tensors.materialize();
  for (const Tensor& t : inputs) check_same_device({out, t});
  at::assert_no_internal_overlap(out);
  for (const Tensor& t : inputs) at::assert_no_overlap(out, t);
  if (out.numel() == 0) return;
  std::vector<CatPart> as_bits, converted;
  int64_t offset = 0;
  for (const Tensor& t : inputs) {
    if (t.numel() == 0 && t.dim() == 1) continue;  // legacy empty inputs of any shape are skipped, as CPU
    const int64_t size = t.size(dim);
    if (size > 0) (copies_as_bits(t, out) ? as_bits : converted).push_back({&t, offset});
    offset += size;
  }
  if (as_bits.size() < 2 || !cat_launches(as_bits, dim, out))
    converted.insert(converted.end(), as_bits.begin(), as_bits.end());
  for (const auto& p : converted) out.narrow(dim, p.start, p.tensor->size(dim)).copy_(*p.tensor);
}

Tensor cat(const at::ITensorListRef& tensors, int64_t dim) {
  check_cat_devices(tensors);
  StructuredFunctional<at::meta::structured_cat> op;
  const auto pre = op.meta(tensors, dim);
  cat_into(tensors, pre.dim, op.maybe_get_output(0));
  return op.take();
}

Tensor& cat_out(const at::ITensorListRef& tensors, int64_t dim, Tensor& out) {
  check_cat_devices(tensors);
  StructuredOut<at::meta::structured_cat> op(out);
  const auto pre = op.meta(tensors, dim);
  cat_into(tensors, pre.dim, op.maybe_get_output(0));
  op.finish();
  return out;
}

// ---- channel_shuffle: (N, g, C / g, ...) transposed to (N, C / g, g, ...), CPU's checks and layout ----

Tensor channel_shuffle(const Tensor& self, int64_t groups) {
  TORCH_CHECK(self.dim() > 2, "channel_shuffle expects input with > 2 dims, but got input with sizes ", self.sizes());
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive.", " Value of groups:", groups);
  const int64_t c = self.size(1);
  TORCH_CHECK(c % groups == 0, "Number of channels must be divisible by groups. Got ", c, " channels and ", groups,
              " groups.");
  auto out = at::empty(self.sizes(), self.options().memory_format(self.suggest_memory_format()));
  if (out.numel() == 0) return out;
  // Splitting dim 1 is a view of any strides, so both sides stay views and one copy kernel moves the data.
  auto split = [&](int64_t first, int64_t second) {
    auto sizes = self.sizes().vec();
    sizes[1] = second;
    sizes.insert(sizes.begin() + 1, first);
    return sizes;
  };
  out.view(split(c / groups, groups)).copy_(self.view(split(groups, c / groups)).transpose(1, 2));
  return out;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("channel_shuffle", TORCH_FN(channel_shuffle));
  m.impl("flip", TORCH_FN(flip));
  m.impl("unfold_backward", TORCH_FN(unfold_backward));
  m.impl("roll", TORCH_FN(roll_gather));
  m.impl("repeat", TORCH_FN(repeat));
  m.impl("cat", TORCH_FN(cat));
  m.impl("cat.out", TORCH_FN(cat_out));
}

}  // namespace torch_opencl
