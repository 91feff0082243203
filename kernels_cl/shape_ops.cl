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
