#pragma once
// The boxed CPU fallback: every operator without an opencl kernel runs on the
// CPU, with inputs copied there and results (and mutated inputs) copied back.
#include <cstdint>
#include <map>
#include <string>

namespace torch_opencl {

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
