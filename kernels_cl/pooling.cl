// 2-d and 3-d pooling over contiguous planes (P = N * C planes of ID x IH x IW; outputs
// OD x OH x OW; 2-d pooling is ID = OD = 1), forward and backward. Backward kernels run one
// work-item per input element and sum the windows that cover it, so no atomics are needed and the
// result is deterministic.

typedef struct {
  long kD, kH, kW, dD, dH, dW, padD, padH, padW, dilD, dilH, dilW;
  long ID, IH, IW, OD, OH, OW;
} Pool;

inline long ceil_div_nonneg(long a, long b) { return a <= 0 ? 0 : (a + b - 1) / b; }

// Max pooling uses 32-bit index math (the host launches chunks of whole planes under 2^22
// elements) and divides by the float reciprocal, because vector units have no integer division
// and PoCL vectorises a kernel across its work-items.
typedef struct {
  int kH, kW, dH, dW, padH, padW, dilH, dilW;
  int IH, IW, OH, OW;
  float inv_IW, inv_IH, inv_OW, inv_OH, inv_dH, inv_dW, inv_dilH, inv_dilW;
} MaxPool;

#include "fast_div.cl"

// Output element e's (plane, oh, ow).
inline int3 output_at(int e, MaxPool p) {
  const int t = fast_div(e, p.OW, p.inv_OW);
  const int plane = fast_div(t, p.OH, p.inv_OH);
  return (int3)(plane, t - plane * p.OH, e - t * p.OW);
}

// out and indices (position h * IW + w within the plane) as CPU: the first maximum, or the last NaN.
// One work-item per output element.
__kernel void max_pool2d_forward(__global T_T* out, ulong out_offset, __global long* indices, ulong ind_offset,
                                 __global const T_T* in, ulong in_offset, int total, MaxPool p) {
  const int e = get_global_id(0);
  if (e >= total) return;
  const int3 at_out = output_at(e, p);
  const int plane = at_out.x, oh = at_out.y, ow = at_out.z;
  // The window clipped to the input: loop bounds that differ between work-items keep PoCL from
  // splitting the loops at implicit barriers (uniform bounds measured 20x slower).
  int h0 = oh * p.dH - p.padH, w0 = ow * p.dW - p.padW;
  const int hend = min(h0 + (p.kH - 1) * p.dilH + 1, p.IH), wend = min(w0 + (p.kW - 1) * p.dilW + 1, p.IW);
  if (h0 < 0) h0 += (fast_div(-h0 - 1, p.dilH, p.inv_dilH) + 1) * p.dilH;
  if (w0 < 0) w0 += (fast_div(-w0 - 1, p.dilW, p.inv_dilW) + 1) * p.dilW;
  __global const T_T* src = in + in_offset + plane * (p.IH * p.IW);
  ACC best = ACC_LOWEST;
  int best_index = h0 * p.IW + w0;
  for (int h = h0; h < hend; h += p.dilH)
    for (int w = w0; w < wend; w += p.dilW) {
      const ACC v = LOAD_T(src, h * p.IW + w);
      if (v > best || v != v) {  // v != v: NaN (isnan is a library call in PoCL)
        best = v;
        best_index = h * p.IW + w;
      }
    }
  STORE_T(out, out_offset + e, best);
  indices[ind_offset + e] = best_index;
}

// The same for windows of at most 3x3: the taps are unrolled (a tap outside the window or the input is
// masked), so the kernel has no loop and PoCL vectorises it across work-items.
__kernel void max_pool2d_forward_3x3(__global T_T* out, ulong out_offset, __global long* indices, ulong ind_offset,
                                     __global const T_T* in, ulong in_offset, int total, MaxPool p) {
  const int e = get_global_id(0);
  if (e >= total) return;
  const int3 at_out = output_at(e, p);
  const int plane = at_out.x, oh = at_out.y, ow = at_out.z;
  const int hs = oh * p.dH - p.padH, ws = ow * p.dW - p.padW;
  __global const T_T* src = in + in_offset + plane * (p.IH * p.IW);
  ACC best = ACC_LOWEST;
  int best_index = -1;
#pragma unroll
  for (int i = 0; i < 3; ++i) {
    const int h = hs + i * p.dilH;
#pragma unroll
    for (int j = 0; j < 3; ++j) {
      const int w = ws + j * p.dilW;
      const bool inside = i < p.kH && j < p.kW && h >= 0 && h < p.IH && w >= 0 && w < p.IW;
      const int at = inside ? h * p.IW + w : 0;
      const ACC v = LOAD_T(src, at);
      const bool take = inside && (best_index < 0 || v > best || v != v);
      best = take ? v : best;
      best_index = take ? at : best_index;
    }
  }
  STORE_T(out, out_offset + e, best);
  indices[ind_offset + e] = best_index;
}

// The commonest pooling, 2x2 windows of stride 2 without padding or dilation that lie inside the input
// (IH >= 2 OH, IW >= 2 OW): four loads and no masks. PoCL: 2.1-2.6x faster than the 3x3 form (64x32x8x8 to
// 32x64x56x56). Its backward stays the scatter below: four stores an output element measured slower than
// zeroing grad_in and one store each.
__kernel void max_pool2d_forward_2x2(__global T_T* out, ulong out_offset, __global long* indices, ulong ind_offset,
                                     __global const T_T* in, ulong in_offset, int total, MaxPool p) {
  const int e = get_global_id(0);
  if (e >= total) return;
  const int3 at_out = output_at(e, p);
  const int plane = at_out.x, oh = at_out.y, ow = at_out.z;
  const int at = 2 * oh * p.IW + 2 * ow;
  __global const T_T* src = in + in_offset + plane * (p.IH * p.IW);
  const ACC v1 = LOAD_T(src, at + 1), v2 = LOAD_T(src, at + p.IW), v3 = LOAD_T(src, at + p.IW + 1);
  ACC best = LOAD_T(src, at);
  int best_index = at;
  if (v1 > best || v1 != v1) best = v1, best_index = at + 1;
  if (v2 > best || v2 != v2) best = v2, best_index = at + p.IW;
  if (v3 > best || v3 != v3) best = v3, best_index = at + p.IW + 1;
  STORE_T(out, out_offset + e, best);
  indices[ind_offset + e] = best_index;
}

// Windows that do not overlap (stride >= extent in both dims): grad_in is zeroed first and each output
// element stores its gradient at its index when that lies in its window (one writer per input element).
__kernel void max_pool2d_backward_scatter(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                          ulong go_offset, __global const long* indices, ulong ind_offset,
                                          int total, MaxPool p) {
  const int e = get_global_id(0);
  if (e >= total) return;
  const int3 at_out = output_at(e, p);
  const int plane = at_out.x, oh = at_out.y, ow = at_out.z;
  const long index = indices[ind_offset + e];
  const int at = index >= 0 && index < p.IH * p.IW ? (int)index : 0;
  const int h = fast_div(at, p.IW, p.inv_IW), w = at - h * p.IW;
  const int dh = h - (oh * p.dH - p.padH), dw = w - (ow * p.dW - p.padW);
  const bool mine = index == at && dh >= 0 && dh <= (p.kH - 1) * p.dilH && dw >= 0 && dw <= (p.kW - 1) * p.dilW;
  if (mine) STORE_T(grad_in, gi_offset + plane * (p.IH * p.IW) + at, LOAD_T(grad_out, go_offset + e));
}

// Overlapping windows: one work-item per input element sums the gradients of the
// windows that hold it and chose it, so no atomics are needed and the result is deterministic.
__kernel void max_pool2d_backward(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                  ulong go_offset, __global const long* indices, ulong ind_offset, int total,
                                  MaxPool p) {
  const int e = get_global_id(0);
  if (e >= total) return;
  const int t = fast_div(e, p.IW, p.inv_IW);
  const int w = e - t * p.IW;
  const int plane = fast_div(t, p.IH, p.inv_IH);
  const int h = t - plane * p.IH;
  // Windows oh in [oh0, oh1] hold h: oh * dH - padH <= h <= oh * dH - padH + (kH - 1) * dilH.
  const int ah = h + p.padH - (p.kH - 1) * p.dilH, aw = w + p.padW - (p.kW - 1) * p.dilW;
  const int oh0 = ah <= 0 ? 0 : fast_div(ah + p.dH - 1, p.dH, p.inv_dH);
  const int ow0 = aw <= 0 ? 0 : fast_div(aw + p.dW - 1, p.dW, p.inv_dW);
  const int oh1 = min(fast_div(h + p.padH, p.dH, p.inv_dH), p.OH - 1);
  const int ow1 = min(fast_div(w + p.padW, p.dW, p.inv_dW), p.OW - 1);
  const int me = h * p.IW + w, base = plane * (p.OH * p.OW);
  ACC acc = 0;
  for (int oh = oh0; oh <= oh1; ++oh)
    for (int ow = ow0; ow <= ow1; ++ow) {
      const int o = base + oh * p.OW + ow;
      if (indices[ind_offset + o] == me) acc += LOAD_T(grad_out, go_offset + o);
    }
  STORE_T(grad_in, gi_offset + e, acc);
}

// The same when a point lies in at most 3 windows per dimension (ceil(extent / stride) <= 3): the
// candidates are unrolled and masked, so the kernel has no loop and vectorises.
__kernel void max_pool2d_backward_3x3(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                  ulong go_offset, __global const long* indices, ulong ind_offset, int total,
                                  MaxPool p) {
  const int e = get_global_id(0);
  if (e >= total) return;
  const int t = fast_div(e, p.IW, p.inv_IW);
  const int w = e - t * p.IW;
  const int plane = fast_div(t, p.IH, p.inv_IH);
  const int h = t - plane * p.IH;
  // Windows oh in [oh0, oh1] hold h: oh * dH - padH <= h <= oh * dH - padH + (kH - 1) * dilH.
  // One chain of divisions: `>> 30` of a quotient (below 2^22) is 0 but makes the next division depend on
  // it, so LLVM's SLP vectoriser does not pair the h and w divisions (after which PoCL's work-item loop
  // no longer vectorises).
  const int ah = h + p.padH - (p.kH - 1) * p.dilH, aw = w + p.padW - (p.kW - 1) * p.dilW;
  const int oh1 = min(fast_div(h + p.padH, p.dH, p.inv_dH), p.OH - 1);
  const int ow1 = min(fast_div(w + p.padW + (oh1 >> 30), p.dW, p.inv_dW), p.OW - 1);
  const int oh0 = ah <= 0 ? 0 : fast_div(ah + p.dH - 1 + (ow1 >> 30), p.dH, p.inv_dH);
  const int ow0 = aw <= 0 ? 0 : fast_div(aw + p.dW - 1 + (oh0 >> 30), p.dW, p.inv_dW);
  const int me = h * p.IW + w, base = plane * (p.OH * p.OW);
  ACC acc = 0;
#pragma unroll
  for (int i = 0; i < 3; ++i)
#pragma unroll
    for (int j = 0; j < 3; ++j) {
      const bool ok = oh1 - i >= oh0 && ow1 - j >= ow0;
      const int o = ok ? base + (oh1 - i) * p.OW + ow1 - j : 0;
      const ACC g = LOAD_T(grad_out, go_offset + o);
      acc += ok && indices[ind_offset + o] == me ? g : (ACC)0;
    }
  STORE_T(grad_in, gi_offset + e, acc);
}

// The divisor of output (od, oh, ow) and its window clipped to the input ([lo, hi) per dim, x: d, y: h,
// z: w); 0 for an empty window. As CPU's kernels: the padded window's size, or the clipped one's.
inline long avg_window(Pool p, long od, long oh, long ow, int count_include_pad, long divisor_override, long3* lo,
                       long3* hi) {
  long3 s = (long3)(od * p.dD - p.padD, oh * p.dH - p.padH, ow * p.dW - p.padW);
  long3 e = (long3)(min(s.x + p.kD, p.ID + p.padD), min(s.y + p.kH, p.IH + p.padH), min(s.z + p.kW, p.IW + p.padW));
  const long pool_size = (e.x - s.x) * (e.y - s.y) * (e.z - s.z);
  s = max(s, (long3)0);
  e = min(e, (long3)(p.ID, p.IH, p.IW));
  *lo = s;
  *hi = e;
  if (s.x >= e.x || s.y >= e.y || s.z >= e.z) return 0;
  if (divisor_override) return divisor_override;
  return count_include_pad ? pool_size : (e.x - s.x) * (e.y - s.y) * (e.z - s.z);
}

__kernel void avg_pool_forward(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset,
                               long total, Pool p, int count_include_pad, long divisor_override) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long ow = e % p.OW, oh = (e / p.OW) % p.OH, od = (e / (p.OW * p.OH)) % p.OD;
  const long plane = e / (p.OW * p.OH * p.OD);
  long3 lo, hi;
  const long div = avg_window(p, od, oh, ow, count_include_pad, divisor_override, &lo, &hi);
  const long base = in_offset + plane * p.ID * p.IH * p.IW;
  ACC s = 0;
  for (long d = lo.x; d < hi.x; ++d)
    for (long h = lo.y; h < hi.y; ++h)
      for (long w = lo.z; w < hi.z; ++w) s += LOAD_T(in, base + (d * p.IH + h) * p.IW + w);
  STORE_T(out, out_offset + e, div == 0 ? (ACC)0 : s / (ACC)div);
}

// Outputs o in [first, last] whose window (start o * stride - pad, extent k) may hold input position i.
inline long first_window(long i, long pad, long k, long stride) { return ceil_div_nonneg(i + pad - k + 1, stride); }
inline long last_window(long i, long pad, long stride, long O) { return min((i + pad) / stride, O - 1); }

__kernel void avg_pool_backward(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                ulong go_offset, long total, Pool p, int count_include_pad, long divisor_override) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long w = e % p.IW, h = (e / p.IW) % p.IH, d = (e / (p.IW * p.IH)) % p.ID, plane = e / (p.IW * p.IH * p.ID);
  const long od0 = first_window(d, p.padD, p.kD, p.dD), od1 = last_window(d, p.padD, p.dD, p.OD);
  const long oh0 = first_window(h, p.padH, p.kH, p.dH), oh1 = last_window(h, p.padH, p.dH, p.OH);
  const long ow0 = first_window(w, p.padW, p.kW, p.dW), ow1 = last_window(w, p.padW, p.dW, p.OW);
  const long base = go_offset + plane * p.OD * p.OH * p.OW;
  const long3 me = (long3)(d, h, w);
  ACC acc = 0;
  for (long od = od0; od <= od1; ++od)
    for (long oh = oh0; oh <= oh1; ++oh)
      for (long ow = ow0; ow <= ow1; ++ow) {
        long3 lo, hi;
        const long div = avg_window(p, od, oh, ow, count_include_pad, divisor_override, &lo, &hi);
        if (div != 0 && all(me >= lo) && all(me < hi))
          acc += LOAD_T(grad_out, base + (od * p.OH + oh) * p.OW + ow) / (ACC)div;
      }
  STORE_T(grad_in, gi_offset + e, acc);
}

// Adaptive average pooling: output o of O covers [floor(o * I / O), ceil((o + 1) * I / O)).
inline long start_index(long o, long O, long I) { return (o * I) / O; }
inline long end_index(long o, long O, long I) { return ((o + 1) * I + O - 1) / O; }

__kernel void adaptive_avg_pool_forward(__global T_T* out, ulong out_offset, __global const T_T* in,
                                        ulong in_offset, long total, Pool p) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long ow = e % p.OW, oh = (e / p.OW) % p.OH, od = (e / (p.OW * p.OH)) % p.OD;
  const long plane = e / (p.OW * p.OH * p.OD);
  const long d0 = start_index(od, p.OD, p.ID), d1 = end_index(od, p.OD, p.ID);
  const long h0 = start_index(oh, p.OH, p.IH), h1 = end_index(oh, p.OH, p.IH);
  const long w0 = start_index(ow, p.OW, p.IW), w1 = end_index(ow, p.OW, p.IW);
  const long base = in_offset + plane * p.ID * p.IH * p.IW;
  ACC s = 0;
  for (long d = d0; d < d1; ++d)
    for (long h = h0; h < h1; ++h)
      for (long w = w0; w < w1; ++w) s += LOAD_T(in, base + (d * p.IH + h) * p.IW + w);
  STORE_T(out, out_offset + e, s / (ACC)((d1 - d0) * (h1 - h0) * (w1 - w0)));
}

// Outputs o in [first, last) whose adaptive window may hold input position i: from floor(i * O / I) to the
// last with start <= i.
inline long first_adaptive(long i, long O, long I) { return (i * O) / I; }
inline long last_adaptive(long i, long O, long I) { return min(((i + 1) * O + I - 1) / I, O); }

__kernel void adaptive_avg_pool_backward(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                         ulong go_offset, long total, Pool p) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long w = e % p.IW, h = (e / p.IW) % p.IH, d = (e / (p.IW * p.IH)) % p.ID, plane = e / (p.IW * p.IH * p.ID);
  const long base = go_offset + plane * p.OD * p.OH * p.OW;
  ACC acc = 0;
  for (long od = first_adaptive(d, p.OD, p.ID); od < last_adaptive(d, p.OD, p.ID); ++od) {
    const long d0 = start_index(od, p.OD, p.ID), d1 = end_index(od, p.OD, p.ID);
    if (d < d0 || d >= d1) continue;
    for (long oh = first_adaptive(h, p.OH, p.IH); oh < last_adaptive(h, p.OH, p.IH); ++oh) {
      const long h0 = start_index(oh, p.OH, p.IH), h1 = end_index(oh, p.OH, p.IH);
      if (h < h0 || h >= h1) continue;
      for (long ow = first_adaptive(w, p.OW, p.IW); ow < last_adaptive(w, p.OW, p.IW); ++ow) {
        const long w0 = start_index(ow, p.OW, p.IW), w1 = end_index(ow, p.OW, p.IW);
        if (w < w0 || w >= w1) continue;
        acc += LOAD_T(grad_out, base + (od * p.OH + oh) * p.OW + ow) / (ACC)((d1 - d0) * (h1 - h0) * (w1 - w0));
      }
    }
  }
  STORE_T(grad_in, gi_offset + e, acc);
}

// Adaptive max pooling (2-d: depth 1), as CPU's kernels: the window [start_index, end_index) per dim; the first
// maximum, or the last NaN (a NaN replaces the max and nothing but a later NaN replaces it); from -inf, so a
// window of -inf values gives its first element's index, (d * IH + h) * IW + w within the plane. One work-item
// per output element.
__kernel void adaptive_max_pool_forward(__global T_T* out, ulong out_offset, __global long* indices,
                                        ulong ind_offset, __global const T_T* in, ulong in_offset, long total,
                                        Pool p) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long ow = e % p.OW, oh = (e / p.OW) % p.OH, od = (e / (p.OW * p.OH)) % p.OD;
  const long plane = e / (p.OW * p.OH * p.OD);
  const long d0 = start_index(od, p.OD, p.ID), d1 = end_index(od, p.OD, p.ID);
  const long h0 = start_index(oh, p.OH, p.IH), h1 = end_index(oh, p.OH, p.IH);
  const long w0 = start_index(ow, p.OW, p.IW), w1 = end_index(ow, p.OW, p.IW);
  __global const T_T* src = in + in_offset + plane * p.ID * p.IH * p.IW;
  ACC best = ACC_LOWEST;
  long best_index = (d0 * p.IH + h0) * p.IW + w0;
  for (long d = d0; d < d1; ++d)
    for (long h = h0; h < h1; ++h)
      for (long w = w0; w < w1; ++w) {
        const long at = (d * p.IH + h) * p.IW + w;
        const ACC v = LOAD_T(src, at);
        if (v > best || v != v) {  // v != v: NaN
          best = v;
          best_index = at;
        }
      }
  STORE_T(out, out_offset + e, best);
  indices[ind_offset + e] = best_index;
}

// Backward where windows overlap (some I % O nonzero): one work-item per input element sums, in CPU's order
// (od, oh, then ow), the gradients of the windows that hold it and chose it. No atomics; deterministic.
__kernel void adaptive_max_pool_backward(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                         ulong go_offset, __global const long* indices, ulong ind_offset,
                                         long total, Pool p) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long w = e % p.IW, h = (e / p.IW) % p.IH, d = (e / (p.IW * p.IH)) % p.ID, plane = e / (p.IW * p.IH * p.ID);
  const long base = plane * p.OD * p.OH * p.OW, me = (d * p.IH + h) * p.IW + w;
  const long od0 = first_adaptive(d, p.OD, p.ID), od1 = last_adaptive(d, p.OD, p.ID);
  const long oh0 = first_adaptive(h, p.OH, p.IH), oh1 = last_adaptive(h, p.OH, p.IH);
  const long ow0 = first_adaptive(w, p.OW, p.IW), ow1 = last_adaptive(w, p.OW, p.IW);
  ACC acc = 0;
  for (long od = od0; od < od1; ++od) {
    if (d < start_index(od, p.OD, p.ID) || d >= end_index(od, p.OD, p.ID)) continue;
    for (long oh = oh0; oh < oh1; ++oh) {
      if (h < start_index(oh, p.OH, p.IH) || h >= end_index(oh, p.OH, p.IH)) continue;
      for (long ow = ow0; ow < ow1; ++ow) {
        if (w < start_index(ow, p.OW, p.IW) || w >= end_index(ow, p.OW, p.IW)) continue;
        const long o = base + (od * p.OH + oh) * p.OW + ow;
        if (indices[ind_offset + o] == me) acc += LOAD_T(grad_out, go_offset + o);
      }
    }
  }
  STORE_T(grad_in, gi_offset + e, acc);
}

// Backward where windows tile the input (I % O == 0 in every dim, so none overlap): grad_in is zeroed first and
// each output element stores its gradient at its index when that lies in its window (one writer per input
// element).
__kernel void adaptive_max_pool_backward_scatter(__global T_T* grad_in, ulong gi_offset,
                                                 __global const T_T* grad_out, ulong go_offset,
                                                 __global const long* indices, ulong ind_offset, long total,
                                                 Pool p) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long ow = e % p.OW, oh = (e / p.OW) % p.OH, od = (e / (p.OW * p.OH)) % p.OD;
  const long plane = e / (p.OW * p.OH * p.OD);
  const long index = indices[ind_offset + e];
  const long w = index >= 0 ? index % p.IW : -1, h = index >= 0 ? (index / p.IW) % p.IH : -1;
  const long d = index >= 0 ? index / (p.IW * p.IH) : -1;
  const bool mine = d >= start_index(od, p.OD, p.ID) && d < end_index(od, p.OD, p.ID) &&
                    h >= start_index(oh, p.OH, p.IH) && h < end_index(oh, p.OH, p.IH) &&
                    w >= start_index(ow, p.OW, p.IW) && w < end_index(ow, p.OW, p.IW);
  if (mine) STORE_T(grad_in, gi_offset + plane * p.ID * p.IH * p.IW + index, LOAD_T(grad_out, go_offset + e));
}

// 3-d max pooling (windows of any size; long index math): out and indices (position (d * IH + h) * IW + w
// within the plane) as CPU's kernel: the first maximum, or the last NaN, from the lowest value, so a window
// of -inf gives its first in-bounds element's index. One work-item per output element.
__kernel void max_pool3d_forward(__global T_T* out, ulong out_offset, __global long* indices, ulong ind_offset,
                                 __global const T_T* in, ulong in_offset, long total, Pool p) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long ow = e % p.OW, oh = (e / p.OW) % p.OH, od = (e / (p.OW * p.OH)) % p.OD;
  const long plane = e / (p.OW * p.OH * p.OD);
  long3 s = (long3)(od * p.dD - p.padD, oh * p.dH - p.padH, ow * p.dW - p.padW);
  const long3 dil = (long3)(p.dilD, p.dilH, p.dilW);
  const long3 end = min(s + ((long3)(p.kD, p.kH, p.kW) - 1) * dil + 1, (long3)(p.ID, p.IH, p.IW));
  // The first tap at or past 0 (CPU: while (start < 0) start += dilation).
  s = select(s, s + ((-s - 1) / dil + 1) * dil, s < 0);
  __global const T_T* src = in + in_offset + plane * p.ID * p.IH * p.IW;
  ACC best = ACC_LOWEST;
  long best_index = (s.x * p.IH + s.y) * p.IW + s.z;
  for (long d = s.x; d < end.x; d += p.dilD)
    for (long h = s.y; h < end.y; h += p.dilH)
      for (long w = s.z; w < end.z; w += p.dilW) {
        const long at = (d * p.IH + h) * p.IW + w;
        const ACC v = LOAD_T(src, at);
        if (v > best || v != v) {  // v != v: NaN
          best = v;
          best_index = at;
        }
      }
  STORE_T(out, out_offset + e, best);
  indices[ind_offset + e] = best_index;
}

// Windows that cannot overlap (stride >= extent in every dim): grad_in is zeroed first and each output
// element stores its gradient at its index when that lies in its window (one writer per input element; an
// index outside the window, or the plane, is ignored).
__kernel void max_pool3d_backward_scatter(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                          ulong go_offset, __global const long* indices, ulong ind_offset,
                                          long total, Pool p) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long ow = e % p.OW, oh = (e / p.OW) % p.OH, od = (e / (p.OW * p.OH)) % p.OD;
  const long plane = e / (p.OW * p.OH * p.OD);
  const long index = indices[ind_offset + e];
  if (index < 0 || index >= p.ID * p.IH * p.IW) return;
  const long w = index % p.IW, h = (index / p.IW) % p.IH, d = index / (p.IW * p.IH);
  const long3 offset = (long3)(d - (od * p.dD - p.padD), h - (oh * p.dH - p.padH), w - (ow * p.dW - p.padW));
  const long3 extent = ((long3)(p.kD, p.kH, p.kW) - 1) * (long3)(p.dilD, p.dilH, p.dilW);
  if (all(offset >= 0) && all(offset <= extent))
    STORE_T(grad_in, gi_offset + plane * p.ID * p.IH * p.IW + index, LOAD_T(grad_out, go_offset + e));
}

// Overlapping windows: one work-item per input element sums the gradients of the windows that hold it and
// chose it. No atomics; deterministic.
__kernel void max_pool3d_backward(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                  ulong go_offset, __global const long* indices, ulong ind_offset, long total,
                                  Pool p) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long w = e % p.IW, h = (e / p.IW) % p.IH, d = (e / (p.IW * p.IH)) % p.ID, plane = e / (p.IW * p.IH * p.ID);
  // Windows o hold i when o * stride - pad <= i <= o * stride - pad + (k - 1) * dil.
  const long od0 = first_window(d, p.padD, (p.kD - 1) * p.dilD + 1, p.dD), od1 = last_window(d, p.padD, p.dD, p.OD);
  const long oh0 = first_window(h, p.padH, (p.kH - 1) * p.dilH + 1, p.dH), oh1 = last_window(h, p.padH, p.dH, p.OH);
  const long ow0 = first_window(w, p.padW, (p.kW - 1) * p.dilW + 1, p.dW), ow1 = last_window(w, p.padW, p.dW, p.OW);
  const long me = (d * p.IH + h) * p.IW + w, base = plane * p.OD * p.OH * p.OW;
  ACC acc = 0;
  for (long od = od0; od <= od1; ++od)
    for (long oh = oh0; oh <= oh1; ++oh)
      for (long ow = ow0; ow <= ow1; ++ow) {
        const long o = base + (od * p.OH + oh) * p.OW + ow;
        if (indices[ind_offset + o] == me) acc += LOAD_T(grad_out, go_offset + o);
      }
  STORE_T(grad_in, gi_offset + e, acc);
}
