// Float logarithms, expm1, pow, sin, cos, tan, atan, asin and acos of our own, for devices whose driver's are slow
// (runtime/kernel_forms.h's own_float_math: PoCL's CPU device). PoCL 3.1 took 8-16 ns an element for
// float log, log10, log1p, expm1, sin and cos (pow 70), against 0.5 ns for exp: it calls a scalar
// library routine, which keeps the work-item loop from vectorising. The code below is straight-line
// selects over polynomials and vectorises, at a few times exp's cost. Where TOCL_OWN_FLOAT_MATH is
// defined (a build option the runtime adds for such devices), log, log2, log10, log1p, expm1, pow, sin,
// cos, tan, atan, asin and acos of floats call these; doubles and vectors keep the builtins. pow and the trigonometric
// functions compute in double (where the device has it; else they stay the driver's).
//
// The logarithms' polynomial is Cephes' logf (S. L. Moshier): log(1 + f) for 1 + f in [sqrt(1/2),
// sqrt(2)), about 1 ulp; the exponent's part is added in two pieces of ln 2 so that log(2^e) loses nothing.
#ifdef TOCL_OWN_FLOAT_MATH
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

// Always inlined: a call to a function the inliner left out keeps PoCL's work-item loop scalar (expm1 through
// a not-inlined log ran at the builtin's 12 ns an element instead of 1.5).
#define TOCL_MATH_INLINE static inline __attribute__((always_inline))

// x = 2^e (1 + f) with 1 + f in [sqrt(1/2), sqrt(2)); *z = f*f, returns the polynomial's part of
// log(1 + f) - f (so log(1 + f) = f + that). x must be positive and finite (subnormals included).
TOCL_MATH_INLINE float tocl_log_parts(float x, float* f_out, float* e_out) {
  const bool subnormal = x < 1.17549435e-38f;
  const int bits = as_int(subnormal ? x * 8388608.0f : x);  // 2^23 brings a subnormal into the normals
  int e = ((bits >> 23) & 0xff) - 127 - (subnormal ? 23 : 0);
  float m = as_float((bits & 0x007fffff) | 0x3f800000);  // [1, 2)
  const bool high = m > 1.41421356f;
  m = high ? 0.5f * m : m;
  e = high ? e + 1 : e;
  const float f = m - 1.0f;  // exact
  const float z = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  *f_out = f;
  *e_out = (float)e;
  return p * f * z - 0.5f * z;
}

// The special values every logarithm shares: NaN for x < 0 (and -inf) or NaN, -inf at +-0, inf at inf.
TOCL_MATH_INLINE float tocl_log_special(float x, float r) {
  r = x == 0.0f ? -INFINITY : r;
  r = x == INFINITY ? INFINITY : r;
  return (x < 0.0f || isnan(x)) ? NAN : r;
}

TOCL_MATH_INLINE float tocl_logf(float x) {
  float f, e;
  const float y = tocl_log_parts(x, &f, &e);
  // ln 2 = 0.693359375 - 2.12194440e-4: the first part times e is exact.
  const float r = (f + (y - 2.12194440e-4f * e)) + 0.693359375f * e;
  return tocl_log_special(x, r);
}

TOCL_MATH_INLINE float tocl_log2f(float x) {
  float f, e;
  const float y = tocl_log_parts(x, &f, &e);
  const float log2e_minus_1 = 0.44269504088896340736f;
  // log2(x) = e + (f + y) log2(e), summed from the smallest term: exact at powers of two.
  const float r = (((y * log2e_minus_1 + f * log2e_minus_1) + y) + f) + e;
  return tocl_log_special(x, r);
}

TOCL_MATH_INLINE float tocl_log10f(float x) {
  float f, e;
  const float y = tocl_log_parts(x, &f, &e);
  // log10(e) = 4.3359375e-1 + 7.00731903e-4 and log10(2) = 3.0078125e-1 + 2.48745664e-4 (Cephes' split).
  float r = y * 7.00731903251827651129e-4f;
  r += f * 7.00731903251827651129e-4f;
  r += e * 2.48745663981195213739e-4f;
  r += y * 4.3359375e-1f;
  r += f * 4.3359375e-1f;
  r += e * 3.0078125e-1f;
  return tocl_log_special(x, r);
}

// n / d to within half an ulp, also where the driver's division is not correctly rounded (NVIDIA's float
// division may be 2.5 ulps off, which took log1p of 1.7e7 to 2.3 ulps): one correction from the exact residual.
TOCL_MATH_INLINE float tocl_div_rn(float n, float d) {
  const float q = n / d;
  return q + fma(-q, d, n) / d;
}

// log1p(x) = log(u) * x / (u - 1) with u = 1 + x rounded (Goldberg): the quotient corrects u's rounding.
TOCL_MATH_INLINE float tocl_log1pf(float x) {
  const float u = 1.0f + x;
  float r = tocl_logf(u) * tocl_div_rn(x, u - 1.0f);
  r = u == 1.0f ? x : r;  // |x| below half an ulp of 1: log1p(x) = x (-0 stays -0)
  return x == INFINITY ? x : r;
}

// expm1(x) = (u - 1) x / log(u) with u = exp(x) rounded (Kahan), exact at the ends.
TOCL_MATH_INLINE float tocl_expm1f(float x) {
  const float u = exp(x);
  const float um1 = u - 1.0f;
  float r = um1 * tocl_div_rn(x, tocl_logf(u));
  r = um1 == -1.0f ? -1.0f : r;
  r = u == 1.0f ? x : r;  // tiny |x| (-0 stays -0)
  r = u == INFINITY ? INFINITY : r;
  return isnan(x) ? x : r;
}

#ifdef cl_khr_fp64
// pow(a, b) of floats as 2^(b log2 |a|) in double: log2 from log(m) = 2 atanh(s), s = (m - 1) / (m + 1),
// |s| < 0.172 (nine terms, 2e-14), then 2^t = 2^n e^(r ln 2) with |r| <= 1/2 (eleven terms, 3e-13);
// the float result is rounded once from that, about half an ulp. The special values are C99's (CPU's):
// pow(x, 0) = pow(1, y) = 1 even for NaN, pow(-1, +-inf) = 1, a negative base needs an integral
// exponent (else NaN; -0 and -inf excepted), whose oddness gives the sign.
TOCL_MATH_INLINE float tocl_pow_through_double(float a, float b) {
  const double x = (double)fabs(a);
  const long bits = as_long(x);
  long e = ((bits >> 52) & 0x7ff) - 1023;
  double m = as_double((bits & 0x000fffffffffffffL) | 0x3ff0000000000000L);  // [1, 2); x is normal in double
  const bool high = m > 1.4142135623730951;
  m = high ? 0.5 * m : m;
  e = high ? e + 1 : e;
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  double p = 1.0 / 19.0;
  p = p * s2 + 1.0 / 17.0;
  p = p * s2 + 1.0 / 15.0;
  p = p * s2 + 1.0 / 13.0;
  p = p * s2 + 1.0 / 11.0;
  p = p * s2 + 1.0 / 9.0;
  p = p * s2 + 1.0 / 7.0;
  p = p * s2 + 1.0 / 5.0;
  p = p * s2 + 1.0 / 3.0;
  p = p * s2 + 1.0;
  double log2x = (double)e + 2.0 * s * p * 1.4426950408889634;
  log2x = x == 0.0 ? -INFINITY : log2x;
  log2x = (x == INFINITY || isnan(x)) ? x : log2x;
  double t = (double)b * log2x;  // NaN for a NaN operand, or 0 times an infinity (answered below)
  // Beyond [-160, 140] the float result is 0 or inf already.
  const double tc = fmin(fmax(t, -160.0), 140.0);
  const double n = rint(tc);
  const double r = (tc - n) * 0.6931471805599453;
  double q = 1.0 / 39916800.0;
  q = q * r + 1.0 / 3628800.0;
  q = q * r + 1.0 / 362880.0;
  q = q * r + 1.0 / 40320.0;
  q = q * r + 1.0 / 5040.0;
  q = q * r + 1.0 / 720.0;
  q = q * r + 1.0 / 120.0;
  q = q * r + 1.0 / 24.0;
  q = q * r + 1.0 / 6.0;
  q = q * r + 0.5;
  q = q * r + 1.0;
  q = q * r + 1.0;
  const double scaled = q * as_double(((long)n + 1023) << 52);
  float out = isnan(t) ? NAN : (float)scaled;
  const bool integral = b == rint(b);
  const bool odd = integral && b * 0.5f != rint(b * 0.5f);
  out = (signbit(a) && odd) ? -out : out;                 // -0, -inf and negative bases
  out = (a < 0.0f && !isinf(a) && !integral && !isinf(b)) ? NAN : out;
  out = (a == -1.0f && isinf(b)) ? 1.0f : out;
  return (b == 0.0f || a == 1.0f) ? 1.0f : out;
}
#define TOCL_OWN_POW 1

// 2/pi in 32-bit words, after two words of zeros (the window of a small argument starts before its point).
__constant uint tocl_two_over_pi[12] = {0u, 0u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u, 0xdb629599u,
                                        0x3c439041u, 0xfe5163abu, 0xdebbc561u, 0xb7246e3au, 0x424dd2e0u};

// |x| (finite, at least 2^-12; other values give an unused result) = (q + f) pi/2 with f in [-1/2, 1/2):
// returns f pi/2 in double, *q the quadrant.
TOCL_MATH_INLINE double tocl_reduce_pio2(float ax, int* q) {
  const uint bits = as_uint(ax);
  const int e = (int)(bits >> 23) - 127 - 23;  // ax = m 2^e, m an integer below 2^24
  const ulong m = (ulong)((bits & 0x7fffffu) | 0x800000u);
  // The 96 bits of 2/pi whose products with m 2^e have weights 2 (mod 4 matters: the bits before give
  // multiples of 4) down to 2^-93 (W times m carries the fraction 70 bits deep, a float's worst case for
  // cancellation near a multiple of pi/2 is about 2^-30).
  // First bit of the window in the table (bit 0: the top of word 0). Clamped: the caller discards the
  // result for |x| below 2^-12, zeros and subnormals, whose window would start before the table.
  const int p = clamp(e + 62, 0, 167);
  const int i = p >> 5, sh = p & 31;
  const uint t0 = tocl_two_over_pi[i], t1 = tocl_two_over_pi[i + 1], t2 = tocl_two_over_pi[i + 2],
             t3 = tocl_two_over_pi[i + 3];
  const uint w0 = sh ? (t0 << sh) | (t1 >> (32 - sh)) : t0;
  const uint w1 = sh ? (t1 << sh) | (t2 >> (32 - sh)) : t1;
  const uint w2 = sh ? (t2 << sh) | (t3 >> (32 - sh)) : t2;
  // |x| 2/pi mod 4 = (m W mod 2^96) 2^-94, W = w0 w1 w2 (the window's top bit is worth 2^-(p - 63) in 2/pi).
  const ulong hi = (m * w0) & 0xffffffffUL;
  const ulong mid = m * w1, lo = m * w2;
  const ulong lo64 = lo + (mid << 32);
  const ulong hi64 = hi + (mid >> 32) + (lo64 < lo ? 1UL : 0UL);
  const int quadrant = (int)((hi64 >> 30) & 3UL);
  double f = (double)(hi64 & 0x3fffffffUL) * 0x1p-30 + (double)lo64 * 0x1p-94;
  const bool up = f >= 0.5;
  f = up ? f - 1.0 : f;
  *q = up ? quadrant + 1 : quadrant;
  return f * 1.5707963267948966;
}

// sin and cos of |y| <= pi/4 in double: Taylor to y^15 and y^16 (error below 1e-16).
TOCL_MATH_INLINE double tocl_sin_kernel(double y) {
  const double z = y * y;
  double p = 1.0 / 1307674368000.0;
  p = p * z - 1.0 / 6227020800.0;
  p = p * z + 1.0 / 39916800.0;
  p = p * z - 1.0 / 362880.0;
  p = p * z + 1.0 / 5040.0;
  p = p * z - 1.0 / 120.0;
  p = p * z + 1.0 / 6.0;
  return y - y * z * p;
}
TOCL_MATH_INLINE double tocl_cos_kernel(double y) {
  const double z = y * y;
  double p = 1.0 / 20922789888000.0;
  p = p * z - 1.0 / 87178291200.0;
  p = p * z + 1.0 / 479001600.0;
  p = p * z - 1.0 / 3628800.0;
  p = p * z + 1.0 / 40320.0;
  p = p * z - 1.0 / 720.0;
  p = p * z + 1.0 / 24.0;
  p = p * z - 0.5;
  return 1.0 + z * p;
}

// sin, cos and tan of floats: the argument reduced exactly enough for every float (Payne and Hanek's
// method, with the bits of 2/pi), then Taylor polynomials in double, rounded once: within half an ulp and a
// little (PoCL's took 9-15 ns an element).
// The values the three share: what the function rounds to for |x| below 2^-12 (`tiny`), NaN at the
// infinities, NaN for NaN.
TOCL_MATH_INLINE float tocl_trig_special(float x, float tiny, float r) {
  r = fabs(x) < 0x1p-12f ? tiny : r;
  return isinf(x) ? NAN : (isnan(x) ? x : r);
}

TOCL_MATH_INLINE float tocl_sinf(float x) {
  int q;
  const double y = tocl_reduce_pio2(fabs(x), &q);
  const double s = tocl_sin_kernel(y), c = tocl_cos_kernel(y);
  double r = (q & 1) ? c : s;
  r = (q & 2) ? -r : r;
  return tocl_trig_special(x, x, (float)(signbit(x) ? -r : r));  // sin x rounds to x (and keeps -0)
}

TOCL_MATH_INLINE float tocl_cosf(float x) {
  int q;
  const double y = tocl_reduce_pio2(fabs(x), &q);
  const double s = tocl_sin_kernel(y), c = tocl_cos_kernel(y);
  double r = (q & 1) ? s : c;
  r = ((q + 1) & 2) ? -r : r;
  return tocl_trig_special(x, 1.0f, (float)r);
}

TOCL_MATH_INLINE float tocl_tanf(float x) {
  int q;
  const double y = tocl_reduce_pio2(fabs(x), &q);
  const double s = tocl_sin_kernel(y), c = tocl_cos_kernel(y);
  const double r = (q & 1) ? -c / s : s / c;
  return tocl_trig_special(x, x, (float)(signbit(x) ? -r : r));  // tan x rounds to x
}
#define TOCL_OWN_TRIG 1
#endif  // cl_khr_fp64

// atan, asin and acos: Cephes' atanf and asinf (S. L. Moshier), straight-line, pi/2, pi/4 and pi added in
// two parts (within 2.2, 2.3 and 1.1 ulp; atan was 2.8 with them in one): PoCL's are scalar calls (atan
// 28 ns an element, asin 12, acos 17). atan reduces |x| to [0, tan(pi/8)] by
// atan(x) = pi/2 + atan(-1/x) above tan(3pi/8) and pi/4 + atan((x - 1) / (x + 1)) above tan(pi/8), one
// division serving both, then an odd polynomial. NaN fails every comparison and stays NaN.
TOCL_MATH_INLINE float tocl_atanf(float x) {
  const float a = fabs(x);
  const bool big = a > 2.414213562373095f, mid = a > 0.4142135623730950f;
  const float r = (big ? -1.0f : (mid ? a - 1.0f : a)) / (big ? a : (mid ? a + 1.0f : 1.0f));
  // pi/2 and pi/4 in two parts (the float and what it lacks), the small one added first.
  const float base = big ? 1.57079637f : (mid ? 0.785398185f : 0.0f);
  const float base_lo = big ? -4.37113883e-8f : (mid ? -2.18556941e-8f : 0.0f);
  const float z = r * r;
  const float p = (((8.05374449538e-2f * z - 1.38776856032e-1f) * z + 1.99777106478e-1f) * z - 3.33329491539e-1f) *
                  z * r + r;
  return copysign(base + (p + base_lo), x);
}

// asin on [-0.5, 0.5], z = x * x (odd in x).
TOCL_MATH_INLINE float tocl_asin_kernel(float x, float z) {
  return ((((4.2163199048e-2f * z + 2.4181311049e-2f) * z + 4.5470025998e-2f) * z + 7.4953002686e-2f) * z +
          1.6666752422e-1f) * z * x + x;
}

// asin |x| = pi/2 - 2 asin(sqrt((1 - |x|) / 2)) above 0.5.
TOCL_MATH_INLINE float tocl_asinf(float x) {
  const float a = fabs(x);
  const bool high = a > 0.5f;
  const float z = high ? 0.5f * (1.0f - a) : a * a;
  const float p = tocl_asin_kernel(high ? sqrt(z) : a, z);
  const float r = high ? 1.57079637f + (-4.37113883e-8f - (p + p)) : p;  // pi/2 in two parts
  return a > 1.0f ? NAN : copysign(r, x);
}

// acos x = 2 asin(sqrt((1 - x) / 2)) above 0.5, pi - 2 asin(sqrt((1 + x) / 2)) below -0.5, pi/2 - asin x between.
TOCL_MATH_INLINE float tocl_acosf(float x) {
  const float a = fabs(x);
  const bool outer = a > 0.5f;
  const float z = outer ? 0.5f * (1.0f - a) : x * x;
  const float p = tocl_asin_kernel(outer ? sqrt(z) : x, z);
  float r = outer ? p + p : 1.57079637f + (-4.37113883e-8f - p);  // pi/2 and pi in two parts
  r = outer && x < 0.0f ? 3.14159274f + (-8.74227766e-8f - r) : r;
  return a > 1.0f ? NAN : r;
}

// Overloads by argument type: own for float, the builtin for doubles and vectors. A driver may define
// log etc. as macros (PoCL does): OWN is pasted from the unexpanded name, BUILTIN expands to the driver's.
#define TOCL_BUILTIN_MATH(OWN, BUILTIN, T) \
  static inline __attribute__((overloadable)) T OWN(T x) { return BUILTIN(x); }
#ifdef cl_khr_fp64  // wherever double exists: a double argument must not convert to the float overload
#define TOCL_BUILTIN_MATH_DOUBLES(OWN, BUILTIN)                                          \
  TOCL_BUILTIN_MATH(OWN, BUILTIN, double) TOCL_BUILTIN_MATH(OWN, BUILTIN, double2)       \
  TOCL_BUILTIN_MATH(OWN, BUILTIN, double4) TOCL_BUILTIN_MATH(OWN, BUILTIN, double8)      \
  TOCL_BUILTIN_MATH(OWN, BUILTIN, double16)
#else
#define TOCL_BUILTIN_MATH_DOUBLES(OWN, BUILTIN)
#endif
#define TOCL_MATH_OVERLOADS(NAME)                                                                   \
  TOCL_MATH_INLINE __attribute__((overloadable)) float tocl_##NAME(float x) { return tocl_##NAME##f(x); }    \
  TOCL_BUILTIN_MATH(tocl_##NAME, NAME, float2) TOCL_BUILTIN_MATH(tocl_##NAME, NAME, float4)        \
  TOCL_BUILTIN_MATH(tocl_##NAME, NAME, float8) TOCL_BUILTIN_MATH(tocl_##NAME, NAME, float16)       \
  TOCL_BUILTIN_MATH_DOUBLES(tocl_##NAME, NAME)
TOCL_MATH_OVERLOADS(log)
TOCL_MATH_OVERLOADS(log2)
TOCL_MATH_OVERLOADS(log10)
TOCL_MATH_OVERLOADS(log1p)
TOCL_MATH_OVERLOADS(expm1)
TOCL_MATH_OVERLOADS(atan)
TOCL_MATH_OVERLOADS(asin)
TOCL_MATH_OVERLOADS(acos)
#ifdef TOCL_OWN_POW
TOCL_MATH_INLINE __attribute__((overloadable)) float tocl_pow(float a, float b) {
  return tocl_pow_through_double(a, b);
}
static inline __attribute__((overloadable)) double tocl_pow(double a, double b) { return pow(a, b); }
#define TOCL_BUILTIN_POW(T) static inline __attribute__((overloadable)) T tocl_pow(T a, T b) { return pow(a, b); }
TOCL_BUILTIN_POW(float2) TOCL_BUILTIN_POW(float4) TOCL_BUILTIN_POW(float8) TOCL_BUILTIN_POW(float16)
TOCL_BUILTIN_POW(double2) TOCL_BUILTIN_POW(double4) TOCL_BUILTIN_POW(double8) TOCL_BUILTIN_POW(double16)
#endif
#ifdef TOCL_OWN_TRIG
TOCL_MATH_OVERLOADS(sin)
TOCL_MATH_OVERLOADS(cos)
TOCL_MATH_OVERLOADS(tan)
#endif

// From here on every program's log(...) etc. resolve by argument type to the functions above.
#undef log
#undef log2
#undef log10
#undef log1p
#undef expm1
#undef atan
#undef asin
#undef acos
#define log(x) tocl_log(x)
#define log2(x) tocl_log2(x)
#define log10(x) tocl_log10(x)
#define log1p(x) tocl_log1p(x)
#define expm1(x) tocl_expm1(x)
#define atan(x) tocl_atan(x)
#define asin(x) tocl_asin(x)
#define acos(x) tocl_acos(x)
#ifdef TOCL_OWN_POW
#undef pow
#define pow(a, b) tocl_pow(a, b)
#endif
#ifdef TOCL_OWN_TRIG
#undef sin
#undef cos
#undef tan
#define sin(x) tocl_sin(x)
#define cos(x) tocl_cos(x)
#define tan(x) tocl_tan(x)
#endif

#endif  // TOCL_OWN_FLOAT_MATH
