// Small and medium GEMMs for CPU OpenCL drivers (PoCL): C = alpha * A @ B + beta * S over a batch, S an
// addend of C's shape at its own strides (0 where it is broadcast: addmm's bias), or C itself.
// The host (aten/native/gemm_small.cpp) prepends the prelude and:
//   T       float or double
//   VW      the vector width (elements per native register: 16 floats on AVX-512, 8 on AVX2)
//   TM      rows of C per work-item (accumulators: TM * TNV vectors)
// Each work-item computes a TM x (TNV * VW) tile of C as outer products: per k, TM scalars of A
// (broadcast) times TNV vectors of B's row k. Explicit vectors rather than PoCL's work-item
// vectoriser: the k loop is uniform, and with the accumulators in registers it runs as a CPU
// GEMM micro-kernel. A and C may have any strides; B is loaded as vectors where its columns are
// adjacent (sbn == 1), element by element otherwise and in the last partial tile of columns. S is read
// only when beta != 0 (beta == 0 ignores it, NaN included, as BLAS does), so addmm is one launch.
// Sizes and strides are arguments: one program per dtype serves every shape.
// Work-items are numbered row tile fastest (consecutive ones share B's columns), then column tile,
// then batch entry (1-D launch).

#define VT_(t, w) t##w
#define VT_W(t, w) VT_(t, w)
#define VT VT_W(T, VW)
#define VLOAD_(w) vload##w
#define VLOAD_W(w) VLOAD_(w)
#define VLOAD VLOAD_W(VW)
#define VSTORE_(w) vstore##w
#define VSTORE_W(w) VSTORE_(w)
#define VSTORE VSTORE_W(VW)

// A row's columns col .. col + VW - 1 (clamped to N - 1: the extra lanes are never stored), B's or S's.
inline VT load_row(__global const T* row, int col, int N, long sn, int full) {
  if (full && sn == 1) return VLOAD(0, row + col);
  T v[VW];
#pragma unroll
  for (int j = 0; j < VW; ++j) v[j] = row[(long)min(col + j, N - 1) * sn];
  return VLOAD(0, v);
}

// C's row = alpha * acc + beta * S's row; srow may be crow (the same elements) or a broadcast row (ssn 0).
inline void store_c_row(__global T* crow, __global const T* srow, int col, int N, long scn, long ssn, VT acc,
                        T alpha, T beta) {
  const int full = col + VW <= N;
  VT r = alpha * acc;
  if (beta != (T)0) r += beta * load_row(srow, col, N, ssn, full);
  if (full && scn == 1) {
    VSTORE(r, 0, crow + col);
    return;
  }
  T v[VW];
  VSTORE(r, 0, v);
  for (int j = 0; j < VW && col + j < N; ++j) crow[(long)(col + j) * scn] = v[j];
}

#define GEMM_KERNEL(NAME, TNV)                                                                              \
  __kernel void NAME(__global const T* a, ulong a_off, __global const T* b, ulong b_off, __global T* c,     \
                     ulong c_off, __global const T* s, ulong s_off, int M, int N, int K, long sam, long sak,  \
                     long sbk, long sbn, long scm, long scn, long ssm, long ssn, long sab, long sbb, long scb, \
                     long ssb, int tiles_m, int tiles_n, int batch, T alpha, T beta, int packed) {            \
    const uint gid = get_global_id(0);                                                                     \
    if (gid >= (uint)tiles_n * (uint)tiles_m * (uint)batch) return;                                        \
    const uint tm = gid % (uint)tiles_m, rest = gid / (uint)tiles_m;                                       \
    const uint tn = rest % (uint)tiles_n, bi = rest / (uint)tiles_n;                                       \
    const int row0 = tm * TM, col0 = tn * (TNV * VW);                                                      \
    __global const T* A = a + a_off + bi * sab;                                                            \
    __global const T* B = b + b_off + bi * sbb;                                                            \
    __global T* C = c + c_off + bi * scb;                                                                  \
    __global const T* S = s + s_off + bi * ssb;                                                            \
    __global const T* arow[TM];                                                                            \
    _Pragma("unroll") for (int r = 0; r < TM; ++r) arow[r] = A + (long)min(row0 + r, M - 1) * sam;         \
    VT acc[TM][TNV];                                                                                       \
    _Pragma("unroll") for (int r = 0; r < TM; ++r)                                                         \
      _Pragma("unroll") for (int v = 0; v < TNV; ++v) acc[r][v] = (VT)(0);                                 \
    const int full = col0 + TNV * VW <= N;                                                                 \
    if (packed || (full && sbn == 1)) {                                                                    \
      /* packed: B is pack_b's panel of this column tile, (K, TNV * VW) contiguous */                      \
      __global const T* bt = packed ? B + (long)tn * K * (TNV * VW) : B + col0;                            \
      const long sk = packed ? TNV * VW : sbk;                                                             \
      for (int k = 0; k < K; ++k) {                                                                        \
        __global const T* bk = bt + k * sk;                                                                \
        VT bv[TNV];                                                                                        \
        _Pragma("unroll") for (int v = 0; v < TNV; ++v) bv[v] = VLOAD(0, bk + v * VW);                     \
        _Pragma("unroll") for (int r = 0; r < TM; ++r) {                                                   \
          const VT av = (VT)(arow[r][k * sak]);                                                            \
          _Pragma("unroll") for (int v = 0; v < TNV; ++v) acc[r][v] = fma(av, bv[v], acc[r][v]);           \
        }                                                                                                  \
      }                                                                                                    \
    } else {                                                                                               \
      for (int k = 0; k < K; ++k) {                                                                        \
        __global const T* bk = B + k * sbk;                                                                \
        VT bv[TNV];                                                                                        \
        _Pragma("unroll") for (int v = 0; v < TNV; ++v) bv[v] = load_row(bk, col0 + v * VW, N, sbn, full);   \
        _Pragma("unroll") for (int r = 0; r < TM; ++r) {                                                   \
          const VT av = (VT)(arow[r][k * sak]);                                                            \
          _Pragma("unroll") for (int v = 0; v < TNV; ++v) acc[r][v] = fma(av, bv[v], acc[r][v]);           \
        }                                                                                                  \
      }                                                                                                    \
    }                                                                                                      \
    _Pragma("unroll") for (int r = 0; r < TM; ++r) {                                                       \
      if (row0 + r >= M) break;                                                                            \
      __global T* crow = C + (long)(row0 + r) * scm;                                                       \
      __global const T* srow = S + (long)(row0 + r) * ssm;                                                 \
      _Pragma("unroll") for (int v = 0; v < TNV; ++v) {                                                    \
        if (col0 + v * VW < N) store_c_row(crow, srow, col0 + v * VW, N, scn, ssn, acc[r][v], alpha, beta); \
      }                                                                                                    \
    }                                                                                                      \
  }

// Two vectors of columns per work-item (wide C), and one (C at most VW columns wide).
GEMM_KERNEL(gemm_tile_wide, 2)
GEMM_KERNEL(gemm_tile_narrow, 1)

// B (batch, K, N) at any strides -> panels (batch, tiles_n, K, NC) contiguous, NC columns per tile
// (zeros past N): the tile kernels then stream each panel in order, whatever B's layout or leading
// dimension. A work-item per (batch entry, column tile, k), k fastest.
__kernel void pack_b(__global const T* b, ulong b_off, __global T* p, ulong p_off, int N, int K, long sbk,
                     long sbn, long sbb, int tiles_n, int batch, int NC) {
  const uint gid = get_global_id(0);
  if (gid >= (uint)K * (uint)tiles_n * (uint)batch) return;
  const uint k = gid % (uint)K, rest = gid / (uint)K;
  const uint tn = rest % (uint)tiles_n, bi = rest / (uint)tiles_n;
  __global const T* src = b + b_off + bi * sbb + k * sbk;
  __global T* dst = p + p_off + (long)gid * NC;
  const int col0 = tn * NC;
  for (int j = 0; j < NC; j += VW) {
    if (sbn == 1 && col0 + j + VW <= N) {
      VSTORE(VLOAD(0, src + col0 + j), 0, dst + j);
    } else {
      for (int i = j; i < j + VW; ++i) dst[i] = col0 + i < N ? src[(long)(col0 + i) * sbn] : (T)0;
    }
  }
}


// pack_b for a B whose k are adjacent (sbk == 1, a transposed weight): a work-item per (batch entry,
// column tile, column j of the tile) reads its column along k as vectors and writes it NC apart.
__kernel void pack_b_columns(__global const T* b, ulong b_off, __global T* p, ulong p_off, int N, int K,
                             long sbn, long sbb, int tiles_n, int batch, int NC) {
  const uint gid = get_global_id(0);
  if (gid >= (uint)NC * (uint)tiles_n * (uint)batch) return;
  const uint j = gid % (uint)NC, rest = gid / (uint)NC;
  const uint tn = rest % (uint)tiles_n, bi = rest / (uint)tiles_n;
  const int col = tn * NC + j;
  __global T* dst = p + p_off + ((long)bi * tiles_n + tn) * K * NC + j;
  if (col >= N) {
    for (int k = 0; k < K; ++k) dst[(long)k * NC] = (T)0;
    return;
  }
  __global const T* src = b + b_off + bi * sbb + (long)col * sbn;
  int k = 0;
  for (; k + VW <= K; k += VW) {
    T v[VW];
    VSTORE(VLOAD(0, src + k), 0, v);
#pragma unroll
    for (int i = 0; i < VW; ++i) dst[(long)(k + i) * NC] = v[i];
  }
  for (; k < K; ++k) dst[(long)k * NC] = src[k];
}
