#include "aten/native/gemm_tiled.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include "aten/kernel_support/acc_arg.h"
#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/device.h"
#include "runtime/embedded_sources.h"
#include "runtime/kernel_forms.h"
#include "runtime/launch.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

// Grid dimensions 1 and 2 stay under CUDA's 65535 blocks (NVIDIA's OpenCL maps the grid onto it).
constexpr int64_t kMaxGridYZ = 65535;
constexpr int kGroupSide = 16;  // WGX = WGY in gemm_tiled.cl

std::mutex g_override_mutex;
std::optional<TiledGemmPlan> g_override;
std::atomic<bool> g_enabled{true};

// Operand layouts are compiled in (gemm_tiled.cl): whether A's loads walk k, B's walk n, and both read 4-vectors.
struct Layout {
  bool a_k_inner, b_n_inner, vec_rows;
};

cl_program program_for(int device, c10::ScalarType type, const TiledGemmPlan& p, const Layout& l) {
  static std::mutex mutex;
  static std::map<std::tuple<int, c10::ScalarType, int, int, int, int>, cl_program> programs;
  std::lock_guard<std::mutex> lock(mutex);
  const int layout = l.a_k_inner * 4 + l.b_n_inner * 2 + l.vec_rows;
  auto& program = programs[{device, type, p.rm, p.rn, p.bk, layout}];
  if (!program) {
    // float16/bfloat16 are stored as such and computed in float (loads and stores convert).
    const bool reduced = compute_dtype(type) != type;
    const std::string source = program_prelude({type}) + operand_defines("T", type) + "#define T " +
                               storage_type(type) + "\n#define ACC " + storage_type(compute_dtype(type)) +
                               "\n#define VEC_LOADS " + (reduced ? "0" : "1") + "\n#define RM " +
                               std::to_string(p.rm) + "\n#define RN " + std::to_string(p.rn) + "\n#define BK " +
                               std::to_string(p.bk) + "\n#define A_K_INNER " + (l.a_k_inner ? "1" : "0") +
                               "\n#define B_N_INNER " + (l.b_n_inner ? "1" : "0") + "\n#define VEC_ROWS " +
                               (l.vec_rows ? "1" : "0") + "\n" + tocl::embedded_sources().at("gemm_tiled.cl");
    program = tocl::get_program(device, source);
  }
  return program;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t groups_of(const tocl::KernelForms::GemmTile& t, int64_t m, int64_t n, int64_t batch) {
  return ceil_div(m, 64 * t.rm) * ceil_div(n, 64 * t.rn) * batch;
}

// The share of a tile grid's multiply-adds that land inside C (the rest compute zeros past its edges).
double coverage(const tocl::KernelForms::GemmTile& t, int64_t m, int64_t n) {
  const int64_t bm = 64 * t.rm, bn = 64 * t.rn;
  return static_cast<double>(m * n) / static_cast<double>(ceil_div(m, bm) * bm * ceil_div(n, bn) * bn);
}

// Local memory of a plan's two stages (As[BK][BM + 4], Bs[BK][BN + 4] in gemm_tiled.cl).
uint64_t stage_bytes(const TiledGemmPlan& p, size_t element) {
  return static_cast<uint64_t>(p.bk) * (64 * p.rm + 4 + 64 * p.rn + 4) * element;
}

}  // namespace

TiledGemmPlan plan_tiled_gemm(int device, c10::ScalarType type, int64_t m, int64_t n, int64_t k, int64_t batch) {
  {
    std::lock_guard<std::mutex> lock(g_override_mutex);
    if (g_override) return *g_override;
  }
  const auto& forms = tocl::kernel_forms(device);
  const int64_t units = static_cast<int64_t>(forms.compute_units);
  // Doubles keep the small tile: 16 double accumulators per work-item, not 64. A large tile that would
  // compute mostly past C's edges (a 64-row C, e.g. a 64-channel convolution's) gives way to the small.
  const bool large_fits = type != at::kDouble &&
                          coverage(forms.gemm_large, m, n) >= 0.75 * coverage(forms.gemm_small, m, n);
  const auto& large = forms.gemm_large;
  const auto& small = forms.gemm_small;
  // K splits that give `groups` tiles two waves, each part at least 256 deep (1: no split).
  const auto splits_for = [&](int64_t groups) {
    return static_cast<int>(std::max<int64_t>(1, std::min(ceil_div(2 * units, groups), k / 256)));
  };
  if (large_fits) {
    // The large tile does the most work per load: kept while it, or its K split, fills a wave.
    const int64_t groups = groups_of(large, m, n, batch);
    if (groups >= units) return {large.rm, large.rn, large.bk, 1};
    const int splits = splits_for(groups);
    if (groups * splits >= units) return {large.rm, large.rn, large.bk, splits};
  }
  const int64_t groups = groups_of(small, m, n, batch);
  return {small.rm, small.rn, small.bk, groups >= units ? 1 : splits_for(groups)};
}

std::optional<TiledGemmPlan> fit_local_memory(TiledGemmPlan p, uint64_t local_bytes, size_t element) {
  if (local_bytes == 0) return p;  // the driver did not say
  while (stage_bytes(p, element) > local_bytes && p.bk > 4) p.bk /= 2;
  if (stage_bytes(p, element) > local_bytes) return std::nullopt;
  return p;
}

void set_tiled_gemm_enabled(bool enabled) { g_enabled.store(enabled); }

void override_tiled_gemm_plan(std::optional<TiledGemmPlan> plan) {
  std::lock_guard<std::mutex> lock(g_override_mutex);
  g_override = plan;
}

bool tiled_gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, double alpha, double beta,
                const at::Tensor& s) {
  const int64_t d = c.dim();
  const int64_t batch = d == 3 ? c.size(0) : 1;
  const int64_t m = c.size(d - 2), n = c.size(d - 1), k = a.size(d - 1);
  const int device = device_index(c);
  if (!g_enabled.load(std::memory_order_relaxed) || !tocl::kernel_forms(device).tiled_gemm) return false;
  // 32-bit sizes and in-matrix indices in the kernel.
  if (m >= (int64_t(1) << 31) || n >= (int64_t(1) << 31) || k >= (int64_t(1) << 31)) return false;
  // An output whose elements overlap (an expanded one) goes to CLBlast's path, which copies it.
  if ((m > 1 && c.stride(d - 2) == 0) || (n > 1 && c.stride(d - 1) == 0) || (d == 3 && batch > 1 && c.stride(0) == 0))
    return false;
  // Local memory holds the compute type (float for float16/bfloat16).
  const size_t acc_size = c10::elementSize(compute_dtype(c.scalar_type()));
  const auto fitted = fit_local_memory(plan_tiled_gemm(device, c.scalar_type(), m, n, k, batch),
                                       tocl::device_info(device).local_mem_size, acc_size);
  if (!fitted) return false;
  const TiledGemmPlan plan = *fitted;
  const int64_t tiles_m = ceil_div(m, 64 * plan.rm), tiles_n = ceil_div(n, 64 * plan.rn);
  if (tiles_n > kMaxGridYZ) return false;
  const int splits = std::max(1, plan.splits);
  // Each split's K range is whole stages.
  const int64_t k_chunk = splits == 1 ? k : ceil_div(ceil_div(k, splits), plan.bk) * plan.bk;
  const int used_splits = static_cast<int>(ceil_div(k, k_chunk));

  const auto stride = [&](const at::Tensor& t, int64_t dim) -> cl_long {
    return t.size(dim) == 1 ? 0 : static_cast<cl_long>(t.stride(dim));
  };
  const bool dbl = c.scalar_type() == at::kDouble;
  const AccArg al(alpha, dbl), be(beta, dbl);
  const int stream = current_stream_of(c);

  // Split K writes each part's product into a workspace of the compute type (batch * splits contiguous
  // matrices of m x n), then adds them and beta * s.
  const tocl::BufferArg s_arg = buffer_arg(s);
  const cl_long s_si = stride(s, d - 2), s_sj = stride(s, d - 1), s_bs = d == 3 ? stride(s, 0) : 0;
  const tocl::BufferArg c_arg = buffer_arg(c);
  const cl_long c_si = stride(c, d - 2), c_sj = stride(c, d - 1), c_bs = d == 3 ? stride(c, 0) : 0;
  const at::Tensor partial = used_splits > 1
      ? at::empty({batch * used_splits, m, n}, c.options().dtype(compute_dtype(c.scalar_type())))
      : c;  // unused without a split
  // Both operands read a VEC4 at a time along their contiguous dimension when every row of it starts
  // 4-element aligned (buffers themselves are aligned far beyond 16 or 32 bytes).
  const tocl::BufferArg a_arg = buffer_arg(a), b_arg = buffer_arg(b);
  const cl_long a_si = stride(a, d - 2), a_sk = stride(a, d - 1), b_sk = stride(b, d - 2), b_sj = stride(b, d - 1);
  const cl_long a_bs = d == 3 ? stride(a, 0) : 0, b_bs = d == 3 ? stride(b, 0) : 0;
  const auto four = [](int64_t v) { return v % 4 == 0; };
  // The kernel walks A along k when a_sk == 1, else along m; B along n unless only b_sk is 1.
  const bool a_rows = a_sk == 1 ? four(a_si) && four(k) : a_si == 1 && four(a_sk) && four(m);
  const bool b_n_inner = b_sj == 1 || b_sk != 1;
  const bool b_rows = b_n_inner ? b_sj == 1 && four(b_sk) && four(n) : four(b_sj) && four(k);
  const bool vec4 = compute_dtype(c.scalar_type()) == c.scalar_type() && a_rows && b_rows &&
                    four(static_cast<int64_t>(a_arg.offset)) &&
                    four(static_cast<int64_t>(b_arg.offset)) && four(a_bs) && four(b_bs);
  const cl_program program = program_for(device, c.scalar_type(), plan, Layout{a_sk == 1, b_n_inner, vec4});
  cl_kernel kernel = tocl::get_kernel(program, "gemm_tiled");
  const int64_t z_total = batch * used_splits;
  for (int64_t z0 = 0; z0 < z_total; z0 += kMaxGridYZ) {
    const int64_t zs = std::min(kMaxGridYZ, z_total - z0);
    tocl::set_args(kernel, a_arg, b_arg, c_arg, s_arg, buffer_arg(partial), static_cast<cl_int>(m),
                   static_cast<cl_int>(n), static_cast<cl_int>(k), a_si, a_sk, b_sk, b_sj, c_si, c_sj, s_si, s_sj, a_bs, b_bs, c_bs, s_bs,
                   static_cast<cl_int>(used_splits), static_cast<cl_int>(k_chunk), al.arg, be.arg,
                   static_cast<cl_ulong>(z0));
    const size_t global[3] = {static_cast<size_t>(tiles_m * kGroupSide), static_cast<size_t>(tiles_n * kGroupSide),
                              static_cast<size_t>(zs)};
    const size_t local[3] = {kGroupSide, kGroupSide, 1};
    tocl::enqueue_3d(device, stream, kernel, global, local);
  }
  if (used_splits > 1) {
    cl_kernel sum = tocl::get_kernel(program, "sum_splits");
    const int64_t total = batch * m * n;
    tocl::set_args(sum, buffer_arg(partial), buffer_arg(c), s_arg, static_cast<cl_int>(m), static_cast<cl_int>(n),
                   static_cast<cl_int>(used_splits), stride(c, d - 2), stride(c, d - 1),
                   d == 3 ? stride(c, 0) : cl_long(0), s_si, s_sj, s_bs, be.arg, static_cast<cl_ulong>(total));
    tocl::enqueue_1d(device, stream, sum, static_cast<size_t>(total), tocl::kernel_forms(device).elementwise_group);
  }
  return true;
}

}  // namespace torch_opencl
