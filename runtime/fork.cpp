#include "runtime/fork.h"

#include <pthread.h>

#include <atomic>
#include <mutex>

#include "runtime/error.h"

namespace tocl {
namespace {

std::atomic<bool> initialized_flag{false};
std::atomic<bool> bad_fork{false};

void forked_child() {
  if (initialized_flag.load()) bad_fork.store(true);
}

}  // namespace

void mark_initialized() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, &forked_child); });
  initialized_flag.store(true);
}

bool initialized() { return initialized_flag.load(); }

bool in_bad_fork() { return bad_fork.load(); }

void check_not_in_bad_fork() {
  if (bad_fork.load())
    throw Error(
        "Cannot re-initialize OpenCL in forked subprocess. To use OpenCL with multiprocessing, you must use the "
        "'spawn' start method");
}

}  // namespace tocl
