#pragma once
// Sums of source slices grouped by an index along one dim (kernels_cl/segment_sum.cl), deterministic and
// without atomics: embedding_dense_backward and index_add. The GPU form (runtime/kernel_forms.h:
// sorted_segment_sums) sorts the index stably and sums its runs in parallel; the CPU form, where it
// accumulates without scale_by_freq, walks the index in order with a work-item per group of columns.
#include <ATen/core/Tensor.h>

namespace torch_opencl {

// Whether segment_sums_into serves these operands: a dtype it sums (not bool or complex), and the
// dims before `dim` and those after it each forming one strided run in both tensors.
bool segment_sums_serve(const at::Tensor& target, const at::Tensor& source, int64_t dim);

// For each n, slice index[n] of target along dim gets slice n of source: the slices sent to one
// target slice are summed in the order of n and then added (accumulate) or stored. scale_by_freq
// divides each sum by its count; target slice skip (-1: none) is left alone. `index` (int32 or int64,
// any shape, source.size(dim) == index.numel()) must be in [0, target.size(dim)): callers check it.
void segment_sums_into(const at::Tensor& target, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                       bool accumulate, int64_t skip = -1, bool scale_by_freq = false);

}  // namespace torch_opencl
