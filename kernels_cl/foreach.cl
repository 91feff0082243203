// Multi-tensor apply for the _foreach_* operators (aten/foreach.cpp), one program
// per dtype (aten/kernel_program.h prepends T_T, LOAD_T, STORE_T, ACC and WG).
//
// OpenCL 1.2 has no arrays of pointers, so a launch takes up to NT tensors per
// list as separate buffer arguments (LIST(p): p0..p15 and their element offsets
// as a uint16). Tensor t owns work items [istart[t], istart[t+1]) (the host's
// prefix sum of ceil(n[t] / PER_ITEM)); unused slots start at `total`. Item k of
// tensor t handles elements k, k + count, k + 2 count, ... (count = its number of
// items), so neighbouring items touch neighbouring elements.
//
// Each operation is its own kernel; all share one of two signatures:
//   unary:  (LIST(o), LIST(a), HEAD)            out[i] = f(a[i])
//   binary: (LIST(o), LIST(a), LIST(b), HEAD)   out[i] = f(a[i], b[i]); ternary
//           operations are in place and read their first operand from o.
// HEAD carries the per-tensor scalars (sc), alpha, and an optional device scalar
// `ts` that replaces sc when use_ts is set (the .Tensor overloads).

#define NT 16
#define PER_ITEM 4

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define ACC16 CAT(ACC, 16)

#define LIST(p)                                                                                       \
  __global T_T *p##0, __global T_T *p##1, __global T_T *p##2, __global T_T *p##3, __global T_T *p##4, \
      __global T_T *p##5, __global T_T *p##6, __global T_T *p##7, __global T_T *p##8,                 \
      __global T_T *p##9, __global T_T *p##10, __global T_T *p##11, __global T_T *p##12,              \
      __global T_T *p##13, __global T_T *p##14, __global T_T *p##15, uint16 p##_off

#define HEAD                                                                                          \
  uint16 istart_v, uint16 n_v, uint total, ACC16 sc_v, ACC alpha, __global const T_T *ts, ulong ts_off, \
      int use_ts

// Pointer and element offset of tensor t of list p: p_ptr, p_base.
#define SEL(p)                                                      \
  __global T_T *p##_ptr = p##0;                                     \
  switch (t) {                                                      \
    case 1: p##_ptr = p##1; break;                                  \
    case 2: p##_ptr = p##2; break;                                  \
    case 3: p##_ptr = p##3; break;                                  \
    case 4: p##_ptr = p##4; break;                                  \
    case 5: p##_ptr = p##5; break;                                  \
    case 6: p##_ptr = p##6; break;                                  \
    case 7: p##_ptr = p##7; break;                                  \
    case 8: p##_ptr = p##8; break;                                  \
    case 9: p##_ptr = p##9; break;                                  \
    case 10: p##_ptr = p##10; break;                                \
    case 11: p##_ptr = p##11; break;                                \
    case 12: p##_ptr = p##12; break;                                \
    case 13: p##_ptr = p##13; break;                                \
    case 14: p##_ptr = p##14; break;                                \
    case 15: p##_ptr = p##15; break;                                \
  }                                                                 \
  uint p##_offs[NT];                                                \
  vstore16(p##_off, 0, p##_offs);                                   \
  const uint p##_base = p##_offs[t];

// Finds this item's tensor t, its index k among the tensor's `count` items, the
// tensor's size n and its scalar s.
#define LOCATE(start_v, last)                                       \
  const uint gid = get_global_id(0);                                \
  if (gid >= (last)) return;                                        \
  uint is[NT], ns[NT];                                              \
  vstore16(start_v, 0, is);                                         \
  vstore16(n_v, 0, ns);                                             \
  int t = 0;                                                        \
  for (int j = 1; j < NT; ++j)                                      \
    if (gid >= is[j]) t = j;                                        \
  const uint count = (t + 1 < NT ? is[t + 1] : (last)) - is[t];     \
  const uint k = gid - is[t];                                       \
  const uint n = ns[t];

#define SCALAR                                                      \
  ACC scs[NT];                                                      \
  vstore16(sc_v, 0, scs);                                           \
  const ACC s = use_ts ? (ACC)LOAD_T(ts, ts_off) : scs[t];

#define FOR_ELEMENTS                                                \
  for (uint j = 0; j < PER_ITEM; ++j) {                             \
    const uint i = k + j * count;                                   \
    if (i >= n) break;

#define UNARY(name, expr)                                                   \
  __kernel void foreach_##name(LIST(o), LIST(a), HEAD) {                    \
    LOCATE(istart_v, total)                                                 \
    SCALAR                                                                  \
    SEL(o)                                                                  \
    SEL(a)                                                                  \
    FOR_ELEMENTS                                                            \
    const ACC x = (ACC)LOAD_T(a_ptr, a_base + i);                           \
    STORE_T(o_ptr, o_base + i, (expr));                                     \
    }                                                                       \
  }

#define BINARY(name, expr)                                                  \
  __kernel void foreach_##name(LIST(o), LIST(a), LIST(b), HEAD) {           \
    LOCATE(istart_v, total)                                                 \
    SCALAR                                                                  \
    SEL(o)                                                                  \
    SEL(a)                                                                  \
    SEL(b)                                                                  \
    FOR_ELEMENTS                                                            \
    const ACC x = (ACC)LOAD_T(a_ptr, a_base + i);                           \
    const ACC y = (ACC)LOAD_T(b_ptr, b_base + i);                           \
    STORE_T(o_ptr, o_base + i, (expr));                                     \
    }                                                                       \
  }

// In place: x is read from o.
#define TERNARY(name, expr)                                                 \
  __kernel void foreach_##name(LIST(o), LIST(a), LIST(b), HEAD) {           \
    LOCATE(istart_v, total)                                                 \
    SCALAR                                                                  \
    SEL(o)                                                                  \
    SEL(a)                                                                  \
    SEL(b)                                                                  \
    FOR_ELEMENTS                                                            \
    const ACC x = (ACC)LOAD_T(o_ptr, o_base + i);                           \
    const ACC y = (ACC)LOAD_T(a_ptr, a_base + i);                           \
    const ACC z = (ACC)LOAD_T(b_ptr, b_base + i);                           \
    STORE_T(o_ptr, o_base + i, (expr));                                     \
    }                                                                       \
  }

// The CPU kernels' formulas (ATen's BinaryOpsKernel.cpp, PointwiseOpsKernel.cpp, Lerp.h).
inline ACC lerp_acc(ACC self, ACC end, ACC w) {
  return fabs(w) < (ACC)0.5 ? self + w * (end - self) : end - (end - self) * ((ACC)1 - w);
}
// maximum/minimum (and clamp_min/clamp_max, which the foreach forms are) propagate a NaN from either side.
#define MAXIMUM(x, y) (isnan(x) ? (x) : isnan(y) ? (y) : fmax((x), (y)))
#define MINIMUM(x, y) (isnan(x) ? (x) : isnan(y) ? (y) : fmin((x), (y)))

UNARY(add_scalar, x + alpha * s)
UNARY(mul_scalar, x * s)
UNARY(div_scalar, x / s)
UNARY(clamp_min_scalar, MAXIMUM(x, s))
UNARY(clamp_max_scalar, MINIMUM(x, s))
UNARY(neg, -x)
UNARY(sqrt, sqrt(x))
UNARY(copy, x)
UNARY(zero, (ACC)0)

BINARY(add_list, x + alpha * y)
BINARY(mul_list, x * y)
BINARY(div_list, x / y)
BINARY(maximum_list, MAXIMUM(x, y))
BINARY(minimum_list, MINIMUM(x, y))
BINARY(lerp_scalar, lerp_acc(x, y, s))

TERNARY(addcmul, x + s * y * z)
TERNARY(addcdiv, x + s * y / z)
TERNARY(lerp_list, lerp_acc(x, y, z))

// _foreach_norm in two launches per NT tensors. Partial: every tensor's item
// range is a whole number of work groups (the host pads it), a group reduces its
// items into partial[group]. Final: group t reduces tensor t's partials
// [gstart[t], gstart[t+1]) and writes the norm. ord: 0 = inf, 1, 2.
inline ACC norm_step(ACC acc, ACC v, int ord) {
  v = fabs(v);
  if (ord == 0) return (isnan(v) || v > acc) ? v : acc;
  return ord == 1 ? acc + v : acc + v * v;
}
inline ACC norm_combine(ACC a, ACC b, int ord) {
  if (ord == 0) return (isnan(b) || b > a) ? b : a;
  return a + b;
}
#define GROUP_REDUCE(acc)                                            \
  __local ACC scratch[WG];                                           \
  const uint lid = get_local_id(0);                                  \
  scratch[lid] = acc;                                                \
  barrier(CLK_LOCAL_MEM_FENCE);                                      \
  for (uint w = WG / 2; w > 0; w /= 2) {                             \
    if (lid < w) scratch[lid] = norm_combine(scratch[lid], scratch[lid + w], ord); \
    barrier(CLK_LOCAL_MEM_FENCE);                                    \
  }

__kernel void foreach_norm_partial(LIST(a), uint16 istart_v, uint16 n_v, uint total, int ord,
                                   __global ACC *partial, ulong partial_off) {
  // Every group lies inside the launch (total is a multiple of WG), so no item returns before the barriers.
  const uint gid = get_global_id(0);
  uint is[NT], ns[NT];
  vstore16(istart_v, 0, is);
  vstore16(n_v, 0, ns);
  int t = 0;
  for (int j = 1; j < NT; ++j)
    if (gid >= is[j]) t = j;
  const uint count = (t + 1 < NT ? is[t + 1] : total) - is[t];
  const uint k = gid - is[t];
  const uint n = gid < total ? ns[t] : 0;
  SEL(a)
  ACC acc = 0;
  FOR_ELEMENTS
  acc = norm_step(acc, (ACC)LOAD_T(a_ptr, a_base + i), ord);
  }
  GROUP_REDUCE(acc)
  if (lid == 0 && gid < total) partial[partial_off + get_group_id(0)] = scratch[0];
}

__kernel void foreach_norm_final(__global const ACC *partial, ulong partial_off, uint16 gstart_v, uint gtotal,
                                 uint used, int ord, LIST(o)) {
  const int t = get_group_id(0);
  uint gs[NT];
  vstore16(gstart_v, 0, gs);
  const uint begin = gs[t], end = t + 1 < NT ? gs[t + 1] : gtotal;
  ACC acc = 0;
  for (uint g = begin + get_local_id(0); g < end; g += WG) acc = norm_combine(acc, partial[partial_off + g], ord);
  GROUP_REDUCE(acc)
  if (lid == 0 && t < (int)used) {
    SEL(o)
    STORE_T(o_ptr, o_base, ord == 2 ? sqrt(scratch[0]) : scratch[0]);
  }
}
