// Registration of the BLAS operators (aten/native/blas.cpp computes the float dtypes,
// aten/native/gemm_integer.cpp the integers). ATen's structured meta functions check shapes and dtypes
// as on CPU; bool raises CPU's error; complex runs on the CPU, counted as a fallback.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/MetaFunctions.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "aten/native/blas.h"
#include "aten/native/gemm_integer.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/out_arguments.h"
#include "aten/kernel_support/structured.h"
#include "fallback/fallback.h"

namespace torch_opencl {

void check_dot_operands(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.dim() == 1 && other.dim() == 1, "1D tensors expected, but got ", self.dim(), "D and ",
              other.dim(), "D tensors");
  TORCH_CHECK(self.scalar_type() == other.scalar_type(), "dot : expected both vectors to have same dtype, but found ",
              self.scalar_type(), " and ", other.scalar_type());
  TORCH_CHECK(self.numel() == other.numel(), "inconsistent tensor size, expected tensor [", self.numel(),
              "] and src [", other.numel(), "] to have the same number of elements, but got ", self.numel(),
              " and ", other.numel(), " elements respectively");
}

namespace {

template <class F>
void on_cpu(const char* name, const at::Tensor& result, F compute) {
  record_fallback_call(name);
  result.copy_(compute());
}

// structured.h's wrappers serve TensorIterator metas; these serve MetaBase ones (whose
// set_output_raw_strided base only asserts): functional (allocates) and out=/in-place.
template <class Meta>
struct Functional final : public Meta {
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions o TOCL_OUTPUT_NAMES) override {
    out_ = structured_detail::create_out(sizes, strides, o);
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions o TOCL_OUTPUT_NAMES) override {
    out_ = structured_detail::create_out(sizes, strides, o);
  }
  const at::Tensor& maybe_get_output(int64_t) override { return out_; }
  at::Tensor take() { return std::move(out_); }
  at::Tensor out_;
};

template <class Meta>
struct Out final : public Meta {
  Out(const at::Tensor& out, bool in_place = false) : out_(out), in_place_(in_place) {}
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions o TOCL_OUTPUT_NAMES) override {
    set(sizes, strides, o);
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions o TOCL_OUTPUT_NAMES) override {
    set(sizes, strides, o);
  }
  const at::Tensor& maybe_get_output(int64_t) override { return out_; }
  void finish() {}
  const at::Tensor& out_;
  bool in_place_;

 private:
  void set(at::IntArrayRef sizes, at::IntArrayRef strides, const at::TensorOptions& o) {
    if (in_place_) {
      TORCH_CHECK(o.dtype() == out_.dtype(), "Bad in-place call: input tensor dtype ", out_.dtype(),
                  " and output tensor dtype ", o.dtype(), " should match");
      TORCH_CHECK(sizes == out_.sizes(), "Bad in-place call: input tensor size ", out_.sizes(),
                  " and output tensor size ", sizes, " should match");
    } else {
      structured_detail::resize_out(out_, sizes, strides, o);
    }
  }
};

at::Tensor cpu(const at::Tensor& t) { return t.to(at::kCPU); }

// CPU's error for bool, naming the kernel CPU dispatches to (its message names that, not the operator).
void check_not_bool(const at::Tensor& result, const char* cpu_kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(result.scalar_type() != at::kBool, "\"", cpu_kernel, "\" not implemented for 'Bool'");
}

void check_device(const char* op, const at::Tensor& out, std::initializer_list<const at::Tensor*> ts) {
  for (const at::Tensor* t : ts)
    TORCH_CHECK(t->device() == out.device(), op, ": expected all tensors to be on the same device, but found ",
                out.device(), " and ", t->device());
}

// What the GEMM adds (times beta): self, read in place (broadcast by strides 0), unless it shares memory
// with result other than as result itself; then self goes into result first and result is the addend.
at::Tensor addend_of(const at::Tensor& self, const at::Tensor& result, double beta) {
  // CPU expands self to the result's shape first, so a self that does not broadcast is an error even
  // when the product never reads it (an empty result, or beta = 0 with an empty k).
  (void)self.expand(result.sizes());
  if (beta == 0 || result.is_same(self) || at::get_overlap_status(result, self) == at::MemOverlapStatus::No)
    return self;
  result.copy_(self.expand(result.sizes()));
  return result;
}

// result = beta * self + alpha * (m1 @ m2), self broadcast to result.
void addmm_impl(const at::Tensor& self, const at::Tensor& m1, const at::Tensor& m2, const c10::Scalar& beta,
                const c10::Scalar& alpha, const at::Tensor& result, bool batched, const char* name) {
  check_device(name, result, {&self, &m1, &m2});
  check_not_bool(result, batched ? "baddbmm" : "addmm_impl_cpu_");
  if (integer_gemm_supports(result.scalar_type()))
    return integer_gemm(m1, m2, result, alpha, beta, addend_of(self, result, beta.toDouble()));
  if (!blas_supports(result.scalar_type())) {
    return on_cpu(name, result, [&] {
      return batched ? at::baddbmm(cpu(self), cpu(m1), cpu(m2), beta, alpha)
                     : at::addmm(cpu(self), cpu(m1), cpu(m2), beta, alpha);
    });
  }
  const double b = beta.toDouble();
  const at::Tensor addend = addend_of(self, result, b);
  if (batched) gemm_batched(m1, m2, result, alpha.toDouble(), b, addend);
  else gemm(m1, m2, result, alpha.toDouble(), b, addend);
}

#define STRUCTURED_FORMS(NAME, META, PARAMS, ARGS, BODY)                  \
  at::Tensor NAME(PARAMS) {                                               \
    Functional<at::meta::META> op;                              \
    op.meta(ARGS);                                                        \
    const at::Tensor& result = op.maybe_get_output(0);                    \
    BODY;                                                                 \
    return op.take();                                                     \
  }                                                                       \
  at::Tensor& NAME##_out(PARAMS, at::Tensor& out) {                       \
    Out<at::meta::META> op(out);                                \
    op.meta(ARGS);                                                        \
    const at::Tensor& result = op.maybe_get_output(0);                    \
    BODY;                                                                 \
    op.finish();                                                          \
    return out;                                                           \
  }

#define COMMA ,

STRUCTURED_FORMS(mm, structured_mm, const at::Tensor& self COMMA const at::Tensor& mat2, self COMMA mat2, {
  check_device("mm", result, {&self, &mat2});
  TORCH_CHECK(self.dtype() == mat2.dtype(), "expected m1 and m2 to have the same dtype, but got: ", self.dtype(),
              " != ", mat2.dtype());  // CPU's words (ATen's meta does not check)
  check_not_bool(result, "addmm_impl_cpu_");
  if (blas_supports(result.scalar_type())) gemm(self, mat2, result, 1, 0);
  else if (integer_gemm_supports(result.scalar_type())) integer_gemm(self, mat2, result, 1, 0);
  else on_cpu("aten::mm", result, [&] { return at::mm(cpu(self), cpu(mat2)); });
})

STRUCTURED_FORMS(bmm, structured_bmm, const at::Tensor& self COMMA const at::Tensor& mat2, self COMMA mat2, {
  check_device("bmm", result, {&self, &mat2});
  TORCH_CHECK(self.scalar_type() == mat2.scalar_type(), "expected scalar type ", self.scalar_type(), " but found ",
              mat2.scalar_type());  // CPU's words (ATen's meta does not check)
  check_not_bool(result, "bmm");
  if (blas_supports(result.scalar_type())) gemm_batched(self, mat2, result, 1, 0);
  else if (integer_gemm_supports(result.scalar_type())) integer_gemm(self, mat2, result, 1, 0);
  else on_cpu("aten::bmm", result, [&] { return at::bmm(cpu(self), cpu(mat2)); });
})

#define ADD_PARAMS(A, B)                                                                        \
  const at::Tensor& self COMMA const at::Tensor& A COMMA const at::Tensor& B COMMA const c10::Scalar& beta \
      COMMA const c10::Scalar& alpha
#define ADD_ARGS(A, B) self COMMA A COMMA B COMMA beta COMMA alpha

STRUCTURED_FORMS(addmm, structured_addmm, ADD_PARAMS(mat1, mat2), ADD_ARGS(mat1, mat2),
                 addmm_impl(self, mat1, mat2, beta, alpha, result, false, "aten::addmm"))
STRUCTURED_FORMS(baddbmm, structured_baddbmm, ADD_PARAMS(batch1, batch2), ADD_ARGS(batch1, batch2),
                 addmm_impl(self, batch1, batch2, beta, alpha, result, true, "aten::baddbmm"))

void addmv_impl(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec, const c10::Scalar& beta,
                const c10::Scalar& alpha, const at::Tensor& result) {
  check_device("addmv", result, {&self, &mat, &vec});
  check_not_bool(result, "addmv_impl_cpu");
  if (integer_gemm_supports(result.scalar_type())) {
    // An (m, n) @ (n, 1) product; the addend (self, 1-D or 0-D, or result) as a column.
    const at::Tensor addend = addend_of(self, result, beta.toDouble());
    return integer_gemm(mat, vec.unsqueeze(1), result.unsqueeze(1), alpha, beta,
                        addend.dim() == 1 ? addend.unsqueeze(1) : addend);
  }
  if (!blas_supports(result.scalar_type()))
    return on_cpu("aten::addmv", result, [&] { return at::addmv(cpu(self), cpu(mat), cpu(vec), beta, alpha); });
  const double b = beta.toDouble();
  const at::Tensor addend = addend_of(self, result, b);
  gemv(mat, vec, result, alpha.toDouble(), b, addend);
}

STRUCTURED_FORMS(addmv, structured_addmv, ADD_PARAMS(mat, vec), ADD_ARGS(mat, vec),
                 addmv_impl(self, mat, vec, beta, alpha, result))

// In-place forms: self is the output.
#define INPLACE(NAME, META, A, B, BODY)                                                   \
  at::Tensor& NAME##_(at::Tensor& self, const at::Tensor& A, const at::Tensor& B, const c10::Scalar& beta, \
                      const c10::Scalar& alpha) {                                         \
    Out<at::meta::META> op(self, /*in_place=*/true);                            \
    op.meta(self, A, B, beta, alpha);                                                     \
    const at::Tensor& result = op.maybe_get_output(0);                                    \
    BODY;                                                                                 \
    op.finish();                                                                          \
    return self;                                                                          \
  }
INPLACE(addmm, structured_addmm, mat1, mat2, addmm_impl(self, mat1, mat2, beta, alpha, result, false, "aten::addmm_"))
INPLACE(baddbmm, structured_baddbmm, batch1, batch2,
        addmm_impl(self, batch1, batch2, beta, alpha, result, true, "aten::baddbmm_"))
INPLACE(addmv, structured_addmv, mat, vec, addmv_impl(self, mat, vec, beta, alpha, result))

// addbmm: result = beta * self + alpha * sum over b of batch1[b] @ batch2[b], as one GEMM over the batches laid
// side by side: (n, B*k) @ (B*k, m). CPU adds the products one batch at a time (rounding differs in the last bits).
at::Tensor& addbmm_into(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                        const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& result, bool in_place) {
  // CPU expands self first (so a 2-D batch1 fails there), then checks the batches; in place too, where a self
  // that broadcasts to the product's shape is resized to it.
  const at::Tensor b_self = self.expand({batch1.size(1), batch2.size(2)});
  TORCH_CHECK(batch1.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(batch2.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(batch1.size(0) == batch2.size(0), "batch1 and batch2 must have same number of batches, got ",
              batch1.size(0), " and ", batch2.size(0));
  TORCH_CHECK(batch1.size(2) == batch2.size(1), "Incompatible matrix sizes for bmm (", batch1.size(1), "x",
              batch1.size(2), " and ", batch2.size(1), "x", batch2.size(2), ")");
  const int64_t n = batch1.size(1), m = batch2.size(2), depth = batch1.size(0) * batch1.size(2);
  check_device("addbmm", result, {&self, &batch1, &batch2});
  TORCH_CHECK(batch1.scalar_type() == self.scalar_type() && batch2.scalar_type() == self.scalar_type(),
              "expected scalar type ", self.scalar_type(), " but found ",
              batch1.scalar_type() != self.scalar_type() ? batch1.scalar_type() : batch2.scalar_type());
  check_not_bool(self, "addmm_impl_cpu_");
  if (!blas_supports(self.scalar_type()) && !integer_gemm_supports(self.scalar_type()))
    throw_dtype_not_native(c10::str("addbmm of ", self.scalar_type(), " (computed for real dtypes)"));
  at::Tensor addend = b_self;
  if (!in_place) {
    at::native::resize_output(result, {n, m});
  } else if (self.sizes() != b_self.sizes()) {
    addend = b_self.clone();  // self's values, broadcast, before self takes the product's shape
    result.resize_({n, m});
  }
  const at::Tensor a = batch1.permute({1, 0, 2}).reshape({n, depth});
  const at::Tensor b = batch2.reshape({depth, m});
  addmm_impl(addend, a, b, beta, alpha, result, false, "aten::addbmm");
  return result;
}

at::Tensor& addbmm_out(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                       const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
  return addbmm_into(self, batch1, batch2, beta, alpha, out, /*in_place=*/false);
}

at::Tensor addbmm(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                  const c10::Scalar& beta, const c10::Scalar& alpha) {
  at::Tensor out = at::empty({0}, self.options());
  return addbmm_into(self, batch1, batch2, beta, alpha, out, /*in_place=*/false);
}

at::Tensor& addbmm_(at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2, const c10::Scalar& beta,
                    const c10::Scalar& alpha) {
  return addbmm_into(self, batch1, batch2, beta, alpha, self, /*in_place=*/true);
}

at::Tensor dot_op(const at::Tensor& self, const at::Tensor& other) {
  check_dot_operands(self, other);
  auto out = at::empty({}, self.options());
  check_device("dot", out, {&other});
  const auto type = self.scalar_type();
  if (blas_supports(type)) torch_opencl::dot(self, other, out);
  // Integers wrap as CPU's (products and sums in the dtype: the same bits modulo its width).
  else if (at::isIntegralType(type, /*includeBool=*/false)) out.copy_(at::mul(self, other).sum(type));
  else on_cpu("aten::dot", out, [&] { return at::dot(cpu(self), cpu(other)); });
  return out;
}

// addr.out: ATen's composite form copies its result into the out= tensor on whatever device it is; CPU's
// and CUDA's kernels refuse an out= on another device or of a dtype the result cannot be cast to.
at::Tensor& addr_out(const at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2, const at::Scalar& beta,
                     const at::Scalar& alpha, at::Tensor& result) {
  const at::Tensor value = at::addr(self, vec1, vec2, beta, alpha);
  check_out_device(result, value.device(), "addr");
  check_out_dtype(value.scalar_type(), result, "addr");
  at::native::resize_output(result, value.sizes());
  result.copy_(value);
  return result;
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("addr.out", TORCH_FN(addr_out));
  m.impl("mm", TORCH_FN(mm));
  m.impl("mm.out", TORCH_FN(mm_out));
  m.impl("bmm", TORCH_FN(bmm));
  m.impl("bmm.out", TORCH_FN(bmm_out));
  m.impl("addmm", TORCH_FN(addmm));
  m.impl("addmm.out", TORCH_FN(addmm_out));
  m.impl("addmm_", TORCH_FN(addmm_));
  m.impl("baddbmm", TORCH_FN(baddbmm));
  m.impl("baddbmm.out", TORCH_FN(baddbmm_out));
  m.impl("baddbmm_", TORCH_FN(baddbmm_));
  m.impl("addmv", TORCH_FN(addmv));
  m.impl("addmv.out", TORCH_FN(addmv_out));
  m.impl("addmv_", TORCH_FN(addmv_));
  m.impl("dot", TORCH_FN(dot_op));
  m.impl("addbmm", TORCH_FN(addbmm));
  m.impl("addbmm.out", TORCH_FN(addbmm_out));
  m.impl("addbmm_", TORCH_FN(addbmm_));
}

}  // namespace torch_opencl
