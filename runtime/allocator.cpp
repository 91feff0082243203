#include "runtime/allocator.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/event.h"
#include "runtime/host_memory_limit.h"
#include "runtime/stream.h"

namespace tocl {

void Stat::increase(int64_t n) {
  current += n;
  allocated += n;
  peak = std::max(peak, current);
}

void Stat::decrease(int64_t n) {
  current -= n;
  freed += n;
}

namespace {

// Size classes as in CUDA's caching allocator.
constexpr size_t kMinBlockSize = 512;            // every block is a multiple of this
constexpr size_t kSmallSize = 1 << 20;           // requests up to 1 MiB use the small pool
constexpr size_t kSmallBuffer = 2 << 20;         // small pool segments are 2 MiB
constexpr size_t kLargeBuffer = 20 << 20;        // requests up to 10 MiB share 20 MiB segments
constexpr size_t kMinLargeAlloc = 10 << 20;
constexpr size_t kRoundLarge = 2 << 20;          // larger requests round up to 2 MiB
constexpr uint64_t kAddressBits = 40;            // each device owns 1 TiB of virtual addresses
constexpr uint64_t kSegmentAlign = 4096;

size_t round_size(size_t bytes) {
  return bytes < kMinBlockSize ? kMinBlockSize : (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

size_t segment_size(size_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

std::string format_bytes(uint64_t n) {
  std::ostringstream os;
  os.precision(2);
  os << std::fixed;
  if (n >= (1ull << 30)) os << n / double(1ull << 30) << " GiB";
  else if (n >= (1ull << 20)) os << n / double(1ull << 20) << " MiB";
  else if (n >= (1ull << 10)) os << n / double(1ull << 10) << " KiB";
  else os << n << " bytes";
  return os.str();
}

struct Segment;

struct Block {
  Segment* segment;
  uintptr_t address;
  size_t size;
  size_t requested = 0;
  int stream;
  bool allocated = false;
  int pending_events = 0;              // stream uses still running after free()
  std::unordered_set<int> stream_uses;  // streams other than `stream` (record_stream)
  Block* prev = nullptr;
  Block* next = nullptr;
  Block(Segment* s, uintptr_t a, size_t n, int st) : segment(s), address(a), size(n), stream(st) {}
};

struct Segment {
  cl_mem buffer;
  uintptr_t address;
  size_t size;
  bool small;
  int stream;
};

struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    return a->address < b->address;
  }
};
using Pool = std::set<Block*, BlockOrder>;

}  // namespace

struct CachingAllocator::Impl {
  int device;
  std::mutex mutex;
  Pool small_pool, large_pool;
  std::map<uintptr_t, Segment*> segments;        // by address
  std::map<uintptr_t, Block*> allocated_blocks;  // by address
  std::vector<std::pair<Event, Block*>> pending; // freed blocks waiting on other streams
  std::map<uintptr_t, uint64_t> free_addresses;  // virtual address ranges not in use
  AllocatorStats stats;
  uint64_t limit = 0;
  std::string host_refusal;  // why the last new segment did not fit the process's memory limits, or ""

  explicit Impl(int d) : device(d) {
    const uint64_t base = (static_cast<uint64_t>(d) + 1) << kAddressBits;
    free_addresses[base] = 1ull << kAddressBits;
    limit = device_info(d).global_mem_size;
  }

  Pool& pool_for(bool small) { return small ? small_pool : large_pool; }


  template <typename Fn>
  void for_pools(StatArray& s, bool small, Fn fn) {
    fn(s[kAllPools]);
    fn(s[small ? kSmallPool : kLargePool]);
  }

  uintptr_t reserve_addresses(size_t size) {
    for (auto it = free_addresses.begin(); it != free_addresses.end(); ++it) {
      if (it->second >= size) {
        const uintptr_t address = it->first;
        const uint64_t remaining = it->second - size;
        free_addresses.erase(it);
        if (remaining) free_addresses[address + size] = remaining;
        return address;
      }
    }
    throw OutOfMemoryError("OpenCL device " + std::to_string(device) + " ran out of virtual address space.");
  }

  void release_addresses(uintptr_t address, size_t size) {
    auto next = free_addresses.lower_bound(address);
    if (next != free_addresses.end() && address + size == next->first) {
      size += next->second;
      next = free_addresses.erase(next);
    }
    if (next != free_addresses.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == address) {
        prev->second += size;
        return;
      }
    }
    free_addresses[address] = size;
  }

  // Finishes frees that were waiting for other streams whose work is now done.
  void process_pending() {
    for (auto it = pending.begin(); it != pending.end();) {
      if (it->first.query()) {
        Block* block = it->second;
        it = pending.erase(it);
        if (--block->pending_events == 0) release_block(block);
      } else {
        ++it;
      }
    }
  }

  void synchronize_pending() {
    for (auto& [event, block] : pending) {
      event.synchronize();
      if (--block->pending_events == 0) release_block(block);
    }
    pending.clear();
  }

  Block* find_free_block(size_t size, int stream, bool small) {
    Pool& pool = pool_for(small);
    Segment probe_segment{};
    Block probe(&probe_segment, 0, size, stream);
    auto it = pool.lower_bound(&probe);
    if (it == pool.end() || (*it)->stream != stream) return nullptr;
    Block* block = *it;
    // As CUDA's allocator with its default (unlimited) max_split_size: any cached block that
    // fits is split, so a freed 20 MiB segment serves the next 8 MiB request.
    pool.erase(it);
    return block;
  }

  Block* new_segment(size_t size, int stream, bool small) {
    const size_t bytes = segment_size(size);
    const auto& info = device_info(device);
    const uint64_t reserved = static_cast<uint64_t>(stats.reserved_bytes[kAllPools].current);
    if (bytes > info.max_alloc_size || reserved + bytes > limit) return nullptr;
    // A CPU device's buffers are mapped by this process when first used; past ulimit -v that fails in the
    // driver, which aborts.
    host_refusal = (info.type & CL_DEVICE_TYPE_CPU) ? host_limit_refusal(bytes) : "";
    if (!host_refusal.empty()) return nullptr;
    cl_int status = CL_SUCCESS;
    cl_mem buffer = clCreateBuffer(context(device), CL_MEM_READ_WRITE, bytes, nullptr, &status);
    if (status == CL_MEM_OBJECT_ALLOCATION_FAILURE || status == CL_OUT_OF_RESOURCES ||
        status == CL_OUT_OF_HOST_MEMORY || status == CL_INVALID_BUFFER_SIZE)
      return nullptr;
    TOCL_CHECK(status);
    const size_t address_span = (bytes + kSegmentAlign - 1) / kSegmentAlign * kSegmentAlign;
    auto* segment = new Segment{buffer, reserve_addresses(address_span), bytes, small, stream};
    segments[segment->address] = segment;
    stats.num_device_alloc++;
    for_pools(stats.segment, small, [](Stat& s) { s.increase(1); });
    for_pools(stats.reserved_bytes, small, [&](Stat& s) { s.increase(bytes); });
    return new Block(segment, segment->address, bytes, stream);
  }

  void release_segment(Block* block) {
    Segment* segment = block->segment;
    clReleaseMemObject(segment->buffer);
    stats.num_device_free++;
    for_pools(stats.segment, segment->small, [](Stat& s) { s.decrease(1); });
    for_pools(stats.reserved_bytes, segment->small, [&](Stat& s) { s.decrease(segment->size); });
    segments.erase(segment->address);
    release_addresses(segment->address, (segment->size + kSegmentAlign - 1) / kSegmentAlign * kSegmentAlign);
    delete segment;
    delete block;
  }

  // Releases every free block that spans a whole segment.
  void release_cached() {
    for (Pool* pool : {&small_pool, &large_pool}) {
      for (auto it = pool->begin(); it != pool->end();) {
        Block* block = *it;
        if (!block->prev && !block->next) {
          it = pool->erase(it);
          release_segment(block);
        } else {
          ++it;
        }
      }
    }
  }

  bool is_split(const Block* b) const { return b->prev || b->next; }

  void inactive_split_stats(const Block* b, bool add) {
    if (!is_split(b)) return;
    const bool small = b->segment->small;
    for_pools(stats.inactive_split, small, [&](Stat& s) { add ? s.increase(1) : s.decrease(1); });
    for_pools(stats.inactive_split_bytes, small, [&](Stat& s) { add ? s.increase(b->size) : s.decrease(b->size); });
  }

  // Merges `block` with free neighbours and puts it in its pool.
  void release_block(Block* block) {
    const bool small = block->segment->small;
    for_pools(stats.active, small, [](Stat& s) { s.decrease(1); });
    for_pools(stats.active_bytes, small, [&](Stat& s) { s.decrease(block->size); });
    Pool& pool = pool_for(small);
    for (Block* neighbour : {block->prev, block->next}) {
      if (!neighbour || neighbour->allocated || neighbour->pending_events) continue;
      inactive_split_stats(neighbour, false);
      pool.erase(neighbour);
      if (neighbour == block->prev) {
        block->address = neighbour->address;
        block->prev = neighbour->prev;
        if (block->prev) block->prev->next = block;
      } else {
        block->next = neighbour->next;
        if (block->next) block->next->prev = block;
      }
      block->size += neighbour->size;
      delete neighbour;
    }
    block->stream_uses.clear();
    inactive_split_stats(block, true);
    pool.insert(block);
  }

  std::string describe_stats() {
    const auto& info = device_info(device);
    return format_bytes(stats.allocated_bytes[kAllPools].current) + " allocated by tensors, " +
           format_bytes(stats.reserved_bytes[kAllPools].current) + " reserved by the caching allocator, " +
           "device memory " + format_bytes(info.global_mem_size) + ", largest single buffer " +
           format_bytes(info.max_alloc_size);
  }
};

CachingAllocator::CachingAllocator(int device) : device_(device), impl_(std::make_unique<Impl>(device)) {}

CachingAllocator::~CachingAllocator() = default;  // the driver reclaims buffers at exit

namespace {

// Failures of free_nothrow, raised by the next allocation (a deleter cannot raise).
std::mutex deferred_mutex;
std::string deferred_errors;

void raise_deferred_errors() {
  std::string text;
  {
    std::lock_guard<std::mutex> lock(deferred_mutex);
    if (deferred_errors.empty()) return;
    text.swap(deferred_errors);
  }
  throw Error("An earlier release of OpenCL device memory failed (reported at this allocation, as a deleter "
              "cannot raise): " + text);
}

}  // namespace

void free_nothrow(void* ptr) noexcept {
  if (!ptr) return;
  try {
    const int device = device_of_address(ptr);
    if (device < 0) throw Error("the address " + std::to_string(reinterpret_cast<uintptr_t>(ptr)) +
                                " is not an OpenCL device address");
    allocator(device).free(ptr);
  } catch (const std::exception& e) {
    try {
      std::lock_guard<std::mutex> lock(deferred_mutex);
      if (!deferred_errors.empty()) deferred_errors += "; ";
      deferred_errors += e.what();
    } catch (...) {  // out of memory for the message: nothing more can be done here
    }
  } catch (...) {
  }
}

void* CachingAllocator::allocate(size_t bytes, int stream) {
  raise_deferred_errors();
  if (bytes == 0) return nullptr;
  auto& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  m.process_pending();
  const size_t size = round_size(bytes);
  const bool small = size <= kSmallSize;
  Block* block = m.find_free_block(size, stream, small);
  if (block) {
    m.stats.cache_hits++;
    m.inactive_split_stats(block, false);
  } else {
    m.stats.cache_misses++;
    block = m.new_segment(size, stream, small);
    if (!block) {
      // Give the cache back to the driver, including blocks held for other streams, and try once more.
      m.stats.num_alloc_retries++;
      m.synchronize_pending();
      m.release_cached();
      block = m.new_segment(size, stream, small);
    }
    if (!block) {
      m.stats.num_ooms++;
      const auto& info = device_info(device_);
      std::string why = segment_size(size) > info.max_alloc_size
                            ? "the request exceeds the largest single buffer the device allows (" +
                                  format_bytes(info.max_alloc_size) + ")"
                        : !m.host_refusal.empty()
                            ? m.host_refusal
                            : "the device has no more memory for it (limit " + format_bytes(m.limit) + ")";
      throw OutOfMemoryError("OpenCL out of memory: tried to allocate " + format_bytes(bytes) + " on opencl:" +
                             std::to_string(device_) + " (" + info.name + "), but " + why + ". " +
                             m.describe_stats() + ".");
    }
  }
  // Split off the remainder when it is worth keeping as a block of its own.
  const size_t remaining = block->size - size;
  if ((small && remaining >= kMinBlockSize) || (!small && remaining > kSmallSize)) {
    auto* rest = new Block(block->segment, block->address + size, remaining, stream);
    rest->prev = block;
    rest->next = block->next;
    if (rest->next) rest->next->prev = rest;
    block->next = rest;
    block->size = size;
    m.inactive_split_stats(rest, true);
    m.pool_for(small).insert(rest);
  }
  block->allocated = true;
  block->requested = bytes;
  m.allocated_blocks[block->address] = block;
  auto& s = m.stats;
  m.for_pools(s.allocation, small, [](Stat& st) { st.increase(1); });
  m.for_pools(s.active, small, [](Stat& st) { st.increase(1); });
  m.for_pools(s.allocated_bytes, small, [&](Stat& st) { st.increase(block->size); });
  m.for_pools(s.active_bytes, small, [&](Stat& st) { st.increase(block->size); });
  m.for_pools(s.requested_bytes, small, [&](Stat& st) { st.increase(bytes); });
  return reinterpret_cast<void*>(block->address);
}

void CachingAllocator::free(void* ptr) {
  if (!ptr) return;
  auto& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  auto it = m.allocated_blocks.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == m.allocated_blocks.end())
    throw Error("free() of an address that the OpenCL allocator of device " + std::to_string(device_) +
                " did not hand out.");
  Block* block = it->second;
  m.allocated_blocks.erase(it);
  block->allocated = false;
  const bool small = block->segment->small;
  auto& s = m.stats;
  m.for_pools(s.allocation, small, [](Stat& st) { st.decrease(1); });
  m.for_pools(s.allocated_bytes, small, [&](Stat& st) { st.decrease(block->size); });
  m.for_pools(s.requested_bytes, small, [&](Stat& st) { st.decrease(block->requested); });
  if (block->stream_uses.empty()) {
    m.release_block(block);
    return;
  }
  // Another stream may still be using the block: hold it until that stream's work so far is done.
  try {
    for (int stream : block->stream_uses) {
      Event event;
      event.record(device_, stream);
      block->pending_events++;
      m.pending.emplace_back(std::move(event), block);
    }
  } catch (...) {
    // No marker, so no telling when that stream is done with the block: it is never reused.
    block->pending_events++;
    block->stream_uses.clear();
    throw;
  }
  block->stream_uses.clear();
}

void CachingAllocator::record_stream(void* ptr, int stream) {
  if (!ptr) return;
  auto& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  auto it = m.allocated_blocks.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == m.allocated_blocks.end())
    throw Error("record_stream() of an address that is not a live block of opencl:" + std::to_string(device_) + ".");
  if (stream != it->second->stream) it->second->stream_uses.insert(stream);
}

void CachingAllocator::empty_cache() {
  auto& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  m.synchronize_pending();
  m.release_cached();
}

Resolved CachingAllocator::resolve(const void* ptr) {
  auto& m = *impl_;
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(m.mutex);
  auto it = m.segments.upper_bound(address);
  if (it != m.segments.begin()) {
    const Segment* segment = std::prev(it)->second;
    if (address <= segment->address + segment->size)
      return Resolved{segment->buffer, address - segment->address, segment->size};
  }
  throw Error("Address " + std::to_string(address) + " is not inside any live buffer of opencl:" +
              std::to_string(device_) + " (use after free?).");
}

size_t CachingAllocator::block_size(const void* ptr) {
  auto& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  auto it = m.allocated_blocks.find(reinterpret_cast<uintptr_t>(ptr));
  return it == m.allocated_blocks.end() ? 0 : it->second->size;
}

AllocatorStats CachingAllocator::stats() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->stats;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto& s = impl_->stats;
  for (StatArray* a : {&s.allocation, &s.segment, &s.active, &s.inactive_split, &s.allocated_bytes,
                       &s.reserved_bytes, &s.active_bytes, &s.inactive_split_bytes, &s.requested_bytes})
    for (auto& stat : *a) stat.reset_peak();
}

void CachingAllocator::reset_accumulated_stats() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto& s = impl_->stats;
  for (StatArray* a : {&s.allocation, &s.segment, &s.active, &s.inactive_split, &s.allocated_bytes,
                       &s.reserved_bytes, &s.active_bytes, &s.inactive_split_bytes, &s.requested_bytes})
    for (auto& stat : *a) stat.reset_accumulated();
  s.cache_hits = s.cache_misses = s.num_alloc_retries = s.num_ooms = 0;
  s.num_device_alloc = s.num_device_free = 0;
}

void CachingAllocator::set_memory_limit(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->limit = bytes ? bytes : device_info(device_).global_mem_size;
}

uint64_t CachingAllocator::memory_limit() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->limit;
}

CachingAllocator& allocator(int device) {
  static std::vector<std::unique_ptr<CachingAllocator>> allocators = [] {
    std::vector<std::unique_ptr<CachingAllocator>> v;
    for (int i = 0; i < device_count(); ++i) v.push_back(std::make_unique<CachingAllocator>(i));
    return v;
  }();
  device_info(device);  // range check with a readable message
  return *allocators[device];
}

int device_of_address(const void* ptr) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  const int64_t index = static_cast<int64_t>(address >> kAddressBits) - 1;
  if (index < 0 || index >= device_count()) return -1;
  return static_cast<int>(index);
}

Resolved resolve(const void* ptr) {
  // Null is the address of no memory (the data pointer of every empty tensor): a null buffer.
  if (ptr == nullptr) return Resolved{};
  const int device = device_of_address(ptr);
  if (device < 0) throw Error("Address " + std::to_string(reinterpret_cast<uintptr_t>(ptr)) +
                              " is not an OpenCL device address.");
  return allocator(device).resolve(ptr);
}

}  // namespace tocl
