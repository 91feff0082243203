// F.unfold and F.fold: aten::im2col and aten::col2im in the operators' own layout. The image is
// (N, C, H, W), the columns (N, C * KH * KW, L) with row k = (c * KH + ki) * KW + kj and column
// l = oy * OW + ox (OH x OW sliding blocks). The host reads inputs through their strides (no copy for
// channels_last or other views) and writes contiguous outputs.
// Two forms (runtime/kernel_forms.h's copy_lines): rows, a work-item per line of the output walking it
// with 64-bit index math once per line (CPUs); elements, a work-item per output element, neighbours on
// neighbouring elements (GPUs), with 32-bit index math (the host launches chunks of whole samples of
// fewer than 2^31 elements, each shifting the buffers' offsets).
// fold sums, per image element, the columns that hold it in the order (ki, kj) of CPU's col2im, each sum
// rounded to T as it goes (ROUND_T, from the host: CPU adds in T for half, bfloat16 and bool), so the
// results equal CPU's.

typedef struct {
  long C, H, W, KH, KW, PH, PW, SH, SW, DH, DW, OH, OW;
} Blocks;

typedef struct {
  long n, c, h, w;  // strides of the image (unfold's input), in elements
} ImageStrides;

typedef struct {
  long n, k, l;  // strides of the columns (fold's input), in elements
} ColumnStrides;

// unfold, rows: a work-item per (n, k, oy), writing the OW columns of that row. total = N * K * OH.
__kernel void unfold_rows(__global T_T* col, ulong col_offset, __global const T_T* in, ulong in_offset,
                          ImageStrides s, Blocks g, long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const long oy = i % g.OH, t = i / g.OH;
  const long K = g.C * g.KH * g.KW;
  const long k = t % K, n = t / K;
  const long kj = k % g.KW, ki = (k / g.KW) % g.KH, c = k / (g.KH * g.KW);
  const long y = oy * g.SH - g.PH + ki * g.DH;
  __global T_T* dst = col + col_offset + i * g.OW;
  if (y < 0 || y >= g.H) {
    for (long ox = 0; ox < g.OW; ++ox) STORE_T(dst, ox, (ACC)0);
    return;
  }
  __global const T_T* src = in + in_offset + n * s.n + c * s.c + y * s.h;
  const long x0 = kj * g.DW - g.PW;
  for (long ox = 0; ox < g.OW; ++ox) {
    const long x = x0 + ox * g.SW;
    const bool inside = x >= 0 && x < g.W;
    const ACC v = LOAD_T(src, inside ? x * s.w : 0);
    STORE_T(dst, ox, inside ? v : (ACC)0);
  }
}

// unfold, elements: a work-item per column element of `samples` samples. total = samples * K * L.
__kernel void unfold_elements(__global T_T* col, ulong col_offset, __global const T_T* in, ulong in_offset,
                              ImageStrides s, Blocks g, int total) {
  const int e = get_global_id(0);
  if (e >= total) return;
  const int OW = (int)g.OW, KW = (int)g.KW, KH = (int)g.KH;
  const int L = (int)g.OH * OW, K = (int)g.C * KH * KW;
  const int t = e / L, l = e - t * L;
  const int n = t / K, k = t - n * K;
  const int oy = l / OW, ox = l - oy * OW;
  const int kj = k % KW, ki = (k / KW) % KH, c = k / (KH * KW);
  const int y = oy * (int)g.SH - (int)g.PH + ki * (int)g.DH;
  const int x = ox * (int)g.SW - (int)g.PW + kj * (int)g.DW;
  const bool inside = y >= 0 && y < (int)g.H && x >= 0 && x < (int)g.W;
  const ACC v = LOAD_T(in, in_offset + (inside ? n * s.n + c * s.c + y * s.h + x * s.w : 0));
  STORE_T(col, col_offset + e, inside ? v : (ACC)0);
}

// fold, rows: a work-item per image row (n, c, y) of W elements, zeroed, then each block row that covers it
// added in, in CPU's order (ki, then kj; the row in memory rounds each sum to T). total = N * C * H.
__kernel void fold_rows(__global T_T* out, ulong out_offset, __global const T_T* col, ulong col_offset,
                        ColumnStrides s, Blocks g, long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const long y = i % g.H, t = i / g.H;
  const long c = t % g.C, n = t / g.C;
  __global T_T* dst = out + out_offset + i * g.W;
  for (long x = 0; x < g.W; ++x) STORE_T(dst, x, (ACC)0);
  for (long ki = 0; ki < g.KH; ++ki) {
    const long yy = y + g.PH - ki * g.DH;  // oy * SH
    if (yy < 0 || yy % g.SH != 0 || yy / g.SH >= g.OH) continue;
    const long oy = yy / g.SH;
    for (long kj = 0; kj < g.KW; ++kj) {
      const long k = (c * g.KH + ki) * g.KW + kj;
      __global const T_T* src = col + col_offset + n * s.n + k * s.k + oy * g.OW * s.l;
      const long x0 = kj * g.DW - g.PW;
      for (long ox = 0; ox < g.OW; ++ox) {
        const long x = x0 + ox * g.SW;
        if (x >= 0 && x < g.W) STORE_T(dst, x, LOAD_T(dst, x) + LOAD_T(src, ox * s.l));
      }
    }
  }
}

// fold, elements: a work-item per image element of `samples` samples, gathering its columns.
// total = samples * C * H * W.
__kernel void fold_elements(__global T_T* out, ulong out_offset, __global const T_T* col, ulong col_offset,
                            ColumnStrides s, Blocks g, int total) {
  const int e = get_global_id(0);
  if (e >= total) return;
  const int W = (int)g.W, H = (int)g.H, C = (int)g.C, KH = (int)g.KH, KW = (int)g.KW;
  const int SH = (int)g.SH, SW = (int)g.SW, OH = (int)g.OH, OW = (int)g.OW;
  const int t = e / W, x = e - t * W;
  const int u = t / H, y = t - u * H;
  const int n = u / C, c = u - n * C;
  ACC acc = 0;
  for (int ki = 0; ki < KH; ++ki) {
    const int yy = y + (int)g.PH - ki * (int)g.DH;
    if (yy < 0) break;  // yy falls as ki grows
    const int oy = yy / SH;
    if (oy * SH != yy || oy >= OH) continue;
    for (int kj = 0; kj < KW; ++kj) {
      const int xx = x + (int)g.PW - kj * (int)g.DW;
      if (xx < 0) break;
      const int ox = xx / SW;
      if (ox * SW != xx || ox >= OW) continue;
      const int k = (c * KH + ki) * KW + kj;
      acc = ROUND_T(acc + LOAD_T(col, col_offset + n * s.n + k * s.k + (oy * OW + ox) * s.l));
    }
  }
  STORE_T(out, out_offset + e, acc);
}
