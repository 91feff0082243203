#include "aten/native/gemm_mma.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/device.h"
#include "runtime/embedded_sources.h"
#include "runtime/kernel_forms.h"
#include "runtime/launch.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

constexpr int64_t kTile = 128;        // BM = BN in gemm_mma.cl
constexpr size_t kGroup = 256;        // NT
constexpr uint64_t kLocalBytes = 37888;  // its two stages of As and Bs, for every kind
constexpr int64_t kMaxGridY = 65535;  // NVIDIA's OpenCL maps the grid onto CUDA's

std::mutex g_mutex;
std::map<std::pair<int, c10::ScalarType>, bool> g_unbuildable;  // (device, dtype) the driver failed to build

int mma_kind(c10::ScalarType type) {
  switch (type) {
    case at::kFloat: return 0;
    case at::kBFloat16: return 1;
    case at::kHalf: return 2;
    default: return -1;
  }
}

// The program for one kind and operand layout; nullptr (after one warning per dtype) where the driver cannot
// build it.
cl_program program_for(int device, c10::ScalarType type, bool a_k_inner, bool b_n_inner) {
  static std::map<std::tuple<int, c10::ScalarType, bool, bool>, cl_program> programs;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_unbuildable[{device, type}]) return nullptr;
  auto& program = programs[{device, type, a_k_inner, b_n_inner}];
  if (!program) {
    const std::string source = program_prelude({type}) + operand_defines("T", type) + "#define T " +
                               storage_type(type) + "\n#define RAW " + (type == at::kFloat ? "float" : "ushort") +
                               "\n#define MMA_KIND " + std::to_string(mma_kind(type)) +
                               "\n#define A_K_INNER " + (a_k_inner ? "1" : "0") + "\n#define B_N_INNER " +
                               (b_n_inner ? "1" : "0") + "\n" + tocl::embedded_sources().at("gemm_mma.cl");
    try {
      program = tocl::get_program(device, source);
    } catch (const std::exception& e) {
      g_unbuildable[{device, type}] = true;
      const std::string what = e.what();
      TORCH_WARN("torch_opencl: the driver of opencl:", device, " could not build the ", type, " tensor-core GEMM ",
                 "(kernels_cl/gemm_mma.cl); matrix products go on with the tiled kernel. ",
                 "TORCH_OPENCL_TENSOR_CORES=0 turns it off without this warning. The build said: ",
                 what.substr(0, 400));
      return nullptr;
    }
  }
  return program;
}

bool takes(c10::ScalarType type) {
  if (type == at::kBFloat16 || type == at::kHalf) return true;
  // TF32 keeps 10 of float's 23 mantissa bits: only where the user allowed it, as CUDA's matmul does.
  return type == at::kFloat &&
         at::globalContext().float32MatmulPrecision() != at::Float32MatmulPrecision::HIGHEST;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

bool mma_gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, double alpha, double beta,
              const at::Tensor& s) {
  const int device = device_index(c);
  const auto& forms = tocl::kernel_forms(device);
  if (!forms.tensor_core_gemm || !takes(c.scalar_type())) return false;
  const int64_t d = c.dim();
  const int64_t batch = d == 3 ? c.size(0) : 1;
  const int64_t m = c.size(d - 2), n = c.size(d - 1), k = a.size(d - 1);
  if (m >= (int64_t(1) << 31) || n >= (int64_t(1) << 31) || k >= (int64_t(1) << 31)) return false;
  if ((m > 1 && c.stride(d - 2) == 0) || (n > 1 && c.stride(d - 1) == 0) || (d == 3 && batch > 1 && c.stride(0) == 0))
    return false;
  const uint64_t local = tocl::device_info(device).local_mem_size;
  if (local != 0 && local < kLocalBytes) return false;
  const int64_t tiles_m = ceil_div(m, kTile), tiles = tiles_m * ceil_div(n, kTile);
  // Few tiles over a deep K leave compute units idle: the tiled kernel splits K there.
  if (tiles * batch * 2 < static_cast<int64_t>(forms.compute_units) && k > 2048) return false;

  const auto stride = [&](const at::Tensor& t, int64_t dim) -> cl_long {
    return t.size(dim) == 1 ? 0 : static_cast<cl_long>(t.stride(dim));
  };
  const cl_long a_si = stride(a, d - 2), a_sk = stride(a, d - 1), b_sk = stride(b, d - 2), b_sj = stride(b, d - 1);
  const cl_long c_si = stride(c, d - 2), c_sj = stride(c, d - 1), s_si = stride(s, d - 2), s_sj = stride(s, d - 1);
  const cl_long a_bs = d == 3 ? stride(a, 0) : 0, b_bs = d == 3 ? stride(b, 0) : 0;
  const cl_long c_bs = d == 3 ? stride(c, 0) : 0, s_bs = d == 3 ? stride(s, 0) : 0;
  const bool a_k_inner = a_sk == 1;
  const bool b_n_inner = b_sj == 1 || b_sk != 1;
  const cl_program program = program_for(device, c.scalar_type(), a_k_inner, b_n_inner);
  if (!program) return false;

  const tocl::BufferArg a_arg = buffer_arg(a), b_arg = buffer_arg(b);
  // One vector load per 4-element group where every group along the contiguous dimension starts 4-element
  // aligned: the other stride, the batch stride and the offset multiples of 4, and the walked stride 1.
  const auto four = [](int64_t v) { return v % 4 == 0; };
  const bool a_vec = a_k_inner ? four(a_si) : a_si == 1 && four(a_sk);
  const bool b_vec = b_n_inner ? b_sj == 1 && four(b_sk) : b_sk == 1 && four(b_sj);
  const bool vec4 = a_vec && b_vec && four(a_bs) && four(b_bs) && four(static_cast<int64_t>(a_arg.offset)) &&
                    four(static_cast<int64_t>(b_arg.offset));
  cl_kernel kernel = tocl::get_kernel(program, "gemm_mma");
  const int stream = current_stream_of(c);
  for (int64_t z0 = 0; z0 < batch; z0 += kMaxGridY) {
    const int64_t zs = std::min(kMaxGridY, batch - z0);
    tocl::set_args(kernel, a_arg, b_arg, buffer_arg(c), buffer_arg(s), static_cast<cl_int>(m), static_cast<cl_int>(n),
                   static_cast<cl_int>(k), a_si, a_sk, b_sk, b_sj, c_si, c_sj, s_si, s_sj, a_bs, b_bs, c_bs, s_bs,
                   static_cast<cl_float>(alpha), static_cast<cl_float>(beta), static_cast<cl_ulong>(z0),
                   static_cast<cl_int>(tiles_m), static_cast<cl_int>(vec4));
    const size_t global[3] = {static_cast<size_t>(tiles) * kGroup, static_cast<size_t>(zs), 1};
    const size_t local_size[3] = {kGroup, 1, 1};
    tocl::enqueue_3d(device, stream, kernel, global, local_size);
  }
  return true;
}

}  // namespace torch_opencl
