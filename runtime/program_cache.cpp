#include "runtime/program_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "runtime/device.h"
#include "runtime/embedded_sources.h"
#include "runtime/error.h"
#include "runtime/stream.h"

namespace tocl {
namespace {

constexpr char kMagic[8] = {'T', 'O', 'C', 'L', 'B', 'I', 'N', '1'};

uint64_t fnv1a(const std::string& text, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

struct Cache {
  std::mutex mutex;
  std::map<std::tuple<int, std::string, std::string>, cl_program> programs;  // (device, source hash, options)
  // Sources that failed to build, with their error: asking again raises at once instead of
  // spending the compiler's seconds on the same failure each call.
  std::map<std::tuple<int, std::string, std::string>, std::string> failures;
  ProgramCacheStats stats;
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

// Creates `path` and its parents, each readable by the owner only.
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

// Reads a cache file; an empty result means absent or broken (then removed).
std::vector<unsigned char> read_entry(const std::string& path, bool* corrupt) {
  *corrupt = false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  char magic[8];
  uint64_t size = 0, checksum = 0;
  std::vector<unsigned char> payload;
  in.read(magic, 8);
  in.read(reinterpret_cast<char*>(&size), sizeof(size));
  in.read(reinterpret_cast<char*>(&checksum), sizeof(checksum));
  bool ok = in && std::memcmp(magic, kMagic, 8) == 0 && size > 0 && size < (1ull << 31);
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
void write_entry(const std::string& path, const std::vector<unsigned char>& payload) {
  const std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;  // a read-only cache directory only costs compile time
    const uint64_t size = payload.size();
    const uint64_t checksum = fnv1a(std::string(payload.begin(), payload.end()), 14695981039346656037ull);
    out.write(kMagic, 8);
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

cl_program build_from_source(int device, const std::string& source, const std::string& options, double* seconds) {
  const auto& info = device_info(device);
  const char* text = source.c_str();
  const size_t length = source.size();
  cl_int status = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context(device), 1, &text, &length, &status);
  TOCL_CHECK(status);
  const auto t0 = std::chrono::steady_clock::now();
  status = clBuildProgram(program, 1, &info.id, options.c_str(), nullptr, nullptr);
  *seconds = seconds_since(t0);
  if (status != CL_SUCCESS) {
    const std::string log = build_log(program, info.id);
    clReleaseProgram(program);
    // Name the first kernel so the user can tell which program failed.
    std::string first_line = source.substr(0, source.find('\n'));
    throw BuildError("OpenCL program failed to build on " + info.name + " (" + error_name(status) +
                         ") with options '" + options + "'. Source begins: '" + first_line + "'. Build log:\n" + log,
                     status);
  }
  return program;
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

cl_program get_program(int device, const std::string& source, const std::string& options) {
  auto& c = cache();
  const std::string source_hash = hash_hex(source);
  const auto key = std::make_tuple(device, source_hash, options);
  // One lock for the whole build: two threads asking for one program build it once.
  std::lock_guard<std::mutex> lock(c.mutex);
  auto found = c.programs.find(key);
  if (found != c.programs.end()) {
    c.stats.memory_hits++;
    return found->second;
  }
  auto failed = c.failures.find(key);
  if (failed != c.failures.end()) throw BuildError(failed->second, CL_BUILD_PROGRAM_FAILURE);
  const auto& info = device_info(device);
  const std::string dir = cache_dir();
  std::string path;
  cl_program program = nullptr;
  double seconds = 0;
  if (!dir.empty()) {
    path = dir + "/" +
           hash_hex(source_hash + '\n' + options + '\n' + info.name + '\n' + info.platform_name + '\n' +
                    info.driver_version + '\n' + info.device_version) +
           ".bin";
    bool corrupt = false;
    const auto binary = read_entry(path, &corrupt);
    if (corrupt) c.stats.corrupt_files++;
    if (!binary.empty()) {
      program = build_from_binary(device, binary, options, &seconds);
      if (program) {
        c.stats.disk_loads++;
      } else {
        c.stats.corrupt_files++;  // the driver refused it: drop it and rebuild
        std::remove(path.c_str());
      }
    }
  }
  if (!program) {
    try {
      program = build_from_source(device, source, options, &seconds);
    } catch (const BuildError& e) {
      c.failures[key] = e.what();
      throw;
    }
    c.stats.source_builds++;
    if (!path.empty() && make_private_dirs(dir)) write_entry(path, program_binary(program));
  }
  c.stats.build_seconds += seconds;
  c.programs[key] = program;
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

void clear_memory_cache() {
  auto& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  // Programs stay alive: kernels created from them may still be in thread caches.
  c.programs.clear();
}

}  // namespace tocl
