// Definitions every generated program starts with.
#ifdef TOCL_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

// bfloat16 is stored as the high 16 bits of a float; math is done in float.
inline float bf16_to_float(ushort b) { return as_float(((uint)b) << 16); }
inline ushort float_to_bf16(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)0x7fc0;  // NaN stays a quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                            // round to nearest even
  return (ushort)(u >> 16);
}
