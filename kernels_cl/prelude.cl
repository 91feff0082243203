// Definitions every generated program starts with.
#ifdef TOCL_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

// Vectors of 16 floats passed by value between helpers (vec16.cl, attention.cl's rows form): on x86
// without AVX-512 clang notes that this "changes the ABI" (-Wpsabi). Caller and callee always compile
// together in one program, so no ABI can differ: the note is silenced rather than shown to every user.
#if defined(__clang__) && defined(__has_warning)
#if __has_warning("-Wpsabi")  // NVIDIA's clang-based compiler does not know the group
#pragma clang diagnostic ignored "-Wpsabi"
#endif
#endif

// Work-items that share one run of the CPU forms' line kernels (runtime/kernel_forms.h's line_lanes, set by
// -DTOCL_LINE_LANES): 1 where the implementation vectorises a work-item's own loop (PoCL), 16 where it puts
// consecutive work-items in the lanes of a vector (Intel's CPU runtime). A run's work-items take its elements
// RUN_LANE(), RUN_LANE() + TOCL_LINE_LANES, ...; the host's enqueue_runs (runtime/launch.h) launches a work-item
// a run, or TOCL_LINE_LANES (dim 0) by runs (dim 1), whose run is uniform across a vector.
#ifndef TOCL_LINE_LANES
#define TOCL_LINE_LANES 1
#endif
// Work-items a group of that 2-D launch (kernels that share a run's lanes through local memory size by it).
#define RUN_GROUP 256
#if TOCL_LINE_LANES == 1
#define RUN_ID() ((long)get_global_id(0))
#define RUN_LANE() 0
#else
#define RUN_ID() ((long)get_global_id(1))
#define RUN_LANE() ((int)get_local_id(0))
#endif

// A loop over [first, end) that indexes a by-value geometry argument. Where work-items are vectorised (Intel's
// CPU runtime), an argument indexed by a variable was copied for every work-item (cat of two 1024x1024 floats:
// 1044 us, 172 reading the same through a pointer); unrolled to its constant bound MAX, every index is a
// constant and no copy is made. PoCL keeps the plain loop.
#if TOCL_LINE_LANES > 1
#define FOR_RANGE(i, first, end, MAX) _Pragma("unroll") for (int i = 0; i < (MAX); ++i) if (i >= (first) && i < (end))
#else
#define FOR_RANGE(i, first, end, MAX) for (int i = (first); i < (end); ++i)
#endif

// Helpers are static: a program then holds only those its kernels call. An external one is emitted
// whether called or not, with every builtin it calls linked in; measured on PoCL, the transformer's
// programs held 440 KB of bitcode each instead of 64 KB, which a warm start reads back and a cold one
// compiles.

// An index error in a record of runtime/deferred_errors.h's layout (an int flag, an unused int, then the
// index and the size as longs): the first kernel to set the flag writes them.
static inline void tocl_record_index_error(__global int* record, long index, long size) {
  if (atomic_cmpxchg((volatile __global int*)record, 0, 1) == 0) {
    __global long* seen = (__global long*)(record + 2);
    seen[0] = index;
    seen[1] = size;
  }
}

// bfloat16 is stored as the high 16 bits of a float; math is done in float.
static inline float bf16_to_float(ushort b) { return as_float(((uint)b) << 16); }
static inline ushort float_to_bf16(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)0x7fc0;  // NaN stays a quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                            // round to nearest even
  return (ushort)(u >> 16);
}
#ifdef TOCL_FP64
// erfinv's tails in double: Newton steps on log(erfc(|x|)) = log(1 - |y|) from `start` (erf(x) - y is all
// cancellation near +-1; log(erfc) is nearly quadratic, and 1 - |y| is exact for |y| > 0.5).
static inline double tocl_erfinv_tail(double y, double start, int steps) {
  const double log_t = log(1.0 - fabs(y));
  double z = fabs(start);
  for (int k = 0; k < steps; ++k) {
    const double e = erfc(z);
    z += (log(e) - log_t) * e / (M_2_SQRTPI * exp(-z * z));
  }
  return copysign(z, y);
}
#endif
static inline float round_to_bf16(float f) { return bf16_to_float(float_to_bf16(f)); }
// f rounded to the nearest half (ties to even), as a float: beyond 65504 (from 65520) inf; below 2^-14 to a
// multiple of 2^-24 (half's subnormals). Without cl_khr_fp16 no half value can live in a variable.
static inline float round_to_half(float f) {
  const float a = fabs(f);
  if (!(a < 65520.0f)) return isnan(f) ? f : copysign(INFINITY, f);
  if (a < 6.103515625e-05f) return rint(f * 16777216.0f) * 5.9604644775390625e-08f;
  uint u = as_uint(f);
  u += 0xfffu + ((u >> 13) & 1u);  // round the 23-bit mantissa to 10 bits, to nearest even
  return as_float(u & ~0x1fffu);
}

// Stores into integer types: a float or double out of the integer's range (or NaN) converts as x86 CPU
// PyTorch converts it, to the smallest int32 (int8, int16 and int32 destinations, which keep its low bits)
// or int64 (int64 and uint8 destinations, as c10's cast to uint8 goes through int64). C and OpenCL C leave
// such a conversion undefined; NVIDIA's saturates, so a device would otherwise disagree with CPU (and PoCL).
// Integer sources convert as C does (keeping the low bits).
#define TOCL_CONVERT_INTEGERS(NAME, R)                                           \
  static inline __attribute__((overloadable)) R NAME(char x) { return (R)x; }    \
  static inline __attribute__((overloadable)) R NAME(uchar x) { return (R)x; }   \
  static inline __attribute__((overloadable)) R NAME(short x) { return (R)x; }   \
  static inline __attribute__((overloadable)) R NAME(ushort x) { return (R)x; }  \
  static inline __attribute__((overloadable)) R NAME(int x) { return (R)x; }     \
  static inline __attribute__((overloadable)) R NAME(uint x) { return (R)x; }    \
  static inline __attribute__((overloadable)) R NAME(long x) { return (R)x; }    \
  static inline __attribute__((overloadable)) R NAME(ulong x) { return (R)x; }
TOCL_CONVERT_INTEGERS(tocl_to_i32, int)
TOCL_CONVERT_INTEGERS(tocl_to_i64, long)
static inline __attribute__((overloadable)) int tocl_to_i32(float x) {
  return x >= -2147483648.0f && x < 2147483648.0f ? (int)x : INT_MIN;
}
static inline __attribute__((overloadable)) long tocl_to_i64(float x) {
  return x >= -9223372036854775808.0f && x < 9223372036854775808.0f ? (long)x : LONG_MIN;
}
#ifdef TOCL_FP64
static inline __attribute__((overloadable)) int tocl_to_i32(double x) {
  return x >= -2147483648.0 && x < 2147483648.0 ? (int)x : INT_MIN;
}
static inline __attribute__((overloadable)) long tocl_to_i64(double x) {
  return x >= -9223372036854775808.0 && x < 9223372036854775808.0 ? (long)x : LONG_MIN;
}
#endif
#include "float_math.cl"
