// The boxed global fallback for PrivateUse1: operators without an opencl
// kernel run on the CPU. Counts what it served and honours TORCH_OPENCL_FALLBACK.
#include "fallback/fallback.h"

#include <ATen/native/CPUFallback.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>

namespace torch_opencl {
namespace {

enum class Mode { kWarn, kSilent, kError };

Mode parse_mode(const std::string& value) {
  if (value == "warn") return Mode::kWarn;
  if (value == "silent") return Mode::kSilent;
  if (value == "error") return Mode::kError;
  TORCH_CHECK(false, "TORCH_OPENCL_FALLBACK='", value, "' is not a fallback mode; use one of: warn, silent, error.");
}

struct State {
  std::mutex mutex;
  std::map<std::string, int64_t> counts;
  std::set<std::string> warned;
  Mode mode = Mode::kWarn;
  bool mode_read = false;

  Mode current_mode() {
    if (!mode_read) {
      const char* env = std::getenv("TORCH_OPENCL_FALLBACK");
      mode_read = true;  // set first: a bad value raises once, then the default holds
      mode = (env && *env) ? parse_mode(env) : Mode::kWarn;
    }
    return mode;
  }
};

State& state() {
  static State s;
  return s;
}

std::string operator_name(const c10::OperatorHandle& op) {
  const auto& name = op.schema().operator_name();
  return name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
}

void opencl_cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = operator_name(op);
  {
    auto& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    const Mode mode = s.current_mode();
    TORCH_CHECK(mode != Mode::kError, "The operator '", name,
                "' has no opencl kernel, and TORCH_OPENCL_FALLBACK=error forbids running it on the CPU. "
                "Unset TORCH_OPENCL_FALLBACK (or set it to 'warn' or 'silent') to allow the CPU fallback.");
    s.counts[name]++;
    if (mode == Mode::kWarn && s.warned.insert(name).second)
      TORCH_WARN("The operator '", name,
                 "' has no opencl kernel; it runs on the CPU with copies to and from the device. "
                 "torch.opencl.fallback_stats() counts these; TORCH_OPENCL_FALLBACK=silent hides this warning.");
  }
  at::native::cpu_fallback(op, stack, /*error_on_views=*/true);
}

}  // namespace

std::map<std::string, int64_t> fallback_stats() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.counts;
}

void reset_fallback_stats() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.counts.clear();
}

std::string fallback_mode_name() {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  switch (s.current_mode()) {
    case Mode::kWarn: return "warn";
    case Mode::kSilent: return "silent";
    case Mode::kError: return "error";
  }
  return "warn";
}

void set_fallback_mode(const std::string& mode) {
  auto& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.mode = parse_mode(mode);
  s.mode_read = true;
  s.warned.clear();
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&opencl_cpu_fallback>());
}

}  // namespace torch_opencl
