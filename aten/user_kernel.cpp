#include "aten/user_kernel.h"

#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <sstream>

#include "runtime/allocator.h"
#include "runtime/device.h"
#include "runtime/launch.h"
#include "runtime/program_cache.h"
#include "runtime/stream.h"

namespace torch_opencl {
namespace {

using Kind = tocl::KernelParam::Kind;

std::string dtype_name(c10::ScalarType t) { return "torch." + std::string(c10::getDtypeNames(t).first); }

// The element dtypes a pointer to `type` accepts: floatN takes float32; unknown types (typedefs,
// structs, void) take any, so the list is empty.
std::vector<c10::ScalarType> dtypes_for(const std::string& type) {
  std::string base = type;
  while (!base.empty() && std::isdigit(static_cast<unsigned char>(base.back()))) base.pop_back();
  using S = c10::ScalarType;
  if (base == "float") return {S::Float};
  if (base == "double") return {S::Double};
  if (base == "half") return {S::Half};
  if (base == "int") return {S::Int};
  if (base == "uint") return {S::UInt32};
  if (base == "long") return {S::Long};
  if (base == "ulong") return {S::UInt64};
  if (base == "short") return {S::Short};
  if (base == "ushort") return {S::UInt16, S::BFloat16};  // bfloat16 is stored as its 16 bits
  if (base == "char") return {S::Char};
  if (base == "uchar") return {S::Byte, S::Bool};
  return {};
}

std::string signature_text(const tocl::KernelSignature& k) {
  std::string s = k.name + "(";
  for (size_t i = 0; i < k.params.size(); ++i) s += (i ? ", " : "") + k.params[i].text;
  return s + ")";
}

std::string accepted_names(const std::vector<c10::ScalarType>& accepted) {
  std::string names;
  for (auto a : accepted) names += (names.empty() ? "" : " or ") + dtype_name(a);
  return names;
}

std::string describe(const KernelArgument& a) {
  if (std::holds_alternative<at::Tensor>(a)) return "a tensor";
  if (std::holds_alternative<int64_t>(a)) return "an int";
  if (std::holds_alternative<double>(a)) return "a float";
  return "LocalMemory";
}

// A scalar argument's bytes in its parameter's type (at most a long or double).
struct ScalarBytes {
  unsigned char data[8];
  size_t size = 0;
};

// The bytes of a scalar argument converted to the parameter's type, range-checked. (Messages are built
// only for a failing check: this runs for every launch of a compiled graph's kernels.)
ScalarBytes scalar_bytes(const tocl::KernelSignature& k, const tocl::KernelParam& p, const KernelArgument& a) {
  const auto where = [&] { return "kernel '" + k.name + "', parameter '" + p.text + "'"; };
  ScalarBytes out;
  auto put = [&](auto value) {
    out.size = sizeof(value);
    std::memcpy(out.data, &value, sizeof(value));
  };
  if (p.type == "float" || p.type == "double") {
    double v = 0;
    if (std::holds_alternative<double>(a)) v = std::get<double>(a);
    else if (std::holds_alternative<int64_t>(a)) v = static_cast<double>(std::get<int64_t>(a));
    else TORCH_CHECK_TYPE(false, where(), " takes a number; got ", describe(a));
    if (p.type == "float") put(static_cast<float>(v));
    else put(v);
    return out;
  }
  TORCH_CHECK_TYPE(std::holds_alternative<int64_t>(a), where(), " takes an int; got ", describe(a),
                   std::holds_alternative<double>(a) ? " (a float is not truncated silently: pass int(value))" : "");
  const int64_t v = std::get<int64_t>(a);
  auto check_range = [&](auto type_tag) {
    using T = decltype(type_tag);
    const bool fits = std::is_signed<T>::value
                          ? v >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                                v <= static_cast<int64_t>(std::numeric_limits<T>::max())
                          : v >= 0 && static_cast<uint64_t>(v) <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    TORCH_CHECK_VALUE(fits, where(), ": ", v, " does not fit in ", p.type);
    put(static_cast<T>(v));
  };
  if (p.type == "char") check_range(int8_t{});
  else if (p.type == "uchar") check_range(uint8_t{});
  else if (p.type == "short") check_range(int16_t{});
  else if (p.type == "ushort") check_range(uint16_t{});
  else if (p.type == "int") check_range(int32_t{});
  else if (p.type == "uint") check_range(uint32_t{});
  else if (p.type == "long") check_range(int64_t{});
  else if (p.type == "ulong") check_range(uint64_t{});
  else TORCH_CHECK(false, where(), ": type ", p.type, " cannot be passed");
  return out;
}

}  // namespace

UserProgram::UserProgram(const std::string& source, std::string options)
    : parsed_(tocl::parse_kernels(source)), options_(std::move(options)) {
  TORCH_CHECK_VALUE(!parsed_.kernels.empty(),
                    "The source defines no kernel: write at least one '__kernel void name(...) { ... }'");
  for (const auto& k : parsed_.kernels) {
    accepted_.emplace_back();
    for (const auto& p : k.params) accepted_.back().push_back(dtypes_for(p.type));
  }
}

size_t UserProgram::kernel_index(const std::string& name) const {
  std::string names;
  for (size_t i = 0; i < parsed_.kernels.size(); ++i) {
    if (parsed_.kernels[i].name == name) return i;
    names += (i ? ", " : "") + parsed_.kernels[i].name;
  }
  TORCH_CHECK(false, "The program has no kernel '", name, "'; its kernels are: ", names);
}

cl_program UserProgram::program(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = programs_.find(device);
  if (found != programs_.end()) return found->second;
  cl_program p = tocl::get_program(device, parsed_.source, options_);
  programs_[device] = p;
  return p;
}

size_t UserProgram::max_group(int device, cl_kernel kernel, size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto key = std::make_pair(device, index);
  auto found = max_groups_.find(key);
  if (found != max_groups_.end()) return found->second;
  size_t size = 0;
  TOCL_CHECK(clGetKernelWorkGroupInfo(kernel, tocl::device_info(device).id, CL_KERNEL_WORK_GROUP_SIZE, sizeof(size),
                                      &size, nullptr));
  max_groups_[key] = size;
  return size;
}

void UserProgram::launch(size_t index, const std::vector<KernelArgument>& args, const LaunchSizes& sizes,
                         bool require_contiguous) {
  TORCH_CHECK(index < parsed_.kernels.size(), "kernel index ", index, " out of range");
  const auto& k = parsed_.kernels[index];
  TORCH_CHECK_TYPE(args.size() == k.params.size(), "kernel '", k.name, "' takes ", k.params.size(),
                   " argument(s), got ", args.size(), ": ", signature_text(k));
  // Everything is checked before the first clSetKernelArg, so a bad call changes nothing. The messages
  // are built only for a failing check: this runs for every launch of a compiled graph's kernels.
  int device = -1;
  const at::Tensor* first_tensor = nullptr;
  const auto where = [&](size_t i) {
    return "kernel '" + k.name + "', argument " + std::to_string(i) + " ('" + k.params[i].text + "')";
  };
  std::vector<tocl::Resolved> resolved(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& p = k.params[i];
    const bool pointer = p.kind == Kind::global_pointer || p.kind == Kind::constant_pointer;
    if (p.kind == Kind::local_pointer) {
      TORCH_CHECK_TYPE(std::holds_alternative<LocalMemory>(args[i]), where(i),
                       " is __local memory: pass torch.opencl.LocalMemory(nbytes); got ", describe(args[i]));
      TORCH_CHECK_VALUE(std::get<LocalMemory>(args[i]).bytes > 0, where(i), ": LocalMemory needs at least one byte");
      continue;
    }
    if (!pointer) continue;  // scalars are converted (and checked) below
    TORCH_CHECK_TYPE(std::holds_alternative<at::Tensor>(args[i]), where(i), " takes a tensor; got ",
                     describe(args[i]));
    const auto& t = std::get<at::Tensor>(args[i]);
    TORCH_CHECK(t.defined(), where(i), ": the tensor is undefined");
    TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, where(i),
                ": expected an opencl tensor, got one on ", t.device(), " (move it with .to('opencl'))");
    if (first_tensor == nullptr) {
      first_tensor = &t;
      device = t.device().index();
    }
    TORCH_CHECK(t.device().index() == device, where(i), " is on ", t.device(), " but ", first_tensor->device(),
                " holds an earlier tensor argument: all tensors of a launch must be on one device");
    const auto& accepted = accepted_[index][i];
    TORCH_CHECK_TYPE(accepted.empty() || std::find(accepted.begin(), accepted.end(), t.scalar_type()) != accepted.end(),
                     where(i), " points to ", p.type, " and needs a ", accepted_names(accepted), " tensor; got ",
                     dtype_name(t.scalar_type()));
    TORCH_CHECK(!require_contiguous || t.is_contiguous(), where(i),
                " is a plain pointer, which walks memory contiguously, but the tensor is not contiguous (sizes ",
                t.sizes(), ", strides ", t.strides(),
                "). Pass x.contiguous() (for an output, copy the result back afterwards), or compile with "
                "require_contiguous=False if the kernel indexes with strides you pass it.");
    if (t.storage().data()) resolved[i] = tocl::resolve(t.const_data_ptr());
    if (t.numel() > 0 && t.storage().data()) {
      const size_t align = tocl::builtin_type_size(p.type);
      TORCH_CHECK(align <= 1 || resolved[i].offset % align == 0, where(i), ": the tensor's first element sits at byte ",
                  resolved[i].offset, " of its buffer, which is not a multiple of ", align, " (the alignment of ",
                  p.type, "); pass a view whose offset is a multiple of ", align / t.element_size(),
                  " elements");
    }
  }
  if (device < 0) device = tocl::current_device();
  std::vector<ScalarBytes> scalars(args.size());
  for (size_t i = 0; i < args.size(); ++i)
    if (k.params[i].kind == Kind::scalar) scalars[i] = scalar_bytes(k, k.params[i], args[i]);

  const size_t dims = sizes.threads.size();
  TORCH_CHECK_VALUE(dims >= 1 && dims <= 3, "kernel '", k.name, "': threads needs 1 to 3 sizes, got ", dims);
  TORCH_CHECK_VALUE(sizes.group_size.empty() || sizes.group_size.size() == dims, "kernel '", k.name,
                    "': group_size has ", sizes.group_size.size(), " sizes but threads has ", dims);
  cl_program program = this->program(device);
  cl_kernel kernel = tocl::get_kernel(program, k.name.c_str());
  if (!sizes.group_size.empty()) {
    size_t group = 1;
    for (size_t d = 0; d < dims; ++d) {
      TORCH_CHECK_VALUE(sizes.group_size[d] > 0, "kernel '", k.name, "': group_size must be positive");
      TORCH_CHECK_VALUE(sizes.threads[d] % sizes.group_size[d] == 0, "kernel '", k.name, "': threads[", d, "] = ",
                        sizes.threads[d], " is not a multiple of group_size[", d, "] = ", sizes.group_size[d],
                        " (OpenCL 1.2 launches whole groups): round threads up and bound-check in the kernel, "
                        "or leave group_size out for the driver's choice");
      group *= sizes.group_size[d];
    }
    const size_t limit = max_group(device, kernel, index);
    TORCH_CHECK_VALUE(group <= limit, "kernel '", k.name, "': a group of ", group,
                      " work-items is more than this kernel can run on ", tocl::device_info(device).name, " (",
                      limit, ")");
  }

  tocl::ArgSetter setter(kernel);
  for (size_t i = 0; i < args.size(); ++i) {
    const auto& p = k.params[i];
    if (p.kind == Kind::global_pointer || p.kind == Kind::constant_pointer) {
      setter.set(resolved[i].buffer).set(static_cast<cl_ulong>(resolved[i].offset));
    } else if (p.kind == Kind::local_pointer) {
      setter.set(tocl::LocalArg{std::get<LocalMemory>(args[i]).bytes});
    } else {
      setter.set(tocl::RawArg{scalars[i].size, scalars[i].data});
    }
  }
  tocl::enqueue_nd(device, tocl::current_stream(device), kernel, static_cast<cl_uint>(dims), sizes.threads.data(),
                   sizes.group_size.empty() ? nullptr : sizes.group_size.data());
}

}  // namespace torch_opencl
