// Special functions for pointwise expressions (lgamma, digamma, polygamma, the modified Bessel functions
// i0, i0e, i1, i1e, ndtri, erfcx, log_ndtr), over the compute type C_T (float or double). The pointwise
// engine appends this file after pointwise_functions.cl only for the expressions that call it
// (PointwiseExpr::special_functions), so other programs do not grow.
//
// CPU PyTorch computes most of these with algorithms from the Cephes Math Library (S. L. Moshier; see
// PyTorch's aten/src/ATen/native/Math.h, note [3-Clause BSD License for the Cephes Math Library]):
// the same algorithms, branch points, evaluation orders and published coefficients are used here, in
// C_T as CPU uses scalar_t, so that values, special values and poles agree with CPU's. Where CPU computes
// in double for float inputs (the Hurwitz zeta behind polygamma, digamma's reflection term), so do we
// where the device has doubles.
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define SF_ACC double
#define SF_HAS_DOUBLE 1
#else
#define SF_ACC C_T
#define SF_HAS_DOUBLE 0
#endif

#define SF_IS_DOUBLE (sizeof(C_T) == 8)

// ---- Polynomials and Chebyshev series over __constant coefficient tables

// c[0] x^n + c[1] x^(n-1) + ... + c[n] (Horner), as Cephes' polevl.
TOCL_INLINE C_T sf_polevl(C_T x, __constant const C_T* c, int n) {
  C_T r = (C_T)0;
  for (int i = 0; i <= n; ++i) r = r * x + c[i];
  return r;
}

// Clenshaw's recurrence for a Chebyshev series of n terms at x (already mapped to [-2, 2]), as Cephes'
// chbevl: half the difference of the last two partial sums.
TOCL_INLINE C_T sf_chbevl(C_T x, __constant const C_T* c, int n) {
  C_T b0 = c[0], b1 = (C_T)0, b2 = (C_T)0;
  for (int i = 1; i < n; ++i) {
    b2 = b1;
    b1 = b0;
    b0 = x * b1 - b2 + c[i];
  }
  return (C_T)0.5 * (b0 - b2);
}

// ---- Modified Bessel functions of the first kind (Cephes' i0, i0e, i1, i1e)

// exp(-x) I0(x) on [0, 8], in y = x / 2 - 2.
__constant C_T sf_i0e_small[30] = {
    -4.41534164647933937950E-18, 3.33079451882223809783E-17,  -2.43127984654795469359E-16,
    1.71539128555513303061E-15,  -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12,  -1.72682629144155570723E-11,
    9.67580903537323691224E-11,  -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8,  6.04699502254191894932E-8,   -2.67079385394061173391E-7,
    1.11738753912010371815E-6,   -4.41673835845875056359E-6,  1.64484480707288970893E-5,
    -5.75419501008210370398E-5,  1.88502885095841655729E-4,   -5.76375574538582365885E-4,
    1.63947561694133579842E-3,   -4.32430999505057594430E-3,  1.05464603945949983183E-2,
    -2.37374148058994688156E-2,  4.93052842396707084878E-2,   -9.49010970480476444210E-2,
    1.71620901522208775349E-1,   -3.04682672343198398683E-1,  6.76795274409476084995E-1};
// exp(-x) sqrt(x) I0(x) on (8, inf), in y = 32 / x - 2.
__constant C_T sf_i0e_large[25] = {
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17,  -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15,  3.81168066935262242075E-15,  -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14,  3.85277838274214270114E-13,
    7.18012445138366623367E-13,  -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11,  4.94060238822496958910E-10,
    3.39623202570838634515E-9,   2.26666899049817806459E-8,   2.04891858946906374183E-7,
    2.89137052083475648297E-6,   6.88975834691682398426E-5,   3.36911647825569408990E-3,
    8.04490411014108831608E-1};
// exp(-x) I1(x) / x on [0, 8] and exp(-x) sqrt(x) I1(x) on (8, inf). CPU's float forms keep only the
// last 17 and 7 coefficients (the others are below float's precision); so do ours.
__constant C_T sf_i1e_small[29] = {
    2.77791411276104639959E-18,  -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15,  -5.04218550472791168711E-14,
    3.22379336594557470981E-13,  -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10,  -1.88724975172282928790E-9,
    9.38153738649577178388E-9,   -4.44505912879632808065E-8,  2.00329475355213526229E-7,
    -8.56872026469545474066E-7,  3.47025130813767847674E-6,   -1.32731636560394358279E-5,
    4.78156510755005422638E-5,   -1.61760815825896745588E-4,  5.12285956168575772895E-4,
    -1.51357245063125314899E-3,  4.15642294431288815669E-3,   -1.05640848946261981558E-2,
    2.47264490306265168283E-2,   -5.29459812080949914269E-2,  1.02643658689847095384E-1,
    -1.76416518357834055153E-1,  2.52587186443633654823E-1};
__constant C_T sf_i1e_large[25] = {
    7.51729631084210481353E-18,  4.41434832307170791151E-18,  -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16,  3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14,  -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12,  1.41258074366137813316E-11,
    3.25260358301548823856E-11,  -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9,  -2.63146884688951950684E-8,  -2.51223623787020892529E-7,
    -3.88256480887769039346E-6,  -1.10588938762623716291E-4,  -9.76109749136146840777E-3,
    7.78576235018280120474E-1};
#define SF_I1E_SMALL (SF_IS_DOUBLE ? sf_i1e_small : sf_i1e_small + 12)
#define SF_I1E_SMALL_N (SF_IS_DOUBLE ? 29 : 17)
#define SF_I1E_LARGE (SF_IS_DOUBLE ? sf_i1e_large : sf_i1e_large + 18)
#define SF_I1E_LARGE_N (SF_IS_DOUBLE ? 25 : 7)

// The scaled series of |x|: exp(-|x|) I0(|x|) times sqrt(|x|) above 8.
TOCL_INLINE C_T sf_i0e_series(C_T ax) {
  return ax <= (C_T)8 ? sf_chbevl(ax / (C_T)2 - (C_T)2, sf_i0e_small, 30)
                      : sf_chbevl((C_T)32 / ax - (C_T)2, sf_i0e_large, 25);
}
TOCL_INLINE C_T sf_i1e_series(C_T ax) {
  return ax <= (C_T)8 ? sf_chbevl(ax / (C_T)2 - (C_T)2, SF_I1E_SMALL, SF_I1E_SMALL_N)
                      : sf_chbevl((C_T)32 / ax - (C_T)2, SF_I1E_LARGE, SF_I1E_LARGE_N);
}
// The products in CPU's order: exp(x) * series (/ sqrt(x) last), so that I0(inf) is inf / inf = NaN there too.
TOCL_INLINE C_T i0_of(C_T x) {
  const C_T ax = fabs(x);
  const C_T s = sf_i0e_series(ax);
  return ax <= (C_T)8 ? exp(ax) * s : exp(ax) * s / sqrt(ax);
}
TOCL_INLINE C_T i0e_of(C_T x) {
  const C_T ax = fabs(x);
  const C_T s = sf_i0e_series(ax);
  return ax <= (C_T)8 ? s : s / sqrt(ax);
}
TOCL_INLINE C_T i1_of(C_T x) {
  const C_T ax = fabs(x);
  const C_T s = sf_i1e_series(ax);
  const C_T r = ax <= (C_T)8 ? exp(ax) * ax * s : (exp(ax) * s) / sqrt(ax);
  return x < (C_T)0 ? -r : r;
}
TOCL_INLINE C_T i1e_of(C_T x) {
  const C_T ax = fabs(x);
  const C_T s = sf_i1e_series(ax);
  const C_T r = ax <= (C_T)8 ? s * ax : s / sqrt(ax);
  return x < (C_T)0 ? -r : r;
}

// ---- ndtri: the inverse of the standard normal CDF (Cephes' ndtri)

__constant C_T sf_ndtri_p0[5] = {-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
                                 1.39312609387279679503E1, -1.23916583867381258016E0};
__constant C_T sf_ndtri_q0[9] = {1.00000000000000000000E0,  1.95448858338141759834E0,  4.67627912898881538453E0,
                                 8.63602421390890590575E1,  -2.25462687854119370527E2, 2.00260212380060660359E2,
                                 -8.20372256168333339912E1, 1.59056225126211695515E1,  -1.18331621121330003142E0};
__constant C_T sf_ndtri_p1[9] = {4.05544892305962419923E0,   3.15251094599893866154E1,  5.71628192246421288162E1,
                                 4.40805073893200834700E1,   1.46849561928858024014E1,  2.18663306850790267539E0,
                                 -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4};
__constant C_T sf_ndtri_q1[9] = {1.00000000000000000000E0,   1.57799883256466749731E1,  4.53907635128879210584E1,
                                 4.13172038254672030440E1,   1.50425385692907503408E1,  2.50464946208309415979E0,
                                 -1.42182922854787788574E-1, -3.80806407691578277194E-2, -9.33259480895457427372E-4};
__constant C_T sf_ndtri_p2[9] = {3.23774891776946035970E0,  6.91522889068984211695E0,  3.93881025292474443415E0,
                                 1.33303460815807542389E0,  2.01485389549179081538E-1, 1.23716634817820021358E-2,
                                 3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9};
__constant C_T sf_ndtri_q2[9] = {1.00000000000000000000E0,  6.02427039364742014255E0,  3.67983563856160859403E0,
                                 1.37702099489081330271E0,  2.16236993594496635890E-1, 1.34204006088543189037E-2,
                                 3.28014464682127739104E-4, 2.89247864745380683936E-6, 6.79019408009981274425E-9};

TOCL_INLINE C_T ndtri_of(C_T y0) {
  if (y0 == (C_T)0) return -(C_T)INFINITY;
  if (y0 == (C_T)1) return (C_T)INFINITY;
  if (y0 < (C_T)0 || y0 > (C_T)1) return (C_T)NAN;
  if (isnan(y0)) return y0;
  const C_T exp_m2 = (C_T)0.13533528323661269189;  // exp(-2)
  bool negate = true;
  C_T y = y0;
  if (y > (C_T)1 - exp_m2) {
    y = (C_T)1 - y;
    negate = false;
  }
  if (y > exp_m2) {  // |y0 - 0.5| <= 3/8: a rational function of (y - 0.5)^2
    y = y - (C_T)0.5;
    const C_T y2 = y * y;
    const C_T x = y + y * (y2 * sf_polevl(y2, sf_ndtri_p0, 4) / sf_polevl(y2, sf_ndtri_q0, 8));
    return x * (C_T)2.50662827463100050242;  // sqrt(2 pi)
  }
  // The tails, in z = sqrt(-2 log y): one rational function of 1/z for z < 8, another beyond.
  const C_T x = sqrt((C_T)-2 * log(y));
  const C_T x0 = x - log(x) / x;
  const C_T z = (C_T)1 / x;
  const C_T x1 = x < (C_T)8 ? z * sf_polevl(z, sf_ndtri_p1, 8) / sf_polevl(z, sf_ndtri_q1, 8)
                            : z * sf_polevl(z, sf_ndtri_p2, 8) / sf_polevl(z, sf_ndtri_q2, 8);
  const C_T r = x0 - x1;
  return negate ? -r : r;
}

// ---- erfcx(x) = exp(x^2) erfc(x), and log_ndtr
//
// CPU evaluates erfcx with S. G. Johnson's Faddeeva-package routine: for 0 <= x <= 50 a table of 100
// Chebyshev fits in 4 / (4 + x), beyond 50 a 5-term continued fraction, beyond 5e7 1 / (sqrt(pi) x); for
// x < 0, 2 exp(x^2) - erfcx(-x) (inf below -26.7, 2 exp(x^2) below -6.1). The table is not repeated here.
// Below `near` (4 in double, 2 in float) we take exp(x^2) erfc(x): the rounding of x^2 costs at most x^2
// ulp of relative error, 16, and erfc(4) is far above underflow. From there to 50, Laplace's continued
// fraction sqrt(pi) exp(x^2) erfc(x) = 1 / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))), evaluated from a
// fixed tail: 24 terms from x = 4 are exact to double's rounding (20 already were), 18 from x = 2 within
// 1e-8 before float's rounding (against mpmath over [near, 50]). The branches above 50 and below 0 are CPU's.
#define SF_FRAC_1_SQRT_PI 0.564189583547756286948079451560772585844

TOCL_INLINE C_T sf_erfcx_nonnegative(C_T x) {
  const C_T ispi = (C_T)SF_FRAC_1_SQRT_PI;
  if (x > (C_T)50) {
    if (x > (C_T)5e7) return ispi / x;
    const C_T xx = x * x;
    return ispi * (xx * (xx + (C_T)4.5) + (C_T)2) / (x * (xx * (xx + (C_T)5) + (C_T)3.75));
  }
  const C_T near = SF_IS_DOUBLE ? (C_T)4 : (C_T)2;
  if (x < near) return exp(x * x) * erfc(x);
  const int terms = SF_IS_DOUBLE ? 24 : 18;
  C_T r = (C_T)0;
  for (int k = terms; k >= 1; --k) r = (C_T)k * (C_T)0.5 / (x + r);
  return ispi / (x + r);
}

TOCL_INLINE C_T erfcx_of(C_T x) {
  if (isnan(x)) return x;
  if (x >= (C_T)0) return sf_erfcx_nonnegative(x);
  if (x < (C_T)-26.7) return (C_T)INFINITY;
  const C_T twice = (C_T)2 * exp(x * x);
  return x < (C_T)-6.1 ? twice : twice - sf_erfcx_nonnegative(-x);
}

// log of the standard normal CDF, as CPU (after SciPy): below -1 through erfcx (no underflow), else log1p.
TOCL_INLINE C_T log_ndtr_of(C_T x) {
  const C_T t = x * (C_T)M_SQRT1_2;
  if (x < (C_T)-1) return log(erfcx_of(-t) / (C_T)2) - t * t;
  return log1p(-erfc(t) / (C_T)2);
}

// ---- lgamma: CPU calls C's lgamma (glibc's), not Cephes. The driver's (PoCL's agrees with glibc's within
// 2.4e-7 absolute in float and 2.2e-16 relative in double over test_unary_accuracy's grid), with C's
// poles and infinities made sure of: +inf at 0, -0, the negative integers and +-inf.
TOCL_INLINE C_T lgamma_of(C_T x) {
  const C_T r = lgamma(x);
  return (isinf(x) || (x <= (C_T)0 && x == floor(x))) ? (C_T)INFINITY : r;
}

// ---- digamma (Cephes' psi), float in float and double in double as on CPU
__constant C_T sf_digamma_asymptotic[7] = {8.33333333333333333333E-2,  -2.10927960927960927961E-2,
                                           7.57575757575757575758E-3,  -4.16666666666666666667E-3,
                                           3.96825396825396825397E-3,  -8.33333333333333333333E-3,
                                           8.33333333333333333333E-2};

// pi / tan(pi r) for the reflection, r the fractional part of x: in double (CPU computes it so for float
// too), or tanpi's float where the device has no double.
TOCL_INLINE C_T sf_pi_over_tan_pi(C_T r) {
#if SF_HAS_DOUBLE
  const double pi = 3.14159265358979323846;
  return (C_T)(pi / tan(pi * (double)r));
#else
  return (C_T)M_PI_F / tanpi(r);
#endif
}

// psi of x > 0 (or NaN, or inf).
TOCL_INLINE C_T sf_digamma_positive(C_T x) {
  // Up to x >= 10 by psi(x) = psi(x + 1) - 1 / x, then the asymptotic series (psi(10) itself exact).
  C_T result = (C_T)0;
  while (x < (C_T)10) {
    result -= (C_T)1 / x;
    x += (C_T)1;
  }
  if (x == (C_T)10) return result + (C_T)2.25175258906672110764;
  C_T y = (C_T)0;
  if (x < (C_T)1.0e17) {
    const C_T z = (C_T)1 / (x * x);
    y = z * sf_polevl(z, sf_digamma_asymptotic, 6);
  }
  return result + log(x) - (C_T)0.5 / x - y;
}

TOCL_INLINE C_T digamma_of(C_T x) {
  // +-0: -+inf (the sign of 1 / -x); negative integers and -inf: NaN.
  if (x == (C_T)0) return copysign((C_T)INFINITY, -x);
  if (x < (C_T)0 && x == trunc(x)) return (C_T)NAN;
  // psi(x) = psi(1 - x) - pi / tan(pi x), with tan taken of the fractional part (exact) of x.
  if (x < (C_T)0) return sf_digamma_positive((C_T)1 - x) - sf_pi_over_tan_pi(x - trunc(x));
  return sf_digamma_positive(x);
}

// ---- trigamma and polygamma (n >= 2: (-1)^(n+1) n! zeta(n + 1, x), Cephes' Hurwitz zeta)

TOCL_INLINE C_T trigamma_of(C_T x) {
  C_T sign = (C_T)1, result = (C_T)0;
  if (x < (C_T)0.5) {
    sign = (C_T)-1;
    const C_T s = sin((C_T)M_PI * x);
    result -= ((C_T)M_PI * (C_T)M_PI) / (s * s);
    x = (C_T)1 - x;
  }
  for (int i = 0; i < 6; ++i) {
    result += (C_T)1 / (x * x);
    x += (C_T)1;
  }
  const C_T ixx = (C_T)1 / (x * x);
  result += ((C_T)1 + (C_T)1 / ((C_T)2 * x) +
             ixx * ((C_T)1 / (C_T)6 - ixx * ((C_T)1 / (C_T)30 - ixx * ((C_T)1 / (C_T)42)))) / x;
  return sign * result;
}

// Euler-Maclaurin's coefficients (2k)! / B_2k.
__constant SF_ACC sf_zeta_coefficients[12] = {
    12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
    -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15, 1.8152105401943546773e17,
    -7.1661652561756670113e18};

// The Hurwitz zeta function sum_k (k + q)^-x, in double where the device has it (CPU's accumulate type
// for float and double): terms summed directly until q + k > 9 (and at least 9 of them), then the
// Euler-Maclaurin tail. As CPU's: a negative non-integer q sums every term up from q (|q| steps); for
// q < -SF_ZETA_DIRECT_LIMIT, sf_zeta below folds those terms instead (CPU loops there for hours).
TOCL_INLINE SF_ACC sf_zeta_summed(SF_ACC x, SF_ACC q) {
  const SF_ACC machep = (SF_ACC)1.11022302462515654042E-16;
  if (x == (SF_ACC)1) return (SF_ACC)INFINITY;
  if (x < (SF_ACC)1) return (SF_ACC)NAN;
  if (q <= (SF_ACC)0) {
    if (q == floor(q)) return (SF_ACC)INFINITY;
    if (x != floor(x)) return (SF_ACC)NAN;
  }
  // The first term in C_T, as CPU takes it (pow of two scalar_t), the rest in SF_ACC.
  SF_ACC s = (SF_ACC)pow((C_T)q, -(C_T)x), a = q, b = (SF_ACC)0;
  int i = 0;
  while (i < 9 || a <= (SF_ACC)9) {
    i += 1;
    a += (SF_ACC)1;
    b = pow(a, -x);
    s += b;
    if (-machep * s < b && b < machep * s) return s;
  }
  const SF_ACC w = a;
  s += b * w / (x - (SF_ACC)1);
  s -= (SF_ACC)0.5 * b;
  a = (SF_ACC)1;
  SF_ACC k = (SF_ACC)0;
  for (i = 0; i < 12; ++i) {
    a *= x + k;
    b /= w;
    SF_ACC t = a * b / sf_zeta_coefficients[i];
    s = s + t;
    t = fabs(t / s);
    if (t < machep) return s;
    k += (SF_ACC)1;
    a *= x + k;
    b /= w;
    k += (SF_ACC)1;
  }
  return s;
}

#define SF_ZETA_DIRECT_LIMIT 65536

// With q = g - m (g in (0, 1), m terms below zero) and an integer x (the only one a negative q allows),
// the m negative terms are (-1)^x times zeta(x, 1 - g) - zeta(x, 1 - g + m): three sums of positive q.
TOCL_INLINE SF_ACC sf_zeta(SF_ACC x, SF_ACC q) {
  if (q < -(SF_ACC)SF_ZETA_DIRECT_LIMIT && q != floor(q) && x == floor(x) && x > (SF_ACC)1) {
    const SF_ACC m = -floor(q), g = q + m;
    const SF_ACC below = sf_zeta_summed(x, (SF_ACC)1 - g) - sf_zeta_summed(x, (SF_ACC)1 - g + m);
    return (fmod(x, (SF_ACC)2) != (SF_ACC)0 ? -below : below) + sf_zeta_summed(x, g);
  }
  return sf_zeta_summed(x, q);
}

// polygamma(n, x) for n >= 0 (the host refuses negative n, as CPU's meta function does); n arrives in C_T.
TOCL_INLINE C_T polygamma_of(C_T n, C_T x) {
  if (n == (C_T)0) return digamma_of(x);
  if (n == (C_T)1) return trigamma_of(x);
  const C_T sign = fmod(n, (C_T)2) != (C_T)0 ? (C_T)1 : (C_T)-1;
  return sign * exp(lgamma(n + (C_T)1)) * (C_T)sf_zeta((SF_ACC)n + (SF_ACC)1, (SF_ACC)x);
}

#undef SF_IS_DOUBLE
