#pragma once
// A floating-point kernel argument declared as the kernel's accumulation type: double for double
// tensors, float otherwise. It holds both forms of the value, so it must outlive the set_args call that
// passes `arg`.
#include "runtime/launch.h"

namespace torch_opencl {

struct AccArg {
  cl_float f;
  cl_double d;
  tocl::RawArg arg;
  AccArg(double value, bool is_double) : f(static_cast<cl_float>(value)), d(value) {
    arg = is_double ? tocl::RawArg{sizeof(d), &d} : tocl::RawArg{sizeof(f), &f};
  }
  AccArg(const AccArg&) = delete;
  AccArg& operator=(const AccArg&) = delete;
};

}  // namespace torch_opencl
