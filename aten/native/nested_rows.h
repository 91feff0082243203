#pragma once
// Nested tensors of rows on opencl: components [length_i, D] over one contiguous buffer, the form
// PyTorch's transformer fast path builds from a padding mask. The fast-path kernels
// (transformer_fast_paths.cpp) run on their padded form with a key padding mask and return to rows.
#include <ATen/core/Tensor.h>

namespace torch_opencl::nested_rows {

// Whether `nt` is a nested tensor of rows: 2-D components of one width over a contiguous buffer.
bool holds_rows(const at::Tensor& nt);

// The longest component's length.
int64_t max_length(const at::Tensor& nt);

// [B, length, D]: each component's rows at the start of its slice, `padding` after them.
at::Tensor to_padded(const at::Tensor& nt, double padding, int64_t length);

// The nested tensor of `padded`'s ([B, T, D]) leading rows, `nested_sizes[b][0]` of them for batch b
// (nested_sizes: a CPU int64 [B, 2] of (length, D)).
at::Tensor from_padded(const at::Tensor& padded, const at::Tensor& nested_sizes);

// bool [B, length], true past each component's end: the key padding mask of the padded form.
at::Tensor padding_mask(const at::Tensor& nt, int64_t length);

}  // namespace torch_opencl::nested_rows
