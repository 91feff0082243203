#include "aten/kernel_support/line_geometry.h"

#include <algorithm>

#include "runtime/kernel_forms.h"

namespace torch_opencl {

int64_t pow2_at_least(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

LineLaunch line_launch(int device, int64_t n, int64_t inner, int64_t lines) {
  const auto& f = tocl::kernel_forms(device);
  const auto wg = static_cast<int64_t>(f.row_group);
  // Columns: at least column_lines adjacent columns per group (as many as there are), so the
  // items at one position of their lines read a coalesced run.
  const int64_t widest = inner > 1 ? wg / std::min<int64_t>(static_cast<int64_t>(f.column_lines), pow2_at_least(inner)) : wg;
  const auto line_items = static_cast<int64_t>(std::max<size_t>(1, f.line_items));
  int64_t seg = std::min(widest, pow2_at_least((n + line_items - 1) / line_items));
  const auto groups = [&](int64_t s) {
    const int64_t per_group = wg / s;
    return (lines + per_group - 1) / per_group;
  };
  // Too few groups to occupy the device: spread each line over more items while they get work.
  while (seg < widest && 2 * seg <= n && groups(seg) < static_cast<int64_t>(f.busy_groups)) seg *= 2;
  return {static_cast<int>(seg), static_cast<size_t>(groups(seg) * wg), static_cast<size_t>(wg)};
}

}  // namespace torch_opencl
