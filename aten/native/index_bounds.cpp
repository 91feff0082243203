#include "aten/native/index_bounds.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "runtime/kernel_forms.h"
#include "runtime/memcpy.h"
#include "runtime/program_cache.h"

namespace torch_opencl {

namespace {

// An index tensor under check: contiguous, with its device, stream and index_bounds.cl's program for its dtype.
struct IndexUnderCheck {
  at::Tensor idx;
  int device, stream;
  cl_program program;
};

// The elements `index` holds, without an expansion's repeats: a dim of stride 0 taken once. The values, and
// the first of them out of range, are the same (an expansion's first bad element sits at position 0 of every
// expanded dim); gather's index expanded over 1024 rows was checked (and first copied) 1024 times.
at::Tensor distinct_elements(const at::Tensor& index) {
  auto sizes = index.sizes().vec();
  bool expanded = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (index.stride(d) == 0 && sizes[d] > 1) {
      sizes[d] = 1;
      expanded = true;
    }
  }
  return expanded ? index.as_strided(sizes, index.strides(), index.storage_offset()) : index;
}

IndexUnderCheck under_check(const at::Tensor& index) {
  TORCH_CHECK(at::isIntegralType(index.scalar_type(), /*includeBool=*/false), "expected an integer index tensor, got ",
              index.scalar_type());
  auto idx = distinct_elements(index).contiguous();
  const int device = device_index(idx);
  const cl_program program = dtype_program(device, "index_bounds.cl", at::kLong, idx.scalar_type());
  return {std::move(idx), device, current_stream_of(index), program};
}

}  // namespace

std::optional<OutOfRange> first_out_of_range(const at::Tensor& index, int64_t lo, int64_t hi,
                                             std::optional<int64_t> skip) {
  if (index.numel() == 0) return std::nullopt;
  const auto [idx, device, stream, program] = under_check(index);
  // Spans of at least 64 indices per work-item, at most 1024 groups.
  const int64_t n = idx.numel();
  const int64_t groups = std::min<int64_t>(1024, (n + row_group(device) * 64 - 1) / (row_group(device) * 64));
  const int64_t span = (n + groups - 1) / groups;
  auto result = at::empty({2 + groups}, idx.options().dtype(at::kLong));
  const auto partial = result.narrow(0, 2, groups);
  cl_kernel spans = tocl::get_kernel(program, "first_out_of_range_spans");
  tocl::set_args(spans, buffer_arg(partial), buffer_arg(idx), static_cast<cl_long>(n), static_cast<cl_long>(span),
                 static_cast<cl_long>(lo), static_cast<cl_long>(hi), static_cast<cl_int>(skip.has_value()),
                 static_cast<cl_long>(skip.value_or(0)));
  tocl::enqueue_1d(device, stream, spans, groups * row_group(device), row_group(device));
  cl_kernel k = tocl::get_kernel(program, "first_out_of_range");
  tocl::set_args(k, buffer_arg(result), buffer_arg(partial), static_cast<cl_long>(groups), buffer_arg(idx));
  tocl::enqueue_1d(device, stream, k, row_group(device), row_group(device));
  int64_t host[2];
  tocl::copy_device_to_host(device, stream, host, result.const_data_ptr(), sizeof(host));
  if (host[0] < 0) return std::nullopt;
  return OutOfRange{host[0], host[1]};
}

bool index_checks_deferred(const at::Tensor& index) {
  return tocl::kernel_forms(device_index(index)).deferred_index_checks;
}

void record_out_of_range(const at::Tensor& index, int64_t lo, int64_t hi, std::optional<int64_t> skip, int site) {
  if (index.numel() == 0) return;
  const auto [idx, device, stream, program] = under_check(index);
  const tocl::RecordLocation record = tocl::site_record(device, site);
  const int64_t n = idx.numel();
  const int64_t wg = static_cast<int64_t>(row_group(device));
  const int64_t groups = std::max<int64_t>(1, std::min<int64_t>(1024, (n + wg - 1) / wg));
  cl_kernel k = tocl::get_kernel(program, "record_out_of_range");
  tocl::set_args(k, tocl::BufferArg{record.buffer, record.offset / sizeof(int32_t)}, buffer_arg(idx),
                 static_cast<cl_long>(n), static_cast<cl_long>(lo), static_cast<cl_long>(hi),
                 static_cast<cl_int>(skip.has_value()), static_cast<cl_long>(skip.value_or(0)));
  tocl::enqueue_1d(device, stream, k, groups * wg, wg);
  tocl::arm_error_site(device, stream, site);
}

namespace {

int compiled_graph_site() {
  static const int site = tocl::error_site("a torch.compile'd graph", [](int64_t index, int64_t size) {
    if (index < 0) index -= size;  // a negative index had the size added before the check
    return "index " + std::to_string(index) + " is out of bounds for dimension with size " + std::to_string(size);
  });
  return site;
}

}  // namespace

void arm_compiled_graph_errors(const at::Tensor& record) {
  TORCH_CHECK(record.device().type() == c10::DeviceType::PrivateUse1 &&
                  record.nbytes() >= tocl::kErrorRecordBytes,
              "arm_compiled_graph_errors: expected a graph's opencl index-error buffer, got ", record.sizes(), " on ",
              record.device());
  const auto r = tocl::resolve(record.const_data_ptr());
  const int device = device_index(record);
  tocl::arm_error_record(device, tocl::current_stream(device), compiled_graph_site(), {r.buffer, r.offset},
                         std::make_shared<at::Tensor>(record));
}

namespace {

// A recorded error reaches the user as the IndexError the op would have raised at the call.
void report_recorded_error(const tocl::RecordedError& e) {
  TORCH_CHECK_INDEX(false, e.message, " (recorded by ", e.site, " on opencl:", e.device,
                    ", whose index checks do not wait for the device: the error comes at the next synchronization "
                    "or copy to the host instead of at the call; TORCH_OPENCL_SYNC_INDEX_CHECKS=1 raises it at the "
                    "call)", e.also.empty() ? "" : ". Also recorded before the same wait: ", e.also);
}

const bool reporter_installed = [] {
  tocl::set_recorded_error_reporter(&report_recorded_error);
  return true;
}();

}  // namespace

}  // namespace torch_opencl
