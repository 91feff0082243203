// Rows read and written 16 elements at a time as ACC16 vectors, for kernels that walk a row per
// work-item (PoCL vectorises within the work-item; vload16/vstore16 where the storage type is ACC).
// Included by softmax.cl and normalization.cl after the type defines (T_T, LOAD_T, STORE_T, ACC).

// ACC16 (16 floats) passes by value between these helpers and the built-ins (clang's -Wpsabi note is
// silenced in prelude.cl).

#define PASTE_(a, b) a##b
#define PASTE(a, b) PASTE_(a, b)
#define ACC16 PASTE(ACC, 16)
#define ACC8 PASTE(ACC, 8)
#define ACC4 PASTE(ACC, 4)
#define ACC2 PASTE(ACC, 2)

// 16 elements p[i .. i + 15] as an ACC16; last: the row's last index, for the clamped form.
// vload16 where the storage type is ACC (the other branch folds away).
#define G(p, i, k, last) (ACC) LOAD_T(p, min((i) + k, (last)))
#define LOAD16_CLAMPED(p, i, last)                                                                          \
  ((ACC16)(G(p, i, 0, last), G(p, i, 1, last), G(p, i, 2, last), G(p, i, 3, last), G(p, i, 4, last),         \
           G(p, i, 5, last), G(p, i, 6, last), G(p, i, 7, last), G(p, i, 8, last), G(p, i, 9, last),         \
           G(p, i, 10, last), G(p, i, 11, last), G(p, i, 12, last), G(p, i, 13, last), G(p, i, 14, last),    \
           G(p, i, 15, last)))
#define LOAD16(p, i) \
  (sizeof(T_T) == sizeof(ACC) ? vload16(0, (__global const ACC*)(p) + (i)) : LOAD16_CLAMPED(p, i, (i) + 15))

// Stores the first n (1..16) lanes of v at p[i ..].
inline void store16(__global T_T* p, long i, ACC16 v, long n) {
  const int whole = n >= 16, same = sizeof(T_T) == sizeof(ACC);
  if (whole & same) {
    vstore16(v, 0, (__global ACC*)p + i);
    return;
  }
  ACC a[16];
  vstore16(v, 0, a);
  for (int k = 0; k < 16; ++k)
    if (k < n) STORE_T(p, i + k, a[k]);
}

// v's first n lanes, the others replaced by fill's.
inline ACC16 lane_mask_keep(ACC16 v, ACC16 fill, long n) {
  const ACC16 lane = (ACC16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  return select(fill, v, lane < (ACC16)(ACC)n);
}

inline ACC sum16(ACC16 a) {
  const ACC8 b = a.lo + a.hi;
  const ACC4 c = b.lo + b.hi;
  const ACC2 d = c.lo + c.hi;
  return d.x + d.y;
}
