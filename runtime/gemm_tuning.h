#pragma once
// CLBlast GEMM parameters per device: a built-in set for devices whose
// defaults are known to be poor (PoCL on CPUs), and a tuned set saved by
// `python -m torch_opencl.tune` in the cache directory, applied over it with
// clblast::OverrideParameters before the device's first GEMM.
// TORCH_OPENCL_GEMM_TUNING=0 leaves CLBlast's own defaults.
#include <cstddef>
#include <map>
#include <string>

namespace tocl {

// Our tiled GPU GEMM's entry among the kernels (LARGE_RM/RN/BK, SMALL_RM/RN/BK: runtime/kernel_forms.h).
constexpr const char* kTiledGemmKernel = "TiledGemm";

// kernel name ("Xgemm", "XgemmDirect", "GemmRoutine", kTiledGemmKernel) -> parameter -> value
using KernelParameters = std::map<std::string, std::map<std::string, size_t>>;

// Applies the device's parameters once (later calls return at once). Call before any CLBlast GEMM.
void ensure_gemm_tuning(int device);

// Where the tuner saves this device's parameters ("" when the cache is disabled).
std::string gemm_tuning_path(int device);

// The built-in set for the device and precision (32 or 64); empty when CLBlast's defaults stand.
KernelParameters builtin_gemm_parameters(int device, int precision_bits);

// What ensure_gemm_tuning applied: "disabled", "defaults", "builtin", "file", plus any error text.
std::string gemm_tuning_source(int device);

// Overrides one kernel's parameters now (after ensure_gemm_tuning). Throws tocl::Error with
// CLBlast's status when CLBlast refuses them (unknown kernel, missing parameter).
void override_gemm_parameters(int device, const std::string& kernel, int precision_bits,
                              const std::map<std::string, size_t>& parameters);

// Parses the tuner's JSON: {"parameters": {"32": {"Xgemm": {"KWG": 32, ...}, ...}, "64": {...}}, ...}.
// Returns precision bits -> kernel parameters; throws tocl::Error on malformed text.
std::map<int, KernelParameters> parse_gemm_tuning_json(const std::string& text);

}  // namespace tocl
