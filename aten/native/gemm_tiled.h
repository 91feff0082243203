#pragma once
// Our GEMM shaped for GPUs (kernels_cl/gemm_tiled.cl): mm/addmm/bmm/baddbmm on devices of the GPU
// kernel class, every batch in one launch, operands read in place with any strides.
// aten/native/blas.cpp asks it first (after the CPU-class kernel, gemm_small.h) and falls back to CLBlast.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>

namespace torch_opencl {

// How one product runs: the tile (64 rm x 64 rn, K stages of bk) and the number of K splits.
struct TiledGemmPlan {
  int rm = 1, rn = 1, bk = 16;
  int splits = 1;
};

// The plan for an (m, n, k) product over `batch` matrices of `type` on `device`.
TiledGemmPlan plan_tiled_gemm(int device, c10::ScalarType type, int64_t m, int64_t n, int64_t k, int64_t batch);

// `plan` with its K stages made shallow enough for `local_bytes` of local memory (0: unknown, unchanged):
// a tuned or forced plan whose stages exceed the device's would fail to launch (CL_OUT_OF_RESOURCES; a
// 2x2 tile 32 deep is 33 KiB of floats, past the 32 KiB of many GPUs, and doubles take twice that).
// nullopt: not even 4-deep stages fit, and the product goes to CLBlast.
std::optional<TiledGemmPlan> fit_local_memory(TiledGemmPlan plan, uint64_t local_bytes, size_t element);

// Makes every tiled GEMM of this process use `plan` (tests reach each path with it); nullopt restores
// the device's plans.
void override_tiled_gemm_plan(std::optional<TiledGemmPlan> plan);

// Turns the kernel off (and on) for this process: the tuner times CLBlast on GPU-class devices with it off.
void set_tiled_gemm_enabled(bool enabled);

// c = alpha * a @ b + beta * s with a (.., m, k), b (.., k, n), c and s (.., m, n), 2-D or 3-D (batch
// first, any batch strides including 0 for a, b and s), when the device's kernel forms choose this
// kernel; false (nothing done) otherwise. s is c itself or an addend that does not overlap c, broadcast
// by strides 0 (addmm's bias); beta == 0 ignores it (NaN included). k >= 1.
bool tiled_gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, double alpha, double beta,
                const at::Tensor& s);

}  // namespace torch_opencl
