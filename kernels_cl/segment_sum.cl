// Sums of source rows grouped by target row, for embedding_dense_backward and index_add
// (aten/native/segment_sum.cpp): the GPU form, parallel and deterministic without atomics.
// keys[p] (I_T, sorted by a stable sort) is the target row of sorted position p and perm[p] the
// source row it came from, so the rows of one run of equal keys keep their original order and each
// sum runs in a fixed order. The sorted positions are cut into chunks of `chunk`: segment_chunk_sums
// sums each (chunk, column) and writes the runs that lie inside the chunk; the pieces of runs that
// cross a chunk's edge go to `partial` (a head and a tail slot per chunk and column), which
// segment_chunk_joins adds up in order from the chunk where such a run starts.
// Columns c = co * inner + ci address target (row, c) at row * t_row + co * t_outer + ci * t_inner,
// and the source likewise. Work-item e serves chunk e / C, column e % C (adjacent items, adjacent
// columns). T_T/LOAD_T/STORE_T, ACC, I_T come from aten/kernel_support/kernel_program.cpp.
typedef struct {
  long N;            // sorted positions
  long C;            // columns
  long inner;        // columns per outer index
  long chunk;        // positions per chunk
  long t_row, t_outer, t_inner;
  long s_row, s_outer, s_inner;
  long skip_row;     // a row never written (embedding's padding_idx); -1 for none
  long accumulate;   // 1: target += sum (index_add); 0: target = sum (rows not hit were zeroed)
  long scale_by_freq;  // divide each row's sum by its count (embedding's scale_grad_by_freq)
  long rows;         // target rows: a key outside [0, rows) (an index whose check is deferred) writes nothing
} Segments;

#define KEY(p) ((long)keys[k_off + (p)])

inline void write_row(__global T_T* target, ulong t_off, const Segments* g, long row, long tcol, ACC sum, long count) {
  if (row == g->skip_row || row < 0 || row >= g->rows) return;
  ACC v = sum;
  if (g->scale_by_freq) v /= (ACC)count;
  const ulong at = t_off + row * g->t_row + tcol;
  if (g->accumulate)
    STORE_T(target, at, (ACC)LOAD_T(target, at) + v);
  else
    STORE_T(target, at, v);
}

#define SEGMENT_ITEM                                                  \
  const long e = get_global_id(0);                                    \
  if (e >= nchunks * g.C) return;                                     \
  const long s = e / g.C, c = e - s * g.C;                            \
  const long co = c / g.inner, ci = c - co * g.inner;                 \
  const long tcol = co * g.t_outer + ci * g.t_inner;                  \
  const long first = s * g.chunk, stop = min(g.N, first + g.chunk);

__kernel void segment_chunk_sums(__global T_T* target, ulong t_off, __global const T_T* source, ulong s_off,
                                 __global const I_T* keys, ulong k_off, __global const long* perm, ulong p_off,
                                 __global ACC* partial, ulong pa_off, long nchunks, Segments g) {
  SEGMENT_ITEM
  const long scol = s_off + co * g.s_outer + ci * g.s_inner;
  long p = first;
  while (p < stop) {
    const long key = KEY(p), start = p;
    ACC acc = 0;
    for (; p < stop && KEY(p) == key; ++p) acc += (ACC)LOAD_T(source, scol + perm[p_off + p] * g.s_row);
    const int from_before = start == first && first > 0 && KEY(first - 1) == key;
    const int goes_on = p == stop && stop < g.N && KEY(stop) == key;
    if (from_before)
      partial[pa_off + (2 * s) * g.C + c] = acc;
    else if (goes_on)
      partial[pa_off + (2 * s + 1) * g.C + c] = acc;
    else
      write_row(target, t_off, &g, key, tcol, acc, p - start);
  }
}

// The chunk where a run that goes on past its end starts adds the run's pieces (its own tail, then
// the following chunks' heads) and writes the row.
__kernel void segment_chunk_joins(__global T_T* target, ulong t_off, __global const I_T* keys, ulong k_off,
                                  __global const ACC* partial, ulong pa_off, long nchunks, Segments g) {
  SEGMENT_ITEM
  const long key = KEY(stop - 1);
  if (stop >= g.N || KEY(stop) != key) return;  // the chunk's last run ends inside it
  long start = stop - 1;
  while (start > first && KEY(start - 1) == key) --start;
  if (start == first && first > 0 && KEY(first - 1) == key) return;  // the run started in an earlier chunk
  ACC acc = partial[pa_off + (2 * s + 1) * g.C + c];
  long end = stop;
  for (long t = s + 1; t < nchunks; ++t) {
    acc += partial[pa_off + (2 * t) * g.C + c];
    const long t_first = t * g.chunk, t_stop = min(g.N, t_first + g.chunk);
    if (t_stop < g.N && KEY(t_stop - 1) == key && KEY(t_stop) == key) continue;  // all of chunk t, and on
    for (end = t_first; end < t_stop && KEY(end) == key;) ++end;
    break;
  }
  write_row(target, t_off, &g, key, tcol, acc, end - start);
}

// The CPU form (runtime/kernel_forms.h: sorted_segment_sums off) of accumulate without scale_by_freq: keys
// are the index as given (not sorted). Work-item e takes `width` adjacent inner columns of outer index co
// and walks the N source rows in their order, adding each into its target row: no sort, no atomics (no
// two items share a column), CPU's order of additions, and the loop over the item's columns is a plain
// loop the compiler vectorises. (index_put_'s compare-and-swap per element took 6 ms for index_add of
// 1024 rows of 1024 floats; one item per target row scanning every key was O(rows * N).)
__kernel void segment_column_walk(__global T_T* target, ulong t_off, __global const T_T* source, ulong s_off,
                                  __global const I_T* keys, ulong k_off, long width, Segments g) {
  const long per_outer = (g.inner + width - 1) / width;
  const long e = RUN_ID();  // line_lanes work-items share the columns where items are vectorised (prelude.cl)
  if (e >= g.C / g.inner * per_outer) return;
  const long co = e / per_outer;
  const long lo = (e - co * per_outer) * width, hi = min(lo + width, g.inner);
  for (long n = 0; n < g.N; ++n) {
    const long row = KEY(n);
    if (row == g.skip_row || row < 0 || row >= g.rows) continue;
    const long t = t_off + row * g.t_row + co * g.t_outer, s = s_off + n * g.s_row + co * g.s_outer;
    if (g.t_inner == 1 && g.s_inner == 1) {
      for (long i = lo + RUN_LANE(); i < hi; i += TOCL_LINE_LANES)
        STORE_T(target, t + i, (ACC)LOAD_T(target, t + i) + (ACC)LOAD_T(source, s + i));
    } else {
      for (long i = lo + RUN_LANE(); i < hi; i += TOCL_LINE_LANES)
        STORE_T(target, t + i * g.t_inner, (ACC)LOAD_T(target, t + i * g.t_inner) + (ACC)LOAD_T(source, s + i * g.s_inner));
    }
  }
}
