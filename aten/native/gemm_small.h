#pragma once
// Our own GEMM kernel (kernels_cl/gemm.cl) for the small and medium products that CLBlast
// runs slowly on CPU OpenCL drivers (PoCL): training-sized linear layers, attention's batched
// products, convolution's im2col products. aten/native/blas.cpp asks it first and falls back to CLBlast.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace torch_opencl {

// c = alpha * a @ b + beta * s with a (.., m, k), b (.., k, n), c and s (.., m, n), 2-D or 3-D (batch
// first, any batch strides including 0), when the kernel serves this device and size; false
// (nothing done) otherwise. Operands of any strides are read in place, except a B whose columns
// are not adjacent: that one is packed first. s is c itself or an addend that does not overlap c,
// broadcast by strides 0 (addmm's bias); beta == 0 ignores it (NaN included).
bool small_gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, double alpha, double beta,
                const at::Tensor& s);

// Whether the kernel reads B (k, n) through packed panels of its column tiles (nc columns each): the rule
// the products torch.compile generates follow too (python/torch_opencl/_inductor/gemm.py).
bool small_gemm_packs_b(int64_t m, int64_t n, int64_t k, int64_t sbn, int64_t nc);
// B's panels as the kernel reads them, for a 2-D float32 B: (tiles_n, k, nc) contiguous, zeros past n.
at::Tensor small_gemm_pack_b(const at::Tensor& b, int64_t nc);

// Products of at most this many multiply-adds per matrix (m * n * k) use the kernel; 0 disables
// it. Default kSmallGemmLimit, or TORCH_OPENCL_SMALL_GEMM_LIMIT from the environment.
int64_t small_gemm_limit();
void set_small_gemm_limit(int64_t limit);

}  // namespace torch_opencl
