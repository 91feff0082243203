#include "runtime/deferred_errors.h"

#include <map>
#include <mutex>
#include <utility>
#include <vector>

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

struct ArmedRecord {
  int site;
  std::shared_ptr<void> keep_alive;
};

struct StreamRecords {
  uint64_t sites = 0;                                              // table records
  std::map<std::pair<cl_mem, size_t>, ArmedRecord> others;         // records elsewhere
};

struct DeviceRecords {
  cl_mem table = nullptr;  // kMaxSites records
  std::map<int, StreamRecords> armed;  // by stream
};

struct Record {
  int32_t flag, unused;
  int64_t index, size, spare;
};
static_assert(sizeof(Record) == kErrorRecordBytes, "the record layout of kernels_cl/index_bounds.cl");

std::mutex mutex;
std::vector<Site> sites;
std::map<int, DeviceRecords> devices;
void (*reporter)(const RecordedError&) = nullptr;

}  // namespace

int error_site(const std::string& name, const DescribeError& describe) {
  std::lock_guard<std::mutex> lock(mutex);
  int id = 0;
  while (id < static_cast<int>(sites.size()) && sites[id].name != name) ++id;
  if (id == static_cast<int>(sites.size())) {
    if (id == kMaxSites) throw Error("Too many deferred-error sites (" + std::to_string(kMaxSites) + "): " + name);
    sites.push_back({name, describe});
  }
  return id;
}

RecordLocation site_record(int device, int site_id) {
  std::lock_guard<std::mutex> lock(mutex);
  DeviceRecords& d = devices[device];
  if (!d.table) {
    std::vector<Record> zeros(kMaxSites);
    cl_int status = CL_SUCCESS;
    d.table = clCreateBuffer(context(device), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(Record) * kMaxSites,
                             zeros.data(), &status);
    TOCL_CHECK(status);
  }
  return {d.table, static_cast<size_t>(site_id) * kErrorRecordBytes};
}

void arm_error_site(int device, int stream, int site_id) {
  std::lock_guard<std::mutex> lock(mutex);
  devices[device].armed[stream].sites |= uint64_t{1} << site_id;
}

void arm_error_record(int device, int stream, int site_id, RecordLocation record, std::shared_ptr<void> keep_alive) {
  std::lock_guard<std::mutex> lock(mutex);
  devices[device].armed[stream].others[{record.buffer, record.offset}] = {site_id, std::move(keep_alive)};
}

void set_recorded_error_reporter(void (*r)(const RecordedError&)) {
  std::lock_guard<std::mutex> lock(mutex);
  reporter = r;
}

void raise_recorded_errors(int device, int stream) {
  // Take what the waited streams armed: (record, site), the table's first.
  std::vector<std::pair<RecordLocation, int>> armed;
  std::vector<std::shared_ptr<void>> alive;  // released after the read
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto d = devices.find(device);
    if (d == devices.end()) return;
    for (auto& [s, records] : d->second.armed) {
      if (stream >= 0 && s != stream) continue;
      for (int id = 0; id < kMaxSites; ++id)
        if (records.sites >> id & 1) armed.push_back({{d->second.table, id * kErrorRecordBytes}, id});
      for (auto& [at, r] : records.others) {
        armed.push_back({{at.first, at.second}, r.site});
        alive.push_back(std::move(r.keep_alive));
      }
      records = StreamRecords{};
    }
    if (armed.empty()) return;
  }
  // The streams' work has finished, so the records their kernels wrote are final.
  const cl_command_queue q = queue(device, stream < 0 ? 0 : stream);
  std::vector<Record> read(armed.size());
  for (size_t i = 0; i < armed.size(); ++i)
    TOCL_CHECK(clEnqueueReadBuffer(q, armed[i].first.buffer, CL_FALSE, armed[i].first.offset, sizeof(Record), &read[i],
                                   0, nullptr, nullptr));
  TOCL_CHECK(clFinish(q));
  int first = -1;
  Record seen{};
  for (size_t i = 0; i < armed.size(); ++i) {
    const auto& [where, site] = armed[i];
    const Record& r = read[i];
    if (!r.flag) continue;
    if (first < 0) {
      first = site;
      seen = r;
    }
    const Record zero{};
    TOCL_CHECK(clEnqueueWriteBuffer(q, where.buffer, CL_TRUE, where.offset, sizeof(zero), &zero, 0, nullptr, nullptr));
  }
  if (first < 0) return;
  Site failed;
  {
    std::lock_guard<std::mutex> lock(mutex);
    failed = sites[first];
  }
  const RecordedError e{device, failed.name, failed.describe(seen.index, seen.size)};
  if (reporter) reporter(e);
  throw Error(e.message + " (recorded on the device by " + e.site + ")");
}

}  // namespace tocl
