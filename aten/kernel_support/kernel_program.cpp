#include "aten/kernel_support/kernel_program.h"

#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "aten/kernel_support/cl_types.h"
#include "runtime/embedded_sources.h"
#include "runtime/kernel_forms.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

// The start of a max: -INFINITY converts to an integer type undefined, so integers use their minimum.
const char* lowest_value(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Bool:
    case c10::ScalarType::Byte: return "0";
    case c10::ScalarType::Char: return "CHAR_MIN";
    case c10::ScalarType::Short: return "SHRT_MIN";
    case c10::ScalarType::Int: return "INT_MIN";
    case c10::ScalarType::Long: return "LONG_MIN";
    default: return "-INFINITY";
  }
}

}  // namespace

size_t row_group(int device) { return tocl::kernel_forms(device).row_group; }

cl_program dtype_program(int device, const char* file, c10::ScalarType type, c10::ScalarType index_type,
                         size_t group, const std::string& defines) {
  if (group == 0) group = row_group(device);
  static std::mutex mutex;
  static std::map<std::tuple<int, std::string, c10::ScalarType, c10::ScalarType, size_t, std::string>, cl_program> programs;
  std::lock_guard<std::mutex> lock(mutex);
  auto& program = programs[{device, file, type, index_type, group, defines}];
  if (!program) {
    const std::string source = program_prelude({type}) + operand_defines("T", type) + operand_defines("I", index_type) +
                               "#define ACC " + storage_type(compute_dtype(type)) + "\n" +
                               // isnan of an integer does not compile: integers are never NaN.
                               (at::isFloatingType(type) ? "#define ACC_ISNAN(x) isnan(x)\n" : "#define ACC_ISNAN(x) 0\n") +
                               "#define ACC_LOWEST " + lowest_value(type) + "\n" +
                               "#define WG " +
                               std::to_string(group) + "\n" + defines + tocl::embedded_sources().at(file);
    program = tocl::get_program(device, source);
  }
  return program;
}

std::string round_to_dtype_define(c10::ScalarType type) {
  const char* round = type == c10::ScalarType::Half       ? "round_to_half(x)"
                      : type == c10::ScalarType::BFloat16 ? "round_to_bf16(x)"
                      : type == c10::ScalarType::Bool     ? "(ACC)((x) != 0)"
                                                          : "(x)";
  return std::string("#define ROUND_T(x) ") + round + "\n";
}

void check_same_device(std::initializer_list<std::reference_wrapper<const at::Tensor>> tensors) {
  const at::Tensor* first = nullptr;
  for (const at::Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (!first) first = &t;
    TORCH_CHECK(t.device() == first->device(),
                "Expected all tensors to be on the same device, but found at least two devices, ", first->device(),
                " and ", t.device(), "!");
  }
}

cl_kernel dtype_kernel(const at::Tensor& like, const char* file, const char* name, c10::ScalarType index_type) {
  check_device_supports(like.scalar_type(), like.device().index(), name);
  return tocl::get_kernel(dtype_program(like.device().index(), file, like.scalar_type(), index_type), name);
}

}  // namespace torch_opencl
