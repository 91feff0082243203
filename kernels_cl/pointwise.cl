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
  const IDX_T i = (IDX_T)get_global_id(0);
  if (i >= n) return;
  const IDX_T lin = i;
  LOAD_OPERANDS(i, i, i)
  STORE_OUT(out, out_offset + i, (EXPR));
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
  for (SIDX_T j = 0; j < len; ++j) {                                     \
    const IDX_T lin = lin0 + (IDX_T)j;                                   \
    LOAD_OPERANDS(o1 + (SA) * j, o2 + (SB) * j, o3 + (SC) * j)           \
    STORE_OUT(out, out_offset + o0 + j, (EXPR));                         \
  }
__kernel void pointwise_lines(__global OUT_T* out, ulong out_offset IN0_PARAM IN1_PARAM IN2_PARAM,
                              IDX_T n, TiledGeometry g SCALAR_PARAMS, long runs, long chunks, long run,
                              int steps) {
  const long r = get_global_id(0);
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
