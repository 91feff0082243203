#pragma once
// The row sort behind sort, argsort and topk (aten/native/sort.cpp, kernels_cl/sort.cl), for operators that
// select from sorted rows (kthvalue, median, mode, unique, isin).
#include <ATen/core/Tensor.h>

namespace torch_opencl {

// Sorts the rows of `in` (contiguous, rows x n, n >= 1) into contiguous `values` (in's dtype) and int64
// `indices` (positions within the row), in the stable order: equal keys keep their order, NaN is the largest key.
void sort_rows(const at::Tensor& in, int64_t rows, int64_t n, bool desc, const at::Tensor& values,
               const at::Tensor& indices);

}  // namespace torch_opencl
