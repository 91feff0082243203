// Softmax and log-softmax over one dimension, forward and backward. The tensor is
// viewed as (outer, dim, inner), contiguous; a row is the `dim` elements at one
// (outer, inner) pair, stride `inner`. Math in ACC (float for float/half/bfloat16).
//
// Three ways to launch, chosen by the host (aten/native/softmax.cpp) for PoCL's CPU vectoriser:
//   *_rows        inner == 1: one work-item per row, walking it 16 elements at a time in
//                 ACC16 vectors (vload16 for float/double), the last partial block masked.
//   *_rows_group  inner == 1 and few rows: one work-group per row, each work-item a
//                 contiguous slice of it (16-element blocks), combined through local memory.
//   *_columns     inner > 1: one work-item per 16 adjacent columns (rows), an accumulator per
//                 column in private arrays: its loops over the columns vectorise.
// Rows with a NaN give NaN, as on CPU; so do rows of -inf only (exp(-inf - -inf)), except in
// _safe_softmax, whose rows of -inf only give 0.
//
// The forward kernels' `mode`: 0 softmax, 1 log_softmax, 2 safe softmax.

#include "vec16.cl"
#include "row_logsumexp.cl"

// softmax: exp(x - m) * scale (scale = 1 / sum); log-softmax: x - m - shift (shift = log(sum)).
// The branches are whole loops: a select per element would compute exp for log-softmax too.
inline void range_write(__global T_T* y, __global const T_T* x, long b, long e, ACC m, ACC scale, ACC shift,
                        int log_softmax) {
  long j = b;
  if (log_softmax) {
    for (; j + 16 <= e; j += 16) store16(y, j, LOAD16(x, j) - m - shift, 16);
    if (j < e) store16(y, j, LOAD16_CLAMPED(x, j, e - 1) - m - shift, e - j);
  } else {
    for (; j + 16 <= e; j += 16) store16(y, j, exp(LOAD16(x, j) - m) * scale, 16);
    if (j < e) store16(y, j, exp(LOAD16_CLAMPED(x, j, e - 1) - m) * scale, e - j);
  }
}

// Softmax where the storage type is ACC (float, double): y = exp(x - m) stored while summing, then
// scaled in place (range_scale), so exp runs once per element. Returns the sum.
inline ACC range_exp_store(__global T_T* y, __global const T_T* x, long b, long e, ACC m) {
  ACC16 s = 0;
  long j = b;
  for (; j + 16 <= e; j += 16) {
    const ACC16 v = exp(LOAD16(x, j) - m);
    s += v;
    store16(y, j, v, 16);
  }
  if (j < e) {
    const ACC16 v = lane_mask_keep(exp(LOAD16_CLAMPED(x, j, e - 1) - m), (ACC16)0, e - j);
    s += v;
    store16(y, j, v, e - j);
  }
  return sum16(s);
}

inline void range_scale(__global T_T* y, long b, long e, ACC scale) {
  long j = b;
  for (; j + 16 <= e; j += 16) store16(y, j, LOAD16(y, j) * scale, 16);
  if (j < e) store16(y, j, LOAD16_CLAMPED(y, j, e - 1) * scale, e - j);
}

// Whether the forward runs exp once (range_exp_store): not for log_softmax, nor for half/bfloat16
// storage, whose rounded exp would be rounded again when scaled.
#define ONE_EXP(mode) ((mode) != 1 && sizeof(T_T) == sizeof(ACC))

// softmax: sum(g * y); log-softmax: sum(g).
inline ACC range_dot(__global const T_T* g, __global const T_T* y, long b, long e, int log_softmax) {
  ACC16 s = 0;
  long j = b;
  if (log_softmax) {
    for (; j + 16 <= e; j += 16) s += LOAD16(g, j);
    if (j < e) s += lane_mask_keep(LOAD16_CLAMPED(g, j, e - 1), (ACC16)0, e - j);
  } else {
    for (; j + 16 <= e; j += 16) s += LOAD16(g, j) * LOAD16(y, j);
    if (j < e) s += lane_mask_keep(LOAD16_CLAMPED(g, j, e - 1) * LOAD16_CLAMPED(y, j, e - 1), (ACC16)0, e - j);
  }
  return sum16(s);
}

// softmax: grad_in = y * (g - s); log-softmax: grad_in = g - exp(y) * s.
inline void range_backward(__global T_T* gi, __global const T_T* g, __global const T_T* y, long b, long e, ACC s,
                           int log_softmax) {
  long j = b;
  if (log_softmax) {
    for (; j + 16 <= e; j += 16) store16(gi, j, LOAD16(g, j) - exp(LOAD16(y, j)) * s, 16);
    if (j < e) store16(gi, j, LOAD16_CLAMPED(g, j, e - 1) - exp(LOAD16_CLAMPED(y, j, e - 1)) * s, e - j);
  } else {
    for (; j + 16 <= e; j += 16) store16(gi, j, LOAD16(y, j) * (LOAD16(g, j) - s), 16);
    if (j < e) store16(gi, j, LOAD16_CLAMPED(y, j, e - 1) * (LOAD16_CLAMPED(g, j, e - 1) - s), e - j);
  }
}

// ---- inner == 1, one work-item per row ----
// The global size is `rows` rounded up to the group size; items past the end store nothing.

// A safe softmax row of -inf only (its max is -inf) is written as exp(x - 0) * 0 = 0.
#define SAFE_ROW(mode, m) ((mode) == 2 && (m) == -INFINITY)

// All forms take (buffers..., dim, inner, rows, mode or log_softmax); *_rows* ignore inner (1).
__kernel void softmax_rows(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset, long n,
                           long inner, long rows, int mode) {
  const long row = get_global_id(0);
  if (row >= rows) return;
  __global const T_T* x = in + in_offset + row * n;
  __global T_T* y = out + out_offset + row * n;
  ACC m = range_max(x, 0, n);
  const int zero = SAFE_ROW(mode, m);
  if (zero) m = 0;
  if (ONE_EXP(mode)) {
    const ACC s = range_exp_store(y, x, 0, n, m);
    range_scale(y, 0, n, zero ? (ACC)0 : (ACC)1 / s);
    return;
  }
  const ACC s = range_sum_exp(x, 0, n, m);
  range_write(y, x, 0, n, m, zero ? (ACC)0 : (ACC)1 / s, log(s), mode == 1);
}

__kernel void softmax_backward_rows(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                    ulong go_offset, __global const T_T* y, ulong y_offset, long n, long inner,
                                    long rows, int log_softmax) {
  const long row = get_global_id(0);
  if (row >= rows) return;
  const long base = row * n;
  const ACC s = range_dot(grad_out + go_offset + base, y + y_offset + base, 0, n, log_softmax);
  range_backward(grad_in + gi_offset + base, grad_out + go_offset + base, y + y_offset + base, 0, n, s,
                 log_softmax);
}

// ---- inner == 1, one work-group (WG items) per row ----

inline ACC group_combine(__local ACC* scratch, ACC v, int is_max) {
  const int l = get_local_id(0);
  scratch[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (l < s) scratch[l] = is_max ? MAX_NAN(scratch[l], scratch[l + s]) : scratch[l] + scratch[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const ACC r = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

// Work-item l's slice [b, e) of a row of n: 16-element multiples, so the blocks stay whole.
#define SLICE(n)                                                      \
  const long per = (((n) + WG - 1) / WG + 15) / 16 * 16;              \
  const long b = min((n), (long)get_local_id(0) * per);               \
  const long e = min((n), b + per)

__kernel void softmax_rows_group(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset,
                                 long n, long inner, long rows, int mode) {
  __local ACC scratch[WG];
  const long row = get_group_id(0);
  __global const T_T* x = in + in_offset + row * n;
  SLICE(n);
  __global T_T* y = out + out_offset + row * n;
  ACC m = group_combine(scratch, range_max(x, b, e), 1);
  const int zero = SAFE_ROW(mode, m);
  if (zero) m = 0;
  if (ONE_EXP(mode)) {
    const ACC s = group_combine(scratch, range_exp_store(y, x, b, e, m), 0);
    range_scale(y, b, e, zero ? (ACC)0 : (ACC)1 / s);
    return;
  }
  const ACC s = group_combine(scratch, range_sum_exp(x, b, e, m), 0);
  range_write(y, x, b, e, m, zero ? (ACC)0 : (ACC)1 / s, log(s), mode == 1);
}

__kernel void softmax_backward_rows_group(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                          ulong go_offset, __global const T_T* y, ulong y_offset, long n,
                                          long inner, long rows, int log_softmax) {
  __local ACC scratch[WG];
  const long base = get_group_id(0) * n;
  SLICE(n);
  const ACC dot = range_dot(grad_out + go_offset + base, y + y_offset + base, b, e, log_softmax);
  const ACC s = group_combine(scratch, dot, 0);
  range_backward(grad_in + gi_offset + base, grad_out + go_offset + base, y + y_offset + base, b, e, s,
                 log_softmax);
}

// ---- inner > 1: a work-item per COLUMN_LANES adjacent columns of one outer index ----
// Each walks the dim with an accumulator per column in private arrays, so that its loop over the columns
// vectorises (adjacent addresses). A work-item per column kept in lock-step by a barrier every 4 elements
// was 7x CPU's time for softmax(0) of 1024x1024 on PoCL: a barrier region per step of the dim.
#define COLUMN_LANES 16

// The columns [c, c + w) of outer index o; w is COLUMN_LANES (a constant, once inlined) or the last block's.
inline __attribute__((always_inline)) void softmax_column_block(__global T_T* y, __global const T_T* x, long dim,
                                                                long inner, int w, int mode) {
  ACC m[COLUMN_LANES], s[COLUMN_LANES];
  for (int l = 0; l < w; ++l) {
    m[l] = ACC_LOWEST;
    s[l] = 0;
  }
  for (long j = 0; j < dim; ++j)
    for (int l = 0; l < w; ++l) m[l] = MAX_NAN(m[l], (ACC)LOAD_T(x, j * inner + l));
  for (int l = 0; l < w; ++l)
    if (SAFE_ROW(mode, m[l])) m[l] = 0;
  for (long j = 0; j < dim; ++j)
    for (int l = 0; l < w; ++l) s[l] += exp((ACC)LOAD_T(x, j * inner + l) - m[l]);
  if (mode == 1) {
    for (int l = 0; l < w; ++l) s[l] = log(s[l]);
    for (long j = 0; j < dim; ++j)
      for (int l = 0; l < w; ++l) STORE_T(y, j * inner + l, (ACC)LOAD_T(x, j * inner + l) - m[l] - s[l]);
  } else {
    // A safe softmax row of -inf only (its max set to 0 above) sums to 0, and no other row does (its max
    // gives exp(0) = 1): written as 0.
    for (int l = 0; l < w; ++l) s[l] = (mode == 2 && s[l] == 0) ? (ACC)0 : (ACC)1 / s[l];
    for (long j = 0; j < dim; ++j)
      for (int l = 0; l < w; ++l) STORE_T(y, j * inner + l, exp((ACC)LOAD_T(x, j * inner + l) - m[l]) * s[l]);
  }
}

__kernel void softmax_columns(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset,
                              long dim, long inner, long rows, int mode) {
  const long blocks = (inner + COLUMN_LANES - 1) / COLUMN_LANES;
  const long item = get_global_id(0);
  if (item >= rows / inner * blocks) return;
  const long o = item / blocks, c = (item - o * blocks) * COLUMN_LANES;
  const long base = o * dim * inner + c;
  const int w = (int)min((long)COLUMN_LANES, inner - c);
  if (w == COLUMN_LANES)
    softmax_column_block(out + out_offset + base, in + in_offset + base, dim, inner, COLUMN_LANES, mode);
  else
    softmax_column_block(out + out_offset + base, in + in_offset + base, dim, inner, w, mode);
}

inline __attribute__((always_inline)) void softmax_backward_column_block(__global T_T* gi, __global const T_T* g,
                                                                         __global const T_T* v, long dim, long inner,
                                                                         int w, int log_softmax) {
  ACC s[COLUMN_LANES];
  for (int l = 0; l < w; ++l) s[l] = 0;
  if (log_softmax) {
    for (long j = 0; j < dim; ++j)
      for (int l = 0; l < w; ++l) s[l] += (ACC)LOAD_T(g, j * inner + l);
    for (long j = 0; j < dim; ++j)
      for (int l = 0; l < w; ++l) {
        const long i = j * inner + l;
        STORE_T(gi, i, (ACC)LOAD_T(g, i) - exp((ACC)LOAD_T(v, i)) * s[l]);
      }
  } else {
    for (long j = 0; j < dim; ++j)
      for (int l = 0; l < w; ++l) s[l] += (ACC)LOAD_T(g, j * inner + l) * (ACC)LOAD_T(v, j * inner + l);
    for (long j = 0; j < dim; ++j)
      for (int l = 0; l < w; ++l) {
        const long i = j * inner + l;
        STORE_T(gi, i, (ACC)LOAD_T(v, i) * ((ACC)LOAD_T(g, i) - s[l]));
      }
  }
}

__kernel void softmax_backward_columns(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                       ulong go_offset, __global const T_T* y, ulong y_offset, long dim, long inner,
                                       long rows, int log_softmax) {
  const long blocks = (inner + COLUMN_LANES - 1) / COLUMN_LANES;
  const long item = get_global_id(0);
  if (item >= rows / inner * blocks) return;
  const long o = item / blocks, c = (item - o * blocks) * COLUMN_LANES;
  const long base = o * dim * inner + c;
  const int w = (int)min((long)COLUMN_LANES, inner - c);
  if (w == COLUMN_LANES)
    softmax_backward_column_block(grad_in + gi_offset + base, grad_out + go_offset + base, y + y_offset + base, dim,
                                  inner, COLUMN_LANES, log_softmax);
  else
    softmax_backward_column_block(grad_in + gi_offset + base, grad_out + go_offset + base, y + y_offset + base, dim,
                                  inner, w, log_softmax);
}
