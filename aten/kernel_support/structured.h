#pragma once
// Runs ATen's own structured meta functions (shape, dtype and argument checks
// exactly as on CPU) for opencl outputs, in the three forms the dispatcher
// asks for: functional (allocates), in-place and out= (resizes, or computes
// into a proxy when the given strides cannot be used).
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <ATen/TensorIterator.h>
#include <c10/util/ExclusivelyOwned.h>

#include <array>
#include <optional>
#include <type_traits>
#include <vector>

namespace torch_opencl {

// torch 2.11 (and older) passes the output's dimension names after the options; CMake reads
// ATen/TensorMeta.h and defines TORCH_OPENCL_HAS_DIMNAMES=1 where it does.
#if TORCH_OPENCL_HAS_DIMNAMES
#define TOCL_OUTPUT_NAMES , at::DimnameList names
#define TOCL_PASS_OUTPUT_NAMES , names
#else
#define TOCL_OUTPUT_NAMES
#define TOCL_PASS_OUTPUT_NAMES
#endif

namespace structured_detail {

inline void check_out(const at::Tensor& out, at::TensorOptions options) {
  TORCH_CHECK(options.dtype() == out.dtype(), "Expected out tensor to have dtype ", options.dtype(), ", but got ",
              out.dtype(), " instead");
  TORCH_CHECK(options.device() == out.device(), "Expected out tensor to have device ", options.device(),
              ", but got ", out.device(), " instead");
}

inline void resize_out(const at::Tensor& out, at::IntArrayRef sizes, at::IntArrayRef strides,
                       const at::TensorOptions& options) {
  check_out(out, options);
  // As ATen's generated resize_out: only an out= that was resized takes the meta function's
  // (advisory) strides or memory format; one of the right size keeps its own strides (it may be a
  // view into a larger tensor).
  if (!at::native::resize_output(out, sizes)) return;
  if (!strides.empty()) {
    TORCH_INTERNAL_ASSERT(!options.memory_format_opt().has_value());
    out.as_strided_(sizes, strides);
  } else if (options.memory_format_opt().has_value()) {
    out.unsafeGetTensorImpl()->empty_tensor_restride(*options.memory_format_opt());
  }
}

// Our kernels write the layout the meta function asked for: its strides, or (out= forms of
// non-iterator ops) its memory format, contiguous by default; an out= kept in another layout gets a
// proxy, copied into it by finish(). Without strides, a TensorIterator writes the out's own layout,
// and an in-place kernel updates self where it is (a proxy would not hold self's values).
inline std::optional<at::Tensor> maybe_proxy(const at::Tensor& out, at::IntArrayRef sizes, at::IntArrayRef strides,
                                             const at::TensorOptions& options, bool writes_own_layout) {
  if (!strides.empty()) {
    if (out.strides() != strides) return at::empty_strided(sizes, strides, options);
    return std::nullopt;
  }
  if (writes_own_layout) return std::nullopt;
  const auto format = options.memory_format_opt().value_or(at::MemoryFormat::Contiguous);
  if (!out.is_contiguous(format)) return at::empty(sizes, options.memory_format(format));
  return std::nullopt;
}

inline at::Tensor create_out(at::IntArrayRef sizes, at::IntArrayRef strides, const at::TensorOptions& options) {
  return strides.empty() ? at::empty(sizes, options) : at::empty_strided(sizes, strides, options);
}

// A TensorIteratorBase meta records the output in its operands; a plain MetaBase
// (non-iterator structured ops: softmax, nll_loss, pooling) has nothing to record.
template <class Meta, class Self>
void notify_base(Self* self, int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides,
                 const at::TensorOptions& options TOCL_OUTPUT_NAMES) {
  if constexpr (std::is_base_of_v<at::TensorIteratorBase, Meta>)
    self->Meta::set_output_raw_strided(i, sizes, strides, options TOCL_PASS_OUTPUT_NAMES);
}

}  // namespace structured_detail

// Meta is an at::meta::structured_* class (a TensorIteratorBase or a MetaBase).
template <class Meta, int N = 1>
struct StructuredFunctional final : public Meta {
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options TOCL_OUTPUT_NAMES) override {
    outputs_[i] = structured_detail::create_out(sizes, strides, options);
    structured_detail::notify_base<Meta>(this, i, sizes, strides, options TOCL_PASS_OUTPUT_NAMES);
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options TOCL_OUTPUT_NAMES) override {
    outputs_[i] = structured_detail::create_out(sizes, strides, options);
    structured_detail::notify_base<Meta>(this, i, sizes, strides, options TOCL_PASS_OUTPUT_NAMES);
  }
  const at::Tensor& maybe_get_output(int64_t i) override { return *outputs_[i]; }
  at::Tensor take(int i = 0) { return std::move(outputs_[i]).take(); }
  std::array<c10::ExclusivelyOwned<at::Tensor>, N> outputs_;
};

// Runs only the checks of a non-iterator meta function (MetaBase) and records the output's
// shape and options, for kernels that produce their result by composing native ops.
template <class Meta>
struct StructuredCheck final : public Meta {
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options TOCL_OUTPUT_NAMES) override {
    record(i, sizes, options);
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options TOCL_OUTPUT_NAMES) override {
    record(i, sizes, options);
  }
  const at::Tensor& maybe_get_output(int64_t) override { return undefined_; }
  std::vector<int64_t> sizes;
  at::TensorOptions options;

 private:
  void record(int64_t i, at::IntArrayRef s, at::TensorOptions o) {
    TORCH_INTERNAL_ASSERT(i == 0, "StructuredCheck records one output");
    sizes.assign(s.begin(), s.end());
    options = o;
  }
  at::Tensor undefined_;
};

// For out= and in-place forms: outputs are given.
template <class Meta, int N = 1>
struct StructuredOut final : public Meta {
  // in_place: the output is also an input, so it may not change shape or dtype.
  explicit StructuredOut(const at::Tensor& out0, bool in_place = false)
      : outputs_{std::ref(out0)}, in_place_(in_place) {}
  // Two outputs (e.g. values and indices).
  StructuredOut(const at::Tensor& out0, const at::Tensor& out1)
      : outputs_{std::ref(out0), std::ref(out1)}, in_place_(false) {}
  // Three or more outputs (the linalg families: LU, pivots, info, ...).
  template <class... Rest, std::enable_if_t<sizeof...(Rest) + 3 == N, int> = 0>
  StructuredOut(const at::Tensor& out0, const at::Tensor& out1, const at::Tensor& out2, const Rest&... rest)
      : outputs_{std::ref(out0), std::ref(out1), std::ref(out2), std::ref(rest)...}, in_place_(false) {}
  void set_output_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options TOCL_OUTPUT_NAMES) override {
    set(i, sizes, strides, options TOCL_PASS_OUTPUT_NAMES);
  }
  void set_output_raw_strided(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options TOCL_OUTPUT_NAMES) override {
    set(i, sizes, strides, options TOCL_PASS_OUTPUT_NAMES);
  }
  const at::Tensor& maybe_get_output(int64_t i) override {
    return proxies_[i].has_value() ? **proxies_[i] : outputs_[i].get();
  }
  // Copies proxy results into the real outputs; call after the kernel ran.
  void finish() {
    for (int i = 0; i < N; ++i)
      if (proxies_[i].has_value()) outputs_[i].get().copy_(**proxies_[i]);
  }
  std::array<std::reference_wrapper<const at::Tensor>, N> outputs_;
  std::array<std::optional<c10::ExclusivelyOwned<at::Tensor>>, N> proxies_;

 private:
  bool in_place_;

  void set(int64_t i, at::IntArrayRef sizes, at::IntArrayRef strides, at::TensorOptions options TOCL_OUTPUT_NAMES) {
    const auto& out = outputs_[i].get();
    if (in_place_) {
      TORCH_CHECK(options.dtype() == out.dtype(), "Bad in-place call: input tensor dtype ", out.dtype(),
                  " and output tensor dtype ", options.dtype(), " should match");
      TORCH_CHECK(options.device() == out.device(), "Bad in-place call: input tensor device ", out.device(),
                  " and output tensor device ", options.device(), " should match");
      TORCH_CHECK(sizes == out.sizes(), "Bad in-place call: input tensor size ", out.sizes(),
                  " and output tensor size ", sizes, " should match");
    } else {
      structured_detail::resize_out(out, sizes, strides, options);
    }
    auto proxy = structured_detail::maybe_proxy(out, sizes, strides, options,
                                                in_place_ || std::is_base_of_v<at::TensorIteratorBase, Meta>);
    if (proxy.has_value()) proxies_[i] = c10::ExclusivelyOwned<at::Tensor>(std::move(proxy).value());
    structured_detail::notify_base<Meta>(this, i, sizes, strides, options TOCL_PASS_OUTPUT_NAMES);
  }
};

}  // namespace torch_opencl
