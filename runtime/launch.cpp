#include "runtime/launch.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>

#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/kernel_forms.h"
#include "runtime/trace.h"

namespace tocl {
namespace {
std::atomic<uint64_t> launches{0};

std::atomic<bool> recording{false};
std::mutex recorded_mutex;
std::vector<std::string> recorded;

// A group past the device's limit would fail in the driver as CL_INVALID_WORK_GROUP_SIZE or
// CL_INVALID_WORK_ITEM_SIZE; this names the kernel and both numbers.
void check_group(cl_kernel kernel, size_t items, size_t limit) {
  if (limit == 0 || items <= limit) return;
  throw Error("kernel " + trace::kernel_name(kernel) + ": a work-group of " + std::to_string(items) +
              " work-items exceeds the device's limit of " + std::to_string(limit) + " per group");
}

void count_launch(cl_kernel kernel) {
  launches.fetch_add(1, std::memory_order_relaxed);
  if (!recording.load(std::memory_order_relaxed)) return;
  auto name = trace::kernel_name(kernel);
  std::lock_guard<std::mutex> lock(recorded_mutex);
  recorded.push_back(std::move(name));
}
}  // namespace

uint64_t launch_count() { return launches.load(std::memory_order_relaxed); }

void record_kernel_names(bool on) {
  std::lock_guard<std::mutex> lock(recorded_mutex);
  if (on) recorded.clear();
  recording.store(on);
}

std::vector<std::string> recorded_kernel_names() {
  std::lock_guard<std::mutex> lock(recorded_mutex);
  return recorded;
}

void enqueue_1d(int device, int stream, cl_kernel kernel, size_t global, size_t local) {
  if (global == 0) return;
  const size_t limit = device_info(device).max_work_group_size;
  if (local == 0) local = limit ? std::min<size_t>(64, limit) : 64;  // 64, or fewer where the device allows no more
  const size_t rounded = (global + local - 1) / local * local;
  check_group(kernel, local, limit);
  count_launch(kernel);
  trace::Scope traced(device, stream, kernel);
  TOCL_CHECK(clEnqueueNDRangeKernel(queue(device, stream), kernel, 1, nullptr, &rounded, &local, 0, nullptr,
                                    traced.event()));
}

void enqueue_runs(int device, int stream, cl_kernel kernel, size_t runs) {
  const size_t lanes = kernel_forms(device).line_lanes;
  if (lanes <= 1) return enqueue_1d(device, stream, kernel, runs);
  if (runs == 0) return;
  // RUN_GROUP (256, kernels_cl/prelude.cl) items a group, or as many as the device allows.
  const size_t limit = device_info(device).max_work_group_size;
  const size_t per_group = std::max<size_t>(1, std::min<size_t>(256, limit ? limit : 256) / lanes);
  const size_t global[3] = {lanes, (runs + per_group - 1) / per_group * per_group, 1};
  const size_t local[3] = {lanes, per_group, 1};
  enqueue_3d(device, stream, kernel, global, local);
}

void enqueue_3d(int device, int stream, cl_kernel kernel, const size_t global[3], const size_t local[3]) {
  if (global[0] == 0 || global[1] == 0 || global[2] == 0) return;
  if (local) check_group(kernel, local[0] * local[1] * local[2], device_info(device).max_work_group_size);
  count_launch(kernel);
  trace::Scope traced(device, stream, kernel);
  TOCL_CHECK(clEnqueueNDRangeKernel(queue(device, stream), kernel, 3, nullptr, global, local, 0, nullptr,
                                    traced.event()));
}

void enqueue_nd(int device, int stream, cl_kernel kernel, cl_uint dims, const size_t* global, const size_t* local) {
  for (cl_uint d = 0; d < dims; ++d)
    if (global[d] == 0) return;
  if (local) {
    size_t items = 1;
    for (cl_uint d = 0; d < dims; ++d) items *= local[d];
    check_group(kernel, items, device_info(device).max_work_group_size);
  }
  count_launch(kernel);
  trace::Scope traced(device, stream, kernel);
  TOCL_CHECK(clEnqueueNDRangeKernel(queue(device, stream), kernel, dims, nullptr, global, local, 0, nullptr,
                                    traced.event()));
}

}  // namespace tocl
