// Multi-tensor apply for the _foreach_* operators (aten/native/foreach.cpp), one program
// per dtype (aten/kernel_support/kernel_program.h prepends T_T, LOAD_T, STORE_T, ACC and WG).
//
// OpenCL 1.2 has no arrays of pointers, so a launch takes up to NT tensors per
// list as separate buffer arguments (LIST(p): p0..p15 and their element offsets
// as a uint16). Tensor t owns work items [istart[t], istart[t+1]) (the host's
// prefix sum of ceil(n[t] / PER_ITEM) rounded up to whole work groups of WG);
// unused slots start at `total`. Item k of tensor t handles its elements
// [k PER_ITEM, (k + 1) PER_ITEM).
//
// Each operation is its own kernel; all share one of two signatures:
//   unary:  (LIST(o), LIST(a), HEAD)            out[i] = f(a[i])
//   binary: (LIST(o), LIST(a), LIST(b), HEAD)   out[i] = f(a[i], b[i]); ternary
//           operations are in place and read their first operand from o.
// HEAD carries the per-tensor scalars (sc), alpha, an optional device scalar
// `ts` that replaces sc when use_ts is set (the .Tensor overloads), and whether
// the list a is the list o (in place).

#define NT 16
// PER_ITEM (elements per work-item) comes from the host: runtime/kernel_forms.h's foreach_per_item.

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
      int use_ts, int inplace

// Component t of a 16-vector, and pointer t of a list, without private arrays
// (which keep PoCL from vectorizing over work items): t is uniform in a group.
#define PICK4(v, t, a, b, c, d) ((t) < (a) + 2 ? ((t) == (a) ? v##a : v##b) : ((t) == (c) ? v##c : v##d))
#define PICK16(v, t)                                                                   \
  ((t) < 8 ? ((t) < 4 ? PICK4(v, t, 0, 1, 2, 3) : PICK4(v, t, 4, 5, 6, 7))            \
           : ((t) < 12 ? PICK4(v, t, 8, 9, 10, 11) : PICK4(v, t, 12, 13, 14, 15)))
#define COMPONENT(v, t) PICK16(v.s, t)
// v.s##10 is not a component name: hex digits past 9.
#define s10 sa
#define s11 sb
#define s12 sc
#define s13 sd
#define s14 se
#define s15 sf

// Pointer and element offset of tensor t of list p: p_ptr, p_base.
#define SEL(p)                                                      \
  __global T_T *p##_ptr = PICK16(p, t);                             \
  const uint p##_base = COMPONENT(p##_off, t);

// Finds this item's tensor t (the number of later slots that start at or before
// its group: starts are sorted), its index k among the tensor's items,
// the tensor's size n. Every tensor's items are whole work groups of WG (the
// host pads them), so t is found from the group id: uniform across the group
// (the selects below are uniform; GPU groups stay convergent).
#define LOCATE(start_v, last)                                       \
  const uint gid = get_global_id(0);                                \
  if (gid >= (last)) return;                                        \
  const uint g0 = get_group_id(0) * WG;                             \
  const int t = (g0 >= start_v.s1) + (g0 >= start_v.s2) + (g0 >= start_v.s3) + (g0 >= start_v.s4) + \
                (g0 >= start_v.s5) + (g0 >= start_v.s6) + (g0 >= start_v.s7) + (g0 >= start_v.s8) + \
                (g0 >= start_v.s9) + (g0 >= start_v.sa) + (g0 >= start_v.sb) + (g0 >= start_v.sc) + \
                (g0 >= start_v.sd) + (g0 >= start_v.se) + (g0 >= start_v.sf);                      \
  const uint t_start = COMPONENT(start_v, t);                       \
  const uint k = gid - t_start;                                     \
  const uint n = COMPONENT(n_v, t);

#define SCALAR const ACC s = use_ts ? (ACC)LOAD_T(ts, ts_off) : COMPONENT(sc_v, t);

// Item k handles PER_ITEM elements. Where an implementation vectorises a work-item's loop (PoCL: TOCL_LINE_LANES
// 1), the consecutive ones from k * PER_ITEM, a plain loop (PoCL does not vectorize this kernel over items, so
// CPUs get a large PER_ITEM). Where it vectorises across items (Intel's CPU runtime), a group's items share its
// PER_ITEM * WG elements, item l of the group taking l, l + WG, ...: each address is a uniform part plus the
// local id, which the compiler turns into vector loads (an item's own run made every load a gather: AdamW's
// foreach step 4.3x PoCL's time). In place (o is a), x is read from o: a loop over two equal pointers would
// fail the vectorizer's run-time overlap check and run scalar.
#if TOCL_LINE_LANES > 1
#define ITEM_STEP WG
#define ITEM_INDEX ulong
#define ITEM_RANGE                                                                \
  const ulong group_first = (ulong)(g0 - t_start) * PER_ITEM;                     \
  const ulong first = group_first + get_local_id(0);                              \
  const ulong last = min(group_first + (ulong)PER_ITEM * WG, (ulong)n);
#else
#define ITEM_STEP 1
#define ITEM_INDEX uint
#define ITEM_RANGE                                                                \
  const uint first = k * PER_ITEM;                                                \
  const uint last = min(first + PER_ITEM, n);
#endif
#define FOR_ELEMENTS \
  ITEM_RANGE         \
  for (ITEM_INDEX i = first; i < last; i += ITEM_STEP)

#define UNARY(name, expr)                                                   \
  __kernel void foreach_##name(LIST(o), LIST(a), HEAD) {                    \
    LOCATE(istart_v, total)                                                 \
    SCALAR                                                                  \
    SEL(o)                                                                  \
    SEL(a)                                                                  \
    if (inplace) {                                                          \
      FOR_ELEMENTS {                                                        \
        const ACC x = (ACC)LOAD_T(o_ptr, o_base + i);                       \
        STORE_T(o_ptr, o_base + i, (expr));                                 \
      }                                                                     \
    } else {                                                                \
      FOR_ELEMENTS {                                                        \
        const ACC x = (ACC)LOAD_T(a_ptr, a_base + i);                       \
        STORE_T(o_ptr, o_base + i, (expr));                                 \
      }                                                                     \
    }                                                                       \
  }

#define BINARY(name, expr)                                                  \
  __kernel void foreach_##name(LIST(o), LIST(a), LIST(b), HEAD) {           \
    LOCATE(istart_v, total)                                                 \
    SCALAR                                                                  \
    SEL(o)                                                                  \
    SEL(a)                                                                  \
    SEL(b)                                                                  \
    if (inplace) {                                                          \
      FOR_ELEMENTS {                                                        \
        const ACC x = (ACC)LOAD_T(o_ptr, o_base + i);                       \
        const ACC y = (ACC)LOAD_T(b_ptr, b_base + i);                       \
        STORE_T(o_ptr, o_base + i, (expr));                                 \
      }                                                                     \
    } else {                                                                \
      FOR_ELEMENTS {                                                        \
        const ACC x = (ACC)LOAD_T(a_ptr, a_base + i);                       \
        const ACC y = (ACC)LOAD_T(b_ptr, b_base + i);                       \
        STORE_T(o_ptr, o_base + i, (expr));                                 \
      }                                                                     \
    }                                                                       \
  }

// Always in place: x is read from o.
#define TERNARY(name, expr)                                                 \
  __kernel void foreach_##name(LIST(o), LIST(a), LIST(b), HEAD) {           \
    LOCATE(istart_v, total)                                                 \
    SCALAR                                                                  \
    SEL(o)                                                                  \
    SEL(a)                                                                  \
    SEL(b)                                                                  \
    FOR_ELEMENTS {                                                          \
      const ACC x = (ACC)LOAD_T(o_ptr, o_base + i);                         \
      const ACC y = (ACC)LOAD_T(a_ptr, a_base + i);                         \
      const ACC z = (ACC)LOAD_T(b_ptr, b_base + i);                         \
      STORE_T(o_ptr, o_base + i, (expr));                                   \
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
// An item's run into `acc` with ord a constant: eight independent accumulators, which the compiler turns
// into one vector (a single one is a serial chain of adds, as float addition does not reassociate).
#define NORM_RUN(acc, ORD)                                                                    \
  {                                                                                           \
    ITEM_RANGE                                                                                \
    ACC r0 = 0, r1 = 0, r2 = 0, r3 = 0, r4 = 0, r5 = 0, r6 = 0, r7 = 0;                       \
    const ITEM_INDEX L = ITEM_STEP;                                                           \
    ITEM_INDEX i = first;                                                                     \
    for (; i + 7 * L < last; i += 8 * L) {                                                    \
      r0 = norm_step(r0, (ACC)LOAD_T(a_ptr, a_base + i), ORD);                                \
      r1 = norm_step(r1, (ACC)LOAD_T(a_ptr, a_base + i + L), ORD);                            \
      r2 = norm_step(r2, (ACC)LOAD_T(a_ptr, a_base + i + 2 * L), ORD);                        \
      r3 = norm_step(r3, (ACC)LOAD_T(a_ptr, a_base + i + 3 * L), ORD);                        \
      r4 = norm_step(r4, (ACC)LOAD_T(a_ptr, a_base + i + 4 * L), ORD);                        \
      r5 = norm_step(r5, (ACC)LOAD_T(a_ptr, a_base + i + 5 * L), ORD);                        \
      r6 = norm_step(r6, (ACC)LOAD_T(a_ptr, a_base + i + 6 * L), ORD);                        \
      r7 = norm_step(r7, (ACC)LOAD_T(a_ptr, a_base + i + 7 * L), ORD);                        \
    }                                                                                         \
    for (; i < last; i += L) r0 = norm_step(r0, (ACC)LOAD_T(a_ptr, a_base + i), ORD);         \
    acc = norm_combine(norm_combine(norm_combine(r0, r1, ORD), norm_combine(r2, r3, ORD), ORD), \
                       norm_combine(norm_combine(r4, r5, ORD), norm_combine(r6, r7, ORD), ORD), ORD); \
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
  // The launch is whole groups (total is a multiple of WG), so every item reaches the barriers.
  LOCATE(istart_v, total)
  SEL(a)
  ACC acc = 0;
  if (ord == 2) {
    NORM_RUN(acc, 2)
  } else if (ord == 1) {
    NORM_RUN(acc, 1)
  } else {
    NORM_RUN(acc, 0)
  }
  GROUP_REDUCE(acc)
  if (lid == 0 && gid < total) partial[partial_off + get_group_id(0)] = scratch[0];
}

__kernel void foreach_norm_final(__global const ACC *partial, ulong partial_off, uint16 gstart_v, uint gtotal,
                                 uint used, int ord, LIST(o)) {
  const int t = get_group_id(0);
  const uint begin = COMPONENT(gstart_v, t), end = t + 1 < NT ? COMPONENT(gstart_v, t + 1) : gtotal;
  ACC acc = 0;
  for (uint g = begin + get_local_id(0); g < end; g += WG) acc = norm_combine(acc, partial[partial_off + g], ord);
  GROUP_REDUCE(acc)
  if (lid == 0 && t < (int)used) {
    SEL(o)
    STORE_T(o_ptr, o_base, ord == 2 ? sqrt(scratch[0]) : scratch[0]);
  }
}
