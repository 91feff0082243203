// Negative log-likelihood loss over input (N, C, S) and target (N, S), contiguous
// (nll_loss: S = 1; nll_loss2d: S = H * W). `weight` (C) is read only when has_weight.
// Targets were bounds-checked (aten/native/index_bounds.cpp), or, where that check is deferred, recorded
// for the next wait: a target outside [0, C) is skipped like ignore_index, so nothing reads out of bounds.

inline ACC class_weight(__global const T_T* weight, ulong w_offset, int has_weight, long t) {
  return has_weight ? (ACC)LOAD_T(weight, w_offset + t) : (ACC)1;
}

// reduction 'none': one work-item per (n, s).
__kernel void nll_forward_none(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset,
                               __global const I_T* target, ulong t_offset, __global const T_T* weight,
                               ulong w_offset, int has_weight, long N, long C, long S, long ignore_index) {
  const long i = get_global_id(0);
  if (i >= N * S) return;
  const long t = (long)target[t_offset + i];
  ACC v = 0;
  if (t != ignore_index && t >= 0 && t < C) {
    const long n = i / S, s = i % S;
    v = -class_weight(weight, w_offset, has_weight, t) * (ACC)LOAD_T(in, in_offset + (n * C + t) * S + s);
  }
  STORE_T(out, out_offset + i, v);
}

// reductions 'sum' and 'mean': one work-group of WG items; writes the loss and the total weight.
__kernel void nll_forward_reduce(__global T_T* out, ulong out_offset, __global T_T* total_weight, ulong tw_offset,
                                 __global const T_T* in, ulong in_offset, __global const I_T* target,
                                 ulong t_offset, __global const T_T* weight, ulong w_offset, int has_weight, long N,
                                 long C, long S, long ignore_index, int mean) {
  __local ACC loss_part[WG];
  __local ACC weight_part[WG];
  const int l = get_local_id(0);
  ACC loss = 0, tw = 0;
  for (long i = l; i < N * S; i += WG) {
    const long t = (long)target[t_offset + i];
    if (t == ignore_index || t < 0 || t >= C) continue;
    const long n = i / S, s = i % S;
    const ACC w = class_weight(weight, w_offset, has_weight, t);
    loss -= w * (ACC)LOAD_T(in, in_offset + (n * C + t) * S + s);
    tw += w;
  }
  loss_part[l] = loss;
  weight_part[l] = tw;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (l < s) {
      loss_part[l] += loss_part[l + s];
      weight_part[l] += weight_part[l + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) {
    STORE_T(out, out_offset, mean ? loss_part[0] / weight_part[0] : loss_part[0]);
    STORE_T(total_weight, tw_offset, weight_part[0]);
  }
}

// grad_input (zeroed by the host) at each (n, target, s): -weight * grad (/ total weight for 'mean').
// reduction: 0 none (grad_output is (N, S)), 1 mean, 2 sum (grad_output is 0-d).
__kernel void nll_backward(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out, ulong go_offset,
                           __global const I_T* target, ulong t_offset, __global const T_T* weight, ulong w_offset,
                           int has_weight, __global const T_T* total_weight, ulong tw_offset, long N, long C,
                           long S, long ignore_index, int reduction) {
  const long i = get_global_id(0);
  if (i >= N * S) return;
  const long t = (long)target[t_offset + i];
  if (t == ignore_index || t < 0 || t >= C) return;
  const long n = i / S, s = i % S;
  ACC g = reduction == 0 ? (ACC)LOAD_T(grad_out, go_offset + i) : (ACC)LOAD_T(grad_out, go_offset);
  if (reduction == 1) g /= (ACC)LOAD_T(total_weight, tw_offset);
  STORE_T(grad_in, gi_offset + (n * C + t) * S + s, -class_weight(weight, w_offset, has_weight, t) * g);
}
