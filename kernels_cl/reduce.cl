// Reductions, one program per (input, accumulate, output) dtype signature.
// The host (aten/native/reduce.cpp) prepends the prelude and:
//   IN_T, LOAD_IN, OUT_T, STORE_OUT   operands (operand_defines in cl_types.cpp)
//   ACC_T                             the accumulate type; ACC_IS_FLOAT 1 for float/double
//   ACC_LOWEST, ACC_HIGHEST           identities of max and min
// Every reduction kind is an op code argument, so one program serves them all.
// Geometry (sizes, strides, ranks) is an argument too: output element o has
// kept-dim coordinates (innermost first) and the reduced elements r = 0..R-1
// have reduced-dim coordinates (innermost first).
//
// Ways to launch, chosen by the host:
//   *_group    one work-group per (output, chunk of R): each item accumulates a
//              contiguous slice, then a local-memory tree. With nchunks > 1 it
//              writes partial states that *_partials then reduces.
//   reduce_serial  one work-item per output (many outputs, innermost dim reduced).
//   reduce_outer   one work-item per output, adjacent items on adjacent outputs
//              (reduced dims not innermost), optionally split over chunks of R.
//   argreduce_serial  one work-item per output.
#define MAX_DIMS 12

enum {
  OP_SUM = 0, OP_PROD = 1, OP_MAX = 2, OP_MIN = 3, OP_MEAN = 4, OP_ANY = 5, OP_ALL = 6,
  OP_NORM_P = 7, OP_NORM_0 = 8, OP_NORM_1 = 9, OP_NORM_2 = 10, OP_NORM_INF = 11, OP_NORM_NEGINF = 12,
  OP_VAR = 13, OP_STD = 14, OP_LOGSUMEXP = 15, OP_NANSUM = 16, OP_CENTERED_MEAN = 17
};

typedef struct {
  int out_ndim;                     // kept dims
  int red_ndim;                     // reduced dims (after merging)
  long out_sizes[MAX_DIMS];         // kept dims, innermost first
  long in_strides[MAX_DIMS];        // input strides of the kept dims
  long out_strides[MAX_DIMS];       // output (values) strides of the kept dims
  long idx_strides[MAX_DIMS];       // index output strides (arg reductions)
  long red_sizes[MAX_DIMS];         // reduced dims, innermost first
  long red_strides[MAX_DIMS];       // input strides of the reduced dims
} ReduceGeometry;

typedef struct {
  long in, out, idx;
} Offsets;

inline Offsets output_offsets(const ReduceGeometry* g, long o) {
  Offsets r = {0, 0, 0};
  FOR_RANGE(k, 0, g->out_ndim, MAX_DIMS) {
    const long size = g->out_sizes[k];
    const long i = o % size;
    o /= size;
    r.in += i * g->in_strides[k];
    r.out += i * g->out_strides[k];
    r.idx += i * g->idx_strides[k];
  }
  return r;
}

inline long reduced_offset(const ReduceGeometry* g, long r) {
  if (g->red_ndim == 1) return r * g->red_strides[0];
  long off = 0;
  FOR_RANGE(k, 0, g->red_ndim, MAX_DIMS) {
    const long size = g->red_sizes[k];
    off += (r % size) * g->red_strides[k];
    r /= size;
  }
  return off;
}

#if ACC_IS_FLOAT
#define ACC_ISNAN(x) isnan(x)
#define ACC_ABS(x) fabs(x)
#else
#define ACC_ISNAN(x) 0
#define ACC_ABS(x) ((x) < 0 ? -(x) : (x))
#endif

inline ACC_T identity_of(int op) {
  switch (op) {
    case OP_PROD: case OP_ALL: return (ACC_T)1;
    case OP_MAX: return ACC_LOWEST;
    case OP_MIN: return ACC_HIGHEST;
#if ACC_IS_FLOAT
    case OP_NORM_INF: return (ACC_T)0;
    case OP_NORM_NEGINF: return (ACC_T)INFINITY;
#endif
    default: return (ACC_T)0;
  }
}

// The larger (smaller) of a and b, NaN if either is: a select with no branches.
#define MAX_NAN(a, b) ((ACC_ISNAN(a) | ((a) > (b))) ? (a) : (b))
#define MIN_NAN(a, b) ((ACC_ISNAN(a) | ((a) < (b))) ? (a) : (b))

// x as it enters the accumulation; `center` is the mean for OP_VAR/OP_STD, the shift for OP_CENTERED_MEAN.
inline ACC_T map_in(int op, ACC_T x, ACC_T p, ACC_T center) {
  switch (op) {
    case OP_ANY: case OP_ALL: case OP_NORM_0: return (ACC_T)(x != (ACC_T)0);
#if ACC_IS_FLOAT
    case OP_NORM_1: case OP_NORM_INF: case OP_NORM_NEGINF: return fabs(x);
    case OP_NORM_2: return x * x;
    case OP_NORM_P: return pow(fabs(x), p);
    case OP_VAR: case OP_STD: { const ACC_T d = x - center; return d * d; }
    case OP_CENTERED_MEAN: return x - center;
    case OP_LOGSUMEXP: return exp(x - center);
    case OP_NANSUM: return isnan(x) ? (ACC_T)0 : x;
#endif
    default: return x;
  }
}

// NaN propagates through max and min, as on CPU. Selects and bitwise ors rather than a switch
// and short-circuits: branch-free, so PoCL vectorises it across work-items.
inline ACC_T combine(int op, ACC_T a, ACC_T b) {
  const int is_max = op == OP_MAX || op == OP_NORM_INF || op == OP_ANY;
  const int is_min = op == OP_MIN || op == OP_NORM_NEGINF || op == OP_ALL;
  return is_max ? ((ACC_ISNAN(a) | (a > b)) ? a : b)
       : is_min ? ((ACC_ISNAN(a) | (a < b)) ? a : b)
       : op == OP_PROD ? a * b : a + b;
}

// divisor: element count for mean, count - correction for var/std. q = 1/p.
// center: the shift of logsumexp.
inline ACC_T finish(int op, ACC_T a, ACC_T divisor, ACC_T q, ACC_T center) {
  switch (op) {
#if ACC_IS_FLOAT
    case OP_LOGSUMEXP: return log(a) + center;
    case OP_MEAN: case OP_VAR: return a / divisor;
    case OP_CENTERED_MEAN: return center + a / divisor;
    case OP_STD: return sqrt(a / divisor);
    case OP_NORM_2: return sqrt(a);
    case OP_NORM_P: return pow(a, q);
#endif
    default: return a;
  }
}

inline ACC_T tree_reduce(int op, __local ACC_T* scratch, ACC_T v) {
  const int lid = get_local_id(0);
  const int n = get_local_size(0);
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = n / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] = combine(op, scratch[lid], scratch[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return scratch[0];
}

#define LOAD_ACC(p, i) ((ACC_T)LOAD_IN(p, i))

// The per-output value var/std subtract (the mean) and logsumexp shifts by (the max, 0 if infinite).
inline ACC_T center_of(int op, __global const ACC_T* center, ulong i) {
  if (op == OP_VAR || op == OP_STD || op == OP_CENTERED_MEAN) return center[i];
#if ACC_IS_FLOAT
  if (op == OP_LOGSUMEXP) return isinf(center[i]) ? (ACC_T)0 : center[i];
#endif
  return (ACC_T)0;
}

#ifndef REDUCE_GPU_FORMS  // the CPU forms' kernels (the GPU forms replace them: a smaller program to build)
// Accumulates n elements from x with stride 1 into 16 independent lanes (so the
// compiler vectorises the loop, and each lane sums only n/16 values).
inline ACC_T accumulate_run(int op, __global const IN_T* x, long n, ACC_T p, ACC_T mu) {
  ACC_T a[16];
  long i = 0;
#ifdef ACC_V16
  // The input is the accumulate type (float or double): the common ops load 16 elements as one vector,
  // which PoCL's compiler keeps in vector registers (the lanes below stayed scalar: 1M floats summed in
  // 5x the time). Same lanes, same order, same result. Other ops take the lanes below.
  ACC_V16 v = (ACC_V16)identity_of(op);
  int vectored = 1;
#define VECTOR_RUN(update)                            \
  for (; i + 16 <= n; i += 16) {                      \
    const ACC_V16 y = vload16(0, x + i);              \
    update;                                           \
  }
  if (op == OP_SUM || op == OP_MEAN) {
    VECTOR_RUN(v += y)
  } else if (op == OP_VAR || op == OP_STD) {
    VECTOR_RUN(v += (y - mu) * (y - mu))
  } else if (op == OP_CENTERED_MEAN) {
    VECTOR_RUN(v += y - mu)
  } else if (op == OP_NORM_2) {
    VECTOR_RUN(v += y * y)
  } else if (op == OP_NORM_1) {
    VECTOR_RUN(v += fabs(y))
  } else if (op == OP_NORM_INF) {
    VECTOR_RUN(v = select(fabs(y), v, (v != v) | (v > fabs(y))))
  } else if (op == OP_MAX) {
    VECTOR_RUN(v = select(y, v, (v != v) | (v > y)))  // v != v: NaN, as a compare (isnan is a call)
  } else if (op == OP_MIN) {
    VECTOR_RUN(v = select(y, v, (v != v) | (v < y)))
  } else {
    vectored = 0;
  }
#undef VECTOR_RUN
  if (vectored) {
    vstore16(v, 0, a);
    ACC_T t = a[0];
    for (int j = 1; j < 16; ++j) t = combine(op, t, a[j]);
    for (; i < n; ++i) t = combine(op, t, map_in(op, LOAD_ACC(x, i), p, mu));
    return t;
  }
#endif
  if (op == OP_SUM || op == OP_MEAN) {
    for (int j = 0; j < 16; ++j) a[j] = (ACC_T)0;
    for (; i + 16 <= n; i += 16)
      for (int j = 0; j < 16; ++j) a[j] += LOAD_ACC(x, i + j);
  } else if (op == OP_VAR || op == OP_STD) {
    for (int j = 0; j < 16; ++j) a[j] = (ACC_T)0;
    for (; i + 16 <= n; i += 16)
      for (int j = 0; j < 16; ++j) {
        const ACC_T d = LOAD_ACC(x, i + j) - mu;
        a[j] += d * d;
      }
  } else if (op == OP_MAX || op == OP_MIN || op == OP_PROD) {
    for (int j = 0; j < 16; ++j) a[j] = identity_of(op);
    for (; i + 16 <= n; i += 16)
      for (int j = 0; j < 16; ++j) a[j] = combine(op, a[j], LOAD_ACC(x, i + j));
  } else {
    for (int j = 0; j < 16; ++j) a[j] = identity_of(op);
    for (; i + 16 <= n; i += 16)
      for (int j = 0; j < 16; ++j) a[j] = combine(op, a[j], map_in(op, LOAD_ACC(x, i + j), p, mu));
  }
  ACC_T t = a[0];
  for (int j = 1; j < 16; ++j) t = combine(op, t, a[j]);
  for (; i < n; ++i) t = combine(op, t, map_in(op, LOAD_ACC(x, i), p, mu));
  return t;
}

// Accumulates the reduced elements [b, e) (row-major over the reduced dims) of one output.
inline ACC_T accumulate_range(int op, __global const IN_T* src, const ReduceGeometry* g, long b, long e, ACC_T p,
                              ACC_T mu) {
  ACC_T acc = identity_of(op);
  if (g->red_strides[0] == 1) {
    // Runs along the contiguous innermost reduced dim.
    const long n0 = g->red_sizes[0];
    for (long r = b; r < e;) {
      const long run = min(e - r, n0 - r % n0);
      acc = combine(op, acc, accumulate_run(op, src + reduced_offset(g, r), run, p, mu));
      r += run;
    }
  } else if (g->red_ndim == 1) {
    const long s = g->red_strides[0];
    __global const IN_T* x = src + b * s;
    for (long r = b; r < e; ++r, x += s) acc = combine(op, acc, map_in(op, LOAD_ACC(x, 0), p, mu));
  } else {
    for (long r = b; r < e; ++r) acc = combine(op, acc, map_in(op, LOAD_ACC(src, reduced_offset(g, r)), p, mu));
  }
  return acc;
}

// Group g handles output g / nchunks, elements [c * chunk, min(R, (c + 1) * chunk)); each
// work-item accumulates a contiguous slice of that range, then a local-memory tree combines them.
// center: per-output means (contiguous, ACC_T) for var/std, else unused.
__kernel void reduce_group(__global const IN_T* in, ulong in_offset, __global OUT_T* out, ulong out_offset,
                           __global const ACC_T* center, ulong center_offset, __global ACC_T* partial, ulong partial_offset,
                           int op, long M, long R, long chunk, long nchunks, ReduceGeometry g, ACC_T p, ACC_T q,
                           ACC_T divisor, __local ACC_T* scratch) {
  const long group = get_group_id(0);
  const long o = group / nchunks;
  const long c = group % nchunks;
  // The host launches exactly M * nchunks groups: no early return before the barriers.
  const Offsets base = output_offsets(&g, o);
  const ACC_T mu = center_of(op, center, center_offset + o);
  const long begin = c * chunk;
  const long end = min(R, begin + chunk);
  const long group_size = get_local_size(0);
  const long per = ((end - begin + group_size - 1) / group_size + 15) / 16 * 16;
  const long b = min(end, begin + (long)get_local_id(0) * per);
  ACC_T acc = accumulate_range(op, in + in_offset + base.in, &g, b, min(end, b + per), p, mu);
  acc = tree_reduce(op, scratch, acc);
  if (get_local_id(0) != 0) return;
  if (nchunks == 1)
    STORE_OUT(out, out_offset + base.out, finish(op, acc, divisor, q, mu));
  else
    partial[partial_offset + group] = acc;
}

#endif  // !REDUCE_GPU_FORMS

// Second pass: group o combines partial[o * nchunks .. o * nchunks + nchunks).
__kernel void reduce_partials(__global const ACC_T* partial, ulong partial_offset, __global OUT_T* out, ulong out_offset,
                              __global const ACC_T* center, ulong center_offset, int op, long M,
                              long nchunks, ReduceGeometry g, ACC_T q, ACC_T divisor, __local ACC_T* scratch) {
  const long o = get_group_id(0);
  // The host launches exactly M * nchunks groups: no early return before the barriers.
  const ACC_T mu = center_of(op, center, center_offset + o);
  ACC_T acc = identity_of(op);
  for (long c = get_local_id(0); c < nchunks; c += get_local_size(0))
    acc = combine(op, acc, partial[partial_offset + o * nchunks + c]);
  acc = tree_reduce(op, scratch, acc);
  if (get_local_id(0) == 0) STORE_OUT(out, out_offset + output_offsets(&g, o).out, finish(op, acc, divisor, q, mu));
}

#ifndef REDUCE_GPU_FORMS
// One work-item per output, for many outputs each reducing a contiguous run.
__kernel void reduce_serial(__global const IN_T* in, ulong in_offset, __global OUT_T* out, ulong out_offset,
                            __global const ACC_T* center, ulong center_offset, int op, long M, long R,
                            ReduceGeometry g, ACC_T p, ACC_T q, ACC_T divisor) {
  const long o = get_global_id(0);
  if (o >= M) return;
  const Offsets base = output_offsets(&g, o);
  const ACC_T mu = center_of(op, center, center_offset + o);
  const ACC_T acc = accumulate_range(op, in + in_offset + base.in, &g, 0, R, p, mu);
  STORE_OUT(out, out_offset + base.out, finish(op, acc, divisor, q, mu));
}

// Strided reductions (the reduced dims are not innermost, e.g. sum(dim=0) of a matrix): one
// work-item per output, adjacent items on adjacent outputs, each walking its elements
// [c * chunk, min(R, (c + 1) * chunk)) by pointer increments. The barrier in the loop makes
// PoCL run the work-items of a group in lock-step per block of 8 elements, which vectorises
// the loads across them. The global size is nchunks * (M rounded up to the group size); items
// past the last output repeat it and store nothing (no early return before a barrier).
// With nchunks > 1 it writes partial[c * M + o], which reduce_outer_partials combines.
__kernel void reduce_outer(__global const IN_T* in, ulong in_offset, __global OUT_T* out, ulong out_offset,
                           __global const ACC_T* center, ulong center_offset, __global ACC_T* partial,
                           ulong partial_offset, int op, long M, long R, long chunk, long nchunks, ReduceGeometry g,
                           ACC_T p, ACC_T q, ACC_T divisor) {
  const long rounded = get_global_size(0) / nchunks;
  const long c = get_global_id(0) / rounded;
  const long item = get_global_id(0) % rounded;
  const long o = min(item, M - 1);
  const Offsets base = output_offsets(&g, o);
  const ACC_T mu = center_of(op, center, center_offset + o);
  const long begin = c * chunk;
  const long end = min(R, begin + chunk);
  const int fast_sum = (op == OP_SUM || op == OP_MEAN) && g.red_ndim == 1;
  const int fast_max = op == OP_MAX && g.red_ndim == 1;
  const int fast_min = op == OP_MIN && g.red_ndim == 1;
  const int plain = op == OP_PROD;  // map_in is the identity
  const long s = g.red_strides[0];
  __global const IN_T* src = in + in_offset + base.in;
  __global const IN_T* x = src + begin * s;
  ACC_T acc = identity_of(op);
  long r = begin;
  for (; r + 8 <= end; r += 8) {
    if (fast_sum) {
      acc += ((LOAD_ACC(x, 0) + LOAD_ACC(x, s)) + (LOAD_ACC(x, 2 * s) + LOAD_ACC(x, 3 * s))) +
             ((LOAD_ACC(x, 4 * s) + LOAD_ACC(x, 5 * s)) + (LOAD_ACC(x, 6 * s) + LOAD_ACC(x, 7 * s)));
    } else if (fast_max) {
      ACC_T block = LOAD_ACC(x, 0);
      for (int j = 1; j < 8; ++j) block = MAX_NAN(block, LOAD_ACC(x, j * s));
      acc = MAX_NAN(acc, block);
    } else if (fast_min) {
      ACC_T block = LOAD_ACC(x, 0);
      for (int j = 1; j < 8; ++j) block = MIN_NAN(block, LOAD_ACC(x, j * s));
      acc = MIN_NAN(acc, block);
    } else if (plain && g.red_ndim == 1) {
      ACC_T block = identity_of(op);
      for (int j = 0; j < 8; ++j) block = combine(op, block, LOAD_ACC(x, j * s));
      acc = combine(op, acc, block);
    } else if (g.red_ndim == 1) {
      ACC_T block = identity_of(op);
      for (int j = 0; j < 8; ++j) block = combine(op, block, map_in(op, LOAD_ACC(x, j * s), p, mu));
      acc = combine(op, acc, block);
    } else {
      ACC_T block = identity_of(op);
      for (int j = 0; j < 8; ++j) block = combine(op, block, map_in(op, LOAD_ACC(src, reduced_offset(&g, r + j)), p, mu));
      acc = combine(op, acc, block);
    }
    x += 8 * s;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  acc = combine(op, acc, accumulate_range(op, src, &g, r, end, p, mu));
  if (item < M) {
    if (nchunks == 1)
      STORE_OUT(out, out_offset + base.out, finish(op, acc, divisor, q, mu));
    else
      partial[partial_offset + c * M + o] = acc;
  }
}

#ifdef ACC_V16
// Strided sums, maxima and minima whose outputs are adjacent in the input (a bias gradient: sum(0) of a
// (rows, M) matrix): a work-item per 16 adjacent outputs and chunk of rows, their 16 running values one vector, four rows
// apart in four vectors. Where there is more than one chunk (nchunks) it writes partial[c * M + o], as
// reduce_outer, which reduce_outer_partials combines.
inline void columns_write(__global OUT_T* out, ulong out_offset, __global ACC_T* partial, ulong partial_offset,
                          int op, long M, long nchunks, long c, long o, long out_stride, ACC_T a, ACC_T divisor) {
  if (nchunks == 1)
    STORE_OUT(out, out_offset + o * out_stride, finish(op, a, divisor, (ACC_T)0, (ACC_T)0));
  else
    partial[partial_offset + c * M + o] = a;
}

__kernel void reduce_columns(__global const IN_T* in, ulong in_offset, __global OUT_T* out, ulong out_offset,
                             __global ACC_T* partial, ulong partial_offset, int op, long M, long R, long chunk,
                             long nchunks, ReduceGeometry g, ACC_T divisor) {
  const long blocks = (M + 15) / 16;
  if (get_global_id(0) >= blocks * nchunks) return;
  const long c = get_global_id(0) / blocks, b = get_global_id(0) % blocks * 16;
  const long begin = c * chunk, end = min(R, begin + chunk), s = g.red_strides[0];
  __global const IN_T* x = in + in_offset + b;  // output o reads from element o (in_strides[0] is 1)
  const long out_stride = g.out_strides[0];
  if (b + 16 <= M) {
    ACC_V16 a0 = (ACC_V16)identity_of(op), a1 = a0, a2 = a0, a3 = a0;
    long r = begin;
    // Sums, or max and min (a NaN stays: v != v is the NaN test as a compare; isnan is a call).
#define COLUMNS_LOOP(UPDATE)                  \
    for (; r + 4 <= end; r += 4) {            \
      UPDATE(a0, vload16(0, x + r * s));       \
      UPDATE(a1, vload16(0, x + (r + 1) * s)); \
      UPDATE(a2, vload16(0, x + (r + 2) * s)); \
      UPDATE(a3, vload16(0, x + (r + 3) * s)); \
    }                                         \
    for (; r < end; ++r) UPDATE(a0, vload16(0, x + r * s));
#define COLUMNS_ADD(a, y) a += (y);
#define COLUMNS_MAX(a, y) { const ACC_V16 y_ = (y); a = select(y_, a, (a != a) | (a > y_)); }
#define COLUMNS_MIN(a, y) { const ACC_V16 y_ = (y); a = select(y_, a, (a != a) | (a < y_)); }
    if (op == OP_MAX) {
      COLUMNS_LOOP(COLUMNS_MAX)
      COLUMNS_MAX(a0, a1) COLUMNS_MAX(a2, a3) COLUMNS_MAX(a0, a2)
    } else if (op == OP_MIN) {
      COLUMNS_LOOP(COLUMNS_MIN)
      COLUMNS_MIN(a0, a1) COLUMNS_MIN(a2, a3) COLUMNS_MIN(a0, a2)
    } else {
      COLUMNS_LOOP(COLUMNS_ADD)
      a0 = (a0 + a1) + (a2 + a3);
    }
#undef COLUMNS_LOOP
#undef COLUMNS_ADD
#undef COLUMNS_MAX
#undef COLUMNS_MIN
    ACC_T v[16];
    vstore16(a0, 0, v);
    for (int j = 0; j < 16; ++j)
      columns_write(out, out_offset, partial, partial_offset, op, M, nchunks, c, b + j, out_stride, v[j], divisor);
  } else {
    for (long o = b; o < M; ++o) {
      ACC_T a = identity_of(op);
      for (long r = begin; r < end; ++r) a = combine(op, a, x[o - b + r * s]);
      columns_write(out, out_offset, partial, partial_offset, op, M, nchunks, c, o, out_stride, a, divisor);
    }
  }
}
#endif

#endif  // !REDUCE_GPU_FORMS

// Second pass of reduce_outer: item o combines partial[c * M + o] over the chunks.
__kernel void reduce_outer_partials(__global const ACC_T* partial, ulong partial_offset, __global OUT_T* out,
                                    ulong out_offset, __global const ACC_T* center, ulong center_offset, int op,
                                    long M, long nchunks, ReduceGeometry g, ACC_T q, ACC_T divisor) {
  const long o = get_global_id(0);
  if (o >= M) return;
  const ACC_T mu = center_of(op, center, center_offset + o);
  ACC_T acc = identity_of(op);
  for (long c = 0; c < nchunks; ++c) acc = combine(op, acc, partial[partial_offset + c * M + o]);
  STORE_OUT(out, out_offset + output_offsets(&g, o).out, finish(op, acc, divisor, q, mu));
}

// ---- Arg reductions: values and first indices of max (is_max) or min ----

// True if (a, ia) wins over (b, ib): NaN is the extreme, ties go to the first index.
inline bool arg_better(int is_max, ACC_T a, long ia, ACC_T b, long ib) {
  if (ACC_ISNAN(a)) return !ACC_ISNAN(b) || ia < ib;
  if (ACC_ISNAN(b)) return false;
  if (a == b) return ia < ib;
  return is_max ? a > b : a < b;
}

inline void arg_tree(int is_max, __local ACC_T* sv, __local long* si, ACC_T* v, long* i) {
  const int lid = get_local_id(0);
  sv[lid] = *v;
  si[lid] = *i;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (lid < s && !arg_better(is_max, sv[lid], si[lid], sv[lid + s], si[lid + s])) {
      sv[lid] = sv[lid + s];
      si[lid] = si[lid + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  *v = sv[0];
  *i = si[0];
}

// values may be absent (has_values 0: argmax/argmin).
__kernel void argreduce_group(__global const IN_T* in, ulong in_offset, __global OUT_T* values, ulong values_offset,
                              __global long* indices, ulong indices_offset, __global ACC_T* partial_v,
                              ulong pv_offset, __global long* partial_i, ulong pi_offset, int is_max, int has_values, long M, long R, long chunk,
                              long nchunks, ReduceGeometry g, __local ACC_T* sv, __local long* si) {
  const long group = get_group_id(0);
  const long o = group / nchunks;
  const long c = group % nchunks;
  // The host launches exactly M * nchunks groups: no early return before the barriers.
  const Offsets base = output_offsets(&g, o);
  const long begin = c * chunk;
  const long end = min(R, begin + chunk);
  ACC_T best = is_max ? ACC_LOWEST : ACC_HIGHEST;
  long besti = LONG_MAX;
  __global const IN_T* src = in + in_offset + base.in;
  for (long r = begin + get_local_id(0); r < end; r += get_local_size(0)) {
    const ACC_T x = LOAD_ACC(src, reduced_offset(&g, r));
    if (arg_better(is_max, x, r, best, besti)) {
      best = x;
      besti = r;
    }
  }
  arg_tree(is_max, sv, si, &best, &besti);
  if (get_local_id(0) != 0) return;
  if (nchunks == 1) {
    if (has_values) STORE_OUT(values, values_offset + base.out, best);
    indices[indices_offset + base.idx] = besti;
  } else {
    partial_v[pv_offset + group] = best;
    partial_i[pi_offset + group] = besti;
  }
}

__kernel void argreduce_partials(__global const ACC_T* partial_v, ulong pv_offset, __global const long* partial_i,
                                 ulong pi_offset,
                                 __global OUT_T* values, ulong values_offset, __global long* indices,
                                 ulong indices_offset, int is_max, int has_values, long M, long nchunks,
                                 ReduceGeometry g, __local ACC_T* sv, __local long* si) {
  const long o = get_group_id(0);
  // The host launches exactly M * nchunks groups: no early return before the barriers.
  ACC_T best = is_max ? ACC_LOWEST : ACC_HIGHEST;
  long besti = LONG_MAX;
  const ulong first = o * nchunks;
  for (long c = get_local_id(0); c < nchunks; c += get_local_size(0))
    if (arg_better(is_max, partial_v[pv_offset + first + c], partial_i[pi_offset + first + c], best, besti)) {
      best = partial_v[pv_offset + first + c];
      besti = partial_i[pi_offset + first + c];
    }
  arg_tree(is_max, sv, si, &best, &besti);
  if (get_local_id(0) != 0) return;
  const Offsets base = output_offsets(&g, o);
  if (has_values) STORE_OUT(values, values_offset + base.out, best);
  indices[indices_offset + base.idx] = besti;
}

// Whether x (later in the scan) replaces best (earlier): a NaN is the extreme and the first one
// stays; ties keep the earlier. Branch-free, so it vectorises.
inline int arg_replaces(int is_max, ACC_T x, ACC_T best) {
  return (!ACC_ISNAN(best)) & (ACC_ISNAN(x) | (is_max ? x > best : x < best));
}

// The best of elements [r0, r0 + n) of a contiguous run x, in 16 lanes; (best, besti) updated.
inline void arg_run(int is_max, __global const IN_T* x, long r0, long n, ACC_T* best, long* besti) {
  long i = 0;
  if (n >= 32) {
    ACC_T v[16];
    long vi[16];
    for (int j = 0; j < 16; ++j) {
      v[j] = LOAD_ACC(x, j);
      vi[j] = j;
    }
    for (i = 16; i + 16 <= n; i += 16)
      for (int j = 0; j < 16; ++j) {
        const ACC_T y = LOAD_ACC(x, i + j);
        const int take = arg_replaces(is_max, y, v[j]);
        v[j] = take ? y : v[j];
        vi[j] = take ? i + j : vi[j];
      }
    for (int j = 0; j < 16; ++j)
      if (arg_better(is_max, v[j], r0 + vi[j], *best, *besti)) {
        *best = v[j];
        *besti = r0 + vi[j];
      }
  }
  for (; i < n; ++i) {
    const ACC_T y = LOAD_ACC(x, i);
    if (arg_better(is_max, y, r0 + i, *best, *besti)) {
      *best = y;
      *besti = r0 + i;
    }
  }
}

// One work-item per output (many outputs). Contiguous reduced runs go through arg_run's lanes;
// strided ones walk by pointer with a barrier every 8 elements, which makes PoCL run the group's
// items in lock-step (adjacent items on adjacent outputs: vectorised loads). Items past the last
// output repeat it and store nothing: no early return before a barrier.
__kernel void argreduce_serial(__global const IN_T* in, ulong in_offset, __global OUT_T* values, ulong values_offset,
                               __global long* indices, ulong indices_offset, int is_max, int has_values, long M,
                               long R, ReduceGeometry g) {
  const long item = get_global_id(0);
  const long o = min(item, M - 1);
  const Offsets base = output_offsets(&g, o);
  __global const IN_T* src = in + in_offset + base.in;
  ACC_T best = LOAD_ACC(src, 0);  // R > 0: the host checks
  long besti = 0;
  if (g.red_strides[0] == 1) {
    const long n0 = g.red_sizes[0];
    for (long r = 0; r < R; r += n0) arg_run(is_max, src + reduced_offset(&g, r), r, n0, &best, &besti);
  } else {
    const long s = g.red_strides[0];
    __global const IN_T* x = src;
    long r = 0;
    for (; r + 8 <= R; r += 8) {
      for (int j = 0; j < 8; ++j) {
        const ACC_T y = g.red_ndim == 1 ? LOAD_ACC(x, j * s) : LOAD_ACC(src, reduced_offset(&g, r + j));
        const int take = arg_replaces(is_max, y, best);
        best = take ? y : best;
        besti = take ? r + j : besti;
      }
      x += 8 * s;
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (; r < R; ++r) {
      const ACC_T y = LOAD_ACC(src, reduced_offset(&g, r));
      const int take = arg_replaces(is_max, y, best);
      best = take ? y : best;
      besti = take ? r : besti;
    }
  }
  if (item < M) {
    if (has_values) STORE_OUT(values, values_offset + base.out, best);
    indices[indices_offset + base.idx] = besti;
  }
}

#if TOCL_LINE_LANES > 1
// Where work-items are vectorised (Intel's CPU runtime; prelude.cl): an output's contiguous reduced run is shared
// by TOCL_LINE_LANES items (runtime/launch.h's enqueue_runs: lanes in dim 0, outputs in dim 1), lane l taking
// elements l, l + TOCL_LINE_LANES, ..., then lane 0 combines the lanes in local memory (arg_better's order: the
// first NaN, else the first extreme). An output an item made every load a gather: argmax of 1024 rows of 1024
// took 7x PoCL's time. Every item reaches the barrier; items past the last output repeat it and store nothing.
__kernel void argreduce_lanes(__global const IN_T* in, ulong in_offset, __global OUT_T* values, ulong values_offset,
                              __global long* indices, ulong indices_offset, int is_max, int has_values, long M,
                              long R, ReduceGeometry g) {
  __local ACC_T lane_v[RUN_GROUP];
  __local long lane_i[RUN_GROUP];
  const long item = RUN_ID();
  const long o = min(item, M - 1);
  const int lane = RUN_LANE();
  const int slot = (int)get_local_id(1) * TOCL_LINE_LANES + lane;
  const Offsets base = output_offsets(&g, o);
  __global const IN_T* src = in + in_offset + base.in;
  ACC_T best = LOAD_ACC(src, 0);  // R > 0: the host checks; element 0 is every lane's earliest candidate
  long besti = 0;
  for (long r = lane; r < R; r += TOCL_LINE_LANES) {
    const ACC_T y = LOAD_ACC(src, r);
    const int take = arg_replaces(is_max, y, best);
    best = take ? y : best;
    besti = take ? r : besti;
  }
  lane_v[slot] = best;
  lane_i[slot] = besti;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lane != 0 || item >= M) return;
  for (int j = 1; j < TOCL_LINE_LANES; ++j)
    if (arg_better(is_max, lane_v[slot + j], lane_i[slot + j], best, besti)) {
      best = lane_v[slot + j];
      besti = lane_i[slot + j];
    }
  if (has_values) STORE_OUT(values, values_offset + base.out, best);
  indices[indices_offset + base.idx] = besti;
}
#endif

#ifdef REDUCE_GPU_FORMS
// ---- GPU forms (runtime/kernel_forms.h: reduce_coalesced); the host defines REDUCE_GPU_FORMS only
// for devices that use them, so CPU-class programs stay as they were. Consecutive work-items read
// consecutive elements (coalesced loads); long reductions are split over chunks whose partial states
// reduce_partials / reduce_outer_partials combine. Barriers are reached by every work-item: items
// without an output compute nothing and store nothing.

// Accumulates the elements r = first, first + step, ... < end of one output, four loads in flight.
inline ACC_T accumulate_strided(int op, __global const IN_T* src, const ReduceGeometry* g, long first, long end,
                                long step, ACC_T p, ACC_T mu) {
  ACC_T a0 = identity_of(op), a1 = a0, a2 = a0, a3 = a0;
  long r = first;
  if (g->red_ndim == 1) {
    const long s = g->red_strides[0];
    for (; r + 3 * step < end; r += 4 * step) {
      a0 = combine(op, a0, map_in(op, LOAD_ACC(src, r * s), p, mu));
      a1 = combine(op, a1, map_in(op, LOAD_ACC(src, (r + step) * s), p, mu));
      a2 = combine(op, a2, map_in(op, LOAD_ACC(src, (r + 2 * step) * s), p, mu));
      a3 = combine(op, a3, map_in(op, LOAD_ACC(src, (r + 3 * step) * s), p, mu));
    }
    for (; r < end; r += step) a0 = combine(op, a0, map_in(op, LOAD_ACC(src, r * s), p, mu));
  } else {
    for (; r < end; r += step) a0 = combine(op, a0, map_in(op, LOAD_ACC(src, reduced_offset(g, r)), p, mu));
  }
  return combine(op, combine(op, a0, a1), combine(op, a2, a3));
}

// Reduced elements along the rows (the innermost reduced dim is the contiguous one). `lanes` (a
// power of two dividing the group) consecutive items serve one unit (output o, chunk c of R), so a
// group holds local_size / lanes units: one long row per group, or many short rows. Lane t reads
// elements t, t + lanes, ... of its chunk; a tree over the unit's lanes follows. Unit u is output
// u / nchunks, chunk u % nchunks; with nchunks > 1 it writes partial[u] for reduce_partials.
__kernel void reduce_rows(__global const IN_T* in, ulong in_offset, __global OUT_T* out, ulong out_offset,
                          __global const ACC_T* center, ulong center_offset, __global ACC_T* partial,
                          ulong partial_offset, int op, long M, long R, long chunk, long nchunks, ReduceGeometry g,
                          ACC_T p, ACC_T q, ACC_T divisor, int lanes, __local ACC_T* scratch) {
  const int lid = get_local_id(0);
  const int lane = lid & (lanes - 1);
  const long unit = (long)get_group_id(0) * (get_local_size(0) / lanes) + lid / lanes;
  const int live = unit < M * nchunks;
  const long o = live ? unit / nchunks : 0;
  const long begin = (unit % nchunks) * chunk;
  const long end = live ? min(R, begin + chunk) : begin;
  const Offsets base = output_offsets(&g, o);
  const ACC_T mu = live ? center_of(op, center, center_offset + o) : (ACC_T)0;
  ACC_T acc = accumulate_strided(op, in + in_offset + base.in, &g, begin + lane, end, lanes, p, mu);
  scratch[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = lanes / 2; s > 0; s >>= 1) {
    if (lane < s) scratch[lid] = combine(op, scratch[lid], scratch[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lane != 0 || !live) return;
  acc = scratch[lid];
  if (nchunks == 1)
    STORE_OUT(out, out_offset + base.out, finish(op, acc, divisor, q, mu));
  else
    partial[partial_offset + unit] = acc;
}

// Reduced elements across columns (a kept dim is the contiguous one: sum(dim=0) of a matrix, bias
// gradients). A group is `cols` adjacent outputs by local_size / cols row lanes: item (h, w) reads
// elements h, h + lanes, ... of output first + w's chunk, so consecutive items read consecutive
// outputs; a tree over each column's row lanes follows. Groups are chunk-major; with nchunks > 1
// output o's chunk c goes to partial[c * M + o] for reduce_outer_partials.
__kernel void reduce_cols(__global const IN_T* in, ulong in_offset, __global OUT_T* out, ulong out_offset,
                          __global const ACC_T* center, ulong center_offset, __global ACC_T* partial,
                          ulong partial_offset, int op, long M, long R, long chunk, long nchunks, ReduceGeometry g,
                          ACC_T p, ACC_T q, ACC_T divisor, int cols, __local ACC_T* scratch) {
  const int lid = get_local_id(0);
  const int w = lid % cols, h = lid / cols;
  const int row_lanes = get_local_size(0) / cols;
  const long col_groups = (M + cols - 1) / cols;
  const long c = get_group_id(0) / col_groups;
  const long wanted = (get_group_id(0) % col_groups) * cols + w;
  const int live = wanted < M;
  const long o = live ? wanted : 0;
  const long begin = c * chunk;
  const long end = live ? min(R, begin + chunk) : begin;
  const Offsets base = output_offsets(&g, o);
  const ACC_T mu = live ? center_of(op, center, center_offset + o) : (ACC_T)0;
  ACC_T acc = accumulate_strided(op, in + in_offset + base.in, &g, begin + h, end, row_lanes, p, mu);
  scratch[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = row_lanes / 2; s > 0; s >>= 1) {
    if (h < s) scratch[lid] = combine(op, scratch[lid], scratch[lid + s * cols]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (h != 0 || !live) return;
  acc = scratch[lid];
  if (nchunks == 1)
    STORE_OUT(out, out_offset + base.out, finish(op, acc, divisor, q, mu));
  else
    partial[partial_offset + c * M + o] = acc;
}
#endif  // REDUCE_GPU_FORMS
