// Depthwise convolution (groups == input channels, the MobileNet/EfficientNet layer): output channel o reads
// input channel o / M (M output channels per input channel) with its own KH x KW filter. Direct forms, not
// im2col and a GEMM per group (which launched 2 kernels for each of hundreds of channels). The host prepends
// the prelude and `#define T float|double`; every size is an argument. Input, output and gradients are
// contiguous (N, C, H, W) and (N, O, OH, OW); the weight is (O, 1, KH, KW).
// Forms (kernel_forms' conv_depthwise_rows): *_rows give a work-item a row of outputs (the index arithmetic
// once a row: 64-bit divisions cost tens of cycles on CPUs); the others a work-item per element (GPUs).

typedef struct {
  long C, H, W, KH, KW, PH, PW, SH, SW, DH, DW, OH, OW;
} ConvShape;

// The outputs ox of a row whose tap kj reads inside the input row: 0 <= ox * SW + off < W, off = kj * DW - PW.
// The rows forms loop over them without a bounds check, so the compiler can vectorise along the row.
inline long2 tap_outputs(long off, ConvShape g) {
  const long hi = g.W - 1 - off >= 0 ? min((g.W - 1 - off) / g.SW + 1, g.OW) : 0;
  const long lo = off >= 0 ? 0 : (-off + g.SW - 1) / g.SW;
  return (long2)(min(lo, hi), hi);
}

// out[n, o, oy, ox] for the plane of (n, o).
inline T depthwise_out(__global const T* x_plane, __global const T* w_o, ConvShape g, long oy, long ox) {
  T acc = 0;
  for (long ki = 0; ki < g.KH; ++ki) {
    const long y = oy * g.SH - g.PH + ki * g.DH;
    if (y < 0 || y >= g.H) continue;
    for (long kj = 0; kj < g.KW; ++kj) {
      const long x = ox * g.SW - g.PW + kj * g.DW;
      if (x >= 0 && x < g.W) acc += x_plane[y * g.W + x] * w_o[ki * g.KW + kj];
    }
  }
  return acc;
}

// grad_input[n, c, y, x]: the outputs of c's M channels whose taps read (y, x).
inline T depthwise_in(__global const T* go_n, __global const T* w, ConvShape g, long M, long c, long y, long x) {
  T acc = 0;
  for (long j = 0; j < M; ++j) {
    const long o = c * M + j;
    __global const T* go_plane = go_n + o * g.OH * g.OW;
    __global const T* w_o = w + o * g.KH * g.KW;
    for (long ki = 0; ki < g.KH; ++ki) {
      const long ty = y + g.PH - ki * g.DH;
      if (ty < 0 || ty % g.SH) continue;
      const long oy = ty / g.SH;
      if (oy >= g.OH) continue;
      for (long kj = 0; kj < g.KW; ++kj) {
        const long tx = x + g.PW - kj * g.DW;
        if (tx < 0 || tx % g.SW) continue;
        const long ox = tx / g.SW;
        if (ox < g.OW) acc += go_plane[oy * g.OW + ox] * w_o[ki * g.KW + kj];
      }
    }
  }
  return acc;
}

// has_bias: bias[o] added. total = N * O * OH (rows) or N * O * OH * OW (elements).
__kernel void depthwise_forward_rows(__global const T* x, ulong x_off, __global const T* w, ulong w_off,
                                     __global const T* bias, ulong bias_off, int has_bias, __global T* out,
                                     ulong out_off, ConvShape g, long M, long O, long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const long oy = i % g.OH, no = i / g.OH, o = no % O, n = no / O;
  __global const T* x_plane = x + x_off + (n * g.C + o / M) * g.H * g.W;
  __global const T* w_o = w + w_off + o * g.KH * g.KW;
  __global T* row = out + out_off + i * g.OW;
  for (long ox = 0; ox < g.OW; ++ox) row[ox] = 0;
  // Tap by tap along the row (each output's taps still add in (ki, kj) order).
  for (long ki = 0; ki < g.KH; ++ki) {
    const long y = oy * g.SH - g.PH + ki * g.DH;
    if (y < 0 || y >= g.H) continue;
    __global const T* x_row = x_plane + y * g.W;
    for (long kj = 0; kj < g.KW; ++kj) {
      const long off = kj * g.DW - g.PW;
      const long2 r = tap_outputs(off, g);
      const T wv = w_o[ki * g.KW + kj];
      for (long ox = r.x; ox < r.y; ++ox) row[ox] += x_row[ox * g.SW + off] * wv;
    }
  }
  if (has_bias) {
    const T b = bias[bias_off + o];
    for (long ox = 0; ox < g.OW; ++ox) row[ox] += b;
  }
}

__kernel void depthwise_forward(__global const T* x, ulong x_off, __global const T* w, ulong w_off,
                                __global const T* bias, ulong bias_off, int has_bias, __global T* out,
                                ulong out_off, ConvShape g, long M, long O, long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const long ox = i % g.OW, r = i / g.OW, oy = r % g.OH, no = r / g.OH, o = no % O, n = no / O;
  __global const T* x_plane = x + x_off + (n * g.C + o / M) * g.H * g.W;
  out[out_off + i] = depthwise_out(x_plane, w + w_off + o * g.KH * g.KW, g, oy, ox) +
                     (has_bias ? bias[bias_off + o] : (T)0);
}

// total = N * C * H (rows) or N * C * H * W (elements).
__kernel void depthwise_input_grad_rows(__global const T* go, ulong go_off, __global const T* w, ulong w_off,
                                        __global T* gi, ulong gi_off, ConvShape g, long M, long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const long y = i % g.H, nc = i / g.H, c = nc % g.C, n = nc / g.C;
  __global const T* go_n = go + go_off + n * g.C * M * g.OH * g.OW;
  __global T* row = gi + gi_off + i * g.W;
  for (long x = 0; x < g.W; ++x) row[x] = 0;
  // The forward's taps in reverse: output row oy's tap (ki, kj) read input row y at ox * SW + off.
  for (long j = 0; j < M; ++j) {
    const long o = c * M + j;
    __global const T* go_plane = go_n + o * g.OH * g.OW;
    __global const T* w_o = w + w_off + o * g.KH * g.KW;
    for (long ki = 0; ki < g.KH; ++ki) {
      const long ty = y + g.PH - ki * g.DH;
      if (ty < 0 || ty % g.SH) continue;
      const long oy = ty / g.SH;
      if (oy >= g.OH) continue;
      __global const T* go_row = go_plane + oy * g.OW;
      for (long kj = 0; kj < g.KW; ++kj) {
        const long off = kj * g.DW - g.PW;
        const long2 r = tap_outputs(off, g);
        const T wv = w_o[ki * g.KW + kj];
        for (long ox = r.x; ox < r.y; ++ox) row[ox * g.SW + off] += go_row[ox] * wv;
      }
    }
  }
}

__kernel void depthwise_input_grad(__global const T* go, ulong go_off, __global const T* w, ulong w_off,
                                   __global T* gi, ulong gi_off, ConvShape g, long M, long total) {
  const long i = get_global_id(0);
  if (i >= total) return;
  const long x = i % g.W, r = i / g.W, y = r % g.H, nc = r / g.H, c = nc % g.C, n = nc / g.C;
  gi[gi_off + i] = depthwise_in(go + go_off + n * g.C * M * g.OH * g.OW, w + w_off, g, M, c, y, x);
}

// grad_weight[o, ki, kj] = sum over (n, oy, ox) of grad_output[n, o, oy, ox] * x[n, o / M, y, x]: a work-group
// per weight element; its items take the positions in turn and a tree in local memory (of a power-of-two
// group's size) adds their sums, in a fixed order.
__kernel void depthwise_weight_grad(__global const T* go, ulong go_off, __global const T* x, ulong x_off,
                                    __global T* gw, ulong gw_off, ConvShape g, long M, long O, long N,
                                    __local T* partial) {
  const long e = get_group_id(0);  // o * KH * KW + ki * KW + kj
  const long kj = e % g.KW, ki = (e / g.KW) % g.KH, o = e / (g.KH * g.KW);
  const int lid = get_local_id(0), size = get_local_size(0);
  const long L = g.OH * g.OW;
  T acc = 0;
  for (long p = lid; p < N * L; p += size) {
    const long n = p / L, l = p - n * L, oy = l / g.OW, ox = l - oy * g.OW;
    const long y = oy * g.SH - g.PH + ki * g.DH, xx = ox * g.SW - g.PW + kj * g.DW;
    if (y >= 0 && y < g.H && xx >= 0 && xx < g.W)
      acc += go[go_off + (n * O + o) * L + l] * x[x_off + ((n * g.C + o / M) * g.H + y) * g.W + xx];
  }
  partial[lid] = acc;
  for (int step = size / 2; step > 0; step /= 2) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < step) partial[lid] += partial[lid + step];
  }
  if (lid == 0) gw[gw_off + e] = partial[0];
}

// The same, a work-item per weight element walking the positions in order (no index divisions).
__kernel void depthwise_weight_grad_rows(__global const T* go, ulong go_off, __global const T* x, ulong x_off,
                                         __global T* gw, ulong gw_off, ConvShape g, long M, long O, long N,
                                         long total) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long kj = e % g.KW, ki = (e / g.KW) % g.KH, o = e / (g.KH * g.KW);
  const long off = kj * g.DW - g.PW;
  const long2 r = tap_outputs(off, g);
  T acc = 0;
  for (long n = 0; n < N; ++n) {
    __global const T* go_plane = go + go_off + (n * O + o) * g.OH * g.OW;
    __global const T* x_plane = x + x_off + (n * g.C + o / M) * g.H * g.W;
    for (long oy = 0; oy < g.OH; ++oy) {
      const long y = oy * g.SH - g.PH + ki * g.DH;
      if (y < 0 || y >= g.H) continue;
      __global const T* go_row = go_plane + oy * g.OW;
      __global const T* x_row = x_plane + y * g.W + off;
      for (long ox = r.x; ox < r.y; ++ox) acc += go_row[ox] * x_row[ox * g.SW];
    }
  }
  gw[gw_off + e] = acc;
}
