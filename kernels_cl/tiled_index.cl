// Strided indexing shared by the strided kernels of copy.cl and pointwise.cl. The host
// (aten/kernel_support/tiled_geometry.cpp) prepends MAX_DIMS, NOPS (operand slots, output first) and
//   IDX_T / SIDX_T   uint / int, or ulong / long where an operand's extent or the element
//                    count needs 64 bits
// and fills TiledGeometry from a TensorIterator (dims innermost first, already coalesced).
//
// The launch is 3-D with work-groups of (G, 1, 1), G the device's elementwise group (256, or a power of
// two below it where the device allows no more). Along NDRange dim 0 each work-group covers a tile of
// iteration dims 0..2, 1 << shift[k] wide along dim k (the widths multiply to G); NDRange dim 1 is iteration dim 3 and NDRange dim 2 the flat index over dims 4..
// All of that comes from group ids, uniform across the group: PoCL's work-item loop does the
// divisions once per group, and per element the index math is shifts, masks and multiply-adds
// that vectorise across adjacent work-items (adjacent along dim 0). The indices feed the
// bounds test, so no division ends up predicated per lane. Up to 5 dims (nearly every shape
// once the iterator has coalesced) there is no loop at all: TILED_OFFSETS. More dims take
// TILED_OFFSETS_ND, whose loop over dims 4.. stops PoCL vectorising (the host then picks the
// kernel variant named *_nd).

typedef struct {
  SIDX_T sizes[MAX_DIMS];          // innermost first; 1 past ndim
  SIDX_T strides[NOPS][MAX_DIMS];  // per operand, in elements; may be zero or negative
  SIDX_T tiles[3];                 // tiles along dims 0..2 (1 past ndim)
  int ndim;
  int shift[3];                    // log2 of the tile's width along dims 0..2
} TiledGeometry;

// Declares i0, i1, i2 (the element's indices along dims 0..2) and in_shape.
#define TILED_INDICES(g)                                                                    \
  IDX_T tiled_grp_ = (IDX_T)get_group_id(0);                                                \
  const IDX_T tiled_lid_ = (IDX_T)get_local_id(0);                                          \
  const IDX_T tiled_t0_ = tiled_grp_ % (IDX_T)(g).tiles[0];                                 \
  tiled_grp_ /= (IDX_T)(g).tiles[0];                                                        \
  const IDX_T tiled_t1_ = tiled_grp_ % (IDX_T)(g).tiles[1];                                 \
  const IDX_T tiled_t2_ = tiled_grp_ / (IDX_T)(g).tiles[1];                                 \
  const IDX_T i0 = (tiled_t0_ << (g).shift[0]) | (tiled_lid_ & ((((IDX_T)1) << (g).shift[0]) - 1)); \
  const IDX_T i1 = (tiled_t1_ << (g).shift[1]) |                                            \
                   ((tiled_lid_ >> (g).shift[0]) & ((((IDX_T)1) << (g).shift[1]) - 1));      \
  const IDX_T i2 = (tiled_t2_ << (g).shift[2]) |                                            \
                   ((tiled_lid_ >> ((g).shift[0] + (g).shift[1])) & ((((IDX_T)1) << (g).shift[2]) - 1)); \
  const int in_shape = i0 < (IDX_T)(g).sizes[0] && i1 < (IDX_T)(g).sizes[1] && i2 < (IDX_T)(g).sizes[2];

// Declare o0 .. o<NOPS-1>, each operand's offset in elements from its base. The geometry
// must be the kernel argument named g. Offsets go before the bounds test: the uniform parts
// then stay out of the per-lane predicated code.
#if NOPS == 2
#define TILED_FOR_OPS(X) X(0) X(1)
#else
#define TILED_FOR_OPS(X) X(0) X(1) X(2) X(3)
#endif
#define TILED_INNER_(t) (SIDX_T)i0 * g.strides[t][0] + (SIDX_T)i1 * g.strides[t][1] + (SIDX_T)i2 * g.strides[t][2]
#define TILED_DECLARE5_(t) \
  const SIDX_T o##t = TILED_INNER_(t) + (SIDX_T)get_group_id(1) * g.strides[t][3] + (SIDX_T)get_group_id(2) * g.strides[t][4];
#define TILED_OFFSETS TILED_FOR_OPS(TILED_DECLARE5_)

#define TILED_DECLARE_(t) SIDX_T o##t = TILED_INNER_(t) + (SIDX_T)get_group_id(1) * g.strides[t][3];
#define TILED_OUTER_(t) o##t += tiled_j_ * g.strides[t][k];
#define TILED_OFFSETS_ND                                                   \
  TILED_FOR_OPS(TILED_DECLARE_)                                            \
  {                                                                        \
    IDX_T tiled_rest_ = (IDX_T)get_group_id(2);                            \
    for (int k = 4; k < g.ndim; ++k) {                                     \
      const IDX_T tiled_size_ = (IDX_T)g.sizes[k];                         \
      const SIDX_T tiled_j_ = (SIDX_T)(tiled_rest_ % tiled_size_);         \
      tiled_rest_ /= tiled_size_;                                          \
      TILED_FOR_OPS(TILED_OUTER_)                                          \
    }                                                                      \
  }

// The lines forms (pointwise_lines, copy_lines; the host's line_steps chooses them): work-item r takes a run
// of dim 0, each line cut into `chunks` runs of `run` elements. Declares the run's length `len`, the linear
// index of its first element `lin0` and o0 .. o<NOPS-1> there: the other dims' index arithmetic once per
// run. The output steps by one element along dim 0. The geometry must be the kernel argument named g.
#define LINE_RUN_DECLARE_(t) SIDX_T o##t = line_begin_ * g.strides[t][0];
#define LINE_RUN_OUTER_(t) o##t += line_i_ * g.strides[t][k];
#define LINE_RUN(r, chunks, run)                                              \
  IDX_T line_ = (IDX_T)((r) / (chunks));                                      \
  const SIDX_T line_begin_ = (SIDX_T)((r) % (chunks)) * (SIDX_T)(run);        \
  const SIDX_T len = min((SIDX_T)(run), g.sizes[0] - line_begin_);            \
  const IDX_T lin0 = line_ * (IDX_T)g.sizes[0] + (IDX_T)line_begin_;          \
  TILED_FOR_OPS(LINE_RUN_DECLARE_)                                            \
  FOR_RANGE(k, 1, g.ndim, MAX_DIMS) {                                         \
    const IDX_T line_size_ = (IDX_T)g.sizes[k];                               \
    const SIDX_T line_i_ = (SIDX_T)(line_ % line_size_);                      \
    line_ /= line_size_;                                                      \
    TILED_FOR_OPS(LINE_RUN_OUTER_)                                            \
  }

// The element's linear index in the iteration order (dim 0 fastest).
inline __attribute__((always_inline)) IDX_T tiled_linear(const TiledGeometry* g, IDX_T i0, IDX_T i1, IDX_T i2) {
  const IDX_T outer = (IDX_T)get_group_id(1) + (IDX_T)g->sizes[3] * (IDX_T)get_group_id(2);
  return i0 + (IDX_T)g->sizes[0] * (i1 + (IDX_T)g->sizes[1] * (i2 + (IDX_T)g->sizes[2] * outer));
}
