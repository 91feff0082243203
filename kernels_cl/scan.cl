// Inclusive scans along one dim, one program per (input, accumulate, output)
// dtype signature. The host (aten/native/scan.cpp) prepends the prelude and
// IN_T/LOAD_IN, OUT_T/STORE_OUT, ACC_T and ACC_IS_FLOAT (1 for float/double).
// One work-item scans one line; the other dims' sizes and strides are
// arguments (innermost first, so adjacent items read adjacent memory).
#define MAX_DIMS 12

enum { SCAN_SUM = 0, SCAN_PROD = 1, SCAN_LOGSUMEXP = 2 };

typedef struct {
  int ndim;
  long sizes[MAX_DIMS];
  long in_strides[MAX_DIMS];
  long out_strides[MAX_DIMS];
  long idx_strides[MAX_DIMS];  // the indices of cummax/cummin
} ScanGeometry;

typedef struct {
  long in, out, idx;
} LineOffsets;

inline LineOffsets line_offsets(const ScanGeometry* g, long line) {
  LineOffsets r = {0, 0, 0};
  FOR_RANGE(k, 0, g->ndim, MAX_DIMS) {
    const long i = line % g->sizes[k];
    line /= g->sizes[k];
    r.in += i * g->in_strides[k];
    r.out += i * g->out_strides[k];
    r.idx += i * g->idx_strides[k];
  }
  return r;
}

#if ACC_IS_FLOAT
#define ACC_ISNAN(x) isnan(x)
// log(exp(x) + exp(y)) as CPU's _log_add_exp_helper: NaN propagates, equal infinities stay.
inline ACC_T log_add_exp(ACC_T x, ACC_T y) {
  const ACC_T lo = isnan(y) ? y : (y < x ? y : x);
  const ACC_T hi = isnan(y) ? y : (x < y ? y : x);
  if (lo != hi || isfinite(lo)) return log1p(exp(lo - hi)) + hi;
  return x;
}
#define SCAN_INIT(op) ((op) == SCAN_SUM ? (ACC_T)0 : (op) == SCAN_PROD ? (ACC_T)1 : (ACC_T)(-INFINITY))
#define SCAN_STEP(op, acc, x) ((op) == SCAN_SUM ? (acc) + (x) : (op) == SCAN_PROD ? (acc) * (x) : log_add_exp((x), (acc)))
#else
#define ACC_ISNAN(x) 0
#define SCAN_INIT(op) ((op) == SCAN_SUM ? (ACC_T)0 : (ACC_T)1)
#define SCAN_STEP(op, acc, x) ((op) == SCAN_SUM ? (acc) + (x) : (acc) * (x))
#endif

__kernel void scan_lines(__global const IN_T* in, ulong in_offset, __global OUT_T* out, ulong out_offset, int op,
                         long M, long N, long in_step, long out_step, ScanGeometry g) {
  const long line = get_global_id(0);
  if (line >= M) return;
  const LineOffsets base = line_offsets(&g, line);
  __global const IN_T* src = in + in_offset + base.in;
  __global OUT_T* dst = out + out_offset + base.out;
  ACC_T acc = SCAN_INIT(op);
  for (long n = 0; n < N; ++n) {
    const ACC_T x = (ACC_T)LOAD_IN(src, n * in_step);
    acc = SCAN_STEP(op, acc, x);
    STORE_OUT(dst, n * out_step, acc);
  }
}

#if TOCL_LINE_LANES > 1
// scan_lines where work-items are vectorised (Intel's CPU runtime; prelude.cl) and the lines are contiguous: a
// line an item made every load a gather (cumsum of 1024 rows 5x PoCL's time), and a scan cannot split a line
// among lanes without changing its order of operations. So blocks of L = TOCL_LINE_LANES lines go through
// L x 4L tiles in local memory: the L lanes load a tile row by row (neighbouring lanes, neighbouring elements),
// then each lane scans its own line's row of the tile in order, carrying its line's running value, and the
// tile is stored as it was loaded. The operations are scan_lines' own, in its order: the same bits.
// The launch (runtime/launch.h's enqueue_runs): lanes in dim 0, blocks of L lines in dim 1. Every item reaches
// every barrier; lines past M load and store nothing.
#define SCAN_L TOCL_LINE_LANES
#define SCAN_BLOCKS (RUN_GROUP / SCAN_L)
#define SCAN_W (4 * SCAN_L)  // columns a tile: four vectors a line between barriers
__kernel void scan_lines_tiles(__global const IN_T* in, ulong in_offset, __global OUT_T* out, ulong out_offset, int op,
                               long M, long N, ScanGeometry g) {
  __local ACC_T tile[SCAN_BLOCKS][SCAN_L][SCAN_W];
  __local long in_base[SCAN_BLOCKS][SCAN_L], out_base[SCAN_BLOCKS][SCAN_L];
  const int lane = RUN_LANE(), b = (int)get_local_id(1);
  const long first_line = RUN_ID() * SCAN_L;
  // Lane l finds line first_line + l's offsets once; the lanes then read them for every line of the block.
  const long own = first_line + lane;
  const LineOffsets base = line_offsets(&g, own < M ? own : 0);
  in_base[b][lane] = (long)in_offset + base.in;
  out_base[b][lane] = (long)out_offset + base.out;
  const int lines = (int)clamp(M - first_line, 0L, (long)SCAN_L);
  ACC_T acc = SCAN_INIT(op);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (long c0 = 0; c0 < N; c0 += SCAN_W) {
    for (int r = 0; r < lines; ++r)
      for (int q = lane; q < SCAN_W; q += SCAN_L)
        if (c0 + q < N) tile[b][r][q] = (ACC_T)LOAD_IN(in, in_base[b][r] + c0 + q);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lane < lines) {
      const int n = (int)min((long)SCAN_W, N - c0);
      for (int j = 0; j < n; ++j) {
        acc = SCAN_STEP(op, acc, tile[b][lane][j]);
        tile[b][lane][j] = acc;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = 0; r < lines; ++r)
      for (int q = lane; q < SCAN_W; q += SCAN_L)
        if (c0 + q < N) STORE_OUT(out, out_base[b][r] + c0 + q, tile[b][r][q]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
#endif

// cummax (is_max) / cummin: running extreme and its index as CPU: a NaN always takes over
// (so the index is the last NaN's), ties move the index to the later element.
__kernel void scan_extreme_lines(__global const IN_T* in, ulong in_offset, __global OUT_T* out, ulong out_offset,
                                 __global long* idx, ulong idx_offset, int is_max, long M, long N, long in_step,
                                 long out_step, long idx_step, ScanGeometry g) {
  const long line = get_global_id(0);
  if (line >= M) return;
  const LineOffsets base = line_offsets(&g, line);
  __global const IN_T* src = in + in_offset + base.in;
  __global OUT_T* dst = out + out_offset + base.out;
  __global long* dst_idx = idx + idx_offset + base.idx;
  ACC_T best = (ACC_T)LOAD_IN(src, 0);
  long best_i = 0;
  for (long n = 0; n < N; ++n) {
    const ACC_T x = (ACC_T)LOAD_IN(src, n * in_step);
    if (ACC_ISNAN(x) || (!ACC_ISNAN(best) && (is_max ? x >= best : x <= best))) {
      best = x;
      best_i = n;
    }
    STORE_OUT(dst, n * out_step, best);
    dst_idx[n * idx_step] = best_i;
  }
}

#ifdef SCAN_GPU_FORMS
// ---- GPU forms (runtime/kernel_forms.h: scan_parallel); the host defines SCAN_GPU_FORMS only for
// devices that use them. A unit of `lanes` consecutive work-items scans one line, or one chunk of a
// long line: tile by tile, item t holds element tile + t, a scan over the unit's lanes in local memory
// gives the prefix within the tile and a carry passes from tile to tile. Long lines split into chunks:
// scan_chunk_totals reduces each chunk, scan_chunk_carries turns the totals into each chunk's
// exclusive prefix, scan_tiles starts from it. Every scan is one state type: a value (cumsum,
// cumprod, logcumsumexp) or a value and its index (cummax, cummin: index < 0 is "no element yet").
enum { SCAN_MAX = 3, SCAN_MIN = 4 };

typedef struct {
  ACC_T v;
  long i;
} ScanState;

inline ScanState scan_identity(int op) {
  ScanState s;
  s.v = op < SCAN_MAX ? SCAN_INIT(op) : (ACC_T)0;
  s.i = op < SCAN_MAX ? 0 : -1;
  return s;
}

// `a` then `b` (b later in the line). cummax/cummin as scan_extreme_lines: a NaN takes over, ties
// move to the later element; this rule is associative, so chunks and trees give the serial answer.
inline ScanState scan_combine(int op, ScanState a, ScanState b) {
  if (op < SCAN_MAX) {
    a.v = SCAN_STEP(op, a.v, b.v);
    return a;
  }
  const int takes = b.i >= 0 && (a.i < 0 || ACC_ISNAN(b.v) ||
                                 (!ACC_ISNAN(a.v) && (op == SCAN_MAX ? b.v >= a.v : b.v <= a.v)));
  return takes ? b : a;
}

// Inclusive scan of x over each unit's `lanes` items (Hillis-Steele in local memory). Every item of
// the group calls it. On return sv/si[lid] hold the item's result.
inline ScanState unit_scan(int op, __local ACC_T* sv, __local long* si, ScanState x, int lid, int lane, int lanes) {
  sv[lid] = x.v;
  si[lid] = x.i;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int off = 1; off < lanes; off <<= 1) {
    ScanState y = x;
    if (lane >= off) {
      ScanState before;
      before.v = sv[lid - off];
      before.i = si[lid - off];
      y = scan_combine(op, before, x);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    sv[lid] = y.v;
    si[lid] = y.i;
    x = y;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return x;
}

// The units of a group: unit u is (line u / nchunks, chunk u % nchunks). Units past the last stay
// in the loops (same trip count: barriers) and store nothing.
#define SCAN_UNIT                                                                       \
  const int lid = get_local_id(0);                                                      \
  const int lane = lid & (lanes - 1);                                                   \
  const long unit = (long)get_group_id(0) * (get_local_size(0) / lanes) + lid / lanes; \
  const int live = unit < M * nchunks;                                                  \
  const long line = live ? unit / nchunks : 0;                                          \
  const long begin = (unit % nchunks) * chunk;                                          \
  const long end = live ? min(N, begin + chunk) : begin;                                \
  const LineOffsets base = line_offsets(&g, line);                                      \
  __global const IN_T* src = in + in_offset + base.in;

inline ScanState scan_load(int op, __global const IN_T* src, long n, long end, long in_step) {
  if (n >= end) return scan_identity(op);
  ScanState s;
  s.v = (ACC_T)LOAD_IN(src, n * in_step);
  s.i = n;
  return s;
}

// totals[u] = the combined state of unit u's chunk.
__kernel void scan_chunk_totals(__global const IN_T* in, ulong in_offset, __global ACC_T* total_v, ulong tv_offset,
                                __global long* total_i, ulong ti_offset, int op, long M, long N, long in_step,
                                ScanGeometry g, long chunk, long nchunks, int lanes, __local ACC_T* sv,
                                __local long* si) {
  SCAN_UNIT
  ScanState acc = scan_identity(op);
  for (long n = begin + lane; n < end; n += lanes) acc = scan_combine(op, acc, scan_load(op, src, n, end, in_step));
  sv[lid] = acc.v;
  si[lid] = acc.i;
  barrier(CLK_LOCAL_MEM_FENCE);
  // A tree over the unit's lanes; lane t's elements all precede lane t + s's within each stride, but
  // not overall: fine for the commutative value scans; the extremes compare indices (ties: later wins).
  for (int s = lanes / 2; s > 0; s >>= 1) {
    if (lane < s) {
      ScanState a, b;
      a.v = sv[lid]; a.i = si[lid];
      b.v = sv[lid + s]; b.i = si[lid + s];
      const ScanState first = (op >= SCAN_MAX && b.i >= 0 && a.i > b.i) ? b : a;
      const ScanState second = (op >= SCAN_MAX && b.i >= 0 && a.i > b.i) ? a : b;
      const ScanState r = scan_combine(op, first, second);
      sv[lid] = r.v;
      si[lid] = r.i;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (live && lane == 0) {
    total_v[tv_offset + unit] = sv[lid];
    total_i[ti_offset + unit] = si[lid];
  }
}

// Per line, in place: the totals of its chunks become their exclusive prefixes (a few per line).
__kernel void scan_chunk_carries(__global ACC_T* total_v, ulong tv_offset, __global long* total_i, ulong ti_offset,
                                 int op, long M, long nchunks) {
  const long line = get_global_id(0);
  if (line >= M) return;
  ScanState run = scan_identity(op);
  for (long c = 0; c < nchunks; ++c) {
    const ulong at = line * nchunks + c;
    ScanState t;
    t.v = total_v[tv_offset + at];
    t.i = total_i[ti_offset + at];
    total_v[tv_offset + at] = run.v;
    total_i[ti_offset + at] = run.i;
    run = scan_combine(op, run, t);
  }
}

// The scan itself; with nchunks > 1 each chunk starts from carry_v/carry_i (scan_chunk_carries).
// idx (cummax/cummin) may be absent for the value scans.
__kernel void scan_tiles(__global const IN_T* in, ulong in_offset, __global OUT_T* out, ulong out_offset,
                         __global long* idx, ulong idx_offset, __global const ACC_T* carry_v, ulong cv_offset,
                         __global const long* carry_i, ulong ci_offset, int op, long M, long N, long in_step,
                         long out_step, long idx_step, ScanGeometry g, long chunk, long nchunks, int lanes,
                         __local ACC_T* sv, __local long* si) {
  SCAN_UNIT
  __global OUT_T* dst = out + out_offset + base.out;
  ScanState carry = scan_identity(op);
  if (live && nchunks > 1) {
    carry.v = carry_v[cv_offset + unit];
    carry.i = carry_i[ci_offset + unit];
  }
  const int last = lid - lane + lanes - 1;
  for (long k = 0; k < chunk; k += lanes) {
    const long n = begin + k + lane;
    const ScanState x = unit_scan(op, sv, si, scan_load(op, src, n, end, in_step), lid, lane, lanes);
    const ScanState v = scan_combine(op, carry, x);
    if (n < end) {
      STORE_OUT(dst, n * out_step, v.v);
      if (op >= SCAN_MAX) idx[idx_offset + base.idx + n * idx_step] = v.i;
    }
    ScanState tile;
    tile.v = sv[last];
    tile.i = si[last];
    carry = scan_combine(op, carry, tile);
    barrier(CLK_LOCAL_MEM_FENCE);  // everyone has read sv[last] before the next tile writes it
  }
}
#endif  // SCAN_GPU_FORMS
