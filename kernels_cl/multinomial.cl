// torch.multinomial with replacement (aten/native/sampling.cpp): one work-item per sample draws one
// Philox block, scales a uniform in (0, 1] by its row's total and binary-searches the row's cumulative
// sums (P_T: float or double) for the first category whose sum reaches it. A category of probability 0
// adds nothing to the sums, so the search never stops on one: u > 0 skips leading zeros, u * total <=
// total stops at the last category that has probability. The host prepends the prelude and
//   P_T, P_IS_DOUBLE   the sums' type (double draws 53-bit uniforms, float 24-bit ones)

#include "philox.cl"

__kernel void multinomial_with_replacement(__global const P_T* cdf, ulong cdf_off, __global long* out, ulong out_off,
                                           int n_categories, int n_sample, ulong total, ulong seed, ulong block) {
  const ulong g = get_global_id(0);
  if (g >= total) return;
  const ulong row = g / (ulong)n_sample;
  __global const P_T* sums = cdf + cdf_off + row * (ulong)n_categories;
  const uint4 r = draw_block(seed, block + g);
#if P_IS_DOUBLE
  const ulong bits = (((ulong)r.y << 32) | (ulong)r.x) & ((1ul << 53) - 1);
  const P_T u = 1.0 - (double)bits * (1.0 / 9007199254740992.0);
#else
  const P_T u = 1.0f - (float)(r.x & 0xffffffu) * (1.0f / 16777216.0f);
#endif
  const P_T target = u * sums[n_categories - 1];
  int lo = 0, hi = n_categories - 1;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (sums[mid] < target) lo = mid + 1;
    else hi = mid;
  }
  out[out_off + g] = lo;
}
