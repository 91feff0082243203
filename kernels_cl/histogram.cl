// Counting into bins: bincount without weights and histc (aten/native/histogram.cpp). A work-item takes a chunk of
// `chunk` contiguous elements and adds one per element to its bin in int32 counts (the host keeps the element count
// below 2^31), so the counts are exact whatever the order: with an atomic increment into the one row of `bins`
// counts (the GPU form), or, where `private_rows`, into the work-item's own row of counts (the CPU form: a few
// work-items with long chunks; the host sums the rows). T_T/LOAD_T: the input's dtype.

inline void count_one(__global int* counts, long bin, int private_rows) {
  if (private_rows)
    counts[bin] += 1;
  else
    atomic_inc(counts + bin);
}

// Bin x[e]: the values are integers in [0, bins) (the host checked their minimum and maximum).
__kernel void count_values(__global int* counts, ulong c_offset, __global const T_T* x, ulong x_offset, long n,
                           long chunk, long bins, int private_rows) {
  const long g = get_global_id(0), start = g * chunk;
  if (start >= n) return;
  const long end = min(n, start + chunk);
  __global int* row = counts + c_offset + (private_rows ? g * bins : 0);
  for (long e = start; e < end; ++e) count_one(row, (long)LOAD_T(x, x_offset + e), private_rows);
}

// histc's bins, as CPU's LINEAR_INTERPOLATION (cpu/HistogramKernel.cpp) in the input's type: elements outside
// [lo, hi] (and NaN) are skipped, an element's bin is (x - lo) * bins / (hi - lo) truncated, and hi itself goes to
// the last bin.
__kernel void histc_counts(__global int* counts, ulong c_offset, __global const T_T* x, ulong x_offset, long n,
                           long chunk, long bins, int private_rows, T_CT lo, T_CT hi) {
  const long g = get_global_id(0), start = g * chunk;
  if (start >= n) return;
  const long end = min(n, start + chunk);
  __global int* row = counts + c_offset + (private_rows ? g * bins : 0);
  for (long e = start; e < end; ++e) {
    const T_CT v = LOAD_T(x, x_offset + e);
    if (!(v >= lo && v <= hi)) continue;
    long pos = (long)((v - lo) * (T_CT)bins / (hi - lo));
    if (pos == bins) pos -= 1;
    count_one(row, pos, private_rows);
  }
}
