#include "runtime/device.h"
#include "runtime/fork.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include "runtime/error.h"
#include "runtime/kernel_forms.h"
#include "runtime/pocl_cache.h"

namespace tocl {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  TOCL_CHECK(clGetPlatformInfo(p, what, size, s.data(), nullptr));
  return trim(s.c_str());
}

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  TOCL_CHECK(clGetDeviceInfo(d, what, size, s.data(), nullptr));
  return trim(s.c_str());
}

template <typename T>
T device_value(cl_device_id d, cl_device_info what) {
  T value{};
  if (clGetDeviceInfo(d, what, sizeof(T), &value, nullptr) != CL_SUCCESS) return T{};
  return value;
}

DeviceInfo query_device(const PlatformInfo& p, cl_device_id id, int index) {
  DeviceInfo d;
  d.platform = p.id;
  d.id = id;
  d.platform_index = p.index;
  d.index_in_platform = index;
  d.platform_name = p.name;
  d.platform_vendor = p.vendor;
  d.platform_version = p.version;
  d.name = device_string(id, CL_DEVICE_NAME);
  d.vendor = device_string(id, CL_DEVICE_VENDOR);
  d.driver_version = device_string(id, CL_DRIVER_VERSION);
  d.device_version = device_string(id, CL_DEVICE_VERSION);
  d.opencl_c_version = device_string(id, CL_DEVICE_OPENCL_C_VERSION);
  d.extensions = device_string(id, CL_DEVICE_EXTENSIONS);
  d.type = device_value<cl_device_type>(id, CL_DEVICE_TYPE);
  d.global_mem_size = device_value<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_SIZE);
  d.max_alloc_size = device_value<cl_ulong>(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  d.local_mem_size = device_value<cl_ulong>(id, CL_DEVICE_LOCAL_MEM_SIZE);
  d.compute_units = device_value<cl_uint>(id, CL_DEVICE_MAX_COMPUTE_UNITS);
  d.max_clock_mhz = device_value<cl_uint>(id, CL_DEVICE_MAX_CLOCK_FREQUENCY);
  d.max_work_group_size = device_value<size_t>(id, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  // Our groups run along dimension 0, which may allow fewer items than a group (then the smaller counts).
  size_t item_sizes[3] = {0, 0, 0};
  if (clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(item_sizes), item_sizes, nullptr) == CL_SUCCESS &&
      item_sizes[0] > 0)
    d.max_work_group_size = std::min(d.max_work_group_size, item_sizes[0]);
  // Tests only: TORCH_OPENCL_DEBUG_MAX_GROUP=N makes the device look like one of at most N items per group,
  // so the forms of small GPUs run (and launches past N fail) on PoCL.
  if (const char* cap = std::getenv("TORCH_OPENCL_DEBUG_MAX_GROUP"); cap && std::atoll(cap) > 0)
    d.max_work_group_size = std::min(d.max_work_group_size, static_cast<size_t>(std::atoll(cap)));
  d.max_parameter_size = device_value<size_t>(id, CL_DEVICE_MAX_PARAMETER_SIZE);
  d.mem_base_addr_align_bytes = device_value<cl_uint>(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8;
  d.local_mem_dedicated = device_value<cl_device_local_mem_type>(id, CL_DEVICE_LOCAL_MEM_TYPE) == CL_LOCAL;
  d.native_float_width = device_value<cl_uint>(id, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT);
  // Both queries are vendor extensions; other drivers leave the width unknown (0).
  constexpr cl_device_info kWarpSizeNV = 0x4003, kWavefrontWidthAMD = 0x4043;
  constexpr cl_device_info kComputeCapabilityMajorNV = 0x4000, kComputeCapabilityMinorNV = 0x4001;
  if (d.has_extension("cl_nv_device_attribute_query")) {
    d.simd_width = device_value<cl_uint>(id, kWarpSizeNV);
    d.nv_compute_capability = device_value<cl_uint>(id, kComputeCapabilityMajorNV) * 10 +
                              device_value<cl_uint>(id, kComputeCapabilityMinorNV);
  }
  else if (d.has_extension("cl_amd_device_attribute_query"))
    d.simd_width = device_value<cl_uint>(id, kWavefrontWidthAMD);
  d.fp64 = d.has_extension("cl_khr_fp64") ||
           device_value<cl_device_fp_config>(id, CL_DEVICE_DOUBLE_FP_CONFIG) != 0;
  d.fp16 = d.has_extension("cl_khr_fp16");
  return d;
}

std::vector<PlatformInfo> discover() {
  std::vector<PlatformInfo> result;
  cl_uint count = 0;
  // PoCL reads its cache directory when its platform starts, here: it must be usable and whole before.
  prepare_pocl_cache();
  // Drivers start their threads here (PoCL does): a process forked after this cannot use them.
  mark_initialized();
  // No ICD installed (or none that loads) is "not available", not an error.
  if (clGetPlatformIDs(0, nullptr, &count) != CL_SUCCESS || count == 0) return result;
  std::vector<cl_platform_id> ids(count);
  if (clGetPlatformIDs(count, ids.data(), nullptr) != CL_SUCCESS) return result;
  for (cl_uint i = 0; i < count; ++i) {
    PlatformInfo p;
    p.id = ids[i];
    p.index = static_cast<int>(i);
    p.name = platform_string(ids[i], CL_PLATFORM_NAME);
    p.vendor = platform_string(ids[i], CL_PLATFORM_VENDOR);
    p.version = platform_string(ids[i], CL_PLATFORM_VERSION);
    cl_uint ndev = 0;
    if (clGetDeviceIDs(ids[i], CL_DEVICE_TYPE_ALL, 0, nullptr, &ndev) == CL_SUCCESS && ndev > 0) {
      std::vector<cl_device_id> devs(ndev);
      TOCL_CHECK(clGetDeviceIDs(ids[i], CL_DEVICE_TYPE_ALL, ndev, devs.data(), nullptr));
      for (cl_uint j = 0; j < ndev; ++j) p.devices.push_back(query_device(p, devs[j], static_cast<int>(j)));
    }
    result.push_back(std::move(p));
  }
  return result;
}

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

bool is_integer(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// The value of a string of digits; SIZE_MAX when it does not fit (std::stoul would throw
// std::out_of_range, which would escape as an unhelpful "stoul" instead of the selection error).
size_t to_index(const std::string& digits) {
  size_t value = 0;
  for (unsigned char c : digits) {
    const size_t d = c - '0';
    if (value > (SIZE_MAX - d) / 10) return SIZE_MAX;
    value = value * 10 + d;
  }
  return value;
}

[[noreturn]] void selection_error(const std::string& what) {
  throw Error(what + "\nOpenCL platforms and devices on this machine:\n" + describe_platforms());
}

const PlatformInfo* platform_from_env(const std::vector<PlatformInfo>& all, const char* value) {
  const std::string v = trim(value);
  if (is_integer(v)) {
    const auto index = to_index(v);
    if (index >= all.size())
      selection_error("TORCH_OPENCL_PLATFORM='" + v + "' is not a platform index: there are " +
                      std::to_string(all.size()) + " platform(s), numbered from 0.");
    return &all[index];
  }
  const std::string needle = lower(v);
  for (const auto& p : all) {
    if (lower(p.name).find(needle) != std::string::npos || lower(p.vendor).find(needle) != std::string::npos)
      return &p;
  }
  selection_error("TORCH_OPENCL_PLATFORM='" + v +
                  "' matches no platform index, name or vendor (case-insensitive substring).");
}

// Returns the CL_DEVICE_TYPE mask, or 0 for the "GPUs if any, else all" default.
cl_device_type type_from_env(const char* value) {
  if (!value) return 0;
  const std::string v = lower(trim(value));
  if (v == "gpu") return CL_DEVICE_TYPE_GPU;
  if (v == "cpu") return CL_DEVICE_TYPE_CPU;
  if (v == "accelerator") return CL_DEVICE_TYPE_ACCELERATOR;
  if (v == "all") return CL_DEVICE_TYPE_ALL;
  selection_error(std::string("TORCH_OPENCL_DEVICE_TYPE='") + value +
                  "' is not a device type; use one of: gpu, cpu, accelerator, all.");
}

bool matches(const DeviceInfo& d, cl_device_type mask) { return (d.type & mask) != 0; }

bool has_type(const PlatformInfo& p, cl_device_type mask) {
  return std::any_of(p.devices.begin(), p.devices.end(), [&](const DeviceInfo& d) { return matches(d, mask); });
}

Selection select(const std::vector<PlatformInfo>& all) {
  Selection sel;
  const bool any_device = std::any_of(all.begin(), all.end(), [](const PlatformInfo& p) { return !p.devices.empty(); });
  const char* platform_env = env("TORCH_OPENCL_PLATFORM");
  const char* type_env = env("TORCH_OPENCL_DEVICE_TYPE");
  const char* visible_env = env("TORCH_OPENCL_VISIBLE_DEVICES");
  if (!any_device) {
    if (platform_env || type_env || visible_env)
      selection_error("OpenCL device selection was requested by environment variables, but no OpenCL device exists.");
    sel.reason = all.empty() ? "no OpenCL platform is installed (no ICD found)"
                             : "no OpenCL platform reports a device";
    const auto& pocl = prepare_pocl_cache();
    if (!all.empty() && !pocl.problem.empty())
      sel.reason += " (PoCL's kernel cache directory " + pocl.directory + " cannot be used: " + pocl.problem + ")";
    return sel;
  }
  cl_device_type mask = type_from_env(type_env);
  const PlatformInfo* platform = platform_env ? platform_from_env(all, platform_env) : nullptr;
  std::string why;
  if (!platform) {
    // First platform that has the requested type; by default, the first with a GPU, else the first with any device.
    const cl_device_type want = mask ? mask : CL_DEVICE_TYPE_GPU;
    for (const auto& p : all)
      if (has_type(p, want)) { platform = &p; break; }
    if (!platform && mask)
      selection_error(std::string("TORCH_OPENCL_DEVICE_TYPE='") + type_env + "' names no device on any platform.");
    if (!platform)
      for (const auto& p : all)
        if (!p.devices.empty()) { platform = &p; break; }
    why = "platform " + std::to_string(platform->index) + " (" + platform->name + ")";
  } else {
    why = "platform " + std::to_string(platform->index) + " (" + platform->name + ") from TORCH_OPENCL_PLATFORM";
  }
  if (!mask) {
    mask = has_type(*platform, CL_DEVICE_TYPE_GPU) ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_ALL;
    why += mask == CL_DEVICE_TYPE_GPU ? ", its GPUs (default: GPUs first)" : ", all its devices (it has no GPU)";
  } else {
    why += std::string(", device type '") + lower(trim(type_env)) + "' from TORCH_OPENCL_DEVICE_TYPE";
    if (!has_type(*platform, mask))
      selection_error(std::string("TORCH_OPENCL_DEVICE_TYPE='") + type_env + "' names no device on platform " +
                      std::to_string(platform->index) + " (" + platform->name + ").");
  }
  if (visible_env) {
    std::stringstream ss(visible_env);
    std::string item;
    std::vector<int> seen;
    while (std::getline(ss, item, ',')) {
      item = trim(item);
      if (!is_integer(item))
        selection_error(std::string("TORCH_OPENCL_VISIBLE_DEVICES='") + visible_env + "': '" + item +
                        "' is not a device index; give comma-separated indices within the platform, e.g. 0,1.");
      const auto index = to_index(item);
      if (index >= platform->devices.size())
        selection_error(std::string("TORCH_OPENCL_VISIBLE_DEVICES='") + visible_env + "': device " + item +
                        " does not exist on platform " + std::to_string(platform->index) + " (" + platform->name +
                        "), which has " + std::to_string(platform->devices.size()) + " device(s).");
      if (std::find(seen.begin(), seen.end(), static_cast<int>(index)) != seen.end())
        selection_error(std::string("TORCH_OPENCL_VISIBLE_DEVICES='") + visible_env + "' lists device " + item + " twice.");
      const auto& d = platform->devices[index];
      if (type_env && !matches(d, mask))
        selection_error(std::string("TORCH_OPENCL_VISIBLE_DEVICES='") + visible_env + "': device " + item + " (" +
                        d.name + ") is a " + d.type_name() + ", not of TORCH_OPENCL_DEVICE_TYPE='" + type_env + "'.");
      seen.push_back(static_cast<int>(index));
      sel.devices.push_back(d);
    }
    if (sel.devices.empty())
      selection_error(std::string("TORCH_OPENCL_VISIBLE_DEVICES='") + visible_env + "' lists no device.");
    why += std::string(", devices ") + visible_env + " from TORCH_OPENCL_VISIBLE_DEVICES";
  } else {
    for (const auto& d : platform->devices)
      if (matches(d, mask)) sel.devices.push_back(d);
  }
  sel.reason = why;
  return sel;
}

}  // namespace

bool DeviceInfo::has_extension(const std::string& ext) const {
  std::stringstream ss(extensions);
  std::string item;
  while (ss >> item)
    if (item == ext) return true;
  return false;
}

bool DeviceInfo::is_pocl() const { return platform_name.find("Portable Computing Language") != std::string::npos; }

std::string DeviceInfo::type_name() const {
  if (type & CL_DEVICE_TYPE_GPU) return "gpu";
  if (type & CL_DEVICE_TYPE_CPU) return "cpu";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  return "other";
}

const std::vector<PlatformInfo>& platforms() {
  static const std::vector<PlatformInfo> all = discover();
  return all;
}

namespace {
std::vector<void (*)()>& selection_callbacks() {
  static std::vector<void (*)()> callbacks;
  return callbacks;
}
}  // namespace

const Selection& selection() {
  // The outcome, error included, is computed once: every later call answers the same. A function-local
  // static (not std::call_once, which writes thread-locals on every call): this runs several times per
  // kernel launch, and after the first call it is one load.
  struct Outcome {
    Selection result;
    std::string error;
  };
  static const Outcome outcome = [] {
    Outcome o;
    try {
      o.result = select(platforms());
      kernel_class_from_env();  // a TORCH_OPENCL_KERNEL_CLASS that names nothing fails the selection too
    } catch (const Error& e) {
      o.error = e.what();
    }
    return o;
  }();
  if (!outcome.error.empty()) throw Error(outcome.error);
  // Once, in the thread that made the selection (a callback asking for the selection again gets it).
  static std::atomic<bool> notified{false};
  // A plain load first, the read-modify-write only until notified.
  if (!notified.load(std::memory_order_acquire) && !notified.exchange(true))
    for (auto callback : selection_callbacks()) callback();
  return outcome.result;
}

void on_devices_selected(void (*callback)()) { selection_callbacks().push_back(callback); }

int device_count() { return static_cast<int>(selection().devices.size()); }

const DeviceInfo& device_info(int index) {
  const auto& devices = selection().devices;
  if (devices.empty())
    throw Error("OpenCL device index " + std::to_string(index) + " cannot be used: no OpenCL device is available (" +
                selection().reason + ").\nCheck that `clinfo` lists a device; for PoCL, that its kernel cache "
                "directory (POCL_CACHE_DIR, else $XDG_CACHE_HOME/pocl/kcache or ~/.cache/pocl/kcache) can be "
                "created and written; for a GPU, that its driver's ICD is installed and this user may open the "
                "device (the render or video group).\nOpenCL platforms and devices on this machine:\n" +
                describe_platforms());
  if (index < 0 || index >= static_cast<int>(devices.size()))
    throw Error("OpenCL device index " + std::to_string(index) + " is out of range: " +
                std::to_string(devices.size()) + " device(s) are selected (opencl:0.." +
                std::to_string(static_cast<int>(devices.size()) - 1) + ").");
  return devices[index];
}

std::string describe_platforms() {
  const auto& all = platforms();
  if (all.empty()) return "  (none: no OpenCL ICD is installed; on Debian: apt-get install pocl-opencl-icd)\n";
  std::string out;
  for (const auto& p : all) {
    out += "  platform " + std::to_string(p.index) + ": " + p.name + " (vendor: " + p.vendor + ", " + p.version + ")\n";
    if (p.devices.empty()) out += "    (no devices)\n";
    for (const auto& d : p.devices)
      out += "    device " + std::to_string(d.index_in_platform) + ": " + d.name + " [" + d.type_name() + "]\n";
  }
  return out;
}

}  // namespace tocl
