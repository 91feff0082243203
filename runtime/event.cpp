#include "runtime/event.h"

#include <utility>

#include "runtime/error.h"
#include "runtime/stream.h"

namespace tocl {

Event::~Event() {
  if (event_) clReleaseEvent(event_);
}

Event::Event(const Event& other) : event_(other.event_), device_(other.device_) {
  if (event_) clRetainEvent(event_);
}

Event& Event::operator=(const Event& other) {
  if (this != &other) {
    Event copy(other);
    *this = std::move(copy);
  }
  return *this;
}

Event::Event(Event&& other) noexcept
    : event_(std::exchange(other.event_, nullptr)), device_(other.device_) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_) clReleaseEvent(event_);
    event_ = std::exchange(other.event_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

void Event::record(int device, int stream_id) {
  cl_event marker = nullptr;
  TOCL_CHECK(clEnqueueMarkerWithWaitList(queue(device, stream_id), 0, nullptr, &marker));
  if (event_) clReleaseEvent(event_);
  event_ = marker;
  device_ = device;
}

void Event::wait(int device, int stream_id) const {
  if (!event_) return;
  if (device != device_)
    throw Error("An event recorded on opencl:" + std::to_string(device_) +
                " cannot be waited on by a stream of opencl:" + std::to_string(device) + ".");
  TOCL_CHECK(clEnqueueBarrierWithWaitList(queue(device, stream_id), 1, &event_, nullptr));
}

bool Event::query() const {
  if (!event_) return true;
  // Markers only progress once their queue is flushed.
  cl_command_queue q = nullptr;
  TOCL_CHECK(clGetEventInfo(event_, CL_EVENT_COMMAND_QUEUE, sizeof(q), &q, nullptr));
  if (q) TOCL_CHECK(clFlush(q));
  cl_int status = CL_QUEUED;
  TOCL_CHECK(clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, nullptr));
  if (status < 0) throw_cl_error(status, "event execution status", __FILE__, __LINE__);
  return status == CL_COMPLETE;
}

void Event::synchronize() const {
  if (event_) TOCL_CHECK(clWaitForEvents(1, &event_));
}

double Event::elapsed_ms(const Event& end) const {
  if (!event_ || !end.event_)
    throw Error("elapsed_time needs both events to have been recorded.");
  synchronize();
  end.synchronize();
  cl_ulong start_ns = 0, end_ns = 0;
  // A marker's END is when the work before it finished.
  TOCL_CHECK(clGetEventProfilingInfo(event_, CL_PROFILING_COMMAND_END, sizeof(start_ns), &start_ns, nullptr));
  TOCL_CHECK(clGetEventProfilingInfo(end.event_, CL_PROFILING_COMMAND_END, sizeof(end_ns), &end_ns, nullptr));
  return (static_cast<double>(end_ns) - static_cast<double>(start_ns)) / 1e6;
}

}  // namespace tocl
