// Index-driven gathers over contiguous tensors: index_select, embedding's
// backward, tril/triu. T_T is the data dtype, I_T the index dtype. Indices were
// bounds-checked on the host side (aten/native/index_bounds.cpp).

// out (outer, K, inner) [o, k, i] = in (outer, D, inner) [o, index[k], i].
__kernel void index_select(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset,
                           __global const I_T* index, ulong index_offset, long total, long K, long D, long inner) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long i = e % inner, k = (e / inner) % K, o = e / (inner * K);
  // Clamped: a bad index was raised by the host's check, or (deferred checks) recorded for the next wait.
  const long ix = clamp((long)index[index_offset + k], 0L, D - 1);
  const long src = (o * D + ix) * inner + i;
  STORE_T(out, out_offset + e, LOAD_T(in, in_offset + src));
}

// index_select of the innermost dim (inner == 1) in the CPU form (copy_lines): a work-item takes a run of at
// most `chunk` outputs of one outer row, out[o, k] = in[o, index[k]], a loop the compiler vectorises (a gather
// load), where a work-item per element paid three 64-bit divisions (x.index_select(1, i) of 1024x1024: 6 ms).
__kernel void index_select_columns(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset,
                                   __global const I_T* index, ulong index_offset, long runs, long chunks, long chunk,
                                   long K, long D) {
  const long e = RUN_ID();
  if (e >= runs) return;
  const long o = e / chunks, lo = (e % chunks) * chunk, hi = min(lo + chunk, K);
  __global T_T* dst = out + out_offset + o * K;
  __global const T_T* src = in + in_offset + o * D;
  __global const I_T* ix = index + index_offset;
  for (long k = lo + RUN_LANE(); k < hi; k += TOCL_LINE_LANES)
    STORE_T(dst, k, LOAD_T(src, clamp((long)ix[k], 0L, D - 1)));  // clamped as below
}

// index_select's line form (runtime/kernel_forms.h's copy_lines, CPU devices): a work-item copies a run of
// at most `chunk` elements of one selected row, with the row's index read and its offsets computed once.
__kernel void index_select_lines(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset,
                                 __global const I_T* index, ulong index_offset, long runs, long chunks, long chunk,
                                 long K, long D, long inner) {
  const long e = RUN_ID();
  if (e >= runs) return;
  const long row = e / chunks, lo = (e % chunks) * chunk, hi = min(lo + chunk, inner);
  const long k = row % K, o = row / K;
  const long ix = clamp((long)index[index_offset + k], 0L, D - 1);  // clamped as index_select's
  __global T_T* dst = out + out_offset + row * inner;
  __global const T_T* src = in + in_offset + (o * D + ix) * inner;
  for (long i = lo + RUN_LANE(); i < hi; i += TOCL_LINE_LANES) STORE_T(dst, i, LOAD_T(src, i));
}

// Batches of (R, C) matrices: keep [r, c] where c - r <= k (lower) or c - r >= k (upper), else 0.
__kernel void triangle(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset, long total,
                       long R, long C, long k, int lower) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long c = e % C, r = (e / C) % R;
  const int keep = lower ? (c - r <= k) : (c - r >= k);
  if (keep) STORE_T(out, out_offset + e, LOAD_T(in, in_offset + e));
  else STORE_T(out, out_offset + e, 0);
}
