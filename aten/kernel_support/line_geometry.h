#pragma once
// Launch geometry of the row-wise kernels' GPU forms (kernels_cl/line_reduce.cl): `lines` lines of
// `n` elements, either contiguous rows (inner == 1) or the columns of an (outer, n, inner) tensor
// (inner > 1, adjacent lines on adjacent columns). Sizes come from runtime/kernel_forms.h.
#include <cstddef>
#include <cstdint>

namespace torch_opencl {

struct LineLaunch {
  int seg;        // work-items per line: a power of two that divides the group
  size_t global;  // whole groups
  size_t local;   // the row group (WG of the sources)
};

LineLaunch line_launch(int device, int64_t n, int64_t inner, int64_t lines);

// The smallest power of two >= v (1 for v <= 1).
int64_t pow2_at_least(int64_t v);

}  // namespace torch_opencl
