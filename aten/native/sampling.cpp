// Sampling: torch.multinomial and torch.randperm on the device, and normal() with tensor means or
// standard deviations.
// multinomial is ATen's own (its checks; without replacement, or one sample, its exponential race:
// argmax/topk of p / q with q ~ Exp(1), all native ops here); with replacement it calls the device's
// multinomial_with_replacement_stub, which kernels_cl/multinomial.cl serves over the rows' cumulative sums.
// randperm sorts 63-bit random keys (as CUDA does): one random_ and one sort, no host walk.
#include <ATen/ATen.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/DistributionTemplates.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/native/UnaryOps.h>
#include <ATen/ops/multinomial_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <map>
#include <mutex>
#include <string>

#include "aten/generator.h"
#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/embedded_sources.h"
#include "runtime/launch.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

cl_program multinomial_program(int device, bool dbl) {
  static std::mutex mutex;
  static std::map<std::pair<int, bool>, cl_program> programs;
  std::lock_guard<std::mutex> lock(mutex);
  auto& program = programs[{device, dbl}];
  if (!program) {
    const std::string source = program_prelude({dbl ? at::kDouble : at::kFloat}) + "#define P_T " +
                               (dbl ? "double" : "float") + "\n#define P_IS_DOUBLE " + (dbl ? "1" : "0") + "\n" +
                               tocl::embedded_sources().at("multinomial.cl");
    program = tocl::get_program(device, source);
  }
  return program;
}

// The generator of `gen` (or the device's default) reserves `blocks` Philox blocks: (seed, first block).
std::pair<uint64_t, uint64_t> reserve_blocks(std::optional<at::Generator> gen, int device, uint64_t blocks) {
  auto* impl = at::get_generator_or_default<OpenCLGeneratorImpl>(gen, default_generator(device));
  std::lock_guard<std::mutex> lock(impl->mutex_);
  const uint64_t seed = impl->current_seed();
  const uint64_t offset = impl->advance(4 * blocks);
  return {seed, (offset + 3) / 4};  // offsets set by hand may not be block-aligned
}

}  // namespace

// result (rows, n_sample) or (n_sample) int64, already sized by ATen's multinomial_out; self 1-D or 2-D.
void multinomial_with_replacement(at::Tensor& result, const at::Tensor& self, int64_t n_sample,
                                  std::optional<at::Generator> gen) {
  const c10::DeviceGuard guard(self.device());
  const int device = device_index(self);
  const bool dbl = self.scalar_type() == at::kDouble;
  check_device_supports(self.scalar_type(), device, "multinomial");
  const at::Tensor probs = (self.dim() == 1 ? self.unsqueeze(0) : self).to(dbl ? at::kDouble : at::kFloat);
  const int64_t rows = probs.size(0), categories = probs.size(1);
  if (rows == 0) return;
  // CPU's checks, with its messages, from one read of three flags.
  // NaN fails the first, as in CPU's order of checks.
  const at::Tensor flags = at::stack({(probs >= 0).logical_not().any(), probs.isfinite().logical_not().any(),
                                      (probs.sum(1) <= 0).any()})
                               .cpu();
  const bool* f = flags.const_data_ptr<bool>();
  TORCH_CHECK(!f[0], "invalid multinomial distribution (encountering probability entry < 0)");
  TORCH_CHECK(!f[1], "invalid multinomial distribution (encountering probability entry = infinity or NaN)");
  TORCH_CHECK(!f[2], "invalid multinomial distribution (sum of probabilities <= 0)");
  const at::Tensor sums = probs.cumsum(1).contiguous();
  const at::Tensor out = result.is_contiguous() ? result : at::empty(result.sizes(), result.options());
  const uint64_t total = static_cast<uint64_t>(rows * n_sample);
  const auto [seed, block] = reserve_blocks(gen, device, total);
  cl_kernel k = tocl::get_kernel(multinomial_program(device, dbl), "multinomial_with_replacement");
  tocl::set_args(k, buffer_arg(sums), buffer_arg(out), static_cast<cl_int>(categories),
                 static_cast<cl_int>(n_sample), static_cast<cl_ulong>(total), static_cast<cl_ulong>(seed),
                 static_cast<cl_ulong>(block));
  tocl::enqueue_1d(device, current_stream_of(out), k, total);
  if (!out.is_same(result)) result.copy_(out);
}

namespace {

at::Tensor& randperm_out(int64_t n, std::optional<at::Generator> gen, at::Tensor& result) {
  // An opencl generator brings CPU tensors here too (a Generator takes part in dispatch): CPU's refusal.
  TORCH_CHECK(result.device().is_privateuseone(), "Expected a '", result.device().type(),
              "' device type for generator but found '", gen.has_value() ? gen->device().type() : result.device().type(),
              "'");
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  at::native::check_supported_max_int_with_precision(n, result);
  result.resize_({n});
  if (n == 0) return result;
  const c10::DeviceGuard guard(result.device());
  at::Tensor keys = at::empty({n}, result.options().dtype(at::kLong));
  keys.random_(gen);
  result.copy_(std::get<1>(keys.sort(/*stable=*/std::optional<bool>(true), /*dim=*/0)));
  return result;
}

template <typename RNG>
struct NormalFill {
  void operator()(const at::TensorBase& self, double mean, double std, std::optional<at::Generator> gen) {
    at::Tensor(self).normal_(mean, std, gen);
  }
};

using at::native::templates::normal_impl;
using at::native::templates::normal_out_impl;

at::Tensor normal_tensor_float(const at::Tensor& mean, double std, std::optional<at::Generator> gen) {
  return normal_impl<NormalFill, OpenCLGeneratorImpl>(mean, std, gen);
}
at::Tensor& normal_tensor_float_out(const at::Tensor& mean, double std, std::optional<at::Generator> gen,
                                    at::Tensor& out) {
  return normal_out_impl<NormalFill, OpenCLGeneratorImpl>(out, mean, std, gen);
}
at::Tensor normal_float_tensor(double mean, const at::Tensor& std, std::optional<at::Generator> gen) {
  return normal_impl<NormalFill, OpenCLGeneratorImpl>(mean, std, gen);
}
at::Tensor& normal_float_tensor_out(double mean, const at::Tensor& std, std::optional<at::Generator> gen,
                                    at::Tensor& out) {
  return normal_out_impl<NormalFill, OpenCLGeneratorImpl>(out, mean, std, gen);
}
at::Tensor normal_tensor_tensor(const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> gen) {
  return normal_impl<NormalFill, OpenCLGeneratorImpl>(mean, std, gen);
}
at::Tensor& normal_tensor_tensor_out(const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> gen,
                                     at::Tensor& out) {
  return normal_out_impl<NormalFill, OpenCLGeneratorImpl>(out, mean, std, gen);
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("multinomial", TORCH_FN(at::native::multinomial));
  m.impl("multinomial.out", TORCH_FN(at::native::multinomial_out));
  m.impl("randperm.generator_out", TORCH_FN(randperm_out));
  m.impl("normal.Tensor_float", TORCH_FN(normal_tensor_float));
  m.impl("normal.Tensor_float_out", TORCH_FN(normal_tensor_float_out));
  m.impl("normal.float_Tensor", TORCH_FN(normal_float_tensor));
  m.impl("normal.float_Tensor_out", TORCH_FN(normal_float_tensor_out));
  m.impl("normal.Tensor_Tensor", TORCH_FN(normal_tensor_tensor));
  m.impl("normal.Tensor_Tensor_out", TORCH_FN(normal_tensor_tensor_out));
}

}  // namespace torch_opencl

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(multinomial_with_replacement_stub, &torch_opencl::multinomial_with_replacement)
}  // namespace at::native
