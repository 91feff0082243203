"""Fits the polynomials of erf_of (kernels_cl/pointwise_functions.cl) and measures them in float.

    .venv/bin/python scripts/fit_erf.py

erf(x) = x + x R(x^2) for |x| < 0.921875 (R weighted by relative error); above, erf = 1 - erfc(|x|) with
erfc a polynomial of degree 9 in u = |x| - centre on each of [0.921875, 2.25) and [2.25, 3.921875) (absolute
error: what erf inherits), and 1 from 3.921875 on (where erfc is below half an ulp of 1). No exp: PoCL's
is about 0.7 ns an element, three of the 18 multiply-adds here (bench: 4M floats, a copy 0.8-1.0 ms, exp
3.0, a degree-14 polynomial 1.5, the exp form this replaces 5.5). The two pieces share one Horner chain,
each step picking its piece's coefficient. All are near-minimax fits by Lawson's iteration (least squares
re-weighted by the error) against mpmath's erf in 40 digits; then the float evaluation (Horner, float32
rounding at each multiply and add, or at each fused multiply-add: drivers may contract) is measured in
ulps over a dense grid. It prints the coefficients as pointwise_functions.cl has them. mpmath comes with
torch (through sympy)."""
import math

import mpmath
import numpy as np

mpmath.mp.dps = 40
BREAK, SPLIT, ONE = 0.921875, 2.25, 3.921875
PIECES = ((BREAK, SPLIT), (SPLIT, ONE))
DEGREE = 9


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


def horner32(coefficients, z, fused=False):
    """Horner's rule in float32: rounded after each multiply and add, or once per step (fused)."""
    r = np.full_like(z, coefficients[-1])
    for c in coefficients[-2::-1]:
        if fused:
            r = (r.astype(np.float64) * z + np.float64(c)).astype(np.float32)
        else:
            r = ((r * z).astype(np.float32) + c).astype(np.float32)
    return r


def centre(lo, hi):
    return np.float32((lo + hi) / 2)


def erf32(x, r, pieces, fused):
    """erf_of's float evaluation at x >= 0."""
    small = x + (x * horner32(r, (x * x).astype(np.float32), fused)).astype(np.float32)
    large = np.ones_like(x)
    for (lo, hi), c in zip(PIECES, pieces):
        m = (x >= lo) & (x < hi)
        large[m] = np.float32(1) - horner32(c, (x[m] - centre(lo, hi)).astype(np.float32), fused)
    return np.where(x < BREAK, small, large).astype(np.float64)


def main():
    x = chebyshev(1e-4, BREAK, 4000)
    ratio = np.array([float(mpmath.erf(v) / v) for v in x])
    r = lawson(x, ratio, 1 / ratio, 5, lambda v: v * v)
    r[0] -= 1.0  # erf = x + x R: the leading 1 stays exact
    pieces = []
    for lo, hi in PIECES:
        t = chebyshev(lo, hi, 6000)
        erfc = np.array([float(mpmath.erfc(v)) for v in t])
        pieces.append(lawson(t - float(centre(lo, hi)), erfc, np.ones_like(t), DEGREE, lambda v: v).astype(np.float32))
    r = r.astype(np.float32)
    print("R:", ", ".join(f"{c:.9e}" for c in r))
    for (lo, hi), c in zip(PIECES, pieces):
        print(f"erfc on [{lo}, {hi}), u = |x| - {centre(lo, hi)}:", ", ".join(f"{v:.9e}" for v in c))
    test = np.unique(np.concatenate([np.linspace(0, 5, 400001), np.linspace(0.9, 0.95, 20001),
                                     np.linspace(2.2, 2.3, 20001), np.linspace(3.8, 4.0, 20001),
                                     np.geomspace(1e-30, 1e-2, 2000)]).astype(np.float32))
    exact = np.array([math.erf(float(v)) for v in test])
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    for fused in (False, True):
        ulps = np.abs(erf32(test, r, pieces, fused) - exact) / spacing
        print(f"float evaluation ({'fused' if fused else 'separate'} multiply-adds): at most {ulps.max():.2f} ulp "
              f"(at x = {test[np.argmax(ulps)]})")


if __name__ == "__main__":
    main()
