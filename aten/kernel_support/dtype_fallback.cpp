#include "aten/kernel_support/dtype_fallback.h"

#include <mutex>
#include <unordered_map>

namespace torch_opencl {

void throw_dtype_not_native(const std::string& message) {
  throw DtypeNotNative(c10::SourceLocation{__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, message);
}

namespace detail {

bool has_opencl_form(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float:
    case c10::ScalarType::Double:
    case c10::ScalarType::Half:
    case c10::ScalarType::BFloat16:
    case c10::ScalarType::Bool:
    case c10::ScalarType::Byte:
    case c10::ScalarType::Char:
    case c10::ScalarType::Short:
    case c10::ScalarType::Int:
    case c10::ScalarType::Long:
      return true;
    default:
      return false;
  }
}

const c10::OperatorHandle& operator_handle(const std::string& name) {
  static std::mutex mutex;
  static std::unordered_map<std::string, c10::OperatorHandle> handles;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles.find(name);
  if (it == handles.end()) {
    std::string qualified = name.find("::") == std::string::npos ? "aten::" + name : name;
    const auto dot = qualified.find('.');
    const std::string overload = dot == std::string::npos ? "" : qualified.substr(dot + 1);
    if (dot != std::string::npos) qualified.resize(dot);
    it = handles.emplace(name, c10::Dispatcher::singleton().findSchemaOrThrow(qualified.c_str(), overload.c_str()))
             .first;
  }
  return it->second;  // unordered_map keeps element addresses
}

}  // namespace detail
}  // namespace torch_opencl
