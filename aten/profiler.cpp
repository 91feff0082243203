// Profiler stubs for PrivateUse1: per-operator device time from OpenCL
// profiling events. The profiler records an event on the current stream when an
// operator starts and ends; the time between their markers is the device time
// of the work the operator enqueued (torch.autograd.profiler.profile(
// use_device="opencl") reports it as the operator's device time).
#include <torch/csrc/profiler/stubs/base.h>

#include <c10/util/ApproximateClock.h>

#include <functional>
#include <memory>

#include "runtime/device.h"
#include "runtime/event.h"
#include "runtime/stream.h"

namespace torch_opencl {
namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

struct OpenCLProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event, int64_t* cpu_ns) const override {
    const int index = tocl::current_device();
    if (device) *device = static_cast<c10::DeviceIndex>(index);
    auto marker = std::make_shared<tocl::Event>();
    marker->record(index, tocl::current_stream(index));
    *event = std::static_pointer_cast<void>(marker);
    if (cpu_ns) *cpu_ns = c10::getTime();
  }

  // Microseconds, as the CUDA stubs answer.
  float elapsed(const ProfilerVoidEventStub* start, const ProfilerVoidEventStub* end) const override {
    const auto* a = static_cast<const tocl::Event*>(start->get());
    const auto* b = static_cast<const tocl::Event*>(end->get());
    return static_cast<float>(a->elapsed_ms(*b) * 1000.0);
  }

  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    const int previous = tocl::current_device();
    for (int d = 0; d < tocl::device_count(); ++d) {
      tocl::set_current_device(d);
      op(d);
    }
    tocl::set_current_device(previous);
  }

  void synchronize() const override {
    for (int d = 0; d < tocl::device_count(); ++d) tocl::synchronize_device(d);
  }
};

const bool registered = [] {
  static OpenCLProfilerStubs stubs;
  torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  return true;
}();

}  // namespace
}  // namespace torch_opencl
