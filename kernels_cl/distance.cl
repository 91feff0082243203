// pdist (aten::_pdist_forward / _pdist_backward): the p-norm distances of the rows of a contiguous (n, m)
// input, pairs i < j in row-major order (k = i * n - i * (i + 1) / 2 + j - i - 1), with CPU's per-p forms
// (DistanceOpsKernel.cpp). Modes: 0 (p = 0), 1 (p = 1), 2 (p = 2), 3 (p = inf), 4 (other p; 5 when p < 2).

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
  __global const T_T* a = x + x_offset + i * m;
  __global const T_T* b = x + x_offset + j * m;
  ACC agg = 0;
  for (long c = 0; c < m; ++c) {
    const ACC d = fabs(LOAD_T(a, c) - LOAD_T(b, c));
    if (mode == 0) agg += fmin(ceil(d), (ACC)1);
    else if (mode == 1) agg += d;
    else if (mode == 2) agg += d * d;
    else if (mode == 3) agg = fmax(agg, d);
    else agg += pow(d, p);
  }
  const ACC r = mode == 2 ? sqrt(agg) : mode >= 4 ? pow(agg, 1 / p) : agg;
  STORE_T(out, out_offset + k, r);
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
