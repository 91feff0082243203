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
  for (int k = 0; k < g->ndim; ++k) {
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
