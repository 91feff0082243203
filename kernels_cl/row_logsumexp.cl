// The max and the sum of exp(x - max) over a contiguous range of a row, 16 elements at a time, for
// kernels that walk a row per work-item (softmax.cl, cross_entropy.cl). Included after vec16.cl.

// The larger of a and b, NaN if either is: scalars, and vectors (a select, so it vectorises).
#define MAX_NAN(a, b) ((ACC_ISNAN(a) | ((a) > (b))) ? (a) : (b))
#define MAX_NAN_V(a, b) select((b), (a), isnan(a) | ((a) > (b)))

inline ACC max16(ACC16 a) {
  const ACC8 b = MAX_NAN_V(a.lo, a.hi);
  const ACC4 c = MAX_NAN_V(b.lo, b.hi);
  const ACC2 d = MAX_NAN_V(c.lo, c.hi);
  return MAX_NAN(d.x, d.y);
}

inline ACC range_max(__global const T_T* x, long b, long e) {
  ACC16 a = (ACC16)(ACC_LOWEST);
  long j = b;
  for (; j + 16 <= e; j += 16) a = MAX_NAN_V(LOAD16(x, j), a);
  if (j < e) a = MAX_NAN_V(lane_mask_keep(LOAD16_CLAMPED(x, j, e - 1), (ACC16)(ACC_LOWEST), e - j), a);
  return max16(a);
}

inline ACC range_sum_exp(__global const T_T* x, long b, long e, ACC m) {
  ACC16 s = 0;
  long j = b;
  for (; j + 16 <= e; j += 16) s += exp(LOAD16(x, j) - m);
  if (j < e) s += lane_mask_keep(exp(LOAD16_CLAMPED(x, j, e - 1) - m), (ACC16)0, e - j);
  return sum16(s);
}
