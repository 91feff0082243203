#pragma once
// Sparse COO @ dense on the device: addmm with a sparse first operand (sparse.mm, mm, addmm and
// their gradients reach it), written over index_select and index_add_.
#include <ATen/core/Tensor.h>

namespace torch_opencl {

at::Tensor& addmm_sparse_dense_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                                   const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out);
at::Tensor addmm_sparse_dense(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                              const at::Scalar& beta, const at::Scalar& alpha);
at::Tensor& addmm_sparse_dense_(at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                                const at::Scalar& beta, const at::Scalar& alpha);

}  // namespace torch_opencl
