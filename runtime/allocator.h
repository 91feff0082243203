#pragma once
// The caching device allocator. Memory is handed out as virtual device
// addresses that resolve to (cl_mem, byte offset), so views and data_ptr()
// arithmetic work as on CUDA. Freed blocks go back to size-binned pools per
// stream and are reused without a new clCreateBuffer; segments are split and
// merged. Thread-safe.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "runtime/opencl.h"

namespace tocl {

// One counter as torch.cuda.memory_stats() reports it.
struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;  // accumulated increases
  int64_t freed = 0;      // accumulated decreases
  void increase(int64_t n);
  void decrease(int64_t n);
  void reset_accumulated() { allocated = freed = 0; }
  void reset_peak() { peak = current; }
};

enum PoolKind { kAllPools = 0, kSmallPool = 1, kLargePool = 2 };
using StatArray = std::array<Stat, 3>;  // indexed by PoolKind

struct AllocatorStats {
  StatArray allocation;            // blocks handed to callers
  StatArray segment;               // cl_mem buffers
  StatArray active;                // blocks in use, or freed but awaiting other streams
  StatArray inactive_split;        // free blocks that are part of split segments
  StatArray allocated_bytes;
  StatArray reserved_bytes;
  StatArray active_bytes;
  StatArray inactive_split_bytes;
  StatArray requested_bytes;       // what callers asked for, before rounding
  int64_t cache_hits = 0;          // allocations served from the pools
  int64_t cache_misses = 0;        // allocations that needed a new segment
  int64_t num_alloc_retries = 0;   // failed segment allocations that emptied the cache and retried
  int64_t num_ooms = 0;
  int64_t num_device_alloc = 0;    // clCreateBuffer calls
  int64_t num_device_free = 0;     // clReleaseMemObject calls
};

// Where a device address lives.
struct Resolved {
  cl_mem buffer = nullptr;
  size_t offset = 0;          // bytes from the start of buffer
  size_t buffer_size = 0;     // bytes in buffer
};

class CachingAllocator {
 public:
  explicit CachingAllocator(int device);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` for use on `stream`; nullptr for 0 bytes.
  // Throws OutOfMemoryError, stating the request and the statistics.
  void* allocate(size_t bytes, int stream);
  // Returns a block to its pool. Blocks also used on other streams (record_stream)
  // are held until those streams' work recorded so far has finished.
  void free(void* ptr);
  // Marks a block as used on another stream, so it is not reused too early.
  void record_stream(void* ptr, int stream);
  // Releases every cached (free, unsplit) segment back to the driver.
  void empty_cache();

  // Any address inside a live segment (or one past its end).
  Resolved resolve(const void* ptr);
  // The size of the block that starts at ptr, or 0 if none does.
  size_t block_size(const void* ptr);

  AllocatorStats stats();
  void reset_peak_stats();
  void reset_accumulated_stats();
  // Limits reserved memory (bytes); 0 means the device's global memory size.
  void set_memory_limit(uint64_t bytes);
  uint64_t memory_limit();

  int device() const { return device_; }

 private:
  struct Impl;
  int device_;
  std::unique_ptr<Impl> impl_;
};

// Frees a block of any device and never throws (for deleters): a failure (an enqueue refused, a
// forked child) is kept, the block is never reused, and the next allocate() raises the failure.
void free_nothrow(void* ptr) noexcept;

// The allocator of a selected device (created on first use).
CachingAllocator& allocator(int device);

// The device whose address space holds ptr, or -1 for a host address.
int device_of_address(const void* ptr);

// Resolves a device address of any device; null (no memory, as an empty tensor's data pointer)
// resolves to a null buffer, which only a launch of no work items or a count of 0 may take.
Resolved resolve(const void* ptr);

}  // namespace tocl
