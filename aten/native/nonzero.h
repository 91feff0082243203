#pragma once
// Stream compaction in element order (aten/native/nonzero.cpp, kernels_cl/nonzero.cl): per-chunk counts
// scanned into exclusive offsets, and the total read back (the one wait of an operator whose result size
// depends on the data). nonzero, masked_select and masked_scatter_ use it; unique writes its runs with it.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>

namespace torch_opencl {

constexpr int64_t kCompactionChunk = 256;  // elements per work-item

// Chunks of kCompactionChunk elements in n.
int64_t compaction_chunks(int64_t n);

// `offsets` (contiguous int64, chunks + 1) holds each chunk's count in its first `chunks` elements: they
// become exclusive offsets and offsets[chunks] the total, which is returned (waits for the device). The scan
// runs in nonzero.cl's program for like's dtype (the data's: no program of its own).
int64_t scan_chunk_counts(const at::Tensor& offsets, const at::Tensor& like);

// Exclusive offsets (chunks + 1 int64, the last the total) of the nonzero elements of `flags` (contiguous,
// not empty) per chunk, and the total, read back.
std::pair<at::Tensor, int64_t> count_nonzero_chunks(const at::Tensor& flags);

}  // namespace torch_opencl
