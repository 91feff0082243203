#pragma once
// Programs are built once per (device, source, options) and kept in memory;
// their binaries are kept on disk, keyed by a hash of source, options, device
// name and driver version, so a second process skips the compiler (on PoCL, its own
// disk cache does that: see binaries_worth_keeping in program_cache.cpp).
// Different programs may build at the same time from different threads.
// Drivers' warnings stay quiet (-w) unless TORCH_OPENCL_VERBOSE=1, which prints each
// build's time and log to stderr; the first second spent compiling prints one line
// that says so.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/opencl.h"

namespace tocl {

struct ProgramCacheStats {
  int64_t memory_hits = 0;     // served from this process's cache
  int64_t disk_loads = 0;      // loaded from a binary on disk
  int64_t source_builds = 0;   // built from source (clBuildProgram on the text)
  int64_t driver_cache_loads = 0;  // of those, loaded from the driver's own cache, not compiled (PoCL)
  int64_t corrupt_files = 0;   // disk entries found broken, removed and rebuilt
  double build_seconds = 0;    // time spent in clBuildProgram, both kinds
};

// The program for `source` (OpenCL C text) built with `options` on `device`.
// Throws BuildError carrying the build log when the source does not compile.
cl_program get_program(int device, const std::string& source, const std::string& options = "");

// A program from kernels_cl/ by file name, e.g. "copy.cl".
cl_program get_embedded_program(int device, const std::string& file_name, const std::string& options = "");

// A kernel of a built program. Kernels are per thread, since clSetKernelArg
// on a shared cl_kernel would race.
cl_kernel get_kernel(cl_program program, const char* name);

ProgramCacheStats program_cache_stats();

// The on-disk cache directory, or "" when TORCH_OPENCL_CACHE=0 disables it.
std::string cache_dir();

// Creates `path` and its parents, each readable by the owner only; false where one cannot be made.
bool make_private_dirs(const std::string& path);

// While on, every (source, options) asked of get_program is kept, for recorded_sources() (tests check
// that each compiles without a warning). Turning it off forgets them.
void record_sources(bool on);
std::vector<std::pair<std::string, std::string>> recorded_sources();

// Compiles `source` afresh (no cache of ours or the driver's, warnings on) and returns whether it
// compiled and the driver's log when it holds a warning or an error ("" otherwise: a driver's progress
// notes, such as Intel's "Compilation started", are not diagnostics).
std::pair<bool, std::string> compile_log(int device, const std::string& source, const std::string& options = "");

// Where compiled programs of `device` are kept between runs: cache_dir(), or the driver's own cache
// where ours is not used (PoCL), "" for nowhere; for messages.
std::string cache_location(int device);

// Whether the one "compiling OpenCL kernels ..." line may be printed (warmup shows its own progress).
void set_compile_notice(bool on);

// Tests: 1 keeps binaries on disk on every driver, 0 on none, -1 as the driver warrants.
void force_binaries_on_disk(int keep);

// Drops the in-memory programs (the disk cache stays), for tests of cold/warm behaviour.
void clear_memory_cache();

// 128-bit hash of `text` as 32 hex digits (the disk cache key).
std::string hash_hex(const std::string& text);

}  // namespace tocl
