#include "runtime/memcpy.h"

#include "runtime/allocator.h"
#include "runtime/deferred_errors.h"
#include "runtime/error.h"
#include "runtime/kernel_forms.h"
#include "runtime/launch.h"
#include "runtime/program_cache.h"
#include "runtime/stream.h"
#include "runtime/trace.h"

#include <algorithm>

namespace tocl {
namespace {

Resolved resolve_range(int device, const void* address, size_t bytes) {
  const Resolved r = allocator(device).resolve(address);
  if (r.offset + bytes > r.buffer_size)
    throw Error("A copy of " + std::to_string(bytes) + " bytes runs past the end of its OpenCL buffer.");
  return r;
}

cl_kernel bulk_kernel(int device, const char* name) {
  return get_kernel(get_embedded_program(device, "bulk_memory.cl"), name);
}

// A bulk_memory.cl kernel over `bytes`: chunks of at least 64 KiB, at most four a compute unit (PoCL runs
// a work-group, here of one item, on one core). The kernel takes the tail past the last whole vector in
// its last item, so the launch has exactly this many items.
void enqueue_bulk(int device, int stream, cl_kernel kernel, size_t bytes) {
  const size_t items = std::clamp<size_t>(bytes >> 16, 1, 4 * kernel_forms(device).compute_units);
  enqueue_1d(device, stream, kernel, items, 1);
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
  const size_t kernel_min = kernel_forms(device).kernel_copy_min_bytes;
  const bool overlap = s.buffer == d.buffer && s.offset < d.offset + bytes && d.offset < s.offset + bytes;
  if (kernel_min && bytes >= kernel_min && !overlap) {  // overlapping ranges: the driver's error, as before
    const size_t unit = (s.offset | d.offset | bytes) % 4 == 0 ? 4 : 1;
    cl_kernel k = bulk_kernel(device, unit == 4 ? "copy_u32" : "copy_u8");
    set_args(k, BufferArg{d.buffer, d.offset / unit}, BufferArg{s.buffer, s.offset / unit},
             static_cast<cl_ulong>(bytes / unit));
    enqueue_bulk(device, stream, k, bytes);
    return;
  }
  trace::Scope traced(device, stream, trace::Kind::Memcpy, "Memcpy DtoD");
  TOCL_CHECK(clEnqueueCopyBuffer(queue(device, stream), s.buffer, d.buffer, s.offset, d.offset, bytes, 0, nullptr,
                                 traced.event()));
}

void fill_device(int device, int stream, void* dst, const void* pattern, size_t pattern_size, size_t bytes) {
  if (bytes == 0) return;
  const Resolved d = resolve_range(device, dst, bytes);
  const size_t kernel_min = kernel_forms(device).kernel_fill_min_bytes;
  // Patterns of 1, 2, 4 and 8 bytes (a complex double's 16 stay with the driver).
  static const char* const names[] = {nullptr, "fill_u8", "fill_u16", nullptr, "fill_u32",
                                      nullptr, nullptr,   nullptr,    "fill_u64"};
  const char* name = pattern_size <= 8 ? names[pattern_size] : nullptr;
  if (kernel_min && bytes >= kernel_min && name && d.offset % pattern_size == 0) {
    cl_kernel k = bulk_kernel(device, name);
    set_args(k, BufferArg{d.buffer, d.offset / pattern_size}, static_cast<cl_ulong>(bytes / pattern_size),
             RawArg{pattern_size, pattern});
    enqueue_bulk(device, stream, k, bytes);
    return;
  }
  trace::Scope traced(device, stream, trace::Kind::Memset, "Memset");
  TOCL_CHECK(clEnqueueFillBuffer(queue(device, stream), d.buffer, pattern, pattern_size, d.offset, bytes, 0, nullptr,
                                 traced.event()));
}

}  // namespace tocl
