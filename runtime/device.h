#pragma once
// Platform and device discovery, and the selection that TORCH_OPENCL_PLATFORM,
// TORCH_OPENCL_DEVICE_TYPE and TORCH_OPENCL_VISIBLE_DEVICES make.
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/opencl.h"

namespace tocl {

struct DeviceInfo {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  int platform_index = -1;      // index among all platforms
  int index_in_platform = -1;   // index among all devices of the platform
  std::string name;
  std::string vendor;
  std::string platform_name;
  std::string platform_vendor;
  std::string platform_version;
  std::string driver_version;
  std::string device_version;
  std::string opencl_c_version;
  std::string extensions;
  cl_device_type type = 0;
  uint64_t global_mem_size = 0;
  uint64_t max_alloc_size = 0;
  uint64_t local_mem_size = 0;
  uint32_t compute_units = 0;
  uint32_t max_clock_mhz = 0;
  size_t max_work_group_size = 0;
  size_t max_parameter_size = 0;  // bytes of arguments a kernel may take (at least 1024 on full profiles)
  uint32_t mem_base_addr_align_bytes = 0;
  // The width the hardware runs work-items in lockstep (NVIDIA's warp, AMD's wavefront), where the
  // driver tells it (cl_nv_device_attribute_query, cl_amd_device_attribute_query); 0 when unknown.
  uint32_t simd_width = 0;
  // CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT: 16 for PoCL on AVX-512 CPUs, 8 on AVX2 ones; 0 when not told.
  uint32_t native_float_width = 0;
  // NVIDIA's compute capability as major * 10 + minor (cl_nv_device_attribute_query; 90 on an H100), 0
  // elsewhere: which tensor-core instructions inline PTX may use (kernels_cl/gemm_mma.cl needs 80).
  uint32_t nv_compute_capability = 0;
  bool local_mem_dedicated = false;  // CL_LOCAL: on-chip scratch, not emulated in global memory
  bool fp64 = false;
  bool fp16 = false;

  bool has_extension(const std::string& name) const;
  std::string type_name() const;  // "gpu", "cpu", "accelerator", "other"
  bool is_pocl() const;            // on PoCL's platform (its CPU device, or another of its drivers)
};

struct PlatformInfo {
  cl_platform_id id = nullptr;
  int index = -1;
  std::string name;
  std::string vendor;
  std::string version;
  std::vector<DeviceInfo> devices;  // every device, whatever its type
};

// Every platform and device the ICD loader reports; empty when none is installed.
const std::vector<PlatformInfo>& platforms();

// The devices torch sees as opencl:0..N-1, and why those.
struct Selection {
  std::vector<DeviceInfo> devices;
  std::string reason;  // e.g. "platform 0 (Portable Computing Language): all device types"
};

// Computed once from the environment. Throws tocl::Error, quoting the value and
// listing what exists, when a variable names nothing. With no platform at all it
// returns an empty selection whose reason says so.
const Selection& selection();

// Registers a callback run once, in the thread that first makes the selection, right after it (the
// aten layer sets defaults that depend on the devices there). Register at static initialisation;
// callbacks must not throw.
void on_devices_selected(void (*callback)());

// Number of selected devices; 0 when OpenCL is not available. Throws like selection().
int device_count();

// Info of selected device `index`; throws tocl::Error for an index out of range.
const DeviceInfo& device_info(int index);

// A listing of every platform and device, for error messages and reports.
std::string describe_platforms();

}  // namespace tocl
