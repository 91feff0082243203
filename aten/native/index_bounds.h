#pragma once
// Bounds checks of index tensors on the device (nll_loss targets, embedding and
// index_select indices, gather/scatter indices): two small kernels and a 16-byte
// read back, so that a bad index raises CPU's error instead of reading out of bounds.
#include <ATen/core/Tensor.h>

#include <optional>

namespace torch_opencl {

struct OutOfRange {
  int64_t position;  // in the index tensor's contiguous order
  int64_t value;
};

// The first element of `index` (an integer opencl tensor) outside [lo, hi), ignoring
// `skip` when given; nullopt when all are in range. Waits for the device.
std::optional<OutOfRange> first_out_of_range(const at::Tensor& index, int64_t lo, int64_t hi,
                                             std::optional<int64_t> skip = std::nullopt);

}  // namespace torch_opencl
