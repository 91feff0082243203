#include "aten/native/gemm_small.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
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

// Every size by default: measured on PoCL 3.1, 2-core AVX-512 (bench/bench_gemm_shapes.py, same process,
// round-robin), the kernel beat tuned CLBlast on every training-benchmark product (2-30x) and on squares
// n = 256..2048 (e.g. n = 1024: 80 vs 168 ms under heavy load).
constexpr int64_t kSmallGemmLimit = int64_t(1) << 62;

std::atomic<int64_t>& limit_value() {
  static std::atomic<int64_t> value([] {
    const char* v = std::getenv("TORCH_OPENCL_SMALL_GEMM_LIMIT");
    return v && *v ? std::atoll(v) : kSmallGemmLimit;
  }());
  return value;
}

struct Config {
  int vw;  // elements per vector (VW)
  int tm;  // rows per work-item (TM)
};

// Vectors as wide as the device's native float vectors (kernel_forms), half as many doubles.
Config config_of(int device, c10::ScalarType type) {
  const auto& forms = tocl::kernel_forms(device);  // set wherever serves(device)
  const int floats = forms.cpu_gemm_vector_width;
  return {type == at::kDouble ? floats / 2 : floats, forms.cpu_gemm_rows};
}

cl_program program_for(int device, c10::ScalarType type, const Config& cfg) {
  static std::mutex mutex;
  static std::map<std::tuple<int, c10::ScalarType>, cl_program> programs;
  std::lock_guard<std::mutex> lock(mutex);
  auto& program = programs[{device, type}];
  if (!program) {
    const std::string source = program_prelude({type}) + "#define T " + storage_type(type) + "\n#define VW " +
                               std::to_string(cfg.vw) + "\n#define TM " + std::to_string(cfg.tm) + "\n" +
                               tocl::embedded_sources().at("gemm.cl");
    program = tocl::get_program(device, source);
  }
  return program;
}

bool serves(int device) { return tocl::kernel_forms(device).cpu_register_gemm; }

// B's panels (batch, tiles_n, K, NC) contiguous, NC columns per tile (zeros past N): the tile kernels then
// stream each panel in order, whatever B's layout or leading dimension.
at::Tensor pack_panels(cl_program program, const at::Tensor& b, int64_t k, int64_t n, int64_t nc, cl_long sbk,
                       cl_long sbn, cl_long sbb, int64_t pack_batch) {
  const int device = device_index(b);
  const int64_t tiles_n = (n + nc - 1) / nc;
  at::Tensor packed = at::empty({pack_batch * tiles_n * k * nc}, b.options());
  const tocl::BufferArg b_arg = buffer_arg(b);
  if (sbk == 1 && sbn != 1 && k <= 256) {
    // A transposed B read along its columns: about 2x faster than by rows for k <= 256 (q @ k^T,
    // transposed weights of linear layers); slower for longer columns (k = 512, 784) in a few runs.
    cl_kernel pk = tocl::get_kernel(program, "pack_b_columns");
    tocl::set_args(pk, b_arg, buffer_arg(packed), static_cast<cl_int>(n), static_cast<cl_int>(k), sbn, sbb,
                   static_cast<cl_int>(tiles_n), static_cast<cl_int>(pack_batch), static_cast<cl_int>(nc));
    tocl::enqueue_1d(device, current_stream_of(b), pk, static_cast<size_t>(pack_batch * tiles_n * nc), 16);
  } else {
    cl_kernel pk = tocl::get_kernel(program, "pack_b");
    tocl::set_args(pk, b_arg, buffer_arg(packed), static_cast<cl_int>(n), static_cast<cl_int>(k), sbk, sbn, sbb,
                   static_cast<cl_int>(tiles_n), static_cast<cl_int>(pack_batch), static_cast<cl_int>(nc));
    tocl::enqueue_1d(device, current_stream_of(b), pk, static_cast<size_t>(pack_batch * tiles_n * k), 64);
  }
  return packed;
}

}  // namespace

// B's rows are read as vectors. B is first packed into contiguous panels of its column tiles (k * n per
// matrix, once for an expanded batch) when its columns are not adjacent (a transposed weight), when its last
// tile is partial (else read element by element), and when large panels are reused by many row tiles
// (streamed in order rather than a leading dimension apart). TORCH_OPENCL_SMALL_GEMM_PACK=0/1 forces it
// off/on (for measurements).
bool small_gemm_packs_b(int64_t m, int64_t n, int64_t k, int64_t sbn, int64_t nc) {
  static const int pack_mode = [] {
    const char* v = std::getenv("TORCH_OPENCL_SMALL_GEMM_PACK");
    return v && *v ? std::atoi(v) : -1;
  }();
  return pack_mode == 1 || (pack_mode == -1 && n > 1 && (sbn != 1 || n % nc != 0 || (m >= 256 && k >= 256)));
}

at::Tensor small_gemm_pack_b(const at::Tensor& b, int64_t nc) {
  TORCH_CHECK(b.dim() == 2 && b.scalar_type() == at::kFloat, "small_gemm_pack_b: B must be a 2-D float32 tensor");
  const int device = device_index(b);
  TORCH_CHECK(serves(device), "small_gemm_pack_b: this device's kernel class has no register GEMM");
  const Config cfg = config_of(device, b.scalar_type());
  TORCH_CHECK(nc == cfg.vw || nc == 2 * cfg.vw, "small_gemm_pack_b: tiles of ", nc, " columns; the device's are ",
              cfg.vw, " or ", 2 * cfg.vw);
  const auto stride = [&](int64_t dim) -> cl_long { return b.size(dim) == 1 ? 0 : static_cast<cl_long>(b.stride(dim)); };
  return pack_panels(program_for(device, b.scalar_type(), cfg), b, b.size(0), b.size(1), nc, stride(0), stride(1), 0, 1);
}

int64_t small_gemm_limit() { return limit_value().load(); }
void set_small_gemm_limit(int64_t limit) { limit_value().store(limit); }

bool small_gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, double alpha, double beta,
                const at::Tensor& s) {
  const int64_t d = c.dim();
  const int64_t batch = d == 3 ? c.size(0) : 1;
  const int64_t m = c.size(d - 2), n = c.size(d - 1), k = a.size(d - 1);
  const int device = device_index(c);
  if (m * n * k > small_gemm_limit() || !serves(device)) return false;
  const Config cfg = config_of(device, c.scalar_type());
  const bool wide = n > cfg.vw;
  const int64_t tiles_n = (n + (wide ? 2 : 1) * cfg.vw - 1) / ((wide ? 2 : 1) * cfg.vw);
  const int64_t tiles_m = (m + cfg.tm - 1) / cfg.tm;
  const int64_t total = tiles_n * tiles_m * batch;
  const int64_t nc = (wide ? 2 : 1) * cfg.vw;  // columns per tile
  // Work-item numbers are 32-bit (pack_b's: one per batch entry, column tile and k).
  if (total >= (int64_t(1) << 31) || k * tiles_n * batch >= (int64_t(1) << 31)) return false;
  // An output whose elements overlap (an expanded one) goes to CLBlast's path, which copies it.
  if ((m > 1 && c.stride(d - 2) == 0) || (n > 1 && c.stride(d - 1) == 0) || (d == 3 && batch > 1 && c.stride(0) == 0))
    return false;
  const auto stride = [&](const at::Tensor& t, int64_t dim) -> cl_long {
    return t.size(dim) == 1 ? 0 : static_cast<cl_long>(t.stride(dim));
  };
  const cl_long sab = d == 3 ? stride(a, 0) : 0, scb = d == 3 ? stride(c, 0) : 0, ssb = d == 3 ? stride(s, 0) : 0;
  cl_long sbk = stride(b, d - 2), sbn = stride(b, d - 1), sbb = d == 3 ? stride(b, 0) : 0;
  const cl_program program = program_for(device, c.scalar_type(), cfg);
  const bool dbl = c.scalar_type() == at::kDouble;
  const bool pack = small_gemm_packs_b(m, n, k, sbn, nc);
  tocl::BufferArg b_arg = buffer_arg(b);
  at::Tensor packed;
  if (pack) {
    const int64_t pack_batch = sbb == 0 ? 1 : batch;
    packed = pack_panels(program, b, k, n, nc, sbk, sbn, sbb, pack_batch);
    b_arg = buffer_arg(packed);
    sbk = nc;
    sbn = 1;
    sbb = pack_batch == 1 ? 0 : tiles_n * k * nc;
  }
  cl_kernel kernel = tocl::get_kernel(program, wide ? "gemm_tile_wide" : "gemm_tile_narrow");
  const AccArg al(alpha, dbl), be(beta, dbl);
  tocl::set_args(kernel, buffer_arg(a), b_arg, buffer_arg(c), buffer_arg(s), static_cast<cl_int>(m),
                 static_cast<cl_int>(n), static_cast<cl_int>(k), stride(a, d - 2), stride(a, d - 1), sbk, sbn,
                 stride(c, d - 2), stride(c, d - 1), stride(s, d - 2), stride(s, d - 1), sab, sbb, scb, ssb,
                 static_cast<cl_int>(tiles_m), static_cast<cl_int>(tiles_n), static_cast<cl_int>(batch), al.arg, be.arg,
                 static_cast<cl_int>(pack));
  // Work-groups of 4 tiles (measured a little faster than 1 on PoCL), single tiles when there are few to
  // spread over the cores.
  const size_t wg = total >= 64 ? 4 : 1;
  tocl::enqueue_1d(device, current_stream_of(c), kernel, static_cast<size_t>(total), wg);
  return true;
}

}  // namespace torch_opencl
