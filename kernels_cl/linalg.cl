// Dense factorizations and solves (aten/native/linalg_lu.cpp, linalg_cholesky.cpp): LAPACK's getrf (LU with
// partial pivoting), getrs, potrf (Cholesky) and BLAS's trsm, a work-group per matrix (factorizations) or per
// (matrix, block of right-hand sides) (solves). Matrices
// are column-major ("F-contiguous", as LAPACK's): element (i, j) of a matrix with leading dimension ld at
// i + j * ld, so a column is contiguous and consecutive work-items touch consecutive rows.
// T_T is float or double; WG, the group size, a power of two.

// Products and differences are rounded separately and multipliers divided, which matched CPU's LAPACK (MKL) best on
// exactly singular and semidefinite matrices (a contracted multiply-add, or a reciprocal, leaves 1e-7 where its
// exact cancellation finds a zero pivot); such matrices' last pivot can still differ from CPU's by an ulp.
#pragma OPENCL FP_CONTRACT OFF

// Work-items over an R x C block (rows fastest): rows r = rl, rl + row_step, ... and columns c = cl, cl + CL,
// ...; when fewer rows than items remain, the group splits into WG / R column lanes of R items each.
typedef struct {
  int rl, row_step, cl, CL;
} Lanes;

inline Lanes lanes(int R) {
  Lanes l;
  const int lid = get_local_id(0);
  l.row_step = R >= WG ? WG : max(R, 1);
  l.CL = WG / l.row_step;
  l.rl = lid % l.row_step;
  l.cl = lid / l.row_step;  // items past CL * row_step have cl >= CL: idle
  return l;
}

// LAPACK's i?amax order: a larger |value| wins, the first row on ties; NaN never wins, except in the first row
// (the running maximum starts there and nothing compares greater than NaN).
inline T_T pivot_key(T_T v, int first) {
  const T_T a = fabs(v);
  return isnan(a) ? (first ? (T_T)INFINITY : (T_T)(-1)) : a;
}

// In-place LU with partial pivoting of the m x n matrix `a` (leading dimension m) of each group, as LAPACK's
// getrf: a = P L U, L unit lower (below the diagonal), U upper. Column j: the pivot row (a local-memory
// reduction), the row swap across all columns, the multipliers below the diagonal, and the rank-1 update of
// the trailing block, each step in parallel over the group, a barrier between. pivots (1-based, k = min(m, n)
// per matrix) and info (the first zero pivot, 1-based, else 0) as LAPACK's. Without `pivot`, rows stay.
__kernel void lu_factor(__global T_T* a, ulong a_off, __global int* pivots, ulong piv_off, __global int* info,
                        ulong info_off, int m, int n, int pivot) {
  __local T_T key[WG], value[WG];
  __local int row[WG];
  const int lid = get_local_id(0);
  const long b = get_group_id(0);
  const int k = min(m, n);
  a += a_off + b * (long)m * n;
  pivots += piv_off + b * k;
  int first_zero = 0;
  for (int j = 0; j < k; ++j) {
    __global T_T* col = a + (long)j * m;
    int p = j;
    T_T pv;
    if (pivot) {
      T_T best = (T_T)(-2), best_v = 0;
      int best_r = m;
      for (int i = j + lid; i < m; i += WG) {
        const T_T v = col[i], kv = pivot_key(v, i == j);
        if (kv > best) {  // rows ascend within an item: the first of equals stays
          best = kv;
          best_v = v;
          best_r = i;
        }
      }
      key[lid] = best;
      value[lid] = best_v;
      row[lid] = best_r;
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) {
          const T_T ok = key[lid + s];
          const int orow = row[lid + s];
          if (ok > key[lid] || (ok == key[lid] && orow < row[lid])) {
            key[lid] = ok;
            value[lid] = value[lid + s];
            row[lid] = orow;
          }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
      }
      p = row[0];
      pv = value[0];
    } else {
      pv = col[j];
    }
    if (pv == 0 && first_zero == 0) first_zero = j + 1;
    if (lid == 0) pivots[j] = p + 1;
    if (p != j) {
      for (int c = lid; c < n; c += WG) {
        __global T_T* x = a + (long)c * m;
        const T_T t = x[j];
        x[j] = x[p];
        x[p] = t;
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    // The multipliers, divided (a reciprocal's rounding would leave a rank-deficient matrix's exact zero pivot
    // nonzero, where CPU's LAPACK finds it); a zero pivot leaves its column (LAPACK's getf2).
    if (pv != 0)
      for (int i = j + 1 + lid; i < m; i += WG) col[i] /= pv;
    barrier(CLK_GLOBAL_MEM_FENCE);
    const int R = m - j - 1, C = n - j - 1;
    if (R > 0 && C > 0) {
      const Lanes l = lanes(R);
      if (l.cl < l.CL) {
        for (int c = l.cl; c < C; c += l.CL) {
          __global T_T* x = a + (long)(j + 1 + c) * m;
          const T_T u = x[j];
          for (int r = l.rl; r < R; r += l.row_step) x[j + 1 + r] -= col[j + 1 + r] * u;
        }
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  if (lid == 0) info[info_off + b] = first_zero;
}

// Coefficient (i, j) of the triangular matrix a sweep applies: lu(i, j), or lu(j, i) where transposed.
#define COEF(i, j) (trans ? lu[(j) + (long)(i) * ld] : lu[(i) + (long)(j) * ld])

// Solves T X = B in place for `cols` right-hand sides of b, element i of right-hand side c at b[i * rs + c * cs]
// (a column of a column-major B: rs = 1; a row: cs = 1), T the lower or upper triangle of lu (or of its
// transpose), with a unit diagonal or lu's own: column-oriented substitution (BLAS's trsm), step j updating every
// row after it (lower) or before it (upper) with x_j = b_j / t_jj, the rows and right-hand sides in parallel and
// a barrier between steps; b_j itself is divided once all steps are done.
inline void triangular_sweep(__global const T_T* lu, long ld, int trans, __global T_T* b, long rs, long cs, int n,
                             int cols, int lower, int unit) {
  const int lid = get_local_id(0);
  for (int s = 0; s < n; ++s) {
    const int j = lower ? s : n - 1 - s;
    const int R = lower ? n - 1 - j : j, first = lower ? j + 1 : 0;
    if (R > 0) {
      const Lanes l = lanes(R);
      const T_T d = unit ? (T_T)1 : COEF(j, j);
      if (l.cl < l.CL) {
        for (int c = l.cl; c < cols; c += l.CL) {
          __global T_T* x = b + c * cs;
          const T_T xj = unit ? x[j * rs] : x[j * rs] / d;
          for (int r = l.rl; r < R; r += l.row_step) x[(first + r) * rs] -= COEF(first + r, j) * xj;
        }
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  if (!unit) {
    for (int c = 0; c < cols; ++c)
      for (int i = lid; i < n; i += WG) b[i * rs + c * cs] /= COEF(i, i);
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}

// The row interchanges of LAPACK's pivots (1-based), in order (P^T b) or reversed (P b), a work-item per
// column. A pivot outside [1, n] swaps nothing (the kernels never index past the matrix).
inline void apply_pivots(__global const int* pivots, __global T_T* b, long ld, int n, int cols, int reversed) {
  for (int c = get_local_id(0); c < cols; c += WG) {
    __global T_T* x = b + (long)c * ld;
    for (int s = 0; s < n; ++s) {
      const int i = reversed ? n - 1 - s : s, p = pivots[i] - 1;
      if (p != i && p >= 0 && p < n) {
        const T_T t = x[i];
        x[i] = x[p];
        x[p] = t;
      }
    }
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
}

// LAPACK's getrs: A X = B (trans = 0) or A^T X = B (trans = 1) in place of B, with A = P L U from lu_factor.
// A group per (matrix of B, block of `block` columns); B's matrices n x nrhs column-major, b_mat apart. Its
// matrix's LU is lu_batch[batch] where B's batch is broadcast over LU's (identity where lu_batch is unset).
__kernel void lu_solve(__global const T_T* lu, ulong lu_off, __global const int* pivots, ulong piv_off,
                       __global const long* lu_batch, ulong lb_off, int lu_batch_given, __global T_T* b, ulong b_off,
                       long b_mat, int n, int nrhs, int block, int trans) {
  const int blocks = (nrhs + block - 1) / block;
  const long g = get_group_id(0), batch = g / blocks;
  const int c0 = (int)(g % blocks) * block, cols = min(block, nrhs - c0);
  const long lb = lu_batch_given ? lu_batch[lb_off + batch] : batch;
  const long ld = n;
  lu += lu_off + lb * n * ld;
  pivots += piv_off + lb * n;
  b += b_off + batch * b_mat + (long)c0 * ld;
  if (!trans) {  // A = P L U: x = U^-1 L^-1 P^T b
    apply_pivots(pivots, b, ld, n, cols, 0);
    triangular_sweep(lu, ld, 0, b, 1, ld, n, cols, 1, 1);
    triangular_sweep(lu, ld, 0, b, 1, ld, n, cols, 0, 0);
  } else {  // A^T = U^T L^T P^T: x = P L^-T U^-T b
    triangular_sweep(lu, ld, 1, b, 1, ld, n, cols, 1, 0);
    triangular_sweep(lu, ld, 1, b, 1, ld, n, cols, 0, 1);
    apply_pivots(pivots, b, ld, n, cols, 1);
  }
}

// BLAS's trsm on column-major matrices: op(M) X = B (left) or X op(M) = B (right) in place of B (rows x cols per
// matrix, b_mat apart), M (n x n, n * n apart) read from its upper or lower triangle, op(M) = M^T where trans.
// A group per (matrix, block of `block` right-hand sides): B's columns (left), or its rows (right: X op(M) = B is
// op(M)^T X^T = B^T).
__kernel void triangular_solve(__global const T_T* a, ulong a_off, __global T_T* b, ulong b_off, long b_mat, int rows,
                               int cols, int left, int upper, int trans, int unit, int block) {
  const int n = left ? rows : cols, nrhs = left ? cols : rows;
  const int blocks = (nrhs + block - 1) / block;
  const long g = get_group_id(0), batch = g / blocks;
  const int c0 = (int)(g % blocks) * block, count = min(block, nrhs - c0);
  const long rs = left ? 1 : rows, cs = left ? rows : 1;
  a += a_off + batch * n * (long)n;
  b += b_off + batch * b_mat + c0 * cs;
  const int t = left ? trans : !trans;
  triangular_sweep(a, n, t, b, rs, cs, n, count, upper == t, unit);
}

// Element (i, j), i >= j, of the lower triangle the Cholesky factorization works on: A's own, or (upper) the
// transpose of its upper triangle, so that the factor is written where LAPACK's potrf writes U = L^T.
#define CH(i, j) a[upper ? (j) + (long)(i) * n : (i) + (long)(j) * n]

// LAPACK's potrf, a work-group per matrix (n x n column-major, in place): A = L L^T (or U^T U), right-looking:
// column j's square root and quotients, then the rank-1 update of the trailing lower triangle. info: the order of
// the first leading minor that is not positive definite (a pivot <= 0 or NaN), where the factorization stops.
__kernel void cholesky(__global T_T* a, ulong a_off, __global int* info, ulong info_off, int n, int upper) {
  const int lid = get_local_id(0);
  const long b = get_group_id(0);
  a += a_off + b * n * (long)n;
  int failed = 0;
  for (int j = 0; j < n; ++j) {
    const T_T d = failed ? (T_T)1 : CH(j, j);
    if (!failed && !(d > 0)) failed = j + 1;  // every item reads the same d: the same decision
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (!failed) {
      const T_T s = sqrt(d);
      if (lid == 0) CH(j, j) = s;
      for (int i = j + 1 + lid; i < n; i += WG) CH(i, j) /= s;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    const int R = n - j - 1;
    if (!failed && R > 0) {
      const Lanes l = lanes(R);
      if (l.cl < l.CL) {
        for (int c = l.cl; c < R; c += l.CL) {
          const T_T u = CH(j + 1 + c, j);
          for (int r = l.rl; r < R; r += l.row_step)
            if (r >= c) CH(j + 1 + r, j + 1 + c) -= CH(j + 1 + r, j) * u;
        }
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  if (lid == 0) info[info_off + b] = failed;
}

// ---- Small matrices (runtime/kernel_forms.h's linalg_serial_max): a work-item per matrix, or per (matrix,
// right-hand side), with no barriers; the arithmetic of the group kernels above in the same order (the same pivots
// and the same roundings).

__kernel void lu_factor_small(__global T_T* a, ulong a_off, __global int* pivots, ulong piv_off, __global int* info,
                              ulong info_off, int m, int n, int pivot, long batches) {
  const long b = get_global_id(0);
  if (b >= batches) return;
  const int k = min(m, n);
  a += a_off + b * (long)m * n;
  pivots += piv_off + b * k;
  int first_zero = 0;
  for (int j = 0; j < k; ++j) {
    __global T_T* col = a + j * m;
    int p = j;
    if (pivot) {
      T_T best = pivot_key(col[j], 1);
      for (int i = j + 1; i < m; ++i) {
        const T_T kv = pivot_key(col[i], 0);
        if (kv > best) {
          best = kv;
          p = i;
        }
      }
    }
    const T_T pv = col[p];
    if (pv == 0 && first_zero == 0) first_zero = j + 1;
    pivots[j] = p + 1;
    if (p != j) {
      for (int c = 0; c < n; ++c) {
        const T_T t = a[j + c * m];
        a[j + c * m] = a[p + c * m];
        a[p + c * m] = t;
      }
    }
    if (pv != 0)
      for (int i = j + 1; i < m; ++i) col[i] /= pv;
    for (int c = j + 1; c < n; ++c) {
      __global T_T* x = a + c * m;
      const T_T u = x[j];
      for (int i = j + 1; i < m; ++i) x[i] -= col[i] * u;
    }
  }
  info[info_off + b] = first_zero;
}

// triangular_sweep for one right-hand side x (elements rs apart), by one work-item.
inline void triangular_sweep_one(__global const T_T* lu, long ld, int trans, __global T_T* x, long rs, int n,
                                 int lower, int unit) {
  for (int s = 0; s < n; ++s) {
    const int j = lower ? s : n - 1 - s;
    const int R = lower ? n - 1 - j : j, first = lower ? j + 1 : 0;
    const T_T xj = unit ? x[j * rs] : x[j * rs] / COEF(j, j);
    for (int r = 0; r < R; ++r) x[(first + r) * rs] -= COEF(first + r, j) * xj;
  }
  if (!unit)
    for (int i = 0; i < n; ++i) x[i * rs] /= COEF(i, i);
}

__kernel void lu_solve_small(__global const T_T* lu, ulong lu_off, __global const int* pivots, ulong piv_off,
                             __global const long* lu_batch, ulong lb_off, int lu_batch_given, __global T_T* b,
                             ulong b_off, long b_mat, int n, int nrhs, int trans, long total) {
  const long g = get_global_id(0);
  if (g >= total) return;
  const long batch = g / nrhs;
  const long lb = lu_batch_given ? lu_batch[lb_off + batch] : batch;
  const long ld = n;
  lu += lu_off + lb * n * ld;
  pivots += piv_off + lb * n;
  __global T_T* x = b + b_off + batch * b_mat + (g % nrhs) * ld;
  if (!trans) {
    for (int i = 0; i < n; ++i) {
      const int p = pivots[i] - 1;
      if (p != i && p >= 0 && p < n) {
        const T_T t = x[i];
        x[i] = x[p];
        x[p] = t;
      }
    }
    triangular_sweep_one(lu, ld, 0, x, 1, n, 1, 1);
    triangular_sweep_one(lu, ld, 0, x, 1, n, 0, 0);
  } else {
    triangular_sweep_one(lu, ld, 1, x, 1, n, 1, 0);
    triangular_sweep_one(lu, ld, 1, x, 1, n, 0, 1);
    for (int i = n - 1; i >= 0; --i) {
      const int p = pivots[i] - 1;
      if (p != i && p >= 0 && p < n) {
        const T_T t = x[i];
        x[i] = x[p];
        x[p] = t;
      }
    }
  }
}

__kernel void triangular_solve_small(__global const T_T* a, ulong a_off, __global T_T* b, ulong b_off, long b_mat,
                                     int rows, int cols, int left, int upper, int trans, int unit, long total) {
  const int n = left ? rows : cols, nrhs = left ? cols : rows;
  const long g = get_global_id(0);
  if (g >= total) return;
  const long batch = g / nrhs, c = g % nrhs;
  const long rs = left ? 1 : rows, cs = left ? rows : 1;
  a += a_off + batch * n * (long)n;
  const int t = left ? trans : !trans;
  triangular_sweep_one(a, n, t, b + b_off + batch * b_mat + c * cs, rs, n, upper == t, unit);
}

// lu_unpack's permutation: perm (m per matrix, the identity on entry) after the k row interchanges of pivots,
// a work-item per matrix (the host checked the pivots are within [1, m]).
__kernel void lu_pivots_to_permutation(__global long* perm, ulong perm_off, __global const int* pivots,
                                       ulong piv_off, long batches, int m, int k) {
  const long b = get_global_id(0);
  if (b >= batches) return;
  perm += perm_off + b * m;
  pivots += piv_off + b * k;
  for (int i = 0; i < k; ++i) {
    const int p = clamp(pivots[i] - 1, 0, m - 1);
    const long t = perm[i];
    perm[i] = perm[p];
    perm[p] = t;
  }
}
