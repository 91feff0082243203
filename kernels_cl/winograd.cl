// Winograd F(2x2, 3x3) for 3x3, stride-1 convolutions (both kernel classes, aten/native/conv_winograd.cpp).
// A 2x2 block of outputs ("tile") comes from a 4x4 input patch with 16 multiplies per (in, out) channel
// pair instead of 36: Y = A^T [ (G g G^T) .* (B^T d B) ] A, the elementwise product summed over input
// channels as 16 GEMMs (one per position e of the 4x4 transformed tile) run by the batched tiled GEMM:
//   U[e] (R, Q) = the transformed filter,  V[e] (Q, P) = the transformed input patches,
//   M[e] (R, P) = U[e] @ V[e],             P = N * tiles_h * tiles_w tiles, p = (n * tiles_h + ty) * tiles_w + tx.
// The host prepends the dtype defines (T_T, ACC); sizes are arguments; index math is 32-bit (the host
// checks that every buffer has fewer than 2^31 elements).

// B^T d B for the 4x4 patch of every (channel q, tile p), the GPU form: one work-item each, consecutive work-items
// on consecutive tiles (coalesced stores of V). The patch of tile (ty, tx) starts at input row 2 ty - pad_h,
// column 2 tx - pad_w; positions outside the input read 0 (the padding; a negative pad crops).
// x has any strides. total = Q * P; V is (16, Q, P), its planes `plane` elements apart (rows contiguous).
__kernel void winograd_input(__global const T_T* x, ulong x_off, __global T_T* v, ulong v_off, int Q, int H, int W,
                             long x_sn, long x_sc, long x_sh, long x_sw, int pad_h, int pad_w, int tiles_h,
                             int tiles_w, int P, int plane) {
  const int i = get_global_id(0);
  if (i >= Q * P) return;
  const int q = i / P, p = i - q * P;
  const int tx = p % tiles_w, r = p / tiles_w;
  const int ty = r % tiles_h, n = r / tiles_h;
  const int y0 = 2 * ty - pad_h, x0 = 2 * tx - pad_w;
  __global const T_T* src = x + x_off + n * x_sn + q * x_sc;
  ACC d[4][4];
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const int y = y0 + a;
    const bool row_in = y >= 0 && y < H;
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const int xx = x0 + b;
      d[a][b] = (row_in && xx >= 0 && xx < W) ? (ACC)src[y * x_sh + xx * x_sw] : (ACC)0;
    }
  }
  // Rows: t = B^T d, with B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
  ACC t[4][4];
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    t[0][b] = d[0][b] - d[2][b];
    t[1][b] = d[1][b] + d[2][b];
    t[2][b] = d[2][b] - d[1][b];
    t[3][b] = d[1][b] - d[3][b];
  }
  // Columns: t B.
  __global T_T* dst = v + v_off + q * P + p;
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    dst[(4 * a + 0) * plane] = (T_T)(t[a][0] - t[a][2]);
    dst[(4 * a + 1) * plane] = (T_T)(t[a][1] + t[a][2]);
    dst[(4 * a + 2) * plane] = (T_T)(t[a][2] - t[a][1]);
    dst[(4 * a + 3) * plane] = (T_T)(t[a][1] - t[a][3]);
  }
}

// The CPU form (kernel_forms' winograd_lines): a work-item per row of tiles (q, n, ty), sliding along it. Each
// input column is read once (its B^T transform kept for the next tile, which shares two columns), and the
// index arithmetic is per row. total = Q * N * tiles_h.
__kernel void winograd_input_lines(__global const T_T* x, ulong x_off, __global T_T* v, ulong v_off, int Q, int H,
                                   int W, long x_sn, long x_sc, long x_sh, long x_sw, int pad_h, int pad_w,
                                   int tiles_h, int tiles_w, int P, int plane) {
  const int rows = P / tiles_w;
  const int i = get_global_id(0);
  if (i >= Q * rows) return;
  const int q = i / rows, row = i - q * rows;
  const int n = row / tiles_h, ty = row - n * tiles_h;
  __global const T_T* src = x + x_off + n * x_sn + q * x_sc;
  __global T_T* dst = v + v_off + q * P + row * tiles_w;
  bool row_in[4];
  long row_at[4];
#pragma unroll
  for (int a = 0; a < 4; ++a) {
    const int y = 2 * ty - pad_h + a;
    row_in[a] = y >= 0 && y < H;
    row_at[a] = y * x_sh;
  }
  // c[j][b]: B^T applied to column b of the current 4x4 window. Columns 2 and 3 become the next tile's 0 and 1.
  ACC c[4][4];
#pragma unroll
  for (int j = 0; j < 4; ++j) c[j][2] = c[j][3] = (ACC)0;  // shifted into columns 0 and 1 first, then overwritten
  for (int col = 0; col < 4 + 2 * (tiles_w - 1); col += 2) {
#pragma unroll
    for (int b = 0; b < 2; ++b) {
      const int xx = col - pad_w + b;
      const bool col_in = xx >= 0 && xx < W;
      ACC d[4];
#pragma unroll
      for (int a = 0; a < 4; ++a) d[a] = (row_in[a] && col_in) ? (ACC)src[row_at[a] + xx * x_sw] : (ACC)0;
#pragma unroll
      for (int j = 0; j < 4; ++j) c[j][b] = c[j][b + 2];
      c[0][b + 2] = d[0] - d[2];
      c[1][b + 2] = d[1] + d[2];
      c[2][b + 2] = d[2] - d[1];
      c[3][b + 2] = d[1] - d[3];
    }
    if (col == 0) continue;  // the first two columns only fill the window
    __global T_T* o = dst + col / 2 - 1;
#pragma unroll
    for (int a = 0; a < 4; ++a) {
      o[(4 * a + 0) * plane] = (T_T)(c[a][0] - c[a][2]);
      o[(4 * a + 1) * plane] = (T_T)(c[a][1] + c[a][2]);
      o[(4 * a + 2) * plane] = (T_T)(c[a][2] - c[a][1]);
      o[(4 * a + 3) * plane] = (T_T)(c[a][1] - c[a][3]);
    }
  }
}

// G g G^T for every (row r, column q) of U, with G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]. The 3x3 filter
// g of (r, q) is w[r * w_sr + q * w_sq + i * w_si + j * w_sj], read flipped (g[i][j] = w[.., 2 - i, 2 - j])
// when flip: the host passes the weight's channel strides swapped and flip = 1 for the input gradient's
// filter (the flipped, channel-transposed weight). total = R * Q; U is (16, R, Q) contiguous.
__kernel void winograd_filter(__global const T_T* w, ulong w_off, __global T_T* u, ulong u_off, int R, int Q,
                              long w_sr, long w_sq, long w_si, long w_sj, int flip) {
  const int i = get_global_id(0);
  if (i >= R * Q) return;
  const int r = i / Q, q = i - r * Q;
  __global const T_T* src = w + w_off + r * w_sr + q * w_sq;
  ACC g[3][3];
#pragma unroll
  for (int a = 0; a < 3; ++a)
#pragma unroll
    for (int b = 0; b < 3; ++b) {
      const int sa = flip ? 2 - a : a, sb = flip ? 2 - b : b;
      g[a][b] = (ACC)src[sa * w_si + sb * w_sj];
    }
  const ACC one_half = (ACC)0.5;
  ACC t[4][3];  // G g
#pragma unroll
  for (int b = 0; b < 3; ++b) {
    t[0][b] = g[0][b];
    t[1][b] = one_half * (g[0][b] + g[1][b] + g[2][b]);
    t[2][b] = one_half * (g[0][b] - g[1][b] + g[2][b]);
    t[3][b] = g[2][b];
  }
  __global T_T* dst = u + u_off + i;
  const int plane = R * Q;
#pragma unroll
  for (int a = 0; a < 4; ++a) {  // (G g) G^T
    dst[(4 * a + 0) * plane] = (T_T)t[a][0];
    dst[(4 * a + 1) * plane] = (T_T)(one_half * (t[a][0] + t[a][1] + t[a][2]));
    dst[(4 * a + 2) * plane] = (T_T)(one_half * (t[a][0] - t[a][1] + t[a][2]));
    dst[(4 * a + 3) * plane] = (T_T)t[a][2];
  }
}

// A^T m A (+ bias[r]) for every (row r, tile p): the 2x2 outputs of the tile that lie inside (OH, OW) (the last
// row or column of tiles is partial when OH or OW is odd). A^T = [1 1 1 0; 0 1 -1 -1]. M is (16, R, P),
// with its planes `plane` elements apart (rows contiguous), out (N, R, OH, OW) contiguous. total = R * P.
__kernel void winograd_output(__global const T_T* m, ulong m_off, __global T_T* out, ulong out_off,
                              __global const T_T* bias, ulong bias_off, int has_bias, int R, int OH, int OW,
                              int tiles_h, int tiles_w, int P, int plane) {
  const int i = get_global_id(0);
  if (i >= R * P) return;
  const int r = i / P, p = i - r * P;
  const int tx = p % tiles_w, rest = p / tiles_w;
  const int ty = rest % tiles_h, n = rest / tiles_h;
  __global const T_T* src = m + m_off + i;
  ACC t[2][4];  // A^T m
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    const ACC m0 = (ACC)src[b * plane], m1 = (ACC)src[(4 + b) * plane];
    const ACC m2 = (ACC)src[(8 + b) * plane], m3 = (ACC)src[(12 + b) * plane];
    t[0][b] = m0 + m1 + m2;
    t[1][b] = m1 - m2 - m3;
  }
  const ACC b0 = has_bias ? (ACC)bias[bias_off + r] : (ACC)0;
  const int y = 2 * ty, xx = 2 * tx;
  __global T_T* dst = out + out_off + ((n * R + r) * OH + y) * OW + xx;
#pragma unroll
  for (int a = 0; a < 2; ++a) {  // (A^T m) A
    if (y + a >= OH) break;
    dst[a * OW] = (T_T)(t[a][0] + t[a][1] + t[a][2] + b0);
    if (xx + 1 < OW) dst[a * OW + 1] = (T_T)(t[a][1] - t[a][2] - t[a][3] + b0);
  }
}

// The CPU form of winograd_output: a work-item per row of tiles (r, n, ty), along it. total = R * N * tiles_h.
__kernel void winograd_output_lines(__global const T_T* m, ulong m_off, __global T_T* out, ulong out_off,
                                    __global const T_T* bias, ulong bias_off, int has_bias, int R, int OH, int OW,
                                    int tiles_h, int tiles_w, int P, int plane) {
  const int rows = P / tiles_w;
  const int i = get_global_id(0);
  if (i >= R * rows) return;
  const int r = i / rows, row = i - r * rows;
  const int n = row / tiles_h, ty = row - n * tiles_h;
  __global const T_T* src = m + m_off + r * P + row * tiles_w;
  const int y = 2 * ty;
  __global T_T* dst = out + out_off + ((n * R + r) * OH + y) * OW;
  const bool second_row = y + 1 < OH;
  const ACC b0 = has_bias ? (ACC)bias[bias_off + r] : (ACC)0;
  for (int tx = 0; tx < tiles_w; ++tx) {
    ACC t[2][4];  // A^T m
#pragma unroll
    for (int b = 0; b < 4; ++b) {
      const ACC m0 = (ACC)src[b * plane + tx], m1 = (ACC)src[(4 + b) * plane + tx];
      const ACC m2 = (ACC)src[(8 + b) * plane + tx], m3 = (ACC)src[(12 + b) * plane + tx];
      t[0][b] = m0 + m1 + m2;
      t[1][b] = m1 - m2 - m3;
    }
    const int xx = 2 * tx;
    const bool second_col = xx + 1 < OW;
    dst[xx] = (T_T)(t[0][0] + t[0][1] + t[0][2] + b0);
    if (second_col) dst[xx + 1] = (T_T)(t[0][1] - t[0][2] - t[0][3] + b0);
    if (second_row) {
      dst[OW + xx] = (T_T)(t[1][0] + t[1][1] + t[1][2] + b0);
      if (second_col) dst[OW + xx + 1] = (T_T)(t[1][1] - t[1][2] - t[1][3] + b0);
    }
  }
}

// ---- The weight gradient, Winograd F(3x3, 2x2): dW[o][c] (3x3) = sum over tiles of the correlation of the
// input patch d (4x4, the forward's B^T d B above) with the tile's 2x2 of grad_output h:
//   dW[o][c] = G^T [ sum_p (A h A^T)[o][p] .* (B^T d B)[c][p] ] G,
// A (4x2) and G (4x3) the forward's A and G (the transposition principle swaps the filter and output
// transforms). The sum over tiles is the K dimension of 16 GEMMs, (O, P) @ (P, C).

// A h A^T for every (channel o, tile p), A = [1 0; 1 1; 1 -1; 0 -1]: h[t][s] = go[n][o][2 ty + t][2 tx + s], 0
// past (OH, OW). go has any strides. H is (16, O, P), its planes `plane` elements apart. The GPU form: a
// work-item per tile. total = O * P.
inline void winograd_grad_tile(__global const T_T* g, long g_sh, long g_sw, bool second_row, bool second_col,
                               __global T_T* dst, int plane) {
  ACC h[2][2];
  h[0][0] = (ACC)g[0];
  h[0][1] = second_col ? (ACC)g[g_sw] : (ACC)0;
  h[1][0] = second_row ? (ACC)g[g_sh] : (ACC)0;
  h[1][1] = second_row && second_col ? (ACC)g[g_sh + g_sw] : (ACC)0;
  ACC r[4][2];  // A h
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    r[0][s] = h[0][s];
    r[1][s] = h[0][s] + h[1][s];
    r[2][s] = h[0][s] - h[1][s];
    r[3][s] = -h[1][s];
  }
#pragma unroll
  for (int a = 0; a < 4; ++a) {  // (A h) A^T
    dst[(4 * a + 0) * plane] = (T_T)r[a][0];
    dst[(4 * a + 1) * plane] = (T_T)(r[a][0] + r[a][1]);
    dst[(4 * a + 2) * plane] = (T_T)(r[a][0] - r[a][1]);
    dst[(4 * a + 3) * plane] = (T_T)(-r[a][1]);
  }
}

__kernel void winograd_grad_output(__global const T_T* go, ulong go_off, __global T_T* hgo, ulong hgo_off, int O,
                                   int OH, int OW, long g_sn, long g_so, long g_sh, long g_sw, int tiles_h,
                                   int tiles_w, int P, int plane) {
  const int i = get_global_id(0);
  if (i >= O * P) return;
  const int o = i / P, p = i - o * P;
  const int tx = p % tiles_w, r = p / tiles_w;
  const int ty = r % tiles_h, n = r / tiles_h;
  const int y = 2 * ty, xx = 2 * tx;
  winograd_grad_tile(go + go_off + n * g_sn + o * g_so + y * g_sh + xx * g_sw, g_sh, g_sw, y + 1 < OH,
                     xx + 1 < OW, hgo + hgo_off + o * P + p, plane);
}

// The CPU form (kernel_forms' winograd_lines): a work-item per row of tiles (o, n, ty). total = O * N * tiles_h.
__kernel void winograd_grad_output_lines(__global const T_T* go, ulong go_off, __global T_T* hgo, ulong hgo_off,
                                         int O, int OH, int OW, long g_sn, long g_so, long g_sh, long g_sw,
                                         int tiles_h, int tiles_w, int P, int plane) {
  const int rows = P / tiles_w;
  const int i = get_global_id(0);
  if (i >= O * rows) return;
  const int o = i / rows, row = i - o * rows;
  const int n = row / tiles_h, ty = row - n * tiles_h;
  const int y = 2 * ty;
  __global const T_T* src = go + go_off + n * g_sn + o * g_so + y * g_sh;
  __global T_T* dst = hgo + hgo_off + o * P + row * tiles_w;
  for (int tx = 0; tx < tiles_w; ++tx)
    winograd_grad_tile(src + 2 * tx * g_sw, g_sh, g_sw, y + 1 < OH, 2 * tx + 1 < OW, dst + tx, plane);
}

// G^T m G for every (o, c): the 3x3 weight gradient from the GEMMs' M (16, O, C), its planes `plane` elements
// apart, G^T = [1 1/2 1/2 0; 0 1/2 -1/2 0; 0 1/2 1/2 1]. gw (O, C, 3, 3) contiguous. total = O * C.
__kernel void winograd_weight(__global const T_T* m, ulong m_off, __global T_T* gw, ulong gw_off, int OC,
                              int plane) {
  const int i = get_global_id(0);
  if (i >= OC) return;
  __global const T_T* src = m + m_off + i;
  const ACC one_half = (ACC)0.5;
  ACC y[3][4];  // G^T m
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    const ACC m0 = (ACC)src[b * plane], m1 = (ACC)src[(4 + b) * plane];
    const ACC m2 = (ACC)src[(8 + b) * plane], m3 = (ACC)src[(12 + b) * plane];
    y[0][b] = m0 + one_half * (m1 + m2);
    y[1][b] = one_half * (m1 - m2);
    y[2][b] = one_half * (m1 + m2) + m3;
  }
  __global T_T* dst = gw + gw_off + 9 * i;
#pragma unroll
  for (int k = 0; k < 3; ++k) {  // (G^T m) G
    dst[3 * k + 0] = (T_T)(y[k][0] + one_half * (y[k][1] + y[k][2]));
    dst[3 * k + 1] = (T_T)(one_half * (y[k][1] - y[k][2]));
    dst[3 * k + 2] = (T_T)(one_half * (y[k][1] + y[k][2]) + y[k][3]);
  }
}
