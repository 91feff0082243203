#include "runtime/deferred_errors.h"

#include <array>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/error.h"
#include "runtime/stream.h"

namespace tocl {
namespace {

// Sites are few (one per op that defers a check), so a 64-bit mask per stream says which are armed.
constexpr int kMaxSites = 64;

struct Site {
  std::string name;
  DescribeError describe;
};

struct DeviceRecords {
  void* table = nullptr;             // kMaxSites records
  std::map<int, uint64_t> armed;     // stream -> armed sites
};

std::mutex mutex;
std::vector<Site> sites;
std::map<int, DeviceRecords> devices;
void (*reporter)(const RecordedError&) = nullptr;

void* record_of(void* table, int id) { return static_cast<char*>(table) + id * kErrorRecordBytes; }

// Under `mutex`.
void* table_of(int device) {
  DeviceRecords& d = devices[device];
  if (!d.table) {
    const size_t bytes = kMaxSites * kErrorRecordBytes;
    void* table = allocator(device).allocate(bytes, 0);
    const std::vector<char> zeros(bytes, 0);
    const Resolved r = resolve(table);
    TOCL_CHECK(clEnqueueWriteBuffer(queue(device, 0), r.buffer, CL_TRUE, r.offset, bytes, zeros.data(), 0, nullptr,
                                    nullptr));
    d.table = table;
  }
  return d.table;
}

}  // namespace

ErrorSite error_site(int device, const std::string& name, const DescribeError& describe) {
  std::lock_guard<std::mutex> lock(mutex);
  int id = 0;
  while (id < static_cast<int>(sites.size()) && sites[id].name != name) ++id;
  if (id == static_cast<int>(sites.size())) {
    if (id == kMaxSites) throw Error("Too many deferred-error sites (" + std::to_string(kMaxSites) + "): " + name);
    sites.push_back({name, describe});
  }
  return {id, record_of(table_of(device), id)};
}

void arm_error_site(int device, int stream, int site_id) {
  std::lock_guard<std::mutex> lock(mutex);
  devices[device].armed[stream] |= uint64_t{1} << site_id;
}

void set_recorded_error_reporter(void (*r)(const RecordedError&)) {
  std::lock_guard<std::mutex> lock(mutex);
  reporter = r;
}

void raise_recorded_errors(int device, int stream) {
  uint64_t mask = 0;
  void* table = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto d = devices.find(device);
    if (d == devices.end()) return;
    for (const auto& [s, m] : d->second.armed)
      if (stream < 0 || s == stream) mask |= m;
    if (!mask) return;
    table = d->second.table;
  }
  // The stream's work has finished, so the records its kernels wrote are final.
  struct Record {
    int32_t flag, unused;
    int64_t index, size, spare;
  };
  static_assert(sizeof(Record) == kErrorRecordBytes, "record layout");
  std::array<Record, kMaxSites> host;
  const Resolved r = resolve(table);
  const cl_command_queue q = queue(device, stream < 0 ? 0 : stream);
  TOCL_CHECK(clEnqueueReadBuffer(q, r.buffer, CL_TRUE, r.offset, sizeof(host), host.data(), 0, nullptr, nullptr));
  int first = -1;
  std::vector<Site> named;
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& [s, m] : devices[device].armed)
      if (stream < 0 || s == stream) m &= ~mask;
    named = sites;
  }
  for (int id = 0; id < kMaxSites; ++id) {
    if (!(mask >> id & 1) || !host[id].flag) continue;
    if (first < 0) first = id;
    const Record zero{};
    TOCL_CHECK(clEnqueueWriteBuffer(q, r.buffer, CL_TRUE, r.offset + id * kErrorRecordBytes, sizeof(zero), &zero, 0,
                                    nullptr, nullptr));
  }
  if (first < 0) return;
  const RecordedError e{device, named[first].name, named[first].describe(host[first].index, host[first].size)};
  if (reporter) reporter(e);
  throw Error(e.message + " (recorded on the device by " + e.site + ")");
}

}  // namespace tocl
