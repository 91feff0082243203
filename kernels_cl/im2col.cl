// im2col and col2im for 1-D/2-D convolution (1-D as height 1). The host
// prepends the prelude and `#define T float|double`; every size is an argument.
// The input/grad_input are contiguous (N, C, H, W); col element (n, k, l) with
// k = (c * KH + ki) * KW + kj and l = oy * OW + ox lives at n * col_sn + k * col_sk + l.

typedef struct {
  long C, H, W, KH, KW, PH, PW, SH, SW, DH, DW, OH, OW;
} ConvGeometry;

__kernel void im2col(__global const T* in, ulong in_offset, __global T* col, ulong col_offset,
                     ConvGeometry g, long col_sn, long col_sk, long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const long L = g.OH * g.OW, rows = g.C * g.KH * g.KW;
  const long l = i % L, r = i / L;
  const long k = r % rows, n = r / rows;
  const long kj = k % g.KW, ki = (k / g.KW) % g.KH, c = k / (g.KH * g.KW);
  const long oy = l / g.OW, ox = l % g.OW;
  const long y = oy * g.SH - g.PH + ki * g.DH, x = ox * g.SW - g.PW + kj * g.DW;
  T v = (T)0;
  if (y >= 0 && y < g.H && x >= 0 && x < g.W) v = in[in_offset + ((n * g.C + c) * g.H + y) * g.W + x];
  col[col_offset + n * col_sn + k * col_sk + l] = v;
}

// Each input element gathers the col entries it fed (no atomics).
__kernel void col2im(__global const T* col, ulong col_offset, __global T* out, ulong out_offset,
                     ConvGeometry g, long col_sn, long col_sk, long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const long x = i % g.W, y = (i / g.W) % g.H, c = (i / (g.W * g.H)) % g.C, n = i / (g.W * g.H * g.C);
  T sum = (T)0;
  for (long ki = 0; ki < g.KH; ++ki) {
    const long yy = y + g.PH - ki * g.DH;
    if (yy < 0 || yy % g.SH) continue;
    const long oy = yy / g.SH;
    if (oy >= g.OH) continue;
    for (long kj = 0; kj < g.KW; ++kj) {
      const long xx = x + g.PW - kj * g.DW;
      if (xx < 0 || xx % g.SW) continue;
      const long ox = xx / g.SW;
      if (ox >= g.OW) continue;
      sum += col[col_offset + n * col_sn + ((c * g.KH + ki) * g.KW + kj) * col_sk + oy * g.OW + ox];
    }
  }
  out[out_offset + i] = sum;
}
