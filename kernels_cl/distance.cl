// pdist (aten::_pdist_forward / _pdist_backward): the p-norm distances of the rows of a contiguous (n, m)
// input, pairs i < j in row-major order (k = i * n - i * (i + 1) / 2 + j - i - 1), and cdist
// (aten::_cdist_forward / _cdist_backward): those between the rows of two contiguous (B, r1, m) and (B, r2, m)
// inputs, with CPU's per-p forms (DistanceOpsKernel.cpp). Modes: 0 (p = 0), 1 (p = 1), 2 (p = 2), 3 (p = inf),
// 4 (other p; 5 when p < 2).

// The distance of rows a and b of m elements.
inline ACC row_distance(__global const T_T* a, __global const T_T* b, long m, ACC p, int mode) {
  ACC agg = 0;
  for (long c = 0; c < m; ++c) {
    const ACC d = fabs(LOAD_T(a, c) - LOAD_T(b, c));
    if (mode == 0) agg += fmin(ceil(d), (ACC)1);
    else if (mode == 1) agg += d;
    else if (mode == 2) agg += d * d;
    else if (mode == 3) agg = fmax(agg, d);
    else agg += pow(d, p);
  }
  return mode == 2 ? sqrt(agg) : mode >= 4 ? pow(agg, 1 / p) : agg;
}

// Pairs before row i.
inline long pairs_before(long i, long n) { return i * n - i * (i + 1) / 2; }

// One work-item per pair: its row i found from a float estimate, then corrected exactly.
__kernel void pdist_forward(__global T_T* out, ulong out_offset, __global const T_T* x, ulong x_offset, long n,
                            long m, long pairs, ACC p, int mode) {
  const long k = get_global_id(0);
  if (k >= pairs) return;
  const float n2 = n - 0.5f;
  long i = (long)(n2 - sqrt(fmax(n2 * n2 - 2.0f * k - 1.0f, 0.0f)));
  i = clamp(i, 0L, n - 2);
  while (i > 0 && pairs_before(i, n) > k) --i;
  while (i < n - 2 && pairs_before(i + 1, n) <= k) ++i;
  const long j = k - pairs_before(i, n) + i + 1;
  STORE_T(out, out_offset + k, row_distance(x + x_offset + i * m, x + x_offset + j * m, m, p, mode));
}

// d(dist)/d(x_i) times grad for one coordinate difference diff = x_i - x_j (CPU's backward forms).
inline ACC pdist_slope(ACC diff, ACC grad, ACC dist, ACC p, int mode) {
  const ACC s = sign(diff);
  if (mode == 0) return 0;
  if (mode == 1) return grad * s;
  if (mode == 2) return dist == 0 ? (ACC)0 : grad * diff / dist;
  if (mode == 3) return grad * s * (1 - fmin((ACC)1, ceil(fabs(fabs(diff) - dist))));
  if (mode == 5) {  // p < 2
    if (diff == 0 && p < 1) return 0;
    return dist == 0 ? (ACC)0 : s * pow(fabs(diff), p - 1) * grad / pow(dist, p - 1);
  }
  return dist == 0 ? (ACC)0 : diff * pow(fabs(diff), p - 2) * grad / pow(dist, p - 1);
}

// One work-item per input element (i, c): the pairs holding row i, gathered (no atomics).
__kernel void pdist_backward(__global T_T* grad_x, ulong gx_offset, __global const T_T* grad, ulong g_offset,
                             __global const T_T* x, ulong x_offset, __global const T_T* dist, ulong d_offset, long n,
                             long m, ACC p, int mode) {
  const long e = get_global_id(0);
  if (e >= n * m) return;
  const long i = e / m, c = e - i * m;
  ACC acc = 0;
  for (long j = 0; j < n; ++j) {
    if (j == i) continue;
    const long lo = min(i, j), hi = max(i, j);
    const long k = pairs_before(lo, n) + hi - lo - 1;
    const ACC diff = LOAD_T(x, x_offset + lo * m + c) - LOAD_T(x, x_offset + hi * m + c);
    const ACC r = pdist_slope(diff, LOAD_T(grad, g_offset + k), LOAD_T(dist, d_offset + k), p, mode);
    acc += i < j ? r : -r;
  }
  STORE_T(grad_x, gx_offset + e, acc);
}

// cdist: one work-item per output (batch l, row i of x1, row j of x2).
__kernel void cdist_forward(__global T_T* out, ulong out_offset, __global const T_T* x1, ulong x1_offset,
                            __global const T_T* x2, ulong x2_offset, long batches, long r1, long r2, long m, ACC p,
                            int mode) {
  const long e = get_global_id(0);
  if (e >= batches * r1 * r2) return;
  const long j = e % r2, i = (e / r2) % r1, l = e / (r1 * r2);
  STORE_T(out, out_offset + e,
          row_distance(x1 + x1_offset + (l * r1 + i) * m, x2 + x2_offset + (l * r2 + j) * m, m, p, mode));
}

// cdist's gradient for x1: one work-item per element (l, i, c) summing over x2's rows j, in CPU's order.
__kernel void cdist_backward(__global T_T* grad_x1, ulong gx_offset, __global const T_T* grad, ulong g_offset,
                             __global const T_T* x1, ulong x1_offset, __global const T_T* x2, ulong x2_offset,
                             __global const T_T* dist, ulong d_offset, long batches, long r1, long r2, long m, ACC p,
                             int mode) {
  const long e = get_global_id(0);
  if (e >= batches * r1 * m) return;
  const long c = e % m, i = (e / m) % r1, l = e / (r1 * m);
  const ACC a = LOAD_T(x1, x1_offset + e);
  const long row = (l * r1 + i) * r2;
  ACC acc = 0;
  for (long j = 0; j < r2; ++j) {
    const ACC diff = a - LOAD_T(x2, x2_offset + (l * r2 + j) * m + c);
    acc += pdist_slope(diff, LOAD_T(grad, g_offset + row + j), LOAD_T(dist, d_offset + row + j), p, mode);
  }
  STORE_T(grad_x1, gx_offset + e, acc);
}
