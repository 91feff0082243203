#include "runtime/item_vectorisation.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "runtime/error.h"
#include "runtime/program_cache.h"
#include "runtime/stream.h"

namespace tocl {
namespace {

// The same copy-and-scale of `run`-element runs in the two layouts the line forms take: a work-item per run
// (its loop vectorised, or not), and kLanes consecutive items per run, lane l taking elements l, l + kLanes, ...
constexpr unsigned kLanes = 16;
constexpr unsigned kRun = 1024;
constexpr size_t kRuns = 4096;  // 4M floats: 16 MB each way, past the caches
const char* kSource = R"CL(
__kernel void per_item(__global float* dst, __global const float* src) {
  const size_t first = get_global_id(0) * RUN;
  for (uint j = 0; j < RUN; ++j) dst[first + j] = src[first + j] * 2.0f + 1.0f;
}
__kernel void across_items(__global float* dst, __global const float* src) {
  const size_t id = get_global_id(0);
  const size_t first = (id / LANES) * (RUN * LANES) + id % LANES;
  for (uint j = 0; j < RUN; ++j) dst[first + j * LANES] = src[first + j * LANES] * 2.0f + 1.0f;
}
)CL";

struct Released {
  cl_program program = nullptr;
  cl_command_queue queue = nullptr;
  cl_mem a = nullptr, b = nullptr;
  cl_kernel k[2] = {nullptr, nullptr};
  ~Released() {
    for (cl_kernel x : k)
      if (x) clReleaseKernel(x);
    if (a) clReleaseMemObject(a);
    if (b) clReleaseMemObject(b);
    if (queue) clReleaseCommandQueue(queue);
    if (program) clReleaseProgram(program);
  }
};

// The best of five runs of kernel k over `items` work-items, in microseconds (after one that warms up).
double best_us(cl_command_queue q, cl_kernel k, size_t items) {
  const size_t local = 64;
  double best = 1e300;
  for (int rep = 0; rep < 6; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    TOCL_CHECK(clEnqueueNDRangeKernel(q, k, 1, nullptr, &items, &local, 0, nullptr, nullptr));
    TOCL_CHECK(clFinish(q));
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (rep > 0) best = std::min(best, us);
  }
  return best;
}

std::string cache_file(const DeviceInfo& info) {
  const std::string dir = cache_dir();
  if (dir.empty()) return "";
  return dir + "/item-vectorisation-" +
         hash_hex(info.name + '\n' + info.platform_name + '\n' + info.driver_version + '\n' + info.device_version) +
         ".txt";
}

}  // namespace

ItemVectorisationTimes measure_item_vectorisation(int device, const DeviceInfo& info) {
  Released r;
  cl_int status = CL_SUCCESS;
  const cl_context ctx = context(device);
  const size_t length = std::char_traits<char>::length(kSource);
  r.program = clCreateProgramWithSource(ctx, 1, &kSource, &length, &status);
  TOCL_CHECK(status);
  const std::string options = "-w -DRUN=" + std::to_string(kRun) + "u -DLANES=" + std::to_string(kLanes) + "u";
  TOCL_CHECK(clBuildProgram(r.program, 1, &info.id, options.c_str(), nullptr, nullptr));
  r.queue = clCreateCommandQueue(ctx, info.id, 0, &status);
  TOCL_CHECK(status);
  const size_t bytes = kRuns * kRun * sizeof(float);
  r.a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, nullptr, &status);
  TOCL_CHECK(status);
  r.b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, nullptr, &status);
  TOCL_CHECK(status);
  const float zero = 0;
  TOCL_CHECK(clEnqueueFillBuffer(r.queue, r.b, &zero, sizeof(zero), 0, bytes, 0, nullptr, nullptr));
  const char* names[2] = {"per_item", "across_items"};
  for (int i = 0; i < 2; ++i) {
    r.k[i] = clCreateKernel(r.program, names[i], &status);
    TOCL_CHECK(status);
    TOCL_CHECK(clSetKernelArg(r.k[i], 0, sizeof(cl_mem), &r.a));
    TOCL_CHECK(clSetKernelArg(r.k[i], 1, sizeof(cl_mem), &r.b));
  }
  ItemVectorisationTimes t;
  t.per_item_us = best_us(r.queue, r.k[0], kRuns);
  t.across_items_us = best_us(r.queue, r.k[1], kRuns);
  t.across_items = t.across_items_us < t.per_item_us;
  return t;
}

ItemVectorisation item_vectorisation(int device, const DeviceInfo& info) {
  if (!(info.type & CL_DEVICE_TYPE_CPU)) return {true, "a GPU or accelerator runs work-items in lanes"};
  if (info.is_pocl()) return {false, "PoCL vectorises a work-item's loops"};
  if (info.platform_name.find("Intel") != std::string::npos)
    return {true, "Intel's CPU runtime vectorises across work-items"};
  const std::string path = cache_file(info);
  if (!path.empty()) {
    std::ifstream in(path);
    std::string word;
    if (in >> word && (word == "across" || word == "loop"))
      return {word == "across", "measured once, kept in " + path};
  }
  const ItemVectorisationTimes t = measure_item_vectorisation(device, info);
  if (!path.empty() && make_private_dirs(cache_dir())) std::ofstream(path) << (t.across_items ? "across\n" : "loop\n");
  char reason[160];
  std::snprintf(reason, sizeof(reason), "measured: runs across items %.0f us, a run per item %.0f us",
                t.across_items_us, t.per_item_us);
  return {t.across_items, reason};
}

}  // namespace tocl
