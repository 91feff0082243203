// Integer division by a runtime divisor without integer division, which vector units lack:
// kernels that PoCL should vectorise across work-items use it for their index math.
// a / d for 0 <= a < 2^22, d >= 1, inv = 1.0f / d: the float estimate is off by at most one, then corrected.
// (A second refinement step, for larger a, measured 20x slower on PoCL: it stops the vectoriser.)
inline int fast_div(int a, int d, float inv) {
  const int q = (int)((float)a * inv);
  const int r = a - q * d;
  return q - (r < 0 ? 1 : 0) + (r >= d ? 1 : 0);
}
