// unique, unique_consecutive and repeat_interleave (aten/native/unique.cpp). The runs of equal values of a sorted
// (unique) or given (unique_consecutive) contiguous sequence are compacted in order as nonzero compacts its
// elements (kernels_cl/nonzero.cl): run starts counted per chunk, the counts scanned, then each chunk written.
// A run starts at element 0 and wherever an element differs (!=) from the one before it: every NaN starts a run
// of its own, as CPU's unique does not merge NaNs. T_T/LOAD_T/STORE_T: the data's dtype.

inline int starts_run(__global const T_T* x, ulong x_offset, long e) {
  return e == 0 || LOAD_T(x, x_offset + e) != LOAD_T(x, x_offset + e - 1);
}

// counts[c] = the run starts in chunk c.
__kernel void count_run_starts(__global long* counts, ulong counts_offset, __global const T_T* x, ulong x_offset,
                               long n, long chunk) {
  const long c = get_global_id(0);
  const long start = c * chunk;
  if (start >= n) return;
  const long end = min(n, start + chunk);
  long count = 0;
  for (long e = start; e < end; ++e) count += starts_run(x, x_offset, e);
  counts[counts_offset + c] = count;
}

// With offsets[c] the run starts before chunk c: out[k] = the value of run k; where WANT_INVERSE, inverse[perm[e]]
// (inverse[e] without a perm) = the run of element e; where WANT_STARTS, starts[k] = the position of run k's first
// element.
#define WANT_INVERSE 1
#define WANT_STARTS 2
#define HAS_PERM 4
__kernel void write_runs(__global T_T* out, ulong out_offset, __global long* inverse, ulong inverse_offset,
                         __global long* starts, ulong starts_offset, __global const T_T* x, ulong x_offset,
                         __global const long* perm, ulong perm_offset, __global const long* offsets,
                         ulong offsets_offset, long n, long chunk, int flags) {
  const long c = get_global_id(0);
  const long start = c * chunk;
  if (start >= n) return;
  const long end = min(n, start + chunk);
  long k = offsets[offsets_offset + c];
  for (long e = start; e < end; ++e) {
    if (starts_run(x, x_offset, e)) {
      STORE_T(out, out_offset + k, LOAD_T(x, x_offset + e));
      if (flags & WANT_STARTS) starts[starts_offset + k] = e;
      ++k;
    }
    if (flags & WANT_INVERSE) inverse[inverse_offset + ((flags & HAS_PERM) ? perm[perm_offset + e] : e)] = k - 1;
  }
}

// repeat_interleave's result: out[j] = the i with ends[i - 1] <= j < ends[i] (ends: the inclusive cumulative sum
// of the n repeats). A work-item takes `chunk` consecutive outputs: a binary search for the first, then a walk
// along ends (a per-output search took 40 ns an output on PoCL). Positions from ends[n - 1] on (an output_size
// above the repeats' sum, which the host rejects unless its checks are deferred) get n - 1. I_T: the repeats'
// dtype.
__kernel void repeat_positions(__global I_T* out, ulong out_offset, __global const long* ends, ulong ends_offset,
                               long total, long n, long chunk) {
  const long j0 = get_global_id(0) * chunk;
  if (j0 >= total) return;
  const long j1 = min(total, j0 + chunk);
  long lo = 0, hi = n;
  while (lo < hi) {  // the first i whose end lies past j0
    const long mid = lo + ((hi - lo) >> 1);
    if (ends[ends_offset + mid] <= j0)
      lo = mid + 1;
    else
      hi = mid;
  }
  long i = min(lo, n - 1);
  for (long j = j0; j < j1; ++j) {
    while (i < n - 1 && ends[ends_offset + i] <= j) ++i;
    out[out_offset + j] = (I_T)i;
  }
}
