// scaled_dot_product_attention, fused (flash-attention style): the softmax runs online over the keys,
// so the (Lq, Lk) scores are never stored. aten/native/attention.cpp prepends:
//   T       float or double (math in T too)
//   DH      the head-dim bucket: q/k and v head dims are at most DH (private arrays need a size)
//   BM, BN  the tiled (GPU) form: rows per work-group, keys (or queries) per local-memory tile
//   TV, TI  the rows (CPU) form: vectors of VR = 16 rows' values in T, and the matching comparison type
//   HD_FIXED   1 where both head dims equal DH (the tiled form's unrolled loops, below)
//   EXACT_LSE  1 where the forward's float32 logsumexp is too coarse for T (double): the backward
//              recomputes it
// Grouped-query attention: k and v have Hk heads, H a multiple of them; query head h reads k/v head
// h / (H / Hk), and the dK/dV kernels walk the H / Hk query heads of their k/v head.
// Tensors are 4-D (B, H, rows, head dim) of any strides, passed as long4 (b, h, row, d) element
// strides; the bias (an additive mask, bool masks already turned into 0/-inf by PyTorch) has stride 0
// on its broadcast dims. Causal is top-left aligned: row i sees keys j <= i, as tril(ones(Lq, Lk)).
// A row whose scores are all -inf gives 0 (output and gradients), as PyTorch's math path
// (_safe_softmax) does; its logsumexp is -inf.
//
// Dropout (flag `dropout`, as flash attention): out = (Z * P) V with Z = keep / (1 - p) (drop_scale), keep
// drawn from Philox-4x32-10 (philox.cl) as eager dropout draws: score (bh, i, j) is element
// e = (bh * Lq + i) * Lk + j and takes lane e % 4 of block drop_block + e / 4 under `seed`, kept when its
// low 24 bits are below keep_below (= ceil((1 - p) * 2^24)). The logsumexp stays that of the undropped
// softmax; the backward redraws the same Z: dV = (Z * P)^T dO, dS = P * (Z * (dO V^T) - delta).
//
// Forms: *_rows give a work-item VR rows as vector lanes (below) and read the rows they share from
// global memory; *_tiles give a work-item one row and a work-group BM rows of one head, and stage the
// rows they all read through local memory, loaded coalesced.

#include "philox.cl"

#define CH 16  // keys scored at once in the rows form: one rescale of the accumulator per chunk
#define VR 16

#define ATTN_INPUTS                                                                                            \
  __global const T *q, ulong q_off, long4 sq, __global const T *k, ulong k_off, long4 sk, __global const T *v, \
      ulong v_off, long4 sv, __global const T *bias, ulong bias_off, long4 sb, int has_bias, long B, long H,   \
      long Hk, long Lq, long Lk, int D_in, int Dv_in, T scale, int causal, int dropout, uint keep_below,       \
      T drop_scale, ulong seed, ulong drop_block

#define DROP_ARGS seed, drop_block, keep_below, drop_scale

// The head dims D (q and k) and Dv (v): DH itself where HD_FIXED (both equal the bucket), so that the
// loops over them unroll and the private rows (qs, acc, ...) stay in registers instead of the slow
// memory a GPU gives a private array indexed at run time; otherwise the call's.
#if HD_FIXED
#define D DH
#define Dv DH
#else
#define D D_in
#define Dv Dv_in
#endif

// Dropout's factor for score element e (see above): drop_scale where it is kept, else 0. memo keeps the block
// last drawn, so consecutive elements draw each block once.
inline T drop_factor(ulong e, philox_memo *memo, ulong seed, ulong drop_block, uint keep_below, T drop_scale) {
  const uint w = block_word(draw_block_memo(seed, drop_block + (e >> 2), memo), (uint)(e & 3));
  return (w & 0xffffffu) < keep_below ? drop_scale : (T)0;
}

// Keys row i attends to: [0, key_end).
inline long key_end(long i, long Lk, int causal) { return causal ? min(i + 1, Lk) : Lk; }

// exp(s - lse), 0 for a masked score (a fully masked row has lse = -inf, which would give NaN).
inline T prob(T s, T lse) { return s == -INFINITY ? (T)0 : exp(s - lse); }

// Adds score x to a running (max m, sum l of exp(score - m)).
inline void lse_add(T *m, T *l, T x) {
  if (x == -INFINITY) return;
  if (x > *m) {
    *l = *l * exp(*m - x) + 1;
    *m = x;
  } else {
    *l += exp(x - *m);
  }
}

inline T lse_of(T m, T l) { return l == 0 ? (T)(-INFINITY) : m + log(l); }

// The rows a work-group (the tiles form: id its group id, per = BM) or a work-item (the rows form: id its
// global id, per = VR) takes: rows [first, first + per) of head bh = b * H + h, of `rows` rows a head.
typedef struct {
  long bh, b, h, first;
} Part;

inline Part part_of(long id, int per, long rows, long H) {
  const long blocks = (rows + per - 1) / per;
  Part p;
  p.bh = id / blocks;
  p.b = p.bh / H;
  p.h = p.bh % H;
  p.first = (id % blocks) * per;
  return p;
}

// qs . k_row + bias, qs already scaled.
inline T score_local(const T *qs, __local const T *kr, int dims, T bias_v) {
  T x = 0;
  for (int d = 0; d < dims; ++d) x += qs[d] * kr[d];
  return x + bias_v;
}

// One online-softmax step over scores s[0, n) whose value rows are VROW(c) (element d at VROW(c)[d * VSD]):
// m is the running max, l the running sum of exp(s - m), acc the running sum of exp(s - m) * Z(c) * v
// (Z(c) score c's dropout factor, evaluated only where `dropout` and the score is not masked).
#define ONLINE_STEP(s, Z, n, VROW, VSD)                                 \
  {                                                                     \
    T cm = -INFINITY;                                                   \
    int any_nan = 0;                                                    \
    for (int c = 0; c < n; ++c) {                                       \
      cm = fmax(cm, s[c]);                                              \
      any_nan |= isnan(s[c]);                                           \
    }                                                                   \
    /* fmax drops NaN; a NaN score makes the row NaN, as softmax does */ \
    const T mn = any_nan ? (T)NAN : fmax(m, cm);                        \
    if (mn != -INFINITY) { /* else every score so far is masked */     \
      const T corr = exp(m - mn);                                       \
      l *= corr;                                                        \
      for (int d = 0; d < Dv; ++d) acc[d] *= corr;                      \
      m = mn;                                                           \
      for (int c = 0; c < n; ++c) {                                     \
        if (s[c] == -INFINITY) continue;                                \
        const T p = exp(s[c] - m);                                      \
        l += p;                                                         \
        const T pz = dropout ? p * Z(c) : p;                            \
        for (int d = 0; d < Dv; ++d) acc[d] += pz * (VROW(c))[d * VSD]; \
      }                                                                 \
    }                                                                   \
  }

// The row's output and logsumexp (0 and -inf for a fully masked row, NaN where a score was).
#define STORE_ROW(out_row, osd, lse_at)                               \
  {                                                                   \
    const T inv = l == 0 ? (T)0 : (T)1 / l;                           \
    for (int d = 0; d < Dv; ++d) (out_row)[d * osd] = acc[d] * inv;   \
    lse_at = (float)lse_of(m, l);                                     \
  }

// ---------------------------------------------------------------------------------------------------
// Forward: out (B, H, Lq, Dv) and lse (B, H, Lq) float, contiguous.

// Stages rows [j0, j0 + n) of a (rows, dims) head (row stride rs, element stride es) into tile[c * dims + d].
inline void stage(__local T *tile, __global const T *head, long j0, int n, int dims, long rs, long es, int lid) {
  for (int e = lid; e < n * dims; e += BM) {
    const int c = e / dims, d = e - c * dims;
    tile[e] = head[(j0 + c) * rs + d * es];
  }
}

__kernel __attribute__((reqd_work_group_size(BM, 1, 1))) void attention_forward_tiles(
    __global T *out, ulong out_off, long4 so, __global float *lse, ulong lse_off, ATTN_INPUTS) {
  __local T kt[BN * DH], vt[BN * DH];
  const Part part = part_of(get_group_id(0), BM, Lq, H);
  const long bh = part.bh, b = part.b, h = part.h, first = part.first;
  const int lid = get_local_id(0);
  const long i = first + lid;
  const int live = i < Lq;
  const long hk = h / (H / Hk);  // grouped-query attention: the query head's k/v head
  __global const T *kh = k + k_off + b * sk.x + hk * sk.y;
  __global const T *vh = v + v_off + b * sv.x + hk * sv.y;
  __global const T *br = bias + bias_off + b * sb.x + h * sb.y + i * sb.z;
  T qs[DH], acc[DH];
  for (int d = 0; d < D; ++d) qs[d] = live ? scale * q[q_off + b * sq.x + h * sq.y + i * sq.z + d * sq.w] : 0;
  for (int d = 0; d < Dv; ++d) acc[d] = 0;
  T m = -INFINITY, l = 0;
  const long group_end = key_end(min(first + BM, Lq) - 1, Lk, causal);
  const long jend = live ? key_end(i, Lk, causal) : 0;
  philox_memo drawn = PHILOX_MEMO_INIT;
  for (long j0 = 0; j0 < group_end; j0 += BN) {
    const int n = (int)min((long)BN, group_end - j0);
    barrier(CLK_LOCAL_MEM_FENCE);
    stage(kt, kh, j0, n, D, sk.z, sk.w, lid);
    stage(vt, vh, j0, n, Dv, sv.z, sv.w, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
    T s[BN];
    for (int c = 0; c < BN; ++c) {
      const long j = j0 + c;
      T x = -INFINITY;
      if (j < jend) x = score_local(qs, kt + c * D, D, has_bias ? br[j * sb.w] : (T)0);
      s[c] = x;
    }
#define VROW(c) (vt + (c) * Dv)
#define Z(c) drop_factor((bh * Lq + i) * Lk + j0 + (c), &drawn, DROP_ARGS)
    ONLINE_STEP(s, Z, BN, VROW, 1)  // all BN: s[c] is -inf past n, and a constant bound keeps s in registers
#undef VROW
#undef Z
  }
  if (live) STORE_ROW(out + out_off + b * so.x + h * so.y + i * so.z, so.w, lse[lse_off + bh * Lq + i])
}

// ---------------------------------------------------------------------------------------------------
// Backward. With P = exp(S - lse), dS = P * (dO v^T - delta), delta_i = dO_i . O_i:
//   launch 1, over query rows: dQ = scale * dS k; it also writes each row's lse and delta (in T) to
//             stats (2 x B*H*Lq) for launch 2 (with EXACT_LSE it first recomputes the lse in T);
//   launch 2, over key rows:   dV = P^T dO, dK = scale * dS^T q.

__kernel __attribute__((reqd_work_group_size(BM, 1, 1))) void attention_backward_dq_tiles(
    __global T *dq, ulong dq_off, long4 sdq, __global T *stats, ulong stats_off, __global const T *dout,
    ulong do_off, long4 sdo, __global const T *out, ulong o_off, long4 so, __global const float *lse, ulong lse_off,
    ATTN_INPUTS) {
  __local T kt[BN * DH], vt[BN * DH];
  const Part part = part_of(get_group_id(0), BM, Lq, H);
  const long rows = B * H * Lq, bh = part.bh, b = part.b, h = part.h, first = part.first;
  const int lid = get_local_id(0);
  const long i = first + lid, r = bh * Lq + i;
  const int live = i < Lq;
  const long hk = h / (H / Hk);  // grouped-query attention: the query head's k/v head
  __global const T *kh = k + k_off + b * sk.x + hk * sk.y;
  __global const T *vh = v + v_off + b * sv.x + hk * sv.y;
  __global const T *br = bias + bias_off + b * sb.x + h * sb.y + i * sb.z;
  T qs[DH], g[DH], acc[DH];
  T delta = 0;
  for (int d = 0; d < D; ++d) {
    qs[d] = live ? scale * q[q_off + b * sq.x + h * sq.y + i * sq.z + d * sq.w] : 0;
    acc[d] = 0;
  }
  for (int d = 0; d < Dv; ++d) {
    g[d] = live ? dout[do_off + b * sdo.x + h * sdo.y + i * sdo.z + d * sdo.w] : 0;
    delta += live ? g[d] * out[o_off + b * so.x + h * so.y + i * so.z + d * so.w] : 0;
  }
  const long group_end = key_end(min(first + BM, Lq) - 1, Lk, causal);
  const long jend = live ? key_end(i, Lk, causal) : 0;
  T row_lse = live ? (T)lse[lse_off + r] : 0, m = -INFINITY, l = 0;
  philox_memo drawn = PHILOX_MEMO_INIT;
  // Pass 0 (EXACT_LSE only) recomputes the lse; pass 1 accumulates dQ.
  for (int pass = EXACT_LSE ? 0 : 1; pass < 2; ++pass) {
    for (long j0 = 0; j0 < group_end; j0 += BN) {
      const int n = (int)min((long)BN, group_end - j0);
      barrier(CLK_LOCAL_MEM_FENCE);
      stage(kt, kh, j0, n, D, sk.z, sk.w, lid);
      if (pass) stage(vt, vh, j0, n, Dv, sv.z, sv.w, lid);
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int c = 0; c < n; ++c) {
        const long j = j0 + c;
        if (j >= jend) break;
        const T x = score_local(qs, kt + c * D, D, has_bias ? br[j * sb.w] : (T)0);
        if (!pass) {
          lse_add(&m, &l, x);
          continue;
        }
        const T p = prob(x, row_lse);
        if (p == 0) continue;
        T dp = 0;
        for (int d = 0; d < Dv; ++d) dp += g[d] * vt[c * Dv + d];
        if (dropout) dp *= drop_factor(r * Lk + j, &drawn, DROP_ARGS);
        const T ds = p * (dp - delta);
        for (int d = 0; d < D; ++d) acc[d] += ds * kt[c * D + d];
      }
    }
    if (!pass) row_lse = lse_of(m, l);
  }
  if (!live) return;
  __global T *dqr = dq + dq_off + b * sdq.x + h * sdq.y + i * sdq.z;
  for (int d = 0; d < D; ++d) dqr[d * sdq.w] = scale * acc[d];
  stats[stats_off + r] = row_lse;
  stats[stats_off + rows + r] = delta;
}

__kernel __attribute__((reqd_work_group_size(BM, 1, 1))) void attention_backward_dkv_tiles(
    __global T *dk, ulong dk_off, long4 sdk, __global T *dv, ulong dv_off, long4 sdv, __global const T *stats,
    ulong stats_off, __global const T *dout, ulong do_off, long4 sdo, ATTN_INPUTS) {
  __local T qt[BN * DH], gt[BN * DH], st[2 * BN];
  const Part part = part_of(get_group_id(0), BM, Lk, Hk);  // keys of k/v head hk
  const long rows = B * H * Lq, b = part.b, hk = part.h, first = part.first, G = H / Hk;
  const int lid = get_local_id(0);
  const long j = first + lid;
  const int live = j < Lk;
  T kk[DH], vv[DH], dka[DH], dva[DH];
  for (int d = 0; d < D; ++d) {
    kk[d] = live ? scale * k[k_off + b * sk.x + hk * sk.y + j * sk.z + d * sk.w] : 0;
    dka[d] = 0;
  }
  for (int d = 0; d < Dv; ++d) {
    vv[d] = live ? v[v_off + b * sv.x + hk * sv.y + j * sv.z + d * sv.w] : 0;
    dva[d] = 0;
  }
  philox_memo drawn = PHILOX_MEMO_INIT;
  for (long h = hk * G; h < (hk + 1) * G; ++h) {  // the query heads reading this k/v head
    const long bh = b * H + h;
    __global const T *qh = q + q_off + b * sq.x + h * sq.y;
    __global const T *doh = dout + do_off + b * sdo.x + h * sdo.y;
    __global const T *bc = bias + bias_off + b * sb.x + h * sb.y + j * sb.w;
    __global const T *lse = stats + stats_off + bh * Lq, *delta = lse + rows;
    // Causal: query rows before the group's first key see none of its keys.
    for (long i0 = causal ? first : 0; i0 < Lq; i0 += BN) {
      const int n = (int)min((long)BN, Lq - i0);
      barrier(CLK_LOCAL_MEM_FENCE);
      stage(qt, qh, i0, n, D, sq.z, sq.w, lid);
      stage(gt, doh, i0, n, Dv, sdo.z, sdo.w, lid);
      for (int c = lid; c < n; c += BM) {
        st[c] = lse[i0 + c];
        st[BN + c] = delta[i0 + c];
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      if (!live) continue;
      for (int c = 0; c < n; ++c) {
        const long i = i0 + c;
        if (causal && i < j) continue;
        const T p = prob(score_local(kk, qt + c * D, D, has_bias ? bc[i * sb.z] : (T)0), st[c]);
        if (p == 0) continue;
        const T z = dropout ? drop_factor((bh * Lq + i) * Lk + j, &drawn, DROP_ARGS) : (T)1;
        T dp = 0;
        for (int d = 0; d < Dv; ++d) {
          const T gd = gt[c * Dv + d];
          dva[d] += p * z * gd;
          dp += gd * vv[d];
        }
        const T ds = p * (z * dp - st[BN + c]);
        for (int d = 0; d < D; ++d) dka[d] += ds * qt[c * D + d];
      }
    }
  }
  if (!live) return;
  __global T *dkr = dk + dk_off + b * sdk.x + hk * sdk.y + j * sdk.z;
  __global T *dvr = dv + dv_off + b * sdv.x + hk * sdv.y + j * sdv.z;
  for (int d = 0; d < D; ++d) dkr[d * sdk.w] = scale * dka[d];
  for (int d = 0; d < Dv; ++d) dvr[d * sdv.w] = dva[d];
}

// ---------------------------------------------------------------------------------------------------
// The rows form: a work-item takes VR consecutive rows of one head as the lanes of TV vectors (TI: the
// comparison type), so each key (or query) element it reads is broadcast to VR rows' multiply-adds and
// the exps run as vectors; that is what vectorises on a CPU. Lanes past the last row compute on zeros
// and store nothing.

// TV passes by value between the helpers below (clang's -Wpsabi note is silenced in prelude.cl).

#define LANES ((TV)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#define LANES_UL ((ulong16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

// drop_factor for the VR lanes' elements e at once, one Philox block per lane (philox.cl's vector rounds).
inline TV drop_factors(ulong16 e, ulong seed, ulong drop_block, uint keep_below, T drop_scale) {
  const ulong16 counter = (ulong16)(drop_block) + (e >> 2);
  uint16 c0 = convert_uint16(counter), c1 = convert_uint16(counter >> 32), c2 = 0, c3 = 0;
  PHILOX4X32_10_X16(c0, c1, c2, c3, (uint)seed, (uint)(seed >> 32));
  const uint16 lane = convert_uint16(e & 3);
  const uint16 w = BLOCK_WORD_X16(c0, c1, c2, c3, lane);
  return select((TV)0, (TV)(drop_scale), CAT(convert_, TI)((w & 0xffffffu) < keep_below));
}

// The VR rows' elements as a vector: row r at p[r * rs]; rows from `live` on read as 0.
inline TV gather_rows(__global const T *p, long rs, int live) {
  T t[VR];
  for (int r = 0; r < VR; ++r) t[r] = r < live ? p[r * rs] : (T)0;
  return vload16(0, t);
}

inline void scatter_rows(__global T *p, long rs, int live, TV x) {
  T t[VR];
  vstore16(x, 0, t);
  for (int r = 0; r < live; ++r) p[r * rs] = t[r];
}

// exp(s - lse) per lane, 0 where the score is masked (or the lane dead).
inline TV prob_v(TV s, TV lse, TI dead) { return select(exp(s - lse), (TV)0, dead | (s == (TV)(-INFINITY))); }

// The lanes' scores against one row kr of the other operand (element d at kr[d * es]), qs scaled.
inline TV score_rows(const TV *qs, __global const T *kr, long es, int dims) {
  TV x = 0;
  for (int d = 0; d < dims; ++d) x += qs[d] * (TV)(kr[d * es]);
  return x;
}

__kernel void attention_forward_rows(__global T *out, ulong out_off, long4 so, __global float *lse, ulong lse_off,
                                     ATTN_INPUTS) {
  const Part part = part_of(get_global_id(0), VR, Lq, H);
  if (part.bh >= B * H) return;
  const long bh = part.bh, b = part.b, h = part.h, i0 = part.first;
  const int live = (int)min((long)VR, Lq - i0);
  __global const T *qr = q + q_off + b * sq.x + h * sq.y + i0 * sq.z;
  const long hk = h / (H / Hk);  // grouped-query attention: the query head's k/v head
  __global const T *kh = k + k_off + b * sk.x + hk * sk.y;
  __global const T *vh = v + v_off + b * sv.x + hk * sv.y;
  __global const T *br = bias + bias_off + b * sb.x + h * sb.y + i0 * sb.z;
  TV qs[DH], acc[DH];
  for (int d = 0; d < D; ++d) qs[d] = scale * gather_rows(qr + d * sq.w, sq.z, live);
  for (int d = 0; d < Dv; ++d) acc[d] = 0;
  const TV iv = (TV)(i0) + LANES;
  const TI dead_row = iv >= (TV)(Lq);
  const long jend = key_end(i0 + live - 1, Lk, causal);  // the last row sees the most keys
  TV m = -INFINITY, l = 0;
  const ulong16 erow = (ulong16)((bh * Lq + i0) * Lk) + LANES_UL * (ulong)Lk;  // dropout: element (i, 0)
  for (long j0 = 0; j0 < jend; j0 += CH) {
    const int n = (int)min((long)CH, jend - j0);
    TV s[CH], cm = -INFINITY;
    for (int c = 0; c < n; ++c) {
      const long j = j0 + c;
      TV x = score_rows(qs, kh + j * sk.z, sk.w, D);
      if (has_bias) x += gather_rows(br + j * sb.w, sb.z, live);
      TI dead = dead_row;
      if (causal) dead |= (TV)(j) > iv;
      s[c] = select(x, (TV)(-INFINITY), dead);
      cm = fmax(cm, s[c]);
    }
    const TV mn = fmax(m, cm);
    const TV corr = select(exp(m - mn), (TV)0, mn == (TV)(-INFINITY));  // lanes with every score masked so far
    l *= corr;
    for (int d = 0; d < Dv; ++d) acc[d] *= corr;
    m = mn;
    for (int c = 0; c < n; ++c) {
      TV p = prob_v(s[c], m, (TI)0);
      l += p;
      if (dropout) p *= drop_factors(erow + (ulong)(j0 + c), DROP_ARGS);
      __global const T *vr = vh + (j0 + c) * sv.z;
      for (int d = 0; d < Dv; ++d) acc[d] += p * (TV)(vr[d * sv.w]);
    }
  }
  const TV inv = select((TV)1 / l, (TV)0, l == (TV)0);
  __global T *orow = out + out_off + b * so.x + h * so.y + i0 * so.z;
  for (int d = 0; d < Dv; ++d) scatter_rows(orow + d * so.w, so.z, live, acc[d] * inv);
  T t[VR];
  vstore16(select(m + log(l), (TV)(-INFINITY), l == (TV)0), 0, t);
  for (int r = 0; r < live; ++r) lse[lse_off + bh * Lq + i0 + r] = (float)t[r];
}

__kernel void attention_backward_dq_rows(__global T *dq, ulong dq_off, long4 sdq, __global T *stats,
                                         ulong stats_off, __global const T *dout, ulong do_off, long4 sdo,
                                         __global const T *out, ulong o_off, long4 so, __global const float *lse,
                                         ulong lse_off, ATTN_INPUTS) {
  const Part part = part_of(get_global_id(0), VR, Lq, H);
  if (part.bh >= B * H) return;
  const long rows = B * H * Lq, bh = part.bh, b = part.b, h = part.h, i0 = part.first, r0 = bh * Lq + i0;
  const int live = (int)min((long)VR, Lq - i0);
  __global const T *qr = q + q_off + b * sq.x + h * sq.y + i0 * sq.z;
  __global const T *dor = dout + do_off + b * sdo.x + h * sdo.y + i0 * sdo.z;
  __global const T *orow = out + o_off + b * so.x + h * so.y + i0 * so.z;
  const long hk = h / (H / Hk);  // grouped-query attention: the query head's k/v head
  __global const T *kh = k + k_off + b * sk.x + hk * sk.y;
  __global const T *vh = v + v_off + b * sv.x + hk * sv.y;
  __global const T *br = bias + bias_off + b * sb.x + h * sb.y + i0 * sb.z;
  TV qs[DH], g[DH], acc[DH], delta = 0;
  for (int d = 0; d < D; ++d) {
    qs[d] = scale * gather_rows(qr + d * sq.w, sq.z, live);
    acc[d] = 0;
  }
  for (int d = 0; d < Dv; ++d) {
    g[d] = gather_rows(dor + d * sdo.w, sdo.z, live);
    delta += g[d] * gather_rows(orow + d * so.w, so.z, live);
  }
  const TV iv = (TV)(i0) + LANES;
  const TI dead_row = iv >= (TV)(Lq);
  const long jend = key_end(i0 + live - 1, Lk, causal);
  T t[VR];
  for (int r = 0; r < VR; ++r) t[r] = r < live ? (T)lse[lse_off + r0 + r] : (T)0;
  TV row_lse = vload16(0, t), m = -INFINITY, l = 0;
  const ulong16 erow = (ulong16)(r0 * Lk) + LANES_UL * (ulong)Lk;  // dropout: element (i, 0)
  // Pass 0 (EXACT_LSE only) recomputes the lse in T; pass 1 accumulates dQ.
  for (int pass = EXACT_LSE ? 0 : 1; pass < 2; ++pass) {
    for (long j = 0; j < jend; ++j) {
      TV x = score_rows(qs, kh + j * sk.z, sk.w, D);
      if (has_bias) x += gather_rows(br + j * sb.w, sb.z, live);
      TI dead = dead_row;
      if (causal) dead |= (TV)(j) > iv;
      if (!pass) {
        x = select(x, (TV)(-INFINITY), dead);
        const TV mn = fmax(m, x);
        l = l * select(exp(m - mn), (TV)0, m == (TV)(-INFINITY)) + select(exp(x - mn), (TV)0, x == (TV)(-INFINITY));
        m = mn;
        continue;
      }
      const TV p = prob_v(x, row_lse, dead);
      __global const T *vr = vh + j * sv.z;
      __global const T *kr = kh + j * sk.z;
      TV dp = 0;
      for (int d = 0; d < Dv; ++d) dp += g[d] * (TV)(vr[d * sv.w]);
      if (dropout) dp *= drop_factors(erow + (ulong)j, DROP_ARGS);
      const TV ds = p * (dp - delta);
      for (int d = 0; d < D; ++d) acc[d] += ds * (TV)(kr[d * sk.w]);
    }
    if (!pass) row_lse = select(m + log(l), (TV)(-INFINITY), l == (TV)0);
  }
  __global T *dqr = dq + dq_off + b * sdq.x + h * sdq.y + i0 * sdq.z;
  for (int d = 0; d < D; ++d) scatter_rows(dqr + d * sdq.w, sdq.z, live, scale * acc[d]);
  scatter_rows(stats + stats_off + r0, 1, live, row_lse);
  scatter_rows(stats + stats_off + rows + r0, 1, live, delta);
}

__kernel void attention_backward_dkv_rows(__global T *dk, ulong dk_off, long4 sdk, __global T *dv, ulong dv_off,
                                          long4 sdv, __global const T *stats, ulong stats_off,
                                          __global const T *dout, ulong do_off, long4 sdo, ATTN_INPUTS) {
  const Part part = part_of(get_global_id(0), VR, Lk, Hk);  // keys of k/v head hk
  if (part.bh >= B * Hk) return;
  const long rows = B * H * Lq, b = part.b, hk = part.h, j0 = part.first, G = H / Hk;
  const int live = (int)min((long)VR, Lk - j0);
  __global const T *kr = k + k_off + b * sk.x + hk * sk.y + j0 * sk.z;
  __global const T *vr = v + v_off + b * sv.x + hk * sv.y + j0 * sv.z;
  TV kk[DH], vv[DH], dka[DH], dva[DH];
  for (int d = 0; d < D; ++d) {
    kk[d] = scale * gather_rows(kr + d * sk.w, sk.z, live);
    dka[d] = 0;
  }
  for (int d = 0; d < Dv; ++d) {
    vv[d] = gather_rows(vr + d * sv.w, sv.z, live);
    dva[d] = 0;
  }
  const TV jv = (TV)(j0) + LANES;
  const TI dead_key = jv >= (TV)(Lk);
  for (long h = hk * G; h < (hk + 1) * G; ++h) {  // the query heads reading this k/v head
    const long bh = b * H + h;
    __global const T *qh = q + q_off + b * sq.x + h * sq.y;
    __global const T *doh = dout + do_off + b * sdo.x + h * sdo.y;
    __global const T *bc = bias + bias_off + b * sb.x + h * sb.y + j0 * sb.w;
    __global const T *lse = stats + stats_off + bh * Lq, *delta = lse + rows;
    for (long i = causal ? j0 : 0; i < Lq; ++i) {  // causal: rows before the first key see none of these keys
      __global const T *qi = qh + i * sq.z;
      TV x = score_rows(kk, qi, sq.w, D);
      if (has_bias) x += gather_rows(bc + i * sb.z, sb.w, live);
      TI dead = dead_key;
      if (causal) dead |= jv > (TV)(i);
      const TV p = prob_v(x, (TV)(lse[i]), dead);
      TV pz = p, z = 1;
      if (dropout) {
        z = drop_factors((ulong16)((bh * Lq + i) * Lk + j0) + LANES_UL, DROP_ARGS);
        pz = p * z;
      }
      __global const T *gi = doh + i * sdo.z;
      TV dp = 0;
      for (int d = 0; d < Dv; ++d) {
        const TV gd = (TV)(gi[d * sdo.w]);
        dva[d] += pz * gd;
        dp += vv[d] * gd;
      }
      const TV ds = p * (z * dp - (TV)(delta[i]));
      for (int d = 0; d < D; ++d) dka[d] += ds * (TV)(qi[d * sq.w]);
    }
  }
  __global T *dkr = dk + dk_off + b * sdk.x + hk * sdk.y + j0 * sdk.z;
  __global T *dvr = dv + dv_off + b * sdv.x + hk * sdv.y + j0 * sdv.z;
  for (int d = 0; d < D; ++d) scatter_rows(dkr + d * sdk.w, sdk.z, live, scale * dka[d]);
  for (int d = 0; d < Dv; ++d) scatter_rows(dvr + d * sdv.w, sdv.z, live, dva[d]);
}
