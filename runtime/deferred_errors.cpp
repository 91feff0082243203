#include "runtime/deferred_errors.h"

#include <algorithm>
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
  uint64_t order;  // when it was first armed, to report errors in the order their ops ran
  std::shared_ptr<void> keep_alive;
};

struct StreamRecords {
  uint64_t sites = 0;                                              // table records
  uint64_t site_order[kMaxSites] = {};                             // when each was first armed
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
uint64_t arm_count = 0;
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
  StreamRecords& records = devices[device].armed[stream];
  const uint64_t bit = uint64_t{1} << site_id;
  if (!(records.sites & bit)) records.site_order[site_id] = ++arm_count;
  records.sites |= bit;
}

void arm_error_record(int device, int stream, int site_id, RecordLocation record, std::shared_ptr<void> keep_alive) {
  std::lock_guard<std::mutex> lock(mutex);
  auto& others = devices[device].armed[stream].others;
  const auto key = std::make_pair(record.buffer, record.offset);
  const auto existing = others.find(key);
  const uint64_t order = existing != others.end() ? existing->second.order : ++arm_count;
  others[key] = {site_id, order, std::move(keep_alive)};
}

void set_recorded_error_reporter(void (*r)(const RecordedError&)) {
  std::lock_guard<std::mutex> lock(mutex);
  reporter = r;
}

void raise_recorded_errors(int device, int stream) {
  // Take what the waited streams armed: (record, site), in the order they were armed.
  struct Armed {
    uint64_t order;
    RecordLocation where;
    int site;
  };
  std::vector<Armed> armed;
  std::vector<std::shared_ptr<void>> alive;  // released after the read
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto d = devices.find(device);
    if (d == devices.end()) return;
    for (auto& [s, records] : d->second.armed) {
      if (stream >= 0 && s != stream) continue;
      for (int id = 0; id < kMaxSites; ++id)
        if (records.sites >> id & 1)
          armed.push_back({records.site_order[id], {d->second.table, id * kErrorRecordBytes}, id});
      for (auto& [at, r] : records.others) {
        armed.push_back({r.order, {at.first, at.second}, r.site});
        alive.push_back(std::move(r.keep_alive));
      }
      records = StreamRecords{};
    }
    if (armed.empty()) return;
  }
  std::sort(armed.begin(), armed.end(), [](const Armed& a, const Armed& b) { return a.order < b.order; });
  // The streams' work has finished, so the records their kernels wrote are final.
  const cl_command_queue q = queue(device, stream < 0 ? 0 : stream);
  std::vector<Record> read(armed.size());
  for (size_t i = 0; i < armed.size(); ++i)
    TOCL_CHECK(clEnqueueReadBuffer(q, armed[i].where.buffer, CL_FALSE, armed[i].where.offset, sizeof(Record),
                                   &read[i], 0, nullptr, nullptr));
  TOCL_CHECK(clFinish(q));
  std::vector<std::pair<int, Record>> failures;  // (site, record), in the order the ops ran
  for (size_t i = 0; i < armed.size(); ++i) {
    const Record& r = read[i];
    if (!r.flag) continue;
    failures.push_back({armed[i].site, r});
    const Record zero{};
    TOCL_CHECK(clEnqueueWriteBuffer(q, armed[i].where.buffer, CL_TRUE, armed[i].where.offset, sizeof(zero), &zero, 0,
                                    nullptr, nullptr));
  }
  if (failures.empty()) return;
  std::vector<Site> failed;
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto& f : failures) failed.push_back(sites[f.first]);
  }
  RecordedError e{device, failed[0].name, failed[0].describe(failures[0].second.index, failures[0].second.size), ""};
  for (size_t i = 1; i < failures.size(); ++i)
    e.also += (i > 1 ? "; " : "") + failed[i].name + ": " +
              failed[i].describe(failures[i].second.index, failures[i].second.size);
  if (reporter) reporter(e);
  throw Error(e.message + " (recorded on the device by " + e.site + ")" +
              (e.also.empty() ? "" : ". Also recorded before the same wait: " + e.also));
}

}  // namespace tocl
