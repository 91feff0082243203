// Layer norm and batch norm: the GPU forms (normalization.cl holds the CPU forms, and group norm;
// aten/native/normalization.cpp takes these where runtime/kernel_forms.h says row_gpu_forms).
// Statistics in ACC (float for float/half/bfloat16, double for double).
//
// Layer norm: rows of n are lines (line_reduce.cl), a segment of a work-group each, the row kept
// in registers (mean, then the variance about it: two passes over registers, one over memory).
// Its weight/bias gradients are column sums over the rows: groups of `cols` adjacent columns and
// a block of rows each write partial sums, which a second kernel adds up.
// Batch norm over a contiguous (N, C, S) tensor: channel c is N planes of S contiguous elements.
// Each channel is split into `blocks` blocks of planes, a work-group each (so that C * blocks
// groups occupy the device); with more than one block a second kernel combines the blocks.

#include "line_reduce.cl"

// ---- layer norm ----

__kernel void layer_norm_lines_forward(__global T_T* out, ulong out_offset, __global T_T* mean_out,
                                       ulong mean_offset, __global T_T* rstd_out, ulong rstd_offset,
                                       __global const T_T* in, ulong in_offset, __global const T_T* weight,
                                       ulong w_offset, __global const T_T* bias, ulong b_offset, int has_weight,
                                       int has_bias, long n, long rows, int seg, ACC eps) {
  __local ACC scratch[WG];
  const Line L = line_of(n, 1, rows, seg);
  __global const T_T* x = in + in_offset + L.base;
  // Sums of x - x[0]: a constant row's mean is exactly its value and its variance exactly 0, as CPU's
  // Welford update gives (so eps = 0 gives CPU's NaN), and a large offset cancels before the sum.
  const ACC x0 = n > 0 ? (ACC)LOAD_T(x, 0) : (ACC)0;
  ACC v[LINE_REGS];
  ACC s = 0;
#pragma unroll
  for (int i = 0; i < LINE_REGS; ++i) {
    const long k = L.pos + (long)i * seg;
    v[i] = k < n ? (ACC)LOAD_T(x, k) : (ACC)0;
    if (k < n) s += v[i] - x0;
  }
  for (long k = L.pos + (long)LINE_REGS * seg; k < n; k += seg) s += (ACC)LOAD_T(x, k) - x0;
  const ACC total = seg_sum(scratch, s, L.pos, seg, L.step);
  const ACC mean = n > 0 ? x0 + total / (ACC)n : (ACC)0;  // CPU's mean of an empty row is 0
  ACC q = 0;
#pragma unroll
  for (int i = 0; i < LINE_REGS; ++i) {
    const ACC d = v[i] - mean;
    if (L.pos + (long)i * seg < n) q += d * d;
  }
  for (long k = L.pos + (long)LINE_REGS * seg; k < n; k += seg) {
    const ACC d = (ACC)LOAD_T(x, k) - mean;
    q += d * d;
  }
  const ACC rstd = (ACC)1 / sqrt(seg_sum(scratch, q, L.pos, seg, L.step) / (ACC)n + eps);
  if (!L.live) return;
  if (L.pos == 0) {
    STORE_T(mean_out, mean_offset + L.line, mean);
    STORE_T(rstd_out, rstd_offset + L.line, rstd);
  }
  __global T_T* y = out + out_offset + L.base;
#pragma unroll
  for (int i = 0; i < LINE_REGS; ++i) {
    const long k = L.pos + (long)i * seg;
    if (k < n) {
      ACC r = (v[i] - mean) * rstd;
      if (has_weight) r *= LOAD_T(weight, w_offset + k);
      if (has_bias) r += LOAD_T(bias, b_offset + k);
      STORE_T(y, k, r);
    }
  }
  for (long k = L.pos + (long)LINE_REGS * seg; k < n; k += seg) {
    ACC r = ((ACC)LOAD_T(x, k) - mean) * rstd;
    if (has_weight) r *= LOAD_T(weight, w_offset + k);
    if (has_bias) r += LOAD_T(bias, b_offset + k);
    STORE_T(y, k, r);
  }
}

// dx = rstd * (a - mean(a) - xhat * mean(a * xhat)), a = grad * weight, xhat = (x - mean) * rstd.
__kernel void layer_norm_lines_backward(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                        ulong go_offset, __global const T_T* in, ulong in_offset,
                                        __global const T_T* mean, ulong mean_offset, __global const T_T* rstd,
                                        ulong rstd_offset, __global const T_T* weight, ulong w_offset,
                                        int has_weight, long n, long rows, int seg) {
  __local ACC s1[WG], s2[WG];
  const Line L = line_of(n, 1, rows, seg);
  __global const T_T* x = in + in_offset + L.base;
  __global const T_T* g = grad_out + go_offset + L.base;
  const ACC m = LOAD_T(mean, mean_offset + L.line), r = LOAD_T(rstd, rstd_offset + L.line);
  ACC av[LINE_REGS], xv[LINE_REGS];
  ACC sa = 0, sax = 0;
#pragma unroll
  for (int i = 0; i < LINE_REGS; ++i) {
    const long k = L.pos + (long)i * seg;
    av[i] = 0;
    xv[i] = 0;
    if (k < n) {
      av[i] = LOAD_T(g, k);
      if (has_weight) av[i] *= LOAD_T(weight, w_offset + k);
      xv[i] = ((ACC)LOAD_T(x, k) - m) * r;
    }
    sa += av[i];
    sax += av[i] * xv[i];
  }
  for (long k = L.pos + (long)LINE_REGS * seg; k < n; k += seg) {
    ACC a = LOAD_T(g, k);
    if (has_weight) a *= LOAD_T(weight, w_offset + k);
    sa += a;
    sax += a * ((ACC)LOAD_T(x, k) - m) * r;
  }
  seg_sum2(s1, s2, &sa, &sax, L.pos, seg, L.step);
  if (!L.live) return;
  const ACC mean_a = sa / (ACC)n, mean_ax = sax / (ACC)n;
  __global T_T* dx = grad_in + gi_offset + L.base;
#pragma unroll
  for (int i = 0; i < LINE_REGS; ++i) {
    const long k = L.pos + (long)i * seg;
    if (k < n) STORE_T(dx, k, r * (av[i] - mean_a - xv[i] * mean_ax));
  }
  for (long k = L.pos + (long)LINE_REGS * seg; k < n; k += seg) {
    ACC a = LOAD_T(g, k);
    if (has_weight) a *= LOAD_T(weight, w_offset + k);
    const ACC xhat = ((ACC)LOAD_T(x, k) - m) * r;
    STORE_T(dx, k, r * (a - mean_a - xhat * mean_ax));
  }
}

// dweight[j] = sum over rows of grad * xhat, dbias[j] = sum of grad. Group (column block cb, row
// block rb): `cols` adjacent columns (item l % cols) times WG / cols items walking the rows of
// [rb * chunk, (rb + 1) * chunk) (item l / cols), then a reduction over the walkers. With one row
// block the group writes the gradients; otherwise partial[rb * 2n + j] (weight) and
// partial[rb * 2n + n + j] (bias), which layer_norm_param_combine adds up.
__kernel void layer_norm_param_columns(__global ACC* partial, ulong partial_offset, __global T_T* dweight,
                                       ulong dw_offset, __global T_T* dbias, ulong db_offset, int want_weight,
                                       int want_bias, __global const T_T* grad_out, ulong go_offset,
                                       __global const T_T* in, ulong in_offset, __global const T_T* mean,
                                       ulong mean_offset, __global const T_T* rstd, ulong rstd_offset, long rows,
                                       long n, int cols, long chunk, long row_blocks) {
  __local ACC s1[WG], s2[WG];
  const int l = get_local_id(0), walkers = WG / cols;
  const int c = l % cols, t = l / cols;
  const long col_blocks = (n + cols - 1) / cols;
  const long cb = get_group_id(0) % col_blocks, rb = get_group_id(0) / col_blocks;
  const long j = cb * cols + c, jc = min(j, n - 1);
  const long r1 = min(rows, (rb + 1) * chunk);
  ACC sw = 0, sb = 0;
  for (long r = rb * chunk + t; r < r1; r += walkers) {
    const ACC g = LOAD_T(grad_out, go_offset + r * n + jc);
    sb += g;
    sw += g * ((ACC)LOAD_T(in, in_offset + r * n + jc) - (ACC)LOAD_T(mean, mean_offset + r)) *
          (ACC)LOAD_T(rstd, rstd_offset + r);
  }
  seg_sum2(s1, s2, &sw, &sb, t, walkers, cols);
  if (t != 0 || j >= n) return;
  if (row_blocks == 1) {
    if (want_weight) STORE_T(dweight, dw_offset + j, sw);
    if (want_bias) STORE_T(dbias, db_offset + j, sb);
  } else {
    partial[partial_offset + rb * 2 * n + j] = sw;
    partial[partial_offset + rb * 2 * n + n + j] = sb;
  }
}

// One item per gradient element i of 2n (weight then bias): the sum of the row blocks' partials.
__kernel void layer_norm_param_combine(__global T_T* dweight, ulong dw_offset, __global T_T* dbias, ulong db_offset,
                                       int want_weight, int want_bias, __global const ACC* partial,
                                       ulong partial_offset, long n, long row_blocks) {
  const long i = get_global_id(0);
  if (i >= 2 * n) return;
  ACC s = 0;
  for (long b = 0; b < row_blocks; ++b) s += partial[partial_offset + b * 2 * n + i];
  if (i < n) {
    if (want_weight) STORE_T(dweight, dw_offset + i, s);
  } else if (want_bias) {
    STORE_T(dbias, db_offset + i - n, s);
  }
}

// ---- batch norm over (N, C, S) ----

// Calls BODY(index) for the elements of channel c in planes [p0, p1) that this item takes:
// consecutive items on consecutive elements of a plane, several planes at once when S < WG.
#define FOR_CHANNEL_BLOCK(c, C, S, p0, p1, BODY)                                    \
  do {                                                                              \
    const int l_ = get_local_id(0);                                                 \
    if ((S) > 0 && (S) <= WG) {                                                     \
      const long per_ = WG / (S), s_ = l_ % (S);                                    \
      if (l_ < per_ * (S))                                                          \
        for (long p_ = (p0) + l_ / (S); p_ < (p1); p_ += per_) {                    \
          BODY((p_ * (C) + (c)) * (S) + s_);                                        \
        }                                                                           \
    } else {                                                                        \
      for (long p_ = (p0); p_ < (p1); ++p_)                                         \
        for (long s_ = l_; s_ < (S); s_ += WG) BODY((p_ * (C) + (c)) * (S) + s_);   \
    }                                                                               \
  } while (0)

// Mean and M2 (sum of squared deviations) of two sets of na and nb elements combined (Chan et al.).
inline void merge_moments(ACC* n, ACC* mean, ACC* m2, ACC nb, ACC mean_b, ACC m2_b) {
  const ACC total = *n + nb;
  if (nb == 0) return;
  const ACC delta = mean_b - *mean, f = nb / total;
  *mean += delta * f;
  *m2 += m2_b + delta * delta * *n * f;
  *n = total;
}

// save_mean, save_invstd and the running stats (running = (1 - momentum) * running + momentum * stat,
// the variance unbiased) of channel c from its count, mean and M2; as normalization.cl's bn_stats.
inline void bn_stats_store(__global T_T* save_mean, ulong sm_offset, __global T_T* save_invstd, ulong si_offset,
                           __global T_T* running_mean, ulong rm_offset, __global T_T* running_var, ulong rv_offset,
                           int has_running, long c, ACC count, ACC mean, ACC m2, ACC momentum, ACC eps) {
  if (count == 0) mean = m2 = (ACC)NAN;  // as the CPU form: 0 / 0
  STORE_T(save_mean, sm_offset + c, mean);
  STORE_T(save_invstd, si_offset + c, (ACC)1 / sqrt(m2 / count + eps));
  if (has_running) {
    const ACC unbiased = m2 / (count - (ACC)1);
    STORE_T(running_mean, rm_offset + c, momentum * mean + ((ACC)1 - momentum) * (ACC)LOAD_T(running_mean, rm_offset + c));
    STORE_T(running_var, rv_offset + c, momentum * unbiased + ((ACC)1 - momentum) * (ACC)LOAD_T(running_var, rv_offset + c));
  }
}

// Group (block b, channel c) = group id b * C + c: count, mean and M2 of the block's planes
// [b * chunk, (b + 1) * chunk) in one pass: Welford's update per element in each item (no
// cancellation however large the mean is against the spread), then the items' moments merge
// pairwise. One block: the group stores the statistics; otherwise
// partial[(c * blocks + b) * 3 + {0, 1, 2}] = count, mean, M2 for bn_stats_combine.
__kernel void bn_stats_blocks(__global ACC* partial, ulong partial_offset, __global T_T* save_mean, ulong sm_offset,
                              __global T_T* save_invstd, ulong si_offset, __global T_T* running_mean,
                              ulong rm_offset, __global T_T* running_var, ulong rv_offset, int has_running,
                              __global const T_T* in, ulong in_offset, long N, long C, long S, long chunk,
                              long blocks, ACC momentum, ACC eps) {
  __local ACC sn[WG], sm[WG], sq[WG];
  const long c = get_group_id(0) % C, b = get_group_id(0) / C;
  const long p0 = b * chunk, p1 = min(N, p0 + chunk);
  ACC cnt = 0, mean = 0, m2 = 0;
#define BN_STATS_ELEMENT(i)                             \
  {                                                     \
    const ACC v_ = LOAD_T(in, in_offset + (i));         \
    cnt += 1;                                           \
    const ACC d_ = v_ - mean;                           \
    mean += d_ / cnt;                                   \
    m2 += d_ * (v_ - mean);                             \
  }
  FOR_CHANNEL_BLOCK(c, C, S, p0, p1, BN_STATS_ELEMENT);
#undef BN_STATS_ELEMENT
  const int l = get_local_id(0);
  sn[l] = cnt;
  sm[l] = mean;
  sq[l] = m2;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (l < s) {
      ACC na = sn[l], ma = sm[l], qa = sq[l];
      merge_moments(&na, &ma, &qa, sn[l + s], sm[l + s], sq[l + s]);
      sn[l] = na;
      sm[l] = ma;
      sq[l] = qa;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l != 0) return;
  if (blocks == 1) {
    bn_stats_store(save_mean, sm_offset, save_invstd, si_offset, running_mean, rm_offset, running_var, rv_offset,
                   has_running, c, sn[0], sm[0], sq[0], momentum, eps);
  } else {
    __global ACC* p = partial + partial_offset + (c * blocks + b) * 3;
    p[0] = sn[0];
    p[1] = sm[0];
    p[2] = sq[0];
  }
}

// One item per channel: the blocks' moments merged, then stored as bn_stats_blocks does.
__kernel void bn_stats_combine(__global const ACC* partial, ulong partial_offset, __global T_T* save_mean,
                               ulong sm_offset, __global T_T* save_invstd, ulong si_offset,
                               __global T_T* running_mean, ulong rm_offset, __global T_T* running_var,
                               ulong rv_offset, int has_running, long C, long blocks, ACC momentum, ACC eps) {
  const long c = get_global_id(0);
  if (c >= C) return;
  __global const ACC* p = partial + partial_offset + c * blocks * 3;
  ACC n = 0, mean = 0, m2 = 0;
  for (long b = 0; b < blocks; ++b) merge_moments(&n, &mean, &m2, p[3 * b], p[3 * b + 1], p[3 * b + 2]);
  bn_stats_store(save_mean, sm_offset, save_invstd, si_offset, running_mean, rm_offset, running_var, rv_offset,
                 has_running, c, n, mean, m2, momentum, eps);
}

// Elementwise kernels over (N, C, S) without a division per element: group g takes `per` whole
// planes when S <= WG (per = WG / S), else one WG-wide span of a plane. Sets plane, s and live.
#define PLANE_ITEM(C, S, planes)                                             \
  const int l_ = get_local_id(0);                                            \
  const long g_ = get_group_id(0);                                           \
  long plane, s;                                                             \
  int live;                                                                  \
  if ((S) <= WG) {                                                           \
    const long per_ = WG / (S);                                              \
    plane = g_ * per_ + l_ / (S);                                            \
    s = l_ % (S);                                                            \
    live = l_ < per_ * (S) && plane < (planes);                              \
  } else {                                                                   \
    const long spans_ = ((S) + WG - 1) / WG;                                 \
    plane = g_ / spans_;                                                     \
    s = (g_ % spans_) * WG + l_;                                             \
    live = s < (S);                                                          \
  }

// y = (x - mean) * invstd * w + b; is_var: `scale` holds variances (eval: running_var), else invstd.
__kernel void bn_apply_planes(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset,
                              __global const T_T* mean, ulong mean_offset, __global const T_T* scale,
                              ulong scale_offset, int is_var, __global const T_T* weight, ulong w_offset,
                              __global const T_T* bias, ulong b_offset, int has_weight, int has_bias, long planes,
                              long C, long S, ACC eps) {
  PLANE_ITEM(C, S, planes);
  if (!live) return;
  const long c = plane % C, i = plane * S + s;
  const ACC sc = LOAD_T(scale, scale_offset + c);
  ACC y = ((ACC)LOAD_T(in, in_offset + i) - (ACC)LOAD_T(mean, mean_offset + c)) * (is_var ? (ACC)1 / sqrt(sc + eps) : sc);
  if (has_weight) y *= LOAD_T(weight, w_offset + c);
  if (has_bias) y += LOAD_T(bias, b_offset + c);
  STORE_T(out, out_offset + i, y);
}

// sum_g = sum grad, sum_gx = sum grad * (x - mean) per channel, in blocks as bn_stats_blocks.
// One block: sums[c], sums[C + c], dweight = sum_gx * invstd, dbias = sum_g; otherwise
// partial[(c * blocks + b) * 2 + {0, 1}] for bn_backward_combine.
__kernel void bn_backward_blocks(__global ACC* partial, ulong partial_offset, __global ACC* sums, ulong sums_offset,
                                 __global T_T* dweight, ulong dw_offset, __global T_T* dbias, ulong db_offset,
                                 int want_weight, int want_bias, __global const T_T* grad_out, ulong go_offset,
                                 __global const T_T* in, ulong in_offset, __global const T_T* mean, ulong mean_offset,
                                 __global const T_T* scale, ulong scale_offset, int is_var, long N, long C, long S,
                                 long chunk, long blocks, ACC eps) {
  __local ACC s1[WG], s2[WG];
  const long c = get_group_id(0) % C, b = get_group_id(0) / C;
  const long p0 = b * chunk, p1 = min(N, p0 + chunk);
  const ACC m = LOAD_T(mean, mean_offset + c);
  ACC sg = 0, sgx = 0;
#define BN_BACKWARD_ELEMENT(i)                                   \
  {                                                              \
    const ACC g_ = LOAD_T(grad_out, go_offset + (i));            \
    sg += g_;                                                    \
    sgx += g_ * ((ACC)LOAD_T(in, in_offset + (i)) - m);          \
  }
  FOR_CHANNEL_BLOCK(c, C, S, p0, p1, BN_BACKWARD_ELEMENT);
#undef BN_BACKWARD_ELEMENT
  seg_sum2(s1, s2, &sg, &sgx, get_local_id(0), WG, 1);
  if (get_local_id(0) != 0) return;
  if (blocks == 1) {
    const ACC sc = LOAD_T(scale, scale_offset + c);
    const ACC invstd = is_var ? (ACC)1 / sqrt(sc + eps) : sc;
    sums[sums_offset + c] = sg;
    sums[sums_offset + C + c] = sgx;
    if (want_weight) STORE_T(dweight, dw_offset + c, sgx * invstd);
    if (want_bias) STORE_T(dbias, db_offset + c, sg);
  } else {
    partial[partial_offset + (c * blocks + b) * 2] = sg;
    partial[partial_offset + (c * blocks + b) * 2 + 1] = sgx;
  }
}

__kernel void bn_backward_combine(__global const ACC* partial, ulong partial_offset, __global ACC* sums,
                                  ulong sums_offset, __global T_T* dweight, ulong dw_offset, __global T_T* dbias,
                                  ulong db_offset, int want_weight, int want_bias, __global const T_T* scale,
                                  ulong scale_offset, int is_var, long C, long blocks, ACC eps) {
  const long c = get_global_id(0);
  if (c >= C) return;
  __global const ACC* p = partial + partial_offset + c * blocks * 2;
  ACC sg = 0, sgx = 0;
  for (long b = 0; b < blocks; ++b) {
    sg += p[2 * b];
    sgx += p[2 * b + 1];
  }
  const ACC sc = LOAD_T(scale, scale_offset + c);
  const ACC invstd = is_var ? (ACC)1 / sqrt(sc + eps) : sc;
  sums[sums_offset + c] = sg;
  sums[sums_offset + C + c] = sgx;
  if (want_weight) STORE_T(dweight, dw_offset + c, sgx * invstd);
  if (want_bias) STORE_T(dbias, db_offset + c, sg);
}

// train: dx = (g - sum_g / n - (x - mean) * invstd^2 * sum_gx / n) * invstd * w
// eval:  dx = g * invstd * w
__kernel void bn_backward_apply_planes(__global T_T* grad_in, ulong gi_offset, __global const ACC* sums,
                                       ulong sums_offset, __global const T_T* grad_out, ulong go_offset,
                                       __global const T_T* in, ulong in_offset, __global const T_T* mean,
                                       ulong mean_offset, __global const T_T* scale, ulong scale_offset, int is_var,
                                       __global const T_T* weight, ulong w_offset, int has_weight, int train,
                                       long planes, long N, long C, long S, ACC eps) {
  PLANE_ITEM(C, S, planes);
  if (!live) return;
  const long c = plane % C, i = plane * S + s;
  const ACC sc = LOAD_T(scale, scale_offset + c);
  const ACC invstd = is_var ? (ACC)1 / sqrt(sc + eps) : sc;
  const ACC w = has_weight ? (ACC)LOAD_T(weight, w_offset + c) : (ACC)1;
  ACC g = LOAD_T(grad_out, go_offset + i);
  if (train) {
    const ACC n = (ACC)(N * S);
    const ACC xmu = (ACC)LOAD_T(in, in_offset + i) - (ACC)LOAD_T(mean, mean_offset + c);
    g = g - sums[sums_offset + c] / n - xmu * invstd * invstd * sums[sums_offset + C + c] / n;
  }
  STORE_T(grad_in, gi_offset + i, g * invstd * w);
}
