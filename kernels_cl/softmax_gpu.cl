// Softmax and log-softmax over one dimension, forward and backward: the GPU forms (softmax.cl
// holds the CPU forms; aten/native/softmax.cpp takes these where runtime/kernel_forms.h says
// row_gpu_forms). The tensor is viewed as (outer, n, inner), contiguous; a line (line_reduce.cl) is a
// row (inner == 1) or a column. Items keep LINE_REGS elements of their line in registers, so a
// line up to seg * LINE_REGS long is read once: max, sum of exp, write.
// Rows with a NaN give NaN and rows of -inf only give NaN, as on CPU, except in safe softmax
// (mode 2), whose rows of -inf only give 0. mode: 0 softmax, 1 log_softmax, 2 safe softmax.

#include "line_reduce.cl"

__kernel void softmax_lines(__global T_T* out, ulong out_offset, __global const T_T* in, ulong in_offset, long n,
                            long inner, long lines, int seg, int mode) {
  __local ACC scratch[WG];
  const Line L = line_of(n, inner, lines, seg);
  __global const T_T* x = in + in_offset + L.base;
  __global T_T* y = out + out_offset + L.base;
  const long st = L.stride;
  ACC v[LINE_REGS];
  ACC m = ACC_LOWEST;
#pragma unroll
  for (int i = 0; i < LINE_REGS; ++i) {
    const long k = L.pos + (long)i * seg;
    v[i] = k < n ? (ACC)LOAD_T(x, k * st) : ACC_LOWEST;
    m = LINE_MAX_NAN(m, v[i]);
  }
  for (long k = L.pos + (long)LINE_REGS * seg; k < n; k += seg) m = LINE_MAX_NAN(m, (ACC)LOAD_T(x, k * st));
  m = seg_max(scratch, m, L.pos, seg, L.step);
  const int zero = mode == 2 && m == -INFINITY;  // safe softmax, a row of -inf only: exp(x - 0) * 0
  if (zero) m = 0;
  const int log_softmax = mode == 1;
  ACC s = 0;
#pragma unroll
  for (int i = 0; i < LINE_REGS; ++i) {
    if (L.pos + (long)i * seg < n) {
      const ACC e = exp(v[i] - m);
      s += e;
      if (!log_softmax) v[i] = e;
    }
  }
  for (long k = L.pos + (long)LINE_REGS * seg; k < n; k += seg) s += exp((ACC)LOAD_T(x, k * st) - m);
  s = seg_sum(scratch, s, L.pos, seg, L.step);
  if (!L.live) return;  // no barrier follows
  const ACC scale = zero ? (ACC)0 : (ACC)1 / s, shift = log(s);
#pragma unroll
  for (int i = 0; i < LINE_REGS; ++i) {
    const long k = L.pos + (long)i * seg;
    if (k < n) STORE_T(y, k * st, log_softmax ? v[i] - m - shift : v[i] * scale);
  }
  for (long k = L.pos + (long)LINE_REGS * seg; k < n; k += seg) {
    const ACC d = (ACC)LOAD_T(x, k * st) - m;
    STORE_T(y, k * st, log_softmax ? d - shift : exp(d) * scale);
  }
}

// softmax: grad_in = y * (g - sum(g * y)); log-softmax: grad_in = g - exp(y) * sum(g).
__kernel void softmax_backward_lines(__global T_T* grad_in, ulong gi_offset, __global const T_T* grad_out,
                                     ulong go_offset, __global const T_T* y, ulong y_offset, long n, long inner,
                                     long lines, int seg, int log_softmax) {
  __local ACC scratch[WG];
  const Line L = line_of(n, inner, lines, seg);
  __global const T_T* g = grad_out + go_offset + L.base;
  __global const T_T* yl = y + y_offset + L.base;
  __global T_T* gi = grad_in + gi_offset + L.base;
  const long st = L.stride;
  ACC gv[LINE_REGS], yv[LINE_REGS];
  ACC s = 0;
#pragma unroll
  for (int i = 0; i < LINE_REGS; ++i) {
    const long k = L.pos + (long)i * seg;
    gv[i] = k < n ? (ACC)LOAD_T(g, k * st) : (ACC)0;
    yv[i] = k < n ? (ACC)LOAD_T(yl, k * st) : (ACC)0;
    s += log_softmax ? gv[i] : gv[i] * yv[i];
  }
  for (long k = L.pos + (long)LINE_REGS * seg; k < n; k += seg) {
    const ACC gk = LOAD_T(g, k * st);
    s += log_softmax ? gk : gk * (ACC)LOAD_T(yl, k * st);
  }
  s = seg_sum(scratch, s, L.pos, seg, L.step);
  if (!L.live) return;
#pragma unroll
  for (int i = 0; i < LINE_REGS; ++i) {
    const long k = L.pos + (long)i * seg;
    if (k < n) STORE_T(gi, k * st, log_softmax ? gv[i] - exp(yv[i]) * s : yv[i] * (gv[i] - s));
  }
  for (long k = L.pos + (long)LINE_REGS * seg; k < n; k += seg) {
    const ACC gk = LOAD_T(g, k * st), yk = LOAD_T(yl, k * st);
    STORE_T(gi, k * st, log_softmax ? gk - exp(yk) * s : yk * (gk - s));
  }
}
