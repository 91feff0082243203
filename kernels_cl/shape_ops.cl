// Gathers that rearrange a tensor without arithmetic: flip, roll, repeat (aten/native/shape_ops.cpp).
// For every output element (coordinates i_d, innermost dim first) the source coordinate is
//   c_d = ((flip_d ? out_size_d - 1 - i_d : i_d) + shift_d) % in_size_d
// flip: flip_d set; roll: shift_d = the roll's complement; repeat: out_size_d = in_size_d * repeats_d.
// Sizes and strides (in elements) are arguments, so one program per element size serves every
// shape; I_T is int where every index fits in 31 bits (32-bit division is much cheaper), else long.
#define MAX_DIMS 16

typedef struct {
  int ndim;
  long out_sizes[MAX_DIMS];
  long in_sizes[MAX_DIMS];
  long out_strides[MAX_DIMS];
  long in_strides[MAX_DIMS];
  long shifts[MAX_DIMS];
  int flips[MAX_DIMS];
} GatherGeometry;

// Adds to *src and *dst the offsets of the output coordinates `rest` (flattened over dims first..ndim - 1,
// innermost first), each source coordinate by the formula above.
inline void gather_offsets(const GatherGeometry* g, int first, I_T rest, I_T* src, I_T* dst) {
  FOR_RANGE(d, first, g->ndim, MAX_DIMS) {
    const I_T size = (I_T)g->out_sizes[d];
    const I_T i = rest % size;
    rest /= size;
    I_T c = (g->flips[d] ? size - 1 - i : i) + (I_T)g->shifts[d];
    const I_T in_size = (I_T)g->in_sizes[d];
    if (c >= in_size) c %= in_size;
    *src += c * (I_T)g->in_strides[d];
    *dst += i * (I_T)g->out_strides[d];
  }
}

__kernel void gather_nd(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset, long total,
                        GatherGeometry g) {
  if (get_global_id(0) >= total) return;
  I_T src = 0, dst = 0;
  gather_offsets(&g, 0, (I_T)get_global_id(0), &src, &dst);
  out[out_offset + dst] = in[in_offset + src];
}

// The line forms (runtime/kernel_forms.h's copy_lines, CPU devices): a work-item copies a run of at most
// `chunk` elements along the innermost dim, with the index arithmetic of the other dims done once per run
// (a work-item per element pays a division per dim per element: 3-20 ns an element on PoCL).
// Where both strides are 1 the run is a plain loop the compiler vectorises.
// A run's elements are shared by TOCL_LINE_LANES work-items (prelude.cl).
#define COPY_RUN(dst, dst_stride, src, src_stride, n)                                                 \
  if ((dst_stride) == 1 && (src_stride) == 1) {                                                         \
    for (I_T r_ = RUN_LANE(); r_ < (n); r_ += TOCL_LINE_LANES) (dst)[r_] = (src)[r_];                  \
  } else {                                                                                            \
    for (I_T r_ = RUN_LANE(); r_ < (n); r_ += TOCL_LINE_LANES) (dst)[r_ * (dst_stride)] = (src)[r_ * (src_stride)]; \
  }

// gather_nd's line form: dim 0 (innermost) walked by the run, its source coordinate stepped (and
// wrapped at in_size: roll, repeat) instead of recomputed.
__kernel void gather_lines(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset, long runs,
                           long chunks, long chunk, GatherGeometry g) {
  const long run_id = RUN_ID();
  if (run_id >= runs) return;
  const I_T lo = ((I_T)run_id % (I_T)chunks) * (I_T)chunk;
  I_T src = 0, dst = 0;
  gather_offsets(&g, 1, (I_T)run_id / (I_T)chunks, &src, &dst);
  const I_T size0 = (I_T)g.out_sizes[0], in0 = (I_T)g.in_sizes[0];
  const I_T hi = min(lo + (I_T)chunk, size0);
  const I_T is0 = (I_T)g.in_strides[0], os0 = (I_T)g.out_strides[0];
  __global T_T* o = out + out_offset + dst;
  __global const T_T* x = in + in_offset + src;
  I_T c = ((g.flips[0] ? size0 - 1 - lo : lo) + (I_T)g.shifts[0]) % in0;
  if (!g.flips[0] && g.shifts[0] == 0 && size0 == in0) {
    COPY_RUN(o + lo * os0, os0, x + lo * is0, is0, hi - lo)  // a plain copy along dim 0
  } else if (g.flips[0]) {
    // A flip (the host never shifts or repeats a flipped dim): the source walks down from c without
    // wrapping; with unit strides a loop the compiler vectorises (a reversed load), where a counter that
    // wrapped kept it scalar (11x CPU's flip).
    __global const T_T* top = x + c * is0;
    if (os0 == 1 && is0 == 1) {
      for (I_T r = RUN_LANE(); r < hi - lo; r += TOCL_LINE_LANES) o[lo + r] = top[-r];
    } else {
      for (I_T r = RUN_LANE(); r < hi - lo; r += TOCL_LINE_LANES) o[(lo + r) * os0] = top[-(r * is0)];
    }
  } else {
    // A roll or a repeat: the source steps up and wraps at in0, so the run is copied in pieces that do not
    // wrap, each a COPY_RUN (a counter that wraps kept the loop scalar).
    for (I_T i = lo; i < hi;) {
      const I_T n = min(hi - i, in0 - c);
      COPY_RUN(o + i * os0, os0, x + c * is0, is0, n)
      i += n;
      c = 0;
    }
  }
}

// cat: up to CAT_PARTS inputs of the output's dtype copied into their slices of the output in one
// launch (one launch per input otherwise: a transformer's split backward, a stack of many tensors).
// Every tensor is described over the output's dims (at most CAT_DIMS after merging, innermost
// first); part p covers [starts[p], starts[p + 1]) along the cat dim. This launch writes the slices
// of parts 0..parts-1 only, so a longer list takes several launches.
#define CAT_PARTS 8
#define CAT_DIMS 4

typedef struct {
  long sizes[CAT_DIMS];  // the output's, except the cat dim: starts[parts] - starts[0] here
  long out_strides[CAT_DIMS];
  long in_strides[CAT_PARTS][CAT_DIMS];
  long starts[CAT_PARTS + 1];
  int cat_dim;
  int parts;
} CatGeometry;

// Part p's buffer and element offset (the kernels take the parts as separate arguments).
#define PART(p, ptr, off)                                                          \
  switch (p) {                                                                    \
    case 0: ptr = in0; off = o0; break;                                           \
    case 1: ptr = in1; off = o1; break;                                           \
    case 2: ptr = in2; off = o2; break;                                           \
    case 3: ptr = in3; off = o3; break;                                           \
    case 4: ptr = in4; off = o4; break;                                           \
    case 5: ptr = in5; off = o5; break;                                           \
    case 6: ptr = in6; off = o6; break;                                           \
    default: ptr = in7; off = o7; break;                                          \
  }

__kernel void cat_parts(__global T_T* out, ulong out_offset, __global const T_T* in0, ulong o0,
                        __global const T_T* in1, ulong o1, __global const T_T* in2, ulong o2,
                        __global const T_T* in3, ulong o3, __global const T_T* in4, ulong o4,
                        __global const T_T* in5, ulong o5, __global const T_T* in6, ulong o6,
                        __global const T_T* in7, ulong o7, long total, CatGeometry g) {
  if (get_global_id(0) >= total) return;
  I_T rest = (I_T)get_global_id(0);
  I_T coords[CAT_DIMS];
  I_T dst = 0;
  for (int d = 0; d < CAT_DIMS; ++d) {
    const I_T size = (I_T)g.sizes[d];
    I_T i = rest % size;
    rest /= size;
    if (d == g.cat_dim) i += (I_T)g.starts[0];
    coords[d] = i;
    dst += i * (I_T)g.out_strides[d];
  }
  int p = 0;
  while (p + 1 < g.parts && coords[g.cat_dim] >= (I_T)g.starts[p + 1]) ++p;
  coords[g.cat_dim] -= (I_T)g.starts[p];
  I_T src = 0;
  for (int d = 0; d < CAT_DIMS; ++d) src += coords[d] * (I_T)g.in_strides[p][d];
  __global const T_T* ptr;
  ulong off;
  PART(p, ptr, off)
  out[out_offset + dst] = ptr[off + src];
}

// cat_parts' line form: a run along dim 0 of one line of the output (dims 1..3), copied from the part
// that holds it; where dim 0 is the cat dim, a run crosses parts and copies each part's segment.
__kernel void cat_lines(__global T_T* out, ulong out_offset, __global const T_T* in0, ulong o0,
                        __global const T_T* in1, ulong o1, __global const T_T* in2, ulong o2,
                        __global const T_T* in3, ulong o3, __global const T_T* in4, ulong o4,
                        __global const T_T* in5, ulong o5, __global const T_T* in6, ulong o6,
                        __global const T_T* in7, ulong o7, long runs, long chunks, long chunk, CatGeometry g) {
  const long run_id = RUN_ID();
  if (run_id >= runs) return;
  I_T line = (I_T)run_id / (I_T)chunks;
  const I_T lo = ((I_T)run_id % (I_T)chunks) * (I_T)chunk;
  const I_T hi = min(lo + (I_T)chunk, (I_T)g.sizes[0]);
  // The line's coordinates in dims 1..3 (the cat dim's taken from the launch's first part on).
  I_T c1 = line % (I_T)g.sizes[1];
  line /= (I_T)g.sizes[1];
  I_T c2 = line % (I_T)g.sizes[2];
  I_T c3 = line / (I_T)g.sizes[2];
  const I_T first = (I_T)g.starts[0];
  if (g.cat_dim == 1) c1 += first;
  if (g.cat_dim == 2) c2 += first;
  if (g.cat_dim == 3) c3 += first;
  const I_T dst = c1 * (I_T)g.out_strides[1] + c2 * (I_T)g.out_strides[2] + c3 * (I_T)g.out_strides[3];
  const I_T os0 = (I_T)g.out_strides[0];
  __global const T_T* ptr;
  ulong off;
  if (g.cat_dim != 0) {
    const I_T cc = g.cat_dim == 1 ? c1 : g.cat_dim == 2 ? c2 : c3;
    // The part and its strides by constant indices (unrolled): indexing the geometry argument by a variable
    // made Intel's CPU compiler keep a private copy of it per work-item (cat: 4-8x its plain copy).
    int p = 0;
    I_T start = (I_T)g.starts[0], is0 = (I_T)g.in_strides[0][0], is1 = (I_T)g.in_strides[0][1],
        is2 = (I_T)g.in_strides[0][2], is3 = (I_T)g.in_strides[0][3];
#pragma unroll
    for (int q = 1; q < CAT_PARTS; ++q) {
      if (q < g.parts && cc >= (I_T)g.starts[q]) {
        p = q;
        start = (I_T)g.starts[q];
        is0 = (I_T)g.in_strides[q][0];
        is1 = (I_T)g.in_strides[q][1];
        is2 = (I_T)g.in_strides[q][2];
        is3 = (I_T)g.in_strides[q][3];
      }
    }
    const I_T within = cc - start;  // the coordinate in part p
    const I_T src = (g.cat_dim == 1 ? within : c1) * is1 + (g.cat_dim == 2 ? within : c2) * is2 +
                    (g.cat_dim == 3 ? within : c3) * is3;
    PART(p, ptr, off)
    COPY_RUN(out + out_offset + dst + lo * os0, os0, ptr + off + src + lo * is0, is0, hi - lo)
    return;
  }
  // dim 0 is the cat dim: [lo, hi) runs over parts; part p holds [starts[p], starts[p + 1]) - first.
  FOR_RANGE(p, 0, g.parts, CAT_PARTS) {
    const I_T b = max(lo, (I_T)g.starts[p] - first), e = min(hi, (I_T)g.starts[p + 1] - first);
    if (b >= e) continue;
    const I_T src = c1 * (I_T)g.in_strides[p][1] + c2 * (I_T)g.in_strides[p][2] + c3 * (I_T)g.in_strides[p][3];
    const I_T is0 = (I_T)g.in_strides[p][0];
    PART(p, ptr, off)
    COPY_RUN(out + out_offset + dst + (b + first) * os0, os0, ptr + off + src + (b + first - (I_T)g.starts[p]) * is0,
             is0, e - b)
  }
}
