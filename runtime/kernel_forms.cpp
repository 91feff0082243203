#include "runtime/kernel_forms.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/device.h"
#include "runtime/error.h"

namespace tocl {
namespace {

KernelForms choose(const DeviceInfo& d) {
  KernelForms f;
  if (const auto forced = kernel_class_from_env()) {
    f.kernel_class = *forced;
    f.reason = std::string("TORCH_OPENCL_KERNEL_CLASS=") + kernel_class_name(*forced);
  } else {
    // Accelerators and GPUs are throughput devices; only a CPU device gets the CPU forms.
    f.kernel_class = (d.type & CL_DEVICE_TYPE_CPU) ? KernelClass::cpu : KernelClass::gpu;
    f.reason = "device type " + d.type_name();
  }
  f.simd_width = d.simd_width;
  const size_t max_group = d.max_work_group_size ? d.max_work_group_size : 64;
  if (f.gpu()) {
    f.row_group = std::min<size_t>(256, max_group);
    f.cpu_register_gemm = false;
  } else {
    f.row_group = std::min<size_t>(64, max_group);
    f.cpu_register_gemm = true;
  }
  // Row-wise families (softmax, layer norm, batch norm): their GPU forms need a power-of-two group.
  f.row_gpu_forms = f.gpu() && (f.row_group & (f.row_group - 1)) == 0;
  f.line_items = 8;
  f.column_lines = std::min<size_t>(16, f.row_group);  // 64 bytes of floats: whole 32-byte sectors
  f.busy_groups = 8 * std::max<size_t>(1, d.compute_units);
  return f;
}

}  // namespace

std::optional<KernelClass> kernel_class_from_env() {
  const char* v = std::getenv("TORCH_OPENCL_KERNEL_CLASS");
  if (!v || !*v) return std::nullopt;
  std::string s(v);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "cpu") return KernelClass::cpu;
  if (s == "gpu") return KernelClass::gpu;
  throw Error("TORCH_OPENCL_KERNEL_CLASS='" + std::string(v) +
              "' names no kernel class: use 'cpu' (kernels shaped for CPU devices) or 'gpu' (for GPUs "
              "and accelerators), or leave it unset to choose by the device's type.");
}

const char* kernel_class_name(KernelClass c) { return c == KernelClass::gpu ? "gpu" : "cpu"; }

const KernelForms& kernel_forms(int device) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<KernelForms>> forms;
  const DeviceInfo& info = device_info(device);  // range-checked
  std::lock_guard<std::mutex> lock(mutex);
  if (forms.size() <= static_cast<size_t>(device)) forms.resize(device + 1);
  if (!forms[device]) forms[device] = std::make_unique<KernelForms>(choose(info));
  return *forms[device];
}

}  // namespace tocl
