#include "runtime/launch.h"

#include <atomic>
#include <mutex>

#include "runtime/trace.h"

namespace tocl {
namespace {
std::atomic<uint64_t> launches{0};

std::atomic<bool> recording{false};
std::mutex recorded_mutex;
std::vector<std::string> recorded;

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
  if (local == 0) local = 64;
  const size_t rounded = (global + local - 1) / local * local;
  count_launch(kernel);
  trace::Scope traced(device, stream, kernel);
  TOCL_CHECK(clEnqueueNDRangeKernel(queue(device, stream), kernel, 1, nullptr, &rounded, &local, 0, nullptr,
                                    traced.event()));
}

void enqueue_3d(int device, int stream, cl_kernel kernel, const size_t global[3], const size_t local[3]) {
  if (global[0] == 0 || global[1] == 0 || global[2] == 0) return;
  count_launch(kernel);
  trace::Scope traced(device, stream, kernel);
  TOCL_CHECK(clEnqueueNDRangeKernel(queue(device, stream), kernel, 3, nullptr, global, local, 0, nullptr,
                                    traced.event()));
}

void enqueue_nd(int device, int stream, cl_kernel kernel, cl_uint dims, const size_t* global, const size_t* local) {
  for (cl_uint d = 0; d < dims; ++d)
    if (global[d] == 0) return;
  count_launch(kernel);
  trace::Scope traced(device, stream, kernel);
  TOCL_CHECK(clEnqueueNDRangeKernel(queue(device, stream), kernel, dims, nullptr, global, local, 0, nullptr,
                                    traced.event()));
}

}  // namespace tocl
