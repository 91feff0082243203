#pragma once
// Events recorded on streams: ordering between streams, queries, and timing
// (every queue has profiling enabled).
#include "runtime/opencl.h"

namespace tocl {

class Event {
 public:
  Event() = default;
  ~Event();
  Event(const Event& other);
  Event& operator=(const Event& other);
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;

  // Marks the point after all work enqueued so far on the stream.
  void record(int device, int stream_id);
  // Makes later work on the stream wait for this event (no host block).
  void wait(int device, int stream_id) const;
  // True once the marked work has finished; an unrecorded event counts as done.
  bool query() const;
  // Blocks the host until the marked work has finished.
  void synchronize() const;
  // Milliseconds between this event and `end`, both recorded and finished.
  double elapsed_ms(const Event& end) const;

  bool recorded() const { return event_ != nullptr; }
  int device() const { return device_; }
  cl_event handle() const { return event_; }

 private:
  cl_event event_ = nullptr;
  int device_ = -1;
};

}  // namespace tocl
