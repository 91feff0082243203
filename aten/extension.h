#pragma once
// The public C++ API for out-of-tree kernels, installed as <torch_opencl/extension.h> with the headers it
// includes (cmake/public_headers.cmake lists them and why each is public). An extension registers
// TORCH_LIBRARY_IMPL(myops, PrivateUse1, m) kernels that run on the device's own queues:
//
//   cl_program p = tocl::get_program(device_index(t), kSource);       // built once, cached in memory and on disk
//   cl_kernel k = tocl::get_kernel(p, "my_kernel");                    // per thread
//   tocl::set_args(k, buffer_arg(x), buffer_arg(out), n);              // buffer + element offset of each tensor
//   tocl::enqueue_1d(device_index(t), current_stream_of(t), k, n);     // on the current stream, as ATen's kernels
//
// runtime/ headers (device, streams, programs, launches, errors) use OpenCL only; this one adds ATen's tensors.
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/launch.h"
#include "runtime/program_cache.h"
#include "runtime/stream.h"
