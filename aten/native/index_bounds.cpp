#include "aten/native/index_bounds.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/memcpy.h"
#include "runtime/program_cache.h"

namespace torch_opencl {

std::optional<OutOfRange> first_out_of_range(const at::Tensor& index, int64_t lo, int64_t hi,
                                             std::optional<int64_t> skip) {
  if (index.numel() == 0) return std::nullopt;
  TORCH_CHECK(at::isIntegralType(index.scalar_type(), /*includeBool=*/false), "expected an integer index tensor, got ",
              index.scalar_type());
  const auto idx = index.contiguous();
  const int device = device_index(idx);
  const int stream = current_stream_of(idx);
  // Spans of at least 64 indices per work-item, at most 1024 groups.
  const int64_t n = idx.numel();
  const int64_t groups = std::min<int64_t>(1024, (n + row_group(device) * 64 - 1) / (row_group(device) * 64));
  const int64_t span = (n + groups - 1) / groups;
  auto result = at::empty({2 + groups}, idx.options().dtype(at::kLong));
  const auto partial = result.narrow(0, 2, groups);
  const cl_program program = dtype_program(device, "index_bounds.cl", at::kLong, idx.scalar_type());
  cl_kernel spans = tocl::get_kernel(program, "first_out_of_range_spans");
  tocl::set_args(spans, buffer_arg(partial), buffer_arg(idx), static_cast<cl_long>(n), static_cast<cl_long>(span),
                 static_cast<cl_long>(lo), static_cast<cl_long>(hi), static_cast<cl_int>(skip.has_value()),
                 static_cast<cl_long>(skip.value_or(0)));
  tocl::enqueue_1d(device, stream, spans, groups * row_group(device), row_group(device));
  cl_kernel k = tocl::get_kernel(program, "first_out_of_range");
  tocl::set_args(k, buffer_arg(result), buffer_arg(partial), static_cast<cl_long>(groups), buffer_arg(idx));
  tocl::enqueue_1d(device, stream, k, row_group(device), row_group(device));
  int64_t host[2];
  tocl::copy_device_to_host(device, stream, host, result.const_data_ptr(), sizeof(host));
  if (host[0] < 0) return std::nullopt;
  return OutOfRange{host[0], host[1]};
}

}  // namespace torch_opencl
