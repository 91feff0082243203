#include "runtime/host_allocator.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <map>
#include <string>
#include <mutex>
#include <vector>

#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/event.h"
#include "runtime/host_memory_limit.h"
#include "runtime/stream.h"

namespace tocl {
namespace {

// The last asynchronous copy of a block on one stream. Streams are in-order queues, so that copy
// finishing means every earlier one on the stream has finished too: one event per stream is enough.
// Copies enqueued faster than the device runs them wait in the driver's queue (PoCL holds ~50 bytes a
// command): as CUDA's bounded queue does, the host waits once a block has this many in flight on a stream.
constexpr int kCopiesInFlight = 512;

struct StreamUse {
  int device = -1;
  int stream = -1;
  Event event;       // after the last copy
  Event checkpoint;  // after the copy kCopiesInFlight before the last checkpoint's
  int since_checkpoint = 0;
};

struct HostBlock {
  size_t size = 0;
  cl_mem buffer = nullptr;      // the mapped buffer, or nullptr for plain aligned memory
  bool in_use = false;
  std::vector<StreamUse> uses;  // asynchronous copies still to finish, the last one per stream
};

constexpr size_t kPage = 4096;

// Power-of-two sizes, as CUDA's host allocator uses, so freed blocks fit later requests.
size_t bin_size(size_t bytes) {
  size_t size = kPage;
  while (size < bytes) size <<= 1;
  return size;
}

struct HostAllocator {
  std::mutex mutex;
  std::map<void*, HostBlock> blocks;          // by address
  std::multimap<size_t, void*> free_blocks;   // by size
  HostAllocatorStats stats;

  // Memory from the driver: a mapped host-side buffer on device 0 where there is one.
  void* create(size_t size, cl_mem* buffer) {
    *buffer = nullptr;
    // Past the process's memory limit the driver's mapping would fail where PoCL asserts.
    const std::string refusal = host_limit_refusal(size);
    if (!refusal.empty())
      throw OutOfMemoryError("Out of host memory: could not allocate " + std::to_string(size) +
                             " bytes of pinned memory: " + refusal + ".");
    if (device_count() > 0) {
      cl_int status = CL_SUCCESS;
      cl_mem mem = clCreateBuffer(context(0), CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, size, nullptr, &status);
      if (status == CL_SUCCESS) {
        void* ptr = clEnqueueMapBuffer(queue(0, 0), mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, size, 0, nullptr,
                                       nullptr, &status);
        if (status == CL_SUCCESS) {
          *buffer = mem;
          return ptr;
        }
        clReleaseMemObject(mem);
      }
    }
    void* ptr = nullptr;
    if (posix_memalign(&ptr, kPage, size) != 0 || !ptr)
      throw OutOfMemoryError("Out of host memory: could not allocate " + std::to_string(size) +
                             " bytes of pinned memory.");
    return ptr;
  }

  void destroy(void* ptr, HostBlock& block) {
    if (block.buffer) {
      clEnqueueUnmapMemObject(queue(0, 0), block.buffer, ptr, 0, nullptr, nullptr);
      clFinish(queue(0, 0));
      clReleaseMemObject(block.buffer);
    } else {
      std::free(ptr);
    }
    stats.num_host_free++;
    stats.reserved_bytes -= static_cast<int64_t>(block.size);
  }

  static bool idle(HostBlock& block) {
    for (const auto& use : block.uses)
      if (!use.event.query()) return false;
    block.uses.clear();
    return true;
  }

  std::map<void*, HostBlock>::iterator containing(const void* ptr) {
    auto it = blocks.upper_bound(const_cast<void*>(ptr));
    if (it == blocks.begin()) return blocks.end();
    --it;
    const auto* start = static_cast<const char*>(it->first);
    return static_cast<const char*>(ptr) < start + it->second.size ? it : blocks.end();
  }
};

HostAllocator& host() {
  static HostAllocator* instance = new HostAllocator();  // lives past static destruction: tensors may outlive it
  return *instance;
}

}  // namespace

void* host_alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  auto& h = host();
  const size_t size = bin_size(bytes);
  std::lock_guard<std::mutex> lock(h.mutex);
  for (auto it = h.free_blocks.lower_bound(size); it != h.free_blocks.end() && it->first == size; ++it) {
    HostBlock& block = h.blocks.at(it->second);
    if (!HostAllocator::idle(block)) continue;
    void* ptr = it->second;
    h.free_blocks.erase(it);
    block.in_use = true;
    h.stats.allocated_bytes += static_cast<int64_t>(size);
    return ptr;
  }
  cl_mem buffer = nullptr;
  void* ptr = h.create(size, &buffer);
  h.blocks[ptr] = HostBlock{size, buffer, true, {}};
  h.stats.num_host_alloc++;
  h.stats.reserved_bytes += static_cast<int64_t>(size);
  h.stats.allocated_bytes += static_cast<int64_t>(size);
  return ptr;
}

void host_free(void* ptr) {
  if (!ptr) return;
  auto& h = host();
  std::lock_guard<std::mutex> lock(h.mutex);
  auto it = h.blocks.find(ptr);
  if (it == h.blocks.end() || !it->second.in_use)
    throw Error("host_free: the address is not a pinned block in use (freed twice?).");
  it->second.in_use = false;
  h.stats.allocated_bytes -= static_cast<int64_t>(it->second.size);
  h.free_blocks.emplace(it->second.size, ptr);
}

bool is_pinned(const void* ptr) {
  auto& h = host();
  std::lock_guard<std::mutex> lock(h.mutex);
  auto it = h.containing(ptr);
  return it != h.blocks.end() && it->second.in_use;
}

void host_record_use(const void* ptr, int device, int stream) {
  auto& h = host();
  Event wait_for;  // waited on outside the lock, so other threads' pinned memory does not wait with it
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    auto it = h.containing(ptr);
    if (it == h.blocks.end()) return;
    // A buffer that stays pinned and is copied again and again (a prefetch's staging buffer) keeps one
    // event per stream, not one per copy.
    auto& uses = it->second.uses;
    auto use = std::find_if(uses.begin(), uses.end(),
                            [&](const StreamUse& u) { return u.device == device && u.stream == stream; });
    if (use == uses.end()) {
      uses.push_back(StreamUse{device, stream, Event(), Event(), 0});
      use = std::prev(uses.end());
    }
    use->event.record(device, stream);
    if (++use->since_checkpoint >= kCopiesInFlight) {
      wait_for = std::move(use->checkpoint);  // at most 2 * kCopiesInFlight copies stay queued
      use->checkpoint = use->event;
      use->since_checkpoint = 0;
    }
  }
  wait_for.synchronize();
}

void host_empty_cache() {
  auto& h = host();
  std::lock_guard<std::mutex> lock(h.mutex);
  for (auto it = h.free_blocks.begin(); it != h.free_blocks.end();) {
    auto block = h.blocks.find(it->second);
    if (!HostAllocator::idle(block->second)) {
      ++it;
      continue;
    }
    h.destroy(block->first, block->second);
    h.blocks.erase(block);
    it = h.free_blocks.erase(it);
  }
}

HostAllocatorStats host_stats() {
  auto& h = host();
  std::lock_guard<std::mutex> lock(h.mutex);
  return h.stats;
}

}  // namespace tocl
