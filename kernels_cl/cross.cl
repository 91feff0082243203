// torch.linalg.cross (aten/native/vector_products.cpp): out = a x b along a dim of size 3. The host sees
// the broadcast operands as (outer, 3, inner) with a stride for each (a view where their dims collapse so,
// else a contiguous copy) and the output as contiguous (outer, 3, inner). One work-item per vector, the
// components in CPU's form (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0) as CPU computes them: each product
// rounded to T (ROUND_T, from the host: CPU multiplies half and bfloat16 in their own precision) and not
// fused with the subtraction (CPU's kernel is plain C++ arithmetic).
#pragma OPENCL FP_CONTRACT OFF

typedef struct {
  long inner;
  long a_outer, a_k, a_inner;  // a's strides, in elements
  long b_outer, b_k, b_inner;
} CrossShape;

__kernel void linalg_cross(__global T_T* out, ulong out_offset, __global const T_T* a, ulong a_offset,
                           __global const T_T* b, ulong b_offset, CrossShape s, long total) {
  const long e = get_global_id(0);
  if (e >= total) return;
  const long o = e / s.inner, i = e - o * s.inner;
  const ulong pa = a_offset + o * s.a_outer + i * s.a_inner, pb = b_offset + o * s.b_outer + i * s.b_inner;
  const ACC a0 = LOAD_T(a, pa), a1 = LOAD_T(a, pa + s.a_k), a2 = LOAD_T(a, pa + 2 * s.a_k);
  const ACC b0 = LOAD_T(b, pb), b1 = LOAD_T(b, pb + s.b_k), b2 = LOAD_T(b, pb + 2 * s.b_k);
  const ulong po = out_offset + o * 3 * s.inner + i;
  STORE_T(out, po, ROUND_T(a1 * b2) - ROUND_T(a2 * b1));
  STORE_T(out, po + s.inner, ROUND_T(a2 * b0) - ROUND_T(a0 * b2));
  STORE_T(out, po + 2 * s.inner, ROUND_T(a0 * b1) - ROUND_T(a1 * b0));
}
