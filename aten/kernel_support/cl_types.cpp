#include "aten/kernel_support/cl_types.h"

#include <ATen/Dispatch_v2.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>

#include "aten/kernel_support/dtype_fallback.h"
#include "runtime/device.h"
#include "runtime/embedded_sources.h"

namespace torch_opencl {

using c10::ScalarType;

void check_scalar_fits(const c10::Scalar& value, ScalarType type) {
  AT_DISPATCH_V2(type, "check_scalar_fits", AT_WRAP([&] { (void)value.to<scalar_t>(); }),
                 AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX), at::kHalf, at::kBFloat16, at::kBool);
}

double cast_to_dtype(double v, ScalarType type) {
  switch (type) {
    case ScalarType::Float: return static_cast<float>(v);  // IEEE: out of range is +-inf (implementation-defined)
    case ScalarType::Half: return static_cast<float>(static_cast<c10::Half>(static_cast<float>(v)));
    case ScalarType::BFloat16: return static_cast<float>(static_cast<c10::BFloat16>(static_cast<float>(v)));
    default: return v;
  }
}

bool device_supports(ScalarType type, int device) {
  switch (type) {
    case ScalarType::Double:
      return tocl::device_info(device).fp64;
    case ScalarType::Float:
    case ScalarType::Half:
    case ScalarType::BFloat16:
    case ScalarType::Bool:
    case ScalarType::Byte:
    case ScalarType::Char:
    case ScalarType::Short:
    case ScalarType::Int:
    case ScalarType::Long:
      return true;
    default:
      return false;
  }
}

// Refusals are DtypeNotNative: kernels registered with TOCL_LIBRARY_IMPL then run the call on the CPU
// fallback (aten/kernel_support/dtype_fallback.h).
void check_device_supports(ScalarType type, int device, const char* op) {
  if (device_supports(type, device)) return;
  throw_dtype_not_native(c10::str(op, ": dtype ", type, " is not supported on opencl:", device, " (",
                                  tocl::device_info(device).name, ")",
                                  type == ScalarType::Double ? ", which lacks cl_khr_fp64; use float32" : ""));
}

const char* storage_type(ScalarType type) {
  switch (type) {
    case ScalarType::Float: return "float";
    case ScalarType::Double: return "double";
    case ScalarType::Half: return "half";
    case ScalarType::BFloat16: return "ushort";
    case ScalarType::Bool: return "uchar";
    case ScalarType::Byte: return "uchar";
    case ScalarType::Char: return "char";
    case ScalarType::Short: return "short";
    case ScalarType::Int: return "int";
    case ScalarType::Long: return "long";
    default: throw_dtype_not_native(c10::str("dtype ", type, " has no OpenCL storage type"));
  }
}

ScalarType compute_dtype(ScalarType type) {
  return (type == ScalarType::Half || type == ScalarType::BFloat16) ? ScalarType::Float : type;
}

std::string operand_defines(const std::string& prefix, ScalarType type) {
  const std::string t = storage_type(type);
  std::string load, store;
  switch (type) {
    case ScalarType::Half:
      load = "vload_half((i), (p))";
      store = "vstore_half_rte((float)(v), (i), (p))";
      break;
    case ScalarType::BFloat16:
      load = "bf16_to_float((p)[i])";
      store = "((p)[i] = float_to_bf16((float)(v)))";
      break;
    case ScalarType::Bool:
      load = "(p)[i]";
      store = "((p)[i] = (uchar)((v) != 0))";
      break;
    case ScalarType::Char:
    case ScalarType::Short:
    case ScalarType::Int:  // through int32, and uint8 and int64 through int64, as x86 CPU PyTorch (prelude.cl)
      load = "(p)[i]";
      store = "((p)[i] = (" + t + ")tocl_to_i32(v))";
      break;
    case ScalarType::Byte:
    case ScalarType::Long:
      load = "(p)[i]";
      store = "((p)[i] = (" + t + ")tocl_to_i64(v))";
      break;
    default:
      load = "(p)[i]";
      store = "((p)[i] = (" + t + ")(v))";
  }
  // PREFIX_CT: the type LOAD_PREFIX yields, legal as a by-value kernel argument (half is not without cl_khr_fp16).
  return "#define " + prefix + "_T " + t + "\n#define " + prefix + "_CT " + storage_type(compute_dtype(type)) +
         "\n#define LOAD_" + prefix + "(p, i) " + load + "\n#define STORE_" + prefix + "(p, i, v) " + store + "\n";
}

std::string program_prelude(std::initializer_list<ScalarType> types) {
  std::string out;
  for (auto t : types)
    if (t == ScalarType::Double) {
      out += "#define TOCL_FP64 1\n";
      break;
    }
  out += tocl::embedded_sources().at("prelude.cl");
  return out;
}

}  // namespace torch_opencl
