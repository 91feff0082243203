#include "runtime/gemm_tuning.h"

#include <clblast.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/kernel_forms.h"
#include "runtime/program_cache.h"

namespace tocl {
namespace {

std::mutex g_mutex;
std::set<int> g_applied;
std::map<int, std::string> g_source;

bool tuning_disabled() {
  const char* v = std::getenv("TORCH_OPENCL_GEMM_TUNING");
  return v && std::string(v) == "0";
}

clblast::Precision precision_of(int bits) {
  if (bits == 32) return clblast::Precision::kSingle;
  if (bits == 64) return clblast::Precision::kDouble;
  throw Error("GEMM tuning: precision must be 32 or 64 bits, got " + std::to_string(bits));
}

bool is_pocl_cpu(const DeviceInfo& d) { return (d.type & CL_DEVICE_TYPE_CPU) && d.is_pocl(); }

// --- A minimal JSON reader: objects, strings, numbers; arrays, true/false/null are skipped.
struct Reader {
  const std::string& s;
  size_t i = 0;
  [[noreturn]] void fail(const char* what) {
    throw Error(std::string("GEMM tuning file: ") + what + " at character " + std::to_string(i));
  }
  void ws() { while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i; }
  bool eat(char c) { ws(); if (i < s.size() && s[i] == c) { ++i; return true; } return false; }
  std::string string() {
    if (!eat('"')) fail("expected a string");
    std::string out;
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\' && i + 1 < s.size()) ++i;
      out += s[i++];
    }
    if (i >= s.size()) fail("unterminated string");
    ++i;
    return out;
  }
  // Skips any value; returns it as a number when it is one (else -1).
  double skip_value() {
    ws();
    if (i >= s.size()) fail("unexpected end");
    const char c = s[i];
    if (c == '"') { string(); return -1; }
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++i;
      if (eat(close)) return -1;
      do {
        if (close == '}') { string(); if (!eat(':')) fail("expected ':'"); }
        skip_value();
      } while (eat(','));
      if (!eat(close)) fail("expected a closing bracket");
      return -1;
    }
    const size_t start = i;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == '-' || s[i] == '+')) ++i;
    if (start == i) fail("unexpected character");
    const std::string token = s.substr(start, i - start);
    if (token == "true" || token == "false" || token == "null") return -1;
    char* end = nullptr;
    const double v = std::strtod(token.c_str(), &end);
    if (*end) fail("bad number");
    return v;
  }
  // Calls f(key) for each member of an object; f must consume the value.
  template <class F>
  void object(F f) {
    if (!eat('{')) fail("expected an object");
    if (eat('}')) return;
    do {
      const std::string key = string();
      if (!eat(':')) fail("expected ':'");
      f(key);
    } while (eat(','));
    if (!eat('}')) fail("expected '}'");
  }
};

void apply(int device, const KernelParameters& sets, int bits) {
  for (const auto& [kernel, parameters] : sets) override_gemm_parameters(device, kernel, bits, parameters);
}

}  // namespace

std::map<int, KernelParameters> parse_gemm_tuning_json(const std::string& text) {
  std::map<int, KernelParameters> out;
  Reader r{text};
  r.object([&](const std::string& key) {
    if (key != "parameters") { r.skip_value(); return; }
    r.object([&](const std::string& precision) {
      const int bits = std::atoi(precision.c_str());
      if (bits != 32 && bits != 64) r.fail("precision keys must be \"32\" or \"64\"");
      r.object([&](const std::string& kernel) {
        r.object([&](const std::string& name) {
          const double v = r.skip_value();
          if (v < 0) r.fail("parameter values must be non-negative integers");
          out[bits][kernel][name] = static_cast<size_t>(v);
        });
      });
    });
  });
  return out;
}

KernelParameters builtin_gemm_parameters(int device, int precision_bits) {
  const auto& d = device_info(device);
  if (!is_pocl_cpu(d)) return {};
  // Shipped for single precision only.
  if (precision_bits != 32) return {};
  if (d.native_float_width >= 16) {
    // PoCL 3.1 on an AVX-512 CPU (measured on a 2-core Skylake-AVX512 Xeon, see bench/bench_gemm.py):
    // 16-wide vectors and 32x8 outputs per work-item. Not for AVX2 CPUs, whose 16 vector registers
    // this tile would spill.
    return {
        {"Xgemm",
         {{"GEMMK", 0}, {"KREG", 1}, {"KWG", 128}, {"KWI", 16}, {"MDIMA", 16}, {"MDIMC", 16}, {"MWG", 256},
          {"NDIMB", 8}, {"NDIMC", 8}, {"NWG", 64}, {"SA", 1}, {"SB", 1}, {"STRM", 0}, {"STRN", 0}, {"VWM", 16},
          {"VWN", 8}}},
        {"XgemmDirect",
         {{"WGD", 32}, {"MDIMCD", 8}, {"NDIMCD", 8}, {"MDIMAD", 8}, {"NDIMBD", 8}, {"KWID", 8}, {"VWMD", 4},
          {"VWND", 4}, {"PADA", 1}, {"PADB", 1}}},
        {"GemmRoutine", {{"XGEMM_MIN_INDIRECT_SIZE", 256}}},
    };
  }
  // Measured on PoCL 3.1, 2-core AVX2 (shared/notes/clblast-on-pocl.md): 55-60 GFLOP/s against
  // 12-20 with CLBlast's generic defaults.
  return {
      {"Xgemm",
       {{"GEMMK", 0}, {"KREG", 1}, {"KWG", 128}, {"KWI", 16}, {"MDIMA", 8}, {"MDIMC", 8}, {"MWG", 128},
        {"NDIMB", 8}, {"NDIMC", 8}, {"NWG", 32}, {"SA", 1}, {"SB", 1}, {"STRM", 0}, {"STRN", 0}, {"VWM", 8},
        {"VWN", 4}}},
      {"GemmRoutine", {{"XGEMM_MIN_INDIRECT_SIZE", 256}}},
  };
}

std::string gemm_tuning_path(int device) {
  const std::string dir = cache_dir();
  if (dir.empty()) return "";
  const auto& d = device_info(device);
  const std::string key = d.platform_name + "\n" + d.name + "\n" + d.driver_version + "\n" + d.device_version;
  return dir + "/clblast_tuning_" + hash_hex(key).substr(0, 16) + ".json";
}

void override_gemm_parameters(int device, const std::string& kernel, int precision_bits,
                              const std::map<std::string, size_t>& parameters) {
  if (kernel == kTiledGemmKernel) {
    // Our own GPU GEMM's tiles (kernels_cl/gemm_tiled.cl), kept beside CLBlast's sets.
    const auto get = [&](const char* name) {
      const auto it = parameters.find(name);
      if (it == parameters.end())
        throw Error(std::string("tiled GEMM parameters lack ") + name +
                    " (LARGE_RM, LARGE_RN, LARGE_BK, SMALL_RM, SMALL_RN, SMALL_BK)");
      return static_cast<int>(it->second);
    };
    set_gemm_tiles(device, {get("LARGE_RM"), get("LARGE_RN"), get("LARGE_BK")},
                   {get("SMALL_RM"), get("SMALL_RN"), get("SMALL_BK")});
    return;
  }
  const std::unordered_map<std::string, size_t> p(parameters.begin(), parameters.end());
  const auto status = clblast::OverrideParameters(device_info(device).id, kernel, precision_of(precision_bits), p);
  if (status != clblast::StatusCode::kSuccess)
    throw Error("CLBlast refused the parameters for kernel '" + kernel + "' (" + std::to_string(precision_bits) +
                "-bit): status " + std::to_string(static_cast<int>(status)) +
                (status == clblast::StatusCode::kMissingOverrideParameter ? " (a parameter is missing)"
                 : status == clblast::StatusCode::kInvalidOverrideKernel ? " (unknown kernel name)"
                                                                          : ""));
}

void ensure_gemm_tuning(int device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_applied.insert(device).second) return;
  if (tuning_disabled()) { g_source[device] = "disabled"; return; }
  std::string source = "defaults";
  for (int bits : {32, 64}) {
    const auto builtin = builtin_gemm_parameters(device, bits);
    if (!builtin.empty()) { apply(device, builtin, bits); source = "builtin"; }
  }
  const std::string path = gemm_tuning_path(device);
  std::ifstream file(path);
  if (!path.empty() && file) {
    std::stringstream text;
    text << file.rdbuf();
    try {
      for (const auto& [bits, sets] : parse_gemm_tuning_json(text.str())) {
        try {
          apply(device, sets, bits);
          source = "file";
        } catch (const Error& e) {
          // A bad saved set must not cost GEMM: the built-in one (or CLBlast's) stays.
          apply(device, builtin_gemm_parameters(device, bits), bits);
          source += std::string("; ignored ") + path + ": " + e.what();
        }
      }
    } catch (const Error& e) {
      source += std::string("; ignored ") + path + ": " + e.what();
    }
  }
  g_source[device] = source;
}

std::string gemm_tuning_source(int device) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = g_source.find(device);
  return it == g_source.end() ? "not applied yet" : it->second;
}

}  // namespace tocl
