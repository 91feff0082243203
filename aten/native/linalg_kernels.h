#pragma once
// What the dense linear-algebra operators share (aten/native/linalg_lu.cpp, linalg_triangular.cpp,
// linalg_cholesky.cpp): their dtype rule, the program of kernels_cl/linalg.cl, column-major working copies, and
// the batched triangular solve that LU, Cholesky and solve_triangular all end in.
#include <ATen/core/Tensor.h>

#include "runtime/opencl.h"

namespace torch_opencl {

// float32 and float64 run on the device; complex hands the call to the CPU fallback (DtypeNotNative); any other
// dtype raises NotImplementedError, as CPU's LAPACK kernels do ("<op>_opencl" not implemented for '<dtype>').
void check_lapack_dtype(const at::Tensor& t, const char* op);

// Right-hand sides per work-group of the solves: the columns of a block share the group's row steps.
constexpr int kSolveBlock = 32;

// Whether matrices of n rows and columns take the kernels of a work-item per matrix (or per matrix and right-hand
// side): up to the device's linalg_serial_max (runtime/kernel_forms.h).
bool serial_matrix(int device, int64_t n);

// A kernel of linalg.cl's program for like's device and dtype, and the work-group size it was built for.
cl_kernel linalg_kernel(const at::Tensor& like, const char* name);
size_t linalg_group(int device);

// A batch of column-major matrices to compute in: t itself where it is one, else a copy; finish_work copies the
// result back into t where it was a copy. contiguous_work likewise for contiguous tensors.
at::Tensor column_major_work(const at::Tensor& t);
at::Tensor contiguous_work(const at::Tensor& t);
void finish_work(const at::Tensor& t, const at::Tensor& work);

// The blocked forms (LAPACK's blocked getrf, BLAS's blocked trsm) from this many rows and columns: blocks of
// kTriangularBlock (LU's panels of as many columns) by the unblocked kernels, the rest of the arithmetic in GEMMs
// across the device (the unblocked kernels give a matrix one work-group, or one work-item).
constexpr int64_t kBlockedFrom = 128;
constexpr int64_t kTriangularBlock = 64;

// op(M) X = B (left) or X op(M) = B in place of B, op(M) = M^T where `transpose`, M read from its upper or lower
// triangle (unit: ones on its diagonal instead of M's). M: a batch of n x n column-major matrices, n * n apart, as
// many as B has; B: a batch of column-major matrices.
void triangular_solve_in_place(const at::Tensor& M, const at::Tensor& B, bool left, bool upper, bool transpose,
                               bool unit);

// T X = B in place of X (any layouts; T's batch broadcast over X's), T lower or upper triangular (only that triangle
// is read; unit: ones on the diagonal), blocked as above.
void triangular_solve_blocked(const at::Tensor& T, const at::Tensor& X, bool lower, bool unit);

}  // namespace torch_opencl
