// GEMM shaped for GPUs: C[z] = alpha * A[z] @ B[z] + beta * S[z] over a batch (grid dimension 2),
// a BM x BN tile of C per work-group of 16 x 16 work-items, the K loop staged through local memory
// BK at a time, the next stage's loads issued (into registers) before the current stage's math.
// The host (aten/native/gemm_tiled.cpp) prepends the prelude and:
//   T, ACC      element (storage) and accumulation type: float/float, double/double, and half or bfloat16
//               (ushort) over float, which load and store through LOAD_T/STORE_T (operand_defines' forms)
//   VEC_LOADS   1 where T itself has 4-vectors to load (float, double)
//   RM, RN      4-row (4-column) groups per work-item: a work-item computes (4 RM) x (4 RN) of C,
//               so BM = 64 RM and BN = 64 RN
//   BK          the K depth of one stage
//   A_K_INNER   1 when A's k stride is 1 (its loads walk k), else they walk m; B_N_INNER: B's loads walk n
//   VEC_ROWS    1 where the host found both operands' contiguous rows 4-element aligned (below)
// The layout is compiled in, not a runtime branch: with both forms in one program NVIDIA's compiler gave
// the kernel 254 registers, with one 115-125 (and 10-16% more speed on the GPT's products).
// Operands have any strides (sizes and strides are arguments, one program per configuration):
//   A(i, k) = a[i * a_si + k * a_sk], B(k, j) = b[k * b_sk + j * b_sj], C(i, j) = c[i * c_si + j * c_sj]
// S is C itself or an addend of C's shape at its own strides (0 where broadcast: addmm's bias), read
// only when beta != 0 (beta == 0 ignores it, NaN included), so addmm is one launch. C and S may be one
// buffer (addmm_), hence neither is restrict.
// Global loads are coalesced along whichever dimension of an operand is contiguous (a uniform branch),
// a VEC4 at a time where the host found both operands' contiguous rows 4-element aligned (vec4: the
// contiguous sizes, the other strides, the offsets and the batch strides all multiples of 4).
// A work-item's rows are {g * BM / RM + 4 ly + r} and columns {h * BN / RN + 4 lx + s}: consecutive
// work-items read consecutive float4s of local memory (no bank conflicts) and store adjacent columns.
//
// Split K: grid dimension 2 counts batch * splits; work-group z takes K range [(z % splits) * k_chunk,
// +k_chunk) of matrix z / splits and writes its partial product (alpha applied, beta ignored, in ACC) as
// matrix z of the workspace W (contiguous M x N matrices); sum_splits then adds the partials and beta * S
// into C: the addend counted once, the result rounded to T once.

#define WGX 16
#define WGY 16
#define NT (WGX * WGY)
#define BM (64 * RM)
#define BN (64 * RN)
#define TM (4 * RM)
#define TN (4 * RN)
#define PAD 4  // keeps rows 16-byte aligned for vector reads; stores see at most 2-way conflicts
#define A_PER (BM * BK / NT)
#define B_PER (BK * BN / NT)

#define VEC4_(t) t##4
#define VEC4(t) VEC4_(t)

__kernel __attribute__((reqd_work_group_size(WGX, WGY, 1)))
void gemm_tiled(__global const T* restrict a, ulong a_off, __global const T* restrict b, ulong b_off,
                __global T* c, ulong c_off, __global const T* s, ulong s_off, __global ACC* w, ulong w_off,
                int M, int N, int K, long a_si,
                long a_sk, long b_sk, long b_sj, long c_si, long c_sj, long s_si, long s_sj, long a_bs, long b_bs,
                long c_bs, long s_bs, int splits, int k_chunk, ACC alpha, ACC beta, ulong z_base) {
  const bool vec4 = VEC_ROWS;
  __local ACC As[BK][BM + PAD];
  __local ACC Bs[BK][BN + PAD];
  const int lx = get_local_id(0), ly = get_local_id(1);
  const int t = ly * WGX + lx;
  const int m0 = get_group_id(0) * BM, n0 = get_group_id(1) * BN;
  const ulong z = z_base + get_group_id(2);
  const ulong batch = z / splits;
  const int k_begin = (int)(z % splits) * k_chunk;
  const int k_end = min(K, k_begin + k_chunk);
  a += a_off + batch * a_bs + (long)k_begin * a_sk;
  b += b_off + batch * b_bs + (long)k_begin * b_sk;
  c += c_off + batch * c_bs;
  s += s_off + batch * s_bs;  // unused by split K's partial products
  w += w_off + z * (ulong)M * N;  // split K's partial product
  const int kk_len = k_end - k_begin;
  // Which dimension each work-item walks when loading: along the contiguous one of each operand.
  const bool a_k_inner = A_K_INNER;
  const bool b_n_inner = B_N_INNER;

  ACC acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = (ACC)0;

  ACC ra[A_PER], rb[B_PER];
  // Loads stage k0's tiles into registers (zeros outside the matrices).
#define LOAD_STAGE(k0)                                                                  \
  {                                                                                     \
    for (int p = 0; p < A_PER; ++p) {                                                   \
      const int e = t + p * NT;                                                         \
      const int mm = a_k_inner ? e / BK : e % BM, kk = a_k_inner ? e % BK : e / BM;     \
      const int gi = m0 + mm, gk = (k0) + kk;                                           \
      ra[p] = (gi < M && gk < kk_len) ? LOAD_T(a, gi * a_si + gk * a_sk) : (ACC)0;      \
    }                                                                                   \
    for (int p = 0; p < B_PER; ++p) {                                                   \
      const int e = t + p * NT;                                                         \
      const int nn = b_n_inner ? e % BN : e / BK, kk = b_n_inner ? e / BN : e % BK;     \
      const int gj = n0 + nn, gk = (k0) + kk;                                           \
      rb[p] = (gj < N && gk < kk_len) ? LOAD_T(b, gk * b_sk + gj * b_sj) : (ACC)0;      \
    }                                                                                   \
  }
#if VEC_LOADS && A_PER % 4 == 0 && B_PER % 4 == 0 && BK % 4 == 0
  // The same tiles a VEC4 per load: element 4 p + c of ra/rb is component c of VEC4 f = t + p NT.
#define LOAD_STAGE_VEC(k0)                                                                           \
  {                                                                                                  \
    for (int p = 0; p < A_PER / 4; ++p) {                                                            \
      const int f = t + p * NT;                                                                      \
      const int mm = a_k_inner ? f / (BK / 4) : (f % (BM / 4)) * 4;                                  \
      const int kk = a_k_inner ? (f % (BK / 4)) * 4 : f / (BM / 4);                                  \
      const int gi = m0 + mm, gk = (k0) + kk;                                                        \
      const VEC4(T) v = (gi < M && gk < kk_len)                                                      \
          ? *(__global const VEC4(T)*)(a + (a_k_inner ? gi * a_si + gk : gk * a_sk + gi)) : (VEC4(T))0; \
      ra[4 * p] = v.x; ra[4 * p + 1] = v.y; ra[4 * p + 2] = v.z; ra[4 * p + 3] = v.w;               \
    }                                                                                                \
    for (int p = 0; p < B_PER / 4; ++p) {                                                            \
      const int f = t + p * NT;                                                                      \
      const int nn = b_n_inner ? (f % (BN / 4)) * 4 : f / (BK / 4);                                  \
      const int kk = b_n_inner ? f / (BN / 4) : (f % (BK / 4)) * 4;                                  \
      const int gj = n0 + nn, gk = (k0) + kk;                                                        \
      const VEC4(T) v = (gj < N && gk < kk_len)                                                      \
          ? *(__global const VEC4(T)*)(b + (b_n_inner ? gk * b_sk + gj : gj * b_sj + gk)) : (VEC4(T))0; \
      rb[4 * p] = v.x; rb[4 * p + 1] = v.y; rb[4 * p + 2] = v.z; rb[4 * p + 3] = v.w;               \
    }                                                                                                \
  }
#else
#define LOAD_STAGE_VEC(k0) LOAD_STAGE(k0)
#endif
  if (vec4) {
    LOAD_STAGE_VEC(0)
  } else {
    LOAD_STAGE(0)
  }
  for (int k0 = 0; k0 < kk_len; k0 += BK) {
    barrier(CLK_LOCAL_MEM_FENCE);  // the previous stage's reads are done
#if VEC_LOADS && A_PER % 4 == 0 && B_PER % 4 == 0 && BK % 4 == 0
    if (vec4) {
#pragma unroll
      for (int q = 0; q < A_PER; ++q) {
        const int f = t + (q / 4) * NT, c = q % 4;
        if (a_k_inner) As[(f % (BK / 4)) * 4 + c][f / (BK / 4)] = ra[q];
        else As[f / (BM / 4)][(f % (BM / 4)) * 4 + c] = ra[q];
      }
#pragma unroll
      for (int q = 0; q < B_PER; ++q) {
        const int f = t + (q / 4) * NT, c = q % 4;
        if (b_n_inner) Bs[f / (BN / 4)][(f % (BN / 4)) * 4 + c] = rb[q];
        else Bs[(f % (BK / 4)) * 4 + c][f / (BK / 4)] = rb[q];
      }
    } else
#endif
    {
#pragma unroll
      for (int p = 0; p < A_PER; ++p) {
        const int e = t + p * NT;
        As[a_k_inner ? e % BK : e / BM][a_k_inner ? e / BK : e % BM] = ra[p];
      }
#pragma unroll
      for (int p = 0; p < B_PER; ++p) {
        const int e = t + p * NT;
        Bs[b_n_inner ? e / BN : e % BK][b_n_inner ? e % BN : e / BK] = rb[p];
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (k0 + BK < kk_len) {  // in flight while this stage computes
      if (vec4) {
        LOAD_STAGE_VEC(k0 + BK)
      } else {
        LOAD_STAGE(k0 + BK)
      }
    }
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      ACC av[TM], bv[TN];
#pragma unroll
      for (int g = 0; g < RM; ++g) {
        const VEC4(ACC) v = vload4(0, &As[kk][g * (BM / RM) + 4 * ly]);
        av[4 * g] = v.x; av[4 * g + 1] = v.y; av[4 * g + 2] = v.z; av[4 * g + 3] = v.w;
      }
#pragma unroll
      for (int h = 0; h < RN; ++h) {
        const VEC4(ACC) v = vload4(0, &Bs[kk][h * (BN / RN) + 4 * lx]);
        bv[4 * h] = v.x; bv[4 * h + 1] = v.y; bv[4 * h + 2] = v.z; bv[4 * h + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fma(av[i], bv[j], acc[i][j]);
    }
  }
#undef LOAD_STAGE
#undef LOAD_STAGE_VEC

  // C = alpha * acc + beta * S; beta == 0 never reads S (its values may be NaN).
  const bool partial = splits > 1;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int gi = m0 + (i / 4) * (BM / RM) + 4 * ly + (i % 4);
    if (gi >= M) continue;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int gj = n0 + (j / 4) * (BN / RN) + 4 * lx + (j % 4);
      if (gj >= N) continue;
      ACC r = alpha * acc[i][j];
      if (partial) {
        w[(long)gi * N + gj] = r;
        continue;
      }
      if (beta != (ACC)0) r = fma(beta, LOAD_T(s, gi * s_si + gj * s_sj), r);
      STORE_T(c, gi * c_si + gj * c_sj, r);
    }
  }
}

// C[b](i, j) = sum over p of W[b * splits + p](i, j) (row-major M x N, contiguous) + beta * S[b](i, j).
__kernel void sum_splits(__global const ACC* restrict w, ulong w_off, __global T* c, ulong c_off, __global const T* s,
                         ulong s_off, int M, int N, int splits, long c_si, long c_sj, long c_bs, long s_si,
                         long s_sj, long s_bs, ACC beta, ulong total) {
  const ulong g = get_global_id(0);
  if (g >= total) return;
  w += w_off;
  const ulong mn = (ulong)M * N;
  const ulong bt = g / mn;
  const int i = (int)((g % mn) / N), j = (int)(g % N);
  ACC r = (ACC)0;
  for (int p = 0; p < splits; ++p) r += w[(bt * splits + p) * mn + (ulong)i * N + j];
  if (beta != (ACC)0) r = fma(beta, LOAD_T(s, s_off + bt * s_bs + i * s_si + j * s_sj), r);
  STORE_T(c, c_off + bt * c_bs + i * c_si + j * c_sj, r);
}
