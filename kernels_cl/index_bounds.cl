// Finds the first index outside [lo, hi) (an index equal to `skip` is allowed when has_skip) in two
// passes: work-group g scans its span of `span` indices into partial[g] (its first bad position or
// -1), then one work-group of WG items picks the first over the groups: result[0] = its position or
// -1, result[1] = its value. The host reads the two longs back to raise CPU's error.
__kernel void first_out_of_range_spans(__global long* partial, ulong partial_offset, __global const I_T* index,
                                       ulong index_offset, long n, long span, long lo, long hi, int has_skip,
                                       long skip) {
  __local long first[WG];
  const int l = get_local_id(0);
  const long start = get_group_id(0) * span, end = min(n, start + span);
  long mine = -1;
  for (long i = start + l; i < end; i += WG) {
    const long v = (long)index[index_offset + i];
    if (mine < 0 && (v < lo || v >= hi) && !(has_skip && v == skip)) mine = i;
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
  if (l == 0) partial[partial_offset + get_group_id(0)] = first[0];
}

__kernel void first_out_of_range(__global long* result, ulong result_offset, __global const long* partial,
                                 ulong partial_offset, long groups, __global const I_T* index, ulong index_offset) {
  __local long first[WG];
  const int l = get_local_id(0);
  long mine = -1;
  for (long g = l; g < groups; g += WG) {
    const long p = partial[partial_offset + g];
    if (p >= 0) {
      mine = p;  // groups cover increasing spans: the first hit is this item's smallest
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

// The deferred form (runtime/deferred_errors.h): no read back. An index outside [lo, hi) (but `skip` when
// has_skip) is written to the call site's error record, the first one to set its flag wins: the record's
// int flag, then the index and hi as longs. The host raises it at its next wait on the stream.
__kernel void record_out_of_range(__global int* record, ulong record_offset, __global const I_T* index,
                                  ulong index_offset, long n, long lo, long hi, int has_skip, long skip) {
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
    const long v = (long)index[index_offset + i];
    if ((v < lo || v >= hi) && !(has_skip && v == skip)) {
      tocl_record_index_error(record + record_offset, v, hi);
      return;
    }
  }
}
