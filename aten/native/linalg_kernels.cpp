// The helpers of aten/native/linalg_kernels.h.
#include "aten/native/linalg_kernels.h"

#include <ATen/ATen.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <c10/core/DeviceGuard.h>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/kernel_forms.h"
#include "runtime/program_cache.h"

namespace torch_opencl {

void check_lapack_dtype(const at::Tensor& t, const char* op) {
  const auto type = t.scalar_type();
  if (at::isComplexType(type)) throw_dtype_not_native(c10::str(op, ": complex dtypes run on the CPU"));
  TORCH_CHECK_NOT_IMPLEMENTED(type == at::kFloat || type == at::kDouble, "\"", op, "_opencl\" not implemented for '",
                              type, "'");
  check_device_supports(type, device_index(t), op);
}

// The largest power of two within the device's row group (linalg.cl's reductions halve it).
size_t linalg_group(int device) {
  size_t wg = 1;
  while (wg * 2 <= row_group(device)) wg *= 2;
  return wg;
}

// One program per (device, dtype) holds every kernel of linalg.cl.
cl_kernel linalg_kernel(const at::Tensor& like, const char* name) {
  const int device = device_index(like);
  const auto type = like.scalar_type();
  return tocl::get_kernel(dtype_program(device, "linalg.cl", type, at::kInt, linalg_group(device)), name);
}

bool serial_matrix(int device, int64_t n) { return n <= static_cast<int64_t>(tocl::kernel_forms(device).linalg_serial_max); }

at::Tensor column_major_work(const at::Tensor& t) {
  return t.dim() >= 2 && t.mT().is_contiguous() ? t : t.mT().contiguous().mT();
}

at::Tensor contiguous_work(const at::Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }

void finish_work(const at::Tensor& t, const at::Tensor& work) {
  if (!work.is_same(t)) t.copy_(work);
}

namespace {

// The unblocked solve: a work-item per (matrix, right-hand side) up to the device's linalg_serial_max, else a
// work-group per matrix and block of right-hand sides.
void triangular_solve_unblocked(const at::Tensor& M, const at::Tensor& B, bool left, bool upper, bool transpose,
                                bool unit) {
  const at::Tensor b = column_major_work(B);
  const int64_t rows = b.size(-2), cols = b.size(-1), nrhs = left ? cols : rows;
  TORCH_INTERNAL_ASSERT(M.dim() >= 2 && M.mT().is_contiguous() && at::native::batchCount(M) == at::native::batchCount(b));
  const int device = device_index(B);
  const int64_t n = left ? rows : cols, batches = at::native::batchCount(b);
  if (serial_matrix(device, n)) {
    cl_kernel k = linalg_kernel(B, "triangular_solve_small");
    tocl::set_args(k, buffer_arg(M), buffer_arg(b), static_cast<cl_long>(rows * cols), static_cast<cl_int>(rows),
                   static_cast<cl_int>(cols), static_cast<cl_int>(left), static_cast<cl_int>(upper),
                   static_cast<cl_int>(transpose), static_cast<cl_int>(unit), static_cast<cl_long>(batches * nrhs));
    tocl::enqueue_1d(device, current_stream_of(B), k, static_cast<size_t>(batches * nrhs));
  } else {
    const size_t wg = linalg_group(device);
    const int64_t blocks = (nrhs + kSolveBlock - 1) / kSolveBlock;
    cl_kernel k = linalg_kernel(B, "triangular_solve");
    tocl::set_args(k, buffer_arg(M), buffer_arg(b), static_cast<cl_long>(rows * cols), static_cast<cl_int>(rows),
                   static_cast<cl_int>(cols), static_cast<cl_int>(left), static_cast<cl_int>(upper),
                   static_cast<cl_int>(transpose), static_cast<cl_int>(unit), static_cast<cl_int>(kSolveBlock));
    tocl::enqueue_1d(device, current_stream_of(B), k, static_cast<size_t>(batches * blocks) * wg, wg);
  }
  finish_work(B, b);
}

}  // namespace

void triangular_solve_blocked(const at::Tensor& T, const at::Tensor& X, bool lower, bool unit) {
  const int64_t n = T.size(-1);
  const auto batch = X.sizes().slice(0, X.dim() - 2).vec();
  auto square = batch;
  square.insert(square.end(), {n, n});
  const at::Tensor Tx = T.expand(square);
  for (int64_t s = 0; s < n; s += kTriangularBlock) {
    const int64_t ib = std::min(kTriangularBlock, n - s), i0 = lower ? s : n - s - ib;
    const at::Tensor D = column_major_work(Tx.narrow(-2, i0, ib).narrow(-1, i0, ib));
    const at::Tensor Xi = X.narrow(-2, i0, ib), xi = column_major_work(Xi);
    triangular_solve_unblocked(D, xi, /*left=*/true, /*upper=*/!lower, /*transpose=*/false, unit);
    finish_work(Xi, xi);
    const int64_t first = lower ? i0 + ib : 0, count = lower ? n - i0 - ib : i0;
    if (count > 0) X.narrow(-2, first, count).sub_(at::matmul(Tx.narrow(-2, first, count).narrow(-1, i0, ib), xi));
  }
}

void triangular_solve_in_place(const at::Tensor& M, const at::Tensor& B, bool left, bool upper, bool transpose,
                               bool unit) {
  if (B.numel() == 0) return;
  const c10::DeviceGuard guard(B.device());
  const int64_t n = left ? B.size(-2) : B.size(-1);
  if (n < kBlockedFrom) return triangular_solve_unblocked(M, B, left, upper, transpose, unit);
  // As a left solve T X = B with T = op(M) (or, right, op(M)^T X^T = B^T).
  if (left)
    triangular_solve_blocked(transpose ? M.mT() : M, B, /*lower=*/upper == transpose, unit);
  else
    triangular_solve_blocked(transpose ? M : M.mT(), B.mT(), /*lower=*/upper != transpose, unit);
}

}  // namespace torch_opencl
