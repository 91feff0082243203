#pragma once
// Integer matrix products (int8, uint8, int16, int32, int64) with CPU's wraparound in the dtype:
// kernels_cl/gemm_integer.cl. The float dtypes go through aten/native/blas.cpp's GEMMs.
#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

namespace torch_opencl {

// Whether integer_gemm computes this dtype (integers other than bool).
bool integer_gemm_supports(c10::ScalarType type);

// c = alpha * a @ b + beta * addend (c itself when addend is undefined), for 2-D a (m, k), b (k, n),
// c (m, n), or 3-D with a leading batch; any strides (0 for broadcast operands or addend). alpha and beta
// convert to the dtype as CPU's (an out-of-range value raises). beta == 0 ignores the addend.
// CPU's error for bool (not implemented for 'Bool' in `cpu_name`) is raised by the caller's dtype check.
void integer_gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, const c10::Scalar& alpha,
                  const c10::Scalar& beta, const at::Tensor& addend = {});

}  // namespace torch_opencl
