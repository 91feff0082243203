// Random distributions over a counter-based Philox-4x32-10 generator, one
// program per output dtype (aten/native/random.cpp prepends the prelude and
//   OUT_T, LOAD_OUT, STORE_OUT   the output operand (operand_defines)
//   F_IS_DOUBLE                  1 when the output is float64: uniforms then carry 53 bits
// Each kernel's loop over its PER_ITEM elements is unrolled (#pragma unroll): PoCL left a loop with a large
// body (normal's log, cos and sin) rolled, its uniforms in memory, and the kernel scalar (randn of 1M
// floats 11.3 -> 2.7 ms).
// Work item g draws one Philox block: counter = block + g (64 bits, words 0-1),
// key = the seed. A block is four 32-bit draws; a work item fills PER_ITEM
// consecutive elements from it (4 from 32-bit draws, 2 from 64-bit ones), so a
// call consumes 4 * ceil(n / PER_ITEM) draws and the generator's offset advances by that.

#include "philox.cl"

inline ulong join64(uint lo, uint hi) { return ((ulong)hi << 32) | (ulong)lo; }

#if F_IS_DOUBLE
#define F_T double
#define PER_ITEM 2
// [0, 1) with 53 random bits.
inline void uniforms(uint4 r, F_T* u) {
  u[0] = (double)(join64(r.x, r.y) & ((1ul << 53) - 1)) * (1.0 / 9007199254740992.0);
  u[1] = (double)(join64(r.z, r.w) & ((1ul << 53) - 1)) * (1.0 / 9007199254740992.0);
}
#else
#define F_T float
#define PER_ITEM 4
// [0, 1) with 24 random bits.
inline void uniforms(uint4 r, F_T* u) {
  u[0] = (float)(r.x & 0xffffffu) * (1.0f / 16777216.0f);
  u[1] = (float)(r.y & 0xffffffu) * (1.0f / 16777216.0f);
  u[2] = (float)(r.z & 0xffffffu) * (1.0f / 16777216.0f);
  u[3] = (float)(r.w & 0xffffffu) * (1.0f / 16777216.0f);
}
#endif

// The per-item prologue: `first` is the item's first element, `u` its uniforms.
#define DRAW_UNIFORMS(per_item)                      \
  const ulong g = get_global_id(0);                  \
  const ulong first = g * (per_item);                \
  if (first >= n) return;                            \
  F_T u[PER_ITEM];                                   \
  uniforms(draw_block(seed, block + g), u);

__kernel void uniform(__global OUT_T* out, ulong out_offset, ulong n, ulong seed, ulong block, F_T from, F_T range) {
  DRAW_UNIFORMS(PER_ITEM)
#pragma unroll
  for (int j = 0; j < PER_ITEM; ++j) {
    if (first + j < n) {
      F_T v = from + u[j] * range;
      if (v >= from + range && range > (F_T)0) v = from;  // rounding reached `to`: keep [from, to)
      STORE_OUT(out, out_offset + first + j, v);
    }
  }
}

// Box-Muller over a pair of uniforms: the radius from u0 (1 - u0 in (0, 1]) and the cos and sin of the angle
// 2 pi u1 (floats through philox.cl's quarter-turn split); normal and log_normal take the two normals as
// mean + std * radius * c and mean + std * radius * s.
inline __attribute__((always_inline)) void box_muller(F_T u0, F_T u1, F_T* radius, F_T* c, F_T* s) {
  *radius = sqrt((F_T)-2 * log((F_T)1 - u0));
#if F_IS_DOUBLE
  const F_T theta = (F_T)(2.0 * M_PI) * u1;
  *c = cos(theta);
  *s = sin(theta);
#else
  tocl_cos_sin_turn(u1, c, s);
#endif
}

__kernel void normal(__global OUT_T* out, ulong out_offset, ulong n, ulong seed, ulong block, F_T mean, F_T std) {
  DRAW_UNIFORMS(PER_ITEM)
#pragma unroll
  for (int j = 0; j < PER_ITEM; j += 2) {
    F_T radius, c, s;
    box_muller(u[j], u[j + 1], &radius, &c, &s);
    if (first + j < n) STORE_OUT(out, out_offset + first + j, mean + std * radius * c);
    if (first + j + 1 < n) STORE_OUT(out, out_offset + first + j + 1, mean + std * radius * s);
  }
}

__kernel void exponential(__global OUT_T* out, ulong out_offset, ulong n, ulong seed, ulong block, F_T lambd) {
  DRAW_UNIFORMS(PER_ITEM)
#pragma unroll
  for (int j = 0; j < PER_ITEM; ++j)
    if (first + j < n) STORE_OUT(out, out_offset + first + j, -log1p(-u[j]) / lambd);
}

__kernel void bernoulli_scalar(__global OUT_T* out, ulong out_offset, ulong n, ulong seed, ulong block, F_T p) {
  DRAW_UNIFORMS(PER_ITEM)
#pragma unroll
  for (int j = 0; j < PER_ITEM; ++j)
    if (first + j < n) STORE_OUT(out, out_offset + first + j, u[j] < p ? 1 : 0);
}

// p: one probability per element (contiguous, F_T).
__kernel void bernoulli_tensor(__global OUT_T* out, ulong out_offset, ulong n, ulong seed, ulong block,
                               __global const F_T* p, ulong p_offset) {
  DRAW_UNIFORMS(PER_ITEM)
#pragma unroll
  for (int j = 0; j < PER_ITEM; ++j)
    if (first + j < n) STORE_OUT(out, out_offset + first + j, u[j] < p[p_offset + first + j] ? 1 : 0);
}

// Dropout: mask = u < keep, out = mask ? in * scale : 0 (in contiguous, the output's dtype).
// restrict (the host passes a fresh output and mask) lets the vectoriser reorder the loads and stores.
__kernel void dropout(__global OUT_T* restrict out, ulong out_offset, ulong n, ulong seed, ulong block,
                      __global const OUT_T* restrict in, ulong in_offset, __global uchar* restrict mask,
                      ulong mask_offset, F_T keep, F_T scale) {
  DRAW_UNIFORMS(PER_ITEM)
#pragma unroll
  for (int j = 0; j < PER_ITEM; ++j) {
    const ulong i = first + j;
    if (i < n) {
      const uchar m = u[j] < keep;
      mask[mask_offset + i] = m;
      STORE_OUT(out, out_offset + i, m ? (F_T)LOAD_OUT(in, in_offset + i) * scale : (F_T)0);
    }
  }
}

// Integers from + (draw mod range), range in [1, 2^32]: four elements per block.
__kernel void random_range32(__global OUT_T* out, ulong out_offset, ulong n, ulong seed, ulong block, long from,
                             ulong range) {
  const ulong g = get_global_id(0);
  const ulong first = g * 4;
  if (first >= n) return;
  const uint4 r = draw_block(seed, block + g);
  const uint d[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (first + j < n) STORE_OUT(out, out_offset + first + j, from + (long)((ulong)d[j] % range));
}

// The same from 64-bit draws, two elements per block; range 0 means all 2^64 values.
__kernel void random_range64(__global OUT_T* out, ulong out_offset, ulong n, ulong seed, ulong block, long from,
                             ulong range) {
  const ulong g = get_global_id(0);
  const ulong first = g * 2;
  if (first >= n) return;
  const uint4 r = draw_block(seed, block + g);
  const ulong d[2] = {join64(r.x, r.y), join64(r.z, r.w)};
#pragma unroll
  for (int j = 0; j < 2; ++j)
    if (first + j < n) STORE_OUT(out, out_offset + first + j, range == 0 ? (long)d[j] : from + (long)(d[j] % range));
}

// exp of a Box-Muller normal(mean, std).
__kernel void log_normal(__global OUT_T* out, ulong out_offset, ulong n, ulong seed, ulong block, F_T mean, F_T std) {
  DRAW_UNIFORMS(PER_ITEM)
#pragma unroll
  for (int j = 0; j < PER_ITEM; j += 2) {
    F_T radius, c, s;
    box_muller(u[j], u[j + 1], &radius, &c, &s);
    if (first + j < n) STORE_OUT(out, out_offset + first + j, exp(mean + std * radius * c));
    if (first + j + 1 < n) STORE_OUT(out, out_offset + first + j + 1, exp(mean + std * radius * s));
  }
}

// The number of Bernoulli(p) trials up to the first success: ceil(log(v) / log1p(-p)), v = 1 - u in (0, 1].
__kernel void geometric(__global OUT_T* out, ulong out_offset, ulong n, ulong seed, ulong block, F_T log1m_p) {
  DRAW_UNIFORMS(PER_ITEM)
#pragma unroll
  for (int j = 0; j < PER_ITEM; ++j)
    if (first + j < n) STORE_OUT(out, out_offset + first + j, fmax(ceil(log((F_T)1 - u[j]) / log1m_p), (F_T)1));
}

// median + sigma * tan(pi * (u - 1/2)).
__kernel void cauchy(__global OUT_T* out, ulong out_offset, ulong n, ulong seed, ulong block, F_T median, F_T sigma) {
  DRAW_UNIFORMS(PER_ITEM)
#pragma unroll
  for (int j = 0; j < PER_ITEM; ++j)
    if (first + j < n) STORE_OUT(out, out_offset + first + j, median + sigma * tan((F_T)M_PI * (u[j] - (F_T)0.5)));
}
