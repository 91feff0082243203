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
// unused, then long index and long size as that kernel saw them. kernels_cl/prelude.cl's
// tocl_record_index_error writes this layout (for index_bounds.cl, inductor.cl and cross_entropy.cl).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/opencl.h"

namespace tocl {

constexpr size_t kErrorRecordBytes = 32;

// Turns what the failing kernel recorded into the error's message ("Target 12 is out of bounds.").
using DescribeError = std::function<std::string(int64_t index, int64_t size)>;

// A call site, named once per process ("nll_loss"): its id. The same name always gets the same id.
int error_site(const std::string& name, const DescribeError& describe);

// Where a record lives on the device.
struct RecordLocation {
  cl_mem buffer = nullptr;
  size_t offset = 0;  // bytes
};

// A site's record in the device's table: created on first use outside the caching allocator, so that
// memory statistics do not move, and kept for the process.
RecordLocation site_record(int device, int site_id);

// Kernels just enqueued on (device, stream) may write the site's table record: checked at that stream's
// next wait.
void arm_error_site(int device, int stream, int site_id);

// The same for a record outside the table (a compiled graph's own buffer); `keep_alive` holds its memory
// until the check.
void arm_error_record(int device, int stream, int site_id, RecordLocation record, std::shared_ptr<void> keep_alive);

// What a wait found, handed to the reporter (which throws).
struct RecordedError {
  int device;
  std::string site;     // the name given to error_site
  std::string message;  // the site's description of the record
  std::string also;     // "" or the other errors the same wait found, in the order their ops ran
};
// aten/ installs a reporter that raises the framework's error type; without one, tocl::Error is thrown.
void set_recorded_error_reporter(void (*reporter)(const RecordedError&));

// Called by the runtime's waits once `stream`'s work (every stream's, for stream -1) has finished: reads
// the records armed there and, if one holds an error, clears the flagged records and reports the first
// (in the order the ops were armed), naming the others in it: none is lost.
void raise_recorded_errors(int device, int stream);

}  // namespace tocl
