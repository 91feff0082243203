#include "runtime/trace.h"

#include <time.h>

#include <utility>

namespace tocl::trace {
namespace detail {
std::atomic<Recorder> recorder{nullptr};
}

void set_recorder(Recorder recorder) { detail::recorder.store(recorder); }

int64_t host_time_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

std::string kernel_name(cl_kernel kernel) {
  size_t size = 0;
  if (clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &size) != CL_SUCCESS || size <= 1) return "kernel";
  std::string name(size, '\0');
  clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, size, name.data(), nullptr);
  name.resize(size - 1);  // drop the terminating NUL
  return name;
}

Scope::Scope(int device, int stream, Kind kind, const char* name)
    : recorder_(detail::recorder.load(std::memory_order_relaxed)) {
  if (!recorder_) return;
  command_.device = device;
  command_.stream = stream;
  command_.kind = kind;
  command_.name = name;
  command_.enqueue_begin_ns = host_time_ns();
}

Scope::Scope(int device, int stream, cl_kernel kernel)
    : recorder_(detail::recorder.load(std::memory_order_relaxed)) {
  if (!recorder_) return;
  command_.device = device;
  command_.stream = stream;
  command_.kind = Kind::Kernel;
  command_.name = kernel_name(kernel);
  command_.enqueue_begin_ns = host_time_ns();
}

Scope::~Scope() {
  if (!recorder_ || !command_.event) return;
  command_.enqueue_end_ns = host_time_ns();
  recorder_(std::move(command_));
}

}  // namespace tocl::trace
