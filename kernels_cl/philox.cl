// The counter-based Philox-4x32-10 generator: random.cl's distributions and the random ops of
// torch.compile's kernels (inductor.cl) draw from it.
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

// The rounds are unrolled and mul_hi spelled as a 64-bit product: PoCL then vectorises a kernel across its
// work-items (a loop, or PoCL's mul_hi library call, left it scalar: dropout of 32K floats 1.25 -> 0.25 ms).
inline uint4 philox4x32_10(uint4 c, uint2 k) {
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    const ulong p0 = (ulong)PHILOX_M0 * c.x, p1 = (ulong)PHILOX_M1 * c.z;
    const uint hi0 = (uint)(p0 >> 32), lo0 = (uint)p0;
    const uint hi1 = (uint)(p1 >> 32), lo1 = (uint)p1;
    c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k.x += PHILOX_W0;
    k.y += PHILOX_W1;
  }
  return c;
}

inline uint4 draw_block(ulong seed, ulong counter) {
  return philox4x32_10((uint4)((uint)counter, (uint)(counter >> 32), 0u, 0u), (uint2)((uint)seed, (uint)(seed >> 32)));
}
