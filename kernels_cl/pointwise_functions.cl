// Helpers for pointwise expressions, written once over the compute type C_T.
// C_IS_FLOAT is 1 for float and double, 0 for integers and bool.
// Always inlined: PoCL's inliner leaves a large helper (gelu_erf_backward) as a call, and a call
// in the work-item loop stops the vectoriser (gelu_backward 8x slower).
// Overloadable: the vector kernel (VEC16, below) adds float16 versions of some of them.
#define TOCL_INLINE static inline __attribute__((always_inline, overloadable))

#if C_IS_FLOAT
// Python's modulo: the result takes the sign of the divisor.
TOCL_INLINE C_T py_remainder(C_T a, C_T b) {
  C_T r = fmod(a, b);
  if (r != (C_T)0 && ((r < (C_T)0) != (b < (C_T)0))) r += b;
  return r;
}
TOCL_INLINE C_T floor_divide(C_T a, C_T b) {
  if (b == (C_T)0) return a / b;
  C_T mod = fmod(a, b);
  C_T div = (a - mod) / b;
  if (mod != (C_T)0 && ((b < (C_T)0) != (mod < (C_T)0))) div -= (C_T)1;
  if (div != (C_T)0) {
    C_T fl = floor(div);
    if (div - fl > (C_T)0.5) fl += (C_T)1;
    return fl;
  }
  return copysign((C_T)0, a / b);
}
// frexp as C's: x = m * 2^e with 0.5 <= |m| < 1; zero, infinity and NaN give x itself and exponent 0 (glibc's,
// which CPU's torch.frexp returns; OpenCL leaves the exponent of infinity and NaN open).
TOCL_INLINE C_T frexp_mantissa_of(C_T x) {
  if (x == (C_T)0 || isinf(x) || isnan(x)) return x;
  int e;
  return frexp(x, &e);
}
TOCL_INLINE int frexp_exponent_of(C_T x) {
  if (x == (C_T)0 || isinf(x) || isnan(x)) return 0;
  int e;
  frexp(x, &e);
  return e;
}
// Round half to even, as torch.round does.
TOCL_INLINE C_T round_even(C_T x) { return rint(x); }
// NaN gives 0, as on CPU.
TOCL_INLINE C_T sign_of(C_T x) { return (C_T)((x > (C_T)0) - (x < (C_T)0)); }
TOCL_INLINE C_T nan_propagating_max(C_T a, C_T b) { return (isnan(a) || isnan(b)) ? (a + b) : fmax(a, b); }
TOCL_INLINE C_T nan_propagating_min(C_T a, C_T b) { return (isnan(a) || isnan(b)) ? (a + b) : fmin(a, b); }
TOCL_INLINE C_T sigmoid_of(C_T x) { return (C_T)1 / ((C_T)1 + exp(-x)); }
// erf in single precision without the library call: PoCL's erf is a scalar call that stops the
// work-group vectoriser (24 ns an element, 20x exp). |x| < 0.921875: x + x R(x^2); below 3.921875,
// 1 - erfc(|x|), erfc a polynomial of degree 9 in u = |x| - centre on [0.921875, 2.25) and on [2.25,
// 3.921875) (one Horner chain, each step taking its piece's coefficient); then 1. No exp: PoCL's costs
// three times the 18 multiply-adds (the exp form this replaces took 3.7x a degree-14 polynomial). Near-minimax
// fits of our own (scripts/fit_erf.py: Lawson's iteration against mpmath), within 1.2 ulp of erf in float
// arithmetic, with or without fused multiply-adds. NaN takes the first branch, which keeps it. Double keeps
// the library's erf.
#define ERFC_STEP(lo, hi) p = p * u + (upper ? (C_T)(hi) : (C_T)(lo));
TOCL_INLINE C_T erf_of(C_T x) {
  if (sizeof(C_T) != 4) return erf(x);
  const C_T a = fabs(x), s = x * x;
  const C_T r = (C_T)1.283791512e-01f + s * ((C_T)-3.761249483e-01f + s * ((C_T)1.128181741e-01f +
                s * ((C_T)-2.676664293e-02f + s * ((C_T)4.993211944e-03f + s * (C_T)-5.990987411e-04f))));
  const int upper = a >= (C_T)2.25f;
  const C_T u = a - (upper ? (C_T)3.0859375f : (C_T)1.5859375f);
  C_T p = upper ? (C_T)-6.833115549e-06f : (C_T)-1.323155360e-03f;
  ERFC_STEP(1.351162326e-03f, 1.025918464e-04f)
  ERFC_STEP(5.821768660e-03f, -3.154207079e-04f)
  ERFC_STEP(-1.616347022e-02f, 5.415943451e-04f)
  ERFC_STEP(5.730859004e-03f, -6.875011604e-04f)
  ERFC_STEP(4.897244275e-02f, 6.782083074e-04f)
  ERFC_STEP(-1.225608289e-01f, -4.971318413e-04f)
  ERFC_STEP(1.446780115e-01f, 2.549770870e-04f)
  ERFC_STEP(-9.122593701e-02f, -8.251429244e-05f)
  ERFC_STEP(2.490621619e-02f, 1.275667091e-05f)
  const C_T large = a >= (C_T)3.921875f ? (C_T)1 : (C_T)1 - p;
  return a >= (C_T)0.921875f ? copysign(large, x) : x + x * r;
}
#undef ERFC_STEP
TOCL_INLINE C_T gelu_erf(C_T x) { return x * (C_T)0.5 * ((C_T)1 + erf_of(x * (C_T)M_SQRT1_2)); }
// float tanh reaching +-1 where the rounded value is +-1 (|x| > 9.01): PoCL's stops one ulp short (tanh(100)
// = 0.99999994), which made 1 - tanh^2 (tanh's and mish's backward) 1.2e-7 instead of 0. Its double tanh
// saturates.
TOCL_INLINE C_T tanh_of(C_T x) {
  return sizeof(C_T) == 4 && fabs(x) > (C_T)9.01 ? copysign((C_T)1, x) : tanh(x);
}
// 1 + tanh(u) = 2 / (1 + exp(-2u)) and 1 - tanh(u)^2 = 4 / ((1 + exp(-2u)) (1 + exp(2u))): no cancellation
// where tanh(u) is near -1 or 1 (a driver's tanh may return -0.99999994 for tanh(-10), which made
// gelu_tanh(-104) -3e-6 instead of -0; the CPU's forms round through an exact -1 there).
TOCL_INLINE C_T one_plus_tanh(C_T u) { return (C_T)2 / ((C_T)1 + exp((C_T)-2 * u)); }
TOCL_INLINE C_T sech2_of(C_T u) { return (C_T)4 / (((C_T)1 + exp((C_T)-2 * u)) * ((C_T)1 + exp((C_T)2 * u))); }
TOCL_INLINE C_T gelu_tanh(C_T x) {
  const C_T inner = (C_T)(M_2_SQRTPI * M_SQRT1_2) * (x + (C_T)0.044715 * x * x * x);
  return (C_T)0.5 * x * one_plus_tanh(inner);
}
TOCL_INLINE C_T gelu_erf_backward(C_T g, C_T x) {
  const C_T cdf = (C_T)0.5 * ((C_T)1 + erf_of(x * (C_T)M_SQRT1_2));
  const C_T pdf = exp((C_T)-0.5 * x * x) * (C_T)(M_2_SQRTPI * M_SQRT1_2 * 0.5);
  return g * (cdf + x * pdf);
}
TOCL_INLINE C_T gelu_tanh_backward(C_T g, C_T x) {
  const C_T k_beta = (C_T)(M_2_SQRTPI * M_SQRT1_2);
  const C_T k_kappa = (C_T)0.044715;
  const C_T x_sq = x * x;
  const C_T x_cube = x_sq * x;
  const C_T inner = k_beta * (x + k_kappa * x_cube);
  const C_T left = (C_T)0.5 * x;
  const C_T left_derivative = (C_T)0.5 * one_plus_tanh(inner);
  const C_T right_derivative = left * sech2_of(inner) * k_beta * ((C_T)1 + (C_T)3 * k_kappa * x_sq);
  return g * (left_derivative + right_derivative);
}
TOCL_INLINE C_T softplus_of(C_T x, C_T beta, C_T threshold) {
  return (x * beta) > threshold ? x : log1p(exp(x * beta)) / beta;
}
TOCL_INLINE C_T mish_of(C_T x) { return x * tanh_of(log1p(exp(x))); }
TOCL_INLINE C_T mish_backward_of(C_T g, C_T x) {
  const C_T s = sigmoid_of(x);
  const C_T sp = log1p(exp(x));
  return g * (tanh_of(sp) + x * s * sech2_of(sp));
}
// Giles' single-precision approximation refined by two Newton steps on erf; in double, where |y| > 0.5,
// by Newton steps on log(erfc(|x|)) = log(1 - |y|) instead: erf(x) - y is all cancellation near +-1 (double
// erfinv(1 - 1e-12) was 8% off), log(erfc) is nearly quadratic, and 1 - |y| is exact.
// Straight-line (both of Giles' polynomials evaluated, one taken; the ends chosen last): branches kept
// PoCL's loop scalar, and with the driver's erf in the Newton steps erfinv took 116 ns an element.
TOCL_INLINE C_T erfinv_of(C_T y) {
  const C_T w = -log(((C_T)1 - y) * ((C_T)1 + y));
  const C_T wc = w - (C_T)2.5;
  C_T pc = (C_T)2.81022636e-08;
  pc = (C_T)3.43273939e-07 + pc * wc;
  pc = (C_T)-3.5233877e-06 + pc * wc;
  pc = (C_T)-4.39150654e-06 + pc * wc;
  pc = (C_T)0.00021858087 + pc * wc;
  pc = (C_T)-0.00125372503 + pc * wc;
  pc = (C_T)-0.00417768164 + pc * wc;
  pc = (C_T)0.246640727 + pc * wc;
  pc = (C_T)1.50140941 + pc * wc;
  const C_T wt = sqrt(w) - (C_T)3;
  C_T pt = (C_T)-0.000200214257;
  pt = (C_T)0.000100950558 + pt * wt;
  pt = (C_T)0.00134934322 + pt * wt;
  pt = (C_T)-0.00367342844 + pt * wt;
  pt = (C_T)0.00573950773 + pt * wt;
  pt = (C_T)-0.0076224613 + pt * wt;
  pt = (C_T)0.00943887047 + pt * wt;
  pt = (C_T)1.00167406 + pt * wt;
  pt = (C_T)2.83297682 + pt * wt;
  C_T x = (w < (C_T)5 ? pc : pt) * y;
#ifdef TOCL_FP64
  if (sizeof(C_T) == 8 && fabs(y) > (C_T)0.5 && fabs(y) < (C_T)1) return (C_T)tocl_erfinv_tail(y, x, 4);
#endif
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const C_T err = erf_of(x) - y;  // ours: the driver's erf is a scalar call on PoCL
    x -= err / ((C_T)M_2_SQRTPI * exp(-x * x));
  }
  // -inf and inf at -1 and 1, NaN beyond them (and for NaN, which every step above kept).
  x = fabs(y) == (C_T)1 ? copysign((C_T)INFINITY, y) : x;
  return fabs(y) > (C_T)1 ? (C_T)NAN : x;
}
TOCL_INLINE C_T nan_to_num_of(C_T x, C_T nan, C_T posinf, C_T neginf) {
  return isnan(x) ? nan : (isinf(x) ? (x > (C_T)0 ? posinf : neginf) : x);
}
TOCL_INLINE C_T pow_of(C_T a, C_T b) { return pow(a, b); }
#else
// Integers: no division by zero trap (x86 would raise SIGFPE); CUDA also returns garbage there.
// x % -1 is 0 and x / -1 is -x, but MIN % -1 and MIN / -1 overflow in C (PoCL gave -1, NVIDIA other
// values): answered without dividing, as CPU does (MIN / -1 wraps to MIN there).
#define DIVISOR_IS_MINUS_ONE(b) ((C_T)-1 < (C_T)0 && (b) == (C_T)-1)
#define WRAPPING_NEGATION(a) ((C_T)((ulong)0 - (ulong)(a)))
TOCL_INLINE C_T py_remainder(C_T a, C_T b) {
  if (b == (C_T)0 || DIVISOR_IS_MINUS_ONE(b)) return (C_T)0;
  C_T r = a % b;
  if (r != (C_T)0 && ((r < (C_T)0) != (b < (C_T)0))) r += b;
  return r;
}
TOCL_INLINE C_T floor_divide(C_T a, C_T b) {
  if (b == (C_T)0) return (C_T)-1;
  if (DIVISOR_IS_MINUS_ONE(b)) return WRAPPING_NEGATION(a);
  C_T q = a / b;
  if ((a % b != (C_T)0) && ((a < (C_T)0) != (b < (C_T)0))) q -= (C_T)1;
  return q;
}
TOCL_INLINE C_T trunc_divide(C_T a, C_T b) {
  return b == (C_T)0 ? (C_T)-1 : (DIVISOR_IS_MINUS_ONE(b) ? WRAPPING_NEGATION(a) : a / b);
}
TOCL_INLINE C_T int_fmod(C_T a, C_T b) { return (b == (C_T)0 || DIVISOR_IS_MINUS_ONE(b)) ? (C_T)0 : a % b; }
TOCL_INLINE C_T sign_of(C_T x) { return (C_T)((x > (C_T)0) - (x < (C_T)0)); }
TOCL_INLINE C_T pow_of(C_T base, C_T exp) {
  if (exp < (C_T)0) return base == (C_T)1 ? (C_T)1 : (base == (C_T)-1 ? ((exp & 1) ? (C_T)-1 : (C_T)1) : (C_T)0);
  C_T result = (C_T)1;
  while (exp) {
    if (exp & 1) result *= base;
    exp >>= 1;
    base *= base;
  }
  return result;
}
#endif

#if VEC16
// float16 versions of the helpers that the vector kernel's expressions use (pointwise.cl's
// pointwise_contiguous_v16; PointwiseExpr::vectorizes marks them), the same arithmetic lane by lane: where
// the scalar forms branch, these select (a vector comparison's lanes are -1 or 0).
#define V_T float16
TOCL_INLINE V_T sigmoid_of(V_T x) { return (V_T)1 / ((V_T)1 + exp(-x)); }
TOCL_INLINE V_T tanh_of(V_T x) { return select(tanh(x), copysign((V_T)1, x), fabs(x) > (V_T)9.01f); }
#define ERFC_STEP_V(lo, hi) p = p * u + select((V_T)(lo), (V_T)(hi), upper);
TOCL_INLINE V_T erf_of(V_T x) {
  const V_T a = fabs(x), s = x * x;
  const V_T r = (V_T)1.283791512e-01f + s * ((V_T)-3.761249483e-01f + s * ((V_T)1.128181741e-01f +
                s * ((V_T)-2.676664293e-02f + s * ((V_T)4.993211944e-03f + s * (V_T)-5.990987411e-04f))));
  const int16 upper = a >= (V_T)2.25f;
  const V_T u = a - select((V_T)1.5859375f, (V_T)3.0859375f, upper);
  V_T p = select((V_T)-1.323155360e-03f, (V_T)-6.833115549e-06f, upper);
  ERFC_STEP_V(1.351162326e-03f, 1.025918464e-04f)
  ERFC_STEP_V(5.821768660e-03f, -3.154207079e-04f)
  ERFC_STEP_V(-1.616347022e-02f, 5.415943451e-04f)
  ERFC_STEP_V(5.730859004e-03f, -6.875011604e-04f)
  ERFC_STEP_V(4.897244275e-02f, 6.782083074e-04f)
  ERFC_STEP_V(-1.225608289e-01f, -4.971318413e-04f)
  ERFC_STEP_V(1.446780115e-01f, 2.549770870e-04f)
  ERFC_STEP_V(-9.122593701e-02f, -8.251429244e-05f)
  ERFC_STEP_V(2.490621619e-02f, 1.275667091e-05f)
  const V_T large = select((V_T)1 - p, (V_T)1, a >= (V_T)3.921875f);
  // NaN: the comparisons are false, so it takes x + x r, which keeps it (as the scalar form's branch).
  return select(x + x * r, copysign(large, x), a >= (V_T)0.921875f);
}
#undef ERFC_STEP_V
TOCL_INLINE V_T gelu_erf(V_T x) { return x * (V_T)0.5 * ((V_T)1 + erf_of(x * (V_T)M_SQRT1_2)); }
TOCL_INLINE V_T one_plus_tanh(V_T u) { return (V_T)2 / ((V_T)1 + exp((V_T)-2 * u)); }
TOCL_INLINE V_T sech2_of(V_T u) { return (V_T)4 / (((V_T)1 + exp((V_T)-2 * u)) * ((V_T)1 + exp((V_T)2 * u))); }
TOCL_INLINE V_T gelu_tanh(V_T x) {
  const V_T inner = (V_T)(M_2_SQRTPI * M_SQRT1_2) * (x + (V_T)0.044715 * x * x * x);
  return (V_T)0.5 * x * one_plus_tanh(inner);
}
TOCL_INLINE V_T gelu_erf_backward(V_T g, V_T x) {
  const V_T cdf = (V_T)0.5 * ((V_T)1 + erf_of(x * (V_T)M_SQRT1_2));
  const V_T pdf = exp((V_T)-0.5 * x * x) * (V_T)(M_2_SQRTPI * M_SQRT1_2 * 0.5);
  return g * (cdf + x * pdf);
}
TOCL_INLINE V_T gelu_tanh_backward(V_T g, V_T x) {
  const V_T k_beta = (V_T)(M_2_SQRTPI * M_SQRT1_2);
  const V_T k_kappa = (V_T)0.044715;
  const V_T x_sq = x * x;
  const V_T inner = k_beta * (x + k_kappa * x_sq * x);
  const V_T left = (V_T)0.5 * x;
  const V_T left_derivative = (V_T)0.5 * one_plus_tanh(inner);
  const V_T right_derivative = left * sech2_of(inner) * k_beta * ((V_T)1 + (V_T)3 * k_kappa * x_sq);
  return g * (left_derivative + right_derivative);
}
#undef V_T
#endif
