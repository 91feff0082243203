#pragma once
// Setting kernel arguments and enqueueing a kernel on a stream.
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/error.h"
#include "runtime/stream.h"

namespace tocl {

// A global memory argument: the buffer plus an element offset passed as the
// next argument (kernels declare `__global T* x, ulong x_offset`).
struct BufferArg {
  cl_mem buffer;
  uint64_t offset;  // in elements of the kernel's type
};

// A local-memory argument of `bytes` (the kernel declares `__local T* x`).
struct LocalArg {
  size_t bytes;
};

// A by-value argument whose type is chosen at run time (a float or double accumulator).
struct RawArg {
  size_t size;
  const void* value;
};

namespace detail {
inline void set_arg(cl_kernel k, cl_uint& i, const LocalArg& l) { TOCL_CHECK(clSetKernelArg(k, i++, l.bytes, nullptr)); }
inline void set_arg(cl_kernel k, cl_uint& i, const RawArg& r) { TOCL_CHECK(clSetKernelArg(k, i++, r.size, r.value)); }
inline void set_arg(cl_kernel k, cl_uint& i, const BufferArg& b) {
  TOCL_CHECK(clSetKernelArg(k, i++, sizeof(cl_mem), &b.buffer));
  const cl_ulong offset = b.offset;
  TOCL_CHECK(clSetKernelArg(k, i++, sizeof(cl_ulong), &offset));
}
template <typename T>
void set_arg(cl_kernel k, cl_uint& i, const T& value) {
  static_assert(std::is_trivially_copyable<T>::value, "kernel arguments are copied by value");
  TOCL_CHECK(clSetKernelArg(k, i++, sizeof(T), &value));
}
}  // namespace detail

template <typename... Args>
void set_args(cl_kernel kernel, const Args&... args) {
  cl_uint index = 0;
  (detail::set_arg(kernel, index, args), ...);
}

// Arguments set one at a time, in order: for kernels whose argument count depends on a list
// (set_args takes a fixed one). The same conversions as set_args.
class ArgSetter {
 public:
  explicit ArgSetter(cl_kernel kernel) : kernel_(kernel) {}
  template <typename T>
  ArgSetter& set(const T& value) {
    detail::set_arg(kernel_, index_, value);
    return *this;
  }

 private:
  cl_kernel kernel_;
  cl_uint index_ = 0;
};

// Enqueues a 1-D launch of `global` work items (rounded up to the work-group
// size; kernels bound-check against their own count argument).
void enqueue_1d(int device, int stream, cl_kernel kernel, size_t global, size_t local = 0);

// Enqueues a 3-D launch; each global size must be a multiple of its local size.
void enqueue_3d(int device, int stream, cl_kernel kernel, const size_t global[3], const size_t local[3]);

// The line kernels of the CPU forms over `runs` runs (kernels_cl/prelude.cl's RUN_ID, RUN_LANE): a work-item a
// run where the device's line_lanes is 1; else a 2-D launch of line_lanes items (dim 0) by runs (dim 1), so
// that a run's lanes share one vector and its index arithmetic (from dim 1) is uniform across it: its loads
// are then vector loads, not gathers (Intel's compiler counts them in its remarks: TORCH_OPENCL_VERBOSE=1).
// Groups of 256 items: Intel's runtime pays per group.
void enqueue_runs(int device, int stream, cl_kernel kernel, size_t runs);

// Enqueues a launch of 1 to 3 dimensions. `local` may be nullptr (the driver chooses the group);
// otherwise each global size must be a multiple of its local size.
void enqueue_nd(int device, int stream, cl_kernel kernel, cl_uint dims, const size_t* global, const size_t* local);

// Number of kernels the enqueue_* functions have launched in this process (a debug counter for tests).
uint64_t launch_count();

// Test hook: while on, the function names of the kernels enqueue_1d/enqueue_3d launch are kept in
// order (so a test can tell which form of a kernel family ran). Turning it on clears the list.
void record_kernel_names(bool on);
std::vector<std::string> recorded_kernel_names();

}  // namespace tocl
