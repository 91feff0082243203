// embedding_bag's forward (aten::_embedding_bag): bags of rows of weight (num_weights, D), picked by indices
// (I_T) and delimited by offsets (I_T), reduced by sum, mean or max as CPU's kernels reduce them. Bag b holds
// indices [offsets[b], offsets[b + 1]) (the last bag, without include_last_offset, runs to the end); rows equal
// to padding_idx are skipped. Indices the host found out of range, and offsets past the ends, are clamped:
// never read out of bounds. Every buffer comes with its element offset (o_*).

#define MODE_SUM 0
#define MODE_MEAN 1
#define MODE_MAX 2

typedef struct {
  long n, bags, offsets_len, D, num_weights, padding_idx;  // n: indices; bags: B
  long weight_stride0, weight_stride1;
  int mode, has_weights;  // has_weights: per_sample_weights given
} EmbeddingBag;

inline long bag_start(__global const I_T* offsets, long b, EmbeddingBag p) {
  return clamp((long)LOAD_I(offsets, b), 0L, p.n);
}
inline long bag_end(__global const I_T* offsets, long b, EmbeddingBag p) {
  return b + 1 < p.offsets_len ? clamp((long)LOAD_I(offsets, b + 1), 0L, p.n) : p.n;
}


// One work-item per (bag, column): out[b, d], the max's row in max_indices[b, d] (mode max), and, from the
// column-0 work-item, bag_size[b] (the rows not skipped; 0 in mode sum, as CPU).
__kernel void embedding_bag_forward(__global T_T* out, ulong o_out, __global long* max_indices, ulong o_max,
                                    __global long* bag_size, ulong o_size, __global const T_T* weight,
                                    ulong o_weight, __global const I_T* indices, ulong o_indices,
                                    __global const I_T* offsets, ulong o_offsets,
                                    __global const T_T* per_sample_weights, ulong o_psw, EmbeddingBag p) {
  const long e = get_global_id(0);
  if (e >= p.bags * p.D) return;
  out += o_out;
  max_indices += o_max;
  bag_size += o_size;
  weight += o_weight;
  indices += o_indices;
  offsets += o_offsets;
  per_sample_weights += o_psw;
  const long b = e / p.D, d = e - b * p.D;
  const long start = bag_start(offsets, b, p), end = max(bag_end(offsets, b, p), start);
  __global const T_T* column = weight + d * p.weight_stride1;
  ACC acc = 0;
  long count = 0, best_row = 0;
  for (long i = start; i < end; ++i) {
    const long row = clamp((long)LOAD_I(indices, i), 0L, p.num_weights - 1);
    if (row == p.padding_idx) continue;
    const ACC v = LOAD_T(column, row * p.weight_stride0);
    if (p.mode == MODE_MAX) {
      if (count == 0 || v > acc) {  // the first maximum; a NaN only as a bag's first value, as CPU
        acc = v;
        best_row = row;
      }
    } else {
      acc += p.has_weights ? v * LOAD_T(per_sample_weights, i) : v;
    }
    ++count;
  }
  if (p.mode == MODE_MEAN && count > 0) acc /= (ACC)count;
  STORE_T(out, e, acc);
  if (p.mode == MODE_MAX) max_indices[e] = best_row;
  if (d == 0) bag_size[b] = p.mode == MODE_SUM ? 0 : count;
}

// offset2bag[i]: the bag index i falls in, the last bag whose start is at most i (a binary search over the
// first `bags` offsets). One work-item per index.
__kernel void embedding_bag_offset2bag(__global long* offset2bag, ulong o_bags, __global const I_T* offsets,
                                       ulong o_offsets, EmbeddingBag p) {
  const long i = get_global_id(0);
  if (i >= p.n) return;
  offset2bag += o_bags;
  offsets += o_offsets;
  long lo = 0, hi = p.bags;  // the first bag starting past i is in [lo, hi]
  while (lo < hi) {
    const long mid = (lo + hi) / 2;
    if ((long)LOAD_I(offsets, mid) <= i) lo = mid + 1;
    else hi = mid;
  }
  offset2bag[i] = max(lo - 1, 0L);
}
