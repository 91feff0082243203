#pragma once
// dense + alpha * sparse COO on the device (add with a strided self and a sparse other, and so
// to_dense and optimizers stepping with sparse gradients), written over index_add_.
#include <ATen/core/Tensor.h>

namespace torch_opencl {

at::Tensor& add_sparse_into_dense_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha,
                                      at::Tensor& out);
at::Tensor add_sparse_into_dense(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha);
at::Tensor& add_sparse_into_dense_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha);

}  // namespace torch_opencl
