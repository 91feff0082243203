// GEMM on NVIDIA tensor cores: C[z] = alpha * A[z] @ B[z] + beta * S[z], through inline PTX mma.sync
// (compute capability 8.0 and up; aten/native/gemm_mma.cpp chooses it and falls back where the driver
// cannot build it). A 128 x 128 tile of C per work-group of 8 warps, each warp 64 x 32 of it as 4 x 4
// m16n8 fragments; K staged through two local-memory buffers BK deep (one barrier a stage), the next
// stage's global loads in flight while the current one multiplies.
// The host prepends the prelude, operand_defines("T", ...) and:
//   T           C's and S's storage type (LOAD_T/STORE_T convert); RAW the operands' bits as loaded: float for
//               MMA_KIND 0 (TF32 products), ushort for 1 (bfloat16) and 2 (float16: half itself cannot be a
//               variable's type without cl_khr_fp16, which NVIDIA's driver lacks)
//   MMA_KIND    0 tf32 (m16n8k8; operands rounded to TF32 as they enter local memory), 1 bf16, 2 f16
//               (m16n8k16; products exact in float); every kind accumulates in float
//   A_K_INNER   1 when A's k stride is 1 (loads walk k), else they walk m; B_N_INNER likewise for B's n
// Operands have any strides: A(i, k) = a[i a_si + k a_sk], B(k, j) = b[k b_sk + j b_sj], C and S alike;
// S (C itself or an addend, strides 0 where broadcast) is read only when beta != 0. With vec4 the host
// found every 4-element group along the contiguous dimension 4-element aligned: one vector load each.
// Fragment layouts are PTX ISA's for mma.m16n8k8 (.tf32) and mma.m16n8k16 (.bf16/.f16): lane = 4 g + t.

#if MMA_KIND == 0
#define KSTEP 8
#define BK 16
#define APAD 4  // row of 20 words: a fragment's 32 reads hit 32 banks
#else
#define KSTEP 16
#define BK 32
#define APAD 8  // row of 40 halves = 20 words, as above
#endif
#define BPAD 8
#define BM 128
#define BN 128
#define NT 256
#define A_GROUPS (BM * BK / 4 / NT)  // 4-element groups each work-item loads per stage
#define B_GROUPS (BK * BN / 4 / NT)

#define VEC4_(t) t##4
#define VEC4(t) VEC4_(t)

#if MMA_KIND == 0
#define MMA_OP "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
// Round to TF32 (10 mantissa bits, to nearest, ties away), as cuBLAS does; the instruction itself would
// drop the low bits.
inline float to_tf32(float x) {
  uint r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return as_float(r);
}
#define TO_LOCAL(x) to_tf32(x)
#elif MMA_KIND == 1
#define MMA_OP "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#define TO_LOCAL(x) (x)
#else
#define MMA_OP "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#define TO_LOCAL(x) (x)
#endif

#define MMA(d, a0, a1, a2, a3, b0, b1)                                                                    \
  asm volatile(MMA_OP " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"                       \
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                                           \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(d[0]), "f"(d[1]), "f"(d[2]),     \
                 "f"(d[3]))

__kernel __attribute__((reqd_work_group_size(NT, 1, 1)))
void gemm_mma(__global const RAW* restrict a, ulong a_off, __global const RAW* restrict b, ulong b_off,
              __global T* c, ulong c_off, __global const T* s, ulong s_off, int M, int N, int K, long a_si,
              long a_sk, long b_sk, long b_sj, long c_si, long c_sj, long s_si, long s_sj, long a_bs, long b_bs,
              long c_bs, long s_bs, float alpha, float beta, ulong z_base, int tiles_m, int vec4) {
  __local RAW As[2][BM][BK + APAD];
  __local RAW Bs[2][BK][BN + BPAD];
  const int lid = get_local_id(0), lane = lid & 31, warp = lid >> 5;
  const int g = lane >> 2, t = lane & 3;
  const int tile = get_group_id(0);
  const int m0 = (tile % tiles_m) * BM, n0 = (tile / tiles_m) * BN;
  const ulong z = z_base + get_group_id(1);
  a += a_off + z * a_bs;
  b += b_off + z * b_bs;
  c += c_off + z * c_bs;
  s += s_off + z * s_bs;
  const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;  // 2 x 4 warps

  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;

  RAW ra[A_GROUPS][4], rb[B_GROUPS][4];
  // Stage k0's groups into registers: 4 consecutive elements along each operand's contiguous dimension,
  // zeros outside the matrices (past K they add nothing).
#define LOAD_STAGE(k0)                                                                                  \
  for (int p = 0; p < A_GROUPS; ++p) {                                                                  \
    const int f = lid + p * NT;                                                                         \
    const int mm = A_K_INNER ? f / (BK / 4) : (f % (BM / 4)) * 4;                                       \
    const int kk = A_K_INNER ? (f % (BK / 4)) * 4 : f / (BM / 4);                                       \
    const int gi = m0 + mm, gk = (k0) + kk;                                                             \
    if (vec4 && (A_K_INNER ? gi < M && gk + 3 < K : gk < K && gi + 3 < M)) {                            \
      const VEC4(RAW) v = *(__global const VEC4(RAW)*)(a + (long)gi * a_si + (long)gk * a_sk);              \
      ra[p][0] = v.x; ra[p][1] = v.y; ra[p][2] = v.z; ra[p][3] = v.w;                                   \
    } else {                                                                                            \
      for (int q = 0; q < 4; ++q) {                                                                     \
        const int i = A_K_INNER ? gi : gi + q, k = A_K_INNER ? gk + q : gk;                             \
        ra[p][q] = (i < M && k < K) ? a[(long)i * a_si + (long)k * a_sk] : (RAW)0;                        \
      }                                                                                                 \
    }                                                                                                   \
  }                                                                                                     \
  for (int p = 0; p < B_GROUPS; ++p) {                                                                  \
    const int f = lid + p * NT;                                                                         \
    const int nn = B_N_INNER ? (f % (BN / 4)) * 4 : f / (BK / 4);                                       \
    const int kk = B_N_INNER ? f / (BN / 4) : (f % (BK / 4)) * 4;                                       \
    const int gj = n0 + nn, gk = (k0) + kk;                                                             \
    if (vec4 && (B_N_INNER ? gk < K && gj + 3 < N : gj < N && gk + 3 < K)) {                            \
      const VEC4(RAW) v = *(__global const VEC4(RAW)*)(b + (long)gk * b_sk + (long)gj * b_sj);              \
      rb[p][0] = v.x; rb[p][1] = v.y; rb[p][2] = v.z; rb[p][3] = v.w;                                   \
    } else {                                                                                            \
      for (int q = 0; q < 4; ++q) {                                                                     \
        const int j = B_N_INNER ? gj + q : gj, k = B_N_INNER ? gk : gk + q;                             \
        rb[p][q] = (j < N && k < K) ? b[(long)k * b_sk + (long)j * b_sj] : (RAW)0;                        \
      }                                                                                                 \
    }                                                                                                   \
  }
  // The registers into buffer `buf` (As[m][k], Bs[k][n]).
#define STORE_STAGE(buf)                                                                                \
  for (int p = 0; p < A_GROUPS; ++p) {                                                                  \
    const int f = lid + p * NT;                                                                         \
    const int mm = A_K_INNER ? f / (BK / 4) : (f % (BM / 4)) * 4;                                       \
    const int kk = A_K_INNER ? (f % (BK / 4)) * 4 : f / (BM / 4);                                       \
    for (int q = 0; q < 4; ++q) As[buf][A_K_INNER ? mm : mm + q][A_K_INNER ? kk + q : kk] = TO_LOCAL(ra[p][q]); \
  }                                                                                                     \
  for (int p = 0; p < B_GROUPS; ++p) {                                                                  \
    const int f = lid + p * NT;                                                                         \
    const int nn = B_N_INNER ? (f % (BN / 4)) * 4 : f / (BK / 4);                                       \
    const int kk = B_N_INNER ? f / (BN / 4) : (f % (BK / 4)) * 4;                                       \
    for (int q = 0; q < 4; ++q) Bs[buf][B_N_INNER ? kk : kk + q][B_N_INNER ? nn + q : nn] = TO_LOCAL(rb[p][q]); \
  }

  LOAD_STAGE(0)
  int buf = 0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    // Buffer `buf` was last read two stages ago, before the previous stage's barrier.
    STORE_STAGE(buf)
    barrier(CLK_LOCAL_MEM_FENCE);
    if (k0 + BK < K) {
      LOAD_STAGE(k0 + BK)
    }
#pragma unroll
    for (int ks = 0; ks < BK; ks += KSTEP) {
      uint af[4][4], bf[4][2];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int r = wm + i * 16 + g;
#if MMA_KIND == 0
        af[i][0] = as_uint(As[buf][r][ks + t]);
        af[i][1] = as_uint(As[buf][r + 8][ks + t]);
        af[i][2] = as_uint(As[buf][r][ks + t + 4]);
        af[i][3] = as_uint(As[buf][r + 8][ks + t + 4]);
#else
        af[i][0] = *(__local const uint*)&As[buf][r][ks + 2 * t];
        af[i][1] = *(__local const uint*)&As[buf][r + 8][ks + 2 * t];
        af[i][2] = *(__local const uint*)&As[buf][r][ks + 2 * t + 8];
        af[i][3] = *(__local const uint*)&As[buf][r + 8][ks + 2 * t + 8];
#endif
      }
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int col = wn + j * 8 + g;
#if MMA_KIND == 0
        bf[j][0] = as_uint(Bs[buf][ks + t][col]);
        bf[j][1] = as_uint(Bs[buf][ks + t + 4][col]);
#else
        bf[j][0] = (uint)Bs[buf][ks + 2 * t][col] | ((uint)Bs[buf][ks + 2 * t + 1][col] << 16);
        bf[j][1] = (uint)Bs[buf][ks + 2 * t + 8][col] | ((uint)Bs[buf][ks + 2 * t + 9][col] << 16);
#endif
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) MMA(acc[i][j], af[i][0], af[i][1], af[i][2], af[i][3], bf[j][0], bf[j][1]);
    }
    buf ^= 1;
  }
#undef LOAD_STAGE
#undef STORE_STAGE

  // C = alpha * acc + beta * S (S unread when beta == 0, NaN included); fragment element 2 h + q is row
  // g + 8 h, column 2 t + q.
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int gi = m0 + wm + i * 16 + g + 8 * (e >> 1), gj = n0 + wn + j * 8 + 2 * t + (e & 1);
        if (gi >= M || gj >= N) continue;
        float r = alpha * acc[i][j][e];
        if (beta != 0.0f) r = fma(beta, LOAD_T(s, (long)gi * s_si + (long)gj * s_sj), r);
        STORE_T(c, (long)gi * c_si + (long)gj * c_sj, r);
      }
}
