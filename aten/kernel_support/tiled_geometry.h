#pragma once
// The index scheme of the strided kernels (copy_strided, fill_strided, pointwise_strided):
// kernels_cl/tiled_index.cl. A TiledLaunch holds the TiledGeometry kernel argument for a
// TensorIterator and the 3-D launch that goes with it; sizes and strides are arguments, so a
// program serves every shape, with one 32-bit and one 64-bit index variant.
#include <ATen/TensorIterator.h>
#include <CL/cl.h>

#include <array>
#include <string>

namespace torch_opencl {

constexpr int kTiledMaxDims = 12;  // MAX_DIMS in the strided kernels

struct TiledLaunch {
  bool index64 = false;                   // 64-bit index math (IDX_T ulong) needed
  bool nd = false;                        // more than 5 dims: the kernel variant named *_nd
  size_t global[3] = {0, 0, 0};
  int group_shift = 8;                    // log2 of the work-group (the device's elementwise group)
  std::array<unsigned char, 640> bytes{};  // the TiledGeometry argument
  size_t size = 0;                         // its size in bytes
};

// The launch over `iter`'s operands (output first) in `nops` operand slots (2 or 4); operands
// past the iterator's and CPU scalars get zero strides. False if iter has more than
// kTiledMaxDims dims.
bool tiled_launch(const at::TensorIteratorBase& iter, int nops, TiledLaunch& launch);

// TORCH_OPENCL_DEBUG_INDEX64=1 makes every elementwise and strided-copy launch use the 64-bit
// index variant, so tests reach it without tensors of 2^31 elements.
bool force_index64();

// `base` ("copy_strided"), or its *_nd variant where the launch needs it.
std::string tiled_kernel_name(const char* base, const TiledLaunch& launch);

// Source text a strided program starts with: MAX_DIMS, NOPS, IDX_T/SIDX_T and tiled_index.cl.
std::string tiled_source(int nops, bool index64);

// Sets the geometry as argument `index` of k and enqueues the launch.
void enqueue_tiled(int device, int stream, cl_kernel k, cl_uint index, const TiledLaunch& launch);

// The lines form of the strided kernels (kernel_forms' pointwise_lines: pointwise_lines, copy_lines): where
// the output steps by one element along iteration dim 0 and every input by one or zero, a work-item takes a
// run of dim 0 instead of an element, so that its loop has fixed steps and vectorises. Returns the inputs
// that step by one as bits (input 0 is bit 0), or -1 where the form does not apply: other steps, or lines
// too short for a run to pay (the tiles serve those). Inputs whose bit is set in `skip` (host scalars,
// passed by value) do not count.
int line_steps(const at::TensorIteratorBase& iter, uint32_t skip = 0);

// Sets the geometry as argument `geometry_index` of a lines kernel and (runs, chunks, run) as arguments
// `runs_index` on, each line cut into runs of up to `run` elements, and enqueues one work-item per run.
void enqueue_lines(int device, int stream, cl_kernel k, cl_uint geometry_index, cl_uint runs_index,
                   const TiledLaunch& launch, const at::TensorIteratorBase& iter, int64_t run);

}  // namespace torch_opencl
