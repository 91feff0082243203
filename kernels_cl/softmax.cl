// Softmax and log-softmax over one dimension, forward and backward. The tensor
// is viewed as (outer, dim, inner), contiguous; a row is the `dim` elements at
// one (outer, inner) pair, stride `inner`. One work-group of WG items per row;
// reductions go through local memory in ACC (float for float/half/bfloat16).

inline ACC group_max(__local ACC* scratch, ACC v) {
  const int l = get_local_id(0);
  scratch[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (l < s) scratch[l] = fmax(scratch[l], scratch[l + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const ACC r = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

inline ACC group_sum(__local ACC* scratch, ACC v) {
  const int l = get_local_id(0);
  scratch[l] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (l < s) scratch[l] += scratch[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const ACC r = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

// A max that lets NaN through, as CPU's softmax does.
inline ACC nan_max(ACC a, ACC b) { return (ACC_ISNAN(a) || a > b) ? a : b; }

__kernel void softmax_forward(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset,
                              long dim, long inner, int log_softmax) {
  __local ACC scratch[WG];
  const long row = get_group_id(0);
  const int l = get_local_id(0);
  const long base = (row / inner) * dim * inner + row % inner;
  const long ib = (long)in_offset + base, ob = (long)out_offset + base;
  ACC m = ACC_LOWEST;
  for (long j = l; j < dim; j += WG) m = nan_max(m, LOAD_T(in, ib + j * inner));
  // fmax in group_max drops NaN: carry NaN separately.
  const ACC has_nan = group_sum(scratch, ACC_ISNAN(m) ? (ACC)1 : (ACC)0);
  m = group_max(scratch, m);
  if (has_nan > 0) m = NAN;
  ACC s = 0;
  for (long j = l; j < dim; j += WG) s += exp(LOAD_T(in, ib + j * inner) - m);
  s = group_sum(scratch, s);
  if (log_softmax) {
    const ACC ls = log(s);
    for (long j = l; j < dim; j += WG) STORE_T(out, ob + j * inner, LOAD_T(in, ib + j * inner) - m - ls);
  } else {
    for (long j = l; j < dim; j += WG) STORE_T(out, ob + j * inner, exp(LOAD_T(in, ib + j * inner) - m) / s);
  }
}

// softmax:     grad_in = y * (g - sum(g * y))
// log_softmax: grad_in = g - exp(y) * sum(g)
__kernel void softmax_backward(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out, ulong go_offset,
                               __global const T_T* y, ulong y_offset, long dim, long inner, int log_softmax) {
  __local ACC scratch[WG];
  const long row = get_group_id(0);
  const int l = get_local_id(0);
  const long base = (row / inner) * dim * inner + row % inner;
  ACC s = 0;
  for (long j = l; j < dim; j += WG) {
    const long i = base + j * inner;
    const ACC g = LOAD_T(grad_out, go_offset + i);
    s += log_softmax ? g : g * LOAD_T(y, y_offset + i);
  }
  s = group_sum(scratch, s);
  for (long j = l; j < dim; j += WG) {
    const long i = base + j * inner;
    const ACC g = LOAD_T(grad_out, go_offset + i), v = LOAD_T(y, y_offset + i);
    STORE_T(grad_in, gi_offset + i, log_softmax ? g - exp(v) * s : v * (g - s));
  }
}
