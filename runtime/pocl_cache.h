#pragma once
// PoCL's own kernel cache (POCL_CACHE_DIR, else $XDG_CACHE_HOME/pocl/kcache or ~/.cache/pocl/kcache), made
// safe before the platform starts: PoCL reads its directory once, when the platforms are first enumerated,
// and it trusts what it finds there.
//  - A directory it cannot use (a file, unwritable, a read-only $HOME, a full disk) makes every build fail,
//    or PoCL report no device. Then the process gets a private temporary directory instead (removed at
//    exit), with one warning naming the directory and the cause.
//  - A damaged entry (a truncated or empty kernel .so, a truncated program.bc) kills the process: a bus
//    error or an assertion inside the driver. Once per boot (power cuts are what leave such entries; PoCL
//    itself writes each file atomically, after fdatasync) every program's files are checked for a whole
//    structure, and a program with a damaged file is removed, so PoCL compiles it again. A stamp in the
//    directory (.torch_opencl_checked, the boot's id) makes later starts of the same boot skip the check.
#include <time.h>

#include <string>
#include <vector>

namespace tocl {

struct PoclCacheReport {
  bool pocl_installed = false;  // an ICD file names PoCL (else nothing here was done)
  std::string directory;        // the cache directory PoCL was going to use
  std::string used;             // the one it uses: `directory`, or a private temporary one
  std::string problem;          // why `directory` could not be used, or ""
  bool checked = false;         // this process checked the entries (first start of this boot)
  int removed = 0;              // damaged programs removed
};

// Runs once, before the first OpenCL call (device.cpp's discover()); later calls return the first report.
const PoclCacheReport& prepare_pocl_cache();

// Tells whether a clBuildProgram from source on PoCL compiled the program or loaded it from PoCL's kernel cache
// (which costs a few tens of milliseconds: PoCL preprocesses the source and reads program.bc back). PoCL 3.x keeps
// a program in <cache>/<2 letters>/<36 letters>/program.bc, and makes the directory and writes program.bc only
// when it compiles; so a compile adds an entry to one of the 256 two-letter directories (its modification time
// changes) holding a program.bc written during the build that names the program's kernels (other processes
// compiling other programs at the same time are told apart by those names). Made just before the build;
// compiled() just after it. Without a kernel cache (POCL_KERNEL_CACHE=0, or no directory known) every build
// compiles.
class PoclBuildWatch {
 public:
  PoclBuildWatch();
  bool compiled(const std::vector<std::string>& kernel_names) const;

 private:
  std::string top_;                // PoCL's cache directory, or "" (every build compiles)
  std::vector<timespec> groups_;   // each two-letter directory's modification time ({0, 0}: absent)
  timespec start_{};               // the wall clock when the build started
};

}  // namespace tocl
