// Layer norm, group norm (row-wise: a row is `n` contiguous elements normalized
// together) and batch norm (per channel of a contiguous (N, C, S) tensor).
// Row kernels run one work-group of WG items per row, channel kernels one per
// channel; reductions through local memory in ACC.
//
// Affine parameters of a row element: p = ((row % groups) * n + j) / inner_div
// (layer norm: groups = inner_div = 1, p = j; group norm: groups = G,
// inner_div = H * W, p = channel).

inline ACC group_sum(__local ACC* scratch, ACC v) {
  const int l = get_local_id(0);
  scratch[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (l < s) scratch[l] += scratch[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const ACC r = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

__kernel void norm_rows_forward(__global T_T* out, ulong out_offset, __global T_T* mean_out, ulong mean_offset,
                                __global T_T* rstd_out, ulong rstd_offset, __global const T_T* in, ulong in_offset,
                                __global const T_T* weight, ulong w_offset, __global const T_T* bias,
                                ulong b_offset, int has_weight, int has_bias, long n, long groups, long inner_div,
                                ACC eps) {
  __local ACC scratch[WG];
  const long row = get_group_id(0);
  const int l = get_local_id(0);
  const long base = row * n;
  // Sums of x - x[0]: a constant row's mean is exactly its value and its variance exactly 0, as CPU's
  // Welford update gives (so eps = 0 gives CPU's NaN), and a large offset cancels before the sum.
  const ACC x0 = n > 0 ? (ACC)LOAD_T(in, in_offset + base) : (ACC)0;
  ACC s = 0;
  for (long j = l; j < n; j += WG) s += LOAD_T(in, in_offset + base + j) - x0;
  const ACC total = group_sum(scratch, s);
  const ACC mean = n > 0 ? x0 + total / (ACC)n : (ACC)0;
  ACC q = 0;
  for (long j = l; j < n; j += WG) {
    const ACC d = LOAD_T(in, in_offset + base + j) - mean;
    q += d * d;
  }
  const ACC var = group_sum(scratch, q) / (ACC)n;
  const ACC rstd = (ACC)1 / sqrt(var + eps);
  if (l == 0) {
    STORE_T(mean_out, mean_offset + row, mean);
    STORE_T(rstd_out, rstd_offset + row, rstd);
  }
  const long pbase = (row % groups) * n;
  for (long j = l; j < n; j += WG) {
    const long p = (pbase + j) / inner_div;
    ACC y = (LOAD_T(in, in_offset + base + j) - mean) * rstd;
    if (has_weight) y *= LOAD_T(weight, w_offset + p);
    if (has_bias) y += LOAD_T(bias, b_offset + p);
    STORE_T(out, out_offset + base + j, y);
  }
}

// dx = rstd * (a - mean(a) - xhat * mean(a * xhat)), a = grad * weight.
__kernel void norm_rows_backward(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                 ulong go_offset, __global const T_T* in, ulong in_offset,
                                 __global const T_T* mean, ulong mean_offset, __global const T_T* rstd,
                                 ulong rstd_offset, __global const T_T* weight, ulong w_offset, int has_weight,
                                 long n, long groups, long inner_div) {
  __local ACC scratch[WG];
  const long row = get_group_id(0);
  const int l = get_local_id(0);
  const long base = row * n, pbase = (row % groups) * n;
  const ACC m = LOAD_T(mean, mean_offset + row), r = LOAD_T(rstd, rstd_offset + row);
  ACC sa = 0, sax = 0;
  for (long j = l; j < n; j += WG) {
    ACC a = LOAD_T(grad_out, go_offset + base + j);
    if (has_weight) a *= LOAD_T(weight, w_offset + (pbase + j) / inner_div);
    sa += a;
    sax += a * (LOAD_T(in, in_offset + base + j) - m) * r;
  }
  const ACC mean_a = group_sum(scratch, sa) / (ACC)n;
  const ACC mean_ax = group_sum(scratch, sax) / (ACC)n;
  for (long j = l; j < n; j += WG) {
    ACC a = LOAD_T(grad_out, go_offset + base + j);
    if (has_weight) a *= LOAD_T(weight, w_offset + (pbase + j) / inner_div);
    const ACC xhat = (LOAD_T(in, in_offset + base + j) - m) * r;
    STORE_T(grad_in, gi_offset + base + j, r * (a - mean_a - xhat * mean_ax));
  }
}

// One work-group per affine parameter p: dweight[p] = sum grad * xhat, dbias[p] = sum grad over
// the rows of p's group (row = group + k * groups) and the inner_div elements of p in each.
__kernel void norm_rows_param_backward(__global T_T* dweight, ulong dw_offset, __global T_T* dbias, ulong db_offset,
                                       int want_weight, int want_bias, __global const T_T* grad_out,
                                       ulong go_offset, __global const T_T* in, ulong in_offset,
                                       __global const T_T* mean, ulong mean_offset, __global const T_T* rstd,
                                       ulong rstd_offset, long rows, long n, long groups, long inner_div) {
  __local ACC scratch[WG];
  const long p = get_group_id(0);
  const int l = get_local_id(0);
  const long group = (p * inner_div) / n, jstart = p * inner_div - group * n;
  const long per_group_rows = rows / groups, count = per_group_rows * inner_div;
  ACC sw = 0, sb = 0;
  for (long k = l; k < count; k += WG) {
    const long row = group + (k / inner_div) * groups, j = jstart + k % inner_div;
    const long i = row * n + j;
    const ACC g = LOAD_T(grad_out, go_offset + i);
    sb += g;
    sw += g * (LOAD_T(in, in_offset + i) - LOAD_T(mean, mean_offset + row)) * LOAD_T(rstd, rstd_offset + row);
  }
  sw = group_sum(scratch, sw);
  sb = group_sum(scratch, sb);
  if (l == 0) {
    if (want_weight) STORE_T(dweight, dw_offset + p, sw);
    if (want_bias) STORE_T(dbias, db_offset + p, sb);
  }
}

// ---- batch norm over (N, C, S): channel c of sample n is the plane of S adjacent elements at (n * C + c) * S ----
// The CPU forms walk whole planes (runs of at most BN_RUN of one, for the elementwise kernels): a loop over
// adjacent elements, in BN_LANES lanes where it sums, which the compiler vectorises. (An element at a time,
// its channel found by two 64-bit divisions, made batch norm's training forward 5x CPU's time on PoCL.)
#define BN_LANES 8
#define BN_RUN 4096

// The BN_LANES lanes' total, in a fixed tree.
inline ACC bn_lanes_total(const ACC* a) { return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7])); }

#if TOCL_LINE_LANES > 1
// Where work-items are vectorised (Intel's CPU runtime; prelude.cl), a group's items walk each plane together,
// item l taking its elements l, l + WG, ...: neighbouring items read neighbouring elements (a plane an item made
// every load a gather: batch norm's training step 16x PoCL's time). BN_PLANES visits every plane in each item.
#define BN_PLANES(n, N) for (long n = 0; n < (N); ++n)

inline ACC bn_plane_sum(__global const T_T* x, long S, ACC shift, int square) {
  ACC acc = 0;
  for (long s = get_local_id(0); s < S; s += WG) {
    const ACC d = (ACC)LOAD_T(x, s) - shift;
    acc += square ? d * d : d;
  }
  return acc;
}

inline ACC bn_plane_grad_sums(__global const T_T* g, __global const T_T* x, long S, ACC mean, ACC* sg) {
  ACC agx = 0;
  for (long s = get_local_id(0); s < S; s += WG) {
    const ACC gv = LOAD_T(g, s);
    *sg += gv;
    agx += gv * ((ACC)LOAD_T(x, s) - mean);
  }
  return agx;
}
#else
// A plane an item, its loops vectorised by the compiler (PoCL).
#define BN_PLANES(n, N) for (long n = get_local_id(0); n < (N); n += WG)

// Sums over the S elements of a plane: of x - shift, or with `square` of (x - shift)^2, or with `grad` of
// g (into *sg) and g * (x - shift) (returned).
inline ACC bn_plane_sum(__global const T_T* x, long S, ACC shift, int square) {
  ACC acc[BN_LANES];
  for (int l = 0; l < BN_LANES; ++l) acc[l] = 0;
  long s = 0;
  if (square) {
    for (; s + BN_LANES <= S; s += BN_LANES)
      for (int l = 0; l < BN_LANES; ++l) {
        const ACC d = (ACC)LOAD_T(x, s + l) - shift;
        acc[l] += d * d;
      }
    for (; s < S; ++s) {
      const ACC d = (ACC)LOAD_T(x, s) - shift;
      acc[0] += d * d;
    }
  } else {
    for (; s + BN_LANES <= S; s += BN_LANES)
      for (int l = 0; l < BN_LANES; ++l) acc[l] += (ACC)LOAD_T(x, s + l) - shift;
    for (; s < S; ++s) acc[0] += (ACC)LOAD_T(x, s) - shift;
  }
  return bn_lanes_total(acc);
}

inline ACC bn_plane_grad_sums(__global const T_T* g, __global const T_T* x, long S, ACC mean, ACC* sg) {
  ACC ag[BN_LANES], agx[BN_LANES];
  for (int l = 0; l < BN_LANES; ++l) ag[l] = agx[l] = 0;
  long s = 0;
  for (; s + BN_LANES <= S; s += BN_LANES)
    for (int l = 0; l < BN_LANES; ++l) {
      const ACC gv = LOAD_T(g, s + l);
      ag[l] += gv;
      agx[l] += gv * ((ACC)LOAD_T(x, s + l) - mean);
    }
  for (; s < S; ++s) {
    const ACC gv = LOAD_T(g, s);
    ag[0] += gv;
    agx[0] += gv * ((ACC)LOAD_T(x, s) - mean);
  }
  *sg += bn_lanes_total(ag);
  return bn_lanes_total(agx);
}

#endif

// Training statistics: save_mean, save_invstd, and the running stats when has_running
// (running = (1 - momentum) * running + momentum * stat, the variance unbiased). A group per channel, its
// work-items taking planes in turn.
__kernel void bn_stats(__global T_T* save_mean, ulong sm_offset, __global T_T* save_invstd, ulong si_offset,
                       __global T_T* running_mean, ulong rm_offset, __global T_T* running_var, ulong rv_offset,
                       int has_running, __global const T_T* in, ulong in_offset, long N, long C, long S,
                       ACC momentum, ACC eps) {
  __local ACC scratch[WG];
  const long c = get_group_id(0);
  const int l = get_local_id(0);
  const long count = N * S;
  // Sums of x - x[0], as norm_rows_forward's: a constant channel's variance is exactly 0.
  const ACC x0 = count > 0 ? (ACC)LOAD_T(in, in_offset + c * S) : (ACC)0;
  ACC s = 0;
  BN_PLANES(n, N) s += bn_plane_sum(in + in_offset + (n * C + c) * S, S, x0, 0);
  const ACC mean = x0 + group_sum(scratch, s) / (ACC)count;
  ACC q = 0;
  BN_PLANES(n, N) q += bn_plane_sum(in + in_offset + (n * C + c) * S, S, mean, 1);
  const ACC m2 = group_sum(scratch, q);
  if (l == 0) {
    STORE_T(save_mean, sm_offset + c, mean);
    STORE_T(save_invstd, si_offset + c, (ACC)1 / sqrt(m2 / (ACC)count + eps));
    if (has_running) {
      const ACC unbiased = m2 / (ACC)(count - 1);
      STORE_T(running_mean, rm_offset + c, momentum * mean + ((ACC)1 - momentum) * (ACC)LOAD_T(running_mean, rm_offset + c));
      STORE_T(running_var, rv_offset + c, momentum * unbiased + ((ACC)1 - momentum) * (ACC)LOAD_T(running_var, rv_offset + c));
    }
  }
}

// The elementwise kernels' work-item: run r of plane p (planes N * C, each cut into runs of BN_RUN).
#define BN_RUN_ITEM(planes, C, S)                                  \
  const long runs_ = ((S) + BN_RUN - 1) / BN_RUN;                  \
  const long item_ = RUN_ID();                                     \
  if (item_ >= (planes) * runs_) return;                           \
  const long p = item_ / runs_;                                    \
  const long c = p % (C);                                          \
  const long lo = (item_ - p * runs_) * BN_RUN;                    \
  const long hi = min(lo + BN_RUN, (S));                           \
  const long at = p * (S);

// y = (x - mean) * invstd * w + b; is_var: `scale` holds variances (eval: running_var), else invstd.
// `planes` = N * C; the host launches planes * ceil(S / BN_RUN) work-items.
__kernel void bn_apply(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset,
                       __global const T_T* mean, ulong mean_offset, __global const T_T* scale, ulong scale_offset,
                       int is_var, __global const T_T* weight, ulong w_offset, __global const T_T* bias,
                       ulong b_offset, int has_weight, int has_bias, long planes, long C, long S, ACC eps) {
  BN_RUN_ITEM(planes, C, S)
  const ACC sc = LOAD_T(scale, scale_offset + c);
  const ACC m = LOAD_T(mean, mean_offset + c);
  const ACC invstd = is_var ? (ACC)1 / sqrt(sc + eps) : sc;
  const ACC w = has_weight ? (ACC)LOAD_T(weight, w_offset + c) : (ACC)1;
  const ACC b = has_bias ? (ACC)LOAD_T(bias, b_offset + c) : (ACC)0;
  __global const T_T* x = in + in_offset + at;
  __global T_T* y = out + out_offset + at;
  for (long s = lo + RUN_LANE(); s < hi; s += TOCL_LINE_LANES) STORE_T(y, s, ((ACC)LOAD_T(x, s) - m) * invstd * w + b);
}

// Per channel: sum_g = sum grad, sum_gx = sum grad * (x - mean); writes dweight = sum_gx * invstd,
// dbias = sum_g, and both sums into `sums` (2 * C, ACC) for the dx pass. A group per channel, its work-items
// taking planes in turn.
__kernel void bn_backward_reduce(__global ACC* sums, ulong sums_offset, __global T_T* dweight, ulong dw_offset,
                                 __global T_T* dbias, ulong db_offset, int want_weight, int want_bias,
                                 __global const T_T* grad_out, ulong go_offset, __global const T_T* in,
                                 ulong in_offset, __global const T_T* mean, ulong mean_offset,
                                 __global const T_T* scale, ulong scale_offset, int is_var, long N, long C, long S,
                                 ACC eps) {
  __local ACC scratch[WG];
  const long c = get_group_id(0);
  const int l = get_local_id(0);
  const ACC m = LOAD_T(mean, mean_offset + c);
  const ACC sc = LOAD_T(scale, scale_offset + c);
  const ACC invstd = is_var ? (ACC)1 / sqrt(sc + eps) : sc;
  ACC sg = 0, sgx = 0;
  BN_PLANES(n, N) {
    const long at = (n * C + c) * S;
    sgx += bn_plane_grad_sums(grad_out + go_offset + at, in + in_offset + at, S, m, &sg);
  }
  sg = group_sum(scratch, sg);
  sgx = group_sum(scratch, sgx);
  if (l == 0) {
    sums[sums_offset + c] = sg;
    sums[sums_offset + C + c] = sgx;
    if (want_weight) STORE_T(dweight, dw_offset + c, sgx * invstd);
    if (want_bias) STORE_T(dbias, db_offset + c, sg);
  }
}

// train: dx = (g - sum_g / n - (x - mean) * invstd^2 * sum_gx / n) * invstd * w
// eval:  dx = g * invstd * w
// `planes` = N * C; the host launches planes * ceil(S / BN_RUN) work-items.
__kernel void bn_backward_apply(__global T_T* grad_in, ulong gi_offset, __global const ACC* sums, ulong sums_offset,
                                __global const T_T* grad_out, ulong go_offset, __global const T_T* in,
                                ulong in_offset, __global const T_T* mean, ulong mean_offset,
                                __global const T_T* scale, ulong scale_offset, int is_var,
                                __global const T_T* weight, ulong w_offset, int has_weight, int train, long planes,
                                long N, long C, long S, ACC eps) {
  BN_RUN_ITEM(planes, C, S)
  const ACC sc = LOAD_T(scale, scale_offset + c);
  const ACC invstd = is_var ? (ACC)1 / sqrt(sc + eps) : sc;
  const ACC w = has_weight ? (ACC)LOAD_T(weight, w_offset + c) : (ACC)1;
  __global const T_T* g = grad_out + go_offset + at;
  __global T_T* gi = grad_in + gi_offset + at;
  if (train) {
    const ACC n = (ACC)(N * S);
    const ACC m = LOAD_T(mean, mean_offset + c);
    const ACC mean_g = sums[sums_offset + c] / n, k = invstd * invstd * sums[sums_offset + C + c] / n;
    __global const T_T* x = in + in_offset + at;
    for (long s = lo + RUN_LANE(); s < hi; s += TOCL_LINE_LANES)
      STORE_T(gi, s, ((ACC)LOAD_T(g, s) - mean_g - ((ACC)LOAD_T(x, s) - m) * k) * invstd * w);
  } else {
    for (long s = lo + RUN_LANE(); s < hi; s += TOCL_LINE_LANES) STORE_T(gi, s, (ACC)LOAD_T(g, s) * invstd * w);
  }
}

// ---- layer norm, many rows: one work-item per row in 16-element vectors ----
// (PoCL vectorises these itself: vload16 where the storage type is ACC, the last partial
// block masked). The global size is `rows` rounded up to the group; items past the end return.

#include "vec16.cl"

// Block j of a row of n: whole (LOAD16) or the masked last one (lanes past the end are 0).
#define BLOCK(p, j, n) \
  ((j) + 16 <= (n) ? LOAD16(p, j) : lane_mask_keep(LOAD16_CLAMPED(p, j, (n) - 1), (ACC16)0, (n) - (j)))

__kernel void layer_norm_rows_forward(__global T_T* out, ulong out_offset, __global T_T* mean_out, ulong mean_offset,
                                      __global T_T* rstd_out, ulong rstd_offset, __global const T_T* in,
                                      ulong in_offset, __global const T_T* weight, ulong w_offset,
                                      __global const T_T* bias, ulong b_offset, int has_weight, int has_bias, long n,
                                      long rows, ACC eps) {
  const long row = get_global_id(0);
  if (row >= rows) return;
  __global const T_T* x = in + in_offset + row * n;
  __global const T_T* w = weight + w_offset;
  __global const T_T* b = bias + b_offset;
  // Sums of x - x[0], as norm_rows_forward's.
  const ACC x0 = n > 0 ? (ACC)LOAD_T(x, 0) : (ACC)0;
  ACC16 s = 0;
  for (long j = 0; j < n; j += 16) s += lane_mask_keep(BLOCK(x, j, n) - x0, (ACC16)0, n - j);
  const ACC mean = n > 0 ? x0 + sum16(s) / (ACC)n : (ACC)0;
  ACC16 q = 0;
  for (long j = 0; j < n; j += 16) {
    const ACC16 d = lane_mask_keep(BLOCK(x, j, n) - mean, (ACC16)0, n - j);
    q += d * d;
  }
  const ACC rstd = (ACC)1 / sqrt(sum16(q) / (ACC)n + eps);
  STORE_T(mean_out, mean_offset + row, mean);
  STORE_T(rstd_out, rstd_offset + row, rstd);
  __global T_T* y = out + out_offset + row * n;
  for (long j = 0; j < n; j += 16) {
    ACC16 v = (BLOCK(x, j, n) - mean) * rstd;
    if (has_weight) v *= BLOCK(w, j, n);
    if (has_bias) v += BLOCK(b, j, n);
    store16(y, j, v, n - j);
  }
}

// dx = rstd * (a - mean(a) - xhat * mean(a * xhat)), a = grad * weight.
__kernel void layer_norm_rows_backward(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                       ulong go_offset, __global const T_T* in, ulong in_offset,
                                       __global const T_T* mean, ulong mean_offset, __global const T_T* rstd,
                                       ulong rstd_offset, __global const T_T* weight, ulong w_offset, int has_weight,
                                       long n, long rows) {
  const long row = get_global_id(0);
  if (row >= rows) return;
  __global const T_T* x = in + in_offset + row * n;
  __global const T_T* g = grad_out + go_offset + row * n;
  __global const T_T* w = weight + w_offset;
  const ACC m = LOAD_T(mean, mean_offset + row), r = LOAD_T(rstd, rstd_offset + row);
  ACC16 sa = 0, sax = 0;
  for (long j = 0; j < n; j += 16) {
    ACC16 a = BLOCK(g, j, n);
    if (has_weight) a *= BLOCK(w, j, n);
    sa += a;
    sax += a * (BLOCK(x, j, n) - m);  // a is 0 in masked lanes
  }
  const ACC mean_a = sum16(sa) / (ACC)n;
  const ACC mean_ax = sum16(sax) * r / (ACC)n;
  __global T_T* dx = grad_in + gi_offset + row * n;
  for (long j = 0; j < n; j += 16) {
    ACC16 a = BLOCK(g, j, n);
    if (has_weight) a *= BLOCK(w, j, n);
    const ACC16 xhat = (BLOCK(x, j, n) - m) * r;
    store16(dx, j, r * (a - mean_a - xhat * mean_ax), n - j);
  }
}

// dweight[j] = sum over rows of grad * xhat, dbias[j] = sum of grad, in two passes that read
// the rows in order (walking columns across rows would miss the cache on every row):
// layer_norm_param_partials: work-item c sums rows [c * chunk, (c + 1) * chunk) into
//   partial[c * 2n + j] (weight) and partial[c * 2n + n + j] (bias), row by row in vectors.
// layer_norm_param_finish: one work-item per block of 16 columns adds the nchunks partials.
__kernel void layer_norm_param_partials(__global ACC* partial, ulong partial_offset, __global const T_T* grad_out,
                                        ulong go_offset, __global const T_T* in, ulong in_offset,
                                        __global const T_T* mean, ulong mean_offset, __global const T_T* rstd,
                                        ulong rstd_offset, long rows, long n, long chunk) {
  const long c = get_global_id(0);
  __global ACC* pw = partial + partial_offset + c * 2 * n;
  __global ACC* pb = pw + n;
  for (long j = 0; j < n; ++j) pw[j] = pb[j] = 0;
  const long r1 = min(rows, (c + 1) * chunk);
  for (long r = c * chunk; r < r1; ++r) {
    __global const T_T* g = grad_out + go_offset + r * n;
    __global const T_T* x = in + in_offset + r * n;
    const ACC m = LOAD_T(mean, mean_offset + r), rs = LOAD_T(rstd, rstd_offset + r);
    long j = 0;
    for (; j + 16 <= n; j += 16) {
      const ACC16 gv = LOAD16(g, j);
      vstore16(vload16(0, pb + j) + gv, 0, pb + j);
      vstore16(vload16(0, pw + j) + gv * (LOAD16(x, j) - m) * rs, 0, pw + j);
    }
    for (; j < n; ++j) {
      const ACC gv = LOAD_T(g, j);
      pb[j] += gv;
      pw[j] += gv * ((ACC)LOAD_T(x, j) - m) * rs;
    }
  }
}

// p[j .. j + 15] of an ACC array of n, lanes past the end 0.
inline ACC16 acc_block(__global const ACC* p, long j, long n) {
  if (j + 16 <= n) return vload16(0, p + j);
  ACC a[16];
  for (int k = 0; k < 16; ++k) a[k] = j + k < n ? p[j + k] : (ACC)0;
  return vload16(0, a);
}

__kernel void layer_norm_param_finish(__global T_T* dweight, ulong dw_offset, __global T_T* dbias, ulong db_offset,
                                      int want_weight, int want_bias, __global const ACC* partial,
                                      ulong partial_offset, long n, long nchunks) {
  const long j = get_global_id(0) * 16;
  if (j >= n) return;
  __global const ACC* p = partial + partial_offset;
  ACC16 sw = 0, sb = 0;
  for (long c = 0; c < nchunks; ++c) {
    sw += acc_block(p + c * 2 * n, j, n);
    sb += acc_block(p + c * 2 * n + n, j, n);
  }
  if (want_weight) store16(dweight + dw_offset, j, sw, n - j);
  if (want_bias) store16(dbias + db_offset, j, sb, n - j);
}
