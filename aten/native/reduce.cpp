// The reduction engine: turns (input, reduced dims, output) into the geometry
// kernels_cl/reduce.cl takes as arguments, picks a launch (work-group per
// output, two passes for few outputs, work-item per output for contiguous runs,
// or work-items on adjacent outputs for strided reductions) and runs it. Devices whose kernel
// forms (runtime/kernel_forms.h) want coalesced reductions get reduce_rows / reduce_cols instead:
// lanes of consecutive work-items on consecutive elements, chunked to fill every compute unit.
// One program per (input, accumulate, output) dtype serves every reduction.
#include "aten/native/reduce.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/device.h"
#include "runtime/embedded_sources.h"
#include "runtime/kernel_forms.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

constexpr int kMaxDims = 12;       // MAX_DIMS in kernels_cl/reduce.cl

struct Geometry {
  cl_int out_ndim;
  cl_int red_ndim;
  cl_long out_sizes[kMaxDims];
  cl_long in_strides[kMaxDims];
  cl_long out_strides[kMaxDims];
  cl_long idx_strides[kMaxDims];
  cl_long red_sizes[kMaxDims];
  cl_long red_strides[kMaxDims];
};

const char* lowest_of(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat: case c10::kDouble: return "(-INFINITY)";
    case c10::kLong: return "LONG_MIN";
    case c10::kInt: return "INT_MIN";
    case c10::kShort: return "SHRT_MIN";
    case c10::kChar: return "CHAR_MIN";
    default: return "0";
  }
}

const char* highest_of(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat: case c10::kDouble: return "INFINITY";
    case c10::kLong: return "LONG_MAX";
    case c10::kInt: return "INT_MAX";
    case c10::kShort: return "SHRT_MAX";
    case c10::kChar: return "CHAR_MAX";
    case c10::kBool: return "1";
    default: return "UCHAR_MAX";
  }
}

cl_program reduce_program(int device, c10::ScalarType in, c10::ScalarType acc, c10::ScalarType out) {
  static std::mutex mutex;
  static std::map<std::tuple<int, c10::ScalarType, c10::ScalarType, c10::ScalarType>, cl_program> programs;
  std::lock_guard<std::mutex> lock(mutex);
  auto& program = programs[{device, in, acc, out}];
  if (!program) {
    const bool floating = acc == c10::kFloat || acc == c10::kDouble;
    const char* forms = tocl::kernel_forms(device).reduce_coalesced ? "#define REDUCE_GPU_FORMS 1\n" : "";
    // The CPU forms' runs load whole vectors where the input is already the accumulate type.
    const char* vector_runs = in != acc ? "" : acc == c10::kFloat ? "#define ACC_V16 float16\n"
                                             : acc == c10::kDouble ? "#define ACC_V16 double16\n" : "";
    const std::string source = program_prelude({in, acc, out}) + forms + vector_runs + operand_defines("IN", in) +
                               operand_defines("OUT", out) + "#define ACC_T " + storage_type(acc) +
                               "\n#define ACC_IS_FLOAT " + (floating ? "1" : "0") + "\n#define ACC_LOWEST " +
                               lowest_of(acc) + "\n#define ACC_HIGHEST " + highest_of(acc) + "\n" +
                               tocl::embedded_sources().at("reduce.cl");
    program = tocl::get_program(device, source);
  }
  return program;
}

// A scalar kernel argument of the accumulate type.
struct AccScalar {
  union {
    cl_float f;
    cl_double d;
    cl_long i64;
    cl_int i32;
    cl_short i16;
    cl_char i8;
    cl_uchar u8;
  } v;
  size_t size;
};

AccScalar acc_scalar(double value, c10::ScalarType acc) {
  AccScalar a{};
  switch (acc) {
    case c10::kFloat: a.v.f = static_cast<float>(value); a.size = 4; break;
    case c10::kDouble: a.v.d = value; a.size = 8; break;
    case c10::kLong: a.v.i64 = static_cast<int64_t>(value); a.size = 8; break;
    case c10::kInt: a.v.i32 = static_cast<int32_t>(value); a.size = 4; break;
    case c10::kShort: a.v.i16 = static_cast<int16_t>(value); a.size = 2; break;
    case c10::kChar: a.v.i8 = static_cast<int8_t>(value); a.size = 1; break;
    default: a.v.u8 = static_cast<uint8_t>(value); a.size = 1; break;
  }
  return a;
}

struct Plan {
  Geometry g{};
  int64_t M = 1;  // outputs
  int64_t R = 1;  // reduced elements per output
  bool inner_contiguous = false;
};

struct Dim {
  int64_t size, in_stride, out_stride, idx_stride;
};

// The geometry of reducing `self` over `mask` into outputs with these strides per input dim
// (kept dims only; reduced dims have none). `logical`: keep the reduced dims in row-major order
// (arg reductions report row-major indices); otherwise they are ordered by stride for locality.
bool make_plan(const at::Tensor& self, ReduceMask mask, const std::vector<int64_t>& out_strides,
               const std::vector<int64_t>& idx_strides, bool logical, Plan& plan) {
  std::vector<Dim> kept, red;
  const int64_t ndim = self.dim();
  for (int64_t d = 0; d < ndim; ++d) {
    const int64_t size = self.size(d);
    if (mask[d]) {
      plan.R *= size;
      if (size != 1) red.push_back({size, self.stride(d), 0, 0});
    } else {
      plan.M *= size;
      if (size != 1) kept.push_back({size, self.stride(d), out_strides[d], idx_strides[d]});
    }
  }
  // Innermost first.
  std::reverse(red.begin(), red.end());
  if (!logical)
    std::stable_sort(red.begin(), red.end(), [](const Dim& a, const Dim& b) { return a.in_stride < b.in_stride; });
  std::stable_sort(kept.rbegin(), kept.rend(), [](const Dim& a, const Dim& b) { return a.in_stride > b.in_stride; });
  // Merge neighbours that are one run in memory.
  auto merge = [](std::vector<Dim>& dims, bool outputs_too) {
    std::vector<Dim> merged;
    for (const auto& d : dims) {
      if (!merged.empty()) {
        auto& m = merged.back();
        if (d.in_stride == m.in_stride * m.size &&
            (!outputs_too || (d.out_stride == m.out_stride * m.size && d.idx_stride == m.idx_stride * m.size))) {
          m.size *= d.size;
          continue;
        }
      }
      merged.push_back(d);
    }
    dims = merged;
  };
  merge(red, false);
  merge(kept, true);
  if (plan.R == 0) red = {{0, 0, 0, 0}};
  if (red.empty()) red = {{1, 0, 0, 0}};
  if (static_cast<int>(red.size()) > kMaxDims || static_cast<int>(kept.size()) > kMaxDims) return false;
  auto& g = plan.g;
  g.out_ndim = static_cast<cl_int>(kept.size());
  g.red_ndim = static_cast<cl_int>(red.size());
  for (size_t k = 0; k < kept.size(); ++k) {
    g.out_sizes[k] = kept[k].size;
    g.in_strides[k] = kept[k].in_stride;
    g.out_strides[k] = kept[k].out_stride;
    g.idx_strides[k] = kept[k].idx_stride;
  }
  for (size_t k = 0; k < red.size(); ++k) {
    g.red_sizes[k] = red[k].size;
    g.red_strides[k] = red[k].in_stride;
  }
  plan.inner_contiguous = red[0].in_stride == 1 && plan.R > 1;
  return true;
}

// Output strides per input dim for a result of shape (keepdim or not) reduced over mask.
std::vector<int64_t> strides_per_input_dim(const at::Tensor& self, ReduceMask mask, bool keepdim,
                                           const at::Tensor& out) {
  std::vector<int64_t> strides(self.dim(), 0);
  if (!out.defined()) return strides;
  int64_t j = 0;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (mask[d]) {
      if (keepdim) ++j;
      continue;
    }
    strides[d] = out.stride(j++);
  }
  return strides;
}

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

enum class Kind { Group, Serial, Outer, Columns, Rows, Cols };

struct Launch {
  Kind kind = Kind::Group;
  int64_t local = 1;
  int64_t nchunks = 1;
  int64_t chunk = 0;
  int64_t lanes = 1;  // Rows: work-items per unit; Cols: adjacent outputs per group
};

// Strided (outer) reductions of fewer elements run as one pass (see choose_launch).
constexpr int64_t kOuterSplitMin = int64_t(1) << 21;
// Rows per chunk of reduce_columns.
constexpr int64_t kColumnChunk = 256;

// Splits R into nchunks chunks so that about `target` groups run when `groups` run per chunk,
// keeping at least `min_chunk` elements per chunk.
void split_reduced(Launch& l, int64_t R, int64_t groups, int64_t target, int64_t min_chunk) {
  l.nchunks = 1;
  if (groups < target && R >= 2 * min_chunk) {
    const int64_t want = (target + groups - 1) / groups;
    l.nchunks = std::max<int64_t>(1, std::min(want, R / min_chunk));
  }
  l.chunk = (R + l.nchunks - 1) / l.nchunks;
  l.nchunks = l.chunk == 0 ? 1 : (R + l.chunk - 1) / l.chunk;
}

// Arg reductions: a work-item per output for many outputs, else groups (with chunks for few outputs).
Launch choose_arg_launch(int device, const Plan& plan) {
  Launch l;
  const auto& info = tocl::device_info(device);
  const auto& forms = tocl::kernel_forms(device);
  const int64_t max_local = static_cast<int64_t>(forms.reduce_group);
  // A work-item per output walking a contiguous row reads memory `R` apart across a GPU's lanes: the
  // coalesced forms keep a group per output (consecutive items on consecutive elements) for such rows.
  const bool serial_ok = !(forms.reduce_coalesced && plan.inner_contiguous);
  if (serial_ok && plan.M >= std::max<int64_t>(512, 64 * static_cast<int64_t>(info.compute_units))) {
    l.kind = Kind::Serial;
    l.local = std::min<int64_t>(64, max_local);
    return l;
  }
  l.local = forms.reduce_coalesced ? static_cast<int64_t>(forms.reduce_group)
                                   : std::min(max_local, pow2_at_least(std::max<int64_t>(plan.R, 1)));
  const int64_t target_groups = forms.reduce_coalesced ? static_cast<int64_t>(forms.reduce_fill_groups)
                                                       : std::max<int64_t>(64, 16 * static_cast<int64_t>(info.compute_units));
  split_reduced(l, plan.R, plan.M, target_groups, 8 * l.local);
  return l;
}

// The coalesced (GPU) forms. Rows when the innermost reduced dim is the contiguous one (or no kept
// dim is more so): lanes per output sized to the row (short rows share a group), chunks when too few
// groups would run. Cols when a kept dim is more contiguous: 32 adjacent outputs per group by row
// lanes, chunks of R when too few column groups would run.
Launch choose_coalesced_launch(const tocl::KernelForms& forms, const Plan& plan) {
  Launch l;
  const int64_t group = static_cast<int64_t>(forms.reduce_group);
  const int64_t fill = static_cast<int64_t>(forms.reduce_fill_groups);
  l.local = group;
  const auto& g = plan.g;
  const bool cols = g.out_ndim > 0 && g.in_strides[0] < g.red_strides[0] && plan.R > 1;
  if (cols) {
    l.kind = Kind::Cols;
    l.lanes = std::min<int64_t>({32, group, pow2_at_least(plan.M)});
    const int64_t row_lanes = group / l.lanes;
    const int64_t col_groups = (plan.M + l.lanes - 1) / l.lanes;
    split_reduced(l, plan.R, col_groups, fill, 8 * row_lanes);
    return l;
  }
  l.kind = Kind::Rows;
  // About 8 elements per lane before the tree; a lane per element for rows of up to 8.
  l.lanes = std::min(group, pow2_at_least(std::max<int64_t>((plan.R + 7) / 8, 1)));
  const int64_t units_per_group = group / l.lanes;
  split_reduced(l, plan.R, (plan.M + units_per_group - 1) / units_per_group, fill, 8 * l.lanes);
  return l;
}

// Whether reduce_columns takes the reduction: a sum, mean, max or min of float or double input in its own
// type over one dim, into outputs that are adjacent in the input (a bias gradient: sum(0) of a matrix; amax(0)
// took 2.4 ms for 1024x1024 in reduce_outer, a work-item per output).
bool columns_of(const at::Tensor& self, const Plan& plan, ReduceOp op, c10::ScalarType acc) {
  return (op == ReduceOp::Sum || op == ReduceOp::Mean || op == ReduceOp::Max || op == ReduceOp::Min) &&
         self.scalar_type() == acc &&
         (acc == c10::kFloat || acc == c10::kDouble) && plan.g.red_ndim == 1 && plan.g.out_ndim == 1 &&
         plan.g.in_strides[0] == 1;
}

// Value reductions. Contiguous reduced runs: a work-item per output when there are enough outputs
// to fill the device, else a group per output (split over chunks for few outputs). Strided ones:
// reduce_outer, adjacent items on adjacent outputs, unless there are too few outputs to fill a
// vector of items (then groups again); sums of float or double columns whose outputs are adjacent in
// the input (`columns`, from columns_of), reduce_columns.
Launch choose_launch(int device, const Plan& plan, bool columns) {
  const auto& forms = tocl::kernel_forms(device);
  if (forms.reduce_coalesced) return choose_coalesced_launch(forms, plan);
  Launch l;
  const auto& info = tocl::device_info(device);
  const int64_t units = static_cast<int64_t>(info.compute_units);
  const int64_t max_local = static_cast<int64_t>(forms.reduce_group);
  const int64_t target_groups = std::max<int64_t>(64, 16 * units);
  if (plan.inner_contiguous && plan.M >= std::max<int64_t>(512, 64 * units)) {
    l.kind = Kind::Serial;
    l.local = std::min<int64_t>(64, max_local);
    return l;
  }
  if (!plan.inner_contiguous && plan.M >= 16 && columns) {
    // 16 outputs a work-item as one vector, four rows apart in four (from one vector's worth of outputs: the
    // groups below took 234 us for sum(0) of 4096x16 and 470 for 4096x32 on PoCL, one output a group). Up to
    // 4 * kColumnChunk rows in one pass, so that no running sum adds more than kColumnChunk rows (which keeps
    // the rounding of long columns near CPU's) and a bias gradient stays one launch; longer columns in chunks
    // of kColumnChunk rows, whose sums reduce_outer_partials adds.
    l.kind = Kind::Columns;
    l.local = std::min<int64_t>(64, max_local);  // reduce_outer_partials' group
    l.nchunks = plan.R <= 4 * kColumnChunk ? 1 : (plan.R + kColumnChunk - 1) / kColumnChunk;
    l.chunk = (plan.R + l.nchunks - 1) / l.nchunks;
    return l;
  }
  if (!plan.inner_contiguous && plan.M >= 64) {
    l.kind = Kind::Outer;
    l.local = std::min(max_local, pow2_at_least(plan.M));
    // Split over chunks (a second launch) only for large inputs: below kOuterSplitMin elements one pass
    // measured faster on PoCL (2 cores), e.g. a linear layer's bias gradient, sum(0) of 128x256: 63-75 vs
    // 134-138 us; 4096x256: 534-545 vs 888-1468 us; at 4096x4096 the two were alike.
    const int64_t target = plan.M * plan.R >= kOuterSplitMin ? target_groups : 0;  // 0: one chunk
    split_reduced(l, plan.R, (plan.M + l.local - 1) / l.local, target, 64);
    return l;
  }
  if (plan.inner_contiguous) {
    // A CPU device runs a group on one core, so its parallelism is the groups: at most 16 items a group,
    // each accumulating a run of at least 256 contiguous elements in 16 lanes (the tree and each item's
    // start cost more than the run otherwise: 1M floats summed in 64 groups of 256 items took 2.4x the
    // time of 16 items).
    l.local = std::min({max_local, int64_t{16}, pow2_at_least(std::max<int64_t>((plan.R + 255) / 256, 1))});
    split_reduced(l, plan.R, plan.M, target_groups, 256 * l.local);
    return l;
  }
  // Strided: an item adds its elements one after another (no lanes), so it gets few of them (16 or more)
  // and the tree adds the rest pairwise, which keeps the rounding error of long sums near CPU's.
  l.local = std::min(max_local, pow2_at_least(std::max<int64_t>((plan.R + 15) / 16, 1)));
  split_reduced(l, plan.R, plan.M, target_groups, 64 * l.local);
  return l;
}

// A tensor argument; an undefined tensor (an unused scratch) passes a null buffer.
tocl::BufferArg arg(const at::Tensor& t) { return t.defined() ? buffer_arg(t) : tocl::BufferArg{nullptr, 0}; }

tocl::RawArg arg(const AccScalar& a) { return {a.size, &a.v}; }

tocl::LocalArg local_bytes(size_t bytes) { return {bytes}; }

void check_supported(const at::Tensor& self, c10::ScalarType acc, c10::ScalarType out, const char* what) {
  const int device = device_index(self);
  check_device_supports(self.scalar_type(), device, what);
  check_device_supports(acc, device, what);
  check_device_supports(out, device, what);
}

// One reduction pass of `op` writing `out` (laid out by plan.g's output strides).
void launch_reduce(const at::Tensor& self, const Plan& plan, const at::Tensor& out, const at::Tensor& center,
                   ReduceOp op, c10::ScalarType acc, double p, double divisor) {
  const int device = device_index(self);
  const int stream = current_stream_of(self);
  cl_program program = reduce_program(device, self.scalar_type(), acc, out.scalar_type());
  const auto acc_size = c10::elementSize(acc);
  const AccScalar ap = acc_scalar(p, acc), aq = acc_scalar(p == 0 ? 0 : 1 / p, acc), adiv = acc_scalar(divisor, acc);
  const Launch l = choose_launch(device, plan, columns_of(self, plan, op, acc));
  const cl_int opcode = static_cast<cl_int>(op);
  if (l.kind == Kind::Rows || l.kind == Kind::Cols) {
    at::Tensor partial;
    if (l.nchunks > 1) partial = at::empty({plan.M * l.nchunks}, self.options().dtype(acc));
    const bool rows = l.kind == Kind::Rows;
    cl_kernel k = tocl::get_kernel(program, rows ? "reduce_rows" : "reduce_cols");
    tocl::set_args(k, arg(self), arg(out), arg(center), arg(partial), opcode, static_cast<cl_long>(plan.M),
                   static_cast<cl_long>(plan.R), static_cast<cl_long>(l.chunk), static_cast<cl_long>(l.nchunks), plan.g,
                   arg(ap), arg(aq), arg(adiv), static_cast<cl_int>(l.lanes), local_bytes(l.local * acc_size));
    const int64_t groups = rows ? (plan.M * l.nchunks + l.local / l.lanes - 1) / (l.local / l.lanes)
                                : (plan.M + l.lanes - 1) / l.lanes * l.nchunks;
    tocl::enqueue_1d(device, stream, k, groups * l.local, l.local);
    if (l.nchunks == 1) return;
    if (rows) {
      // partial[o * nchunks + c]: a group per output combines its chunks (one group size: PoCL
      // compiles a kernel again for each new one).
      const int64_t local2 = l.local;
      cl_kernel k2 = tocl::get_kernel(program, "reduce_partials");
      tocl::set_args(k2, arg(partial), arg(out), arg(center), opcode, static_cast<cl_long>(plan.M),
                     static_cast<cl_long>(l.nchunks), plan.g, arg(aq), arg(adiv), local_bytes(local2 * acc_size));
      tocl::enqueue_1d(device, stream, k2, plan.M * local2, local2);
    } else {
      // partial[c * M + o]: adjacent items on adjacent outputs.
      cl_kernel k2 = tocl::get_kernel(program, "reduce_outer_partials");
      tocl::set_args(k2, arg(partial), arg(out), arg(center), opcode, static_cast<cl_long>(plan.M),
                     static_cast<cl_long>(l.nchunks), plan.g, arg(aq), arg(adiv));
      tocl::enqueue_1d(device, stream, k2, plan.M, std::min<int64_t>(64, l.local));
    }
    return;
  }
  if (l.kind == Kind::Serial) {
    cl_kernel k = tocl::get_kernel(program, "reduce_serial");
    tocl::set_args(k, arg(self), arg(out), arg(center), opcode, static_cast<cl_long>(plan.M),
                   static_cast<cl_long>(plan.R), plan.g, arg(ap), arg(aq), arg(adiv));
    tocl::enqueue_1d(device, stream, k, plan.M, l.local);
    return;
  }
  if (l.kind == Kind::Columns) {
    at::Tensor partial;
    if (l.nchunks > 1) partial = at::empty({plan.M * l.nchunks}, self.options().dtype(acc));
    cl_kernel k = tocl::get_kernel(program, "reduce_columns");
    tocl::set_args(k, arg(self), arg(out), arg(partial), opcode, static_cast<cl_long>(plan.M),
                   static_cast<cl_long>(plan.R), static_cast<cl_long>(l.chunk), static_cast<cl_long>(l.nchunks), plan.g,
                   arg(adiv));
    tocl::enqueue_1d(device, stream, k, (plan.M + 15) / 16 * l.nchunks);
    if (l.nchunks == 1) return;
    cl_kernel k2 = tocl::get_kernel(program, "reduce_outer_partials");
    tocl::set_args(k2, arg(partial), arg(out), arg(center), opcode, static_cast<cl_long>(plan.M),
                   static_cast<cl_long>(l.nchunks), plan.g, arg(aq), arg(adiv));
    tocl::enqueue_1d(device, stream, k2, plan.M, l.local);
    return;
  }
  if (l.kind == Kind::Outer) {
    at::Tensor partial;
    if (l.nchunks > 1) partial = at::empty({plan.M * l.nchunks}, self.options().dtype(acc));
    cl_kernel k = tocl::get_kernel(program, "reduce_outer");
    tocl::set_args(k, arg(self), arg(out), arg(center), arg(partial), opcode, static_cast<cl_long>(plan.M),
                   static_cast<cl_long>(plan.R), static_cast<cl_long>(l.chunk), static_cast<cl_long>(l.nchunks), plan.g,
                   arg(ap), arg(aq), arg(adiv));
    const int64_t rounded = (plan.M + l.local - 1) / l.local * l.local;
    tocl::enqueue_1d(device, stream, k, rounded * l.nchunks, l.local);
    if (l.nchunks == 1) return;
    cl_kernel k2 = tocl::get_kernel(program, "reduce_outer_partials");
    tocl::set_args(k2, arg(partial), arg(out), arg(center), opcode, static_cast<cl_long>(plan.M),
                   static_cast<cl_long>(l.nchunks), plan.g, arg(aq), arg(adiv));
    tocl::enqueue_1d(device, stream, k2, plan.M, std::min<int64_t>(64, l.local));
    return;
  }
  at::Tensor partial;
  if (l.nchunks > 1) partial = at::empty({plan.M * l.nchunks}, self.options().dtype(acc));
  cl_kernel k = tocl::get_kernel(program, "reduce_group");
  tocl::set_args(k, arg(self), arg(out), arg(center), arg(partial), opcode, static_cast<cl_long>(plan.M),
                 static_cast<cl_long>(plan.R), static_cast<cl_long>(l.chunk), static_cast<cl_long>(l.nchunks), plan.g,
                 arg(ap), arg(aq), arg(adiv), local_bytes(l.local * acc_size));
  tocl::enqueue_1d(device, stream, k, plan.M * l.nchunks * l.local, l.local);
  if (l.nchunks == 1) return;
  const int64_t local2 = std::min<int64_t>(static_cast<int64_t>(tocl::kernel_forms(device).reduce_group),
                                           pow2_at_least(l.nchunks));
  cl_kernel k2 = tocl::get_kernel(program, "reduce_partials");
  tocl::set_args(k2, arg(partial), arg(out), arg(center), opcode, static_cast<cl_long>(plan.M),
                 static_cast<cl_long>(l.nchunks), plan.g, arg(aq), arg(adiv), local_bytes(local2 * acc_size));
  tocl::enqueue_1d(device, stream, k2, plan.M * local2, local2);
}

// Contiguous strides over the outputs in the plan's order (for per-output scratch like the mean).
Plan with_linear_outputs(Plan plan) {
  int64_t stride = 1;
  for (int k = 0; k < plan.g.out_ndim; ++k) {
    plan.g.out_strides[k] = stride;
    stride *= plan.g.out_sizes[k];
  }
  return plan;
}

}  // namespace

void reduce_into(const at::Tensor& self_in, ReduceMask mask, bool keepdim, const at::Tensor& out, ReduceOp op,
                 c10::ScalarType acc, double p) {
  check_supported(self_in, acc, out.scalar_type(), "reduction");
  if (out.numel() == 0) return;
  at::Tensor self = self_in;
  const auto out_strides = strides_per_input_dim(self, mask, keepdim, out);
  Plan plan;
  if (!make_plan(self, mask, out_strides, out_strides, false, plan)) {
    self = self.contiguous();
    plan = Plan();
    TORCH_CHECK(make_plan(self, mask, out_strides, out_strides, false, plan), "reduction: too many dimensions");
  }
  double divisor = static_cast<double>(plan.R);
  at::Tensor center;
  if (op == ReduceOp::LogSumExp) {
    center = at::empty({plan.M}, self.options().dtype(acc));
    launch_reduce(self, with_linear_outputs(plan), center, at::Tensor(), ReduceOp::Max, acc, 0, 1);
  }
  if (op == ReduceOp::Var || op == ReduceOp::Std) {
    // The mean of each output's elements, then the mean square deviation from it. The mean is summed as
    // max + mean(x - max): any element would do as the shift, and with one from the data a constant
    // slice's mean is exactly its value, so its variance is exactly 0 as CPU's Welford update gives (std's
    // backward masks its gradient on that 0).
    divisor = std::max(static_cast<double>(plan.R) - p, 0.0);
    const Plan linear = with_linear_outputs(plan);
    const at::Tensor shift = at::empty({plan.M}, self.options().dtype(acc));
    launch_reduce(self, linear, shift, at::Tensor(), ReduceOp::Max, acc, 0, 1);
    center = at::empty({plan.M}, self.options().dtype(acc));
    launch_reduce(self, linear, center, shift, ReduceOp::CenteredMean, acc, 0, static_cast<double>(plan.R));
  }
  launch_reduce(self, plan, out, center, op, acc, p, divisor);
}

void arg_reduce_into(const at::Tensor& self_in, ReduceMask mask, bool keepdim, const at::Tensor& values,
                     const at::Tensor& indices, bool is_max) {
  const auto in_type = self_in.scalar_type();
  const auto acc = accumulate_dtype(in_type);
  const auto out_type = values.defined() ? values.scalar_type() : in_type;
  check_supported(self_in, acc, out_type, is_max ? "max" : "min");
  if (indices.numel() == 0) return;
  at::Tensor self = self_in;
  const auto vstrides = strides_per_input_dim(self, mask, keepdim, values);
  const auto istrides = strides_per_input_dim(self, mask, keepdim, indices);
  Plan plan;
  if (!make_plan(self, mask, vstrides, istrides, true, plan)) {
    self = self.contiguous();
    plan = Plan();
    TORCH_CHECK(make_plan(self, mask, vstrides, istrides, true, plan), "reduction: too many dimensions");
  }
  const int device = device_index(self);
  const int stream = current_stream_of(self);
  cl_program program = reduce_program(device, in_type, acc, out_type);
  const Launch l = choose_arg_launch(device, plan);
  const cl_int max_flag = is_max ? 1 : 0;
  const cl_int has_values = values.defined() ? 1 : 0;
  const auto acc_size = c10::elementSize(acc);
  if (l.kind == Kind::Serial && tocl::kernel_forms(device).line_lanes > 1 && plan.g.red_ndim == 1 &&
      plan.g.red_strides[0] == 1) {  // a contiguous run an output, shared by line_lanes work-items
    cl_kernel k = tocl::get_kernel(program, "argreduce_lanes");
    tocl::set_args(k, arg(self), arg(values), arg(indices), max_flag, has_values, static_cast<cl_long>(plan.M),
                   static_cast<cl_long>(plan.R), plan.g);
    tocl::enqueue_runs(device, stream, k, plan.M);
    return;
  }
  if (l.kind == Kind::Serial) {
    cl_kernel k = tocl::get_kernel(program, "argreduce_serial");
    tocl::set_args(k, arg(self), arg(values), arg(indices), max_flag, has_values, static_cast<cl_long>(plan.M),
                   static_cast<cl_long>(plan.R), plan.g);
    tocl::enqueue_1d(device, stream, k, plan.M, l.local);
    return;
  }
  at::Tensor pv, pi;
  if (l.nchunks > 1) {
    pv = at::empty({plan.M * l.nchunks}, self.options().dtype(acc));
    pi = at::empty({plan.M * l.nchunks}, self.options().dtype(at::kLong));
  }
  cl_kernel k = tocl::get_kernel(program, "argreduce_group");
  tocl::set_args(k, arg(self), arg(values), arg(indices), arg(pv), arg(pi), max_flag, has_values,
                 static_cast<cl_long>(plan.M), static_cast<cl_long>(plan.R), static_cast<cl_long>(l.chunk),
                 static_cast<cl_long>(l.nchunks), plan.g, local_bytes(l.local * acc_size),
                 local_bytes(l.local * sizeof(cl_long)));
  tocl::enqueue_1d(device, stream, k, plan.M * l.nchunks * l.local, l.local);
  if (l.nchunks == 1) return;
  const int64_t local2 = std::min<int64_t>(static_cast<int64_t>(tocl::kernel_forms(device).reduce_group),
                                           pow2_at_least(l.nchunks));
  cl_kernel k2 = tocl::get_kernel(program, "argreduce_partials");
  tocl::set_args(k2, arg(pv), arg(pi), arg(values), arg(indices), max_flag, has_values, static_cast<cl_long>(plan.M),
                 static_cast<cl_long>(l.nchunks), plan.g, local_bytes(local2 * acc_size),
                 local_bytes(local2 * sizeof(cl_long)));
  tocl::enqueue_1d(device, stream, k2, plan.M * local2, local2);
}

}  // namespace torch_opencl
