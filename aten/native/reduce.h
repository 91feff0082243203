#pragma once
// The reduction engine (aten/native/reduce.cpp, kernels_cl/reduce.cl): reduces an
// opencl tensor over a set of dims into given outputs. Shapes, dtypes and
// argument checks are the callers' (ATen's meta functions); the engine only
// computes.
#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

#include <bitset>

namespace torch_opencl {

// Op codes, as the enum in kernels_cl/reduce.cl.
enum class ReduceOp : int {
  Sum = 0, Prod = 1, Max = 2, Min = 3, Mean = 4, Any = 5, All = 6,
  NormP = 7, Norm0 = 8, Norm1 = 9, Norm2 = 10, NormInf = 11, NormNegInf = 12,
  Var = 13, Std = 14, LogSumExp = 15, NanSum = 16,
  CenteredMean = 17  // center + mean(x - center), center per output: var/std's first pass (reduce.cpp)
};

using ReduceMask = std::bitset<64>;  // bit d: dim d of the input is reduced

// Reduces `self` over `mask` into `out` (the result's shape, keepdim or not;
// its dtype is the result dtype). `acc` is the accumulate dtype. `p` is the
// norm order (NormP) or the correction (Var, Std).
void reduce_into(const at::Tensor& self, ReduceMask mask, bool keepdim, const at::Tensor& out, ReduceOp op,
                 c10::ScalarType acc, double p = 0);

// Values (optional, undefined to skip) and int64 indices of the max (or min)
// over `mask`; indices count row-major over the reduced dims, first on ties,
// NaN counting as the extreme, as on CPU.
void arg_reduce_into(const at::Tensor& self, ReduceMask mask, bool keepdim, const at::Tensor& values,
                     const at::Tensor& indices, bool is_max);

// The dtype reductions of `type` accumulate in: float for half, bfloat16 and float.
inline c10::ScalarType accumulate_dtype(c10::ScalarType type) {
  return (type == c10::kHalf || type == c10::kBFloat16) ? c10::kFloat : type;
}

}  // namespace torch_opencl
