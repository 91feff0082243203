// im2col and col2im for 1-D/2-D convolution (1-D as height 1), and the layout changes around the
// GEMMs. The host prepends the prelude and `#define T float|double`; every size is an argument.
// The input/grad_input are contiguous (N, C, H, W); col element (n, k, l) with
// k = (c * KH + ki) * KW + kj and l = oy * OW + ox lives at n * col_sn + k * col_sk + l * col_sl.
// im2col/col2im: each work-item walks one row (64-bit divisions cost tens of cycles on CPUs, and
// vector units have none): the index arithmetic is per row, not per element. (A one-work-item-per-
// element rewrite with 32-bit float-reciprocal divisions measured slower on PoCL: 2.2 vs 1.6 ms for
// the digits CNN's 64x16x8x8 im2col, 1.1 vs 0.8 ms for its col2im.)

typedef struct {
  long C, H, W, KH, KW, PH, PW, SH, SW, DH, DW, OH, OW;
} ConvShape;

// One work-item per (n, k, oy): the OW entries of col for that output row. total = N * C * KH * KW * OH.
__kernel void im2col(__global const T* in, ulong in_offset, __global T* col, ulong col_offset,
                     ConvShape g, long col_sn, long col_sk, long col_sl, long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const long rows = g.C * g.KH * g.KW;
  const long oy = i % g.OH, r = i / g.OH;
  const long k = r % rows, n = r / rows;
  const long kj = k % g.KW, ki = (k / g.KW) % g.KH, c = k / (g.KH * g.KW);
  const long y = oy * g.SH - g.PH + ki * g.DH;
  __global T* dst = col + col_offset + n * col_sn + k * col_sk + oy * g.OW * col_sl;
  if (y < 0 || y >= g.H) {
    for (long ox = 0; ox < g.OW; ++ox) dst[ox * col_sl] = (T)0;
    return;
  }
  __global const T* src = in + in_offset + ((n * g.C + c) * g.H + y) * g.W;
  long x = kj * g.DW - g.PW;
  for (long ox = 0; ox < g.OW; ++ox, x += g.SW) dst[ox * col_sl] = (x >= 0 && x < g.W) ? src[x] : (T)0;
}

// One work-item per (n, c, y) input row: each element gathers the col entries it fed (no atomics).
// total = N * C * H.
__kernel void col2im(__global const T* col, ulong col_offset, __global T* out, ulong out_offset,
                     ConvShape g, long col_sn, long col_sk, long col_sl, long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const long y = i % g.H, c = (i / g.H) % g.C, n = i / (g.H * g.C);
  __global T* dst = out + out_offset + i * g.W;
  for (long x = 0; x < g.W; ++x) dst[x] = (T)0;
  for (long ki = 0; ki < g.KH; ++ki) {
    const long yy = y + g.PH - ki * g.DH;
    if (yy < 0 || (g.SH > 1 && yy % g.SH)) continue;
    const long oy = g.SH > 1 ? yy / g.SH : yy;
    if (oy >= g.OH) continue;
    for (long kj = 0; kj < g.KW; ++kj) {
      __global const T* src =
          col + col_offset + n * col_sn + ((c * g.KH + ki) * g.KW + kj) * col_sk + oy * g.OW * col_sl;
      const long shift = g.PW - kj * g.DW;  // xx = x + shift
      if (g.SW == 1) {
        // ox = x + shift within [0, OW)
        const long lo = max(0L, -shift), hi = min(g.W, g.OW - shift);
        for (long x = lo; x < hi; ++x) dst[x] += src[(x + shift) * col_sl];
      } else {
        for (long x = 0; x < g.W; ++x) {
          const long xx = x + shift;
          if (xx < 0 || xx % g.SW) continue;
          const long ox = xx / g.SW;
          if (ox < g.OW) dst[x] += src[ox * col_sl];
        }
      }
    }
  }
}

// The layout changes around the GEMMs: one work-item per element, 32-bit index math (the host
// launches chunks of whole samples under 2^22 elements) and divisions by the float reciprocal, so
// PoCL vectorises them across work-items (vector units have no integer division).

#include "fast_div.cl"

// rows (N * L, O) -> out (N, O, L) contiguous, plus bias[o] when has_bias. total = samples * O * L.
__kernel void rows_to_channels(__global const T* rows, ulong rows_offset, __global T* out, ulong out_offset,
                               __global const T* bias, ulong bias_offset, int has_bias, int O, int L, float inv_O,
                               float inv_L, int total) {
  const int e = get_global_id(0);
  if (e >= total) return;
  const int t = fast_div(e, L, inv_L);
  const int l = e - t * L;
  const int n = fast_div(t, O, inv_O);
  const int o = t - n * O;
  const T b = bias[bias_offset + (has_bias ? o : 0)];
  out[out_offset + e] = rows[rows_offset + (n * L + l) * O + o] + (has_bias ? b : (T)0);
}

// in (N, O, L) contiguous -> rows (N * L, O). total = samples * L * O.
__kernel void channels_to_rows(__global const T* in, ulong in_offset, __global T* rows, ulong rows_offset, int O,
                               int L, float inv_O, float inv_L, int total) {
  const int e = get_global_id(0);
  if (e >= total) return;
  const int t = fast_div(e, O, inv_O);
  const int o = e - t * O;
  const int n = fast_div(t, L, inv_L);
  const int l = t - n * L;
  rows[rows_offset + e] = in[in_offset + (n * O + o) * L + l];
}

