// Triangular solves on the device: linalg.solve_triangular and torch.triangular_solve (BLAS's trsm, kernels_cl/
// linalg.cl's triangular_solve, a work-group per (matrix, block of right-hand sides)). ATen's own functions run
// (their checks, broadcasting and layouts) and reach the device through triangular_solve_stub, registered below
// for PrivateUse1. float32 and float64; complex on the CPU fallback.
#include <ATen/ATen.h>
#include <ATen/native/BatchLinearAlgebra.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/TransposeType.h>
#include <ATen/ops/linalg_solve_triangular_native.h>
#include <ATen/ops/triangular_solve_native.h>
#include <torch/library.h>

#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/out_arguments.h"
#include "aten/kernel_support/structured.h"
#include "aten/native/linalg_kernels.h"

namespace torch_opencl {
namespace {

using at::Tensor;

// triangular_solve_stub: op(A) X = B (left) or X op(A) = B in place of B (column-major). ATen's callers pass A
// column-major, or row-major with `upper` and the transposition already flipped for the column-major reading of its
// memory (BLAS's view): that reading is A itself or A^T.
void triangular_solve_kernel(const Tensor& A, const Tensor& B, bool left, bool upper,
                             at::native::TransposeType trans, bool unitriangular) {
  check_lapack_dtype(A, "triangular_solve");
  TORCH_INTERNAL_ASSERT(trans != at::native::TransposeType::ConjTranspose, "triangular_solve: complex runs on the CPU");
  const Tensor M = A.mT().is_contiguous() ? A : A.is_contiguous() ? A.mT() : column_major_work(A);
  triangular_solve_in_place(M, B, left, upper, trans == at::native::TransposeType::Transpose, unitriangular);
}

Tensor solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular) {
  check_same_device({A, B});
  check_lapack_dtype(A, "linalg_solve_triangular");
  return at::native::linalg_solve_triangular(A, B, upper, left, unitriangular);
}

Tensor& solve_triangular_out(const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular, Tensor& out) {
  check_same_device({A, B});
  check_out_device(out, A.device(), "linalg_solve_triangular");  // CPU inputs with a device out= crashed
  check_lapack_dtype(A, "linalg_solve_triangular");
  // As CPU's: the out= is of the solve's dtype (another reached the kernels, whose build failed for int64).
  const auto type = at::promote_types(A.scalar_type(), B.scalar_type());
  TORCH_CHECK(out.scalar_type() == type, "expected scalar type ", type, " but found ", out.scalar_type());
  return at::native::linalg_solve_triangular_out(A, B, upper, left, unitriangular, out);
}

std::tuple<Tensor, Tensor> triangular_solve(const Tensor& B, const Tensor& A, bool upper, bool transpose,
                                            bool unitriangular) {
  StructuredFunctional<at::native::structured_triangular_solve_out, 2> op;
  check_same_device({B, A});
  op.meta(B, A, upper, transpose, unitriangular);
  check_lapack_dtype(A, "triangular_solve");
  op.impl(B, A, upper, transpose, unitriangular, op.maybe_get_output(0), op.maybe_get_output(1));
  return {op.take(0), op.take(1)};
}

std::tuple<Tensor&, Tensor&> triangular_solve_out(const Tensor& B, const Tensor& A, bool upper, bool transpose,
                                                  bool unitriangular, Tensor& X, Tensor& M) {
  StructuredOut<at::native::structured_triangular_solve_out, 2> op(X, M);
  check_same_device({B, A});
  op.meta(B, A, upper, transpose, unitriangular);
  check_lapack_dtype(A, "triangular_solve");
  op.impl(B, A, upper, transpose, unitriangular, op.maybe_get_output(0), op.maybe_get_output(1));
  op.finish();
  return {X, M};
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("linalg_solve_triangular", TORCH_FN(solve_triangular));
  m.impl("linalg_solve_triangular.out", TORCH_FN(solve_triangular_out));
  m.impl("triangular_solve", TORCH_FN(triangular_solve));
  m.impl("triangular_solve.X", TORCH_FN(triangular_solve_out));
}

}  // namespace torch_opencl

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(triangular_solve_stub, &torch_opencl::triangular_solve_kernel)
}  // namespace at::native
