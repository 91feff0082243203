// 2-d pooling over contiguous planes (P = N * C planes of IH x IW; outputs
// OH x OW), forward and backward. Backward kernels run one work-item per input
// element and sum the windows that cover it, so no atomics are needed and the
// result is deterministic.

typedef struct {
  long kH, kW, dH, dW, padH, padW, dilH, dilW;
  long IH, IW, OH, OW;
} Pool;

inline long ceil_div_nonneg(long a, long b) { return a <= 0 ? 0 : (a + b - 1) / b; }

// out and indices (position h * IW + w within the plane) as CPU: the first maximum, or the last NaN.
__kernel void max_pool2d_forward(__global T_T* out, ulong out_offset, __global long* indices, ulong ind_offset,
                                 __global const T_T* in, ulong in_offset, long total, Pool p) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long ow = e % p.OW, oh = (e / p.OW) % p.OH, plane = e / (p.OW * p.OH);
  long h0 = oh * p.dH - p.padH, w0 = ow * p.dW - p.padW;
  const long hend = min(h0 + (p.kH - 1) * p.dilH + 1, p.IH);
  const long wend = min(w0 + (p.kW - 1) * p.dilW + 1, p.IW);
  while (h0 < 0) h0 += p.dilH;
  while (w0 < 0) w0 += p.dilW;
  const long base = in_offset + plane * p.IH * p.IW;
  ACC best = ACC_LOWEST;
  long best_index = h0 * p.IW + w0;
  for (long h = h0; h < hend; h += p.dilH)
    for (long w = w0; w < wend; w += p.dilW) {
      const ACC v = LOAD_T(in, base + h * p.IW + w);
      if (v > best || ACC_ISNAN(v)) {
        best = v;
        best_index = h * p.IW + w;
      }
    }
  STORE_T(out, out_offset + e, best);
  indices[ind_offset + e] = best_index;
}

__kernel void max_pool2d_backward(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                  ulong go_offset, __global const long* indices, ulong ind_offset, long total,
                                  Pool p) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long w = e % p.IW, h = (e / p.IW) % p.IH, plane = e / (p.IW * p.IH);
  const long oh0 = ceil_div_nonneg(h + p.padH - (p.kH - 1) * p.dilH, p.dH);
  const long oh1 = min((h + p.padH) / p.dH, p.OH - 1);
  const long ow0 = ceil_div_nonneg(w + p.padW - (p.kW - 1) * p.dilW, p.dW);
  const long ow1 = min((w + p.padW) / p.dW, p.OW - 1);
  const long me = h * p.IW + w, base = plane * p.OH * p.OW;
  ACC acc = 0;
  for (long oh = oh0; oh <= oh1; ++oh)
    for (long ow = ow0; ow <= ow1; ++ow) {
      const long o = base + oh * p.OW + ow;
      if (indices[ind_offset + o] == me) acc += LOAD_T(grad_out, go_offset + o);
    }
  STORE_T(grad_in, gi_offset + e, acc);
}

// The divisor of output (oh, ow), and its clipped window; 0 for an empty window.
inline long avg_window(Pool p, long oh, long ow, int count_include_pad, long divisor_override, long* h0, long* h1,
                       long* w0, long* w1) {
  long hs = oh * p.dH - p.padH, ws = ow * p.dW - p.padW;
  long he = min(hs + p.kH, p.IH + p.padH), we = min(ws + p.kW, p.IW + p.padW);
  const long pool_size = (he - hs) * (we - ws);
  hs = max(hs, 0L);
  ws = max(ws, 0L);
  he = min(he, p.IH);
  we = min(we, p.IW);
  *h0 = hs; *h1 = he; *w0 = ws; *w1 = we;
  if (hs >= he || ws >= we) return 0;
  if (divisor_override) return divisor_override;
  return count_include_pad ? pool_size : (he - hs) * (we - ws);
}

__kernel void avg_pool2d_forward(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset,
                                 long total, Pool p, int count_include_pad, long divisor_override) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long ow = e % p.OW, oh = (e / p.OW) % p.OH, plane = e / (p.OW * p.OH);
  long h0, h1, w0, w1;
  const long div = avg_window(p, oh, ow, count_include_pad, divisor_override, &h0, &h1, &w0, &w1);
  const long base = in_offset + plane * p.IH * p.IW;
  ACC s = 0;
  for (long h = h0; h < h1; ++h)
    for (long w = w0; w < w1; ++w) s += LOAD_T(in, base + h * p.IW + w);
  STORE_T(out, out_offset + e, div == 0 ? (ACC)0 : s / (ACC)div);
}

__kernel void avg_pool2d_backward(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                  ulong go_offset, long total, Pool p, int count_include_pad,
                                  long divisor_override) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long w = e % p.IW, h = (e / p.IW) % p.IH, plane = e / (p.IW * p.IH);
  const long oh0 = ceil_div_nonneg(h + p.padH - p.kH + 1, p.dH), oh1 = min((h + p.padH) / p.dH, p.OH - 1);
  const long ow0 = ceil_div_nonneg(w + p.padW - p.kW + 1, p.dW), ow1 = min((w + p.padW) / p.dW, p.OW - 1);
  const long base = go_offset + plane * p.OH * p.OW;
  ACC acc = 0;
  for (long oh = oh0; oh <= oh1; ++oh)
    for (long ow = ow0; ow <= ow1; ++ow) {
      long h0, h1, w0, w1;
      const long div = avg_window(p, oh, ow, count_include_pad, divisor_override, &h0, &h1, &w0, &w1);
      if (div != 0 && h >= h0 && h < h1 && w >= w0 && w < w1) acc += LOAD_T(grad_out, base + oh * p.OW + ow) / (ACC)div;
    }
  STORE_T(grad_in, gi_offset + e, acc);
}

// Adaptive average pooling: output o of O covers [floor(o * I / O), ceil((o + 1) * I / O)).
inline long start_index(long o, long O, long I) { return (o * I) / O; }
inline long end_index(long o, long O, long I) { return ((o + 1) * I + O - 1) / O; }

__kernel void adaptive_avg_pool2d_forward(__global T_T* out, ulong out_offset, __global const T_T* in,
                                          ulong in_offset, long total, Pool p) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long ow = e % p.OW, oh = (e / p.OW) % p.OH, plane = e / (p.OW * p.OH);
  const long h0 = start_index(oh, p.OH, p.IH), h1 = end_index(oh, p.OH, p.IH);
  const long w0 = start_index(ow, p.OW, p.IW), w1 = end_index(ow, p.OW, p.IW);
  const long base = in_offset + plane * p.IH * p.IW;
  ACC s = 0;
  for (long h = h0; h < h1; ++h)
    for (long w = w0; w < w1; ++w) s += LOAD_T(in, base + h * p.IW + w);
  STORE_T(out, out_offset + e, s / (ACC)((h1 - h0) * (w1 - w0)));
}

__kernel void adaptive_avg_pool2d_backward(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                           ulong go_offset, long total, Pool p) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long w = e % p.IW, h = (e / p.IW) % p.IH, plane = e / (p.IW * p.IH);
  const long base = go_offset + plane * p.OH * p.OW;
  // Outputs whose window may hold h: from floor(h * OH / IH) to the last with start <= h.
  const long oh0 = (h * p.OH) / p.IH, oh1 = min(((h + 1) * p.OH + p.IH - 1) / p.IH, p.OH);
  const long ow0 = (w * p.OW) / p.IW, ow1 = min(((w + 1) * p.OW + p.IW - 1) / p.IW, p.OW);
  ACC acc = 0;
  for (long oh = oh0; oh < oh1; ++oh) {
    const long h0 = start_index(oh, p.OH, p.IH), h1 = end_index(oh, p.OH, p.IH);
    if (h < h0 || h >= h1) continue;
    for (long ow = ow0; ow < ow1; ++ow) {
      const long w0 = start_index(ow, p.OW, p.IW), w1 = end_index(ow, p.OW, p.IW);
      if (w < w0 || w >= w1) continue;
      acc += LOAD_T(grad_out, base + oh * p.OW + ow) / (ACC)((h1 - h0) * (w1 - w0));
    }
  }
  STORE_T(grad_in, gi_offset + e, acc);
}
