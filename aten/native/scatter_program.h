#pragma once
// What the kernels of kernels_cl/scatter_gather.cl take: their program (one per data dtype and
// index dtype, whatever the shapes), the strided geometry of up to three operands over one
// iteration shape, and how an update that may hit one element twice is made safe.
#include <ATen/core/Tensor.h>

#include <array>

#include "runtime/opencl.h"

namespace torch_opencl {

// Update codes, as UPDATE_* in kernels_cl/scatter_gather.cl.
enum class Update : cl_int { Assign = 0, Add = 1, Mul = 2, Max = 3, Min = 4 };

constexpr int kGeometryDims = 8;   // MAX_DIMS in the kernel source
constexpr int kMaxIndices = 8;     // MAX_INDICES
// RUN, the positions a work-item walks per turn, on `device`: 16 in the GPU form; 256 in the CPU form, whose
// work-items pay cursor_at's divisions once per run (16 left a gather at 10x CPU's time on PoCL).
int64_t positions_per_item(int device);

// The work-items a kernel of the file takes for `total` positions on `device`.
inline size_t work_items(int64_t total, int device) {
  const int64_t run = positions_per_item(device);
  return static_cast<size_t>((total + run - 1) / run);
}

// Laid out as `Geometry` in the kernel source (passed by value).
struct Geometry {
  cl_long ndim;
  cl_long sizes[kGeometryDims];
  cl_long strides[3][kGeometryDims];
};

// Laid out as `Indexed`.
struct Indexed {
  cl_long count;
  cl_long row_stride;
  cl_long sizes[kMaxIndices];
  cl_long strides[kMaxIndices];
};

// Sizes and three operands' element strides over them (each as long as `sizes`); size-1 dims are
// dropped and dims that are contiguous in all three operands merged. Raises a clear error when more
// than kGeometryDims dims remain. `op` names the operator in that error.
Geometry make_geometry(at::IntArrayRef sizes, const std::array<std::vector<int64_t>, 3>& strides, const char* op);

// The kernel `name` of kernels_cl/scatter_gather.cl for `like`'s dtype and `index_type`.
cl_kernel scatter_gather_kernel(const at::Tensor& like, const char* name, c10::ScalarType index_type);

// Enqueues a kernel whose update is `update`: reductions run with atomics where the device has them
// for the element size, else on one work-item (still correct, slower). Sets the kernel's last two
// arguments (op, atomic) itself, after the caller set the others.
void enqueue_update(const at::Tensor& like, cl_kernel kernel, cl_uint first_update_arg, Update update, int64_t total);

}  // namespace torch_opencl
