#include "aten/native/gemm_integer.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/MemoryOverlap.h>

#include <algorithm>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/launch.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

constexpr size_t kTile = 16;  // TILE in kernels_cl/gemm_integer.cl

struct IntGemm {  // as in kernels_cl/gemm_integer.cl
  cl_long m, n, k, am, ak, ab, bk, bn, bb, cm, cn, cb, sm, sn, sb;
};

// A dimension's stride, 0 where the size is 1 (any stride reads the same element).
cl_long stride_of(const at::Tensor& t, int64_t dim) { return t.size(dim) == 1 ? 0 : t.stride(dim); }

// alpha or beta in the dtype as CPU converts it (Scalar::to<scalar_t>, which raises on overflow), widened.
int64_t in_dtype(const c10::Scalar& v, c10::ScalarType type) {
  int64_t out = 0;
  AT_DISPATCH_INTEGRAL_TYPES(type, "integer_gemm", [&] { out = static_cast<int64_t>(v.to<scalar_t>()); });
  return out;
}

}  // namespace

bool integer_gemm_supports(c10::ScalarType type) { return at::isIntegralType(type, /*includeBool=*/false); }

void integer_gemm(const at::Tensor& a_in, const at::Tensor& b_in, const at::Tensor& c, const c10::Scalar& alpha,
                  const c10::Scalar& beta, const at::Tensor& addend) {
  // An operand sharing memory with c (addmm_ of self by itself) is read from a copy: work-groups write c while
  // others still read their tiles.
  const auto unaliased = [&](const at::Tensor& t) {
    return at::get_overlap_status(c, t) == at::MemOverlapStatus::No ? t : t.clone();
  };
  const at::Tensor a = unaliased(a_in), b = unaliased(b_in);
  const auto type = c.scalar_type();
  TORCH_INTERNAL_ASSERT(integer_gemm_supports(type));
  TORCH_CHECK(a.scalar_type() == type && b.scalar_type() == type, "integer matrix product: expected all tensors of ",
              "one dtype, but found ", a.scalar_type(), " @ ", b.scalar_type(), " -> ", type);
  const int64_t d = c.dim();
  TORCH_INTERNAL_ASSERT((d == 2 || d == 3) && a.dim() == d && b.dim() == d);
  const int64_t batch = d == 3 ? c.size(0) : 1;
  const int64_t m = c.size(d - 2), n = c.size(d - 1), k = a.size(d - 1);
  TORCH_CHECK(a.size(d - 2) == m && b.size(d - 2) == k && b.size(d - 1) == n &&
                  (d == 2 || (a.size(0) == batch && b.size(0) == batch)),
              "integer matrix product: shapes ", a.sizes(), " @ ", b.sizes(), " -> ", c.sizes(), " do not match");
  const int64_t al = in_dtype(alpha, type), be = in_dtype(beta, type);
  if (batch == 0 || m == 0 || n == 0) return;
  const at::Tensor s = addend.defined() && be != 0 ? addend.expand(c.sizes()) : c;
  TORCH_CHECK(s.scalar_type() == type, "integer matrix product: the addend is ", s.scalar_type(), ", not ", type);
  const auto batch_stride = [&](const at::Tensor& t) -> cl_long { return d == 3 ? stride_of(t, 0) : 0; };
  const IntGemm g{m,
                  n,
                  k,
                  stride_of(a, d - 2),
                  stride_of(a, d - 1),
                  batch_stride(a),
                  stride_of(b, d - 2),
                  stride_of(b, d - 1),
                  batch_stride(b),
                  c.stride(d - 2),
                  c.stride(d - 1),
                  d == 3 ? c.stride(0) : 0,
                  stride_of(s, d - 2),
                  stride_of(s, d - 1),
                  batch_stride(s)};
  const int device = device_index(c);
  cl_kernel kernel = dtype_kernel(c, "gemm_integer.cl", "int_gemm");
  // Grid dimensions 1 and 2 stay within 65535 groups (NVIDIA's limit for them): larger row counts and batches
  // run as several launches, each shifting the buffers' offsets.
  const int64_t row_chunk = 65535 * static_cast<int64_t>(kTile), batch_chunk = 65535;
  const auto shifted = [](const at::Tensor& t, int64_t elements) {
    tocl::BufferArg arg = buffer_arg(t);
    arg.offset += elements;
    return arg;
  };
  for (int64_t b0 = 0; b0 < batch; b0 += batch_chunk) {
    for (int64_t r0 = 0; r0 < m; r0 += row_chunk) {
      IntGemm part = g;
      part.m = std::min(row_chunk, m - r0);
      tocl::set_args(kernel, shifted(a, b0 * g.ab + r0 * g.am), shifted(b, b0 * g.bb),
                     shifted(c, b0 * g.cb + r0 * g.cm), shifted(s, b0 * g.sb + r0 * g.sm), part,
                     static_cast<cl_long>(al), static_cast<cl_long>(be));
      const auto round_up = [](int64_t x) { return static_cast<size_t>((x + kTile - 1) / kTile * kTile); };
      const size_t global[3] = {round_up(n), round_up(part.m), static_cast<size_t>(std::min(batch_chunk, batch - b0))};
      const size_t local[3] = {kTile, kTile, 1};
      tocl::enqueue_3d(device, current_stream_of(c), kernel, global, local);
    }
  }
}

}  // namespace torch_opencl
