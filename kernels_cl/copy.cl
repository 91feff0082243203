// Strided copy with dtype conversion. The host prepends the definitions of
// SRC_T/DST_T and LOAD_SRC/STORE_DST for the dtype pair (aten/cl_types.cpp),
// so one program serves one pair, whatever the shapes and strides.
#define MAX_DIMS 12

typedef struct {
  long sizes[MAX_DIMS];        // innermost first
  long dst_strides[MAX_DIMS];  // in elements
  long src_strides[MAX_DIMS];
} Geometry;

__kernel void copy_strided(__global DST_T* dst, ulong dst_offset,
                           __global const SRC_T* src, ulong src_offset,
                           ulong n, int ndim, Geometry g) {
  const ulong linear = get_global_id(0);
  if (linear >= n) return;
  ulong rest = linear;
  long d = (long)dst_offset, s = (long)src_offset;
  for (int k = 0; k < ndim; ++k) {
    const long size = g.sizes[k];
    const long index = (long)(rest % (ulong)size);
    rest /= (ulong)size;
    d += index * g.dst_strides[k];
    s += index * g.src_strides[k];
  }
  STORE_DST(dst, d, LOAD_SRC(src, s));
}

__kernel void copy_contiguous(__global DST_T* dst, ulong dst_offset,
                              __global const SRC_T* src, ulong src_offset, ulong n) {
  const ulong i = get_global_id(0);
  if (i >= n) return;
  STORE_DST(dst, dst_offset + i, LOAD_SRC(src, src_offset + i));
}

// `value` is of SRC's compute type: a by-value half argument would need cl_khr_fp16, and
// then no program with a float16 source would build.
__kernel void fill_strided(__global DST_T* dst, ulong dst_offset, ulong n, int ndim, Geometry g,
                           SRC_CT value) {
  const ulong linear = get_global_id(0);
  if (linear >= n) return;
  ulong rest = linear;
  long d = (long)dst_offset;
  for (int k = 0; k < ndim; ++k) {
    const long size = g.sizes[k];
    d += (long)(rest % (ulong)size) * g.dst_strides[k];
    rest /= (ulong)size;
  }
  STORE_DST(dst, d, value);
}
