// kthvalue, median, nanmedian and mode (aten/native/order_stats.cpp): selections from rows sorted in the stable
// order (kernels_cl/sort.cl: equal keys keep their order, NaN last), contiguous (rows, n) values and positions.
// T_T/LOAD_T/ACC_ISNAN: the data's dtype. Results are written in row order.

// The element of each row at position k (KTH), or its median: the first NaN where the row has one (MEDIAN, CPU's
// torch.median), else position (n - 1) / 2; or the median of its non-NaN elements (NANMEDIAN: position
// (n - nans - 1) / 2, truncated towards zero, so 0 where every element is NaN).
#define KTH 0
#define MEDIAN 1
#define NANMEDIAN 2
__kernel void select_sorted(__global T_T* values, ulong values_offset, __global long* indices, ulong indices_offset,
                            __global const T_T* sorted, ulong sorted_offset, __global const long* positions,
                            ulong positions_offset, long rows, long n, long k, int mode) {
  const long r = get_global_id(0);
  if (r >= rows) return;
  const ulong row = sorted_offset + r * n;
  long p = k;
  if (mode != KTH) {
    long lo = 0, hi = n;  // the first NaN: NaNs sort last
    while (lo < hi) {
      const long mid = lo + ((hi - lo) >> 1);
      if (!ACC_ISNAN(LOAD_T(sorted, row + mid)))
        lo = mid + 1;
      else
        hi = mid;
    }
    const long nans = n - lo;
    p = mode == MEDIAN ? (nans > 0 ? lo : (n - 1) / 2) : (n - nans - 1) / 2;
  }
  values[values_offset + r] = sorted[row + p];
  indices[indices_offset + r] = positions[positions_offset + r * n + p];
}

// The CPU form of the same selections: a work-item per row of `in` (rows x n, unsorted) copies the row into
// scratch keys and positions, counts its NaNs, and finds the element of the chosen rank in the stable order by
// quickselect, expected O(n) (CPU's nth_element; a sort is O(n log n)). (value, position) pairs are ordered
// strictly (NaN largest, equal values by position), so the element found is the sorted row's, whatever the
// pivots.
inline int rank_before(T_CT ka, int ia, T_CT kb, int ib) {
  const int lt = (!ACC_ISNAN(ka) && ACC_ISNAN(kb)) || ka < kb;
  const int gt = (!ACC_ISNAN(kb) && ACC_ISNAN(ka)) || kb < ka;
  return lt || (!gt && ia < ib);
}
#define SWAP_AT(i, j)          \
  {                            \
    const T_CT tk = keys[i];   \
    keys[i] = keys[j];         \
    keys[j] = tk;              \
    const int tp = pos[i];     \
    pos[i] = pos[j];           \
    pos[j] = tp;               \
  }
#define BEFORE_AT(i, j) rank_before(keys[i], pos[i], keys[j], pos[j])
__kernel void select_rows(__global T_T* values, ulong values_offset, __global long* indices, ulong indices_offset,
                          __global const T_T* in, ulong in_offset, __global T_CT* keys_g, ulong keys_offset,
                          __global int* pos_g, ulong pos_offset, long rows, int n, long k, int mode) {
  const long r = get_global_id(0);
  if (r >= rows) return;
  __global T_CT* keys = keys_g + keys_offset + r * n;
  __global int* pos = pos_g + pos_offset + r * n;
  long nans = 0;
  for (int e = 0; e < n; ++e) {
    const T_CT x = LOAD_T(in, in_offset + r * n + e);
    keys[e] = x;
    pos[e] = e;
    nans += ACC_ISNAN(x) ? 1 : 0;
  }
  const long p = mode == KTH ? k : mode == MEDIAN ? (nans > 0 ? n - nans : (n - 1) / 2) : (n - nans - 1) / 2;
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;  // the median of lo, mid and hi as the pivot, moved to hi
    if (BEFORE_AT(mid, lo)) SWAP_AT(mid, lo)
    if (BEFORE_AT(hi, lo)) SWAP_AT(hi, lo)
    if (BEFORE_AT(mid, hi)) SWAP_AT(mid, hi)
    int store = lo;
    for (int i = lo; i < hi; ++i)
      if (BEFORE_AT(i, hi)) {
        SWAP_AT(i, store)
        ++store;
      }
    SWAP_AT(store, hi)
    if (store == p) break;
    if (p < store)
      hi = store - 1;
    else
      lo = store + 1;
  }
  STORE_T(values, values_offset + r, keys[p]);
  indices[indices_offset + r] = pos[p];
}

// mode: one work-group per row. The most frequent value (the smallest of those equally frequent: the first longest
// run) and the position of its run's last element, as CPU's mode_kernel_impl walks its sorted row. A run starts at
// element 0 and wherever an element differs (!=) from the one before (every NaN is a run of its own). Each item
// takes a span of the row: first the last run start in each span, from which an item knows where the run at its
// span's start began; then each item's longest run ending in its span, and the first longest of all.
inline int mode_starts_run(__global const T_T* x, ulong row, long j) {
  return j == 0 || LOAD_T(x, row + j) != LOAD_T(x, row + j - 1);
}
__kernel void mode_rows(__global T_T* values, ulong values_offset, __global long* indices, ulong indices_offset,
                        __global const T_T* sorted, ulong sorted_offset, __global const long* positions,
                        ulong positions_offset, long n) {
  __local long last_start[WG];
  __local long best_len[WG];
  __local long best_end[WG];
  const long r = get_group_id(0);
  const int l = get_local_id(0);
  const ulong row = sorted_offset + r * n;
  const long span = (n + WG - 1) / WG;
  const long a = min(n, l * span), b = min(n, a + span);
  long start = -1;
  for (long j = a; j < b; ++j)
    if (mode_starts_run(sorted, row, j)) start = j;
  last_start[l] = start;
  barrier(CLK_LOCAL_MEM_FENCE);
  long current = 0;  // where the run at a began: the last start in an earlier span (element 0 starts one)
  for (int i = 0; i < l; ++i) current = max(current, last_start[i]);
  long len = 0, end = -1;
  for (long j = a; j < b; ++j) {
    if (mode_starts_run(sorted, row, j)) current = j;
    if (j == n - 1 || LOAD_T(sorted, row + j + 1) != LOAD_T(sorted, row + j)) {
      if (j - current + 1 > len) {
        len = j - current + 1;
        end = j;
      }
    }
  }
  best_len[l] = len;
  best_end[l] = end;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    long bl = 0, be = 0;
    for (int i = 0; i < WG; ++i)
      if (best_len[i] > bl) {  // strictly longer: the first longest run (the spans are in order)
        bl = best_len[i];
        be = best_end[i];
      }
    values[values_offset + r] = sorted[row + be];
    indices[indices_offset + r] = positions[positions_offset + r * n + be];
  }
}
