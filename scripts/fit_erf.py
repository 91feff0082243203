"""Fits the two polynomials of erf_of (kernels_cl/pointwise_functions.cl) and measures them in float.

    .venv/bin/python scripts/fit_erf.py

erf(x) = x + x R(x^2) for |x| < 0.921875 (R weighted by relative error) and 1 - exp(Q(t)), t = min(|x|, 4),
above (Q fits log erfc, weighted by erfc: the error erf inherits). Both are near-minimax fits by Lawson's
iteration (least squares re-weighted by the error) against mpmath's erf in 40 digits; then the float
evaluation (Horner, float32 rounding at each step) is measured in ulps over a dense grid. It prints the
coefficients as pointwise_functions.cl has them. mpmath comes with torch (through sympy)."""
import math

import mpmath
import numpy as np

mpmath.mp.dps = 40
BREAK, CLAMP = 0.921875, 4.0


def lawson(x, f, weight, degree, powers_of, iterations=60):
    basis = np.stack([powers_of(x) ** k for k in range(degree + 1)], 1)
    u = np.full(len(x), 1.0 / len(x))
    for _ in range(iterations):
        w = np.sqrt(u) * weight
        c, *_ = np.linalg.lstsq(basis * w[:, None], f * w, rcond=None)
        error = np.abs(weight * (basis @ c - f))
        u = u * error / np.sum(u * error)
    return c


def chebyshev(lo, hi, n):
    return np.cos(np.linspace(0, np.pi, n)) * 0.5 * (hi - lo) + 0.5 * (hi + lo)


def horner32(coefficients, z):
    r = np.full_like(z, coefficients[-1])
    for c in coefficients[-2::-1]:
        r = (r * z + c).astype(np.float32)
    return r


def main():
    x = chebyshev(1e-4, BREAK, 4000)
    ratio = np.array([float(mpmath.erf(v) / v) for v in x])
    r = lawson(x, ratio, 1 / ratio, 5, lambda v: v * v)
    r[0] -= 1.0  # erf = x + x R: the leading 1 stays exact
    t = chebyshev(BREAK, CLAMP, 6000)
    log_erfc = np.array([float(mpmath.log(mpmath.erfc(v))) for v in t])
    q = lawson(t, log_erfc, np.array([float(mpmath.erfc(v)) for v in t]), 6, lambda v: v)
    r, q = r.astype(np.float32), q.astype(np.float32)
    print("R:", ", ".join(f"{c:.9e}" for c in r))
    print("Q:", ", ".join(f"{c:.9e}" for c in q))
    test = np.unique(np.concatenate([np.linspace(0, 5, 400001), np.linspace(0.9, 0.95, 20001),
                                     np.geomspace(1e-30, 1e-2, 2000)]).astype(np.float32))
    exact = np.array([math.erf(float(v)) for v in test])
    small = test + (test * horner32(r, (test * test).astype(np.float32))).astype(np.float32)
    large = np.float32(1) - np.exp(horner32(q, np.minimum(test, np.float32(CLAMP))))
    got = np.where(test < BREAK, small, large).astype(np.float64)
    ulps = np.abs(got - exact) / np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    print(f"float evaluation: at most {ulps.max():.2f} ulp (at x = {test[np.argmax(ulps)]})")


if __name__ == "__main__":
    main()
