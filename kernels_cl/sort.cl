// Sorting the rows of a contiguous (rows, n) tensor: sort, argsort, topk (aten/native/sort.cpp).
// T_T/T_CT/LOAD_T/STORE_T: the data dtype (keys are held in T_CT, float for half/bfloat16).
// Every kernel orders (key, original position) pairs: NaN is the largest key, as on CPU, and
// equal keys keep their original order (ties go to the smaller position), so the result is
// the stable sort whatever `stable` asked. Rows are padded to a power of two P; padding has
// positions >= n and sorts after every real element.
//   rows of n <= SMALL:     sort_small, one work-item per row (insertion sort)
//   many rows (>= 8 per compute unit): sort_rows_merge, one work-item per row (merge sort)
//   few rows, CPU form:     sort_chunks (a merge sort per chunk of a row), then merge_pass per doubling width
//   rows of P <= local cap: sort_rows_local, one work-group per row (bitonic in local memory)
//   topk with k <= SMALL:   topk_small, one work-item per row (a sorted buffer of k)
//   longer rows:            sort_blocks_local, then per merge size k: bitonic_global_step for the
//                           strides that span blocks and bitonic_merge_local for the rest;
//                           sort_write copies the first n of each padded row out.
// No kernel returns before a barrier (PoCL would hang): work is guarded by ifs instead.

#define SMALL 16

// a sorts strictly before b in ascending order (NaN largest).
inline int key_less(T_CT a, T_CT b) { return (!ACC_ISNAN(a) && ACC_ISNAN(b)) || a < b; }

// (ka at position ia) comes strictly before (kb at position ib).
inline int before(T_CT ka, int ia, T_CT kb, int ib, int n, int desc) {
  const int pa = ia >= n, pb = ib >= n;
  if (pa || pb) return pa != pb ? pb : ia < ib;
  const int lt = desc ? key_less(kb, ka) : key_less(ka, kb);
  const int gt = desc ? key_less(ka, kb) : key_less(kb, ka);
  return lt || (!gt && ia < ib);
}

// One compare-exchange step (merge size k, stride j) over a local block of `count` elements
// whose first element sits at position `base` of its padded row.
inline void local_step(__local T_CT* keys, __local int* idx, int count, long base, long k, int j, int n, int desc) {
  const int lid = get_local_id(0), lsz = get_local_size(0);
  for (int t = lid; t < count / 2; t += lsz) {
    const int i = 2 * t - (t & (j - 1)), l = i + j;
    const int up = ((base + i) & k) == 0;
    const T_CT ki = keys[i], kl = keys[l];
    const int ii = idx[i], il = idx[l];
    const int swap = up ? before(kl, il, ki, ii, n, desc) : before(ki, ii, kl, il, n, desc);
    if (swap) {
      keys[i] = kl;
      keys[l] = ki;
      idx[i] = il;
      idx[l] = ii;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

__kernel void sort_small(__global T_T* values, ulong v_offset, __global long* indices, ulong i_offset,
                         __global const T_T* in, ulong in_offset, long rows, int n, int desc) {
  const long r = get_global_id(0);
  if (r >= rows) return;
  T_CT k[SMALL];
  int p[SMALL];
  for (int e = 0; e < n; ++e) {
    const T_CT x = LOAD_T(in, in_offset + r * n + e);
    int q = e;
    while (q > 0 && before(x, e, k[q - 1], p[q - 1], n, desc)) {
      k[q] = k[q - 1];
      p[q] = p[q - 1];
      --q;
    }
    k[q] = x;
    p[q] = e;
  }
  for (int e = 0; e < n; ++e) {
    STORE_T(values, v_offset + r * n + e, k[e]);
    indices[i_offset + r * n + e] = p[e];
  }
}

// Merge-sorts positions [lo, hi) of row r of `in` (rows x n) into the scratch rows k0/x0 and k1/x1 (row
// pointers, indexed by position in the row): runs of SMALL by insertion, then merges of doubling width,
// ping-ponging between the two. Returns 1 where the result ended in (k1, x1), 0 where in (k0, x0).
inline int merge_sort_span(__global const T_T* in, ulong in_offset, long r, int n, int lo, int hi, __global T_CT* k0,
                           __global int* x0, __global T_CT* k1, __global int* x1, int desc) {
  for (int s = lo; s < hi; s += SMALL) {
    const int end = min(s + SMALL, hi);
    for (int e = s; e < end; ++e) {
      const T_CT x = LOAD_T(in, in_offset + r * n + e);
      int q = e;
      while (q > s && before(x, e, k0[q - 1], x0[q - 1], n, desc)) {
        k0[q] = k0[q - 1];
        x0[q] = x0[q - 1];
        --q;
      }
      k0[q] = x;
      x0[q] = e;
    }
  }
  int flipped = 0;
  for (int w = SMALL; w < hi - lo; w *= 2) {
    for (int s = lo; s < hi; s += 2 * w) {
      int a = s, b = min(s + w, hi), o = s;
      const int a_end = b, b_end = min(s + 2 * w, hi);
      while (a < a_end && b < b_end) {
        const int take_b = before(k0[b], x0[b], k0[a], x0[a], n, desc);
        const int from = take_b ? b++ : a++;
        k1[o] = k0[from];
        x1[o++] = x0[from];
      }
      while (a < a_end) {
        k1[o] = k0[a];
        x1[o++] = x0[a++];
      }
      while (b < b_end) {
        k1[o] = k0[b];
        x1[o++] = x0[b++];
      }
    }
    __global T_CT* kt = k0;
    k0 = k1;
    k1 = kt;
    __global int* xt = x0;
    x0 = x1;
    x1 = xt;
    flipped ^= 1;
  }
  return flipped;
}

// Many rows: one work-item per row, a merge sort over scratch rows (ka/xa, kb/xb: rows x n each).
__kernel void sort_rows_merge(__global T_T* values, ulong v_offset, __global long* indices, ulong i_offset,
                              __global const T_T* in, ulong in_offset, __global T_CT* ka, ulong ka_offset,
                              __global int* xa, ulong xa_offset, __global T_CT* kb, ulong kb_offset,
                              __global int* xb, ulong xb_offset, long rows, int n, int desc) {
  const long r = get_global_id(0);
  if (r >= rows) return;
  __global T_CT* k0 = ka + ka_offset + r * n;
  __global int* x0 = xa + xa_offset + r * n;
  __global T_CT* k1 = kb + kb_offset + r * n;
  __global int* x1 = xb + xb_offset + r * n;
  const int flipped = merge_sort_span(in, in_offset, r, n, 0, n, k0, x0, k1, x1, desc);
  __global const T_CT* ks = flipped ? k1 : k0;
  __global const int* xs = flipped ? x1 : x0;
  for (int e = 0; e < n; ++e) {
    STORE_T(values, v_offset + r * n + e, ks[e]);
    indices[i_offset + r * n + e] = xs[e];
  }
}

// The CPU form of few long rows, first pass: each row cut into chunks of `chunk` positions, one work-item
// merge-sorting each chunk into (ka, xa) at its own place (kb, xb: scratch).
__kernel void sort_chunks(__global const T_T* in, ulong in_offset, __global T_CT* ka, ulong ka_offset,
                          __global int* xa, ulong xa_offset, __global T_CT* kb, ulong kb_offset, __global int* xb,
                          ulong xb_offset, long rows, int n, int chunk, int desc) {
  const long g = get_global_id(0);
  const long per_row = (n + chunk - 1) / chunk;
  if (g >= rows * per_row) return;
  const long r = g / per_row;
  const int lo = (int)(g % per_row) * chunk, hi = min(n, lo + chunk);
  __global T_CT* k0 = ka + ka_offset + r * n;
  __global int* x0 = xa + xa_offset + r * n;
  __global T_CT* k1 = kb + kb_offset + r * n;
  __global int* x1 = xb + xb_offset + r * n;
  if (merge_sort_span(in, in_offset, r, n, lo, hi, k0, x0, k1, x1, desc)) {
    for (int e = lo; e < hi; ++e) {
      k0[e] = k1[e];
      x0[e] = x1[e];
    }
  }
}

// Then merge passes: the sorted runs of `width` positions of each row of (ks, xs) merged pairwise into (kd, xd).
// A work-item writes `span` consecutive outputs, all of one pair of runs (width is a multiple of span): a binary
// search along the merge path finds how many of its first output's predecessors come from the first run, then
// it merges serially. `before` orders (key, position) pairs strictly, so the merge is the stable order.
__kernel void merge_pass(__global const T_CT* ks, ulong ks_offset, __global const int* xs, ulong xs_offset,
                         __global T_CT* kd, ulong kd_offset, __global int* xd, ulong xd_offset, long rows, int n,
                         int width, int span, int desc) {
  const long g = get_global_id(0);
  const long per_row = (n + span - 1) / span;
  if (g >= rows * per_row) return;
  const long r = g / per_row;
  const int o0 = (int)(g % per_row) * span, o1 = min(n, o0 + span);
  __global const T_CT* k = ks + ks_offset + r * n;
  __global const int* x = xs + xs_offset + r * n;
  __global T_CT* ko = kd + kd_offset + r * n;
  __global int* xo = xd + xd_offset + r * n;
  const int a0 = o0 / (2 * width) * (2 * width);
  const int a1 = min(n, a0 + width), b1 = min(n, a1 + width);
  const int d = o0 - a0;
  int lo = max(0, d - (b1 - a1)), hi = min(d, a1 - a0);
  while (lo < hi) {  // the first-run elements among the pair's first d outputs
    const int mid = (lo + hi) >> 1;
    const int j = a1 + d - mid - 1;
    if (before(k[a0 + mid], x[a0 + mid], k[j], x[j], n, desc))
      lo = mid + 1;
    else
      hi = mid;
  }
  int a = a0 + lo, b = a1 + d - lo;
  for (int o = o0; o < o1; ++o) {
    const int take_b = a >= a1 || (b < b1 && before(k[b], x[b], k[a], x[a], n, desc));
    const int from = take_b ? b++ : a++;
    ko[o] = k[from];
    xo[o] = x[from];
  }
}

// topk for k <= SMALL: one work-item per row keeps the first k of the row's order in a sorted
// buffer while scanning it once (later equal keys never displace earlier ones: the stable order).
__kernel void topk_small(__global T_T* values, ulong v_offset, __global long* indices, ulong i_offset,
                         __global const T_T* in, ulong in_offset, long rows, int n, int k, int desc) {
  const long r = get_global_id(0);
  if (r >= rows) return;
  T_CT key[SMALL];
  int pos[SMALL];
  int count = 0;
  for (int e = 0; e < n; ++e) {
    const T_CT x = LOAD_T(in, in_offset + r * n + e);
    if (count == k && !before(x, e, key[k - 1], pos[k - 1], n, desc)) continue;
    int q = count < k ? count++ : k - 1;
    while (q > 0 && before(x, e, key[q - 1], pos[q - 1], n, desc)) {
      key[q] = key[q - 1];
      pos[q] = pos[q - 1];
      --q;
    }
    key[q] = x;
    pos[q] = e;
  }
  for (int e = 0; e < k; ++e) {
    STORE_T(values, v_offset + r * k + e, key[e]);
    indices[i_offset + r * k + e] = pos[e];
  }
}

// One work-group per row; keys and idx hold P elements each.
__kernel void sort_rows_local(__global T_T* values, ulong v_offset, __global long* indices, ulong i_offset,
                              __global const T_T* in, ulong in_offset, int n, int P, int desc,
                              __local T_CT* keys, __local int* idx) {
  const long r = get_group_id(0);
  const int lid = get_local_id(0), lsz = get_local_size(0);
  for (int e = lid; e < P; e += lsz) {
    keys[e] = e < n ? LOAD_T(in, in_offset + r * n + e) : (T_CT)0;
    idx[e] = e;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int k = 2; k <= P; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) local_step(keys, idx, P, 0, k, j, n, desc);
  for (int e = lid; e < n; e += lsz) {
    STORE_T(values, v_offset + r * n + e, keys[e]);
    indices[i_offset + r * n + e] = idx[e];
  }
}

// Group g sorts block g % (P / B) of row g / (P / B) from the input into the scratch rows
// (keys_out, idx_out: rows x P), ascending or descending by the block's place in the network.
__kernel void sort_blocks_local(__global T_CT* keys_out, ulong k_offset, __global int* idx_out, ulong x_offset,
                                __global const T_T* in, ulong in_offset, int n, int P, int B, int desc,
                                __local T_CT* keys, __local int* idx) {
  const long g = get_group_id(0);
  const long blocks = P / B;
  const long r = g / blocks;
  const int base = (int)(g % blocks) * B;
  const int lid = get_local_id(0), lsz = get_local_size(0);
  for (int e = lid; e < B; e += lsz) {
    const int pos = base + e;
    keys[e] = pos < n ? LOAD_T(in, in_offset + r * n + pos) : (T_CT)0;
    idx[e] = pos;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int k = 2; k <= B; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) local_step(keys, idx, B, base, k, j, n, desc);
  for (int e = lid; e < B; e += lsz) {
    keys_out[k_offset + r * P + base + e] = keys[e];
    idx_out[x_offset + r * P + base + e] = idx[e];
  }
}

// One work-item per pair: stride j of merge size k over every padded row.
__kernel void bitonic_global_step(__global T_CT* keys, ulong k_offset, __global int* idx, ulong x_offset,
                                  long pairs, int n, int P, int k, int j, int desc) {
  const long g = get_global_id(0);
  if (g >= pairs) return;
  const long half_p = P / 2;
  const long r = g / half_p;
  const int t = (int)(g % half_p);
  const int i = 2 * t - (t & (j - 1)), l = i + j;
  const int up = (i & k) == 0;
  __global T_CT* kr = keys + k_offset + r * P;
  __global int* xr = idx + x_offset + r * P;
  const T_CT ki = kr[i], kl = kr[l];
  const int ii = xr[i], il = xr[l];
  const int swap = up ? before(kl, il, ki, ii, n, desc) : before(ki, ii, kl, il, n, desc);
  if (swap) {
    kr[i] = kl;
    kr[l] = ki;
    xr[i] = il;
    xr[l] = ii;
  }
}

// Strides B/2 .. 1 of merge size k, one work-group per block of B scratch elements.
__kernel void bitonic_merge_local(__global T_CT* keys_g, ulong k_offset, __global int* idx_g, ulong x_offset,
                                  int n, int P, int B, int k, int desc, __local T_CT* keys, __local int* idx) {
  const long g = get_group_id(0);
  const long blocks = P / B;
  const long r = g / blocks;
  const int base = (int)(g % blocks) * B;
  const int lid = get_local_id(0), lsz = get_local_size(0);
  __global T_CT* kr = keys_g + k_offset + r * P + base;
  __global int* xr = idx_g + x_offset + r * P + base;
  for (int e = lid; e < B; e += lsz) {
    keys[e] = kr[e];
    idx[e] = xr[e];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int j = B >> 1; j > 0; j >>= 1) local_step(keys, idx, B, base, k, j, n, desc);
  for (int e = lid; e < B; e += lsz) {
    kr[e] = keys[e];
    xr[e] = idx[e];
  }
}

// values/indices (rows, n) = the first n of each padded scratch row.
__kernel void sort_write(__global T_T* values, ulong v_offset, __global long* indices, ulong i_offset,
                         __global const T_CT* keys, ulong k_offset, __global const int* idx, ulong x_offset,
                         long total, int n, int P) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long r = e / n, c = e % n;
  STORE_T(values, v_offset + e, keys[k_offset + r * P + c]);
  indices[i_offset + e] = idx[x_offset + r * P + c];
}
