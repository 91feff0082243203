// Random distributions on the device: uniform_, normal_, bernoulli_, random_,
// exponential_, log_normal_, geometric_, cauchy_ and native dropout, over the Philox generator in kernels_cl/random.cl.
// ATen's DistributionTemplates do the argument checks and range arithmetic, as on CPU;
// the kernels below fill a contiguous output (or a contiguous temporary that is then
// copied into a strided one). Each call advances the generator's offset by the 32-bit
// draws it used.
#include <ATen/ATen.h>
#include <ATen/native/DistributionTemplates.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>
#include <mutex>
#include <unordered_map>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/generator.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/native/pointwise.h"
#include "runtime/embedded_sources.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

// The distributions program for one output dtype.
cl_program random_program(int device, c10::ScalarType out) {
  static std::mutex mutex;
  static std::unordered_map<int64_t, cl_program> programs;
  const int64_t key = device * 64 + static_cast<int>(out);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = programs.find(key);
  if (it != programs.end()) return it->second;
  std::string source = program_prelude({out});
  source += operand_defines("OUT", out);
  source += std::string("#define F_IS_DOUBLE ") + (out == c10::kDouble ? "1" : "0") + "\n";
  source += tocl::embedded_sources().at("random.cl");
  cl_program program = tocl::get_program(device, source);
  programs.emplace(key, program);
  return program;
}

// Elements one Philox block (four 32-bit draws) fills.
int per_block(c10::ScalarType out, bool wide_draws) { return (wide_draws || out == c10::kDouble) ? 2 : 4; }

// A kernel argument in the distribution's float type (double for float64 outputs).
struct FloatArg {
  cl_double d;
  cl_float f;
  bool is_double;
};
FloatArg float_arg(double v, c10::ScalarType out) { return {v, static_cast<cl_float>(v), out == c10::kDouble}; }
void set_float(cl_kernel k, cl_uint index, const FloatArg& a) {
  if (a.is_double)
    TOCL_CHECK(clSetKernelArg(k, index, sizeof(cl_double), &a.d));
  else
    TOCL_CHECK(clSetKernelArg(k, index, sizeof(cl_float), &a.f));
}

struct Extra {
  enum Kind { kFloat, kLong, kULong, kBuffer } kind;
  double f = 0;
  int64_t l = 0;
  uint64_t u = 0;
  tocl::BufferArg buffer{};
};
Extra F(double v) { return {Extra::kFloat, v}; }
Extra L(int64_t v) { return {Extra::kLong, 0, v}; }
Extra U(uint64_t v) { return {Extra::kULong, 0, 0, v}; }
Extra B(const at::Tensor& t) { return {Extra::kBuffer, 0, 0, 0, buffer_arg(t)}; }

// Runs `kernel` over `out` (contiguous), drawing from `gen` (or the default generator).
void launch(const char* kernel, const at::Tensor& out, std::optional<at::Generator> gen, bool wide_draws,
            std::initializer_list<Extra> extras) {
  const int64_t n = out.numel();
  if (n == 0) return;
  TORCH_INTERNAL_ASSERT(out.is_contiguous());
  const int device = device_index(out);
  check_device_supports(out.scalar_type(), device, kernel);
  auto* impl = at::get_generator_or_default<OpenCLGeneratorImpl>(gen, default_generator(device));
  const int per = per_block(out.scalar_type(), wide_draws);
  const uint64_t blocks = (static_cast<uint64_t>(n) + per - 1) / per;
  uint64_t seed = 0, offset = 0;
  {
    std::lock_guard<std::mutex> lock(impl->mutex_);
    seed = impl->current_seed();
    offset = impl->advance(4 * blocks);
  }
  cl_kernel k = tocl::get_kernel(random_program(device, out.scalar_type()), kernel);
  const cl_ulong first_block = (offset + 3) / 4;  // offsets set by hand may not be block-aligned
  tocl::set_args(k, buffer_arg(out), static_cast<cl_ulong>(n), static_cast<cl_ulong>(seed), first_block);
  cl_uint index = 5;  // after out, out_offset, n, seed, block
  for (const auto& e : extras) {
    switch (e.kind) {
      case Extra::kFloat: set_float(k, index++, float_arg(e.f, out.scalar_type())); break;
      case Extra::kLong: { const cl_long v = e.l; TOCL_CHECK(clSetKernelArg(k, index++, sizeof(v), &v)); break; }
      case Extra::kULong: { const cl_ulong v = e.u; TOCL_CHECK(clSetKernelArg(k, index++, sizeof(v), &v)); break; }
      case Extra::kBuffer:
        TOCL_CHECK(clSetKernelArg(k, index++, sizeof(cl_mem), &e.buffer.buffer));
        { const cl_ulong o = e.buffer.offset; TOCL_CHECK(clSetKernelArg(k, index++, sizeof(o), &o)); }
        break;
    }
  }
  tocl::enqueue_1d(device, current_stream_of(out), k, blocks);
}

// Fills `self` (any strides) through a contiguous temporary where needed.
template <class Fill>
void fill_through(const at::Tensor& self, Fill&& fill) {
  const c10::DeviceGuard guard(self.device());
  if (self.is_contiguous()) {
    fill(self);
  } else {
    at::Tensor tmp = at::empty(self.sizes(), self.options());
    fill(tmp);
    self.copy_(tmp);
  }
}

// ---- The kernel structs DistributionTemplates calls (RNG is the generator type).

template <typename RNG>
struct UniformKernel {
  void operator()(at::TensorIteratorBase& iter, double from, double to, std::optional<at::Generator> gen) {
    fill_through(iter.tensor(0), [&](const at::Tensor& t) { launch("uniform", t, gen, false, {F(from), F(to - from)}); });
  }
};

template <typename RNG>
struct NormalKernel {
  void operator()(const at::TensorBase& self, double mean, double std, std::optional<at::Generator> gen) {
    fill_through(at::Tensor(self), [&](const at::Tensor& t) { launch("normal", t, gen, false, {F(mean), F(std)}); });
  }
};

template <typename RNG>
struct ExponentialKernel {
  void operator()(at::TensorIteratorBase& iter, double lambda, std::optional<at::Generator> gen) {
    fill_through(iter.tensor(0), [&](const at::Tensor& t) { launch("exponential", t, gen, false, {F(lambda)}); });
  }
};

template <typename RNG>
struct LogNormalKernel {
  void operator()(at::TensorIteratorBase& iter, double mean, double std, std::optional<at::Generator> gen) {
    fill_through(iter.tensor(0), [&](const at::Tensor& t) { launch("log_normal", t, gen, false, {F(mean), F(std)}); });
  }
};

template <typename RNG>
struct GeometricKernel {
  void operator()(at::TensorIteratorBase& iter, double p, std::optional<at::Generator> gen) {
    fill_through(iter.tensor(0), [&](const at::Tensor& t) { launch("geometric", t, gen, false, {F(std::log1p(-p))}); });
  }
};

template <typename RNG>
struct CauchyKernel {
  void operator()(at::TensorIteratorBase& iter, double median, double sigma, std::optional<at::Generator> gen) {
    fill_through(iter.tensor(0), [&](const at::Tensor& t) { launch("cauchy", t, gen, false, {F(median), F(sigma)}); });
  }
};

template <typename RNG>
struct BernoulliScalarKernel {
  void operator()(const at::TensorBase& self, double p, std::optional<at::Generator> gen) {
    fill_through(at::Tensor(self), [&](const at::Tensor& t) { launch("bernoulli_scalar", t, gen, false, {F(p)}); });
  }
};

template <typename RNG>
struct BernoulliTensorKernel {
  void operator()(const at::TensorBase& self_base, const at::TensorBase& p_base, std::optional<at::Generator> gen) {
    const at::Tensor self(self_base);
    const at::Tensor p_in(p_base);
    TORCH_CHECK(p_in.device() == self.device() || (p_in.device().is_cpu() && p_in.dim() == 0),
                "bernoulli_: the probability tensor must be on ", self.device(), ", got ", p_in.device());
    TORCH_CHECK(at::isFloatingType(p_in.scalar_type()), "bernoulli_: expected a floating point probability tensor, got ",
                p_in.scalar_type());
    const auto p_type = self.scalar_type() == c10::kDouble ? c10::kDouble : c10::kFloat;
    const at::Tensor p = p_in.to(self.device(), p_type).expand(self.sizes()).contiguous();
    // CPU's check (NaN fails it too); it waits for the device, as CPU's own check reads every p.
    TORCH_CHECK(p.numel() == 0 || at::logical_and(p >= 0, p <= 1).all().item<bool>(),
                "Expected p_in >= 0 && p_in <= 1 to be true, but got false.");
    fill_through(self, [&](const at::Tensor& t) { launch("bernoulli_tensor", t, gen, false, {B(p)}); });
  }
};

// Draws `from + (draw mod range)`; range 0 stands for all 2^64 values.
void random_range(const at::Tensor& self, int64_t from, uint64_t range, std::optional<at::Generator> gen) {
  const bool wide = range == 0 || range > (uint64_t{1} << 32);
  fill_through(self, [&](const at::Tensor& t) {
    launch(wide ? "random_range64" : "random_range32", t, gen, wide, {L(from), U(range)});
  });
}

template <typename RNG>
struct RandomFromToKernel {
  void operator()(at::TensorIteratorBase& iter, uint64_t range, int64_t from, std::optional<at::Generator> gen) {
    random_range(iter.tensor(0), from, range, gen);
  }
  void operator()(at::TensorIteratorBase& iter, std::optional<at::Generator> gen) {
    random_range(iter.tensor(0), 0, 0, gen);
  }
};

// random_() with no bounds: [0, 2^digits] for floating types, [0, max] for integers.
template <typename RNG>
struct RandomKernel {
  void operator()(at::TensorIteratorBase& iter, std::optional<at::Generator> gen) {
    const auto type = iter.dtype();
    uint64_t range = 0;
    switch (type) {
      case c10::kFloat: range = (uint64_t{1} << 24) + 1; break;
      case c10::kDouble: range = (uint64_t{1} << 53) + 1; break;
      case c10::kHalf: range = (uint64_t{1} << 11) + 1; break;
      case c10::kBFloat16: range = (uint64_t{1} << 8) + 1; break;
      case c10::kBool: range = 2; break;
      case c10::kByte: range = 256; break;
      case c10::kChar: range = 128; break;
      case c10::kShort: range = 32768; break;
      case c10::kInt: range = uint64_t{1} << 31; break;
      case c10::kLong: range = uint64_t{1} << 63; break;
      default: TORCH_CHECK(false, "random_ is not implemented for ", type, " on opencl");
    }
    random_range(iter.tensor(0), 0, range, gen);
  }
};

using at::native::templates::bernoulli_impl_;

// A CPU tensor reaches these kernels when only the generator is an opencl one (a Generator
// takes part in choosing the dispatch key): refuse it as CPU's own kernels do.
void check_tensor_matches_generator(const at::Tensor& self, const std::optional<at::Generator>& gen) {
  TORCH_CHECK(self.device().is_privateuseone(), "Expected a '", self.device().type(),
              "' device type for generator but found '", gen.has_value() ? gen->device().type() : self.device().type(),
              "'");
}

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  check_tensor_matches_generator(self, gen);
  return at::native::templates::uniform_impl_<UniformKernel, OpenCLGeneratorImpl>(self, from, to, gen);
}
at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  check_tensor_matches_generator(self, gen);
  return at::native::templates::normal_impl_<NormalKernel, OpenCLGeneratorImpl>(self, mean, std, gen);
}
at::Tensor& exponential_(at::Tensor& self, double lambda, std::optional<at::Generator> gen) {
  check_tensor_matches_generator(self, gen);
  return at::native::templates::exponential_impl_<ExponentialKernel, OpenCLGeneratorImpl>(self, lambda, gen);
}
at::Tensor& log_normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  check_tensor_matches_generator(self, gen);
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "log_normal_: expected a floating point tensor, got ",
              self.scalar_type());
  return at::native::templates::log_normal_impl_<LogNormalKernel, OpenCLGeneratorImpl>(self, mean, std, gen);
}
at::Tensor& geometric_(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  check_tensor_matches_generator(self, gen);
  TORCH_CHECK(self.scalar_type() != c10::kBool, "geometric_: not implemented for Bool tensors");
  return at::native::templates::geometric_impl_<GeometricKernel, OpenCLGeneratorImpl>(self, p, gen);
}
at::Tensor& cauchy_(at::Tensor& self, double median, double sigma, std::optional<at::Generator> gen) {
  check_tensor_matches_generator(self, gen);
  return at::native::templates::cauchy_impl_<CauchyKernel, OpenCLGeneratorImpl>(self, median, sigma, gen);
}
at::Tensor& bernoulli_scalar_(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  check_tensor_matches_generator(self, gen);
  return bernoulli_impl_<BernoulliScalarKernel, OpenCLGeneratorImpl>(self, p, gen);
}
at::Tensor& bernoulli_tensor_(at::Tensor& self, const at::Tensor& p, std::optional<at::Generator> gen) {
  check_tensor_matches_generator(self, gen);
  return bernoulli_impl_<BernoulliTensorKernel, OpenCLGeneratorImpl>(self, p, gen);
}
at::Tensor bernoulli(const at::Tensor& self, std::optional<at::Generator> gen) {
  check_tensor_matches_generator(self, gen);
  at::Tensor result = at::empty_like(self, at::MemoryFormat::Contiguous);
  return bernoulli_tensor_(result, self, gen);
}
at::Tensor& bernoulli_out(const at::Tensor& self, std::optional<at::Generator> gen, at::Tensor& out) {
  check_tensor_matches_generator(self, gen);
  return at::native::templates::bernoulli_out_impl<BernoulliTensorKernel, OpenCLGeneratorImpl>(out, self, gen);
}
at::Tensor& random_(at::Tensor& self, std::optional<at::Generator> gen) {
  check_tensor_matches_generator(self, gen);
  return at::native::templates::random_impl<RandomKernel, OpenCLGeneratorImpl>(self, gen);
}
at::Tensor& random_from_(at::Tensor& self, int64_t from, std::optional<int64_t> to, std::optional<at::Generator> gen) {
  check_tensor_matches_generator(self, gen);
  return at::native::templates::random_from_to_impl<RandomFromToKernel, OpenCLGeneratorImpl>(self, from, to, gen);
}
at::Tensor& random_to_(at::Tensor& self, int64_t to, std::optional<at::Generator> gen) {
  return random_from_(self, 0, to, gen);
}

// ---- Dropout: the mask and the scaled output in one kernel.

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train) {
  if (input.numel() == 0) return {input, at::empty_like(input, input.options())};
  if (train.has_value() && !*train) {
    return {input.clone(), at::ones_like(input, input.options().dtype(c10::kBool))};
  }
  TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  TORCH_CHECK(at::isFloatingType(input.scalar_type()), "dropout: expected a floating point input, got ",
              input.scalar_type());
  const c10::DeviceGuard guard(input.device());
  const double keep = 1. - p;
  const double scale = keep == 0 ? 0. : 1. / keep;
  const at::Tensor in = input.contiguous();
  at::Tensor output = at::empty(input.sizes(), input.options());
  at::Tensor mask = at::empty(input.sizes(), input.options().dtype(c10::kBool));
  launch("dropout", output, std::nullopt, false, {B(in), B(mask), F(keep), F(scale)});
  return {output, mask};
}

at::Tensor native_dropout_backward(const at::Tensor& grad_output, const at::Tensor& mask, double scale) {
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "Mask should be Bool Scalar Type", mask.scalar_type());
  // CPU computes grad * mask * scale, which promotes integer gradients to the default float dtype.
  if (!at::isFloatingType(grad_output.scalar_type())) return grad_output * mask * scale;
  at::Tensor result = at::empty_like(grad_output);
  auto iter = at::TensorIteratorConfig()
                  .add_output(result)
                  .add_const_input(grad_output)
                  .add_const_input(mask)
                  .check_all_same_dtype(false)
                  .build();
  run_pointwise(iter, {"dropout_backward", "a * b * s0", nullptr}, {scale},
                compute_dtype(grad_output.scalar_type()));
  return iter.output();
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("uniform_", TORCH_FN(uniform_));
  m.impl("normal_", TORCH_FN(normal_));
  m.impl("exponential_", TORCH_FN(exponential_));
  m.impl("log_normal_", TORCH_FN(log_normal_));
  m.impl("geometric_", TORCH_FN(geometric_));
  m.impl("cauchy_", TORCH_FN(cauchy_));
  m.impl("bernoulli_.float", TORCH_FN(bernoulli_scalar_));
  m.impl("bernoulli_.Tensor", TORCH_FN(bernoulli_tensor_));
  m.impl("bernoulli", TORCH_FN(bernoulli));
  m.impl("bernoulli.out", TORCH_FN(bernoulli_out));
  m.impl("random_", TORCH_FN(random_));
  m.impl("random_.from", TORCH_FN(random_from_));
  m.impl("random_.to", TORCH_FN(random_to_));
  m.impl("native_dropout", TORCH_FN(native_dropout));
  m.impl("native_dropout_backward", TORCH_FN(native_dropout_backward));
}

}  // namespace torch_opencl
