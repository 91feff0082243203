// Stream compaction in element order: nonzero, masked_select, masked_scatter_ (aten/native/nonzero.cpp).
// Pass 1 counts the nonzero flags of each chunk of `chunk` elements (one work-item per chunk),
// pass 2 turns the counts into exclusive offsets in one work-group (and appends the total, which
// the host reads back for the result's size), pass 3 walks each chunk again and writes in order.
// Operands are contiguous. T_T is the dtype of the flags (count_chunks, nonzero_coords) or of the
// data (masked_*); masks are bool or uint8 bytes.

__kernel void count_chunks(__global long* counts, ulong counts_offset, __global const T_T* x, ulong x_offset, long n,
                           long chunk) {
  const long c = get_global_id(0);
  const long start = c * chunk;
  if (start >= n) return;
  const long end = min(n, start + chunk);
  long count = 0;
  for (long e = start; e < end; ++e) count += (LOAD_T(x, x_offset + e) != 0);
  counts[counts_offset + c] = count;
}

// counts[0..C) becomes its exclusive prefix sum and counts[C] the total. One work-group of WG items.
__kernel void exclusive_scan(__global long* counts, ulong counts_offset, long C) {
  __local long sums[WG];
  const int l = get_local_id(0);
  const long per = (C + WG - 1) / WG;
  const long start = min(C, l * per), end = min(C, start + per);
  __global long* c = counts + counts_offset;
  long sum = 0;
  for (long i = start; i < end; ++i) sum += c[i];
  sums[l] = sum;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    long run = 0;
    for (int i = 0; i < WG; ++i) {
      const long s = sums[i];
      sums[i] = run;
      run += s;
    }
    c[C] = run;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  long run = sums[l];
  for (long i = start; i < end; ++i) {
    const long s = c[i];
    c[i] = run;
    run += s;
  }
}

#define NONZERO_MAX_DIMS 25
typedef struct {
  long ndim;
  long sizes[NONZERO_MAX_DIMS];
} Shape;

// out (total, ndim) int64: the coordinates of each nonzero element, in element order.
__kernel void nonzero_coords(__global long* out, ulong out_offset, __global const T_T* x, ulong x_offset,
                             __global const long* offsets, ulong offsets_offset, long n, long chunk, Shape s) {
  const long c = get_global_id(0);
  const long start = c * chunk;
  if (start >= n) return;
  const long end = min(n, start + chunk);
  long row = offsets[offsets_offset + c];
  for (long e = start; e < end; ++e) {
    if (!(LOAD_T(x, x_offset + e) != 0)) continue;
    long r = e;
    for (int d = (int)s.ndim - 1; d >= 0; --d) {
      out[out_offset + row * s.ndim + d] = r % s.sizes[d];
      r /= s.sizes[d];
    }
    ++row;
  }
}

// out[k] = x[e] for the k-th e whose mask is set.
__kernel void masked_select(__global T_T* out, ulong out_offset, __global const T_T* x, ulong x_offset,
                            __global const uchar* mask, ulong mask_offset, __global const long* offsets,
                            ulong offsets_offset, long n, long chunk) {
  const long c = get_global_id(0);
  const long start = c * chunk;
  if (start >= n) return;
  const long end = min(n, start + chunk);
  long k = offsets[offsets_offset + c];
  for (long e = start; e < end; ++e)
    if (mask[mask_offset + e]) STORE_T(out, out_offset + k++, LOAD_T(x, x_offset + e));
}

// self[e] = source[k] for the k-th e whose mask is set.
__kernel void masked_scatter(__global T_T* self, ulong self_offset, __global const T_T* source, ulong source_offset,
                             __global const uchar* mask, ulong mask_offset, __global const long* offsets,
                             ulong offsets_offset, long n, long chunk) {
  const long c = get_global_id(0);
  const long start = c * chunk;
  if (start >= n) return;
  const long end = min(n, start + chunk);
  long k = offsets[offsets_offset + c];
  for (long e = start; e < end; ++e)
    if (mask[mask_offset + e]) STORE_T(self, self_offset + e, LOAD_T(source, source_offset + k++));
}
