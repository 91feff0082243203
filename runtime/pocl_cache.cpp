#include "runtime/pocl_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tocl {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool is_dir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) return names;
  while (const dirent* e = readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.push_back(e->d_name);
  closedir(d);
  return names;
}

// Whether the ICD loader will load PoCL: an ICD file (ocl-icd's OCL_ICD_VENDORS or OCL_ICD_FILENAMES, the
// Khronos loader's OPENCL_VENDOR_PATH, else /etc/OpenCL/vendors) names it.
bool pocl_installed() {
  if (const char* files = env("OCL_ICD_FILENAMES"); files && lower(files).find("pocl") != std::string::npos)
    return true;
  std::string vendors = "/etc/OpenCL/vendors";
  if (const char* v = env("OCL_ICD_VENDORS")) vendors = v;
  else if (const char* v2 = env("OPENCL_VENDOR_PATH")) vendors = v2;
  if (!is_dir(vendors)) return lower(vendors).find("pocl") != std::string::npos || lower(read_text(vendors)).find("pocl") != std::string::npos;
  for (const auto& name : entries(vendors)) {
    if (lower(name).find("pocl") != std::string::npos) return true;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".icd") == 0 &&
        lower(read_text(vendors + "/" + name)).find("pocl") != std::string::npos)
      return true;
  }
  return false;
}

bool kernel_cache_on() {
  const char* v = env("POCL_KERNEL_CACHE");
  if (!v) return true;
  const std::string s = lower(v);
  return !(s == "0" || s == "no" || s == "false" || s == "off");
}

// PoCL's own choice (lib/CL/pocl_cache.c, pocl_cache_init_topdir), "" where it has none we can tell.
std::string pocl_directory() {
  if (const char* dir = env("POCL_CACHE_DIR")) return dir;
  const std::string leaf = kernel_cache_on() ? "pocl/kcache" : "pocl/uncached";
  if (const char* xdg = env("XDG_CACHE_HOME")) return std::string(xdg) + "/" + leaf;
  if (const char* home = std::getenv("HOME")) return std::string(home) + "/.cache/" + leaf;
  return "";
}

std::string cause(int error) { return std::strerror(error); }

// mkdir -p, each new level readable by the owner only (as PoCL makes it); "" or what failed.
std::string make_dirs(const std::string& path) {
  for (size_t pos = 1; pos != std::string::npos;) {
    pos = path.find('/', pos + 1);
    const std::string partial = path.substr(0, pos);
    struct stat st;
    if (stat(partial.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) return "'" + partial + "' is a file, not a directory";
      continue;
    }
    if (mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      return "cannot create '" + partial + "': " + cause(errno);
  }
  return "";
}

// "" when PoCL can keep files in `dir`, else why not.
std::string unusable(const std::string& dir) {
  if (std::string why = make_dirs(dir); !why.empty()) return why;
  if (access(dir.c_str(), W_OK | X_OK) != 0) return "cannot write in it: " + cause(errno);
  // A read-only mount passes access() for root, and a full disk creates files but not their contents.
  std::string probe = dir + "/.torch_opencl_probe_XXXXXX";
  const int fd = mkstemp(probe.data());
  if (fd < 0) return "cannot create a file in it: " + cause(errno);
  char block[4096] = {};
  const ssize_t written = write(fd, block, sizeof(block));
  const int write_error = errno;
  close(fd);
  unlink(probe.c_str());
  if (written != static_cast<ssize_t>(sizeof(block)))
    return "cannot write a file in it: " + (written < 0 ? cause(write_error) : std::string("short write"));
  return "";
}

void remove_tree(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    for (const auto& name : entries(path)) remove_tree(path + "/" + name);
    rmdir(path.c_str());
  } else {
    unlink(path.c_str());
  }
}

// --- entry checks: the structure each file's reader relies on, read from its headers only --------------

bool read_at(int fd, uint64_t offset, void* out, size_t n) {
  return pread(fd, out, n, static_cast<off_t>(offset)) == static_cast<ssize_t>(n);
}

template <typename T>
T field(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// An ELF shared object whose program and section headers, and what they point at, lie inside the file
// (a truncated .so is mapped past its end: a bus error at dlopen).
bool whole_elf(int fd, uint64_t size) {
  unsigned char h[64];
  if (size < sizeof(h) || !read_at(fd, 0, h, sizeof(h))) return false;
  if (std::memcmp(h, "\x7f" "ELF", 4) != 0 || h[4] != 2 /* 64-bit */ || h[5] != 1 /* little-endian */) return false;
  const uint64_t phoff = field<uint64_t>(h + 32), shoff = field<uint64_t>(h + 40);
  const uint16_t phentsize = field<uint16_t>(h + 54), phnum = field<uint16_t>(h + 56);
  const uint16_t shentsize = field<uint16_t>(h + 58), shnum = field<uint16_t>(h + 60);
  if (phnum == 0 || phentsize < 56 || phoff + uint64_t{phnum} * phentsize > size) return false;
  if (shnum && (shentsize < 64 || shoff + uint64_t{shnum} * shentsize > size)) return false;
  std::vector<unsigned char> ph(size_t{phnum} * phentsize);
  if (!read_at(fd, phoff, ph.data(), ph.size())) return false;
  for (uint16_t i = 0; i < phnum; ++i) {
    const unsigned char* p = ph.data() + size_t{i} * phentsize;
    const uint64_t offset = field<uint64_t>(p + 8), filesz = field<uint64_t>(p + 32);
    if (offset + filesz > size) return false;
  }
  std::vector<unsigned char> sh(size_t{shnum} * shentsize);
  if (shnum && !read_at(fd, shoff, sh.data(), sh.size())) return false;
  for (uint16_t i = 0; i < shnum; ++i) {
    const unsigned char* s = sh.data() + size_t{i} * shentsize;
    const uint32_t type = field<uint32_t>(s + 4);
    const uint64_t offset = field<uint64_t>(s + 24), bytes = field<uint64_t>(s + 32);
    if (type != 8 /* SHT_NOBITS */ && offset + bytes > size) return false;
  }
  return true;
}

// Reads an LLVM bitstream's fields, bit by bit, from a header buffer.
struct Bits {
  const unsigned char* data;
  uint64_t size_bits;
  uint64_t pos = 0;
  bool ok = true;
  uint64_t fixed(unsigned width) {
    uint64_t v = 0;
    for (unsigned i = 0; i < width; ++i, ++pos) {
      if (pos >= size_bits) {
        ok = false;
        return 0;
      }
      v |= uint64_t((data[pos / 8] >> (pos % 8)) & 1) << i;
    }
    return v;
  }
  uint64_t vbr(unsigned width) {
    uint64_t v = 0;
    for (unsigned shift = 0; ok && shift < 64; shift += width - 1) {
      const uint64_t chunk = fixed(width);
      v |= (chunk & ((1ull << (width - 1)) - 1)) << shift;
      if (!(chunk >> (width - 1))) return v;
    }
    ok = false;
    return 0;
  }
};

// LLVM bitcode whose top-level blocks each lie inside the file and end where it ends (a truncated or
// emptied program.bc makes PoCL assert).
bool whole_bitcode(int fd, uint64_t size) {
  unsigned char head[20];
  if (size < 8 || !read_at(fd, 0, head, 8)) return false;
  uint64_t start = 0, end = size;
  if (field<uint32_t>(head) == 0x0B17C0DEu) {  // the wrapper: magic, version, offset, size, cpu type
    if (size < 20 || !read_at(fd, 0, head, 20)) return false;
    start = field<uint32_t>(head + 8);
    end = start + field<uint32_t>(head + 12);
    if (end > size || end < start + 8 || !read_at(fd, start, head, 4)) return false;
  }
  if (std::memcmp(head, "BC\xC0\xDE", 4) != 0) return false;
  // Each top-level block: abbreviation id 1 (ENTER_SUBBLOCK, 2 bits), block id (vbr8), abbreviation width
  // (vbr4), alignment to 32 bits, then its length in 32-bit words.
  uint64_t at = start + 4;
  int blocks = 0;
  while (at < end) {
    unsigned char buf[16] = {};
    const uint64_t n = std::min<uint64_t>(sizeof(buf), end - at);
    if (!read_at(fd, at, buf, n)) return false;
    Bits bits{buf, n * 8};
    if (bits.fixed(2) != 1) return false;
    bits.vbr(8);
    bits.vbr(4);
    bits.pos = (bits.pos + 31) / 32 * 32;
    const uint64_t words = bits.fixed(32);
    if (!bits.ok) return false;
    at += bits.pos / 8 + words * 4;
    ++blocks;
  }
  return blocks > 0 && at == end;
}

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Whether every file PoCL will load from a program's directory is whole.
bool whole_program(const std::string& dir, int depth = 0) {
  for (const auto& name : entries(dir)) {
    const std::string path = dir + "/" + name;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (depth < 4 && !whole_program(path, depth + 1)) return false;
      continue;
    }
    const bool so = ends_with(name, ".so"), bc = ends_with(name, ".bc");
    if (!S_ISREG(st.st_mode) || (!so && !bc)) continue;
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // unreadable: PoCL will not read it either
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    const bool whole = so ? whole_elf(fd, size) : whole_bitcode(fd, size);
    close(fd);
    if (!whole) return false;
  }
  return true;
}

// Removes the programs with a damaged file; how many.
int remove_damaged(const std::string& top) {
  int removed = 0;
  for (const auto& group : entries(top)) {
    const std::string group_dir = top + "/" + group;
    if (group.size() != 2 || !is_dir(group_dir)) continue;  // PoCL's hash directories: XX/YYYY...
    for (const auto& program : entries(group_dir)) {
      const std::string program_dir = group_dir + "/" + program;
      if (!is_dir(program_dir) || whole_program(program_dir)) continue;
      // Renamed away first, so a process that starts meanwhile finds the program absent, never half-removed.
      const std::string doomed = top + "/.torch_opencl_removing_" + std::to_string(getpid()) + "_" + program;
      if (std::rename(program_dir.c_str(), doomed.c_str()) == 0) remove_tree(doomed);
      ++removed;
    }
  }
  return removed;
}

std::string boot_id() {
  std::string id = read_text("/proc/sys/kernel/random/boot_id");
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id.empty() ? "unknown boot" : id;
}

// The check, once per boot per directory; processes starting together wait for the one that checks.
void check_entries(PoclCacheReport& report) {
  const std::string stamp = report.used + "/.torch_opencl_checked";
  const std::string boot = boot_id();
  if (read_text(stamp) == boot) return;
  const int lock = open((report.used + "/.torch_opencl_check.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock >= 0) flock(lock, LOCK_EX);
  if (read_text(stamp) != boot) {
    report.checked = true;
    report.removed = remove_damaged(report.used);
    const std::string tmp = stamp + ".tmp" + std::to_string(getpid());
    if (std::ofstream(tmp) << boot) std::rename(tmp.c_str(), stamp.c_str());
    else std::remove(tmp.c_str());
  }
  if (lock >= 0) close(lock);  // releases the lock
}

std::string private_directory;
pid_t private_owner = 0;

void remove_private_directory() {
  if (getpid() == private_owner && !private_directory.empty()) remove_tree(private_directory);
}

PoclCacheReport prepare() {
  PoclCacheReport report;
  report.pocl_installed = pocl_installed();
  if (!report.pocl_installed) return report;
  report.directory = pocl_directory();
  if (report.directory.empty()) return report;
  report.used = report.directory;
  report.problem = unusable(report.directory);
  if (report.problem.empty()) {
    if (kernel_cache_on()) check_entries(report);
    if (report.removed)
      std::fprintf(stderr, "torch_opencl: removed %d damaged program(s) from PoCL's kernel cache %s; they are "
                   "compiled again when first used\n", report.removed, report.used.c_str());
    return report;
  }
  const char* tmp = env("TMPDIR");
  std::string temporary = std::string(tmp ? tmp : "/tmp") + "/torch_opencl_pocl_cache_XXXXXX";
  if (!mkdtemp(temporary.data())) {
    const std::string why = cause(errno);
    std::fprintf(stderr, "torch_opencl: warning: PoCL's kernel cache directory %s cannot be used (%s), nor can a "
                 "temporary one be made in %s (%s); PoCL may fail to build kernels or report no device: set "
                 "POCL_CACHE_DIR to a writable directory\n", report.directory.c_str(), report.problem.c_str(),
                 tmp ? tmp : "/tmp", why.c_str());
    return report;
  }
  report.used = temporary;
  private_directory = temporary;
  private_owner = getpid();
  std::atexit(remove_private_directory);
  setenv("POCL_CACHE_DIR", temporary.c_str(), 1);
  std::fprintf(stderr, "torch_opencl: warning: PoCL's kernel cache directory %s cannot be used (%s); kernels are "
               "compiled into %s for this run only. Set POCL_CACHE_DIR to a writable directory to keep them "
               "between runs.\n", report.directory.c_str(), report.problem.c_str(), temporary.c_str());
  return report;
}

}  // namespace

namespace {

// PoCL's hash letters: each of a SHA-1's nibbles as 'A' + its value; the first two name the group directory.
std::string group_name(int group) { return {static_cast<char>('A' + group / 16), static_cast<char>('A' + group % 16)}; }

timespec modified(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return {0, 0};
  return st.st_mtim;
}

bool same_time(const timespec& a, const timespec& b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

// Whether a program.bc holds every name (LLVM keeps function names as plain text in its string table).
bool names_all(const std::string& path, const std::vector<std::string>& names) {
  const std::string bitcode = read_text(path);
  if (bitcode.empty()) return false;
  return std::all_of(names.begin(), names.end(), [&](const std::string& name) {
    return bitcode.find(name) != std::string::npos;
  });
}

}  // namespace

PoclBuildWatch::PoclBuildWatch() {
  const auto& report = prepare_pocl_cache();
  if (!report.pocl_installed || report.used.empty() || !kernel_cache_on()) return;
  top_ = report.used;
  clock_gettime(CLOCK_REALTIME, &start_);
  groups_.reserve(256);
  for (int group = 0; group < 256; ++group) groups_.push_back(modified(top_ + "/" + group_name(group)));
}

bool PoclBuildWatch::compiled(const std::vector<std::string>& kernel_names) const {
  if (top_.empty()) return true;
  // File times come from the kernel's coarse clock, which may lag the wall clock by a tick.
  timespec since = start_;
  since.tv_nsec -= 50 * 1000 * 1000;
  if (since.tv_nsec < 0) {
    since.tv_nsec += 1000 * 1000 * 1000;
    since.tv_sec -= 1;
  }
  for (int group = 0; group < 256; ++group) {
    const std::string group_dir = top_ + "/" + group_name(group);
    if (same_time(modified(group_dir), groups_[group])) continue;
    for (const auto& program : entries(group_dir)) {
      const std::string bitcode = group_dir + "/" + program + "/program.bc";
      const timespec written = modified(bitcode);
      const bool recent = written.tv_sec > since.tv_sec || (written.tv_sec == since.tv_sec && written.tv_nsec >= since.tv_nsec);
      if (recent && names_all(bitcode, kernel_names)) return true;
    }
  }
  return false;
}

const PoclCacheReport& prepare_pocl_cache() {
  static const PoclCacheReport report = prepare();
  return report;
}

}  // namespace tocl
