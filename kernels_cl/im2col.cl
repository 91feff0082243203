// im2col and col2im for 1-D/2-D convolution (1-D as height 1), and the layout changes around the
// GEMMs. The host prepends the prelude and `#define T float|double`; every size is an argument.
// The input/grad_input are contiguous (N, C, H, W); col element (n, k, l) with
// k = (c * KH + ki) * KW + kj and l = oy * OW + ox lives at n * col_sn + k * col_sk + l * col_sl.
// im2col/col2im: each work-item walks a row of outputs or a plane of the input (64-bit divisions cost tens
// of cycles on CPUs, and vector units have none): the index arithmetic is per row or plane, not per element.
// (A one-work-item-per-element rewrite with 32-bit float-reciprocal divisions measured slower on PoCL: 2.2
// vs 1.6 ms for the digits CNN's 64x16x8x8 im2col, 1.1 vs 0.8 ms for its col2im.)

typedef struct {
  long C, H, W, KH, KW, PH, PW, SH, SW, DH, DW, OH, OW;
} ConvShape;

// The patches are col's rows (col_sk == 1, the host's layout): output position l of sample n is the row at
// n * col_sn + l * col_sl, its K = C * KH * KW values in the order (c, ki, kj).

// One work-item per (n, oy): the rows of output positions l = oy * OW + ox, written in sequence. total = N * OH.
// (A work-item per (n, k, oy) wrote OW values col_sl apart, each to its own cache line, after five 64-bit
// divisions: the digits CNN's im2col took 1 ms a launch on PoCL.)
__kernel void im2col(__global const T* in, ulong in_offset, __global T* col, ulong col_offset,
                     ConvShape g, long col_sn, long col_sk, long col_sl, long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const long oy = i % g.OH, n = i / g.OH;
  __global const T* sample = in + in_offset + n * g.C * g.H * g.W;
  __global T* row = col + col_offset + n * col_sn + oy * g.OW * col_sl;
  for (long ox = 0; ox < g.OW; ++ox, row += col_sl) {
    long k = 0;
    for (long c = 0; c < g.C; ++c) {
      __global const T* plane = sample + c * g.H * g.W;
      for (long ki = 0; ki < g.KH; ++ki) {
        const long y = oy * g.SH - g.PH + ki * g.DH;
        const int inside_y = y >= 0 && y < g.H;
        for (long kj = 0; kj < g.KW; ++kj, ++k) {
          const long x = ox * g.SW - g.PW + kj * g.DW;
          row[k] = (inside_y && x >= 0 && x < g.W) ? plane[y * g.W + x] : (T)0;
        }
      }
    }
  }
}

// One work-item per (n, c) plane of the input gradient: zeroed, then each output position's KH * KW values
// for channel c (adjacent in its col row) added into the pixels they came from; no two items share a pixel,
// so no atomics. total = N * C. (A work-item per input row gathered each pixel's values, col_sl apart.)
__kernel void col2im(__global const T* col, ulong col_offset, __global T* out, ulong out_offset,
                     ConvShape g, long col_sn, long col_sk, long col_sl, long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const long c = i % g.C, n = i / g.C;
  __global T* plane = out + out_offset + i * g.H * g.W;
  for (long p = 0; p < g.H * g.W; ++p) plane[p] = (T)0;
  __global const T* src = col + col_offset + n * col_sn + c * g.KH * g.KW;
  for (long oy = 0; oy < g.OH; ++oy) {
    for (long ox = 0; ox < g.OW; ++ox) {
      __global const T* patch = src + (oy * g.OW + ox) * col_sl;
      for (long ki = 0; ki < g.KH; ++ki) {
        const long y = oy * g.SH - g.PH + ki * g.DH;
        if (y < 0 || y >= g.H) continue;
        for (long kj = 0; kj < g.KW; ++kj) {
          const long x = ox * g.SW - g.PW + kj * g.DW;
          if (x >= 0 && x < g.W) plane[y * g.W + x] += patch[ki * g.KW + kj];
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

// The CPU forms of the two (kernel_forms' copy_lines): a work-item per output line, its index found once
// and its elements walked in a loop (the per-element forms took about 1.4 ns an element on PoCL, mostly
// their two divisions). rows_to_channels_lines: line (n, o) of L outputs, reading rows O apart;
// channels_to_rows_lines: row (n, l) of O outputs, reading L apart. lines = samples * O (* L).
__kernel void rows_to_channels_lines(__global const T* rows, ulong rows_offset, __global T* out, ulong out_offset,
                                     __global const T* bias, ulong bias_offset, int has_bias, int O, int L,
                                     int lines) {
  const int t = get_global_id(0);
  if (t >= lines) return;
  const int n = t / O, o = t - n * O;
  const T b = has_bias ? bias[bias_offset + o] : (T)0;
  __global const T* src = rows + rows_offset + n * L * O + o;
  __global T* dst = out + out_offset + t * L;
  for (int l = 0; l < L; ++l) dst[l] = src[l * O] + b;
}

__kernel void channels_to_rows_lines(__global const T* in, ulong in_offset, __global T* rows, ulong rows_offset, int O,
                                     int L, int lines) {
  const int t = get_global_id(0);
  if (t >= lines) return;
  const int n = t / L, l = t - n * L;
  __global const T* src = in + in_offset + n * O * L + l;
  __global T* dst = rows + rows_offset + t * O;
  for (int o = 0; o < O; ++o) dst[o] = src[o * L];
}

// --- GPU forms (runtime/kernel_forms.h: conv_batch_folded): the batch folded into the GEMM's columns.
// col is (C * KH * KW, N * L) row-major: element (k, n * L + l). One work-item per element, the
// fastest index along contiguous memory, 32-bit index math (the host checks that it fits).

// col[k][n * L + l] = the input pixel patch position k of output position l of sample n sees (0 in padding).
__kernel void im2col_folded(__global const T* in, ulong in_offset, __global T* col, ulong col_offset, ConvShape g,
                            int total) {
  const int e = get_global_id(0);
  if (e >= total) return;
  const int L = (int)(g.OH * g.OW), NL = total / (int)(g.C * g.KH * g.KW);
  const int j = e % NL, k = e / NL;
  const int n = j / L, l = j % L;
  const int oy = l / (int)g.OW, ox = l % (int)g.OW;
  const int kj = k % (int)g.KW, ki = (k / (int)g.KW) % (int)g.KH, c = k / (int)(g.KH * g.KW);
  const int y = oy * (int)g.SH - (int)g.PH + ki * (int)g.DH;
  const int x = ox * (int)g.SW - (int)g.PW + kj * (int)g.DW;
  const bool inside = y >= 0 && y < (int)g.H && x >= 0 && x < (int)g.W;
  col[col_offset + e] = inside ? in[in_offset + (((long)n * g.C + c) * g.H + y) * g.W + x] : (T)0;
}

// out[n][c][y][x] = the sum of the col entries that input pixel fed (a gather: no atomics).
// total = N * C * H * W; NL = N * OH * OW.
__kernel void col2im_folded(__global const T* col, ulong col_offset, __global T* out, ulong out_offset, ConvShape g,
                            int NL, int total) {
  const int e = get_global_id(0);
  if (e >= total) return;
  const int x = e % (int)g.W, y = (e / (int)g.W) % (int)g.H;
  const int c = (e / (int)(g.W * g.H)) % (int)g.C, n = e / (int)(g.W * g.H * g.C);
  const int L = (int)(g.OH * g.OW);
  T sum = (T)0;
  for (int ki = 0; ki < (int)g.KH; ++ki) {
    const int yy = y + (int)g.PH - ki * (int)g.DH;
    if (yy < 0 || yy % (int)g.SH) continue;
    const int oy = yy / (int)g.SH;
    if (oy >= (int)g.OH) continue;
    for (int kj = 0; kj < (int)g.KW; ++kj) {
      const int xx = x + (int)g.PW - kj * (int)g.DW;
      if (xx < 0 || xx % (int)g.SW) continue;
      const int ox = xx / (int)g.SW;
      if (ox >= (int)g.OW) continue;
      const int k = (c * (int)g.KH + ki) * (int)g.KW + kj;
      sum += col[col_offset + (long)k * NL + n * L + oy * (int)g.OW + ox];
    }
  }
  out[out_offset + e] = sum;
}
