// The opencl device's activities in torch.profiler (Kineto): a libkineto::IActivityProfiler registered
// through PyTorch's PrivateUse1ProfilerRegistry. While a session records, every kernel launch, copy and
// fill on an opencl queue carries a profiling event (runtime/trace.h) tagged with the correlation id of
// the CPU operator that enqueued it. When the session's trace is processed the device timestamps
// (CL_PROFILING_COMMAND_START/END, device clock) are moved onto the host clock and become
// CONCURRENT_KERNEL / GPU_MEMCPY / GPU_MEMSET activities linked to their operator, beside a
// PRIVATEUSE1_RUNTIME activity for the enqueue call itself (as cudaLaunchKernel is shown for CUDA).
// Every queue is created with CL_QUEUE_PROFILING_ENABLE (runtime/stream.cpp); without an active session
// the enqueue points request no event.
//
// Compiled with USE_KINETO and torch's libkineto headers (CMakeLists.txt); the symbols it uses are
// exported by libtorch_cpu.
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <libkineto.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/device.h"
#include "runtime/stream.h"
#include "runtime/trace.h"

namespace torch_opencl {
namespace {

using libkineto::ActivityType;

// Correlation ids Kineto pushes around each CPU operator, per thread (the thread that enqueues).
thread_local std::vector<uint64_t> tls_correlation;

struct Recorded {
  tocl::trace::Command command;
  uint64_t correlation;
  int32_t thread;  // system thread id of the enqueuing thread
};

class OpenCLSession;
std::mutex g_mutex;                   // guards g_recording
OpenCLSession* g_recording = nullptr;  // the session whose start() ran and stop() has not

void record(tocl::trace::Command&& command);

const char* runtime_call_name(const tocl::trace::Command& c) {
  if (c.kind == tocl::trace::Kind::Kernel) return "clEnqueueNDRangeKernel";
  if (c.kind == tocl::trace::Kind::Memset) return "clEnqueueFillBuffer";
  if (c.name == "Memcpy HtoD") return "clEnqueueWriteBuffer";
  if (c.name == "Memcpy DtoH") return "clEnqueueReadBuffer";
  return "clEnqueueCopyBuffer";
}

// Host (CLOCK_REALTIME) minus device clock, in ns, bracketed by markers: a marker cannot start before
// its enqueue call began nor end after clFinish returned, and its QUEUED stamp (where the driver sets one)
// falls inside the enqueue call. The tightest of a few brackets gives the offset (within ~2 us on PoCL).
int64_t host_minus_device_ns(int device) {
  cl_command_queue queue = tocl::queue(device, 0);
  clFinish(queue);
  int64_t best = 0, best_width = -1;
  for (int attempt = 0; attempt < 3; ++attempt) {
    cl_event marker = nullptr;
    const int64_t t0 = tocl::trace::host_time_ns();
    if (clEnqueueMarkerWithWaitList(queue, 0, nullptr, &marker) != CL_SUCCESS) break;
    const int64_t t1 = tocl::trace::host_time_ns();
    clFinish(queue);
    const int64_t t2 = tocl::trace::host_time_ns();
    cl_ulong queued = 0, start = 0, end = 0;
    clGetEventProfilingInfo(marker, CL_PROFILING_COMMAND_QUEUED, sizeof(queued), &queued, nullptr);
    clGetEventProfilingInfo(marker, CL_PROFILING_COMMAND_START, sizeof(start), &start, nullptr);
    clGetEventProfilingInfo(marker, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr);
    clReleaseEvent(marker);
    int64_t lo = t0 - static_cast<int64_t>(start), hi = t2 - static_cast<int64_t>(end);
    if (queued > 0 && queued <= start) {
      lo = std::max(lo, t0 - static_cast<int64_t>(queued));
      hi = std::min(hi, t1 - static_cast<int64_t>(queued));
    }
    const int64_t width = hi > lo ? hi - lo : 0;
    if (best_width < 0 || width < best_width) {
      best_width = width;
      best = lo + (hi - lo) / 2;
    }
  }
  return best;
}

class OpenCLSession final : public libkineto::IActivityProfilerSession {
 public:
  explicit OpenCLSession(const std::set<ActivityType>& types)
      : kernels_(types.count(ActivityType::CONCURRENT_KERNEL) > 0),
        memcpy_(types.count(ActivityType::GPU_MEMCPY) > 0),
        memset_(types.count(ActivityType::GPU_MEMSET) > 0),
        runtime_(types.count(ActivityType::PRIVATEUSE1_RUNTIME) > 0) {}

  ~OpenCLSession() override {
    detach();
    for (auto& r : recorded_)
      if (r.command.event) clReleaseEvent(r.command.event);
  }

  void start() override {
    tls_correlation.clear();
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      g_recording = this;
    }
    tocl::trace::set_recorder(&record);
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    detach();
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return errors_; }

  void add(Recorded&& r) {
    std::lock_guard<std::mutex> lock(mutex_);
    recorded_.push_back(std::move(r));
  }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked_op,
                    int64_t window_start, int64_t window_end) override {
    std::vector<Recorded> recorded;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      recorded.swap(recorded_);
    }
    buffer_ = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer_->span = libkineto::TraceSpan(window_start, window_end, "opencl");
    buffer_->gpuOpCount = 0;
    std::map<int, int64_t> offsets;  // per device: host clock minus device clock
    const int32_t pid = libkineto::processId();
    for (auto& r : recorded) {
      const auto& c = r.command;
      cl_ulong start = 0, end = 0;
      const bool timed = clWaitForEvents(1, &c.event) == CL_SUCCESS &&
                         clGetEventProfilingInfo(c.event, CL_PROFILING_COMMAND_START, sizeof(start), &start,
                                                 nullptr) == CL_SUCCESS &&
                         clGetEventProfilingInfo(c.event, CL_PROFILING_COMMAND_END, sizeof(end), &end, nullptr) ==
                             CL_SUCCESS;
      clReleaseEvent(c.event);
      if (!timed) {
        errors_.push_back("an OpenCL event of '" + c.name + "' gave no profiling times");
        continue;
      }
      auto offset = offsets.find(c.device);
      if (offset == offsets.end()) offset = offsets.emplace(c.device, host_minus_device_ns(c.device)).first;
      streams_.insert({c.device, c.stream});
      const auto* op = r.correlation ? linked_op(static_cast<int32_t>(r.correlation)) : nullptr;
      const uint32_t flow = ++flows_;

      if (runtime_) {
        auto& call = emplace(ActivityType::PRIVATEUSE1_RUNTIME, runtime_call_name(c));
        call.startTime = c.enqueue_begin_ns;
        call.endTime = c.enqueue_end_ns;
        call.id = static_cast<int32_t>(r.correlation);
        call.device = pid;
        call.resource = r.thread;
        call.threadId = r.thread;
        call.linked = op;
        call.flow.id = flow;
        call.flow.type = libkineto::kLinkAsyncCpuGpu;
        call.flow.start = true;
        call.log(logger);
      }
      const ActivityType type = c.kind == tocl::trace::Kind::Kernel   ? ActivityType::CONCURRENT_KERNEL
                                : c.kind == tocl::trace::Kind::Memcpy ? ActivityType::GPU_MEMCPY
                                                                      : ActivityType::GPU_MEMSET;
      if ((type == ActivityType::CONCURRENT_KERNEL && !kernels_) || (type == ActivityType::GPU_MEMCPY && !memcpy_) ||
          (type == ActivityType::GPU_MEMSET && !memset_))
        continue;
      auto& act = emplace(type, c.name);
      act.startTime = static_cast<int64_t>(start) + offset->second;
      act.endTime = std::max(static_cast<int64_t>(end) + offset->second, act.startTime);
      act.id = static_cast<int32_t>(r.correlation);
      act.device = c.device;
      act.resource = c.stream;
      act.threadId = c.stream;
      act.linked = op;
      if (runtime_) {
        act.flow.id = flow;
        act.flow.type = libkineto::kLinkAsyncCpuGpu;
        act.flow.start = false;
      }
      act.addMetadata("device", c.device);
      act.addMetadata("stream", c.stream);
      act.addMetadata("correlation", r.correlation);
      act.log(logger);
      ++buffer_->gpuOpCount;
    }
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    if (streams_.empty()) return nullptr;  // nothing ran: do not name (and initialise) a device
    const int device = streams_.begin()->first;
    return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{
        device, device, "opencl:" + std::to_string(device), tocl::device_info(device).name});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> infos;
    for (const auto& [device, stream] : streams_)
      infos.push_back(libkineto::ResourceInfo{stream, stream, device, "stream " + std::to_string(stream)});
    return infos;
  }

  // Kineto takes the activities (the logger only holds pointers to them).
  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return std::move(buffer_); }

  void pushCorrelationId(uint64_t id) override { tls_correlation.push_back(id); }
  void popCorrelationId() override {
    if (!tls_correlation.empty()) tls_correlation.pop_back();
  }

 private:
  void detach() {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_recording == this) {
      g_recording = nullptr;
      tocl::trace::set_recorder(nullptr);
    }
  }

  libkineto::GenericTraceActivity& emplace(ActivityType type, const std::string& name) {
    buffer_->emplace_activity(buffer_->span, type, name);
    return *buffer_->activities.back();
  }

  const bool kernels_, memcpy_, memset_, runtime_;
  std::mutex mutex_;  // guards recorded_
  std::vector<Recorded> recorded_;
  std::vector<std::string> errors_;
  std::set<std::pair<int, int>> streams_;
  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_;
  uint32_t flows_ = 0;
};

void record(tocl::trace::Command&& command) {
  const uint64_t correlation = tls_correlation.empty() ? 0 : tls_correlation.back();
  const int32_t thread = libkineto::systemThreadId();
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_recording) {
    clReleaseEvent(command.event);
    return;
  }
  g_recording->add(Recorded{std::move(command), correlation, thread});
}

class OpenCLActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<ActivityType>& availableActivities() const override { return types_; }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<ActivityType>& activity_types,
                                                                 const libkineto::Config&) override {
    std::set<ActivityType> wanted;
    for (auto t : activity_types)
      if (types_.count(t)) wanted.insert(t);
    if (wanted.empty()) return nullptr;
    return std::make_unique<OpenCLSession>(wanted);
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t, int64_t,
                                                                 const std::set<ActivityType>& activity_types,
                                                                 const libkineto::Config& config) override {
    return configure(activity_types, config);
  }

 private:
  const std::string name_{"opencl"};
  const std::set<ActivityType> types_{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY,
                                      ActivityType::GPU_MEMSET, ActivityType::PRIVATEUSE1_RUNTIME};
};

REGISTER_PRIVATEUSE1_PROFILER(OpenCLActivityProfiler);

}  // namespace
}  // namespace torch_opencl
