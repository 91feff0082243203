// Binary searches over sorted rows: searchsorted and bucketize, isin (aten/native/search.cpp).
// T_T/T_CT/LOAD_T: the common dtype of the values searched and the sorted sequence; I_T: searchsorted's
// output dtype (int or long). Every operand is contiguous.

// CPU's cus_lower_bound / cus_upper_bound (Bucketization.cpp), the same comparisons (NaN and all): value i is
// searched in row i / inner_in of `bd` (rows of inner_bd), or in the whole of it (one_row), through `sorter`
// (the order of each row, positions within it) where has_sorter.
__kernel void searchsorted(__global I_T* out, ulong out_offset, __global const T_T* values, ulong v_offset,
                           __global const T_T* bd, ulong bd_offset, __global const long* sorter, ulong s_offset,
                           long numel, long inner_in, long inner_bd, int one_row, int right, int has_sorter) {
  const long i = get_global_id(0);
  if (i >= numel) return;
  const long start = one_row ? 0 : i / inner_in * inner_bd;
  const T_CT val = LOAD_T(values, v_offset + i);
  long lo = start, hi = start + inner_bd;
  while (lo < hi) {
    const long mid = lo + ((hi - lo) >> 1);
    const T_CT m = has_sorter ? LOAD_T(bd, bd_offset + start + sorter[s_offset + mid]) : LOAD_T(bd, bd_offset + mid);
    if (right ? !(m > val) : !(m >= val))
      lo = mid + 1;
    else
      hi = mid;
  }
  out[out_offset + i] = (I_T)(lo - start);
}

// a sorts before b, NaN largest (kernels_cl/sort.cl's order).
inline int search_less(T_CT a, T_CT b) { return (!ACC_ISNAN(a) && ACC_ISNAN(b)) || a < b; }

// out[i] = (elements[i] equals one of the ntest sorted tests) != invert: the first test not below the element
// decides (equality as ==: NaN is in no set, -0.0 and 0.0 are one value).
__kernel void isin_sorted(__global uchar* out, ulong out_offset, __global const T_T* elements, ulong e_offset,
                          __global const T_T* tests, ulong t_offset, long numel, long ntest, int invert) {
  const long i = get_global_id(0);
  if (i >= numel) return;
  const T_CT x = LOAD_T(elements, e_offset + i);
  long lo = 0, hi = ntest;
  while (lo < hi) {
    const long mid = lo + ((hi - lo) >> 1);
    if (search_less(LOAD_T(tests, t_offset + mid), x))
      lo = mid + 1;
    else
      hi = mid;
  }
  const int found = lo < ntest && LOAD_T(tests, t_offset + lo) == x;
  out[out_offset + i] = (uchar)(found != invert);
}
