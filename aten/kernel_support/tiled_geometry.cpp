#include "aten/kernel_support/tiled_geometry.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "runtime/embedded_sources.h"
#include "runtime/error.h"
#include "runtime/kernel_forms.h"
#include "runtime/launch.h"

namespace torch_opencl {
namespace {

constexpr int kMaxOps = 4;

// Mirrors TiledGeometry in kernels_cl/tiled_index.cl for SIDX_T = I and NOPS = N.
template <typename I, int N>
struct Geometry {
  I sizes[kTiledMaxDims];
  I strides[N][kTiledMaxDims];
  I tiles[3];
  cl_int ndim;
  cl_int shift[3];
};

int log2_ceil(int64_t v) {
  int s = 0;
  while ((int64_t{1} << s) < v) ++s;
  return s;
}

template <typename I, int N>
void pack(const int64_t* sizes, const int64_t (*strides)[kTiledMaxDims], int ndim, const int64_t* tiles,
          const int* shift, TiledLaunch& launch) {
  Geometry<I, N> g{};
  for (int d = 0; d < kTiledMaxDims; ++d) {
    g.sizes[d] = static_cast<I>(d < ndim ? sizes[d] : 1);
    for (int t = 0; t < N; ++t) g.strides[t][d] = static_cast<I>(d < ndim ? strides[t][d] : 0);
  }
  for (int k = 0; k < 3; ++k) {
    g.tiles[k] = static_cast<I>(tiles[k]);
    g.shift[k] = shift[k];
  }
  g.ndim = ndim;
  static_assert(sizeof(g) <= sizeof(launch.bytes), "TiledGeometry exceeds its buffer");
  std::memcpy(launch.bytes.data(), &g, sizeof(g));
  launch.size = sizeof(g);
}

}  // namespace

bool force_index64() {
  static const bool forced = [] {
    const char* v = std::getenv("TORCH_OPENCL_DEBUG_INDEX64");
    return v != nullptr && v[0] == '1';
  }();
  return forced;
}

bool tiled_launch(const at::TensorIteratorBase& iter, int nops, TiledLaunch& launch) {
  TORCH_INTERNAL_ASSERT(nops == 2 || nops == 4);
  TORCH_INTERNAL_ASSERT(iter.ntensors() <= nops);
  const int ndim = iter.ndim();
  if (ndim > kTiledMaxDims) return false;
  int64_t sizes[kTiledMaxDims];
  int64_t strides[kMaxOps][kTiledMaxDims] = {};
  const auto shape = iter.shape();
  for (int d = 0; d < ndim; ++d) sizes[d] = shape[d];
  for (int t = 0; t < iter.ntensors(); ++t) {
    if (iter.is_cpu_scalar(t)) continue;
    for (int d = 0; d < ndim; ++d) strides[t][d] = iter.strides(t)[d] / iter.element_size(t);
  }
  // A 0-d iterator is one element.
  const int dims = ndim == 0 ? 1 : ndim;
  if (ndim == 0) sizes[0] = 1;
  // The group: the device's elementwise group (a power of two), as log2.
  const int group_shift = log2_ceil(static_cast<int64_t>(tocl::kernel_forms(iter.device(0).index()).elementwise_group));
  launch.group_shift = group_shift;

  // Tile widths: along dim 0 up to the whole group where every operand steps by at most one
  // element there (runs stay contiguous), else 16, so that a transpose reads and writes 16x16
  // blocks; dim 1 takes what dim 0 leaves (up to its size where a dim 2 follows); dim 2 the rest.
  bool unit0 = true;
  for (int t = 0; t < nops; ++t) unit0 = unit0 && std::llabs(strides[t][0]) <= 1;
  int shift[3] = {0, 0, 0};
  shift[0] = std::min(log2_ceil(sizes[0]), unit0 ? group_shift : std::min(4, group_shift));
  if (dims == 1) shift[0] = group_shift;
  if (dims >= 2) {
    const int left = group_shift - shift[0];
    shift[1] = dims == 2 ? left : std::min(log2_ceil(sizes[1]), left);
  }
  if (dims >= 3) shift[2] = group_shift - shift[0] - shift[1];
  int64_t tiles[3] = {1, 1, 1};
  for (int k = 0; k < std::min(dims, 3); ++k) tiles[k] = (sizes[k] + (int64_t{1} << shift[k]) - 1) >> shift[k];
  int64_t outer = 1;
  for (int d = 4; d < dims; ++d) outer *= sizes[d];
  const int64_t groups = tiles[0] * tiles[1] * tiles[2];
  launch.global[0] = static_cast<size_t>(groups) << group_shift;
  launch.global[1] = static_cast<size_t>(dims > 3 ? sizes[3] : 1);
  launch.global[2] = static_cast<size_t>(outer);

  // 32-bit index math where every index, linear index and offset fits in an int.
  constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
  bool index64 = force_index64() || static_cast<int64_t>(launch.global[0]) > kMax || iter.numel() > kMax ||
                 groups * launch.global[1] * launch.global[2] > kMax;
  for (int t = 0; t < nops && !index64; ++t) {
    int64_t extent = 0;
    for (int d = 0; d < dims; ++d) extent += (sizes[d] - 1) * std::llabs(strides[t][d]);
    // Lanes past the shape compute (unused) offsets up to a tile further along dims 0..2.
    for (int k = 0; k < std::min(dims, 3); ++k) extent += (int64_t{1} << shift[k]) * std::llabs(strides[t][k]);
    index64 = extent > kMax;
  }
  launch.index64 = index64;
  launch.nd = dims > 5;
  if (nops == 2) {
    if (index64) pack<cl_long, 2>(sizes, strides, dims, tiles, shift, launch);
    else pack<cl_int, 2>(sizes, strides, dims, tiles, shift, launch);
  } else {
    if (index64) pack<cl_long, 4>(sizes, strides, dims, tiles, shift, launch);
    else pack<cl_int, 4>(sizes, strides, dims, tiles, shift, launch);
  }
  return true;
}

std::string tiled_kernel_name(const char* base, const TiledLaunch& launch) {
  return launch.nd ? std::string(base) + "_nd" : std::string(base);
}

std::string tiled_source(int nops, bool index64) {
  std::string s = "#define MAX_DIMS " + std::to_string(kTiledMaxDims) + "\n#define NOPS " + std::to_string(nops) + "\n";
  // Where work-items are vectorised (-DTOCL_LINE_LANES, runtime/kernel_forms.h), a signed index: with an
  // unsigned one, neighbouring items' addresses might wrap, so Intel's compiler made every contiguous load a
  // gather (x + y of 1M floats: 395 us, 73 with int). Every value fits either way (the host checks int32/int64).
  s += index64 ? "#if TOCL_LINE_LANES > 1\n#define IDX_T long\n#else\n#define IDX_T ulong\n#endif\n#define SIDX_T long\n"
               : "#if TOCL_LINE_LANES > 1\n#define IDX_T int\n#else\n#define IDX_T uint\n#endif\n#define SIDX_T int\n";
  s += tocl::embedded_sources().at("tiled_index.cl");
  return s;
}

void enqueue_tiled(int device, int stream, cl_kernel k, cl_uint index, const TiledLaunch& launch) {
  TOCL_CHECK(clSetKernelArg(k, index, launch.size, launch.bytes.data()));
  const size_t local[3] = {size_t{1} << launch.group_shift, 1, 1};
  tocl::enqueue_3d(device, stream, k, launch.global, local);
}

int line_steps(const at::TensorIteratorBase& iter, uint32_t skip) {
  constexpr int64_t kMinLine = 16;
  if (iter.ndim() < 1 || iter.shape()[0] < kMinLine || iter.strides(0)[0] != iter.element_size(0)) return -1;
  int steps = 0;
  for (int k = 0; k < iter.ninputs(); ++k) {
    if (skip & (1u << k)) continue;
    const int64_t stride = iter.strides(k + 1)[0];
    if (stride == iter.element_size(k + 1)) steps |= 1 << k;
    else if (stride != 0) return -1;
  }
  return steps;
}

void enqueue_lines(int device, int stream, cl_kernel k, cl_uint geometry_index, cl_uint runs_index,
                   const TiledLaunch& launch, const at::TensorIteratorBase& iter, int64_t run) {
  const int64_t line = iter.shape()[0];
  const int64_t chunks = (line + run - 1) / run;
  const int64_t runs = iter.numel() / line * chunks;
  TOCL_CHECK(clSetKernelArg(k, geometry_index, launch.size, launch.bytes.data()));
  const cl_long run_args[3] = {runs, chunks, run};
  for (const cl_long& v : run_args) TOCL_CHECK(clSetKernelArg(k, runs_index++, sizeof(v), &v));
  tocl::enqueue_runs(device, stream, k, runs);
}

}  // namespace torch_opencl
