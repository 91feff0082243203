// The counter-based Philox-4x32-10 generator: random.cl's distributions, fused attention's dropout
// (attention.cl) and the random ops of torch.compile's kernels (inductor.cl) draw from it.
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

// The rounds are unrolled, mul_hi spelled as a 64-bit product and the state kept in four uints: PoCL then
// vectorises a kernel across its work-items (a loop, or PoCL's mul_hi library call, left it scalar: dropout
// of 32K floats 1.25 -> 0.25 ms; so did rounds on a uint4, whose vector operations its vectoriser does not
// widen: 256K blocks 1.78 -> 0.30 ms). Always inlined, so the uint4 result folds into its words.
inline __attribute__((always_inline)) uint4 philox4x32_10(uint4 c, uint2 k) {
  uint c0 = c.x, c1 = c.y, c2 = c.z, c3 = c.w, k0 = k.x, k1 = k.y;
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    const ulong p0 = (ulong)PHILOX_M0 * c0, p1 = (ulong)PHILOX_M1 * c2;
    const uint next0 = (uint)(p1 >> 32) ^ c1 ^ k0, next2 = (uint)(p0 >> 32) ^ c3 ^ k1;
    c1 = (uint)p1;
    c3 = (uint)p0;
    c0 = next0;
    c2 = next2;
    k0 += PHILOX_W0;
    k1 += PHILOX_W1;
  }
  return (uint4)(c0, c1, c2, c3);
}

inline __attribute__((always_inline)) uint4 draw_block(ulong seed, ulong counter) {
  return philox4x32_10((uint4)((uint)counter, (uint)(counter >> 32), 0u, 0u), (uint2)((uint)seed, (uint)(seed >> 32)));
}

// The block a kernel drew last, for elements that share it: a work-item walking consecutive elements draws
// each block once (Philox was most of a fused relu + dropout's time). The counter ~0 never occurs (it would
// be element 2^66 of a stream), so PHILOX_MEMO_INIT holds no block.
typedef struct {
  ulong seed;
  ulong counter;
  uint4 bits;
} philox_memo;
#define PHILOX_MEMO_INIT {0UL, ~0UL, (uint4)(0u)}

inline __attribute__((always_inline)) uint4 draw_block_memo(ulong seed, ulong counter, philox_memo *memo) {
  if (memo->counter != counter || memo->seed != seed) {
    memo->bits = draw_block(seed, counter);
    memo->counter = counter;
    memo->seed = seed;
  }
  return memo->bits;
}

// Word `lane` (0 to 3) of a block.
inline __attribute__((always_inline)) uint block_word(uint4 r, uint lane) { return lane == 0 ? r.x : lane == 1 ? r.y : lane == 2 ? r.z : r.w; }

// Sixteen blocks at once, one per vector lane: block i is (c0, c1, c2, c3).si (uint16 lvalues, rewritten in
// place) under key (k0, k1). The same rounds as philox4x32_10, with the 32 x 32 -> 64-bit products as
// ulong16 multiplies, which vectorise. Macros, not functions: PoCL warns that passing 16-wide vectors by
// value changes the ABI on CPUs without AVX-512.
#define PHILOX4X32_10_X16(c0, c1, c2, c3, key0, key1)                                                     \
  do {                                                                                                  \
    uint philox_k0_ = (key0), philox_k1_ = (key1);                                                      \
    _Pragma("unroll") for (int philox_r_ = 0; philox_r_ < 10; ++philox_r_) {                            \
      const ulong16 philox_p0_ = convert_ulong16(c0) * (ulong)PHILOX_M0;                                \
      const ulong16 philox_p1_ = convert_ulong16(c2) * (ulong)PHILOX_M1;                                \
      c0 = convert_uint16(philox_p1_ >> 32) ^ (c1) ^ philox_k0_;                                        \
      c1 = convert_uint16(philox_p1_);                                                                  \
      c2 = convert_uint16(philox_p0_ >> 32) ^ (c3) ^ philox_k1_;                                        \
      c3 = convert_uint16(philox_p0_);                                                                  \
      philox_k0_ += PHILOX_W0;                                                                          \
      philox_k1_ += PHILOX_W1;                                                                          \
    }                                                                                                   \
  } while (0)

// Word lane.si of block i of sixteen blocks (c0, c1, c2, c3).
#define BLOCK_WORD_X16(c0, c1, c2, c3, lane) \
  select(select((c0), (c1), (lane) == 1), select((c2), (c3), (lane) == 3), (lane) >= 2)

// cos and sin of 2 pi u, u in [0, 1), without a general argument reduction: 4u splits exactly into a
// quadrant and a fraction f in [-1/2, 1/2], then Taylor polynomials of y = f pi/2 (error below 2e-9).
// Box-Muller's angle (random.cl's normal, inductor.cl's randn). On PoCL the general float sin and cos
// (float_math.cl's, for any argument) took a third of randn's time, PoCL's cospi more.
inline __attribute__((always_inline)) void tocl_cos_sin_turn(float u, float* c, float* s) {
  const float quarter_turns = u * 4.0f;
  const float q = rint(quarter_turns);
  const float y = (quarter_turns - q) * 1.57079632679489662f;
  const int quadrant = (int)q;
  const float z = y * y;
  const float sin_y = y + y * z * (-1.0f / 6.0f + z * (1.0f / 120.0f + z * (-1.0f / 5040.0f + z * (1.0f / 362880.0f))));
  const float cos_y = 1.0f + z * (-0.5f + z * (1.0f / 24.0f + z * (-1.0f / 720.0f + z * (1.0f / 40320.0f +
                      z * (-1.0f / 3628800.0f)))));
  const float sv = (quadrant & 1) ? cos_y : sin_y, cv = (quadrant & 1) ? sin_y : cos_y;
  *s = (quadrant & 2) ? -sv : sv;
  *c = ((quadrant + 1) & 2) ? -cv : cv;
}
