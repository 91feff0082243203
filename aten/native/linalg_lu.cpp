// LU-based dense linear algebra on the device: linalg_lu_factor_ex (LAPACK's getrf: partial pivoting, 1-based
// int32 pivots, info = the first zero pivot), linalg_lu_solve (getrs), lu_unpack, and the structured composites
// ATen builds on them: linalg_lu, _linalg_solve_ex (linalg.solve), linalg_inv_ex (linalg.inv, inverse),
// _linalg_det (det) and _linalg_slogdet (slogdet, logdet). ATen's own structured meta and impl functions run
// (its checks, its messages, its _linalg_check_errors); their device work reaches us through the DispatchStubs
// registered below for PrivateUse1: lu_factor_stub, lu_solve_stub and unpack_pivots_stub. Kernels in
// kernels_cl/linalg.cl: a work-group per matrix, or per (matrix, block of right-hand sides).
// float32 and float64; complex runs on the CPU fallback; other dtypes raise as CPU's LAPACK kernels do.
#include <ATen/ATen.h>
#include <ATen/native/BatchLinearAlgebra.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/native/TransposeType.h>
#include <ATen/ops/_linalg_det_native.h>
#include <ATen/ops/_linalg_slogdet_native.h>
#include <ATen/ops/_linalg_solve_ex_native.h>
#include <ATen/ops/linalg_inv_ex_native.h>
#include <ATen/ops/linalg_lu_factor_ex_native.h>
#include <ATen/ops/linalg_lu_native.h>
#include <ATen/ops/linalg_lu_solve_native.h>
#include <ATen/ops/lu_unpack_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/kernel_support/structured.h"
#include "aten/native/linalg_kernels.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

using at::Tensor;

// The unblocked LU of column-major matrices in place (pivots and info contiguous): a work-item per matrix up to the
// device's linalg_serial_max rows and columns, else a work-group per matrix.
void lu_unblocked(const Tensor& a, const Tensor& piv, const Tensor& info, bool compute_pivots) {
  const int64_t m = a.size(-2), n = a.size(-1), batches = at::native::batchCount(a);
  const int device = device_index(a);
  if (serial_matrix(device, std::max(m, n))) {
    cl_kernel k = linalg_kernel(a, "lu_factor_small");
    tocl::set_args(k, buffer_arg(a), buffer_arg(piv), buffer_arg(info), static_cast<cl_int>(m), static_cast<cl_int>(n),
                   static_cast<cl_int>(compute_pivots), static_cast<cl_long>(batches));
    tocl::enqueue_1d(device, current_stream_of(a), k, static_cast<size_t>(batches));
  } else {
    const size_t wg = linalg_group(device);
    cl_kernel k = linalg_kernel(a, "lu_factor");
    tocl::set_args(k, buffer_arg(a), buffer_arg(piv), buffer_arg(info), static_cast<cl_int>(m), static_cast<cl_int>(n),
                   static_cast<cl_int>(compute_pivots));
    tocl::enqueue_1d(device, current_stream_of(a), k, static_cast<size_t>(batches) * wg, wg);
  }
}

// perm (int64, the identity, contiguous, m per matrix) after the k row interchanges of pivots (int32, contiguous).
void pivots_to_permutation(const Tensor& perm, const Tensor& pivots, int64_t m, int64_t k) {
  const int64_t batches = perm.numel() / m;
  cl_kernel kernel = linalg_kernel(at::empty({0}, perm.options().dtype(at::kFloat)), "lu_pivots_to_permutation");
  tocl::set_args(kernel, buffer_arg(perm), buffer_arg(pivots), static_cast<cl_long>(batches), static_cast<cl_int>(m),
                 static_cast<cl_int>(k));
  tocl::enqueue_1d(device_index(perm), current_stream_of(perm), kernel, static_cast<size_t>(batches));
}

constexpr int64_t kPanel = kTriangularBlock;

// LAPACK's blocked right-looking getrf on column-major a: each panel of kPanel columns factored unblocked, its row
// interchanges applied to the other columns, U's block row by a triangular solve and the trailing matrix updated by
// one matrix product. The products, most of the arithmetic, run on the GEMM kernels across the device, where the
// unblocked kernels give a matrix one work-group. Pivots and info as the unblocked ones (LAPACK's).
void lu_blocked(const Tensor& a, const Tensor& piv, const Tensor& info, bool compute_pivots) {
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  const auto batch = a.sizes().slice(0, a.dim() - 2).vec();
  const auto shape = [&](std::initializer_list<int64_t> tail) {
    auto s = batch;
    s.insert(s.end(), tail);
    return s;
  };
  const auto int_options = a.options().dtype(at::kInt);
  info.zero_();
  for (int64_t j0 = 0; j0 < k; j0 += kPanel) {
    const int64_t jb = std::min(kPanel, k - j0), rows = m - j0, right = n - j0 - jb;
    const Tensor panel = a.narrow(-2, j0, rows).narrow(-1, j0, jb), P = column_major_work(panel);
    const Tensor panel_piv = at::empty(shape({jb}), int_options), panel_info = at::empty(batch, int_options);
    lu_unblocked(P, panel_piv, panel_info, compute_pivots);
    finish_work(panel, P);
    piv.narrow(-1, j0, jb).copy_(panel_piv + static_cast<int>(j0));
    info.copy_(at::where(info.eq(0).logical_and(panel_info.gt(0)), panel_info + static_cast<int>(j0), info));
    if (compute_pivots) {  // the panel's interchanges on the columns left and right of it
      const Tensor perm = at::arange(rows, a.options().dtype(at::kLong)).expand(shape({rows})).contiguous();
      pivots_to_permutation(perm, panel_piv, rows, jb);
      for (const auto& [first, count] : {std::pair<int64_t, int64_t>{0, j0}, {j0 + jb, right}}) {
        if (count == 0) continue;
        const Tensor block = a.narrow(-2, j0, rows).narrow(-1, first, count);
        block.copy_(block.gather(-2, perm.unsqueeze(-1).expand(shape({rows, count}))));
      }
    }
    if (right == 0) continue;
    const Tensor L11 = column_major_work(a.narrow(-2, j0, jb).narrow(-1, j0, jb));
    const Tensor A12 = a.narrow(-2, j0, jb).narrow(-1, j0 + jb, right), U12 = column_major_work(A12);
    triangular_solve_in_place(L11, U12, /*left=*/true, /*upper=*/false, /*transpose=*/false, /*unit=*/true);
    finish_work(A12, U12);
    if (rows > jb) {
      const Tensor A22 = a.narrow(-2, j0 + jb, rows - jb).narrow(-1, j0 + jb, right);
      A22.sub_(at::matmul(a.narrow(-2, j0 + jb, rows - jb).narrow(-1, j0, jb), U12));
    }
  }
}

// lu_factor_stub: `input` holds A (it is overwritten by its LU), pivots and infos receive LAPACK's.
void lu_factor_kernel(const Tensor& input, const Tensor& pivots, const Tensor& infos, bool compute_pivots) {
  if (input.numel() == 0) return;
  const c10::DeviceGuard guard(input.device());
  check_lapack_dtype(input, "lu");
  const int64_t m = input.size(-2), n = input.size(-1);
  TORCH_CHECK(m <= std::numeric_limits<int>::max() && n <= std::numeric_limits<int>::max(),
              "linalg.lu_factor: matrices of more than INT_MAX rows or columns are not supported on opencl");
  const Tensor a = column_major_work(input), piv = contiguous_work(pivots), info = contiguous_work(infos);
  if (std::min(m, n) >= kBlockedFrom)
    lu_blocked(a, piv, info, compute_pivots);
  else
    lu_unblocked(a, piv, info, compute_pivots);
  finish_work(input, a);
  finish_work(pivots, piv);
  finish_work(infos, info);
}

// lu_solve_stub: B (n x nrhs matrices, batched as the broadcast of its and LU's batch shapes) is overwritten by the
// solution of A X = B (NoTranspose) or A^T X = B.
void lu_solve_kernel(const Tensor& LU, const Tensor& pivots, const Tensor& B, at::native::TransposeType trans) {
  if (B.numel() == 0) return;
  const c10::DeviceGuard guard(B.device());
  check_lapack_dtype(LU, "lu_solve");
  TORCH_INTERNAL_ASSERT(trans != at::native::TransposeType::ConjTranspose, "lu_solve: complex runs on the CPU");
  const int64_t n = LU.size(-1), nrhs = B.size(-1);
  const Tensor lu = column_major_work(LU), piv = contiguous_work(pivots), b = column_major_work(B);
  const auto lu_batch_shape = LU.sizes().slice(0, LU.dim() - 2), b_batch_shape = B.sizes().slice(0, B.dim() - 2);
  // Where B's batch is broadcast over LU's, each matrix of B names its LU.
  const bool broadcast = lu_batch_shape != b_batch_shape;
  Tensor lu_batch;
  if (broadcast)
    lu_batch = at::arange(at::native::batchCount(LU), B.options().dtype(at::kLong))
                   .view(lu_batch_shape)
                   .expand(b_batch_shape)
                   .contiguous();
  const int device = device_index(B);
  const int64_t batches = at::native::batchCount(b);
  const cl_int transposed = trans == at::native::TransposeType::Transpose;
  if (n >= kBlockedFrom) {
    // Blocked: the interchanges as one gather (or scatter) of rows, then the two blocked triangular solves.
    auto perm_shape = lu_batch_shape.vec();
    perm_shape.push_back(n);
    const Tensor perm = at::arange(n, B.options().dtype(at::kLong)).expand(perm_shape).contiguous();
    pivots_to_permutation(perm, piv, n, n);
    const Tensor rows = perm.unsqueeze(-1).expand(b.sizes());
    if (!transposed) {
      b.copy_(b.gather(-2, rows));
      triangular_solve_blocked(lu, b, /*lower=*/true, /*unit=*/true);
      triangular_solve_blocked(lu, b, /*lower=*/false, /*unit=*/false);
    } else {
      triangular_solve_blocked(lu.mT(), b, /*lower=*/true, /*unit=*/false);
      triangular_solve_blocked(lu.mT(), b, /*lower=*/false, /*unit=*/true);
      b.scatter_(-2, rows, b.clone());
    }
  } else if (serial_matrix(device, n)) {
    cl_kernel k = linalg_kernel(B, "lu_solve_small");
    tocl::set_args(k, buffer_arg(lu), buffer_arg(piv), buffer_arg(lu_batch), static_cast<cl_int>(broadcast),
                   buffer_arg(b), static_cast<cl_long>(n * nrhs), static_cast<cl_int>(n), static_cast<cl_int>(nrhs),
                   transposed, static_cast<cl_long>(batches * nrhs));
    tocl::enqueue_1d(device, current_stream_of(B), k, static_cast<size_t>(batches * nrhs));
  } else {
    const size_t wg = linalg_group(device);
    const int64_t blocks = (nrhs + kSolveBlock - 1) / kSolveBlock;
    cl_kernel k = linalg_kernel(B, "lu_solve");
    tocl::set_args(k, buffer_arg(lu), buffer_arg(piv), buffer_arg(lu_batch), static_cast<cl_int>(broadcast),
                   buffer_arg(b), static_cast<cl_long>(n * nrhs), static_cast<cl_int>(n), static_cast<cl_int>(nrhs),
                   static_cast<cl_int>(kSolveBlock), transposed);
    tocl::enqueue_1d(device, current_stream_of(B), k, static_cast<size_t>(batches * blocks) * wg, wg);
  }
  finish_work(B, b);
}

// unpack_pivots_stub: the iterator's output is the identity permutation (m per matrix, int64, contiguous), its
// input the 1-based pivots (k per matrix, int32, contiguous), as lu_unpack builds them.
void unpack_pivots_kernel(at::TensorIterator& iter, int64_t dim_size, int64_t max_pivot) {
  const Tensor perm(iter.tensor_base(0)), pivots(iter.tensor_base(1));
  if (perm.numel() == 0 || dim_size == 0) return;
  const c10::DeviceGuard guard(perm.device());
  TORCH_INTERNAL_ASSERT(perm.is_contiguous() && pivots.is_contiguous() && pivots.scalar_type() == at::kInt);
  TORCH_CHECK(!at::logical_or(pivots < 1, pivots > max_pivot).any().item<bool>(),
              "pivots passed to lu_unpack must be between 1 and LU.size(-2) inclusive."
              "Did you properly pass the result of lu_factor?");
  pivots_to_permutation(perm, pivots, max_pivot, dim_size);
}

// ---- The structured operators, for PrivateUse1: ATen's meta (checks, output shapes and strides), then its impl,
// which reaches the stubs above. Functional forms allocate, out= forms compute into the given tensors (or into
// proxies of the meta's strides, copied back).

template <class Op, size_t... I>
auto outputs_of(Op& op, std::index_sequence<I...>) {
  return std::make_tuple(op.take(I)...);
}

std::tuple<Tensor, Tensor, Tensor> lu_factor_ex(const Tensor& A, bool pivot, bool check_errors) {
  StructuredFunctional<at::native::structured_linalg_lu_factor_ex_out, 3> op;
  op.meta(A, pivot, check_errors);
  check_lapack_dtype(A, "lu");
  op.impl(A, pivot, check_errors, op.maybe_get_output(0), op.maybe_get_output(1), op.maybe_get_output(2));
  return outputs_of(op, std::make_index_sequence<3>());
}

std::tuple<Tensor&, Tensor&, Tensor&> lu_factor_ex_out(const Tensor& A, bool pivot, bool check_errors, Tensor& LU,
                                                       Tensor& pivots, Tensor& info) {
  StructuredOut<at::native::structured_linalg_lu_factor_ex_out, 3> op(LU, pivots, info);
  op.meta(A, pivot, check_errors);
  check_lapack_dtype(A, "lu");
  op.impl(A, pivot, check_errors, op.maybe_get_output(0), op.maybe_get_output(1), op.maybe_get_output(2));
  op.finish();
  return {LU, pivots, info};
}

Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
  StructuredFunctional<at::native::structured_linalg_lu_solve_out> op;
  check_same_device({LU, pivots, B});
  op.meta(LU, pivots, B, left, adjoint);
  check_lapack_dtype(LU, "lu_solve");
  op.impl(LU, pivots, B, left, adjoint, op.maybe_get_output(0));
  return op.take();
}

Tensor& lu_solve_out(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint, Tensor& out) {
  StructuredOut<at::native::structured_linalg_lu_solve_out> op(out);
  check_same_device({LU, pivots, B});
  op.meta(LU, pivots, B, left, adjoint);
  check_lapack_dtype(LU, "lu_solve");
  op.impl(LU, pivots, B, left, adjoint, op.maybe_get_output(0));
  op.finish();
  return out;
}

std::tuple<Tensor, Tensor, Tensor, Tensor> solve_ex(const Tensor& A, const Tensor& B, bool left, bool check_errors) {
  StructuredFunctional<at::native::structured__linalg_solve_ex_out, 4> op;
  check_same_device({A, B});
  op.meta(A, B, left, check_errors);
  check_lapack_dtype(A, "linalg_solve");
  op.impl(A, B, left, check_errors, op.maybe_get_output(0), op.maybe_get_output(1), op.maybe_get_output(2),
          op.maybe_get_output(3));
  return outputs_of(op, std::make_index_sequence<4>());
}

std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> solve_ex_out(const Tensor& A, const Tensor& B, bool left,
                                                            bool check_errors, Tensor& result, Tensor& LU,
                                                            Tensor& pivots, Tensor& info) {
  StructuredOut<at::native::structured__linalg_solve_ex_out, 4> op(result, LU, pivots, info);
  check_same_device({A, B});
  op.meta(A, B, left, check_errors);
  check_lapack_dtype(A, "linalg_solve");
  op.impl(A, B, left, check_errors, op.maybe_get_output(0), op.maybe_get_output(1), op.maybe_get_output(2),
          op.maybe_get_output(3));
  op.finish();
  return {result, LU, pivots, info};
}

std::tuple<Tensor, Tensor> inv_ex(const Tensor& A, bool check_errors) {
  StructuredFunctional<at::native::structured_linalg_inv_ex_out, 2> op;
  op.meta(A, check_errors);
  check_lapack_dtype(A, "linalg_inv");
  op.impl(A, check_errors, op.maybe_get_output(0), op.maybe_get_output(1));
  return outputs_of(op, std::make_index_sequence<2>());
}

std::tuple<Tensor&, Tensor&> inv_ex_out(const Tensor& A, bool check_errors, Tensor& inverse, Tensor& info) {
  StructuredOut<at::native::structured_linalg_inv_ex_out, 2> op(inverse, info);
  op.meta(A, check_errors);
  check_lapack_dtype(A, "linalg_inv");
  op.impl(A, check_errors, op.maybe_get_output(0), op.maybe_get_output(1));
  op.finish();
  return {inverse, info};
}

std::tuple<Tensor, Tensor, Tensor> det(const Tensor& A) {
  StructuredFunctional<at::native::structured__linalg_det_out, 3> op;
  op.meta(A);
  check_lapack_dtype(A, "linalg_det");
  op.impl(A, op.maybe_get_output(0), op.maybe_get_output(1), op.maybe_get_output(2));
  return outputs_of(op, std::make_index_sequence<3>());
}

std::tuple<Tensor&, Tensor&, Tensor&> det_out(const Tensor& A, Tensor& result, Tensor& LU, Tensor& pivots) {
  StructuredOut<at::native::structured__linalg_det_out, 3> op(result, LU, pivots);
  op.meta(A);
  check_lapack_dtype(A, "linalg_det");
  op.impl(A, op.maybe_get_output(0), op.maybe_get_output(1), op.maybe_get_output(2));
  op.finish();
  return {result, LU, pivots};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> slogdet(const Tensor& A) {
  StructuredFunctional<at::native::structured__linalg_slogdet_out, 4> op;
  op.meta(A);
  check_lapack_dtype(A, "linalg_slogdet");
  op.impl(A, op.maybe_get_output(0), op.maybe_get_output(1), op.maybe_get_output(2), op.maybe_get_output(3));
  return outputs_of(op, std::make_index_sequence<4>());
}

std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> slogdet_out(const Tensor& A, Tensor& sign, Tensor& logabsdet,
                                                           Tensor& LU, Tensor& pivots) {
  StructuredOut<at::native::structured__linalg_slogdet_out, 4> op(sign, logabsdet, LU, pivots);
  op.meta(A);
  check_lapack_dtype(A, "linalg_slogdet");
  op.impl(A, op.maybe_get_output(0), op.maybe_get_output(1), op.maybe_get_output(2), op.maybe_get_output(3));
  op.finish();
  return {sign, logabsdet, LU, pivots};
}

// lu_unpack copies triangles and scatters a permutation: any real dtype (as CPU); complex on the fallback.
void check_unpack_dtype(const Tensor& LU) {
  if (at::isComplexType(LU.scalar_type())) throw_dtype_not_native("lu_unpack: complex dtypes run on the CPU");
}

std::tuple<Tensor, Tensor, Tensor> lu_unpack(const Tensor& LU, const Tensor& pivots, bool unpack_data,
                                             bool unpack_pivots) {
  StructuredFunctional<at::native::structured_lu_unpack_out, 3> op;
  check_same_device({LU, pivots});
  op.meta(LU, pivots, unpack_data, unpack_pivots);
  check_unpack_dtype(LU);
  op.impl(LU, pivots, unpack_data, unpack_pivots, op.maybe_get_output(0), op.maybe_get_output(1),
          op.maybe_get_output(2));
  return outputs_of(op, std::make_index_sequence<3>());
}

std::tuple<Tensor&, Tensor&, Tensor&> lu_unpack_out(const Tensor& LU, const Tensor& pivots, bool unpack_data,
                                                    bool unpack_pivots, Tensor& P, Tensor& L, Tensor& U) {
  StructuredOut<at::native::structured_lu_unpack_out, 3> op(P, L, U);
  check_same_device({LU, pivots});
  op.meta(LU, pivots, unpack_data, unpack_pivots);
  check_unpack_dtype(LU);
  op.impl(LU, pivots, unpack_data, unpack_pivots, op.maybe_get_output(0), op.maybe_get_output(1),
          op.maybe_get_output(2));
  op.finish();
  return {P, L, U};
}

std::tuple<Tensor, Tensor, Tensor> lu(const Tensor& A, bool pivot) {
  StructuredFunctional<at::native::structured_linalg_lu_out, 3> op;
  op.meta(A, pivot);
  check_lapack_dtype(A, "lu");
  op.impl(A, pivot, op.maybe_get_output(0), op.maybe_get_output(1), op.maybe_get_output(2));
  return outputs_of(op, std::make_index_sequence<3>());
}

std::tuple<Tensor&, Tensor&, Tensor&> lu_out(const Tensor& A, bool pivot, Tensor& P, Tensor& L, Tensor& U) {
  StructuredOut<at::native::structured_linalg_lu_out, 3> op(P, L, U);
  op.meta(A, pivot);
  check_lapack_dtype(A, "lu");
  op.impl(A, pivot, op.maybe_get_output(0), op.maybe_get_output(1), op.maybe_get_output(2));
  op.finish();
  return {P, L, U};
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("linalg_lu_factor_ex", TORCH_FN(lu_factor_ex));
  m.impl("linalg_lu_factor_ex.out", TORCH_FN(lu_factor_ex_out));
  m.impl("linalg_lu_solve", TORCH_FN(lu_solve));
  m.impl("linalg_lu_solve.out", TORCH_FN(lu_solve_out));
  m.impl("_linalg_solve_ex", TORCH_FN(solve_ex));
  m.impl("_linalg_solve_ex.result", TORCH_FN(solve_ex_out));
  m.impl("linalg_inv_ex", TORCH_FN(inv_ex));
  m.impl("linalg_inv_ex.inverse", TORCH_FN(inv_ex_out));
  m.impl("_linalg_det", TORCH_FN(det));
  m.impl("_linalg_det.result", TORCH_FN(det_out));
  m.impl("_linalg_slogdet", TORCH_FN(slogdet));
  m.impl("_linalg_slogdet.sign", TORCH_FN(slogdet_out));
  m.impl("lu_unpack", TORCH_FN(lu_unpack));
  m.impl("lu_unpack.out", TORCH_FN(lu_unpack_out));
  m.impl("linalg_lu", TORCH_FN(lu));
  m.impl("linalg_lu.out", TORCH_FN(lu_out));
}

}  // namespace torch_opencl

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(lu_factor_stub, &torch_opencl::lu_factor_kernel)
REGISTER_PRIVATEUSE1_DISPATCH(lu_solve_stub, &torch_opencl::lu_solve_kernel)
REGISTER_PRIVATEUSE1_DISPATCH(unpack_pivots_stub, &torch_opencl::unpack_pivots_kernel)
}  // namespace at::native
