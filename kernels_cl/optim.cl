// Fused optimizer steps (torch.optim's fused=True), one program per parameter
// dtype. aten/native/fused_optimizers.cpp prepends the prelude and P_T, LOAD_P,
// STORE_P (operand_defines for the parameter dtype; gradients and states share
// it). Math is in M_T (double for float64 parameters, float otherwise), in the
// order ATen's CPU fused kernels use. Optional tensors (step, lr, grad_scale,
// found_inf) are float32 device scalars read here, so no value travels to the host.

#ifdef TOCL_FP64
#define M_T double
#else
#define M_T float
#endif

// Bound checks, AMP (grad_scale, found_inf) and maximize, common to both.
// A work item updates PER_ITEM consecutive elements, so per-launch values
// (bias corrections, lr) are computed once per PER_ITEM elements.
#define PER_ITEM 16
#define ITEM_BEGIN                                                                       \
  const ulong first = get_global_id(0) * PER_ITEM;                                       \
  if (first >= n) return;                                                                \
  if (has_found_inf && found_inf[found_inf_offset] == 1.0f) return;                      \
  const ulong last = min(first + PER_ITEM, n);
#define ELEMENT_BEGIN                                                                    \
  for (ulong i = first; i < last; ++i) {                                                 \
    M_T g = (M_T)LOAD_P(grad, grad_offset + i);                                          \
    if (has_grad_scale) g /= (M_T)grad_scale[grad_scale_offset];                         \
    if (maximize) g = -g;                                                                \
    M_T p = (M_T)LOAD_P(param, param_offset + i);
#define ELEMENT_END }

#define AMP_PARAMS                                                                       \
  int has_grad_scale, __global const float* grad_scale, ulong grad_scale_offset,         \
  int has_found_inf, __global const float* found_inf, ulong found_inf_offset

// adamw: decoupled weight decay (AdamW) instead of L2 added to the gradient (Adam).
__kernel void fused_adam(__global P_T* param, ulong param_offset, __global const P_T* grad, ulong grad_offset,
                         __global P_T* exp_avg, ulong exp_avg_offset, __global P_T* exp_avg_sq,
                         ulong exp_avg_sq_offset, __global P_T* max_exp_avg_sq, ulong max_exp_avg_sq_offset,
                         __global const float* step, ulong step_offset, ulong n, M_T lr_value, int has_lr,
                         __global const float* lr_tensor, ulong lr_offset, M_T beta1, M_T beta2, M_T weight_decay,
                         M_T eps, int amsgrad, int maximize, int adamw, AMP_PARAMS) {
  ITEM_BEGIN
  const M_T lr = has_lr ? (M_T)lr_tensor[lr_offset] : lr_value;
  const M_T t = (M_T)step[step_offset];
  // beta^t as exp2(t * log2(beta)): PoCL's pow costs about a microsecond per call.
  const M_T bias_correction1 = (M_T)1 - exp2(t * log2(beta1));
  const M_T bias_correction2 = (M_T)1 - exp2(t * log2(beta2));
  const M_T bias_correction2_sqrt = sqrt(bias_correction2);
  const M_T step_size = lr / bias_correction1;
  ELEMENT_BEGIN
  if (weight_decay != (M_T)0) {
    if (adamw)
      p -= lr * weight_decay * p;
    else
      g += p * weight_decay;
  }
  M_T m = (M_T)LOAD_P(exp_avg, exp_avg_offset + i);
  M_T v = (M_T)LOAD_P(exp_avg_sq, exp_avg_sq_offset + i);
  m = m + ((M_T)1 - beta1) * (g - m);  // lerp(m, g, 1 - beta1)
  v = v * beta2 + ((M_T)1 - beta2) * g * g;
  M_T denom;
  if (amsgrad) {
    const M_T vmax = fmax((M_T)LOAD_P(max_exp_avg_sq, max_exp_avg_sq_offset + i), v);
    STORE_P(max_exp_avg_sq, max_exp_avg_sq_offset + i, vmax);
    denom = sqrt(vmax) / bias_correction2_sqrt + eps;
  } else {
    denom = sqrt(v) / bias_correction2_sqrt + eps;
  }
  p -= step_size * m / denom;
  STORE_P(param, param_offset + i, p);
  STORE_P(exp_avg, exp_avg_offset + i, m);
  STORE_P(exp_avg_sq, exp_avg_sq_offset + i, v);
  ELEMENT_END
}

// SGD with momentum, dampening and Nesterov; has_buf: there is a momentum buffer.
__kernel void fused_sgd(__global P_T* param, ulong param_offset, __global const P_T* grad, ulong grad_offset,
                        __global P_T* buf, ulong buf_offset, int has_buf, ulong n, M_T lr_value, int has_lr,
                        __global const float* lr_tensor, ulong lr_offset, M_T weight_decay, M_T momentum,
                        M_T dampening, int nesterov, int maximize, int first_step, AMP_PARAMS) {
  ITEM_BEGIN
  const M_T lr = has_lr ? (M_T)lr_tensor[lr_offset] : lr_value;
  ELEMENT_BEGIN
  if (weight_decay != (M_T)0) g += p * weight_decay;
  if (has_buf && momentum != (M_T)0) {
    M_T b = first_step ? g : momentum * (M_T)LOAD_P(buf, buf_offset + i) + ((M_T)1 - dampening) * g;
    STORE_P(buf, buf_offset + i, b);
    g = nesterov ? g + momentum * b : b;
  }
  p -= lr * g;
  STORE_P(param, param_offset + i, p);
  ELEMENT_END
}
