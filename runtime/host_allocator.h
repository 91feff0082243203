#pragma once
// Pinned ("page-locked") host memory for copies to and from devices. On GPU
// drivers a mapped CL_MEM_ALLOC_HOST_PTR buffer is the memory DMA reads directly,
// so a copy from it can run asynchronously. A block that an asynchronous copy
// still uses is not handed out again until the copy has finished, as CUDA's
// caching host allocator does. Thread-safe.
#include <cstddef>
#include <cstdint>

namespace tocl {

struct HostAllocatorStats {
  int64_t allocated_bytes = 0;   // in blocks handed to callers
  int64_t reserved_bytes = 0;    // held, in use or cached
  int64_t num_host_alloc = 0;    // new blocks from the driver
  int64_t num_host_free = 0;     // blocks given back to the driver
};

// A pinned block of at least `bytes` (nullptr for 0).
void* host_alloc(size_t bytes);
// Returns a block to the cache; it is reused once the copies recorded on it have finished.
void host_free(void* ptr);
// True if ptr lies inside a live pinned block.
bool is_pinned(const void* ptr);
// Records that work enqueued so far on (device, stream) reads or writes the block holding ptr.
void host_record_use(const void* ptr, int device, int stream);
// Gives every cached, idle block back to the driver.
void host_empty_cache();
HostAllocatorStats host_stats();

}  // namespace tocl
