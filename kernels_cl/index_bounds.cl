// Finds the first index outside [lo, hi) (an index equal to `skip` is allowed when
// has_skip), in one work-group of WG items. result[0] = its position or -1,
// result[1] = its value. The host reads the two longs back to raise CPU's error.
__kernel void first_out_of_range(__global long* result, ulong result_offset, __global const I_T* index,
                                 ulong index_offset, long n, long lo, long hi, int has_skip, long skip) {
  __local long first[WG];
  const int l = get_local_id(0);
  long mine = -1;
  for (long i = l; i < n; i += WG) {
    const long v = (long)index[index_offset + i];
    if ((v < lo || v >= hi) && !(has_skip && v == skip)) {
      mine = i;
      break;
    }
  }
  first[l] = mine;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (l < s) {
      const long a = first[l], b = first[l + s];
      first[l] = (a < 0) ? b : (b < 0 ? a : min(a, b));
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) {
    result[result_offset] = first[0];
    result[result_offset + 1] = first[0] < 0 ? 0 : (long)index[index_offset + first[0]];
  }
}
