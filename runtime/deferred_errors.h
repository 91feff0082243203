#pragma once
// Errors that kernels record on the device for the host to raise at its next wait. On a GPU, checking an
// index tensor by reading a verdict back after each op stalls the queue (cross_entropy and embedding paid two
// launches and a round trip each, every step). Where the kernel forms defer index checks, a check kernel (or
// the op's own kernel) records a bad index in its call site's error record and the op's kernels skip or
// clamp the bad access; the op arms the record on its stream and returns. The next wait on that stream (a
// synchronize, a blocking copy to the host) reads the armed records and raises the site's error, as CUDA
// reports a device-side assert at the next synchronization, but with the op's own message, and the device
// keeps working: a raised record is cleared.
//
// A record is kErrorRecordBytes: int flag (set with atomic_cmpxchg by the first kernel that fails), int
// unused, then long index and long size as that kernel saw them. kernels_cl/index_bounds.cl's
// record_out_of_range and kernels_cl/inductor.cl's tocl_index_error write this layout.
#include <cstdint>
#include <functional>
#include <string>

#include "runtime/opencl.h"

namespace tocl {

constexpr size_t kErrorRecordBytes = 32;

// Turns what the failing kernel recorded into the error's message ("Target 12 is out of bounds.").
using DescribeError = std::function<std::string(int64_t index, int64_t size)>;

// A call site: its id and the address of its record on `device` (a block of the device's allocator, in a
// table created on first use). The same name always gets the same site.
struct ErrorSite {
  int id = -1;
  void* record = nullptr;
};
ErrorSite error_site(int device, const std::string& name, const DescribeError& describe);

// Kernels just enqueued on (device, stream) may write `site`'s record: checked at that stream's next wait.
void arm_error_site(int device, int stream, int site_id);

// What a wait found, handed to the reporter (which throws).
struct RecordedError {
  int device;
  std::string site;     // the name given to error_site
  std::string message;  // the site's description of the record
};
// aten/ installs a reporter that raises the framework's error type; without one, tocl::Error is thrown.
void set_recorded_error_reporter(void (*reporter)(const RecordedError&));

// Called by the runtime's waits once `stream`'s work (every stream's, for stream -1) has finished: reads
// the records armed there and, if one holds an error, clears the flagged records and reports the first.
void raise_recorded_errors(int device, int stream);

}  // namespace tocl
