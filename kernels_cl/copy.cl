// Strided copy with dtype conversion. The host prepends the definitions of
// SRC_T/DST_T and LOAD_SRC/STORE_DST for the dtype pair (aten/kernel_support/cl_types.cpp), the
// index width and tiled_index.cl (NOPS 2: dst, src), so one program serves one pair
// and index width, whatever the shapes and strides.

#define COPY_STRIDED(NAME, OFFSETS)                                                     \
  __kernel void NAME(__global DST_T* dst, ulong dst_offset, __global const SRC_T* src,   \
                     ulong src_offset, TiledGeometry g) {                                \
    TILED_INDICES(g)                                                                     \
    OFFSETS                                                                              \
    if (!in_shape) return;                                                               \
    __global DST_T* d = dst + dst_offset;                                                \
    __global const SRC_T* s = src + src_offset;                                          \
    STORE_DST(d, o0, LOAD_SRC(s, o1));                                                   \
  }
COPY_STRIDED(copy_strided, TILED_OFFSETS)
COPY_STRIDED(copy_strided_nd, TILED_OFFSETS_ND)

__kernel void copy_contiguous(__global DST_T* dst, ulong dst_offset,
                              __global const SRC_T* src, ulong src_offset, ulong n) {
  const ulong i = get_global_id(0);
  if (i >= n) return;
  STORE_DST(dst, dst_offset + i, LOAD_SRC(src, src_offset + i));
}

// `value` is of SRC's compute type: a by-value half argument would need cl_khr_fp16, and
// then no program with a float16 source would build. Operand slot 1 is unused.
#define FILL_STRIDED(NAME, OFFSETS)                                                          \
  __kernel void NAME(__global DST_T* dst, ulong dst_offset, TiledGeometry g, SRC_CT value) { \
    TILED_INDICES(g)                                                                          \
    OFFSETS                                                                                   \
    if (!in_shape) return;                                                                    \
    __global DST_T* d = dst + dst_offset;                                                     \
    STORE_DST(d, o0, value);                                                                  \
  }
FILL_STRIDED(fill_strided, TILED_OFFSETS)
FILL_STRIDED(fill_strided_nd, TILED_OFFSETS_ND)

// The lines form (kernel_forms' pointwise_lines, as pointwise.cl's pointwise_lines): where dst steps by one
// element along dim 0 and src by one (a slice) or zero (an expansion), a work-item copies a run of up to
// `run` elements of a line, the other dims' offsets worked out once per run; one loop per src step, so
// that each vectorises (the tiles' strided offsets kept PoCL's loads and stores scalar: 9x a plain copy).
__kernel void copy_lines(__global DST_T* dst, ulong dst_offset, __global const SRC_T* src, ulong src_offset,
                         TiledGeometry g, long runs, long chunks, long run, int src_steps) {
  const long r = RUN_ID();
  if (r >= runs) return;
  LINE_RUN(r, chunks, run)
  __global DST_T* d = dst + dst_offset + o0;
  __global const SRC_T* s = src + src_offset + o1;
  if (src_steps) {
    for (SIDX_T j = RUN_LANE(); j < len; j += TOCL_LINE_LANES) STORE_DST(d, j, LOAD_SRC(s, j));
  } else {
    for (SIDX_T j = RUN_LANE(); j < len; j += TOCL_LINE_LANES) STORE_DST(d, j, LOAD_SRC(s, 0));
  }
}
