#include "runtime/memcpy.h"

#include "runtime/allocator.h"
#include "runtime/deferred_errors.h"
#include "runtime/error.h"
#include "runtime/stream.h"
#include "runtime/trace.h"

namespace tocl {
namespace {

Resolved resolve_range(int device, const void* address, size_t bytes) {
  const Resolved r = allocator(device).resolve(address);
  if (r.offset + bytes > r.buffer_size)
    throw Error("A copy of " + std::to_string(bytes) + " bytes runs past the end of its OpenCL buffer.");
  return r;
}

}  // namespace

void copy_host_to_device(int device, int stream, void* dst, const void* src, size_t bytes, bool blocking) {
  if (bytes == 0) return;
  const Resolved d = resolve_range(device, dst, bytes);
  trace::Scope traced(device, stream, trace::Kind::Memcpy, "Memcpy HtoD");
  TOCL_CHECK(clEnqueueWriteBuffer(queue(device, stream), d.buffer, blocking ? CL_TRUE : CL_FALSE, d.offset, bytes, src,
                                  0, nullptr, traced.event()));
  if (!blocking) TOCL_CHECK(clFlush(queue(device, stream)));
}

void copy_device_to_host(int device, int stream, void* dst, const void* src, size_t bytes, bool blocking) {
  if (bytes == 0) return;
  const Resolved s = resolve_range(device, src, bytes);
  trace::Scope traced(device, stream, trace::Kind::Memcpy, "Memcpy DtoH");
  TOCL_CHECK(clEnqueueReadBuffer(queue(device, stream), s.buffer, blocking ? CL_TRUE : CL_FALSE, s.offset, bytes, dst,
                                 0, nullptr, traced.event()));
  if (!blocking) TOCL_CHECK(clFlush(queue(device, stream)));
  // The host is about to look at device data: errors the stream's kernels recorded come first.
  if (blocking) raise_recorded_errors(device, stream);
}

void copy_device_to_device(int device, int stream, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  const Resolved s = resolve_range(device, src, bytes);
  const Resolved d = resolve_range(device, dst, bytes);
  trace::Scope traced(device, stream, trace::Kind::Memcpy, "Memcpy DtoD");
  TOCL_CHECK(clEnqueueCopyBuffer(queue(device, stream), s.buffer, d.buffer, s.offset, d.offset, bytes, 0, nullptr,
                                 traced.event()));
}

void fill_device(int device, int stream, void* dst, const void* pattern, size_t pattern_size, size_t bytes) {
  if (bytes == 0) return;
  const Resolved d = resolve_range(device, dst, bytes);
  trace::Scope traced(device, stream, trace::Kind::Memset, "Memset");
  TOCL_CHECK(clEnqueueFillBuffer(queue(device, stream), d.buffer, pattern, pattern_size, d.offset, bytes, 0, nullptr,
                                 traced.event()));
}

}  // namespace tocl
