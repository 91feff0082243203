// Contiguous fills and copies, for drivers whose clEnqueueFillBuffer and clEnqueueCopyBuffer run on one
// host thread (PoCL's CPU device: runtime/kernel_forms.h's kernel_fill_min_bytes and kernel_copy_min_bytes,
// runtime/memcpy.cpp). A work-item takes a
// contiguous chunk of whole 16-vectors of the unit (the type the pattern or the alignment allows), so
// the work spreads over the cores and each loop is one vector load and store; the last work-item also
// takes the tail past the last whole vector. Offsets and counts are in units.

#define FILL_UNITS(NAME, U, U16)                                                           \
  __kernel void NAME(__global U* dst, ulong dst_off, ulong n, U value) {                   \
    const ulong vectors = n / 16, items = get_global_size(0), id = get_global_id(0);       \
    const ulong per = (vectors + items - 1) / items;                                       \
    const ulong first = min(id * per, vectors), last = min(first + per, vectors);         \
    __global U* d = dst + dst_off;                                                         \
    const U16 v = (U16)(value);                                                            \
    for (ulong i = first; i < last; ++i) vstore16(v, i, d);                                \
    if (id == items - 1)                                                                   \
      for (ulong i = vectors * 16; i < n; ++i) d[i] = value;                               \
  }

#define COPY_UNITS(NAME, U)                                                                          \
  __kernel void NAME(__global U* restrict dst, ulong dst_off, __global const U* restrict src, ulong src_off, \
                     ulong n) {                                                                      \
    const ulong vectors = n / 16, items = get_global_size(0), id = get_global_id(0);                 \
    const ulong per = (vectors + items - 1) / items;                                                 \
    const ulong first = min(id * per, vectors), last = min(first + per, vectors);                   \
    __global U* d = dst + dst_off;                                                                   \
    __global const U* s = src + src_off;                                                             \
    for (ulong i = first; i < last; ++i) vstore16(vload16(i, s), i, d);                              \
    if (id == items - 1)                                                                             \
      for (ulong i = vectors * 16; i < n; ++i) d[i] = s[i];                                          \
  }

FILL_UNITS(fill_u8, uchar, uchar16)
FILL_UNITS(fill_u16, ushort, ushort16)
FILL_UNITS(fill_u32, uint, uint16)
FILL_UNITS(fill_u64, ulong, ulong16)
COPY_UNITS(copy_u8, uchar)
COPY_UNITS(copy_u32, uint)
