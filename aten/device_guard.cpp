// The device guard: current device and stream, and events, for
// c10::DeviceGuard, torch.Stream and torch.Event on opencl.
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/event.h"
#include "runtime/stream.h"

namespace torch_opencl {
namespace {

constexpr auto kOpenCL = c10::DeviceType::PrivateUse1;

// torch.Stream(device="opencl") and torch.Event pass index -1: the current device.
c10::DeviceIndex resolve(c10::DeviceIndex device) {
  return device < 0 ? static_cast<c10::DeviceIndex>(tocl::current_device()) : device;
}

c10::Stream make_stream(c10::DeviceIndex device, int id) {
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kOpenCL, resolve(device)), static_cast<c10::StreamId>(id));
}

struct OpenCLGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kOpenCL; }

  c10::Device exchangeDevice(c10::Device d) const override {
    const auto old = getDevice();
    if (d.index() != old.index()) setDevice(d);
    return old;
  }

  c10::Device getDevice() const override {
    return c10::Device(kOpenCL, static_cast<c10::DeviceIndex>(tocl::current_device()));
  }

  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kOpenCL, "Expected an opencl device, got ", d);
    if (d.index() >= 0) tocl::set_current_device(d.index());
  }

  void uncheckedSetDevice(c10::Device d) const noexcept override {
    try {
      if (d.index() >= 0) tocl::set_current_device(d.index());
    } catch (...) {
    }
  }

  c10::Stream getStream(c10::Device d) const override {
    return make_stream(d.index(), tocl::current_stream(resolve(d.index())));
  }

  c10::Stream getDefaultStream(c10::Device d) const override { return make_stream(d.index(), 0); }

  c10::Stream getStreamFromGlobalPool(c10::Device d, bool = false) const override {
    return make_stream(d.index(), tocl::stream_from_pool(resolve(d.index())));
  }

  c10::Stream getNewStream(c10::Device d, int = 0) const override {
    return make_stream(d.index(), tocl::stream_from_pool(resolve(d.index())));
  }

  c10::Stream exchangeStream(c10::Stream s) const override {
    const auto old = getStream(s.device());
    tocl::set_current_stream(s.device_index(), static_cast<int>(s.id()));
    return old;
  }

  c10::DeviceIndex deviceCount() const noexcept override {
    try {
      return static_cast<c10::DeviceIndex>(tocl::device_count());
    } catch (...) {
      return 0;  // required not to throw; a bad selection is reported by torch.opencl calls
    }
  }

  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    delete static_cast<tocl::Event*>(event);
  }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
                "Event device index ", device_index, " does not match the stream's device ", stream.device());
    if (!*event) *event = new tocl::Event();
    static_cast<tocl::Event*>(*event)->record(stream.device_index(), static_cast<int>(stream.id()));
  }

  void block(void* event, const c10::Stream& stream) const override {
    if (!event) return;
    static_cast<tocl::Event*>(event)->wait(stream.device_index(), static_cast<int>(stream.id()));
  }

  bool queryEvent(void* event) const override {
    return !event || static_cast<tocl::Event*>(event)->query();
  }

  bool queryStream(const c10::Stream& stream) const override {
    return tocl::stream_query(stream.device_index(), static_cast<int>(stream.id()));
  }

  void synchronizeStream(const c10::Stream& stream) const override {
    tocl::synchronize_stream(stream.device_index(), static_cast<int>(stream.id()));
  }

  void synchronizeEvent(void* event) const override {
    if (event) static_cast<tocl::Event*>(event)->synchronize();
  }

  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    tocl::synchronize_device(device_index < 0 ? tocl::current_device() : device_index);
  }

  void recordDataPtrOnStream(const c10::DataPtr& data_ptr, const c10::Stream& stream) const override {
    if (data_ptr.get())
      tocl::allocator(stream.device_index()).record_stream(data_ptr.get(), static_cast<int>(stream.id()));
  }

  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    TORCH_CHECK(start && end, "elapsed_time needs both events to have been recorded");
    return static_cast<tocl::Event*>(start)->elapsed_ms(*static_cast<tocl::Event*>(end));
  }
};

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, OpenCLGuardImpl);

}  // namespace torch_opencl
