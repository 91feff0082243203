#pragma once
// GEMM on NVIDIA tensor cores (kernels_cl/gemm_mma.cl) for mm/addmm/bmm/baddbmm where the device's kernel
// forms allow it (runtime/kernel_forms.h: tensor_core_gemm): float16 and bfloat16 products always (the same
// exact float products and float sums as gemm_tiled.cl), float32 ones only where torch's float32 matmul
// precision is not "highest" (torch.set_float32_matmul_precision("high"): TF32, as CUDA takes it).
// aten/native/blas.cpp asks it before the tiled kernel.
#include <ATen/core/Tensor.h>

namespace torch_opencl {

// c = alpha * a @ b + beta * s, with tiled_gemm's operands and conventions (gemm_tiled.h); false (nothing
// done) where this kernel does not take the product. The first product on a driver that cannot build the
// kernel warns once and turns it off for that device.
bool mma_gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, double alpha, double beta,
              const at::Tensor& s);

}  // namespace torch_opencl
