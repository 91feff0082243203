#pragma once
// Command tracing for profilers. While a recorder is installed, every kernel launch, copy and fill
// asks the driver for a profiling event and hands it to the recorder, with the command's name and the
// host time around the enqueue call. Without a recorder the enqueue points pass no event (no cost).
#include <atomic>
#include <cstdint>
#include <string>

#include "runtime/opencl.h"

namespace tocl::trace {

enum class Kind { Kernel, Memcpy, Memset };

struct Command {
  int device;
  int stream;
  Kind kind;
  std::string name;
  int64_t enqueue_begin_ns;  // host clock (CLOCK_REALTIME), around the clEnqueue* call
  int64_t enqueue_end_ns;
  cl_event event;  // owned by the recorder, which releases it
};

using Recorder = void (*)(Command&& command);

// nullptr stops recording. Commands already being enqueued may still reach the previous recorder.
void set_recorder(Recorder recorder);

namespace detail {
extern std::atomic<Recorder> recorder;
}

inline bool active() { return detail::recorder.load(std::memory_order_relaxed) != nullptr; }

int64_t host_time_ns();  // CLOCK_REALTIME in nanoseconds, the clock PyTorch's profiler stamps

// The kernel's function name ("kernel" if the driver does not tell it).
std::string kernel_name(cl_kernel kernel);

// One traced enqueue: `Scope s(device, stream, Kind::Memcpy, "Memcpy HtoD"); clEnqueue...(..., s.event());`
// The recorder receives the command when the scope ends (only if the driver returned an event).
class Scope {
 public:
  Scope(int device, int stream, Kind kind, const char* name);
  Scope(int device, int stream, cl_kernel kernel);  // named after the kernel function
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  // The event slot to pass to clEnqueue* (nullptr when nothing records).
  cl_event* event() { return recorder_ ? &command_.event : nullptr; }

 private:
  Recorder recorder_;
  Command command_{};
};

}  // namespace tocl::trace
