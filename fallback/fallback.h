#pragma once
// The boxed CPU fallback: every operator without an opencl kernel runs on the
// CPU, with inputs copied there and results (and mutated inputs) copied back.
#include <ATen/core/stack.h>

#include <cstdint>
#include <map>
#include <string>

namespace c10 {
class OperatorHandle;
}

namespace torch_opencl {

// The boxed fallback itself, for kernels that hand a call they cannot take over to it
// (aten/kernel_support/dtype_fallback.h); with a FallbackReason alive, its warning and error say why.
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// While alive (one thread), the fallback's messages say the operator's kernel refused
// these arguments for `reason`, rather than that it has no opencl kernel.
class FallbackReason {
 public:
  explicit FallbackReason(std::string reason);
  ~FallbackReason();
  FallbackReason(const FallbackReason&) = delete;
  FallbackReason& operator=(const FallbackReason&) = delete;

 private:
  std::string previous_;
};

// {operator name (with overload, e.g. "aten::add.out"): calls served} since the last reset.
std::map<std::string, int64_t> fallback_stats();
void reset_fallback_stats();

// Counts one call of `name` served on the CPU, warns once per operator or
// raises, as the fallback mode says. Every CPU path calls it first.
void record_fallback_call(const std::string& name);

// "warn" (once per operator, the default), "silent" or "error", from
// TORCH_OPENCL_FALLBACK at first use, or as last set.
std::string fallback_mode_name();
void set_fallback_mode(const std::string& mode);

}  // namespace torch_opencl
