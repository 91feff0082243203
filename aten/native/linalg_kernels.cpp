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
  const std::string sfmin = type == at::kDouble ? "DBL_MIN" : "FLT_MIN";
  return tocl::get_kernel(
      dtype_program(device, "linalg.cl", type, at::kInt, linalg_group(device), "#define SFMIN " + sfmin + "\n"), name);
}

bool serial_matrix(int device, int64_t n) { return n <= static_cast<int64_t>(tocl::kernel_forms(device).linalg_serial_max); }

at::Tensor column_major_work(const at::Tensor& t) {
  return t.dim() >= 2 && t.mT().is_contiguous() ? t : t.mT().contiguous().mT();
}

at::Tensor contiguous_work(const at::Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }

void finish_work(const at::Tensor& t, const at::Tensor& work) {
  if (!work.is_same(t)) t.copy_(work);
}

void triangular_solve_in_place(const at::Tensor& M, const at::Tensor& B, bool left, bool upper, bool transpose,
                               bool unit) {
  if (B.numel() == 0) return;
  const c10::DeviceGuard guard(B.device());
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

}  // namespace torch_opencl
