// CTC loss (aten/native/ctc_loss.cpp), CPU's algorithm (Graves et al. 2006 in log space) with one
// work-group per batch element: the recursions run serially over time, each step's 2 L + 1 states across
// the group's work-items (a barrier between steps; a group sees its own global writes after it).
// The host prepends the prelude and F (float or double: log_probs' and the results' type).
// log_probs (T, B, C) at strides lp_t, lp_b, lp_c; targets int64, batch b's labels at tg_batch[b] + j * tg_s
// (clamped into [0, C): the host checked or recorded them); lengths int64 per batch element.
// log_alpha and log_beta (B, T, S) contiguous, S = 2 * max target length + 1, filled with -inf beforehand.

#define NEG_INF ((F)(-INFINITY))

inline F ctc_log_add(F a, F b) {
  F m = max(a, b);
  if (m == NEG_INF) m = (F)0;  // not -inf - -inf
  return log(exp(a - m) + exp(b - m)) + m;
}

inline F ctc_log_add3(F a, F b, F c) {
  F m = max(a, max(b, c));
  if (m == NEG_INF) m = (F)0;
  return log(exp(a - m) + exp(b - m) + exp(c - m)) + m;
}

// Label of extended state s: the blank between labels, label s / 2 at odd s.
inline long ctc_label(__global const long* tg, long tg_s, int s, int blank, int C) {
  return (s % 2 == 0) ? (long)blank : clamp(tg[tg_s * (s / 2)], 0L, (long)(C - 1));
}

__kernel void ctc_alpha(__global const F* lp, ulong lp_off, long lp_t, long lp_b, long lp_c,
                        __global const long* tg, ulong tg_off, long tg_s, __global const long* tg_batch,
                        ulong tb_off, __global const long* in_len, ulong il_off, __global const long* tg_len,
                        ulong tl_off, __global F* la, ulong la_off,
                        int T, int S, __global F* nll, ulong nll_off, int blank, int C) {
  const int b = get_group_id(0), lid = get_local_id(0), wg = get_local_size(0);
  lp += lp_off + b * lp_b;
  tg += tg_off + tg_batch[tb_off + b];
  la += la_off + (ulong)b * T * S;
  const int Tb = (int)in_len[il_off + b], L = (int)tg_len[tl_off + b], Sb = 2 * L + 1;
  if (Tb == 0) {  // no frames: likelihood 1 of an empty target, 0 of any other (CPU's -0 and inf)
    if (lid == 0) nll[nll_off + b] = L == 0 ? -(F)0 : (F)INFINITY;
    return;
  }
  for (int s = lid; s < 2 && s < Sb; s += wg) la[s] = lp[ctc_label(tg, tg_s, s, blank, C) * lp_c];
  for (int t = 1; t < Tb; ++t) {
    barrier(CLK_GLOBAL_MEM_FENCE);
    __global const F* prev = la + (t - 1) * S;
    for (int s = lid; s < Sb; s += wg) {
      const long label = ctc_label(tg, tg_s, s, blank, C);
      const F a2 = s > 0 ? prev[s - 1] : NEG_INF;
      const F a3 = (s > 1 && ctc_label(tg, tg_s, s - 2, blank, C) != label) ? prev[s - 2] : NEG_INF;
      la[t * S + s] = ctc_log_add3(prev[s], a2, a3) + lp[t * lp_t + label * lp_c];
    }
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (lid == 0) {
    const F l1 = la[(Tb - 1) * S + 2 * L], l2 = L > 0 ? la[(Tb - 1) * S + 2 * L - 1] : NEG_INF;
    nll[nll_off + b] = -ctc_log_add(l1, l2);
  }
}

// The gradient with respect to log_probs, (T, B, C) contiguous: exp(lp) - exp(lcab + nll - lp), times
// grad[b], where lcab log-sums alpha * beta over the states labelled c at time t; 0 past the input's length
// and, with zero_infinity, for an infinite loss. The group walks beta backwards through time, and after
// each step its work-items (over classes) collect that step.
__kernel void ctc_grad(__global const F* lp, ulong lp_off, long lp_t, long lp_b, long lp_c,
                       __global const long* tg, ulong tg_off, long tg_s, __global const long* tg_batch,
                       ulong tb_off, __global const long* in_len, ulong il_off, __global const long* tg_len,
                       ulong tl_off, __global const F* la,
                       ulong la_off, __global F* lb, ulong lb_off, int T, int S, __global const F* nll,
                       ulong nll_off, __global const F* grad, ulong grad_off, long grad_s,
                       __global F* out, ulong out_off, int B, int blank, int C, int zero_infinity) {
  const int b = get_group_id(0), lid = get_local_id(0), wg = get_local_size(0);
  lp += lp_off + b * lp_b;
  tg += tg_off + tg_batch[tb_off + b];
  la += la_off + (ulong)b * T * S;
  lb += lb_off + (ulong)b * T * S;
  out += out_off + (ulong)b * C;
  const int Tb = (int)in_len[il_off + b], L = (int)tg_len[tl_off + b], Sb = 2 * L + 1;
  const F loss = nll[nll_off + b], g = grad[grad_off + b * grad_s];
  const bool zero = zero_infinity && loss == (F)INFINITY;
  for (int t = Tb; t < T; ++t)
    for (int c = lid; c < C; c += wg) out[(ulong)t * B * C + c] = (F)0;
  if (Tb == 0) return;
  if (zero) {
    for (int t = 0; t < Tb; ++t)
      for (int c = lid; c < C; c += wg) out[(ulong)t * B * C + c] = (F)0;
    return;
  }
  for (int s = lid; s < Sb; s += wg)
    if (s >= Sb - 2) lb[(Tb - 1) * S + s] = lp[(Tb - 1) * lp_t + ctc_label(tg, tg_s, s, blank, C) * lp_c];
  for (int t = Tb - 1; t >= 0; --t) {
    if (t < Tb - 1) {
      __global const F* next = lb + (t + 1) * S;
      for (int s = lid; s < Sb; s += wg) {
        const long label = ctc_label(tg, tg_s, s, blank, C);
        const F b2 = s < 2 * L ? next[s + 1] : NEG_INF;
        const F b3 = (s < 2 * L - 1 && ctc_label(tg, tg_s, s + 2, blank, C) != label) ? next[s + 2] : NEG_INF;
        lb[t * S + s] = ctc_log_add3(next[s], b2, b3) + lp[t * lp_t + label * lp_c];
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int c = lid; c < C; c += wg) {
      F lcab = NEG_INF;
      if (c == blank) {
        for (int s = 0; s < Sb; s += 2) lcab = ctc_log_add(lcab, la[t * S + s] + lb[t * S + s]);
      } else {
        for (int s = 1; s < Sb; s += 2)
          if (ctc_label(tg, tg_s, s, blank, C) == c) lcab = ctc_log_add(lcab, la[t * S + s] + lb[t * S + s]);
      }
      const F v = lp[t * lp_t + c * lp_c];
      out[(ulong)t * B * C + c] = (exp(v) - exp(lcab + loss - v)) * g;
    }
  }
}
