#pragma once
// Bounds checks of index tensors on the device (nll_loss targets, embedding and
// index_select indices, gather/scatter indices): two small kernels and a 16-byte
// read back, so that a bad index raises CPU's error instead of reading out of bounds;
// or, where checks are deferred, one kernel that records a bad index for the next wait.
#include <ATen/core/Tensor.h>

#include <optional>

#include "runtime/deferred_errors.h"

namespace torch_opencl {

struct OutOfRange {
  int64_t position;  // in the index tensor's contiguous order
  int64_t value;
};

// The first element of `index` (an integer opencl tensor) outside [lo, hi), ignoring
// `skip` when given; nullopt when all are in range. Waits for the device.
std::optional<OutOfRange> first_out_of_range(const at::Tensor& index, int64_t lo, int64_t hi,
                                             std::optional<int64_t> skip = std::nullopt);

// Whether index checks on `index`'s device are deferred (runtime/kernel_forms.h: GPU class).
bool index_checks_deferred(const at::Tensor& index);

// The deferred check: one kernel records an element of `index` outside [lo, hi) (but `skip`) in the error
// record of `site` (tocl::error_site, named once per call site), and nothing waits; the site's IndexError is
// raised at the next wait on the stream (runtime/deferred_errors.h). The caller's kernels must leave a bad
// index alone (skip or clamp it).
void record_out_of_range(const at::Tensor& index, int64_t lo, int64_t hi, std::optional<int64_t> skip, int site);

// A torch.compile'd graph's index-error buffer (kernels_cl/inductor.cl's tocl_index_error), armed after a
// run on a device that defers index checks instead of read back: checked at the stream's next wait.
void arm_compiled_graph_errors(const at::Tensor& record);

}  // namespace torch_opencl
