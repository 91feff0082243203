#include "runtime/program_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "runtime/device.h"
#include "runtime/embedded_sources.h"
#include "runtime/error.h"
#include "runtime/kernel_forms.h"
#include "runtime/pocl_cache.h"
#include "runtime/stream.h"

namespace tocl {
namespace {

// Version 2 entries name the program they hold (the key their file is named for): an entry whose file
// holds another program (copied or renamed by hand, or written by a version-1 build) is rebuilt.
constexpr char kMagic[8] = {'T', 'O', 'C', 'L', 'B', 'I', 'N', '2'};
constexpr size_t kKeyLength = 32;  // hash_hex's digits

uint64_t fnv1a(const std::string& text, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

using Key = std::tuple<int, std::string, std::string>;  // (device, source hash, options)

struct Cache {
  std::mutex mutex;
  std::map<Key, cl_program> programs;
  // Programs being built now: another thread asking for one waits for it (built once), while
  // different programs build at the same time, as far as the driver allows.
  std::set<Key> building;
  std::condition_variable built;
  // Sources that failed to build, with their error: asking again raises at once instead of
  // spending the compiler's seconds on the same failure each call.
  std::map<Key, std::string> failures;
  ProgramCacheStats stats;
  std::map<Key, std::pair<std::string, std::string>> recorded;  // (source, options) while recording
  bool recording = false;
  bool notice_enabled = true;
  bool noticed = false;  // the one "compiling ..." line has been printed
  double compile_seconds = 0;  // in builds from source that compiled (not loaded from the driver's cache)
  int keep_binaries = -1;  // -1: as binaries_worth_keeping() says; 0/1: forced (tests)
};

Cache& cache() {
  static Cache c;
  return c;
}

std::string build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  std::string log(size, '\0');
  if (size) clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  return log.c_str();
}

}  // namespace

bool make_private_dirs(const std::string& path) {
  std::string partial;
  for (size_t pos = 0; pos != std::string::npos;) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    struct stat st;
    if (stat(partial.c_str(), &st) == 0) continue;
    if (mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  return true;
}

namespace {

// Reads a cache file that must hold the program `key` names; an empty result means absent or broken (then
// removed).
std::vector<unsigned char> read_entry(const std::string& path, const std::string& key, bool* corrupt) {
  *corrupt = false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  char magic[8];
  char stored_key[kKeyLength];
  uint64_t size = 0, checksum = 0;
  std::vector<unsigned char> payload;
  in.read(magic, 8);
  in.read(stored_key, kKeyLength);
  in.read(reinterpret_cast<char*>(&size), sizeof(size));
  in.read(reinterpret_cast<char*>(&checksum), sizeof(checksum));
  bool ok = in && std::memcmp(magic, kMagic, 8) == 0 && key.size() == kKeyLength &&
            std::memcmp(stored_key, key.data(), kKeyLength) == 0 && size > 0 && size < (1ull << 31);
  if (ok) {
    payload.resize(size);
    in.read(reinterpret_cast<char*>(payload.data()), static_cast<std::streamsize>(size));
    ok = in.gcount() == static_cast<std::streamsize>(size) && in.peek() == EOF &&
         fnv1a(std::string(payload.begin(), payload.end()), 14695981039346656037ull) == checksum;
  }
  if (!ok) {
    *corrupt = true;
    std::remove(path.c_str());
    return {};
  }
  return payload;
}

// Writes atomically (temporary file, then rename) so readers never see half a file.
void write_entry(const std::string& path, const std::string& key, const std::vector<unsigned char>& payload) {
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;  // a read-only cache directory only costs compile time
    const uint64_t size = payload.size();
    const uint64_t checksum = fnv1a(std::string(payload.begin(), payload.end()), 14695981039346656037ull);
    out.write(kMagic, 8);
    out.write(key.data(), kKeyLength);
    out.write(reinterpret_cast<const char*>(&size), sizeof(size));
    out.write(reinterpret_cast<const char*>(&checksum), sizeof(checksum));
    out.write(reinterpret_cast<const char*>(payload.data()), static_cast<std::streamsize>(size));
    if (!out) {
      std::remove(tmp.c_str());
      return;
    }
  }
  chmod(tmp.c_str(), 0600);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
}

std::vector<unsigned char> program_binary(cl_program program) {
  size_t size = 0;
  TOCL_CHECK(clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr));
  std::vector<unsigned char> binary(size);
  unsigned char* data = binary.data();
  if (size) TOCL_CHECK(clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(data), &data, nullptr));
  return binary;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

cl_program build_from_binary(int device, const std::vector<unsigned char>& binary, const std::string& options,
                             double* seconds) {
  const auto& info = device_info(device);
  const unsigned char* data = binary.data();
  const size_t size = binary.size();
  cl_int binary_status = CL_SUCCESS, status = CL_SUCCESS;
  cl_program program = clCreateProgramWithBinary(context(device), 1, &info.id, &size, &data, &binary_status, &status);
  if (status != CL_SUCCESS || binary_status != CL_SUCCESS) {
    if (program) clReleaseProgram(program);
    return nullptr;
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (clBuildProgram(program, 1, &info.id, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    clReleaseProgram(program);
    return nullptr;
  }
  *seconds = seconds_since(t0);
  return program;
}

bool verbose() {
  static const bool on = [] {
    const char* v = std::getenv("TORCH_OPENCL_VERBOSE");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

bool blank(const std::string& text) { return text.find_first_not_of(" \t\r\n") == std::string::npos; }

// Whether a build log holds a diagnostic: a warning or an error, in any compiler's spelling ("warning:",
// "N warnings generated.", NVIDIA's "ptxas warning :"). Drivers also write progress notes there (Intel's
// "Compilation started" / "Compilation done" in every log, even with -w), which say nothing of the source.
bool has_diagnostics(const std::string& log) {
  std::string lower(log);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return lower.find("warning") != std::string::npos || lower.find("error") != std::string::npos;
}

// What a program is, for messages: its kernels' names (every program of a family starts with the same
// prelude, so its first line tells nothing) and, for a generated pointwise program, its expression.
std::string describe_program(const std::string& source) {
  auto is_name_char = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '#'; };
  std::vector<std::string> names;
  for (size_t at = source.find("__kernel"); at != std::string::npos; at = source.find("__kernel", at + 8)) {
    // "__kernel [__attribute__((...))] void NAME(": the name is the word before the parameters' '('.
    const size_t returns = source.find("void", at);
    if (returns == std::string::npos) break;
    size_t begin = source.find_first_not_of(" \t\r\n", returns + 4);
    size_t end = begin;
    while (end < source.size() && is_name_char(source[end])) ++end;
    const std::string name = source.substr(begin, end - begin);
    // A kernel a macro defines has a parameter for a name (NAME, foreach_##OP): its expansions are not seen.
    const bool macro = name.find('#') != std::string::npos ||
                       std::none_of(name.begin(), name.end(), [](char ch) { return std::islower(static_cast<unsigned char>(ch)); });
    if (!name.empty() && !macro) names.push_back(name);
  }
  std::string text = names.empty() ? "a program with no kernel" : "kernels ";
  constexpr size_t kShown = 4;
  for (size_t k = 0; k < names.size() && k < kShown; ++k) text += (k ? ", " : "") + names[k];
  if (names.size() > kShown) text += " and " + std::to_string(names.size() - kShown) + " more";
  const size_t expr = source.find("#define EXPR ");
  if (expr != std::string::npos) {
    std::string line = source.substr(expr + 13, source.find('\n', expr) - expr - 13);
    if (line.size() > 80) line = line.substr(0, 77) + "...";
    text += " of " + line;
  }
  // The operand types (#define NAME_T type: IN_T, OUT_T, SRC_T, ...), which tell apart the programs a family
  // builds per dtype.
  // Those of the family's own definitions come first (before its first kernel), each name once.
  std::string types;
  std::set<std::string> named;
  const size_t kernels_start = source.find("__kernel");
  for (size_t at = source.find("#define "); at < kernels_start; at = source.find("#define ", at + 8)) {
    const size_t name_end = source.find(' ', at + 8), line_end = source.find('\n', at);
    if (name_end == std::string::npos || name_end > line_end || name_end - at < 10) continue;
    if (source.compare(name_end - 2, 2, "_T") != 0) continue;
    const std::string value = source.substr(name_end + 1, line_end - name_end - 1);
    if (value.empty() || !std::all_of(value.begin(), value.end(), is_name_char)) continue;
    const std::string name = source.substr(at + 8, name_end - at - 8);
    if (named.insert(name).second) types += (types.empty() ? "" : ", ") + name + " " + value;
  }
  if (!types.empty()) text += " with " + types;
  return text;
}

// The names of a built program's kernels (CL_PROGRAM_KERNEL_NAMES: separated by ';').
std::vector<std::string> kernel_names(cl_program program) {
  size_t size = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string text(size, '\0');
  if (clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, size, text.data(), nullptr) != CL_SUCCESS) return {};
  std::vector<std::string> names;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find(';', begin);
    if (end == std::string::npos) end = text.size();
    std::string name = text.substr(begin, end - begin).c_str();
    if (!name.empty()) names.push_back(name);
    begin = end + 1;
  }
  return names;
}

// `*compiled`: whether the driver compiled the source, or (PoCL) loaded the program from its own cache.
cl_program build_from_source(int device, const std::string& source, const std::string& options, double* seconds,
                             bool* compiled) {
  const auto& info = device_info(device);
  const char* text = source.c_str();
  const size_t length = source.size();
  cl_int status = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context(device), 1, &text, &length, &status);
  TOCL_CHECK(status);
  // -w (an OpenCL build option): drivers keep warnings to themselves; PoCL would otherwise print
  // "N warnings generated." on the user's terminal. Our sources compile without warnings
  // (test_kernel_warnings.py); TORCH_OPENCL_VERBOSE=1 shows them, with each build's log.
  const std::string build_options = verbose() ? options : (options.empty() ? "-w" : options + " -w");
  std::optional<PoclBuildWatch> watch;
  if (info.is_pocl()) watch.emplace();
  const auto t0 = std::chrono::steady_clock::now();
  status = clBuildProgram(program, 1, &info.id, build_options.c_str(), nullptr, nullptr);
  *seconds = seconds_since(t0);
  *compiled = true;
  if (status != CL_SUCCESS) {
    const std::string log = build_log(program, info.id);
    clReleaseProgram(program);
    throw BuildError("OpenCL program (" + describe_program(source) + ") failed to build on " + info.name + " (" +
                         error_name(status) + ") with options '" + options + "'. Build log:\n" + log,
                     status);
  }
  if (watch) *compiled = watch->compiled(kernel_names(program));
  if (verbose()) {
    const std::string log = build_log(program, info.id);
    std::fprintf(stderr, "torch_opencl: built %s (options '%s') on %s in %.2f s%s%s%s\n", describe_program(source).c_str(),
                 options.c_str(), info.name.c_str(), *seconds, *compiled ? "" : ", from PoCL's kernel cache",
                 blank(log) ? "" : "; build log:\n", log.c_str());
  }
  return program;
}

// PoCL compiles every kernel of a program (for a dynamic work-group size) when the program's binary is
// read, on top of the compile each kernel gets at its first launch anyway; measured on the digits demo
// (examples/train_digits.py), reading binaries doubled a cold first epoch's compile work (48 against
// 25 CPU-seconds). PoCL keeps programs and compiled kernels in its own disk cache (POCL_CACHE_DIR,
// default ~/.cache/pocl/kcache), so our copy would only duplicate it. Other drivers get our cache.
bool binaries_worth_keeping(const DeviceInfo& info, int forced) {
  return forced >= 0 ? forced == 1 : !info.is_pocl();
}

// "" when nothing is kept between runs.
std::string cache_location(const DeviceInfo& info) {
  if (!info.is_pocl()) return cache_dir();
  // A private temporary directory (the usual one could not be used) is removed at exit: nothing is kept.
  const auto& pocl = prepare_pocl_cache();
  if (pocl.used != pocl.directory) return "";
  const char* pocl_dir = std::getenv("POCL_CACHE_DIR");
  return std::string(pocl_dir && *pocl_dir ? pocl_dir : "~/.cache/pocl/kcache") + " (PoCL's own cache)";
}

// One line, once per process, when compiling has taken a second: a first run that sits still while
// its kernels compile says why. Programs loaded from a cache (ours, or PoCL's own) do not count: a warm
// start compiles nothing and says nothing.
void notice_compiling(Cache& c, const DeviceInfo& info) {
  if (c.noticed || !c.notice_enabled || c.compile_seconds < 1.0) return;
  c.noticed = true;
  const std::string location = cache_location(info);
  const std::string kept = !location.empty() ? "cached in " + location + " after this run"
                           : info.is_pocl() ? "not kept after this run: PoCL's cache directory cannot be used"
                                            : "not kept after this run: TORCH_OPENCL_CACHE=0";
  std::fprintf(stderr,
               "torch_opencl: compiling OpenCL kernels for %s on first use (%s; `python -m torch_opencl warmup` "
               "compiles the common ones ahead of time)\n",
               info.name.c_str(), kept.c_str());
}

}  // namespace

std::string hash_hex(const std::string& text) {
  char out[33];
  std::snprintf(out, sizeof(out), "%016llx%016llx",
                static_cast<unsigned long long>(fnv1a(text, 14695981039346656037ull)),
                static_cast<unsigned long long>(fnv1a(text, 0x84222325cbf29ce4ull)));
  return out;
}

std::string cache_dir() {
  const char* enabled = std::getenv("TORCH_OPENCL_CACHE");
  if (enabled && std::string(enabled) == "0") return "";
  const char* dir = std::getenv("TORCH_OPENCL_CACHE_DIR");
  if (dir && *dir) return dir;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/torch_opencl";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/torch_opencl";
}

// The device's own options (kernel_forms.h: the math library's choice) go with every program.
static std::string with_device_options(int device, const std::string& options) {
  const std::string& own = kernel_forms(device).build_options;
  if (own.empty()) return options;
  return options.empty() ? own : options + " " + own;
}

cl_program get_program(int device, const std::string& source, const std::string& requested_options) {
  auto& c = cache();
  const std::string source_hash = hash_hex(source);
  const std::string options = with_device_options(device, requested_options);
  const Key key = std::make_tuple(device, source_hash, options);
  std::unique_lock<std::mutex> lock(c.mutex);
  if (c.recording) c.recorded.emplace(key, std::make_pair(source, requested_options));
  for (;;) {
    auto found = c.programs.find(key);
    if (found != c.programs.end()) {
      c.stats.memory_hits++;
      return found->second;
    }
    auto failed = c.failures.find(key);
    if (failed != c.failures.end()) throw BuildError(failed->second, CL_BUILD_PROGRAM_FAILURE);
    if (!c.building.count(key)) break;
    c.built.wait(lock);  // another thread builds this one
  }
  c.building.insert(key);
  const int forced_binaries = c.keep_binaries;
  lock.unlock();

  // Built outside the lock; what the build counts is added under it at the end.
  ProgramCacheStats counted;
  cl_program program = nullptr;
  double seconds = 0;
  try {
    const auto& info = device_info(device);
    const std::string dir = cache_dir();
    std::string path, entry_key;
    if (!dir.empty()) {
      entry_key = hash_hex(source_hash + '\n' + options + '\n' + info.name + '\n' + info.platform_name + '\n' +
                           info.driver_version + '\n' + info.device_version);
      path = dir + "/" + entry_key + ".bin";
      bool corrupt = false;
      const auto binary = read_entry(path, entry_key, &corrupt);
      if (corrupt) counted.corrupt_files++;
      if (!binary.empty()) {
        program = build_from_binary(device, binary, options, &seconds);
        if (program) {
          counted.disk_loads++;
        } else {
          counted.corrupt_files++;  // the driver refused it: drop it and rebuild
          std::remove(path.c_str());
        }
      }
    }
    if (!program) {
      bool compiled = true;
      program = build_from_source(device, source, options, &seconds, &compiled);
      counted.source_builds++;
      if (!compiled) counted.driver_cache_loads++;
      if (!path.empty() && binaries_worth_keeping(info, forced_binaries) && make_private_dirs(dir))
        write_entry(path, entry_key, program_binary(program));
    }
  } catch (const BuildError& e) {
    lock.lock();
    c.building.erase(key);
    c.failures[key] = e.what();
    c.stats.build_seconds += seconds;
    c.built.notify_all();
    throw;
  } catch (...) {
    lock.lock();
    c.building.erase(key);
    c.built.notify_all();
    throw;
  }
  lock.lock();
  c.building.erase(key);
  c.programs[key] = program;
  c.stats.disk_loads += counted.disk_loads;
  c.stats.source_builds += counted.source_builds;
  c.stats.driver_cache_loads += counted.driver_cache_loads;
  c.stats.corrupt_files += counted.corrupt_files;
  c.stats.build_seconds += seconds;
  if (counted.source_builds > counted.driver_cache_loads) {
    c.compile_seconds += seconds;
    notice_compiling(c, device_info(device));
  }
  c.built.notify_all();
  return program;
}

cl_program get_embedded_program(int device, const std::string& file_name, const std::string& options) {
  const auto& sources = embedded_sources();
  auto it = sources.find(file_name);
  if (it == sources.end()) throw Error("No embedded OpenCL source named '" + file_name + "'.");
  return get_program(device, it->second, options);
}

cl_kernel get_kernel(cl_program program, const char* name) {
  // Runs once per launch: a hit compares names in place (a std::string key would allocate for
  // every name longer than 15 characters). A program holds a handful of kernels.
  thread_local std::unordered_map<cl_program, std::vector<std::pair<std::string, cl_kernel>>> kernels;
  auto& by_name = kernels[program];
  for (const auto& [kernel_name, kernel] : by_name)
    if (std::strcmp(kernel_name.c_str(), name) == 0) return kernel;
  cl_int status = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(program, name, &status);
  TOCL_CHECK(status);
  by_name.emplace_back(name, kernel);
  return kernel;
}

ProgramCacheStats program_cache_stats() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return cache().stats;
}

void record_sources(bool on) {
  std::lock_guard<std::mutex> lock(cache().mutex);
  cache().recording = on;
  if (!on) cache().recorded.clear();
}

std::vector<std::pair<std::string, std::string>> recorded_sources() {
  std::lock_guard<std::mutex> lock(cache().mutex);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, entry] : cache().recorded) out.push_back(entry);
  return out;
}

std::pair<bool, std::string> compile_log(int device, const std::string& source, const std::string& options) {
  const auto& info = device_info(device);
  const char* text = source.c_str();
  const size_t length = source.size();
  cl_int status = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context(device), 1, &text, &length, &status);
  TOCL_CHECK(status);
  // A macro no source uses makes the text new to the driver's own cache, which would otherwise
  // answer without compiling (and without a log). Compiling alone is enough for the diagnostics.
  static std::atomic<uint64_t> counter{0};
  const std::string fresh = with_device_options(device, options) + " -DTOCL_FRESH_COMPILE_" + std::to_string(getpid()) + "_" +
                            std::to_string(counter.fetch_add(1));
  status = clCompileProgram(program, 1, &info.id, fresh.c_str(), 0, nullptr, nullptr, nullptr, nullptr);
  std::string log = build_log(program, info.id);
  clReleaseProgram(program);
  return {status == CL_SUCCESS, has_diagnostics(log) ? log : std::string()};
}

std::string cache_location(int device) { return cache_location(device_info(device)); }

void set_compile_notice(bool on) {
  std::lock_guard<std::mutex> lock(cache().mutex);
  cache().notice_enabled = on;
}

void force_binaries_on_disk(int keep) {
  std::lock_guard<std::mutex> lock(cache().mutex);
  cache().keep_binaries = keep;
}

void clear_memory_cache() {
  auto& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  // Programs stay alive: kernels created from them may still be in thread caches.
  c.programs.clear();
}

}  // namespace tocl
