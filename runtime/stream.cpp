#include "runtime/stream.h"

#include <array>
#include <chrono>
#include <thread>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/deferred_errors.h"
#include "runtime/error.h"
#include "runtime/event.h"
#include "runtime/fork.h"

namespace tocl {
namespace {

struct DeviceQueues {
  std::once_flag context_once;
  cl_context context = nullptr;
  std::mutex mutex;  // guards lazy queue creation
  std::array<std::atomic<cl_command_queue>, kStreamPoolSize> queues{};  // written once, under mutex
  std::atomic<int> next_pool_stream{0};
};

std::vector<std::unique_ptr<DeviceQueues>>& all_devices() {
  // Sized once; device contexts and queues live until the process exits, as CUDA's do.
  static std::vector<std::unique_ptr<DeviceQueues>> devices = [] {
    std::vector<std::unique_ptr<DeviceQueues>> v;
    for (int i = 0; i < device_count(); ++i) v.push_back(std::make_unique<DeviceQueues>());
    return v;
  }();
  return devices;
}

DeviceQueues& device_queues(int device) {
  device_info(device);  // range check with a readable message
  return *all_devices()[device];
}

void check_stream(int stream_id) {
  if (stream_id < 0 || stream_id >= kStreamPoolSize)
    throw Error("OpenCL stream id " + std::to_string(stream_id) + " is out of range 0.." +
                std::to_string(kStreamPoolSize - 1) + ".");
}

thread_local int tls_current_device = 0;
thread_local std::array<int, 64> tls_current_stream{};

}  // namespace

cl_context context(int device) {
  check_not_in_bad_fork();  // the driver's threads and contexts do not survive fork()
  auto& d = device_queues(device);
  std::call_once(d.context_once, [&] {
    const auto& info = device_info(device);
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(info.platform), 0};
    cl_int status = CL_SUCCESS;
    d.context = clCreateContext(props, 1, &info.id, nullptr, nullptr, &status);
    TOCL_CHECK(status);
  });
  return d.context;
}

cl_command_queue queue(int device, int stream_id) {
  check_stream(stream_id);
  auto& d = device_queues(device);
  // Every launch asks: a created queue is read without the lock.
  if (cl_command_queue q = d.queues[stream_id].load(std::memory_order_acquire)) {
    check_not_in_bad_fork();
    return q;
  }
  cl_context ctx = context(device);
  std::lock_guard<std::mutex> lock(d.mutex);
  auto& q = d.queues[stream_id];
  if (!q.load(std::memory_order_relaxed)) {
    cl_int status = CL_SUCCESS;
    cl_command_queue created = clCreateCommandQueue(ctx, device_info(device).id, CL_QUEUE_PROFILING_ENABLE, &status);
    TOCL_CHECK(status);
    q.store(created, std::memory_order_release);
  }
  return q.load(std::memory_order_relaxed);
}

int stream_from_pool(int device) {
  auto& d = device_queues(device);
  return 1 + d.next_pool_stream.fetch_add(1) % (kStreamPoolSize - 1);
}

int current_stream(int device) {
  if (device < 0 || device >= static_cast<int>(tls_current_stream.size())) return 0;
  return tls_current_stream[device];
}

void set_current_stream(int device, int stream_id) {
  check_stream(stream_id);
  device_info(device);
  tls_current_stream[device] = stream_id;
}

int current_device() { return tls_current_device; }

void set_current_device(int device) {
  device_info(device);
  tls_current_device = device;
}

void synchronize_stream(int device, int stream_id) {
  TOCL_CHECK(clFinish(queue(device, stream_id)));
  raise_recorded_errors(device, stream_id);
}

void synchronize_device(int device) {
  auto& d = device_queues(device);
  std::vector<cl_command_queue> created;
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    for (auto& q : d.queues)
      if (cl_command_queue created_queue = q.load()) created.push_back(created_queue);
  }
  for (auto q : created) TOCL_CHECK(clFinish(q));
  raise_recorded_errors(device, -1);
}

bool stream_query(int device, int stream_id) {
  Event marker;
  marker.record(device, stream_id);
  // A marker behind finished work still takes the driver a moment to complete (PoCL runs it on its
  // scheduler thread): give it up to 2 ms so an idle stream answers true, as cudaStreamQuery does.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
  while (!marker.query()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace tocl
