#pragma once
// The process's own memory limits (ulimit -v, ulimit -d). A CPU device's buffers are the process's memory,
// and PoCL allocates them lazily, at their first use: past a limit that allocation fails inside the driver,
// which aborts the process (an assertion in pocl_util.c). The allocator asks here first, so the user gets
// torch.OutOfMemoryError instead.
#include <cstdint>
#include <string>

namespace tocl {

// "" when the process may still map `bytes` more (with room for the driver's own needs, such as compiling
// kernels); otherwise why not, naming the limit, for the OutOfMemoryError.
std::string host_limit_refusal(uint64_t bytes);

}  // namespace tocl
