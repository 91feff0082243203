#include "aten/native/scatter_program.h"

#include <c10/util/Exception.h>

#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/device.h"
#include "runtime/embedded_sources.h"
#include "runtime/kernel_forms.h"
#include "runtime/program_cache.h"

namespace torch_opencl {

Geometry make_geometry(at::IntArrayRef sizes, const std::array<std::vector<int64_t>, 3>& strides, const char* op) {
  struct Dim {
    int64_t size;
    int64_t stride[3];
  };
  std::vector<Dim> dims;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    Dim next{sizes[d], {strides[0][d], strides[1][d], strides[2][d]}};
    if (!dims.empty()) {
      Dim& outer = dims.back();
      bool mergeable = true;
      for (int k = 0; k < 3; ++k) mergeable &= outer.stride[k] == next.stride[k] * next.size;
      if (mergeable) {
        outer.size *= next.size;
        for (int k = 0; k < 3; ++k) outer.stride[k] = next.stride[k];
        continue;
      }
    }
    dims.push_back(next);
  }
  TORCH_CHECK(dims.size() <= static_cast<size_t>(kGeometryDims), op, ": on opencl, tensors whose strides leave more than ",
              kGeometryDims, " dims after merging contiguous ones are not supported (got ", dims.size(),
              "); make the operands contiguous first");
  Geometry g{};
  g.ndim = static_cast<cl_long>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    g.sizes[d] = dims[d].size;
    for (int k = 0; k < 3; ++k) g.strides[k][d] = dims[d].stride[k];
  }
  return g;
}

int64_t positions_per_item(int device) { return tocl::kernel_forms(device).copy_lines ? 256 : 16; }

namespace {

bool has_int64_atomics(int device) { return tocl::device_info(device).has_extension("cl_khr_int64_base_atomics"); }

cl_program scatter_program(int device, c10::ScalarType type, c10::ScalarType index_type) {
  static std::mutex mutex;
  static std::map<std::tuple<int, c10::ScalarType, c10::ScalarType>, cl_program> programs;
  std::lock_guard<std::mutex> lock(mutex);
  auto& program = programs[{device, type, index_type}];
  if (!program) {
    const std::string source =
        program_prelude({type}) + operand_defines("T", type) + operand_defines("I", index_type) + "#define ACC " +
        storage_type(compute_dtype(type)) + "\n" +
        (at::isFloatingType(type) ? "#define ACC_ISNAN(x) isnan(x)\n" : "#define ACC_ISNAN(x) 0\n") +
        "#define T_SIZE " + std::to_string(c10::elementSize(type)) + "\n#define RUN " +
        std::to_string(positions_per_item(device)) + "\n" +
        (has_int64_atomics(device) ? "#define TOCL_INT64_ATOMICS 1\n" : "") + tocl::embedded_sources().at("scatter_gather.cl");
    program = tocl::get_program(device, source);
  }
  return program;
}

}  // namespace

cl_kernel scatter_gather_kernel(const at::Tensor& like, const char* name, c10::ScalarType index_type) {
  check_device_supports(like.scalar_type(), device_index(like), name);
  return tocl::get_kernel(scatter_program(device_index(like), like.scalar_type(), index_type), name);
}

void enqueue_update(const at::Tensor& like, cl_kernel kernel, cl_uint first_update_arg, Update update, int64_t total) {
  const int device = device_index(like);
  const bool serial = update != Update::Assign && like.element_size() == 8 && !has_int64_atomics(device);
  const cl_int op = static_cast<cl_int>(update);
  const cl_int atomic = (update != Update::Assign && !serial) ? 1 : 0;
  TOCL_CHECK(clSetKernelArg(kernel, first_update_arg, sizeof(cl_int), &op));
  TOCL_CHECK(clSetKernelArg(kernel, first_update_arg + 1, sizeof(cl_int), &atomic));
  if (serial)
    tocl::enqueue_1d(device, current_stream_of(like), kernel, 1, 1);
  else
    tocl::enqueue_1d(device, current_stream_of(like), kernel, work_items(total, device));
}

}  // namespace torch_opencl
