// Pointwise kernels, generated per operator and dtype signature. The host
// (aten/native/pointwise.cpp) prepends: the prelude and pointwise_functions.cl, and
//   C_T, CONV_C(x)           the compute type and the conversion into it
//   OUT_T, STORE_OUT         the output operand (operand_defines in cl_types.cpp)
//   IN<k>_T, LOAD_IN<k>      inputs 0..NIN-1; IN<k>_SCALAR when input k is a host scalar; IN<k>_ROUND
//                            rounds an input of another dtype to a half or bfloat16 common dtype
//   IDX_T, SIDX_T            uint/int, or ulong/long where sizes need 64 bits, and
//                            tiled_index.cl (NOPS 4: out, in0..in2), the strided index scheme
//   NSCALAR                  scalar arguments s0.. (C_T)
//   EXPR                     the expression over a, b, c, s0, s1, s2 and lin, the
//                            element's linear index in the iteration (arange uses it)
//                            and n, the element count (linspace uses it)
// Sizes and strides are arguments, so one program serves every shape.
#if NIN >= 1
#if IN0_SCALAR
#define IN0_PARAM , C_T in0_value
#define IN0_AT(i) in0_value
#else
#define IN0_PARAM , __global const IN0_T* in0, ulong in0_offset
#define IN0_AT(i) IN0_ROUND(CONV_C(LOAD_IN0(in0, in0_offset + (i))))
#endif
#else
#define IN0_PARAM
#endif

#if NIN >= 2
#if IN1_SCALAR
#define IN1_PARAM , C_T in1_value
#define IN1_AT(i) in1_value
#else
#define IN1_PARAM , __global const IN1_T* in1, ulong in1_offset
#define IN1_AT(i) IN1_ROUND(CONV_C(LOAD_IN1(in1, in1_offset + (i))))
#endif
#else
#define IN1_PARAM
#endif

#if NIN >= 3
#if IN2_SCALAR
#define IN2_PARAM , C_T in2_value
#define IN2_AT(i) in2_value
#else
#define IN2_PARAM , __global const IN2_T* in2, ulong in2_offset
#define IN2_AT(i) IN2_ROUND(CONV_C(LOAD_IN2(in2, in2_offset + (i))))
#endif
#else
#define IN2_PARAM
#endif

#if NSCALAR == 0
#define SCALAR_PARAMS
#elif NSCALAR == 1
#define SCALAR_PARAMS , C_T s0
#elif NSCALAR == 2
#define SCALAR_PARAMS , C_T s0, C_T s1
#else
#define SCALAR_PARAMS , C_T s0, C_T s1, C_T s2
#endif

#define LOAD_OPERANDS(i0, i1, i2)  \
  LOAD_A(i0) LOAD_B(i1) LOAD_C(i2)
#if NIN >= 1
#define LOAD_A(i) const C_T a = IN0_AT(i);
#else
#define LOAD_A(i)
#endif
#if NIN >= 2
#define LOAD_B(i) const C_T b = IN1_AT(i);
#else
#define LOAD_B(i)
#endif
#if NIN >= 3
#define LOAD_C(i) const C_T c = IN2_AT(i);
#else
#define LOAD_C(i)
#endif

__kernel void pointwise_contiguous(__global OUT_T* out, ulong out_offset IN0_PARAM IN1_PARAM IN2_PARAM,
                                   IDX_T n SCALAR_PARAMS) {
  // Addresses from get_global_id's own size_t: from an index cut to 32 bits, which might wrap between
  // neighbouring work-items, Intel's compiler made every load a gather (x + y of 1M floats: 436 us, 84 so).
  const size_t at = get_global_id(0);
  const IDX_T lin = (IDX_T)at;
  if (lin >= n) return;
  LOAD_OPERANDS(at, at, at)
  STORE_OUT(out, out_offset + at, (EXPR));
}

#define POINTWISE_STRIDED(NAME, OFFSETS)                                                   \
  __kernel void NAME(__global OUT_T* out, ulong out_offset IN0_PARAM IN1_PARAM IN2_PARAM,  \
                     IDX_T n, TiledGeometry g SCALAR_PARAMS) {                             \
    TILED_INDICES(g)                                                                        \
    OFFSETS                                                                                 \
    if (!in_shape) return;                                                                  \
    const IDX_T lin = tiled_linear(&g, i0, i1, i2);                                         \
    LOAD_OPERANDS(o1, o2, o3)                                                               \
    STORE_OUT(out, out_offset + o0, (EXPR));                                                \
  }
POINTWISE_STRIDED(pointwise_strided, TILED_OFFSETS)
POINTWISE_STRIDED(pointwise_strided_nd, TILED_OFFSETS_ND)

#if LINES
// The CPU form of a strided launch whose operands step by one element along iteration dim 0, or not at
// all (a broadcast: x + bias[:, None], a row or column of a mask). A work-item takes a run of up to `run`
// elements of a line along dim 0 and does the other dims' index arithmetic once per run; in the run's
// loop every load is contiguous or one value, so it vectorises (the strided kernel's runtime strides
// kept PoCL's loads scalar: x + w of 1024x1024 floats 0.9 ms, CPU 0.05). `steps` has bit k set where
// input k steps by one (a host scalar counts as not stepping); one loop per combination, chosen once.
#define LINE_LOOP(SA, SB, SC)                                            \
  for (SIDX_T j = RUN_LANE(); j < len; j += TOCL_LINE_LANES) {          \
    const IDX_T lin = lin0 + (IDX_T)j;                                   \
    LOAD_OPERANDS(o1 + (SA) * j, o2 + (SB) * j, o3 + (SC) * j)           \
    STORE_OUT(out, out_offset + o0 + j, (EXPR));                         \
  }
__kernel void pointwise_lines(__global OUT_T* out, ulong out_offset IN0_PARAM IN1_PARAM IN2_PARAM,
                              IDX_T n, TiledGeometry g SCALAR_PARAMS, long runs, long chunks, long run,
                              int steps) {
  const long r = RUN_ID();
  if (r >= runs) return;
  LINE_RUN(r, chunks, run)
#if NIN <= 1
  if (steps & 1) LINE_LOOP(1, 0, 0) else LINE_LOOP(0, 0, 0)
#elif NIN == 2
  switch (steps) {
    case 3: LINE_LOOP(1, 1, 0) break;
    case 1: LINE_LOOP(1, 0, 0) break;
    case 2: LINE_LOOP(0, 1, 0) break;
    default: LINE_LOOP(0, 0, 0)
  }
#else
  switch (steps) {
    case 7: LINE_LOOP(1, 1, 1) break;
    case 3: LINE_LOOP(1, 1, 0) break;
    case 5: LINE_LOOP(1, 0, 1) break;
    case 6: LINE_LOOP(0, 1, 1) break;
    case 1: LINE_LOOP(1, 0, 0) break;
    case 2: LINE_LOOP(0, 1, 0) break;
    case 4: LINE_LOOP(0, 0, 1) break;
    default: LINE_LOOP(0, 0, 0)
  }
#endif
}
#endif

#if VEC16
// The CPU form for float32 expressions marked PointwiseExpr::vectorizes, every operand float32 and
// contiguous: a work-item takes 16 elements as float16 vectors, so that the builtins (exp) run as PoCL's
// vector functions. In the per-element kernel each exp is a scalar library call, and PoCL's work-item loop
// does not vectorise around it: exp of 4M floats took 3.3-3.9 ms, as float16 vectors 1.0-1.5 (a busy
// machine). The expression is the same text, evaluated with C_T = float16 (scalar operands and s0.. stay
// float and broadcast). The last work-item's lanes past n read 0 and store nothing.
#undef C_T
#define C_T float16
#if NIN >= 1 && !IN0_SCALAR
#define V_IN0_PARAM , __global const float* in0, ulong in0_offset
#define V_LOAD_A(i, live) const float16 a = v_load(in0 + in0_offset + (i), live);
#elif NIN >= 1
#define V_IN0_PARAM , float a
#define V_LOAD_A(i, live)
#else
#define V_IN0_PARAM
#define V_LOAD_A(i, live)
#endif
#if NIN >= 2 && !IN1_SCALAR
#define V_IN1_PARAM , __global const float* in1, ulong in1_offset
#define V_LOAD_B(i, live) const float16 b = v_load(in1 + in1_offset + (i), live);
#elif NIN >= 2
#define V_IN1_PARAM , float b
#define V_LOAD_B(i, live)
#else
#define V_IN1_PARAM
#define V_LOAD_B(i, live)
#endif
#if NIN >= 3 && !IN2_SCALAR
#define V_IN2_PARAM , __global const float* in2, ulong in2_offset
#define V_LOAD_C(i, live) const float16 c = v_load(in2 + in2_offset + (i), live);
#elif NIN >= 3
#define V_IN2_PARAM , float c
#define V_LOAD_C(i, live)
#else
#define V_IN2_PARAM
#define V_LOAD_C(i, live)
#endif
#if NSCALAR == 0
#define V_SCALAR_PARAMS
#elif NSCALAR == 1
#define V_SCALAR_PARAMS , float s0
#elif NSCALAR == 2
#define V_SCALAR_PARAMS , float s0, float s1
#else
#define V_SCALAR_PARAMS , float s0, float s1, float s2
#endif
// 16 elements from p, or the first `live` of them and zeros.
inline float16 v_load(__global const float* p, int live) {
  if (live == 16) return vload16(0, p);
  float t[16];
  for (int j = 0; j < 16; ++j) t[j] = j < live ? p[j] : 0.0f;
  return vload16(0, t);
}
__kernel void pointwise_contiguous_v16(__global float* out, ulong out_offset V_IN0_PARAM V_IN1_PARAM V_IN2_PARAM,
                                       IDX_T n V_SCALAR_PARAMS) {
  const IDX_T i = (IDX_T)get_global_id(0) * 16;
  if (i >= n) return;
  const int live = (int)min((IDX_T)16, n - i);
  V_LOAD_A(i, live) V_LOAD_B(i, live) V_LOAD_C(i, live)
  const float16 r = (EXPR);
  __global float* o = out + out_offset + i;
  if (live == 16) {
    vstore16(r, 0, o);
  } else {
    float t[16];
    vstore16(r, 0, t);
    for (int j = 0; j < live; ++j) o[j] = t[j];
  }
}
#endif
