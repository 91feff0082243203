// What the kernels torch.compile generates (python/torch_opencl/_inductor) have in common: one copy at
// the top of each graph's program. Storage conversions come from prelude.cl.
#include "prelude.cl"
#include "philox.cl"

// The float helpers the eager pointwise kernels use (erf_of, erfinv_of, ...: PoCL's own erf is a
// scalar call that stops the work-group vectoriser).
#define C_T float
#define C_IS_FLOAT 1
#include "pointwise_functions.cl"
#undef C_T
#undef C_IS_FLOAT

#ifdef TOCL_FP64
// Double erfinv: the float estimate refined by Newton steps on the library's double erf, or where |y| > 0.5
// on log(erfc(|x|)) = log(1 - |y|) (as erfinv_of does in double: erf(x) - y is all cancellation near +-1).
inline double tocl_erfinv_double(double y) {
  if (fabs(y) >= 1.0 || isnan(y)) return fabs(y) == 1.0 ? copysign((double)INFINITY, y) : (double)NAN;
  const float start = fabs(y) < 1.0 - 6e-8 ? erfinv_of((float)y) : copysign(3.8f, (float)y);
  double x = (double)start;
  if (fabs(y) > 0.5) return tocl_erfinv_tail(y, x, 6);
  for (int k = 0; k < 2; ++k) x -= (erf(x) - y) / (M_2_SQRTPI * exp(-x * x));
  return x;
}
#endif

// pow for float. Where the device takes float_math.cl's functions (PoCL), its pow through double (about
// half an ulp). Elsewhere through exp2/log2, as first written for PoCL, whose pow costs about ten times
// as much (an AdamW step with bias corrections, 200K parameters: 87 ms -> 11 ms). Selects rather than
// branches, so the work-group vectoriser keeps it: negative bases with integral exponents take the sign
// of odd exponents, pow(x, 0) and pow(1, y) are 1 (NaN included). Relative error about |y log2 x| * 2^-24.
#ifdef TOCL_OWN_POW
inline float tocl_powf(float a, float b) { return tocl_pow_through_double(a, b); }  // float_math.cl
#else
inline float tocl_powf(float a, float b) {
  const float r = exp2(b * log2(fabs(a)));
  const bool integral = b == rint(b);
  const bool odd = integral && (b * 0.5f != rint(b * 0.5f));
  float out = a < 0.0f ? (integral ? (odd ? -r : r) : NAN) : r;
  out = b == 0.0f ? 1.0f : out;
  return a == 1.0f ? 1.0f : out;
}
#endif

// Python's floor division and modulo for integers (C's / and % truncate toward zero). A divisor of -1
// never divides: LONG_MIN / -1 overflows in C, where eager wraps to LONG_MIN (and x % -1 is 0).
inline long tocl_floordiv(long a, long b) {
  if (b == -1) return (long)(0UL - (ulong)a);
  long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
inline long tocl_pymod(long a, long b) {
  if (b == -1) return 0;
  long r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
inline float tocl_fremainder(float a, float b) {
  float r = fmod(a, b);
  return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r;
}

// float16 rounding of a float held in float (the device may lack cl_khr_fp16 arithmetic; pointers to
// half and vload/vstore_half need no extension).
inline float tocl_round_half(float x) {
  ushort bits;
  vstore_half_rte(x, 0, (__private half*)&bits);
  return vload_half(0, (__private const half*)&bits);
}
inline float tocl_round_bf16(float x) { return bf16_to_float(float_to_bf16(x)); }

// A NaN the compiler cannot see through, which the generated code writes for its NaN constants: PoCL 3.1's
// LLVM drops the store of floor, ceil, trunc, round, exp, exp2, expm1, tanh or sinh of a NaN it knows at
// compile time, so the output kept whatever its memory held (`x * nan // 2.5` compiled returned garbage).
inline float tocl_opaque_nan(void) {
  volatile float nan_value = NAN;
  return nan_value;
}
#define TOCL_NAN tocl_opaque_nan()

// NaN-propagating minimum and maximum, as torch.minimum/maximum and max/min reductions.
#define TOCL_FMIN(a, b) ((isnan(a) || (a) < (b)) ? (a) : (b))
#define TOCL_FMAX(a, b) ((isnan(a) || (a) > (b)) ? (a) : (b))

// Atomic floating-point addition on global memory: a compare-and-swap loop on the value's bits (OpenCL 1.2
// has no float atomics). NAME(p, v) adds v to *p, whose bits are a BITS exchanged by CMPXCHG.
#define TOCL_ATOMIC_ADD_BY_CAS(NAME, T, BITS, CMPXCHG)                     \
  inline void NAME(volatile __global T* p, T v) {                          \
    union { BITS u; T f; } expected, desired;                              \
    expected.f = *p;                                                       \
    for (;;) {                                                             \
      desired.f = expected.f + v;                                          \
      const BITS seen = CMPXCHG((volatile __global BITS*)p, expected.u, desired.u); \
      if (seen == expected.u) break;                                       \
      expected.u = seen;                                                   \
    }                                                                      \
  }
TOCL_ATOMIC_ADD_BY_CAS(tocl_atomic_add_float, float, uint, atomic_cmpxchg)

// Atomic addition of the narrower types (index_put with accumulate, index_add and scatter_add of
// float16, bfloat16 and 8- and 16-bit integers): a compare-and-swap on the aligned 32-bit word that holds
// the element, its neighbours left as they are. `bytes` is 1 or 2; the sum is formed by `kind`: 0 an
// integer (wrapping as eager's), 1 float16, 2 bfloat16 (each rounded to nearest even, as eager rounds).
inline uint tocl_narrow_add(uint bits, float fv, long iv, int kind) {
  if (kind == 1) {
    ushort b = (ushort)bits;
    const float sum = vload_half(0, (__private const half*)&b) + fv;
    vstore_half_rte(sum, 0, (__private half*)&b);
    return b;
  }
  if (kind == 2) return float_to_bf16(bf16_to_float((ushort)bits) + fv);
  return (uint)((long)bits + iv);
}
inline void tocl_atomic_add_narrow(volatile __global void* p, int bytes, float fv, long iv, int kind) {
  const size_t address = (size_t)p;
  volatile __global uint* word = (volatile __global uint*)(address & ~(size_t)3);
#ifdef __ENDIAN_LITTLE__
  const uint shift = (uint)(address & 3) * 8;
#else
  const uint shift = (uint)(4 - bytes - (address & 3)) * 8;
#endif
  const uint mask = (bytes == 1 ? 0xffu : 0xffffu) << shift;
  uint expected = *word;
  for (;;) {
    const uint element = tocl_narrow_add((expected & mask) >> shift, fv, iv, kind);
    const uint desired = (expected & ~mask) | ((element << shift) & mask);
    const uint seen = atomic_cmpxchg(word, expected, desired);
    if (seen == expected) break;
    expected = seen;
  }
}

// 64-bit atomic addition where the device has cl_khr_int64_base_atomics (TOCL_INT64_ATOMICS, set from the
// device's extensions by the graph program's prelude; without it Inductor keeps such ops on eager kernels).
#ifdef TOCL_INT64_ATOMICS
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#ifdef TOCL_FP64
TOCL_ATOMIC_ADD_BY_CAS(tocl_atomic_add_double, double, ulong, atom_cmpxchg)
#endif
#endif

// An index out of range in a generated kernel: the first one a graph run meets is recorded in the
// graph's index-error buffer (a flag, then the index as the kernel saw it and the dimension's size, as
// longs from int 2 on) and the access is clamped into range; the wrapper raises IndexError at the end of
// the run (python/torch_opencl/_inductor/runtime.py), where eager would have raised at the call.
inline long tocl_index_error(__global int* errors, long index, long size) {
  tocl_record_index_error(errors, index, size);
  return index < 0 ? 0 : size - 1;
}

// Inductor's random ops: element `offset` of the stream `seed` (a seed Inductor draws from the device's
// generator per graph run). Consecutive offsets share a Philox block, as eager's distributions do: four
// uniforms (lanes x, y, z, w of block offset / 4); a normal or a 64-bit integer takes two words (x, y or
// z, w of block offset / 2). The values do not depend on the kernel's form. The CPU form keeps the last
// block a call site drew (philox_memo, one per call site, declared before the loop over outputs), so a
// work-item walking a contiguous chunk runs one Philox per block instead of one per element: Philox was
// most of a fused relu + dropout kernel's time. The helpers are always inlined: left as calls (with Philox
// inside) they kept the loop scalar (a compiled dropout of 1M floats 7.5 -> 2.5 ms).
inline __attribute__((always_inline)) uint4 tocl_block(long seed, ulong block, philox_memo* memo) {
  return memo == 0 ? draw_block((ulong)seed, block) : draw_block_memo((ulong)seed, block, memo);
}
inline __attribute__((always_inline)) float tocl_u24(uint bits) { return (float)(bits & 0xffffffu) * (1.0f / 16777216.0f); }

inline __attribute__((always_inline)) float tocl_rand_at(long seed, long offset, philox_memo* memo) {
  const uint4 r = tocl_block(seed, (ulong)offset >> 2, memo);
  const uint lane = (uint)offset & 3u;
  return tocl_u24(block_word(r, lane));
}
// Words (x, y) or (z, w) of block offset / 2, as two uints (a uint2 select is a vector operation, which PoCL's
// vectoriser does not widen).
inline __attribute__((always_inline)) void tocl_pair_at(long seed, long offset, philox_memo* memo, uint* lo, uint* hi) {
  const uint4 r = tocl_block(seed, (ulong)offset >> 1, memo);
  const bool second = ((uint)offset & 1u) != 0;
  *lo = second ? r.z : r.x;
  *hi = second ? r.w : r.y;
}
inline __attribute__((always_inline)) float tocl_randn_at(long seed, long offset, philox_memo* memo) {
  uint w0, w1;
  tocl_pair_at(seed, offset, memo, &w0, &w1);
  const float u1 = (float)((w0 & 0xffffffu) + 1u) * (1.0f / 16777216.0f);  // (0, 1]: log stays finite
  const float u2 = tocl_u24(w1);
  float c, s;
  tocl_cos_sin_turn(u2, &c, &s);
  return sqrt(-2.0f * log(u1)) * c;
}
inline __attribute__((always_inline)) long tocl_randint64_at(long seed, long offset, long low, long high, philox_memo* memo) {
  uint w0, w1;
  tocl_pair_at(seed, offset, memo, &w0, &w1);
  const ulong bits = ((ulong)w1 << 32) | (ulong)w0;
  return low + (long)(bits % (ulong)(high - low));
}

// The tiles of compiled products with their epilogues (CPU-class devices: TOCL_GEMM_VW defined).
#include "inductor_gemm.cl"
