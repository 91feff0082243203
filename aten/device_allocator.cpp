#include "aten/device_allocator.h"

#include <c10/util/Exception.h>

#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/memcpy.h"
#include "runtime/stream.h"

namespace torch_opencl {
namespace {

// A DataPtr's deleter runs in destructors, where an exception would abort the process.
void free_device_memory(void* ptr) { tocl::free_nothrow(ptr); }

c10::CachingDeviceAllocator::DeviceStats to_c10(const tocl::AllocatorStats& s) {
  c10::CachingDeviceAllocator::DeviceStats out;
  auto copy = [](const tocl::StatArray& from, c10::CachingDeviceAllocator::StatArray& to) {
    for (size_t i = 0; i < from.size(); ++i) {
      to[i].current = from[i].current;
      to[i].peak = from[i].peak;
      to[i].allocated = from[i].allocated;
      to[i].freed = from[i].freed;
    }
  };
  copy(s.allocation, out.allocation);
  copy(s.segment, out.segment);
  copy(s.active, out.active);
  copy(s.inactive_split, out.inactive_split);
  copy(s.allocated_bytes, out.allocated_bytes);
  copy(s.reserved_bytes, out.reserved_bytes);
  copy(s.active_bytes, out.active_bytes);
  copy(s.inactive_split_bytes, out.inactive_split_bytes);
  copy(s.requested_bytes, out.requested_bytes);
  out.num_alloc_retries = s.num_alloc_retries;
  out.num_ooms = s.num_ooms;
  out.num_device_alloc = s.num_device_alloc;
  out.num_device_free = s.num_device_free;
  return out;
}

}  // namespace

c10::DataPtr OpenCLDeviceAllocator::allocate(size_t nbytes) {
  const int device = tocl::current_device();
  void* ptr = nullptr;
  try {
    ptr = tocl::allocator(device).allocate(nbytes, tocl::current_stream(device));
  } catch (const tocl::OutOfMemoryError& e) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, e.what());
  }
  return {ptr, ptr, &free_device_memory,
          c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device))};
}

c10::DeleterFnPtr OpenCLDeviceAllocator::raw_deleter() const { return &free_device_memory; }

void OpenCLDeviceAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  const int device = tocl::device_of_address(dest);
  tocl::copy_device_to_device(device, tocl::current_stream(device), dest, src, count);
}

bool OpenCLDeviceAllocator::initialized() { return tocl::device_count() > 0; }

void OpenCLDeviceAllocator::emptyCache(c10::MempoolId_t) {
  for (int d = 0; d < tocl::device_count(); ++d) tocl::allocator(d).empty_cache();
}

void OpenCLDeviceAllocator::recordStream(const c10::DataPtr& ptr, c10::Stream stream) {
  if (!ptr.get()) return;
  tocl::allocator(stream.device_index()).record_stream(ptr.get(), static_cast<int>(stream.id()));
}

c10::CachingDeviceAllocator::DeviceStats OpenCLDeviceAllocator::getDeviceStats(c10::DeviceIndex device) {
  return to_c10(tocl::allocator(device).stats());
}

void OpenCLDeviceAllocator::resetAccumulatedStats(c10::DeviceIndex device) {
  tocl::allocator(device).reset_accumulated_stats();
}

void OpenCLDeviceAllocator::resetPeakStats(c10::DeviceIndex device) { tocl::allocator(device).reset_peak_stats(); }

std::pair<size_t, size_t> OpenCLDeviceAllocator::getMemoryInfo(c10::DeviceIndex device) {
  // OpenCL has no query for free memory: report what this process has not reserved.
  const auto total = tocl::device_info(device).global_mem_size;
  const auto reserved = static_cast<uint64_t>(tocl::allocator(device).stats().reserved_bytes[0].current);
  return {static_cast<size_t>(total > reserved ? total - reserved : 0), static_cast<size_t>(total)};
}

OpenCLDeviceAllocator* device_allocator() {
  static OpenCLDeviceAllocator instance;
  return &instance;
}

// Registered at load time, as CUDA's allocator is.
static const bool registered = [] {
  c10::SetAllocator(c10::DeviceType::PrivateUse1, device_allocator());
  return true;
}();

}  // namespace torch_opencl
