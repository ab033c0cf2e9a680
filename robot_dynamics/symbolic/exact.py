"""Exact arithmetic: URDF numbers as rationals, trigonometric sums in one form.

Numbers from the URDF become exact rationals (the simplest fraction within
1e-12 relative of the float: ``0.62 -> 31/50``); rotation entries within
1e-9 of 0 or +-1 are snapped (``cos(pi/2)`` is 6e-17 in floating point),
so that terms cancel exactly. Products of sines and cosines are reduced
(``sin^2 = 1 - cos^2``, :func:`reduce_trig`) so that a sum that is zero
comes out as 0, and :func:`tidy` finally collects them into sines and
cosines of joint sums (``c1 c2 - s1 s2 -> c12``, sympy's ``fu.TR10i``), as
the texts write them.
"""
from fractions import Fraction

import numpy as np
import sympy as sp
from sympy.simplify.fu import TR10i

RATIONAL_TOL = 1e-12         # relative tolerance of the float -> rational conversion
SNAP_TOL = 1e-9              # rotation / axis entries this close to 0 or +-1 are snapped
CHOP_REL = 1e-11             # terms this small relative to the largest in a sum are dropped


# ---------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------

def exact(x, tol=RATIONAL_TOL):
    """The simplest rational within ``tol`` (relative) of the float x.

    Continued-fraction convergents of x are tried in order, so values that
    were typed as short decimals or are simple fractions come back exactly:
    ``0.62 -> 31/50``, ``1.7 * 0.43**2 / 12 -> 31433/1200000``.
    """
    f = Fraction(float(x))
    if f == 0:
        return sp.Integer(0)
    y = f
    h0, h1, k0, k1 = 0, 1, 1, 0
    while True:
        a = y.numerator // y.denominator
        h0, h1 = h1, a * h1 + h0
        k0, k1 = k1, a * k1 + k0
        c = Fraction(h1, k1)
        if abs(c - f) <= tol * abs(f) or y == a:
            return sp.Rational(c.numerator, c.denominator)
        y = 1 / (y - a)


def exact_unit(x):
    """Like :func:`exact` for unitless rotation/axis entries, snapping values
    within ``SNAP_TOL`` of -1, 0 or 1 (``cos(1.57079632679)`` is 5e-12)."""
    r = round(float(x))
    if abs(r) <= 1 and abs(float(x) - r) <= SNAP_TOL:
        return sp.Integer(r)
    return exact(x)


def exact_vector(values, conv=exact):
    """(3,) floats -> (3, 1) sympy Matrix of exact numbers (``conv`` of each)."""
    return sp.Matrix([conv(v) for v in values])


def exact_matrix(values, conv=exact_unit):
    """(3, 3) floats -> sympy Matrix of exact numbers (rotation entries snapped by default)."""
    return sp.Matrix(3, 3, [conv(v) for v in np.asarray(values).ravel()])


def skew(v):
    """(3,) -> (3, 3) sympy cross-product matrix ``[v x]``."""
    return sp.Matrix([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def axis_rotation(axis, angle):
    """Rodrigues' formula with an exact unit axis and a sympy angle."""
    c, s = sp.cos(angle), sp.sin(angle)
    t = 1 - c
    x, y, z = axis
    return sp.Matrix([[c + t * x * x, t * x * y - s * z, t * x * z + s * y],
                      [t * x * y + s * z, c + t * y * y, t * y * z - s * x],
                      [t * x * z - s * y, t * y * z + s * x, c + t * z * z]])


# ---------------------------------------------------------------------------
# Trigonometric sums
# ---------------------------------------------------------------------------

def _is_sin_power(x):
    return x.is_Pow and isinstance(x.base, sp.sin) and x.exp.is_Integer and x.exp >= 2


def reduce_trig(expr):
    """Expand and replace every ``sin(a)**k`` (k >= 2) by ``(1 - cos(a)**2)**(k//2) sin(a)**(k%2)``.

    A polynomial in the sines and cosines of independent angles then has a
    unique form, so sums that are zero come out as 0 (cheap, unlike trigsimp).
    """
    e = sp.expand(expr)
    if e.has(sp.sin):
        e = sp.expand(e.replace(_is_sin_power, lambda x: (1 - sp.cos(x.base.args[0]) ** 2) ** (x.exp // 2)
                                * sp.sin(x.base.args[0]) ** (x.exp % 2)))
    return chop(e)


def chop(expr, rel=CHOP_REL):
    """Drop the terms of a sum whose number is below ``rel`` times the largest
    one: the residue of rotations that are orthogonal only to the 1e-12 of
    the float -> rational conversion (far below the precision of a URDF)."""
    if not expr.is_Add:
        return expr
    coeffs = [abs(t.as_coeff_Mul()[0]) for t in expr.args]
    big = max(coeffs)
    if big == 0 or min(coeffs) >= rel * big:
        return expr
    return sp.Add(*[t for t, c in zip(expr.args, coeffs) if c >= rel * big])


def tidy(expr, collect_by=(), combine=True):
    """Readable form: sines and cosines of joint sums collected (``TR10i``:
    ``c1 c2 - s1 s2 -> c12``; skipped with ``combine=False``), then grouped
    by the monomials of ``collect_by`` (e.g. the joint velocities) and by
    trig atoms, with the common factors of each coefficient pulled out."""
    e = reduce_trig(expr)
    if collect_by:
        poly = sp.Poly(e, *collect_by)
        return sp.Add(*[sp.Mul(*[x ** k for x, k in zip(collect_by, mono)]) * _tidy_coefficient(c, combine)
                        for mono, c in poly.terms()])
    return _tidy_coefficient(e, combine)


def _tidy_coefficient(e, combine=True):
    if combine and e.has(sp.sin, sp.cos):
        e = sp.expand(TR10i(e))
    trig = sorted(e.atoms(sp.sin, sp.cos), key=sp.default_sort_key)
    if not trig:
        return _common_factor(e)
    poly = sp.Poly(e, *trig)
    return sp.Add(*[sp.Mul(*[x ** k for x, k in zip(trig, mono)]) * _common_factor(c.as_expr())
                    for mono, c in poly.terms()])


def _common_factor(e):
    """Pull the symbolic factors common to all terms out of a sum:
    ``l1^2 m1 + l1^2 m2 -> l1^2 (m1 + m2)``; numbers stay inside (no 1/6 (...))."""
    terms = sp.Add.make_args(sp.expand(e))
    if len(terms) < 2:
        return e
    common = None
    for t in terms:
        powers = {}
        for f in sp.Mul.make_args(t):
            base, k = f.as_base_exp()
            if not f.is_number and k.is_Integer and k > 0:
                powers[base] = powers.get(base, 0) + int(k)
        common = powers if common is None else {b: min(k, powers[b]) for b, k in common.items() if b in powers}
    if not common:
        return e
    factor = sp.Mul(*[b ** k for b, k in common.items()])
    return sp.Mul(factor, sp.Add(*[t / factor for t in terms]), evaluate=False)
