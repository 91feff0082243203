// PrivateUse1 hooks: what ATen asks of any accelerator (availability, device
// count, generators, pointers, storage resizing).
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Storage.h>
#include <c10/util/Exception.h>

#include "aten/device_allocator.h"
#include "aten/generator.h"
#include "aten/host_allocator.h"
#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/host_allocator.h"
#include "runtime/memcpy.h"
#include "runtime/stream.h"

namespace torch_opencl {
namespace {

struct OpenCLHooks final : public at::PrivateUse1HooksInterface {
  void init() const override { tocl::device_count(); }  // raises the selection error, if any, here
  bool isBuilt() const override { return true; }
  bool isAvailable() const override {
    try {
      return tocl::device_count() > 0;
    } catch (...) {
      return false;
    }
  }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override { return static_cast<c10::DeviceIndex>(tocl::device_count()); }
  void setCurrentDevice(c10::DeviceIndex device) const override { tocl::set_current_device(device); }
  c10::DeviceIndex getCurrentDevice() const override { return static_cast<c10::DeviceIndex>(tocl::current_device()); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const auto old = getCurrentDevice();
    if (device >= 0) tocl::set_current_device(device);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override { return exchangeDevice(device); }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device) const override {
    return default_generator(device);
  }
  at::Generator getNewGenerator(c10::DeviceIndex device) const override {
    // torch.Generator("opencl") passes -1: the current device, as CUDA does.
    if (device < 0) device = static_cast<c10::DeviceIndex>(tocl::current_device());
    return at::make_generator<OpenCLGeneratorImpl>(device);
  }

  at::Device getDeviceFromPtr(void* data) const override {
    const int device = tocl::device_of_address(data);
    TORCH_CHECK(device >= 0, "The pointer ", data, " is not an opencl device address");
    return at::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device));
  }

  bool isPinnedPtr(const void* data) const override { return tocl::is_pinned(data); }
  c10::Allocator* getPinnedMemoryAllocator() const override { return host_allocator(); }

  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override {
    TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
    const size_t old_bytes = storage.nbytes();
    const auto device = storage.device().index();
    c10::DataPtr new_data;
    if (new_bytes > 0) {
      const c10::DeviceGuard guard(storage.device());  // the allocator serves the current device
      new_data = device_allocator()->allocate(new_bytes);
    }
    const size_t keep = std::min(old_bytes, new_bytes);
    if (keep > 0 && storage.data())
      tocl::copy_device_to_device(device, tocl::current_stream(device), new_data.get(), storage.data(), keep);
    auto* impl = storage.unsafeGetStorageImpl();
    impl->set_data_ptr_noswap(std::move(new_data));
    impl->set_nbytes(new_bytes);
  }
};

const bool registered = [] {
  static OpenCLHooks hooks;
  at::RegisterPrivateUse1HooksInterface(&hooks);
  return true;
}();

}  // namespace
}  // namespace torch_opencl
