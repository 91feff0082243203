#pragma once
// GEMM, batched GEMM, GEMV and DOT on opencl tensors of float32 or float64 (our kernels, then CLBlast),
// and of float16 and bfloat16 through float32 (as CPU multiplies and adds them, rounded once at the end).
// Operands go to CLBlast as they are laid out (row- or column-major through the transpose flags, leading
// dimension, offset, batch stride); only a matrix that is neither is copied to a contiguous one.
#include <ATen/core/Tensor.h>

namespace torch_opencl {

// True for the dtypes these routines compute natively (float32, float64; float16 and bfloat16 in float32).
bool blas_supports(c10::ScalarType type);

// c = alpha * a @ b + beta * c for a (m, k), b (k, n), c (m, n). With beta == 0, c's old
// values (NaN included) are ignored; with k == 0, c = beta * c.
// With an addend (broadcastable to c, not overlapping it unless it is c): c = alpha * a @ b + beta *
// addend, one launch where our GEMM kernels serve (addmm's bias read in place); beta == 0 ignores it.
void gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, double alpha, double beta,
          const at::Tensor& addend = {});

// The same for every batch: a (B, m, k), b (B, k, n), c (B, m, n); any batch stride (0 for expanded).
void gemm_batched(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, double alpha, double beta,
                  const at::Tensor& addend = {});

// y = alpha * a @ x + beta * y for a (m, n), x (n), y (m); with an addend (broadcastable to y, not
// overlapping it unless it is y), y = alpha * a @ x + beta * addend.
void gemv(const at::Tensor& a, const at::Tensor& x, const at::Tensor& y, double alpha, double beta,
          const at::Tensor& addend = {});

// CPU's checks of dot's operands (1-D, one dtype, one length), with its messages; vdot makes them too.
void check_dot_operands(const at::Tensor& self, const at::Tensor& other);

// out (0-d) = x . y for two 1-D tensors of one length.
void dot(const at::Tensor& x, const at::Tensor& y, const at::Tensor& out);

}  // namespace torch_opencl
