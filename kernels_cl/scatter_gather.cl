// Index-driven gathers and scatters over strided tensors: gather / scatter / scatter_add /
// scatter_reduce along a dim (aten/native/scatter_gather.cpp) and advanced indexing, index / index_put_
// (aten/native/advanced_index.cpp). Indices were bounds-checked on the host side (aten/native/index_bounds.cpp).
// Defined by aten/native/scatter_program.cpp: T_T/LOAD_T/STORE_T (data), I_T/LOAD_I (index), ACC (the type
// reductions combine in), ACC_ISNAN, T_SIZE (bytes per element), and TOCL_INT64_ATOMICS where the
// device has cl_khr_int64_base_atomics.
#ifdef TOCL_INT64_ATOMICS
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#endif

// Sizes and element strides of three operands over one iteration shape (row-major, last dim
// fastest), as aten/native/scatter_program.h builds it. Every kernel below says what its operands are.
#define MAX_DIMS 8
typedef struct {
  long ndim;
  long sizes[MAX_DIMS];
  long strides[3][MAX_DIMS];
} Geometry;

// The indexed dims of advanced indexing: index tensor k sits at k * row_stride in the stacked
// index buffer; its values address a dim of `sizes[k]` elements `strides[k]` apart.
#define MAX_INDICES 8
typedef struct {
  long count;
  long row_stride;
  long sizes[MAX_INDICES];
  long strides[MAX_INDICES];
} Indexed;

// Each work-item walks runs of RUN consecutive positions (RUN defined by the host): it decomposes the
// first position (the only divisions), then steps along the innermost dim and carries through the others
// between lines (FOR_EACH_POSITION).

typedef struct {
  long i[MAX_DIMS];  // position in each dim
  long o[3];         // the three operands' element offsets
} Cursor;

inline void cursor_at(const Geometry* g, long e, Cursor* c) {
  c->o[0] = c->o[1] = c->o[2] = 0;
  for (int d = (int)g->ndim - 1; d >= 0; --d) {
    const long s = g->sizes[d];
    const long q = e / s;
    const long i = e - q * s;
    e = q;
    c->i[d] = i;
    c->o[0] += i * g->strides[0][d];
    c->o[1] += i * g->strides[1][d];
    c->o[2] += i * g->strides[2][d];
  }
}

inline void cursor_step(const Geometry* g, Cursor* c) {
  for (int d = (int)g->ndim - 1; d >= 0; --d) {
    c->o[0] += g->strides[0][d];
    c->o[1] += g->strides[1][d];
    c->o[2] += g->strides[2][d];
    if (++c->i[d] < g->sizes[d]) return;
    c->o[0] -= g->strides[0][d] * g->sizes[d];
    c->o[1] -= g->strides[1][d] * g->sizes[d];
    c->o[2] -= g->strides[2][d] * g->sizes[d];
    c->i[d] = 0;
  }
}

// Runs BODY (which reads c.o[0..2]) for every position of [0, total), RUN positions per work-item per turn
// (the host launches ceil(total / RUN) work-items, or one; RUN is the host's, by kernel class). The run is
// walked in pieces along lines of the innermost dim: cursor_at once per run (its divisions), then within a
// line the offsets step by that dim's strides in a plain loop the compiler vectorises, with the offsets in
// a small cursor of their own (registers), and cursor_step carries into the next line. (A cursor_step
// per position, writing the dims' array, kept every gather scalar: 10x CPU's on PoCL.)
#define FOR_EACH_POSITION(g, total, BODY)                                              \
  for (long run = get_global_id(0); run * RUN < (total); run += get_global_size(0)) {  \
    const long first = run * RUN, end = min((total), first + RUN);                    \
    const int last = (int)(g).ndim - 1;                                                \
    const long s0 = last >= 0 ? (g).strides[0][last] : 0;                              \
    const long s1 = last >= 0 ? (g).strides[1][last] : 0;                              \
    const long s2 = last >= 0 ? (g).strides[2][last] : 0;                              \
    Cursor cur;                                                                        \
    cursor_at(&(g), first, &cur);                                                      \
    for (long e = first; e < end;) {                                                   \
      const long n = last >= 0 ? min(end - e, (g).sizes[last] - cur.i[last]) : 1;      \
      const long b0 = cur.o[0], b1 = cur.o[1], b2 = cur.o[2];                          \
      for (long j = 0; j < n; ++j) {                                                   \
        const struct { long o[3]; } c = {{b0 + j * s0, b1 + j * s1, b2 + j * s2}};      \
        BODY;                                                                          \
      }                                                                                \
      e += n;                                                                          \
      if (e < end) { /* from the line's last position on to the next line's first */   \
        cur.o[0] += (n - 1) * s0;                                                      \
        cur.o[1] += (n - 1) * s1;                                                      \
        cur.o[2] += (n - 1) * s2;                                                      \
        cur.i[last] += n - 1;                                                          \
        cursor_step(&(g), &cur);                                                       \
      }                                                                                \
    }                                                                                  \
  }

// Reduction codes (enum Update in aten/native/scatter_program.h).
#define UPDATE_ASSIGN 0
#define UPDATE_ADD 1
#define UPDATE_MUL 2
#define UPDATE_MAX 3
#define UPDATE_MIN 4

// As CPU's scatter_reduce: a NaN from src wins max/min; a NaN already there stays.
inline ACC combine(ACC a, ACC b, int op) {
  switch (op) {
    case UPDATE_ADD: return a + b;
    case UPDATE_MUL: return a * b;
    case UPDATE_MAX: return ACC_ISNAN(b) ? b : (a < b ? b : a);
    case UPDATE_MIN: return ACC_ISNAN(b) ? b : (b < a ? b : a);
    default: return b;
  }
}

#ifndef __ENDIAN_LITTLE__
#error "scatter_gather.cl packs sub-word elements assuming a little-endian device"
#endif

// p[i] = combine(p[i], v, op). With `atomic`, by a compare-and-swap loop on the 32-bit word holding
// the element (1, 2 or 4 bytes) or on the element itself (8 bytes, cl_khr_int64_base_atomics; without
// it the host launches one work-item and passes atomic = 0).
inline void update(__global T_T* p, long i, ACC v, int op, int atomic) {
  if (op == UPDATE_ASSIGN) {
    STORE_T(p, i, v);
    return;
  }
  if (!atomic) {
    STORE_T(p, i, combine(LOAD_T(p, i), v, op));
    return;
  }
  // Each loop starts from a plain (volatile) read: a stale value only costs one more turn, since the
  // compare-and-swap checks it (Oclgrind's race detector reports that read; it is the usual CAS loop).
#if T_SIZE == 8
#ifdef TOCL_INT64_ATOMICS
  volatile __global ulong* w = (volatile __global ulong*)(p + i);
  ulong seen, old = *w;
  do {
    seen = old;
    ulong bits = seen;
    STORE_T((__private T_T*)&bits, 0, combine(LOAD_T((__private T_T*)&bits, 0), v, op));
    old = atom_cmpxchg(w, seen, bits);
  } while (old != seen);
#else
  STORE_T(p, i, combine(LOAD_T(p, i), v, op));
#endif
#elif T_SIZE == 4
  volatile __global uint* w = (volatile __global uint*)(p + i);
  uint seen, old = *w;
  do {
    seen = old;
    uint bits = seen;
    STORE_T((__private T_T*)&bits, 0, combine(LOAD_T((__private T_T*)&bits, 0), v, op));
    old = atomic_cmpxchg(w, seen, bits);
  } while (old != seen);
#else
  // Blocks are 512-byte multiples (runtime/allocator.cpp), so the aligned word stays inside the buffer.
  const ulong address = (ulong)(p + i);
  volatile __global uint* w = (volatile __global uint*)(address & ~(ulong)3);
  const uint shift = (uint)(address & 3) * 8;
  const uint low = (T_SIZE == 1) ? 0xffu : 0xffffu;
  uint seen, old = *w;
  do {
    seen = old;
    uint bits = (seen >> shift) & low;
    STORE_T((__private T_T*)&bits, 0, combine(LOAD_T((__private T_T*)&bits, 0), v, op));
    old = atomic_cmpxchg(w, seen, (seen & ~(low << shift)) | ((bits & low) << shift));
  } while (old != seen);
#endif
}

// Over the index tensor's shape: operand 0 = out, 1 = self with stride 0 along dim, 2 = index.
// out[o0] = self[o1 + index[o2] * dim_stride].
__kernel void gather(__global T_T* out, ulong out_offset, __global const T_T* self, ulong self_offset,
                     __global const I_T* index, ulong index_offset, long total, Geometry g, long dim_stride) {
  FOR_EACH_POSITION(g, total, {
    const long k = (long)index[index_offset + c.o[2]];
    STORE_T(out, out_offset + c.o[0], LOAD_T(self, self_offset + c.o[1] + k * dim_stride));
  })
}

// Over the index tensor's shape: operand 0 = self with stride 0 along dim, 1 = src (all strides 0
// for the value forms), 2 = index. self[o0 + index[o2] * dim_stride] (op)= src[o1].
__kernel void scatter(__global T_T* self, ulong self_offset, __global const T_T* src, ulong src_offset,
                      __global const I_T* index, ulong index_offset, long total, Geometry g, long dim_stride, int op,
                      int atomic) {
  FOR_EACH_POSITION(g, total, {
    const long k = (long)index[index_offset + c.o[2]];
    update(self, self_offset + c.o[0] + k * dim_stride, LOAD_T(src, src_offset + c.o[1]), op, atomic);
  })
}

// The element offset of advanced indexing's indexed dims for row position `at` of the stacked
// indices (negative indices count from the end, as on CPU).
inline long indexed_offset(const Indexed* ix, __global const I_T* indices, ulong at) {
  long offset = 0;
  for (int k = 0; k < (int)ix->count; ++k) {
    long v = (long)indices[at + k * ix->row_stride];
    if (v < 0) v += ix->sizes[k];
    offset += v * ix->strides[k];
  }
  return offset;
}

// Over the indexing result's shape: operand 0 = out, 1 = self with stride 0 in the indexed dims,
// 2 = row 0 of the stacked indices. out[o0] = self[o1 + indexed offset].
__kernel void index_gather(__global T_T* out, ulong out_offset, __global const T_T* self, ulong self_offset,
                           __global const I_T* indices, ulong indices_offset, long total, Geometry g, Indexed ix) {
  if (ix.count == 1) {  // one index tensor (x[:, i]): no loop over them in the loop over positions
    const long size = ix.sizes[0], stride = ix.strides[0];
    FOR_EACH_POSITION(g, total, {
      const long v = (long)indices[indices_offset + c.o[2]];
      STORE_T(out, out_offset + c.o[0], LOAD_T(self, self_offset + c.o[1] + (v < 0 ? v + size : v) * stride));
    })
    return;
  }
  FOR_EACH_POSITION(g, total, {
    const long k = indexed_offset(&ix, indices, indices_offset + c.o[2]);
    STORE_T(out, out_offset + c.o[0], LOAD_T(self, self_offset + c.o[1] + k));
  })
}

// Over the indexing result's shape: operand 0 = self with stride 0 in the indexed dims, 1 = values
// (broadcast), 2 = row 0 of the stacked indices. self[o0 + indexed offset] (op)= values[o1].
__kernel void index_put(__global T_T* self, ulong self_offset, __global const T_T* values, ulong values_offset,
                        __global const I_T* indices, ulong indices_offset, long total, Geometry g, Indexed ix, int op,
                        int atomic) {
  FOR_EACH_POSITION(g, total, {
    const long k = indexed_offset(&ix, indices, indices_offset + c.o[2]);
    update(self, self_offset + c.o[0] + k, LOAD_T(values, values_offset + c.o[1]), op, atomic);
  })
}
