// Lines of the row-wise kernels' GPU forms (softmax_gpu.cl, normalization_gpu.cl), and the
// reductions of a work-group in local memory. Included after the type defines (T_T, ACC, WG).
//
// A work-group of WG items serves WG / seg lines, seg items on each (seg: a power of two, a kernel
// argument; aten/kernel_support/line_geometry.cpp chooses it). A line has n elements `stride`
// apart from `base`; the item at position pos reads elements pos, pos + seg, pos + 2 seg, ...
//   rows (stride 1): a line's items are adjacent (pos = l % seg), so consecutive items read
//     consecutive elements;
//   columns of an (outer, n, inner) tensor (stride inner): a group's lines are adjacent columns
//     and the items at one position are adjacent (pos = l / lines), reading adjacent columns.
// In both, the items of one line are `step` apart in the group: the reductions below combine
// scratch[l] with scratch[l + s * step], adjacent items on adjacent words (no bank conflicts).

// Elements of its line an item keeps in registers (one read from memory); the rest it re-reads.
#define LINE_REGS 8

typedef struct {
  long line;    // which line (the last one for items past the end)
  long base;    // offset of its first element
  long stride;  // between its elements
  int pos;      // this item's position on the line, 0 .. seg - 1
  int step;     // local-id distance between adjacent positions of one line
  int live;     // 0 for items past the last line: they compute on the last one and store nothing
} Line;

inline Line line_of(long n, long inner, long lines, int seg) {
  const int l = get_local_id(0), per_group = WG / seg;
  Line L;
  int slot;
  if (inner == 1) {
    L.pos = l % seg;
    slot = l / seg;
    L.step = 1;
  } else {
    L.pos = l / per_group;
    slot = l % per_group;
    L.step = per_group;
  }
  const long line = (long)get_group_id(0) * per_group + slot;
  L.live = line < lines;
  L.line = min(line, lines - 1);
  L.base = inner == 1 ? L.line * n : (L.line / inner) * n * inner + L.line % inner;
  L.stride = inner;
  return L;
}

// Sum over the seg items of one line (positions `step` apart); every item gets the result.
// All items of the group call it (barriers).
inline ACC seg_sum(__local ACC* scratch, ACC v, int pos, int seg, int step) {
  const int l = get_local_id(0);
  scratch[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = seg >> 1; s > 0; s >>= 1) {
    if (pos < s) scratch[l] += scratch[l + s * step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const ACC r = scratch[l - pos * step];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

// Two sums in one pass of barriers.
inline void seg_sum2(__local ACC* s1, __local ACC* s2, ACC* a, ACC* b, int pos, int seg, int step) {
  const int l = get_local_id(0);
  s1[l] = *a;
  s2[l] = *b;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = seg >> 1; s > 0; s >>= 1) {
    if (pos < s) {
      s1[l] += s1[l + s * step];
      s2[l] += s2[l + s * step];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  *a = s1[l - pos * step];
  *b = s2[l - pos * step];
  barrier(CLK_LOCAL_MEM_FENCE);
}

// The larger of a and b, NaN if either is.
#define LINE_MAX_NAN(a, b) ((ACC_ISNAN(a) | ((a) > (b))) ? (a) : (b))

inline ACC seg_max(__local ACC* scratch, ACC v, int pos, int seg, int step) {
  const int l = get_local_id(0);
  scratch[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = seg >> 1; s > 0; s >>= 1) {
    if (pos < s) scratch[l] = LINE_MAX_NAN(scratch[l], scratch[l + s * step]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const ACC r = scratch[l - pos * step];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}
