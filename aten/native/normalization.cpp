// native_layer_norm, native_group_norm, native_batch_norm and their backwards.
// Layer and group norm normalize contiguous rows: layer norm over many rows one
// work-item per row (16-element vectors), its weight/bias gradients from partial sums
// over chunks of rows; otherwise one work-group per row. Batch
// norm reduces per channel of a contiguous (N, C, S) view. Kernels in
// kernels_cl/normalization.cl; statistics are accumulated in float (double for float64).
// GPU forms (kernels_cl/normalization_gpu.cl, where runtime/kernel_forms.h says row_gpu_forms): layer
// norm rows as segments of work-groups, its parameter gradients as two-stage column sums; batch
// norm per (channel, block of planes) work-group, blocks combined by a second kernel.
#include <ATen/ATen.h>
#include <ATen/native/layer_norm.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <initializer_list>
#include <tuple>
#include <utility>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/line_geometry.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/device.h"
#include "runtime/kernel_forms.h"

namespace torch_opencl {
namespace {

using at::Tensor;
using OptTensor = std::optional<Tensor>;
using Tensor3 = std::tuple<Tensor, Tensor, Tensor>;

Tensor defined_or_empty(const OptTensor& t) { return t.has_value() && t->defined() ? *t : Tensor(); }

// A contiguous parameter of the input's dtype on its device, or undefined.
Tensor param(const Tensor& input, const Tensor& p, const char* op, const char* name) {
  if (!p.defined()) return p;
  // Other mixed dtypes run on the CPU fallback, which gives CPU's error.
  if (p.scalar_type() != input.scalar_type())
    throw_dtype_not_native(std::string(op) + ": " + name + " has dtype " + c10::toString(p.scalar_type()) +
                           " but the input has " + c10::toString(input.scalar_type()));
  TORCH_CHECK(p.device() == input.device(), op, ": ", name, " is on ", p.device(), " but the input is on ",
              input.device());
  return p.contiguous();
}

// The buffer of `t`, or of `stand_in` when `t` is undefined (the kernel then ignores it).
tocl::BufferArg arg_or(const Tensor& t, const Tensor& stand_in) { return buffer_arg(t.defined() ? t : stand_in); }

cl_long L(int64_t v) { return static_cast<cl_long>(v); }
cl_int I(bool v) { return static_cast<cl_int>(v); }

// The eps/momentum argument in the accumulation type.
void set_acc_arg(cl_kernel k, cl_uint index, const Tensor& like, double v) {
  if (like.scalar_type() == at::kDouble) {
    TOCL_CHECK(clSetKernelArg(k, index, sizeof(double), &v));
  } else {
    const float f = static_cast<float>(v);
    TOCL_CHECK(clSetKernelArg(k, index, sizeof(float), &f));
  }
}

// ---- rows: layer norm and group norm ----

// Whether layer norm's M rows take the one-item-per-row kernels: enough rows for every compute unit.
bool many_rows(const Tensor& x, int64_t rows) {
  return rows >= 8 * std::max<int64_t>(1, tocl::device_info(device_index(x)).compute_units);
}

// Launch size for one item per row (or block of columns): groups of up to 64, about 4 per compute unit at least.
std::pair<size_t, size_t> item_per_row(const Tensor& x, int64_t rows) {
  const int64_t units = std::max<int64_t>(1, tocl::device_info(device_index(x)).compute_units);
  int64_t local = 64;
  while (local > 1 && local * 4 * units > rows) local /= 2;
  return {static_cast<size_t>((rows + local - 1) / local * local), static_cast<size_t>(local)};
}

bool gpu_forms(const Tensor& x) { return tocl::kernel_forms(device_index(x)).row_gpu_forms; }

void rows_forward(const Tensor& x, const Tensor& w, const Tensor& b, int64_t rows, int64_t n, int64_t groups,
                  int64_t inner_div, double eps, const Tensor& out, const Tensor& mean, const Tensor& rstd) {
  if (rows == 0) return;
  if (groups == 1 && inner_div == 1 && gpu_forms(x)) {  // layer norm, GPU form
    const int device = device_index(x);
    const auto p = line_launch(device, n, 1, rows);
    cl_kernel k = dtype_kernel(x, "normalization_gpu.cl", "layer_norm_lines_forward");
    tocl::set_args(k, buffer_arg(out), buffer_arg(mean), buffer_arg(rstd), arg_or(x, mean), arg_or(w, mean),
                   arg_or(b, mean), I(w.defined()), I(b.defined()), L(n), L(rows), static_cast<cl_int>(p.seg));
    set_acc_arg(k, 17, x, eps);
    tocl::enqueue_1d(device, current_stream_of(x), k, p.global, p.local);
    return;
  }
  if (groups == 1 && inner_div == 1 && many_rows(x, rows)) {  // layer norm
    cl_kernel k = dtype_kernel(x, "normalization.cl", "layer_norm_rows_forward");
    tocl::set_args(k, buffer_arg(out), buffer_arg(mean), buffer_arg(rstd), arg_or(x, mean), arg_or(w, mean),
                   arg_or(b, mean), I(w.defined()), I(b.defined()), L(n), L(rows));
    set_acc_arg(k, 16, x, eps);
    const auto [global, local] = item_per_row(x, rows);
    tocl::enqueue_1d(device_index(x), current_stream_of(x), k, global, local);
    return;
  }
  cl_kernel k = dtype_kernel(x, "normalization.cl", "norm_rows_forward");
  tocl::set_args(k, buffer_arg(out), buffer_arg(mean), buffer_arg(rstd), arg_or(x, mean), arg_or(w, mean),
                 arg_or(b, mean), I(w.defined()), I(b.defined()), L(n), L(groups), L(inner_div));
  set_acc_arg(k, 17, x, eps);
  tocl::enqueue_1d(device_index(x), current_stream_of(x), k, rows * row_group(device_index(x)), row_group(device_index(x)));
}

// Layer norm's backward, GPU forms: dx per row; the weight/bias gradients as column sums over
// blocks of rows (enough blocks to fill the device, each walker of a group at least 4 rows),
// combined by a second kernel when there is more than one block.
void layer_norm_backward_gpu(const Tensor& go, const Tensor& x, const Tensor& m, const Tensor& r, const Tensor& w,
                             int64_t rows, int64_t n, std::array<bool, 3> mask, const Tensor& dx, const Tensor& dw,
                             const Tensor& db) {
  if (rows * n == 0) return;  // dw, db: zeros
  const int device = device_index(x);
  const int stream = current_stream_of(x);
  const auto& forms = tocl::kernel_forms(device);
  if (mask[0]) {
    const auto p = line_launch(device, n, 1, rows);
    cl_kernel k = dtype_kernel(x, "normalization_gpu.cl", "layer_norm_lines_backward");
    tocl::set_args(k, buffer_arg(dx), buffer_arg(go), buffer_arg(x), buffer_arg(m), buffer_arg(r), arg_or(w, x),
                   I(w.defined()), L(n), L(rows), static_cast<cl_int>(p.seg));
    tocl::enqueue_1d(device, stream, k, p.global, p.local);
  }
  if (!mask[1] && !mask[2]) return;
  const auto wg = static_cast<int64_t>(forms.row_group);
  const int64_t cols = std::min<int64_t>(static_cast<int64_t>(forms.column_lines), pow2_at_least(n));
  const int64_t walkers = wg / cols, col_blocks = (n + cols - 1) / cols;
  const int64_t wanted = (static_cast<int64_t>(forms.busy_groups) + col_blocks - 1) / col_blocks;
  const int64_t blocks_wanted = std::max<int64_t>(1, std::min(wanted, rows / (4 * walkers)));
  const int64_t chunk = (rows + blocks_wanted - 1) / blocks_wanted;
  const int64_t row_blocks = (rows + chunk - 1) / chunk;
  const auto& any = mask[1] ? dw : db;
  const auto acc = x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const auto partial = row_blocks > 1 ? at::empty({row_blocks * 2 * n}, x.options().dtype(acc)) : Tensor();
  cl_kernel k = dtype_kernel(x, "normalization_gpu.cl", "layer_norm_param_columns");
  tocl::set_args(k, arg_or(partial, any), arg_or(dw, any), arg_or(db, any), I(mask[1]), I(mask[2]), buffer_arg(go),
                 buffer_arg(x), buffer_arg(m), buffer_arg(r), L(rows), L(n), static_cast<cl_int>(cols), L(chunk),
                 L(row_blocks));
  tocl::enqueue_1d(device, stream, k, static_cast<size_t>(col_blocks * row_blocks * wg), static_cast<size_t>(wg));
  if (row_blocks == 1) return;
  cl_kernel k2 = dtype_kernel(x, "normalization_gpu.cl", "layer_norm_param_combine");
  tocl::set_args(k2, arg_or(dw, any), arg_or(db, any), I(mask[1]), I(mask[2]), buffer_arg(partial), L(n),
                 L(row_blocks));
  tocl::enqueue_1d(device, stream, k2, static_cast<size_t>(2 * n), static_cast<size_t>(std::min<int64_t>(wg, 64)));
}

Tensor3 rows_backward(const Tensor& grad_out, const Tensor& x, const Tensor& mean, const Tensor& rstd,
                      const Tensor& w, int64_t rows, int64_t n, int64_t groups, int64_t inner_div,
                      int64_t params, at::IntArrayRef param_shape, std::array<bool, 3> mask) {
  check_same_device({grad_out, x, mean, rstd, w});
  const auto go = grad_out.contiguous();
  const auto m = mean.contiguous();
  const auto r = rstd.contiguous();
  Tensor dx, dw, db;
  if (mask[0]) dx = at::empty(x.sizes(), x.options());
  // The parameter kernels write every element; zeros only where none runs (no rows), which saves
  // two fill launches per call.
  const bool no_terms = rows * n == 0 || params == 0;
  if (mask[1]) dw = no_terms ? at::zeros(param_shape, x.options()) : at::empty(param_shape, x.options());
  if (mask[2]) db = no_terms ? at::zeros(param_shape, x.options()) : at::empty(param_shape, x.options());
  const int device = device_index(x);
  const int stream = current_stream_of(x);
  const bool layer = groups == 1 && inner_div == 1;
  if (layer && gpu_forms(x)) {
    layer_norm_backward_gpu(go, x, m, r, w, rows, n, mask, dx, dw, db);
    return {dx, dw, db};
  }
  if (mask[0] && rows * n > 0 && layer && many_rows(x, rows)) {
    cl_kernel k = dtype_kernel(x, "normalization.cl", "layer_norm_rows_backward");
    tocl::set_args(k, buffer_arg(dx), buffer_arg(go), buffer_arg(x), buffer_arg(m), buffer_arg(r), arg_or(w, x),
                   I(w.defined()), L(n), L(rows));
    const auto [global, local] = item_per_row(x, rows);
    tocl::enqueue_1d(device, stream, k, global, local);
  } else if (mask[0] && rows * n > 0) {
    cl_kernel k = dtype_kernel(x, "normalization.cl", "norm_rows_backward");
    tocl::set_args(k, buffer_arg(dx), buffer_arg(go), buffer_arg(x), buffer_arg(m), buffer_arg(r), arg_or(w, x),
                   I(w.defined()), L(n), L(groups), L(inner_div));
    tocl::enqueue_1d(device, stream, k, rows * row_group(device), row_group(device));
  }
  if ((mask[1] || mask[2]) && params > 0 && rows * n > 0 && layer) {
    const auto& any = mask[1] ? dw : db;
    // Chunks of rows summed into partials (at least 16 rows each, about 8 chunks per compute unit).
    const int64_t units = std::max<int64_t>(1, tocl::device_info(device).compute_units);
    const int64_t chunk = std::max<int64_t>(16, (rows + 8 * units - 1) / (8 * units));
    const int64_t nchunks = (rows + chunk - 1) / chunk;
    const auto acc = x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
    auto partial = at::empty({nchunks * 2 * n}, x.options().dtype(acc));
    cl_kernel k = dtype_kernel(x, "normalization.cl", "layer_norm_param_partials");
    tocl::set_args(k, buffer_arg(partial), buffer_arg(go), buffer_arg(x), buffer_arg(m), buffer_arg(r), L(rows), L(n),
                   L(chunk));
    tocl::enqueue_1d(device, stream, k, nchunks, 1);
    cl_kernel k2 = dtype_kernel(x, "normalization.cl", "layer_norm_param_finish");
    tocl::set_args(k2, arg_or(dw, any), arg_or(db, any), I(mask[1]), I(mask[2]), buffer_arg(partial), L(n),
                   L(nchunks));
    const auto [global, local] = item_per_row(x, (n + 15) / 16);
    tocl::enqueue_1d(device, stream, k2, global, local);
  } else if ((mask[1] || mask[2]) && params > 0 && rows * n > 0) {
    const auto& any = mask[1] ? dw : db;
    cl_kernel k = dtype_kernel(x, "normalization.cl", "norm_rows_param_backward");
    tocl::set_args(k, arg_or(dw, any), arg_or(db, any), I(mask[1]), I(mask[2]), buffer_arg(go), buffer_arg(x),
                   buffer_arg(m), buffer_arg(r), L(rows), L(n), L(groups), L(inner_div));
    tocl::enqueue_1d(device, stream, k, params * row_group(device), row_group(device));
  }
  return {dx, dw, db};
}

Tensor3 native_layer_norm(const Tensor& input, at::IntArrayRef normalized_shape, const OptTensor& weight_,
                          const OptTensor& bias_, double eps) {
  const c10::DeviceGuard guard(input.device());
  const auto weight = param(input, defined_or_empty(weight_), "native_layer_norm", "weight");
  const auto bias = param(input, defined_or_empty(bias_), "native_layer_norm", "bias");
  const auto [M, N] = at::native::_check_layer_norm_inputs(input, normalized_shape, weight, bias);
  const auto x = input.contiguous();
  auto out = at::empty(x.sizes(), x.options());
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized_shape.size());
  std::vector<int64_t> stat_shape(input.sizes().begin(), input.sizes().begin() + axis);
  stat_shape.resize(input.dim(), 1);
  auto mean = at::empty(stat_shape, x.options());
  auto rstd = at::empty(stat_shape, x.options());
  rows_forward(x, weight, bias, M, N, 1, 1, eps, out, mean, rstd);
  return {out, mean, rstd};
}

Tensor3 native_layer_norm_backward(const Tensor& grad_out, const Tensor& input, at::IntArrayRef normalized_shape,
                                   const Tensor& mean, const Tensor& rstd, const OptTensor& weight_,
                                   const OptTensor& bias_, std::array<bool, 3> mask) {
  const c10::DeviceGuard guard(input.device());
  const auto weight = param(input, defined_or_empty(weight_), "native_layer_norm_backward", "weight");
  const auto bias = param(input, defined_or_empty(bias_), "native_layer_norm_backward", "bias");
  const auto [M, N] = at::native::_check_layer_norm_inputs(input, normalized_shape, weight, bias);
  const auto x = input.contiguous();
  const auto shape = weight.defined() ? weight.sizes() : bias.defined() ? bias.sizes() : normalized_shape;
  return rows_backward(grad_out, x, mean, rstd, weight, M, N, 1, 1, N, shape, mask);
}

void check_group_norm(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t N, int64_t C,
                      int64_t HxW, int64_t group) {
  TORCH_CHECK(group > 0 && C % group == 0, "Expected number of channels in input to be divisible by num_groups, ",
              "but got input of shape ", input.sizes(), " and num_groups=", group);
  TORCH_CHECK(input.numel() == N * C * HxW, "Expected input to have N * C * HxW = ", N * C * HxW,
              " elements, but got input of shape ", input.sizes());
  TORCH_CHECK(!weight.defined() || (weight.dim() == 1 && weight.numel() == C),
              "Expected weight to be a vector of size equal to the number of channels in input, but got weight of ",
              "shape ", weight.sizes(), " and input of shape ", input.sizes());
  TORCH_CHECK(!bias.defined() || (bias.dim() == 1 && bias.numel() == C),
              "Expected bias to be a vector of size equal to the number of channels in input, but got bias of shape ",
              bias.sizes(), " and input of shape ", input.sizes());
}

Tensor3 native_group_norm(const Tensor& input, const OptTensor& weight_, const OptTensor& bias_, int64_t N,
                          int64_t C, int64_t HxW, int64_t group, double eps) {
  const c10::DeviceGuard guard(input.device());
  const auto weight = param(input, defined_or_empty(weight_), "native_group_norm", "weight");
  const auto bias = param(input, defined_or_empty(bias_), "native_group_norm", "bias");
  check_group_norm(input, weight, bias, N, C, HxW, group);
  const auto x = input.contiguous();
  auto out = at::empty(x.sizes(), x.options());
  auto mean = at::empty({N, group}, x.options());
  auto rstd = at::empty({N, group}, x.options());
  rows_forward(x, weight, bias, N * group, (C / group) * HxW, group, HxW, eps, out, mean, rstd);
  return {out, mean, rstd};
}

Tensor3 native_group_norm_backward(const Tensor& grad_out, const Tensor& input, const Tensor& mean,
                                   const Tensor& rstd, const OptTensor& weight_, int64_t N, int64_t C, int64_t HxW,
                                   int64_t group, std::array<bool, 3> mask) {
  const c10::DeviceGuard guard(input.device());
  const auto weight = param(input, defined_or_empty(weight_), "native_group_norm_backward", "weight");
  check_group_norm(input, weight, Tensor(), N, C, HxW, group);
  const auto x = input.contiguous();
  return rows_backward(grad_out, x, mean, rstd, weight, N * group, (C / group) * HxW, group, HxW, C, {C}, mask);
}

// ---- batch norm ----

struct Channels {
  int64_t N, C, S;
};

Channels channels(const Tensor& input, const char* op) {
  if (input.dim() < 2) (void)input.size(1);  // CPU's error first: an IndexError, dimension out of range
  TORCH_CHECK(input.dim() >= 2, op, ": expected an input of at least 2 dimensions (N, C, ...), got ",
              input.sizes());
  const int64_t N = input.size(0), C = input.size(1);
  return {N, C, N * C == 0 ? 0 : input.numel() / (N * C)};
}

// CPU's one mixed form: a half or bfloat16 input with float parameters and statistics (every one
// given). It computes in float and returns the input's dtype; so do these kernels, on a float copy of
// the input. (Not the fallback: native_batch_norm's schema does not mark the running statistics as
// written, so the boxed fallback would drop their update.) Other mixes keep CPU's error.
bool float_params_of_reduced_input(const Tensor& input, std::initializer_list<const OptTensor*> params) {
  if (input.scalar_type() != at::kHalf && input.scalar_type() != at::kBFloat16) return false;
  bool any = false;
  for (const OptTensor* p : params) {
    if (!p->has_value() || !(*p)->defined()) continue;
    if ((*p)->scalar_type() != at::kFloat) return false;
    any = true;
  }
  return any;
}

// GPU forms: each channel's N planes split into blocks, a work-group each, so that about
// busy_groups groups run (128 channels alone would leave compute units idle), each item with at
// least 4 elements; more than one block adds a combine kernel.
struct ChannelBlocks {
  int64_t chunk, blocks;  // planes per block, blocks per channel
};

ChannelBlocks channel_blocks(const Channels& g, int device) {
  const auto& forms = tocl::kernel_forms(device);
  const auto wg = static_cast<int64_t>(forms.row_group);
  int64_t blocks = (static_cast<int64_t>(forms.busy_groups) + g.C - 1) / std::max<int64_t>(1, g.C);
  blocks = std::max<int64_t>(1, std::min({blocks, g.N * g.S / (4 * wg), g.N}));
  const int64_t chunk = std::max<int64_t>(1, (g.N + blocks - 1) / blocks);
  return {chunk, std::max<int64_t>(1, (g.N + chunk - 1) / chunk)};
}

// The CPU forms of bn_apply and bn_backward_apply (kernels_cl/normalization.cl): a run of at most BN_RUN
// elements of a plane a work-item (or line_lanes work-items: tocl::enqueue_runs).
size_t cpu_plane_runs(const Channels& g) {
  constexpr int64_t kRun = 4096;  // BN_RUN
  return static_cast<size_t>(g.N * g.C * ((g.S + kRun - 1) / kRun));
}

// The launch of the *_planes kernels: groups of whole planes where a plane fits a group, else
// group-wide spans of a plane.
size_t planes_global(const Channels& g, int device) {
  const auto wg = static_cast<int64_t>(row_group(device));
  const int64_t planes = g.N * g.C;
  const int64_t groups = g.S <= wg ? (planes + wg / g.S - 1) / (wg / g.S) : planes * ((g.S + wg - 1) / wg);
  return static_cast<size_t>(groups * wg);
}

void bn_stats_gpu(const Tensor& x, const Channels& g, const Tensor& rm, const Tensor& rv, double momentum, double eps,
                  const Tensor& save_mean, const Tensor& save_invstd) {
  const int device = device_index(x);
  const int stream = current_stream_of(x);
  const auto b = channel_blocks(g, device);
  const auto acc = x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const auto partial = b.blocks > 1 ? at::empty({g.C * b.blocks * 3}, x.options().dtype(acc)) : Tensor();
  cl_kernel k = dtype_kernel(x, "normalization_gpu.cl", "bn_stats_blocks");
  tocl::set_args(k, arg_or(partial, save_mean), buffer_arg(save_mean), buffer_arg(save_invstd), arg_or(rm, save_mean),
                 arg_or(rv, save_mean), I(rm.defined()), arg_or(x, save_mean), L(g.N), L(g.C), L(g.S), L(b.chunk),
                 L(b.blocks));
  set_acc_arg(k, 18, x, momentum);
  set_acc_arg(k, 19, x, eps);
  tocl::enqueue_1d(device, stream, k, g.C * b.blocks * row_group(device), row_group(device));
  if (b.blocks == 1) return;
  cl_kernel k2 = dtype_kernel(x, "normalization_gpu.cl", "bn_stats_combine");
  tocl::set_args(k2, buffer_arg(partial), buffer_arg(save_mean), buffer_arg(save_invstd), arg_or(rm, save_mean),
                 arg_or(rv, save_mean), I(rm.defined()), L(g.C), L(b.blocks));
  set_acc_arg(k2, 13, x, momentum);
  set_acc_arg(k2, 14, x, eps);
  tocl::enqueue_1d(device, stream, k2, g.C, 64);
}

// sums (2C: sum grad, sum grad * (x - mean)) and dweight/dbias, GPU form.
void bn_backward_sums_gpu(const Tensor& go, const Tensor& x, const Tensor& mean, const Tensor& scale, bool train,
                          double eps, const Channels& g, std::array<bool, 3> mask, const Tensor& sums,
                          const Tensor& dw, const Tensor& db) {
  const int device = device_index(x);
  const int stream = current_stream_of(x);
  const auto b = channel_blocks(g, device);
  const auto partial = b.blocks > 1 ? at::empty({g.C * b.blocks * 2}, sums.options()) : Tensor();
  cl_kernel k = dtype_kernel(x, "normalization_gpu.cl", "bn_backward_blocks");
  tocl::set_args(k, arg_or(partial, sums), buffer_arg(sums), arg_or(dw, x), arg_or(db, x), I(mask[1]), I(mask[2]),
                 arg_or(go, mean), arg_or(x, mean), buffer_arg(mean), buffer_arg(scale), I(!train), L(g.N), L(g.C),
                 L(g.S), L(b.chunk), L(b.blocks));
  set_acc_arg(k, 24, x, eps);
  tocl::enqueue_1d(device, stream, k, g.C * b.blocks * row_group(device), row_group(device));
  if (b.blocks == 1) return;
  cl_kernel k2 = dtype_kernel(x, "normalization_gpu.cl", "bn_backward_combine");
  tocl::set_args(k2, buffer_arg(partial), buffer_arg(sums), arg_or(dw, x), arg_or(db, x), I(mask[1]), I(mask[2]),
                 buffer_arg(scale), I(!train), L(g.C), L(b.blocks));
  set_acc_arg(k2, 15, x, eps);
  tocl::enqueue_1d(device, stream, k2, g.C, 64);
}

Tensor3 native_batch_norm(const Tensor& input, const OptTensor& weight_, const OptTensor& bias_,
                          const OptTensor& running_mean_, const OptTensor& running_var_, bool training,
                          double momentum, double eps) {
  const char* op = "native_batch_norm";
  if (float_params_of_reduced_input(input, {&weight_, &bias_, &running_mean_, &running_var_})) {
    auto r = torch_opencl::native_batch_norm(input.to(at::kFloat), weight_, bias_, running_mean_, running_var_,
                                             training, momentum, eps);
    std::get<0>(r) = std::get<0>(r).to(input.scalar_type());
    return r;
  }
  const c10::DeviceGuard guard(input.device());
  const auto g = channels(input, op);
  const auto weight = param(input, defined_or_empty(weight_), op, "weight");
  const auto bias = param(input, defined_or_empty(bias_), op, "bias");
  const auto running_mean = defined_or_empty(running_mean_);
  const auto running_var = defined_or_empty(running_var_);
  const auto rm = param(input, running_mean, op, "running_mean");
  const auto rv = param(input, running_var, op, "running_var");
  for (const auto* t : {&weight, &bias, &rm, &rv})
    TORCH_CHECK(!t->defined() || t->numel() == g.C, op, ": expected per-channel tensors of ", g.C,
                " elements, got one of shape ", t->sizes());
  TORCH_CHECK(training || (rm.defined() && rv.defined()), op, ": running_mean and running_var must be defined in ",
              "evaluation mode");
  TORCH_CHECK(rm.defined() == rv.defined(), op, ": running_mean and running_var must be both defined or both None");
  const auto x = input.contiguous();
  auto out = at::empty(x.sizes(), x.options());
  const int device = device_index(x);
  const int stream = current_stream_of(x);
  Tensor mean, scale, save_mean, save_invstd;
  if (training) {
    save_mean = at::empty({g.C}, x.options());
    save_invstd = at::empty({g.C}, x.options());
    if (g.C > 0 && gpu_forms(x)) {
      bn_stats_gpu(x, g, rm, rv, momentum, eps, save_mean, save_invstd);
    } else if (g.C > 0) {
      cl_kernel k = dtype_kernel(x, "normalization.cl", "bn_stats");
      tocl::set_args(k, buffer_arg(save_mean), buffer_arg(save_invstd), arg_or(rm, save_mean), arg_or(rv, save_mean),
                     I(rm.defined()), arg_or(x, save_mean), L(g.N), L(g.C), L(g.S));
      set_acc_arg(k, 14, x, momentum);
      set_acc_arg(k, 15, x, eps);
      tocl::enqueue_1d(device, stream, k, g.C * row_group(device), row_group(device));
    }
    // The running stats were updated in contiguous copies if they were not contiguous.
    if (rm.defined() && !rm.is_same(running_mean)) running_mean.copy_(rm);
    if (rv.defined() && !rv.is_same(running_var)) running_var.copy_(rv);
    mean = save_mean;
    scale = save_invstd;
  } else {
    save_mean = at::empty({0}, x.options());
    save_invstd = at::empty({0}, x.options());
    mean = rm;
    scale = rv;
  }
  if (x.numel() > 0) {
    const bool planes = gpu_forms(x);  // GPU form: no index division per element
    cl_kernel k = dtype_kernel(x, planes ? "normalization_gpu.cl" : "normalization.cl", planes ? "bn_apply_planes" : "bn_apply");
    tocl::set_args(k, buffer_arg(out), buffer_arg(x), buffer_arg(mean), buffer_arg(scale), I(!training),
                   arg_or(weight, x), arg_or(bias, x), I(weight.defined()), I(bias.defined()),
                   L(g.N * g.C), L(g.C), L(g.S));
    set_acc_arg(k, 18, x, eps);
    if (planes)
      tocl::enqueue_1d(device, stream, k, planes_global(g, device), row_group(device));
    else
      tocl::enqueue_runs(device, stream, k, cpu_plane_runs(g));
  }
  return {out, save_mean, save_invstd};
}

Tensor3 native_batch_norm_backward(const Tensor& grad_out, const Tensor& input, const OptTensor& weight_,
                                   const OptTensor& running_mean_, const OptTensor& running_var_,
                                   const OptTensor& save_mean_, const OptTensor& save_invstd_, bool train,
                                   double eps, std::array<bool, 3> mask) {
  const char* op = "native_batch_norm_backward";
  if (grad_out.scalar_type() == input.scalar_type() &&
      float_params_of_reduced_input(input, {&weight_, &running_mean_, &running_var_, &save_mean_, &save_invstd_})) {
    auto r = torch_opencl::native_batch_norm_backward(grad_out.to(at::kFloat), input.to(at::kFloat), weight_,
                                                      running_mean_, running_var_, save_mean_, save_invstd_, train,
                                                      eps, mask);
    if (std::get<0>(r).defined()) std::get<0>(r) = std::get<0>(r).to(input.scalar_type());
    return r;
  }
  const c10::DeviceGuard guard(input.device());
  const auto g = channels(input, op);
  const auto weight = param(input, defined_or_empty(weight_), op, "weight");
  const auto mean = param(input, defined_or_empty(train ? save_mean_ : running_mean_), op, "mean");
  const auto scale = param(input, defined_or_empty(train ? save_invstd_ : running_var_), op, "invstd/var");
  TORCH_CHECK(mean.defined() && scale.defined(), op, ": ",
              train ? "save_mean and save_invstd" : "running_mean and running_var", " must be defined");
  check_same_device({grad_out, input, mean, scale});
  const auto x = input.contiguous();
  const auto go = grad_out.contiguous();
  Tensor dx, dw, db;
  if (mask[0]) dx = at::empty(x.sizes(), x.options());
  if (mask[1]) dw = at::empty({g.C}, x.options());
  if (mask[2]) db = at::empty({g.C}, x.options());
  if (g.C == 0) return {dx, dw, db};
  const int device = device_index(x);
  const int stream = current_stream_of(x);
  auto sums = at::empty({2 * g.C}, x.options().dtype(x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat));
  if (gpu_forms(x)) {
    bn_backward_sums_gpu(go, x, mean, scale, train, eps, g, mask, sums, dw, db);
  } else {
    cl_kernel k = dtype_kernel(x, "normalization.cl", "bn_backward_reduce");
    tocl::set_args(k, buffer_arg(sums), arg_or(dw, x), arg_or(db, x), I(mask[1]), I(mask[2]), arg_or(go, mean),
                   arg_or(x, mean), buffer_arg(mean), buffer_arg(scale), I(!train), L(g.N), L(g.C), L(g.S));
    set_acc_arg(k, 20, x, eps);
    tocl::enqueue_1d(device, stream, k, g.C * row_group(device), row_group(device));
  }
  if (mask[0] && x.numel() > 0) {
    const bool planes = gpu_forms(x);
    cl_kernel k = dtype_kernel(x, planes ? "normalization_gpu.cl" : "normalization.cl",
                               planes ? "bn_backward_apply_planes" : "bn_backward_apply");
    tocl::set_args(k, buffer_arg(dx), buffer_arg(sums), buffer_arg(go), buffer_arg(x), buffer_arg(mean),
                   buffer_arg(scale), I(!train), arg_or(weight, x), I(weight.defined()), I(train),
                   L(g.N * g.C), L(g.N), L(g.C), L(g.S));
    set_acc_arg(k, 21, x, eps);
    if (planes)
      tocl::enqueue_1d(device, stream, k, planes_global(g, device), row_group(device));
    else
      tocl::enqueue_runs(device, stream, k, cpu_plane_runs(g));
  }
  return {dx, dw, db};
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("native_layer_norm", TORCH_FN(native_layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(native_layer_norm_backward));
  m.impl("native_group_norm", TORCH_FN(native_group_norm));
  m.impl("native_group_norm_backward", TORCH_FN(native_group_norm_backward));
  m.impl("native_batch_norm", TORCH_FN(native_batch_norm));
  m.impl("native_batch_norm_backward", TORCH_FN(native_batch_norm_backward));
}

}  // namespace torch_opencl
