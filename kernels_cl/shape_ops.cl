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

__kernel void gather_nd(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset, long total,
                        GatherGeometry g) {
  if (get_global_id(0) >= total) return;
  I_T rest = (I_T)get_global_id(0);
  I_T src = 0, dst = 0;
  for (int d = 0; d < g.ndim; ++d) {
    const I_T size = (I_T)g.out_sizes[d];
    const I_T i = rest % size;
    rest /= size;
    I_T c = (g.flips[d] ? size - 1 - i : i) + (I_T)g.shifts[d];
    const I_T in_size = (I_T)g.in_sizes[d];
    if (c >= in_size) c %= in_size;
    src += c * (I_T)g.in_strides[d];
    dst += i * (I_T)g.out_strides[d];
  }
  out[out_offset + dst] = in[in_offset + src];
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
  T_T v;
  switch (p) {
    case 0: v = in0[o0 + src]; break;
    case 1: v = in1[o1 + src]; break;
    case 2: v = in2[o2 + src]; break;
    case 3: v = in3[o3 + src]; break;
    case 4: v = in4[o4 + src]; break;
    case 5: v = in5[o5 + src]; break;
    case 6: v = in6[o6 + src]; break;
    default: v = in7[o7 + src]; break;
  }
  out[out_offset + dst] = v;
}
