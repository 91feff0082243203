#include "runtime/kernel_forms.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/item_vectorisation.h"

namespace tocl {
namespace {

// A 0/1 environment variable, if set; throws tocl::Error for another value.
std::optional<bool> flag_from_env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  const std::string s(v);
  if (s == "0" || s == "1") return s == "1";
  throw Error(std::string(name) + "='" + s + "': use 1 (on), 0 (off), or leave it unset for the device's default.");
}

KernelForms choose(int device, const DeviceInfo& d) {
  KernelForms f;
  if (const auto forced = kernel_class_from_env()) {
    f.kernel_class = *forced;
    f.reason = std::string("TORCH_OPENCL_KERNEL_CLASS=") + kernel_class_name(*forced);
  } else {
    // Accelerators and GPUs are throughput devices; only a CPU device gets the CPU forms.
    f.kernel_class = (d.type & CL_DEVICE_TYPE_CPU) ? KernelClass::cpu : KernelClass::gpu;
    f.reason = "device type " + d.type_name();
  }
  f.simd_width = d.simd_width;
  f.compute_units = d.compute_units ? d.compute_units : 1;
  const size_t max_group = d.max_work_group_size ? d.max_work_group_size : 64;
  if (f.gpu()) {
    f.row_group = std::min<size_t>(256, max_group);
    f.cpu_register_gemm = false;
    f.tiled_gemm = max_group >= 256;
    f.conv_batch_folded = true;
  } else {
    f.row_group = std::min<size_t>(64, max_group);
    f.cpu_register_gemm = true;
    f.cpu_gemm_vector_width = d.native_float_width >= 16 ? 16 : 8;
    f.cpu_gemm_rows = f.cpu_gemm_vector_width == 16 ? 8 : 6;
    f.cpu_gemm_nt_rows = 4;
    f.cpu_gemm_nt_cols = f.cpu_gemm_vector_width == 16 ? 4 : 2;
  }
  // Both classes. PoCL (CPU class, 2-core EPYC, medians of 9, ms; im2col + GEMM -> Winograd): forward /
  // input gradient, batch 16 of 64 channels at 32x32 18.4 -> 12.9 / 27.5 -> 11.8, of 128 at 16x16 9.2 -> 6.6 /
  // 13.4 -> 6.7; batch 32 of 32 -> 64 channels at 32x32 15.7 -> 13.2 / 28.3 -> 17.2; the digits CNN's 16 -> 32
  // at 8x8 (batch 64) 1.23 -> 1.06 / 1.42 -> 1.43.
  f.conv_winograd = true;
  // PoCL, the transforms a tile per item -> a row of tiles per item, us: input 352 -> 285 for the digits CNN's
  // 64x16x8x8, 16582 -> 12135 for 128x128x16x16; output 187 -> 141, 8094 -> 5350.
  f.winograd_lines = !f.gpu();
  // Groups of the per-element kernels and the tree reductions: powers of two (the trees halve them), at
  // most 256 and the device's limit.
  size_t pow2_group = 1;
  while (pow2_group * 2 <= std::min<size_t>(256, max_group)) pow2_group *= 2;
  f.elementwise_group = pow2_group;
  // Reductions, scans, segmented sums: the GPU forms (see kernel_forms.h).
  f.reduce_coalesced = f.gpu();
  f.scan_parallel = f.gpu();
  f.sorted_segment_sums = f.gpu();
  f.sort_chunk_merges = !f.gpu();
  f.quickselect_rows = !f.gpu();
  f.private_bin_counts = !f.gpu();
  f.reduce_group = pow2_group;
  f.reduce_fill_groups = std::max<size_t>(64, 4 * static_cast<size_t>(d.compute_units));

  f.copy_lines = !f.gpu();
  f.conv_depthwise_rows = !f.gpu();
  f.pointwise_lines = !f.gpu();

  // The CPU forms' runs follow how the implementation vectorises (kernel_forms.h). On Intel's CPU runtime (2-core
  // EPYC, medians of 40, us; a run per item -> 16 lanes a run): cat of two 1024x1024 floats 5116 -> 229,
  // index_select of rows 2409 -> 132, repeat 1513 -> 79; docs/performance.md has the tables.
  const auto lanes = item_vectorisation(device, d);
  f.vectorises_items = lanes.across_items;
  f.lanes_reason = lanes.reason;
  f.line_lanes = f.vectorises_items && !f.gpu() ? std::max<size_t>(16, d.simd_width) : 1;
  if (const char* v = std::getenv("TORCH_OPENCL_LINE_LANES"); v && *v) {
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end != '\0' || n < 1 || n > 64 || (n & (n - 1)))
      throw Error("TORCH_OPENCL_LINE_LANES='" + std::string(v) +
                  "': use a power of two from 1 (a work-item walks each run alone) to 64, or leave it unset for "
                  "the implementation's default.");
    f.line_lanes = static_cast<size_t>(n);
    f.lanes_reason = "TORCH_OPENCL_LINE_LANES=" + std::string(v);
  }
  if (f.line_lanes > 1) f.build_options += "-DTOCL_LINE_LANES=" + std::to_string(f.line_lanes) + " ";
  // 16 elements a work-item as float16 vectors pay where a work-item's loop is vectorised (PoCL); where items
  // are, the plain kernel of an element an item is already a vector loop.
  f.pointwise_vectors = !f.gpu() && !f.vectorises_items;

  // PoCL, 16 elements an item: _foreach_sqrt over bench_training's MLP parameters took 4x a per-tensor
  // sqrt per tensor, and AdamW's foreach step over 6 large parameters 12.1 ms (1024: 4.4 ms;
  // bench/bench_foreach.py --params 6 --scale 8).
  f.foreach_per_item = f.gpu() ? 16 : 1024;

  // Row-wise families (softmax, layer norm, batch norm): their GPU forms need a power-of-two group.
  f.row_gpu_forms = f.gpu() && (f.row_group & (f.row_group - 1)) == 0;
  f.line_items = 8;
  f.column_lines = std::min<size_t>(16, f.row_group);  // 64 bytes of floats: whole 32-byte sectors
  f.busy_groups = 8 * std::max<size_t>(1, d.compute_units);

  // Attention's GPU form: two NVIDIA warps (one AMD wavefront) of rows per group; its tiles take at
  // most half the local memory, so two groups fit on a compute unit. The CPU form: small groups (of 64
  // rows), so that small problems still spread over the cores.
  f.attention_tiled = f.gpu();
  f.attention_rows = 1;
  while (f.attention_rows * 2 <= std::min<size_t>(f.gpu() ? 64 : 4, max_group)) f.attention_rows *= 2;
  f.attention_tile_bytes = std::max<size_t>(4096, (d.local_mem_size ? d.local_mem_size : 32768) / 2);
  // H100, causal forward + backward (bench_attention.py --sweep): the fused kernels took 0.52-0.63x the
  // math path's time at head dim 32 (seq 64-1024), 1.4-1.6x at 64 and 11x at 128 (seq 1024). On PoCL the
  // CPU form took 0.33x and 0.76x the math path's time at head dims 16 and 64.
  f.attention_fused_max_head_dim = f.gpu() ? 32 : 128;

  f.linalg_serial_max = f.gpu() ? 16 : 64;

  const char* sync_checks = std::getenv("TORCH_OPENCL_SYNC_INDEX_CHECKS");
  f.deferred_index_checks = f.gpu() && !(sync_checks && std::string(sync_checks) == "1");

  f.tensor_core_gemm =
      flag_from_env("TORCH_OPENCL_TENSOR_CORES").value_or(f.gpu() && f.tiled_gemm && d.nv_compute_capability >= 80);

  const bool pocl_cpu = (d.type & CL_DEVICE_TYPE_CPU) && d.is_pocl();
  f.own_float_math = flag_from_env("TORCH_OPENCL_OWN_FLOAT_MATH").value_or(pocl_cpu);
  if (f.own_float_math) f.build_options += "-DTOCL_OWN_FLOAT_MATH";
  while (!f.build_options.empty() && f.build_options.back() == ' ') f.build_options.pop_back();
  // PoCL: a fill kernel wins from 1 MiB (24 us against 76) and ties at 256 KiB; copies break even at 4 MiB.
  if (pocl_cpu) {
    f.kernel_fill_min_bytes = size_t(512) << 10;
    f.kernel_copy_min_bytes = size_t(4) << 20;
  }
  return f;
}

}  // namespace

std::optional<KernelClass> kernel_class_from_env() {
  const char* v = std::getenv("TORCH_OPENCL_KERNEL_CLASS");
  if (!v || !*v) return std::nullopt;
  std::string s(v);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "cpu") return KernelClass::cpu;
  if (s == "gpu") return KernelClass::gpu;
  throw Error("TORCH_OPENCL_KERNEL_CLASS='" + std::string(v) +
              "' names no kernel class: use 'cpu' (kernels shaped for CPU devices) or 'gpu' (for GPUs "
              "and accelerators), or leave it unset to choose by the device's type.");
}

const char* kernel_class_name(KernelClass c) { return c == KernelClass::gpu ? "gpu" : "cpu"; }

namespace {
std::mutex g_forms_mutex;
std::vector<std::unique_ptr<KernelForms>> g_forms;

KernelForms& forms_of(int device) {
  const DeviceInfo& info = device_info(device);  // range-checked
  std::lock_guard<std::mutex> lock(g_forms_mutex);
  if (g_forms.size() <= static_cast<size_t>(device)) g_forms.resize(device + 1);
  if (!g_forms[device]) g_forms[device] = std::make_unique<KernelForms>(choose(device, info));
  return *g_forms[device];
}
}  // namespace

const KernelForms& kernel_forms(int device) { return forms_of(device); }

void set_gemm_tiles(int device, KernelForms::GemmTile large, KernelForms::GemmTile small) {
  for (const auto& t : {large, small}) {
    const bool ok =
        (t.rm == 1 || t.rm == 2) && (t.rn == 1 || t.rn == 2) && (t.bk == 4 || t.bk == 8 || t.bk == 16 || t.bk == 32);
    if (!ok)
      throw Error("tiled GEMM tile rm=" + std::to_string(t.rm) + " rn=" + std::to_string(t.rn) + " bk=" +
                  std::to_string(t.bk) + " has no kernel form: rm and rn must be 1 or 2, bk 4, 8, 16 or 32");
  }
  KernelForms& f = forms_of(device);
  std::lock_guard<std::mutex> lock(g_forms_mutex);
  f.gemm_large = large;
  f.gemm_small = small;
}

void set_winograd_min_channels(int device, size_t channels) {
  KernelForms& f = forms_of(device);
  std::lock_guard<std::mutex> lock(g_forms_mutex);
  f.winograd_min_channels = channels;
}

}  // namespace tocl
