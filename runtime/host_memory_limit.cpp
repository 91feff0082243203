#include "runtime/host_memory_limit.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

namespace tocl {
namespace {

// Room left for what the driver maps besides the buffers: LLVM compiling a kernel takes tens of MiB.
constexpr uint64_t kDriverRoom = 256ull << 20;

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

std::string host_limit_refusal(uint64_t bytes) {
  struct rlimit as_limit{}, data_limit{};
  const bool limit_as = getrlimit(RLIMIT_AS, &as_limit) == 0 && as_limit.rlim_cur != RLIM_INFINITY;
  const bool limit_data = getrlimit(RLIMIT_DATA, &data_limit) == 0 && data_limit.rlim_cur != RLIM_INFINITY;
  if (!limit_as && !limit_data) return "";
  // /proc/self/statm: total and data+stack sizes in pages (the measures RLIMIT_AS and RLIMIT_DATA limit).
  unsigned long long total = 0, resident = 0, shared = 0, text = 0, lib = 0, data = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return "";
  const int read = std::fscanf(f, "%llu %llu %llu %llu %llu %llu", &total, &resident, &shared, &text, &lib, &data);
  std::fclose(f);
  if (read != 6) return "";
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t need = bytes + kDriverRoom;
  const auto refuse = [&](const char* what, uint64_t limit, uint64_t used) -> std::string {
    if (used + need <= limit) return "";
    return std::string("the process's ") + what + " limit (" + mib(limit) + ", " + mib(used) +
           " in use) leaves no room for it: the device's memory is this process's memory";
  };
  if (limit_as) {
    std::string why = refuse("address-space (ulimit -v)", as_limit.rlim_cur, total * page);
    if (!why.empty()) return why;
  }
  if (limit_data) return refuse("data-segment (ulimit -d)", data_limit.rlim_cur, data * page);
  return "";
}

}  // namespace tocl
