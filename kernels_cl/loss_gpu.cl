// nll_loss's 'sum' and 'mean' reductions, the GPU form (loss.cl holds the CPU form and the other
// loss kernels; aten/native/loss.cpp takes this where runtime/kernel_forms.h says row_gpu_forms).
// Input (N, C, S) and target (N, S) contiguous; targets were bounds-checked on the host side.
// nll_reduce_partials: `groups` work-groups (the global size) share the N * S targets, a few per
//   item, so the gathers of many items are in flight at once (one group walking them all waits on
//   two dependent loads per target); each group writes partial[2 g] = loss, partial[2 g + 1] = weight.
// nll_reduce_finish: one group adds the partials and writes the loss and the total weight.

#include "line_reduce.cl"

__kernel void nll_reduce_partials(__global ACC* partial, ulong partial_offset, __global const T_T* in,
                                  ulong in_offset, __global const I_T* target, ulong t_offset,
                                  __global const T_T* weight, ulong w_offset, int has_weight, long N, long C, long S,
                                  long ignore_index) {
  __local ACC s1[WG], s2[WG];
  ACC loss = 0, tw = 0;
  for (long i = get_global_id(0); i < N * S; i += get_global_size(0)) {
    const long t = (long)target[t_offset + i];
    if (t == ignore_index || t < 0 || t >= C) continue;  // a bad target (recorded, see loss.cl) is skipped
    const long n = i / S, s = i - n * S;
    const ACC w = has_weight ? (ACC)LOAD_T(weight, w_offset + t) : (ACC)1;
    loss -= w * (ACC)LOAD_T(in, in_offset + (n * C + t) * S + s);
    tw += w;
  }
  seg_sum2(s1, s2, &loss, &tw, get_local_id(0), WG, 1);
  if (get_local_id(0) == 0) {
    partial[partial_offset + 2 * get_group_id(0)] = loss;
    partial[partial_offset + 2 * get_group_id(0) + 1] = tw;
  }
}

// 'mean': loss / total weight (0 / 0 = NaN when every target is ignored, as on CPU).
__kernel void nll_reduce_finish(__global T_T* out, ulong out_offset, __global T_T* total_weight, ulong tw_offset,
                                __global const ACC* partial, ulong partial_offset, long groups, int mean) {
  __local ACC s1[WG], s2[WG];
  ACC loss = 0, tw = 0;
  for (long g = get_local_id(0); g < groups; g += WG) {
    loss += partial[partial_offset + 2 * g];
    tw += partial[partial_offset + 2 * g + 1];
  }
  seg_sum2(s1, s2, &loss, &tw, get_local_id(0), WG, 1);
  if (get_local_id(0) == 0) {
    STORE_T(out, out_offset, mean ? loss / tw : loss);
    STORE_T(total_weight, tw_offset, tw);
  }
}
