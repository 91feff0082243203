// The tiles of the float32 products torch.compile generates on CPU-class devices
// (python/torch_opencl/_inductor/gemm.py). A generated kernel computes a tile of C = A @ B into registers
// with one of these, then runs the graph's epilogue (bias, activation, dropout, a gradient's mask...) on each
// element of the tile and stores what the graph needs: one launch where an extern product took a B-pack, the
// product and a pointwise kernel, each a pass over memory.
//
// * NN tile (kernels_cl/gemm.cl's register tile): TOCL_GEMM_TM rows x TNV vectors of columns; per k, TM
//   scalars of A (broadcast) times TNV vectors of B's row k. A at any strides; B's rows as vectors where
//   its columns are adjacent, else from the panel eager's pack made (gemm.cl's pack kernels, launched before).
// * NT tile (A and B both adjacent along k: x @ w.t(), where eager's product packs the transposed weight
//   first): TOCL_GEMM_NT_ROWS x TOCL_GEMM_NT_COLS dot products, a vector of k at a time from each row of A
//   and column of B, summed across the vector's lanes at the end.
// TOCL_GEMM_VW (floats per native vector), TOCL_GEMM_TM and TOCL_GEMM_NT_ROWS/COLS come from the device's
// kernel forms (runtime/kernel_forms.h); the program's prelude defines them on CPU-class devices only.
#ifdef TOCL_GEMM_VW

#define TOCL_GV_(w) float##w
#define TOCL_GV_W(w) TOCL_GV_(w)
#define TOCL_GV TOCL_GV_W(TOCL_GEMM_VW)
#define TOCL_GLOAD_(w) vload##w
#define TOCL_GLOAD_W(w) TOCL_GLOAD_(w)
#define TOCL_GLOAD TOCL_GLOAD_W(TOCL_GEMM_VW)
#define TOCL_GSTORE_(w) vstore##w
#define TOCL_GSTORE_W(w) TOCL_GSTORE_(w)
#define TOCL_GSTORE TOCL_GSTORE_W(TOCL_GEMM_VW)
#define TOCL_GHSUM_(w) tocl_gemm_hsum##w
#define TOCL_GHSUM_W(w) TOCL_GHSUM_(w)
#define TOCL_GHSUM TOCL_GHSUM_W(TOCL_GEMM_VW)

inline float tocl_gemm_hsum4(float4 v) {
  const float2 s = v.lo + v.hi;
  return s.x + s.y;
}
inline float tocl_gemm_hsum8(float8 v) { return tocl_gemm_hsum4(v.lo + v.hi); }
inline float tocl_gemm_hsum16(float16 v) { return tocl_gemm_hsum8(v.lo + v.hi); }

// A row of B's tile from its first column: VW columns from `col` (clamped to the tile's last column of B,
// cols - 1: those lanes are never stored); B in global or (staged) local memory.
#define TOCL_GEMM_B_ROW(NAME, BSPACE)                                                                        \
  inline TOCL_GV NAME(BSPACE const float* row, int col, int cols, long sbn) {                               \
    float v[TOCL_GEMM_VW];                                                                                   \
    _Pragma("unroll") for (int j = 0; j < TOCL_GEMM_VW; ++j) v[j] = row[(long)min(col + j, cols - 1) * sbn]; \
    return TOCL_GLOAD(0, v);                                                                                 \
  }
TOCL_GEMM_B_ROW(tocl_gemm_b_row, __global)
TOCL_GEMM_B_ROW(tocl_gemm_b_row_local, __local)

// Bt: B's element (0, col0), or the tile's panel (gemm.cl's pack: sbk = NC, sbn = 1, zeros past N); cols: B's
// columns from col0 on; vector_rows: the tile's rows of B are whole vectors (adjacent columns, and a full
// tile or a panel). The accumulators stay in registers only while every index into them is a constant (the
// loops below are unrolled); the tile is then written to `tile`, a private array the epilogue walks.
#define TOCL_GEMM_NN_TILE(NAME, TNV, BSPACE, B_ROW)                                                          \
  inline void NAME(float tile[TOCL_GEMM_TM][TNV * TOCL_GEMM_VW], __global const float* A,                    \
                   BSPACE const float* Bt, int row0, int M, int cols, int K, long sam, long sak, long sbk,   \
                   long sbn, int vector_rows) {                                                              \
    __global const float* arow[TOCL_GEMM_TM];                                                               \
    _Pragma("unroll") for (int r = 0; r < TOCL_GEMM_TM; ++r) arow[r] = A + (long)min(row0 + r, M - 1) * sam; \
    TOCL_GV acc[TOCL_GEMM_TM][TNV];                                                                          \
    _Pragma("unroll") for (int r = 0; r < TOCL_GEMM_TM; ++r)                                                \
      _Pragma("unroll") for (int v = 0; v < TNV; ++v) acc[r][v] = (TOCL_GV)(0.0f);                         \
    if (vector_rows) {                                                                                       \
      for (int k = 0; k < K; ++k) {                                                                          \
        BSPACE const float* bk = Bt + k * sbk;                                                               \
        TOCL_GV bv[TNV];                                                                                     \
        _Pragma("unroll") for (int v = 0; v < TNV; ++v) bv[v] = TOCL_GLOAD(0, bk + v * TOCL_GEMM_VW);        \
        _Pragma("unroll") for (int r = 0; r < TOCL_GEMM_TM; ++r) {                                          \
          const TOCL_GV av = (TOCL_GV)(arow[r][k * sak]);                                                   \
          _Pragma("unroll") for (int v = 0; v < TNV; ++v) acc[r][v] = fma(av, bv[v], acc[r][v]);             \
        }                                                                                                    \
      }                                                                                                      \
    } else {                                                                                                 \
      for (int k = 0; k < K; ++k) {                                                                          \
        BSPACE const float* bk = Bt + k * sbk;                                                               \
        TOCL_GV bv[TNV];                                                                                     \
        _Pragma("unroll") for (int v = 0; v < TNV; ++v) bv[v] = B_ROW(bk, v * TOCL_GEMM_VW, cols, sbn);      \
        _Pragma("unroll") for (int r = 0; r < TOCL_GEMM_TM; ++r) {                                          \
          const TOCL_GV av = (TOCL_GV)(arow[r][k * sak]);                                                   \
          _Pragma("unroll") for (int v = 0; v < TNV; ++v) acc[r][v] = fma(av, bv[v], acc[r][v]);             \
        }                                                                                                    \
      }                                                                                                      \
    }                                                                                                        \
    _Pragma("unroll") for (int r = 0; r < TOCL_GEMM_TM; ++r)                                                \
      _Pragma("unroll") for (int v = 0; v < TNV; ++v) TOCL_GSTORE(acc[r][v], 0, &tile[r][v * TOCL_GEMM_VW]); \
  }

// Two vectors of columns per tile (C wider than a vector), and one; B in global memory, or the column tile's
// panel staged in local memory (tocl_gemm_stage_b).
TOCL_GEMM_NN_TILE(tocl_gemm_nn_wide, 2, __global, tocl_gemm_b_row)
TOCL_GEMM_NN_TILE(tocl_gemm_nn_narrow, 1, __global, tocl_gemm_b_row)
TOCL_GEMM_NN_TILE(tocl_gemm_nn_wide_staged, 2, __local, tocl_gemm_b_row_local)
TOCL_GEMM_NN_TILE(tocl_gemm_nn_narrow_staged, 1, __local, tocl_gemm_b_row_local)

// A work-group's column tile of B (K x NC from B's element (0, col0), cols of its columns left) copied into
// `panel` in local memory as eager's pack lays it out (row k at k * NC, zeros past N), the group's items
// sharing the copy; then a barrier. Where B's columns are adjacent, by rows of vectors; where its k are
// adjacent (a transposed weight), by columns read as vectors along k; else element by element. This is the
// pack of gemm.cl done by each work-group for itself: no launch, no panel in global memory.
inline void tocl_gemm_stage_b(__local float* panel, __global const float* Bt, int cols, int K, long sbk, long sbn,
                              int NC) {
  const int item = get_local_id(0), items = get_local_size(0);
  if (sbn == 1 && cols >= NC) {
    for (int k = item; k < K; k += items)
      for (int j = 0; j < NC; j += TOCL_GEMM_VW) TOCL_GSTORE(TOCL_GLOAD(0, Bt + k * sbk + j), 0, panel + k * NC + j);
  } else if (sbk == 1) {
    for (int j = item; j < NC; j += items) {
      __global const float* column = Bt + (long)min(j, cols - 1) * sbn;
      const float keep = j < cols ? 1.0f : 0.0f;
      int k = 0;
      for (; k + TOCL_GEMM_VW <= K; k += TOCL_GEMM_VW) {
        float v[TOCL_GEMM_VW];
        TOCL_GSTORE(TOCL_GLOAD(0, column + k) * keep, 0, v);
#pragma unroll
        for (int i = 0; i < TOCL_GEMM_VW; ++i) panel[(k + i) * NC + j] = v[i];
      }
      for (; k < K; ++k) panel[k * NC + j] = column[k] * keep;
    }
  } else {
    for (int k = item; k < K; k += items)
      for (int j = 0; j < NC; ++j) panel[k * NC + j] = j < cols ? Bt[k * sbk + (long)j * sbn] : 0.0f;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

// tile[r][c] = row row0 + r of A . column col0 + c of B, A's rows and B's columns adjacent along k; rows and
// columns past M and N repeat the last one (never stored).
inline void tocl_gemm_nt(float tile[TOCL_GEMM_NT_ROWS][TOCL_GEMM_NT_COLS], __global const float* A,
                         __global const float* B, int row0, int col0, int M, int N, int K, long sam, long sbn) {
  __global const float* ar[TOCL_GEMM_NT_ROWS];
  __global const float* bc[TOCL_GEMM_NT_COLS];
#pragma unroll
  for (int r = 0; r < TOCL_GEMM_NT_ROWS; ++r) ar[r] = A + (long)min(row0 + r, M - 1) * sam;
#pragma unroll
  for (int c = 0; c < TOCL_GEMM_NT_COLS; ++c) bc[c] = B + (long)min(col0 + c, N - 1) * sbn;
  TOCL_GV acc[TOCL_GEMM_NT_ROWS][TOCL_GEMM_NT_COLS];
#pragma unroll
  for (int r = 0; r < TOCL_GEMM_NT_ROWS; ++r)
#pragma unroll
    for (int c = 0; c < TOCL_GEMM_NT_COLS; ++c) acc[r][c] = (TOCL_GV)(0.0f);
  int k = 0;
  for (; k + TOCL_GEMM_VW <= K; k += TOCL_GEMM_VW) {
    TOCL_GV av[TOCL_GEMM_NT_ROWS], bv[TOCL_GEMM_NT_COLS];
#pragma unroll
    for (int r = 0; r < TOCL_GEMM_NT_ROWS; ++r) av[r] = TOCL_GLOAD(0, ar[r] + k);
#pragma unroll
    for (int c = 0; c < TOCL_GEMM_NT_COLS; ++c) bv[c] = TOCL_GLOAD(0, bc[c] + k);
#pragma unroll
    for (int r = 0; r < TOCL_GEMM_NT_ROWS; ++r)
#pragma unroll
      for (int c = 0; c < TOCL_GEMM_NT_COLS; ++c) acc[r][c] = fma(av[r], bv[c], acc[r][c]);
  }
#pragma unroll
  for (int r = 0; r < TOCL_GEMM_NT_ROWS; ++r)
#pragma unroll
    for (int c = 0; c < TOCL_GEMM_NT_COLS; ++c) {
      float s = TOCL_GHSUM(acc[r][c]);
      for (int kk = k; kk < K; ++kk) s = fma(ar[r][kk], bc[c][kk], s);
      tile[r][c] = s;
    }
}

// out[row0 + r] = the sum of row row0 + r of A over k, for the tile's rows below M: a linear layer's bias
// gradient (the column sums of its output's gradient, whose transpose is A of the weight gradient's
// product), computed by the first column tile's items after their product, where it was a reduction kernel
// of its own over the same gradient.
inline void tocl_gemm_row_sums(__global float* out, __global const float* A, int row0, int M, int K, long sam,
                               long sak) {
  __global const float* arow[TOCL_GEMM_TM];
  float sum[TOCL_GEMM_TM];
#pragma unroll
  for (int r = 0; r < TOCL_GEMM_TM; ++r) {
    arow[r] = A + (long)min(row0 + r, M - 1) * sam;
    sum[r] = 0.0f;
  }
  // Blocks of 64 k summed apart, then added up: an error that grows with 64 + K / 64 terms, not K.
  for (int k0 = 0; k0 < K; k0 += 64) {
    float block[TOCL_GEMM_TM];
#pragma unroll
    for (int r = 0; r < TOCL_GEMM_TM; ++r) block[r] = 0.0f;
    for (int k = k0; k < min(k0 + 64, K); ++k)
#pragma unroll
      for (int r = 0; r < TOCL_GEMM_TM; ++r) block[r] += arow[r][k * sak];
#pragma unroll
    for (int r = 0; r < TOCL_GEMM_TM; ++r) sum[r] += block[r];
  }
#pragma unroll
  for (int r = 0; r < TOCL_GEMM_TM; ++r)
    if (row0 + r < M) out[row0 + r] = sum[r];
}

#endif  // TOCL_GEMM_VW
