// Cholesky on the device: linalg.cholesky(_ex), torch.cholesky (LAPACK's potrf: kernels_cl/linalg.cl's cholesky,
// a work-group per matrix), cholesky_solve and cholesky_inverse (two triangular solves with the factor). ATen's own
// functions run (checks, messages, _linalg_check_errors) and reach the device through cholesky_stub and
// cholesky_inverse_stub, registered below for PrivateUse1, and our _cholesky_solve_helper. float32 and float64;
// complex on the CPU fallback.
#include <ATen/ATen.h>
#include <ATen/native/BatchLinearAlgebra.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/ops/cholesky_inverse_native.h>
#include <ATen/ops/cholesky_native.h>
#include <ATen/ops/linalg_cholesky_ex_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/kernel_support/structured.h"
#include "aten/native/linalg_kernels.h"

namespace torch_opencl {
namespace {

using at::Tensor;

// cholesky_stub: `input` (A) is overwritten by its factor in the triangle `upper` names; info as LAPACK's potrf.
void cholesky_kernel(const Tensor& input, const Tensor& infos, bool upper) {
  if (input.numel() == 0) return;
  const c10::DeviceGuard guard(input.device());
  check_lapack_dtype(input, "cholesky");
  const int64_t n = input.size(-1);
  const Tensor a = column_major_work(input), info = contiguous_work(infos);
  const int device = device_index(input);
  const size_t wg = linalg_group(device);
  cl_kernel k = linalg_kernel(input, "cholesky");
  tocl::set_args(k, buffer_arg(a), buffer_arg(info), static_cast<cl_int>(n), static_cast<cl_int>(upper));
  tocl::enqueue_1d(device, current_stream_of(input), k, static_cast<size_t>(at::native::batchCount(a)) * wg, wg);
  finish_work(input, a);
  finish_work(infos, info);
}

// A X = B with A = L L^T (or U^T U) given its factor: two triangular solves in place of X (column-major).
void solve_with_factor(const Tensor& factor, const Tensor& X, bool upper) {
  const Tensor M = column_major_work(factor);
  triangular_solve_in_place(M, X, /*left=*/true, upper, /*transpose=*/upper, /*unit=*/false);
  triangular_solve_in_place(M, X, /*left=*/true, upper, /*transpose=*/!upper, /*unit=*/false);
}

// cholesky_inverse_stub: `result` holds the factor (column-major), infos (on the CPU) stay zeros.
Tensor& cholesky_inverse_kernel(Tensor& result, Tensor& /*infos*/, bool upper) {
  if (result.numel() == 0) return result;
  const c10::DeviceGuard guard(result.device());
  check_lapack_dtype(result, "cholesky_inverse");
  const int64_t n = result.size(-1);
  Tensor X = at::eye(n, result.options()).expand(result.sizes()).mT().contiguous().mT();
  solve_with_factor(result, X, upper);
  result.copy_(X);
  return result;
}

// _cholesky_solve_helper (B and A broadcast by cholesky_solve).
Tensor cholesky_solve_helper(const Tensor& B, const Tensor& A, bool upper) {
  check_same_device({B, A});
  check_lapack_dtype(B, "cholesky_solve");
  const c10::DeviceGuard guard(B.device());
  Tensor X = at::native::cloneBatchedColumnMajor(B);
  solve_with_factor(A, X, upper);
  return X;
}

std::tuple<Tensor, Tensor> cholesky_ex(const Tensor& A, bool upper, bool check_errors) {
  StructuredFunctional<at::native::structured_linalg_cholesky_ex_out, 2> op;
  op.meta(A, upper, check_errors);
  check_lapack_dtype(A, "cholesky");
  op.impl(A, upper, check_errors, op.maybe_get_output(0), op.maybe_get_output(1));
  return {op.take(0), op.take(1)};
}

std::tuple<Tensor&, Tensor&> cholesky_ex_out(const Tensor& A, bool upper, bool check_errors, Tensor& L, Tensor& info) {
  StructuredOut<at::native::structured_linalg_cholesky_ex_out, 2> op(L, info);
  op.meta(A, upper, check_errors);
  check_lapack_dtype(A, "cholesky");
  op.impl(A, upper, check_errors, op.maybe_get_output(0), op.maybe_get_output(1));
  op.finish();
  return {L, info};
}

Tensor cholesky(const Tensor& A, bool upper) {
  check_lapack_dtype(A, "cholesky");
  return at::native::cholesky(A, upper);
}

Tensor cholesky_inverse(const Tensor& A, bool upper) {
  check_lapack_dtype(A, "cholesky_inverse");
  return at::native::cholesky_inverse(A, upper);
}

Tensor& cholesky_inverse_out(const Tensor& A, bool upper, Tensor& out) {
  check_lapack_dtype(A, "cholesky_inverse");
  return at::native::cholesky_inverse_out(A, upper, out);
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("linalg_cholesky_ex", TORCH_FN(cholesky_ex));
  m.impl("linalg_cholesky_ex.L", TORCH_FN(cholesky_ex_out));
  m.impl("cholesky", TORCH_FN(cholesky));
  m.impl("cholesky_inverse", TORCH_FN(cholesky_inverse));
  m.impl("cholesky_inverse.out", TORCH_FN(cholesky_inverse_out));
  m.impl("_cholesky_solve_helper", TORCH_FN(cholesky_solve_helper));
}

}  // namespace torch_opencl

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(cholesky_stub, &torch_opencl::cholesky_kernel)
REGISTER_PRIVATEUSE1_DISPATCH(cholesky_inverse_stub, &torch_opencl::cholesky_inverse_kernel)
}  // namespace at::native
