// cross_entropy over class indices, fused: log_softmax and nll_loss in one pass over the logits, and a
// backward that writes the gradient from the logits and two numbers per row, instead of log_softmax's
// (N, C) output written, read by nll_loss, and read twice more by the backward
// (aten/native/cross_entropy.cpp chooses it and the form), contiguous tensors.
// Per row the forward keeps stats[2 n] = max, stats[2 n + 1] = log(sum(exp(x - max))), and computes
// the loss as CPU does: -w[t] * logp[t] with logp = (x - max) - log(sum). With label smoothing e the row's
// loss is (1 - e) * that + e / C * -sum_c(w[c] * logp[c]) (CPU's composite adds the two terms' reductions,
// which share their 'mean' divisor, the total weight of the rows' targets). The backward is
// p * (A + e / C * W) - [c == t] * A - e / C * g * w[c], with p = exp(logp), A = (1 - e) * w[t] * g,
// g the row's gradient (/ total weight for 'mean') and W the sum of the class weights (C without).
// Input (N, C, d1, ...) is a row of C classes per (n, d...) position, `inner` = d1 * ... apart; target
// (N, d1, ...). Forms:
//   *_rows   a work-item per row, 16-element vectors (PoCL's CPU vectoriser), for inner == 1;
//   *_lines  `seg` items per row or column (line_reduce.cl), coalesced: GPUs, CPUs with few rows, and
//            spatial inputs (inner > 1: adjacent items on adjacent positions).
// A target outside [0, C), but ignore_index, adds nothing and is reported through `bad`:
//   bad_first = 0: the call site's deferred-error record (runtime/deferred_errors.h), the first
//                  row to fail writes its target and C;
//   bad_first = 1: atomic_min of the row into bad[0] (the host set it to INT_MAX and reads it back).
// Reductions: each row (rows form) or work-group (lines form) writes partial[2 i] = its loss and
// partial[2 i + 1] = its weight, summed by loss_gpu.cl's nll_reduce_finish.

#include "vec16.cl"
#include "row_logsumexp.cl"
#include "line_reduce.cl"

inline void note_bad_target(__global int* bad, ulong bad_offset, int bad_first, long row, long t, long C) {
  if (bad_first) {
    atomic_min((volatile __global int*)(bad + bad_offset), (int)row);
  } else {
    tocl_record_index_error(bad + bad_offset, t, C);
  }
}

// The row's class weight (0 for ignore_index and bad targets) and loss, given its max and log-sum and,
// with label smoothing, the weighted sum of its log-probabilities.
inline ACC row_loss(__global const T_T* x, __global const I_T* target, ulong t_offset, __global const T_T* weight,
                    ulong w_offset, int has_weight, __global int* bad, ulong bad_offset, int bad_first, long row,
                    long C, long stride, long ignore_index, ACC m, ACC log_sum, ACC smoothing, ACC sum_logp,
                    ACC* w) {
  *w = 0;
  const long t = (long)target[t_offset + row];
  if (t == ignore_index) return 0;
  if (t < 0 || t >= C) {
    note_bad_target(bad, bad_offset, bad_first, row, t, C);
    return 0;
  }
  *w = has_weight ? (ACC)LOAD_T(weight, w_offset + t) : (ACC)1;
  const ACC nll = -*w * (((ACC)LOAD_T(x, t * stride) - m) - log_sum);
  return smoothing == 0 ? nll : (1 - smoothing) * nll + smoothing / (ACC)C * -sum_logp;
}

// The row's part of the backward: p * a - [c == t] * b - w[c] * d (see the top).
typedef struct {
  long t;   // -1 where the row adds nothing
  ACC a, b, d;
} RowGrad;

// g: grad_out[go_offset + row * go_stride] ('none': per row; else go_stride = 0); 0 where the row adds
// nothing. weight_sum: W (read only with smoothing and a weight).
inline RowGrad row_grad(__global const T_T* grad_out, ulong go_offset, long go_stride, __global const I_T* target,
                        ulong t_offset, __global const T_T* weight, ulong w_offset, int has_weight,
                        __global const T_T* total_weight, ulong tw_offset, __global const T_T* weight_sum,
                        ulong ws_offset, int mean, ACC smoothing, long row, long C, long ignore_index) {
  RowGrad r = {(long)target[t_offset + row], 0, 0, 0};
  if (r.t == ignore_index || r.t < 0 || r.t >= C) {
    r.t = -1;
    return r;
  }
  ACC g = (ACC)LOAD_T(grad_out, go_offset + row * go_stride);
  if (mean) g /= (ACC)LOAD_T(total_weight, tw_offset);
  const ACC coef = (has_weight ? (ACC)LOAD_T(weight, w_offset + r.t) : (ACC)1) * g;
  if (smoothing == 0) {
    r.a = r.b = coef;
    return r;
  }
  r.b = (1 - smoothing) * coef;
  r.d = smoothing / (ACC)C * g;
  r.a = r.b + r.d * (has_weight ? (ACC)LOAD_T(weight_sum, ws_offset) : (ACC)C);
  return r;
}

#define FORWARD_ARGS                                                                                          \
  __global T_T *out, ulong out_offset, __global ACC *partial, ulong partial_offset, __global ACC *stats,        \
      ulong stats_offset, __global const T_T *in, ulong in_offset, __global const I_T *target, ulong t_offset, \
      __global const T_T *weight, ulong w_offset, int has_weight, __global int *bad, ulong bad_offset,         \
      int bad_first, long N, long C, long ignore_index, int reduce, ACC smoothing

#define BACKWARD_ARGS                                                                                          \
  __global T_T *grad_in, ulong gi_offset, __global const T_T *grad_out, ulong go_offset, long go_stride,        \
      __global const T_T *in, ulong in_offset, __global const ACC *stats, ulong stats_offset,                   \
      __global const I_T *target, ulong t_offset, __global const T_T *weight, ulong w_offset, int has_weight,   \
      __global const T_T *total_weight, ulong tw_offset, __global const T_T *weight_sum, ulong ws_offset,       \
      int mean, ACC smoothing, long N, long C, long ignore_index

// ---- a work-item per row; the global size is N rounded up to the group ----

__kernel void cross_entropy_rows(FORWARD_ARGS) {
  const long row = get_global_id(0);
  if (row >= N) return;
  __global const T_T* x = in + in_offset + row * C;
  const ACC m = range_max(x, 0, C);
  const ACC log_sum = log(range_sum_exp(x, 0, C, m));
  stats[stats_offset + 2 * row] = m;
  stats[stats_offset + 2 * row + 1] = log_sum;
  ACC16 lp = 0;  // with smoothing: sum_c w[c] * logp[c]
  if (smoothing != 0) {
    __global const T_T* wc = weight + w_offset;
    long j = 0;
    for (; j + 16 <= C; j += 16) {
      const ACC16 l = (LOAD16(x, j) - m) - log_sum;
      lp += has_weight ? l * LOAD16(wc, j) : l;
    }
    if (j < C) {
      const ACC16 l = lane_mask_keep((LOAD16_CLAMPED(x, j, C - 1) - m) - log_sum, (ACC16)0, C - j);
      lp += has_weight ? l * LOAD16_CLAMPED(wc, j, C - 1) : l;
    }
  }
  ACC w;
  const ACC loss = row_loss(x, target, t_offset, weight, w_offset, has_weight, bad, bad_offset, bad_first, row, C, 1,
                            ignore_index, m, log_sum, smoothing, sum16(lp), &w);
  if (!reduce) {
    STORE_T(out, out_offset + row, loss);
    return;
  }
  partial[partial_offset + 2 * row] = loss;
  partial[partial_offset + 2 * row + 1] = w;
}

__kernel void cross_entropy_backward_rows(BACKWARD_ARGS) {
  const long row = get_global_id(0);
  if (row >= N) return;
  const RowGrad r = row_grad(grad_out, go_offset, go_stride, target, t_offset, weight, w_offset, has_weight,
                             total_weight, tw_offset, weight_sum, ws_offset, mean, smoothing, row, C, ignore_index);
  const long base = row * C;
  __global const T_T* x = in + in_offset + base;
  __global const T_T* wc = weight + w_offset;
  __global T_T* gi = grad_in + gi_offset + base;
  const ACC m = stats[stats_offset + 2 * row], log_sum = stats[stats_offset + 2 * row + 1];
  long j = 0;
  if (smoothing == 0) {
    for (; j + 16 <= C; j += 16) store16(gi, j, exp((LOAD16(x, j) - m) - log_sum) * r.a, 16);
    if (j < C) store16(gi, j, exp((LOAD16_CLAMPED(x, j, C - 1) - m) - log_sum) * r.a, C - j);
  } else {
    for (; j + 16 <= C; j += 16)
      store16(gi, j, exp((LOAD16(x, j) - m) - log_sum) * r.a - (has_weight ? LOAD16(wc, j) : (ACC16)1) * r.d, 16);
    if (j < C)
      store16(gi, j,
              exp((LOAD16_CLAMPED(x, j, C - 1) - m) - log_sum) * r.a -
                  (has_weight ? LOAD16_CLAMPED(wc, j, C - 1) : (ACC16)1) * r.d,
              C - j);
  }
  if (r.t >= 0) {
    const ACC wt = has_weight ? (ACC)LOAD_T(wc, r.t) : (ACC)1;
    STORE_T(gi, r.t, exp(((ACC)LOAD_T(x, r.t) - m) - log_sum) * r.a - r.b - wt * r.d);
  }
}

// ---- seg items per row (line_reduce.cl); whole groups ----

__kernel void cross_entropy_lines(FORWARD_ARGS, long inner, int seg) {
  __local ACC s1[WG], s2[WG];
  const Line L = line_of(C, inner, N, seg);
  const long st = L.stride;
  __global const T_T* x = in + in_offset + L.base;
  ACC v[LINE_REGS];
  ACC m = ACC_LOWEST;
#pragma unroll
  for (int i = 0; i < LINE_REGS; ++i) {
    const long k = L.pos + (long)i * seg;
    v[i] = k < C ? (ACC)LOAD_T(x, k * st) : ACC_LOWEST;
    m = LINE_MAX_NAN(m, v[i]);
  }
  for (long k = L.pos + (long)LINE_REGS * seg; k < C; k += seg) m = LINE_MAX_NAN(m, (ACC)LOAD_T(x, k * st));
  m = seg_max(s1, m, L.pos, seg, L.step);
  ACC s = 0;
#pragma unroll
  for (int i = 0; i < LINE_REGS; ++i)
    if (L.pos + (long)i * seg < C) s += exp(v[i] - m);
  for (long k = L.pos + (long)LINE_REGS * seg; k < C; k += seg) s += exp((ACC)LOAD_T(x, k * st) - m);
  s = seg_sum(s1, s, L.pos, seg, L.step);
  const ACC log_sum = log(s);
  ACC lp = 0;  // with smoothing: sum_c w[c] * logp[c]
  if (smoothing != 0) {  // uniform
#pragma unroll
    for (int i = 0; i < LINE_REGS; ++i) {
      const long k = L.pos + (long)i * seg;
      if (k < C) lp += ((v[i] - m) - log_sum) * (has_weight ? (ACC)LOAD_T(weight, w_offset + k) : (ACC)1);
    }
    for (long k = L.pos + (long)LINE_REGS * seg; k < C; k += seg)
      lp += (((ACC)LOAD_T(x, k * st) - m) - log_sum) * (has_weight ? (ACC)LOAD_T(weight, w_offset + k) : (ACC)1);
    lp = seg_sum(s1, lp, L.pos, seg, L.step);
  }
  ACC loss = 0, w = 0;
  if (L.live && L.pos == 0) {
    stats[stats_offset + 2 * L.line] = m;
    stats[stats_offset + 2 * L.line + 1] = log_sum;
    loss = row_loss(x, target, t_offset, weight, w_offset, has_weight, bad, bad_offset, bad_first, L.line, C,
                    st, ignore_index, m, log_sum, smoothing, lp, &w);
    if (!reduce) STORE_T(out, out_offset + L.line, loss);
  }
  if (!reduce) return;  // uniform: no barrier follows
  seg_sum2(s1, s2, &loss, &w, get_local_id(0), WG, 1);
  if (get_local_id(0) == 0) {
    partial[partial_offset + 2 * get_group_id(0)] = loss;
    partial[partial_offset + 2 * get_group_id(0) + 1] = w;
  }
}

__kernel void cross_entropy_backward_lines(BACKWARD_ARGS, long inner, int seg) {
  const Line L = line_of(C, inner, N, seg);
  const long st = L.stride;
  if (!L.live) return;  // no barrier here
  const RowGrad r = row_grad(grad_out, go_offset, go_stride, target, t_offset, weight, w_offset, has_weight,
                             total_weight, tw_offset, weight_sum, ws_offset, mean, smoothing, L.line, C, ignore_index);
  __global const T_T* x = in + in_offset + L.base;
  __global T_T* gi = grad_in + gi_offset + L.base;
  const ACC m = stats[stats_offset + 2 * L.line], log_sum = stats[stats_offset + 2 * L.line + 1];
  for (long k = L.pos; k < C; k += seg) {
    ACC v = exp(((ACC)LOAD_T(x, k * st) - m) - log_sum) * r.a;
    if (k == r.t) v -= r.b;
    if (smoothing != 0) v -= (has_weight ? (ACC)LOAD_T(weight, w_offset + k) : (ACC)1) * r.d;
    STORE_T(gi, k * st, v);
  }
}
