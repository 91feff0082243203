#pragma once
// Kernels whose OpenCL C comes from outside the library: torch.opencl.compile_shader's, and the ones
// torch.compile generates (python/torch_opencl/_inductor). The source's global and constant pointer
// parameters are rewritten to buffer + byte offset (runtime/kernel_signature.h), so a tensor argument
// reaches a plain `__global T*` as its first element, a view's storage offset included. Arguments are
// checked against the signature before anything is enqueued; programs go through the program cache.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "runtime/kernel_signature.h"
#include "runtime/opencl.h"

namespace torch_opencl {

// The size of a `__local T*` parameter's memory, in bytes.
struct LocalMemory {
  size_t bytes = 0;
};

using KernelArgument = std::variant<at::Tensor, int64_t, double, LocalMemory>;

struct LaunchSizes {
  std::vector<size_t> threads;     // global work size, 1 to 3 dimensions
  std::vector<size_t> group_size;  // local work size, empty for the driver's choice
};

class UserProgram {
 public:
  // Parses the source (throws on a signature that cannot be passed); builds nothing yet.
  UserProgram(const std::string& source, std::string options);

  const std::vector<tocl::KernelSignature>& kernels() const { return parsed_.kernels; }
  // Index of the kernel named `name`; throws naming the kernels that exist.
  size_t kernel_index(const std::string& name) const;
  // The source as it is built (pointer parameters rewritten).
  const std::string& built_source() const { return parsed_.source; }
  const std::string& options() const { return options_; }

  // The program on `device`, built through the program cache; a build error carries the driver's log.
  cl_program program(int device);

  // Checks `args` against kernel `index`'s parameters and enqueues it on the current stream of the
  // tensors' device (the current device when no tensor is passed). `require_contiguous` refuses
  // non-contiguous tensors, which a plain pointer cannot walk; generated kernels index with strides.
  void launch(size_t index, const std::vector<KernelArgument>& args, const LaunchSizes& sizes,
              bool require_contiguous = true);

 private:
  size_t max_group(int device, cl_kernel kernel, size_t index);

  tocl::ParsedProgram parsed_;
  std::string options_;
  std::mutex mutex_;
  std::map<int, cl_program> programs_;
  std::map<std::pair<int, size_t>, size_t> max_groups_;  // (device, kernel) -> CL_KERNEL_WORK_GROUP_SIZE
  std::vector<std::vector<std::vector<c10::ScalarType>>> accepted_;  // [kernel][param]: dtypes a pointer takes
};

}  // namespace torch_opencl
