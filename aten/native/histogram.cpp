// bincount and histc (kernels_cl/histogram.cl), as CPU's SummaryOps.cpp and Histogram.cpp. Both count in int32
// (exact in any order): a row of counts per work-item summed after (CPU form) or atomic increments into one row
// (GPU form); then convert to the result's dtype. bincount's weighted sums go
// through the segment sums (aten/native/segment_sum.h): deterministic, without atomics, and in the CPU kernel class
// added in the input's order, as CPU adds them (the same bits). bincount reads the input's minimum and maximum back (its result's length depends on them), as histc
// reads its range when min == max.
#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include "aten/kernel_support/cl_types.h"
#include "aten/kernel_support/dtype_fallback.h"
#include "aten/kernel_support/kernel_program.h"
#include "aten/kernel_support/opencl_tensor.h"
#include "aten/native/segment_sum.h"
#include "runtime/kernel_forms.h"

namespace torch_opencl {
namespace {

using at::Tensor;

constexpr int64_t kChunk = 256;                    // elements per work-item of the atomic form
constexpr int64_t kPrivateRowsPerUnit = 8;         // work-items (rows of counts) per compute unit, CPU form
constexpr int64_t kPrivateCountsMax = int64_t{1} << 22;  // counts in all rows together, CPU form

cl_long L(int64_t v) { return static_cast<cl_long>(v); }

// Counts (int32) of the n elements of x in `bins` bins, by `kernel` (histogram.cl: count_values or histc_counts,
// whose arguments after the form's are `extra`): the form's rows of counts, then their sum.
template <class... Extra>
Tensor bin_counts(const Tensor& x, const char* kernel, int64_t bins, const Extra&... extra) {
  const int device = device_index(x);
  const int64_t n = x.numel();
  const auto& forms = tocl::kernel_forms(device);
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  const int64_t rows = forms.private_bin_counts
                           ? std::min({kPrivateRowsPerUnit * static_cast<int64_t>(forms.compute_units),
                                       kPrivateCountsMax / bins, chunks})
                           : 1;
  const bool private_rows = rows > 1;  // else (or where the bins are too many for rows of their own) atomics
  const int64_t chunk = private_rows ? (n + rows - 1) / rows : kChunk;
  Tensor counts = at::zeros({private_rows ? rows : 1, bins}, x.options().dtype(at::kInt));
  cl_kernel k = dtype_kernel(x, "histogram.cl", kernel);
  tocl::set_args(k, buffer_arg(counts), buffer_arg(x), L(n), L(chunk), L(bins), static_cast<cl_int>(private_rows),
                 extra...);
  tocl::enqueue_1d(device, current_stream_of(x), k, (n + chunk - 1) / chunk);
  return private_rows ? counts.sum(0, false, at::kInt) : counts.view({bins});
}

// ---- bincount ----

Tensor bincount(const Tensor& self, const std::optional<Tensor>& weights_opt, int64_t minlength) {
  const Tensor weights = weights_opt.value_or(Tensor());
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isIntegralType(self.scalar_type(), /*includeBool=*/false),
                              "\"bincount_cpu\" not implemented for '", self.scalar_type(), "'");
  TORCH_CHECK(minlength >= 0, "minlength should be >= 0");
  check_same_device({self, weights});
  const c10::DeviceGuard guard(self.device());
  if (self.dim() == 1 && self.numel() == 0) return at::zeros({minlength}, self.options().dtype(at::kLong));
  TORCH_CHECK(self.dim() == 1, "bincount only supports 1-d non-negative integral inputs.");
  const auto [lo, hi] = at::aminmax(self);
  const auto extrema = at::stack({lo, hi}).to(at::kLong).cpu();
  const int64_t min = extrema[0].item<int64_t>(), max = extrema[1].item<int64_t>();
  TORCH_CHECK(min >= 0, "bincount only supports 1-d non-negative integral inputs.");
  const bool has_weights = weights.defined();
  TORCH_CHECK(!(has_weights && (weights.dim() != 1 || weights.size(0) != self.size(0))),
              "weights should be 1-d and have the same length as input");
  const int64_t nbins = std::max(max + 1, minlength);
  const int64_t n = self.numel();
  if (has_weights) {
    // Float weights sum in float, any others in double (CPU's two instantiations).
    const auto type = weights.scalar_type() == at::kFloat ? at::kFloat : at::kDouble;
    check_device_supports(type, device_index(self), "bincount");
    Tensor out = at::zeros({nbins}, weights.options().dtype(type));
    const Tensor index = self.scalar_type() == at::kInt ? self : self.to(at::kLong);
    segment_sums_into(out, 0, index, weights.to(type), /*accumulate=*/true);
    return out;
  }
  if (n >= INT_MAX) {  // past int32 counts: the segment sums of ones
    Tensor out = at::zeros({nbins}, self.options().dtype(at::kLong));
    segment_sums_into(out, 0, self.to(at::kLong), at::ones({1}, out.options()).expand({n}), /*accumulate=*/true);
    return out;
  }
  return bin_counts(self.contiguous(), "count_values", nbins).to(at::kLong);
}

// ---- histc ----

// CPU's bins_edges_correction: an empty range widens by one either side, or to the next representable values where
// those lie further out.
template <class T>
void widen_range(double& lo, double& hi) {
  lo = std::min(static_cast<double>(std::nexttoward(static_cast<T>(lo), std::numeric_limits<T>::lowest())), lo - 1.);
  hi = std::max(static_cast<double>(std::nexttoward(static_cast<T>(hi), std::numeric_limits<T>::max())), hi + 1.);
}

Tensor& histc_out(const Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max, Tensor& hist) {
  check_same_device({self, hist});
  const c10::DeviceGuard guard(self.device());
  const auto type = self.scalar_type();
  TORCH_CHECK(type == hist.scalar_type(), "torch.histogram: input tensor and hist tensor should have the same dtype,",
              " but got input ", self.dtype(), " and hist ", hist.dtype());
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension ", 0);
  // CPU counts in the input's own type: half and bfloat16 round every step, which float here would not.
  if (type != at::kFloat && type != at::kDouble)
    throw_dtype_not_native(c10::str("histc of ", type, " (float32 and float64 are native)"));
  at::native::resize_output(hist, {bins});
  double lo = min.to<double>(), hi = max.to<double>();
  if (lo == hi && self.numel() > 0) {
    const auto [mn, mx] = at::aminmax(self);
    const auto extrema = at::stack({mn, mx}).to(at::kDouble).cpu();
    lo = extrema[0].item<double>();
    hi = extrema[1].item<double>();
  }
  if (lo == hi) {
    if (type == at::kFloat)
      widen_range<float>(lo, hi);
    else
      widen_range<double>(lo, hi);
  }
  TORCH_CHECK(!(std::isinf(lo) || std::isinf(hi) || std::isnan(lo) || std::isnan(hi)), "torch.histc: range of [", lo,
              ", ", hi, "] is not finite");
  TORCH_CHECK(lo < hi, "torch.histc: max must be larger than min");
  const int64_t n = self.numel();
  if (n == 0) return hist.zero_();
  TORCH_CHECK(n < INT_MAX, "histc: ", n, " elements are more than opencl counts (at most ", INT_MAX - 1, ")");
  // The outermost bin edges in the input's type, as CPU's linspace makes them.
  const float lo_f = static_cast<float>(lo), hi_f = static_cast<float>(hi);
  const bool is_float = type == at::kFloat;
  const tocl::RawArg lo_arg = is_float ? tocl::RawArg{sizeof(float), &lo_f} : tocl::RawArg{sizeof(double), &lo};
  const tocl::RawArg hi_arg = is_float ? tocl::RawArg{sizeof(float), &hi_f} : tocl::RawArg{sizeof(double), &hi};
  hist.copy_(bin_counts(self.contiguous(), "histc_counts", bins, lo_arg, hi_arg));
  return hist;
}

Tensor histc(const Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max) {
  Tensor hist = at::empty({0}, self.options());
  return histc_out(self, bins, min, max, hist);
}

}  // namespace

TOCL_LIBRARY_IMPL(m) {
  m.impl("bincount", TORCH_FN(bincount));
  m.impl("histc", TORCH_FN(histc));
  m.impl("histc.out", TORCH_FN(histc_out));
}

}  // namespace torch_opencl
