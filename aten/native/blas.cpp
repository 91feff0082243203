#include "aten/native/blas.h"

#include <ATen/ATen.h>
#include <clblast.h>

#include <algorithm>
#include <optional>

#include "aten/kernel_support/cl_types.h"
#include "aten/native/gemm_mma.h"
#include "aten/native/gemm_small.h"
#include "aten/native/gemm_tiled.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/error.h"
#include "runtime/gemm_tuning.h"
#include "runtime/trace.h"

namespace torch_opencl {
namespace {

using clblast::Layout;
using clblast::StatusCode;
using clblast::Transpose;

std::string status_text(StatusCode s) {
  const int code = static_cast<int>(s);
  if (code > -1000) return tocl::error_name(code);  // an OpenCL error passed through
  switch (s) {
    case StatusCode::kNotImplemented: return "not implemented";
    case StatusCode::kInvalidMatrixA: return "invalid matrix A";
    case StatusCode::kInvalidMatrixB: return "invalid matrix B";
    case StatusCode::kInvalidMatrixC: return "invalid matrix C";
    case StatusCode::kInvalidVectorX: return "invalid vector X";
    case StatusCode::kInvalidVectorY: return "invalid vector Y";
    case StatusCode::kInvalidDimension: return "invalid dimension";
    case StatusCode::kInvalidLeadDimA: return "leading dimension of A too small";
    case StatusCode::kInvalidLeadDimB: return "leading dimension of B too small";
    case StatusCode::kInvalidLeadDimC: return "leading dimension of C too small";
    case StatusCode::kInvalidIncrementX: return "invalid increment of X";
    case StatusCode::kInvalidIncrementY: return "invalid increment of Y";
    case StatusCode::kInsufficientMemoryA: return "buffer of A too small";
    case StatusCode::kInsufficientMemoryB: return "buffer of B too small";
    case StatusCode::kInsufficientMemoryC: return "buffer of C too small";
    case StatusCode::kInsufficientMemoryX: return "buffer of X too small";
    case StatusCode::kInsufficientMemoryY: return "buffer of Y too small";
    case StatusCode::kInvalidBatchCount: return "invalid batch count";
    case StatusCode::kInvalidLocalMemUsage: return "kernel needs more local memory than the device has";
    case StatusCode::kNoDoublePrecision: return "the device has no double precision";
    case StatusCode::kDatabaseError: return "no parameters for this device in CLBlast's database";
    default: return "status " + std::to_string(code);
  }
}

void check(StatusCode s, const char* routine) {
  TORCH_CHECK(s == StatusCode::kSuccess, "CLBlast ", routine, " failed: ", status_text(s),
              ". If this follows GEMM tuning, remove the saved parameters (torch_opencl.tune --reset) "
              "or set TORCH_OPENCL_GEMM_TUNING=0.");
}

// A matrix as CLBlast takes it in row-major terms: `trans` when it is stored column-major.
struct Matrix {
  at::Tensor t;  // keeps a contiguous copy alive when one was needed
  bool trans = false;
  size_t ld = 1;
  tocl::BufferArg buf{};
};

// The (rows, cols) matrix at strides (s_row, s_col), if CLBlast can read it in place.
std::optional<std::pair<bool, size_t>> layout_of(int64_t rows, int64_t cols, int64_t s_row, int64_t s_col) {
  // Row-major: element (i, j) at i * ld + j.
  if ((cols <= 1 || s_col == 1) && (rows <= 1 || s_row >= std::max<int64_t>(cols, 1)))
    return std::make_pair(false, static_cast<size_t>(rows <= 1 ? std::max<int64_t>(cols, 1) : s_row));
  // Column-major: element (i, j) at j * ld + i.
  if ((rows <= 1 || s_row == 1) && (cols <= 1 || s_col >= std::max<int64_t>(rows, 1)))
    return std::make_pair(true, static_cast<size_t>(cols <= 1 ? std::max<int64_t>(rows, 1) : s_col));
  return std::nullopt;
}

// The last two dimensions of t as a matrix (leading ones are batch dimensions).
Matrix matrix_of(const at::Tensor& t) {
  const int64_t d = t.dim();
  Matrix m;
  auto l = layout_of(t.size(d - 2), t.size(d - 1), t.stride(d - 2), t.stride(d - 1));
  m.t = t;
  if (!l) {
    m.t = t.contiguous();
    l = layout_of(t.size(d - 2), t.size(d - 1), m.t.stride(d - 2), m.t.stride(d - 1));
  }
  m.trans = l->first;
  m.ld = l->second;
  m.buf = buffer_arg(m.t);
  return m;
}

// Per-matrix m * n * k from which batches run as separate Gemm calls (see run_gemm).
constexpr int64_t kBatchedDirectLimit = 64 * 64 * 64;

Transpose flag(bool trans) { return trans ? Transpose::kYes : Transpose::kNo; }

void check_operands(const char* op, std::initializer_list<const at::Tensor*> ts) {
  const at::Tensor& first = **ts.begin();
  for (const at::Tensor* t : ts) {
    TORCH_CHECK(t->device() == first.device(), op, ": expected all tensors on the same device, but found ",
                first.device(), " and ", t->device());
    TORCH_CHECK(t->scalar_type() == first.scalar_type(), op, ": expected all tensors of one dtype, but found ",
                first.scalar_type(), " and ", t->scalar_type());
  }
  TORCH_CHECK(blas_supports(first.scalar_type()), op, ": computes float32, float64, float16 and bfloat16, not ",
              first.scalar_type());
  check_device_supports(first.scalar_type(), device_index(first), op);
}

// c = beta * c, for the k == 0 case (and beta == 0 must clear NaNs).
void scale(const at::Tensor& c, double beta) {
  if (beta == 0) c.zero_();
  else if (beta != 1) c.mul_(beta);
}

template <typename T>
void run_gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, double alpha, double beta,
              int64_t batch) {
  const int64_t d = c.dim();
  const int64_t m = c.size(d - 2), n = c.size(d - 1), k = a.size(d - 1);
  const int device = device_index(c);
  tocl::ensure_gemm_tuning(device);
  cl_command_queue queue = tocl::queue(device, current_stream_of(c));
  Matrix A = matrix_of(a), B = matrix_of(b);
  const auto lc = layout_of(m, n, c.stride(d - 2), c.stride(d - 1));
  // C cannot be transposed in CLBlast: a column-major C is the row-major C^T = B^T A^T.
  at::Tensor target = c;
  bool c_trans = false;
  size_t ldc = 0;
  if (lc) {
    c_trans = lc->first;
    ldc = lc->second;
  } else {
    target = beta == 0 ? at::empty(c.sizes(), c.options()) : c.contiguous();
    ldc = n;
  }
  // beta == 0 ignores C's old values (NaN included) in CLBlast's Gemm and batched direct kernels (test_blas checks).
  const auto cb = buffer_arg(target);
  // Batch strides of what CLBlast reads (a contiguous copy has its own); 0 for an expanded batch.
  const size_t cs = d == 3 ? static_cast<size_t>(target.stride(0)) : 0;
  const size_t a_stride = d == 3 ? static_cast<size_t>(A.t.stride(0)) : 0;
  const size_t b_stride = d == 3 ? static_cast<size_t>(B.t.stride(0)) : 0;
  const T al = static_cast<T>(alpha), be = static_cast<T>(beta);
  // A column-major C is computed as the row-major C^T = B^T A^T.
  const Matrix& X = c_trans ? B : A;
  const Matrix& Y = c_trans ? A : B;
  const size_t x_stride = c_trans ? b_stride : a_stride, y_stride = c_trans ? a_stride : b_stride;
  const Transpose tx = flag(X.trans != c_trans), ty = flag(Y.trans != c_trans);
  const size_t rows = c_trans ? n : m, cols = c_trans ? m : n;
  // CLBlast 1.5.3's strided-batched indirect kernel gave wrong results (tuned parameters, n = 256), so
  // batches big enough for the indirect kernel run as one Gemm per matrix; small ones stay batched (direct).
  const bool per_matrix = d == 3 && m * n * k >= kBatchedDirectLimit;
  if (d == 2 || per_matrix) {
    for (int64_t i = 0; i < batch; ++i) {
      tocl::trace::Scope traced(device, current_stream_of(c), tocl::trace::Kind::Kernel, "clblast::Gemm");
      const StatusCode s = clblast::Gemm<T>(Layout::kRowMajor, tx, ty, rows, cols, k, al, X.buf.buffer,
                                            X.buf.offset + i * x_stride, X.ld, Y.buf.buffer,
                                            Y.buf.offset + i * y_stride, Y.ld, be, cb.buffer, cb.offset + i * cs, ldc,
                                            &queue, traced.event());
      check(s, "Gemm");
    }
  } else {
    tocl::trace::Scope traced(device, current_stream_of(c), tocl::trace::Kind::Kernel,
                              "clblast::GemmStridedBatched");
    const StatusCode s = clblast::GemmStridedBatched<T>(Layout::kRowMajor, tx, ty, rows, cols, k, al, X.buf.buffer,
                                                        X.buf.offset, X.ld, x_stride, Y.buf.buffer, Y.buf.offset, Y.ld,
                                                        y_stride, be, cb.buffer, cb.offset, ldc, cs, batch, &queue,
                                                        traced.event());
    check(s, "GemmStridedBatched");
  }
  if (!target.is_same(c)) c.copy_(target);
}

at::Tensor as_float(const at::Tensor& t) { return t.defined() ? t.to(at::kFloat) : t; }

// The addend a float16/bfloat16 product's float32 form adds: c's own values when it adds c.
at::Tensor float_addend(const at::Tensor& c, double beta, const at::Tensor& addend) {
  if (beta == 0) return at::Tensor();
  return as_float(addend.defined() ? addend : c);
}

void gemm_any(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, double alpha, double beta,
              const at::Tensor& addend, const char* op) {
  check_operands(op, {&a, &b, &c});
  if (addend.defined()) check_operands(op, {&c, &addend});
  const int64_t d = c.dim();
  const int64_t batch = d == 3 ? c.size(0) : 1;
  const int64_t m = c.size(d - 2), n = c.size(d - 1), k = a.size(d - 1);
  TORCH_CHECK(a.size(d - 2) == m && b.size(d - 2) == k && b.size(d - 1) == n && (d == 2 || (a.size(0) == batch &&
              b.size(0) == batch)), op, ": shapes ", a.sizes(), " @ ", b.sizes(), " -> ", c.sizes(), " do not match");
  if (batch == 0 || m == 0 || n == 0) return;
  // What beta scales: c itself, or the addend broadcast to c's shape (strides 0), which our kernels read
  // in place and CLBlast's Gemm needs copied into c first.
  const at::Tensor s = addend.defined() && beta != 0 && !addend.is_same(c) ? addend.expand(c.sizes()) : c;
  const auto addend_into_c = [&] {
    if (!s.is_same(c)) c.copy_(s);
  };
  if (k == 0) {
    addend_into_c();
    return scale(c, beta);
  }
  tocl::ensure_gemm_tuning(device_index(c));  // before any GEMM, so the tuning source reads alike either way
  if (computed_in_float(c.scalar_type())) {
    // CPU multiplies and adds float16 and bfloat16 in float32 and rounds each result once: so does our
    // GPU-class kernel, loading and storing them itself; elsewhere this goes through float32 copies
    // (transposed operands stay transposed; a broadcast addend stays broadcast).
    if (mma_gemm(a, b, c, alpha, beta, s) || tiled_gemm(a, b, c, alpha, beta, s)) return;
    const at::Tensor c32 = at::empty(c.sizes(), c.options().dtype(at::kFloat));
    gemm_any(as_float(a), as_float(b), c32, alpha, beta, float_addend(c, beta, addend), op);
    c.copy_(c32);
    return;
  }
  if (small_gemm(a, b, c, alpha, beta, s) || mma_gemm(a, b, c, alpha, beta, s) || tiled_gemm(a, b, c, alpha, beta, s))
    return;
  addend_into_c();
  if (c.scalar_type() == at::kFloat) run_gemm<float>(a, b, c, alpha, beta, batch);
  else run_gemm<double>(a, b, c, alpha, beta, batch);
}

// A vector's increment for CLBlast (never 0), copying an expanded one.
at::Tensor vector_of(const at::Tensor& v, size_t* inc) {
  if (v.size(0) <= 1) { *inc = 1; return v; }
  if (v.stride(0) >= 1) { *inc = v.stride(0); return v; }
  *inc = 1;
  return v.contiguous();
}

}  // namespace

bool blas_supports(c10::ScalarType type) { return type == at::kFloat || type == at::kDouble || computed_in_float(type); }

void gemm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, double alpha, double beta,
          const at::Tensor& addend) {
  TORCH_INTERNAL_ASSERT(a.dim() == 2 && b.dim() == 2 && c.dim() == 2);
  gemm_any(a, b, c, alpha, beta, addend, "mm");
}

void gemm_batched(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, double alpha, double beta,
                  const at::Tensor& addend) {
  TORCH_INTERNAL_ASSERT(a.dim() == 3 && b.dim() == 3 && c.dim() == 3);
  gemm_any(a, b, c, alpha, beta, addend, "bmm");
}

void gemv(const at::Tensor& a, const at::Tensor& x, const at::Tensor& y, double alpha, double beta,
          const at::Tensor& addend) {
  check_operands("mv", {&a, &x, &y});
  if (addend.defined()) check_operands("mv", {&y, &addend});
  if (computed_in_float(y.scalar_type())) {  // as gemm_any's
    const at::Tensor y32 = at::empty(y.sizes(), y.options().dtype(at::kFloat));
    gemv(as_float(a), as_float(x), y32, alpha, beta, float_addend(y, beta, addend));
    y.copy_(y32);
    return;
  }
  const int64_t m = a.size(0), n = a.size(1);
  TORCH_CHECK(x.dim() == 1 && y.dim() == 1 && x.size(0) == n && y.size(0) == m, "mv: shapes ", a.sizes(), " @ ",
              x.sizes(), " -> ", y.sizes(), " do not match");
  if (m == 0) return;
  if (addend.defined() && beta != 0 && !addend.is_same(y)) {
    // addmv's self: our CPU-form GEMM as an (m, n) @ (n, 1) product reads it in place (one launch; as fast
    // as CLBlast's Gemv or faster on PoCL, bench/bench_addmm_bias.py); otherwise it is copied into y.
    const at::Tensor y_col = y.unsqueeze(1);
    const at::Tensor s = (addend.dim() == 1 ? addend.unsqueeze(1) : addend).expand(y_col.sizes());
    if (n > 0 && small_gemm(a, x.unsqueeze(1), y_col, alpha, beta, s)) return;
    y.copy_(addend.expand(y.sizes()));
  }
  if (n == 0) return scale(y, beta);
  const int device = device_index(y);
  tocl::ensure_gemm_tuning(device);
  cl_command_queue queue = tocl::queue(device, current_stream_of(y));
  Matrix A = matrix_of(a);
  size_t x_inc = 1, y_inc = 1;
  const at::Tensor xv = vector_of(x, &x_inc);
  at::Tensor yv = vector_of(y, &y_inc);
  if (!yv.is_same(y)) yv = beta == 0 ? at::empty({m}, y.options()) : y.contiguous();
  if (beta == 0) yv.zero_();  // CLBlast's GEMV reads y even then: NaN * 0 would propagate
  const auto xb = buffer_arg(xv), yb = buffer_arg(yv);
  // Row-major A is (m, n); a column-major one is the row-major (n, m) matrix, transposed.
  const size_t rows = A.trans ? n : m, cols = A.trans ? m : n;
  StatusCode s;
  tocl::trace::Scope traced(device, current_stream_of(y), tocl::trace::Kind::Kernel, "clblast::Gemv");
  if (y.scalar_type() == at::kFloat) {
    s = clblast::Gemv<float>(Layout::kRowMajor, flag(A.trans), rows, cols, static_cast<float>(alpha), A.buf.buffer,
                             A.buf.offset, A.ld, xb.buffer, xb.offset, x_inc, static_cast<float>(beta), yb.buffer,
                             yb.offset, y_inc, &queue, traced.event());
  } else {
    s = clblast::Gemv<double>(Layout::kRowMajor, flag(A.trans), rows, cols, alpha, A.buf.buffer, A.buf.offset, A.ld,
                              xb.buffer, xb.offset, x_inc, beta, yb.buffer, yb.offset, y_inc, &queue, traced.event());
  }
  check(s, "Gemv");
  if (!yv.is_same(y)) y.copy_(yv);
}

void dot(const at::Tensor& x, const at::Tensor& y, const at::Tensor& out) {
  check_operands("dot", {&x, &y, &out});
  if (computed_in_float(out.scalar_type())) {  // CPU's half and bfloat16 dot multiplies and adds in float
    const at::Tensor out32 = at::empty({}, out.options().dtype(at::kFloat));
    dot(as_float(x), as_float(y), out32);
    out.copy_(out32);
    return;
  }
  const int64_t n = x.size(0);
  if (n == 0) return out.zero_(), void();
  const int device = device_index(out);
  cl_command_queue queue = tocl::queue(device, current_stream_of(out));
  size_t x_inc = 1, y_inc = 1;
  const at::Tensor xv = vector_of(x, &x_inc), yv = vector_of(y, &y_inc);
  const auto xb = buffer_arg(xv), yb = buffer_arg(yv), ob = buffer_arg(out);
  StatusCode s;
  tocl::trace::Scope traced(device, current_stream_of(out), tocl::trace::Kind::Kernel, "clblast::Dot");
  if (out.scalar_type() == at::kFloat) {
    s = clblast::Dot<float>(n, ob.buffer, ob.offset, xb.buffer, xb.offset, x_inc, yb.buffer, yb.offset, y_inc,
                            &queue, traced.event());
  } else {
    s = clblast::Dot<double>(n, ob.buffer, ob.offset, xb.buffer, xb.offset, x_inc, yb.buffer, yb.offset, y_inc,
                             &queue, traced.event());
  }
  check(s, "Dot");
}

}  // namespace torch_opencl
