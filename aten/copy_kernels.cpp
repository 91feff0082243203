#include "aten/copy_kernels.h"

#include <ATen/ATen.h>
#include <ATen/TensorIterator.h>

#include <map>
#include <mutex>
#include <tuple>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/kernel_support/tiled_geometry.h"
#include "runtime/embedded_sources.h"
#include "runtime/error.h"
#include "runtime/kernel_forms.h"
#include "runtime/memcpy.h"
#include "runtime/program_cache.h"

namespace torch_opencl {
namespace {

// One program per dtype pair and index width (kernels_cl/copy.cl after tiled_index.cl).
cl_program copy_program(int device, at::ScalarType src, at::ScalarType dst, bool index64 = false) {
  static std::mutex mutex;
  static std::map<std::tuple<int, at::ScalarType, at::ScalarType, bool>, cl_program> programs;
  std::lock_guard<std::mutex> lock(mutex);
  auto& program = programs[{device, src, dst, index64}];
  if (!program) {
    const std::string source = program_prelude({src, dst}) + operand_defines("SRC", src) +
                               operand_defines("DST", dst) + tiled_source(2, index64) +
                               tocl::embedded_sources().at("copy.cl");
    program = tocl::get_program(device, source);
  }
  return program;
}

std::pair<int64_t, int64_t> element_span(const at::Tensor& t) {
  int64_t last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  return {t.storage_offset(), last + 1};
}

}  // namespace

bool device_copy(const at::Tensor& dst, const at::Tensor& src) {
  const int device = device_index(dst);
  if (!device_supports(src.scalar_type(), device) || !device_supports(dst.scalar_type(), device)) return false;
  // A negative (or conjugate) bit on one side only needs the values negated: the host path does it.
  if (dst.is_neg() != src.is_neg() || dst.is_conj() != src.is_conj()) return false;
  if (dst.numel() == 0) return true;
  const int stream = tocl::current_stream(device);
  const bool same_shape = dst.sizes().equals(src.sizes());
  if (same_shape && dst.is_contiguous() && src.is_contiguous()) {
    if (dst.scalar_type() == src.scalar_type()) {
      tocl::copy_device_to_device(device, stream, dst.data_ptr(), src.const_data_ptr(), dst.nbytes());
      return true;
    }
    cl_kernel k = tocl::get_kernel(copy_program(device, src.scalar_type(), dst.scalar_type()), "copy_contiguous");
    tocl::set_args(k, buffer_arg(dst), buffer_arg(src), static_cast<cl_ulong>(dst.numel()));
    tocl::enqueue_1d(device, stream, k, dst.numel(), tocl::kernel_forms(device).elementwise_group);
    return true;
  }
  auto iter = at::TensorIteratorConfig()
                  .add_output(dst)
                  .add_const_input(src)
                  .resize_outputs(false)
                  .check_all_same_dtype(false)
                  .build();
  TiledLaunch launch;
  if (!tiled_launch(iter, 2, launch)) return false;
  // The iterator may have moved the base pointers by reordering: use its data pointers.
  const tocl::Resolved d = tocl::resolve(iter.data_ptr(0));
  const tocl::Resolved s = tocl::resolve(iter.data_ptr(1));
  const auto& forms = tocl::kernel_forms(device);
  const int steps = forms.copy_lines ? line_steps(iter) : -1;  // slices and expansions, in runs
  cl_program program = copy_program(device, src.scalar_type(), dst.scalar_type(), launch.index64);
  cl_kernel k = tocl::get_kernel(program, steps >= 0 ? "copy_lines" : tiled_kernel_name("copy_strided", launch).c_str());
  tocl::set_args(k, tocl::BufferArg{d.buffer, d.offset / dst.element_size()},
                 tocl::BufferArg{s.buffer, s.offset / src.element_size()});
  if (steps >= 0) {
    const cl_int src_steps = steps;
    TOCL_CHECK(clSetKernelArg(k, 8, sizeof(src_steps), &src_steps));
    enqueue_lines(device, stream, k, 4, 5, launch, iter, static_cast<int64_t>(forms.copy_run));
  } else {
    enqueue_tiled(device, stream, k, 4, launch);
  }
  return true;
}

bool device_fill(const at::Tensor& dst, const c10::Scalar& value) {
  const int device = device_index(dst);
  const auto type = dst.scalar_type();
  if (!device_supports(type, device)) return false;
  // CPU's fill_ converts the value with a check (300 into uint8 or 70000 into half is an error), even for
  // an empty tensor; only its one-element fast path casts half and bfloat16 unchecked.
  if (dst.numel() != 1) check_scalar_fits(value, type);
  if (dst.numel() == 0) return true;
  const int stream = tocl::current_stream(device);
  // The value's bytes as the dtype stores them (CPU does the conversion, with its rules).
  const auto bits = at::scalar_tensor(value, at::TensorOptions().dtype(type));
  if (dst.is_non_overlapping_and_dense()) {
    tocl::fill_device(device, stream, dst.data_ptr(), bits.const_data_ptr(), dst.element_size(), dst.nbytes());
    return true;
  }
  // As CPU's fill_: no inputs (so no common dtype to check against), and an expanded dst is fine.
  auto iter = at::TensorIteratorConfig()
                  .set_check_mem_overlap(false)
                  .check_all_same_dtype(false)
                  .add_output(dst)
                  .resize_outputs(false)
                  .build();
  TiledLaunch launch;
  if (!tiled_launch(iter, 2, launch)) return false;
  const auto compute = compute_dtype(type);
  const auto compute_bits = at::scalar_tensor(value, at::TensorOptions().dtype(compute));
  const tocl::Resolved d = tocl::resolve(iter.data_ptr(0));
  cl_kernel k = tocl::get_kernel(copy_program(device, compute, type, launch.index64),
                                 tiled_kernel_name("fill_strided", launch).c_str());
  tocl::set_args(k, tocl::BufferArg{d.buffer, d.offset / dst.element_size()});
  TOCL_CHECK(clSetKernelArg(k, 3, compute_bits.element_size(), compute_bits.const_data_ptr()));
  enqueue_tiled(device, stream, k, 2, launch);
  return true;
}

at::Tensor host_mirror(const at::Tensor& t) {
  const auto options = t.options().device(at::kCPU);
  if (t.numel() == 0) return at::empty_strided(t.sizes(), t.strides(), options);
  const auto [begin, end] = element_span(t);
  auto buffer = at::empty({end - begin}, options);
  const int device = device_index(t);
  const char* base = static_cast<const char*>(t.storage().data()) + begin * t.element_size();
  tocl::copy_device_to_host(device, tocl::current_stream(device), buffer.data_ptr(), base,
                            (end - begin) * t.element_size());
  auto mirror = buffer.as_strided(t.sizes(), t.strides(), 0);
  // The mirror means what t means: CPU's copy_/fill_/item honour the bits.
  mirror._set_neg(t.is_neg());
  mirror._set_conj(t.is_conj());
  return mirror;
}

void write_back_mirror(const at::Tensor& t, const at::Tensor& mirror) {
  if (t.numel() == 0) return;
  const auto [begin, end] = element_span(t);
  const int device = device_index(t);
  char* base = static_cast<char*>(t.storage().mutable_data()) + begin * t.element_size();
  tocl::copy_host_to_device(device, tocl::current_stream(device), base, mirror.storage().data(),
                            (end - begin) * t.element_size());
}

}  // namespace torch_opencl
