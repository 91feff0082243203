#pragma once
// OpenCL errors as C++ exceptions whose message names the error code and the
// call that failed. runtime/ knows nothing of c10; aten/ translates these.
#include <stdexcept>
#include <string>

#include "runtime/opencl.h"

namespace tocl {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, cl_int code = CL_SUCCESS)
      : std::runtime_error(message), code_(code) {}
  cl_int code() const { return code_; }

 private:
  cl_int code_;
};

// Device memory exhausted even after the allocator emptied its cache.
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

// A program failed to compile; the message carries the build log.
class BuildError : public Error {
 public:
  using Error::Error;
};

// "CL_OUT_OF_RESOURCES" for -5; "CL_UNKNOWN_ERROR(<code>)" for codes not in the table.
std::string error_name(cl_int code);

[[noreturn]] void throw_cl_error(cl_int code, const char* call, const char* file, int line);

}  // namespace tocl

#define TOCL_CHECK(call)                                               \
  do {                                                                 \
    const cl_int tocl_check_status_ = (call);                          \
    if (tocl_check_status_ != CL_SUCCESS)                              \
      ::tocl::throw_cl_error(tocl_check_status_, #call, __FILE__, __LINE__); \
  } while (0)
