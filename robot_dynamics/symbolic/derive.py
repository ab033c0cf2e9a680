"""Closed-form equations of motion by the Lagrange-Euler route (sympy).

Craig, *Introduction to Robotics*, sec. 6.9 (Lagrangian formulation: the
kinetic energy as the quadratic form of the mass matrix, eq. 6.71; the
potential energy, eqs. 6.73-6.74; the Euler-Lagrange equations, eq. 6.76).
The energies of the robot are written in closed form,

    T = 1/2 qd^T M(q) qd,  M = sum_i  m_i Jv_i^T Jv_i + Jw_i^T I_i Jw_i
                                     + Jw_i^T [h_i x] Jv_i + (Jw_i^T [h_i x] Jv_i)^T
    U = -sum_i g . (m_i p_i + R_i h_i)

(body-frame Jacobians Jv_i, Jw_i of each body origin, first moment
``h_i = m_i c_i`` and inertia ``I_i`` about the body origin, all in body
coordinates; ``p_i``, ``R_i`` the body pose in the base frame), and the
Euler-Lagrange equations ``d/dt dL/dqd - dL/dq = tau`` of ``L = T - U``
are evaluated in closed form: with ``T`` quadratic in qd they are

    tau = M(q) qdd + V(q, qd) + G(q),
    V_i = sum_jk c_ijk qd_j qd_k,  c_ijk = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i),
    G_i = dU/dq_i

(Christoffel symbols of the first kind: what eq. 6.76 gives for a kinetic
energy quadratic in qd).
The kinematics come from the same :class:`~robot_dynamics.Model` rows the
numeric algorithms use (``model._data``; fixed joints merged the same way),
so the symbolic and numeric dynamics describe the same frames.

Numbers from the URDF become exact rationals (the simplest fraction within
1e-12 relative of the float: ``0.62 -> 31/50``), rotation entries within
1e-9 of 0 or +-1 are snapped (``cos(pi/2)`` is 6e-17 in floating point),
so that terms cancel exactly. Products of sines and cosines are reduced
(``sin^2 = 1 - cos^2``) while the energies are built and finally
collected into sines and cosines of joint sums (``c1 c2 - s1 s2 -> c12``,
sympy's ``fu.TR10i``), as the texts write them.

Limits (wall time of :func:`derive`, measured on a shared 2-core machine,
sympy 1.14): the 1-3 joint textbook robots take 0.01-0.03 s (about 0.1 s
with a dozen parameters as symbols); random 3-4 joint trees with skewed axes
2-8 s; the 6-joint UR5 (axes parallel or perpendicular, diagonal inertias)
5-7 s; the Panda's first five joints 13 s and first six 80 s (link offsets
and full inertia tensors everywhere; the text of the result is 0.5 MB).
The size of the expressions, hence the time, grows steeply with the number
of joints (V has n^3 Christoffel terms, each a derivative of a long
trigonometric sum), so :func:`derive` refuses models with more than
``max_dof`` joints (6 by default) with a message saying so.
"""
import re
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Dict, Tuple

import numpy as np
import sympy as sp
from sympy.printing.latex import LatexPrinter
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.str import StrPrinter
from sympy.simplify.fu import TR10i

from ..model.packed import (AXIS, INERTIA, JTYPE, MASS, MCOM, PARENT, POS0, PRISMATIC, QIDX, QMUL, QOFF,
                    ROT0)

MAX_DOF = 6                  # default limit of derive(); see the module docstring for timings
RATIONAL_TOL = 1e-12         # relative tolerance of the float -> rational conversion
SNAP_TOL = 1e-9              # rotation / axis entries this close to 0 or +-1 are snapped
CHECK_RTOL = 1e-9            # rebuilt symbolic model vs model._data (numeric check)
CHOP_REL = 1e-11             # terms this small relative to the largest in a sum are dropped

LINK_ATTRS = ("mass", "com_x", "com_y", "com_z", "ixx", "iyy", "izz", "ixy", "ixz", "iyz")
JOINT_ATTRS = ("x", "y", "z")
_INERTIA_ENTRY = {"ixx": (0, 0), "iyy": (1, 1), "izz": (2, 2), "ixy": (0, 1), "ixz": (0, 2), "iyz": (1, 2)}
_RESERVED = re.compile(r"^(q|qd|qdd|c|s)\d+$")


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


def _vec(values, conv=exact):
    return sp.Matrix([conv(v) for v in values])


def _mat(values, conv=exact_unit):
    return sp.Matrix(3, 3, [conv(v) for v in np.asarray(values).ravel()])


def skew(v):
    """(3,) -> (3, 3) sympy cross-product matrix."""
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
# Simplification
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


# ---------------------------------------------------------------------------
# Parameters as symbols
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _Location:
    element: str         # link or joint name; "gravity" for the gravity magnitude
    attr: str
    factor: float = 1.0  # the parameter equals factor * symbol


def _parse_location(loc, what):
    if isinstance(loc, str):
        if loc == "gravity":
            return _Location("gravity", "magnitude")
        loc, star, f = loc.partition("*")
        factor = _number(f, what) if star else 1.0
        body, _, rest = loc.strip().rpartition(".")
        if not body:
            raise ValueError("%s: location %r must be 'element.attribute' (e.g. 'link2.mass', "
                             "'joint2.x', 'link1.com_x*0.5') or 'gravity'" % (what, loc))
        return _Location(body, rest, factor)
    if isinstance(loc, tuple) and len(loc) in (2, 3) and all(isinstance(s, str) for s in loc[:2]):
        return _Location(loc[0], loc[1], _number(loc[2], what) if len(loc) == 3 else 1.0)
    raise ValueError("%s: a location is (element, attribute[, factor]) or 'element.attribute', got %r"
                     % (what, loc))


def _number(text, what):
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise ValueError("%s: factor must be a number, got %r" % (what, text)) from None
    if not np.isfinite(v) or v == 0:
        raise ValueError("%s: factor must be finite and nonzero, got %r" % (what, text))
    return v


def _parse_symbols(model, symbols):
    """{name: location or [locations]} -> {name: [_Location]} after checking names."""
    out = {}
    for name, locs in (symbols or {}).items():
        if not isinstance(name, str) or not name.isidentifier() or _RESERVED.match(name):
            raise ValueError("symbol name %r must be a Python identifier other than q<i>, qd<i>, qdd<i>, "
                             "c<i>, s<i> (those name the joint variables and sin/cos)" % (name,))
        if isinstance(locs, (str, tuple)):
            locs = [locs]
        parsed = [_parse_location(l, "symbol %r" % name) for l in locs]
        if not parsed:
            raise ValueError("symbol %r has no location" % name)
        for loc in parsed:
            if loc.element == "gravity":
                if not np.any(model.gravity):
                    raise ValueError("symbol %r: the model's gravity is zero, it has no magnitude to name" % name)
                continue
            if loc.attr in JOINT_ATTRS:
                if loc.element not in model.joints:
                    raise ValueError("symbol %r: %r is not a joint of the robot (joint origin attributes "
                                     "x, y, z); joints: %s" % (name, loc.element, ", ".join(model.joints)))
            elif loc.attr in LINK_ATTRS:
                if model._link_body[model.link_index(loc.element)] < 0:   # (ValueError listing the links)
                    raise ValueError("symbol %r: link %r is fixed to the base, its parameters do not enter "
                                     "the dynamics" % (name, loc.element))
            else:
                raise ValueError("symbol %r: unknown attribute %r; use one of %s (links) or %s (joint origin)"
                                 % (name, loc.attr, ", ".join(LINK_ATTRS), ", ".join(JOINT_ATTRS)))
        out[name] = parsed
    return out


# ---------------------------------------------------------------------------
# The symbolic model: one row per body, as model._data, with sympy entries
# ---------------------------------------------------------------------------

@dataclass
class _Body:
    parent: int
    prismatic: bool
    k: int               # index of the driving coordinate
    mul: sp.Expr
    off: sp.Expr
    axis: sp.Matrix      # (3, 1) in the body frame
    R0: sp.Matrix        # parent body <- joint frame at q = 0
    p0: sp.Matrix        # joint origin in the parent body frame
    m: sp.Expr
    h: sp.Matrix         # first moment m c, body frame
    Io: sp.Matrix        # inertia about the body origin, body frame


def _link_inertials(model, urdf):
    """{link: (m, c (3,), Ic (3, 3) about the centre of mass in link axes)} from the URDF file."""
    from ..model.spatial import rpy_to_matrix
    from ..model.urdf import MAX_BYTES, _parse, _read
    robot = _parse(_read(urdf, MAX_BYTES))          # the loader's hardened reader and parser
    out = {}
    for link in robot.links:
        ine = link.inertial
        if ine is None:
            out[link.name] = (sp.Integer(0), sp.zeros(3, 1), sp.zeros(3, 3))
            continue
        xyz = (ine.origin.xyz if ine.origin is not None and ine.origin.xyz is not None else (0, 0, 0))
        rpy = (ine.origin.rpy if ine.origin is not None and ine.origin.rpy is not None else (0, 0, 0))
        I = np.array(ine.inertia.to_matrix(), dtype=float) if ine.inertia is not None else np.zeros((3, 3))
        R = _mat(rpy_to_matrix(rpy))
        out[link.name] = (exact(ine.mass or 0.0), _vec(xyz), R * _mat(I, exact) * R.T)
    missing = set(model.link_names) - set(out)
    if missing:
        raise ValueError("urdf does not match the model: links %s are missing from it" % ", ".join(sorted(missing)))
    return out


def _recover_inertial(model, link):
    """(m, c, Ic) of a link that is the only link with mass on its body, from the body row."""
    l = model.link_index(link)
    b = int(model._link_body[l])
    if b < 0:
        raise ValueError("link %r is fixed to the base: its parameters do not enter the dynamics" % link)
    massive = [n for i, n in enumerate(model.link_names)
               if model._link_body[i] == b and model.link_masses[n] > 0]
    if massive != [link]:
        raise ValueError("link %r shares its body with other links that have mass (%s): pass urdf= "
                         "(the file the model was loaded from) so that each link's own inertial is known"
                         % (link, ", ".join(n for n in massive if n != link) or "none, and it is massless"))
    row = model._data[b]
    m = row[MASS]
    P = model._link_pose[l].reshape(3, 4)
    R, p = P[:, :3], P[:, 3]
    cb = row[MCOM:MCOM + 3] / m                                 # centre of mass, body frame
    Icb = row[INERTIA:INERTIA + 9].reshape(3, 3) - m * (cb @ cb * np.eye(3) - np.outer(cb, cb))
    c, Ic = R.T @ (cb - p), R.T @ Icb @ R
    scale = max(np.max(np.abs(row[INERTIA:INERTIA + 9])), 1e-300)
    Ic[np.abs(Ic) < 1e-12 * scale] = 0.0                       # float noise of the point-mass case
    Ic = 0.5 * (Ic + Ic.T)
    return exact(m), _vec(c), _mat(Ic, exact)


def _symbolic_bodies(model, symbols, urdf):
    """(bodies, gravity vector, {Symbol: value}) with the named parameters as symbols."""
    locs = _parse_symbols(model, symbols)
    sym = {name: sp.Symbol(name) for name in locs}
    by_loc = {}
    for name, ls in locs.items():
        for loc in ls:
            key = (loc.element, loc.attr)
            if key in by_loc:
                raise ValueError("%s.%s is named twice (symbols %r and %r)" % (key + (by_loc[key][0], name)))
            by_loc[key] = (name, loc.factor)
    values = {}

    def param(element, attr, number):
        """Exact number, or factor * symbol when the parameter is named."""
        if (element, attr) not in by_loc:
            return exact(number)
        name, factor = by_loc[(element, attr)]
        v = float(number) / factor
        seen = values.setdefault(name, (v, "%s.%s" % (element, attr)))
        if not np.isclose(seen[0], v, rtol=CHECK_RTOL, atol=1e-12):
            raise ValueError("symbol %r stands for %s = %.12g and %s.%s = %.12g (x %g): the values differ; "
                             "give a factor, e.g. ('%s', '%s', 0.5)" % (name, seen[1], seen[0], element, attr,
                                                                       float(number), 1 / factor, element, attr))
        return exact_unit(factor) * sym[name] if factor != 1.0 else sym[name]

    # Joint origins (exact, named offsets as symbols) and link poses in their body.
    parent_joint = {j.child: j for j in model.joints.values()}
    pose = {model.base_link: (sp.eye(3), sp.zeros(3, 1))}
    origin = {}
    for link in model.link_names[1:]:
        j = parent_joint[link]
        xyz = sp.Matrix([param(j.name, a, j.origin[r, 3]) for r, a in enumerate(JOINT_ATTRS)])
        origin[j.name] = (_mat(j.origin[:3, :3]), xyz)
        if j.type == "fixed":
            Rp, pp = pose[j.parent]
            pose[link] = (Rp * origin[j.name][0], pp + Rp * xyz)
        else:
            pose[link] = (sp.eye(3), sp.zeros(3, 1))

    inertial_links = {loc.element for ls in locs.values() for loc in ls
                      if loc.attr in LINK_ATTRS and loc.element != "gravity"}
    file_inertials = _link_inertials(model, urdf) if urdf is not None else None

    def link_inertial(link):
        if file_inertials is not None:
            m, c, Ic = file_inertials[link]
        else:
            m, c, Ic = _recover_inertial(model, link)
        m = param(link, "mass", m)
        c = sp.Matrix([param(link, a, c[r]) for r, a in enumerate(("com_x", "com_y", "com_z"))])
        Ic = Ic.copy()
        for a, (r, s) in _INERTIA_ENTRY.items():
            Ic[r, s] = Ic[s, r] = param(link, a, Ic[r, s])
        return m, c, Ic

    D = model._data
    body_links = {}
    for l, link in enumerate(model.link_names):
        body_links.setdefault(int(model._link_body[l]), []).append(link)
    bodies = []
    for j in model.joints.values():
        if j.type == "fixed":
            continue
        b = int(model._link_body[model.link_index(j.child)])
        row = D[b]
        Rp, pp = pose[j.parent]
        R0, xyz = origin[j.name]
        links = body_links[b]
        symbolic_inertia = (any(l in inertial_links for l in links)
                            or any(pose[l][1].free_symbols for l in links))
        if symbolic_inertia:
            m, h, Io = sp.Integer(0), sp.zeros(3, 1), sp.zeros(3, 3)
            for link in links:
                if file_inertials is None and model.link_masses[link] == 0 and link not in inertial_links:
                    continue
                ml, c, Ic = link_inertial(link)
                R, p = pose[link]
                hb = R * (ml * c)                                  # h in the body frame
                Io_l = Ic + ml * ((c.T * c)[0] * sp.eye(3) - c * c.T)
                m += ml
                h += hb + ml * p
                Io += (R * Io_l * R.T + ml * ((p.T * p)[0] * sp.eye(3) - p * p.T)
                       + 2 * (p.T * hb)[0] * sp.eye(3) - p * hb.T - hb * p.T)
        else:
            m = exact(row[MASS])
            h = _vec(row[MCOM:MCOM + 3])
            Io = _mat(row[INERTIA:INERTIA + 9], exact)
        bodies.append((b, _Body(
            parent=int(row[PARENT]), prismatic=row[JTYPE] == PRISMATIC, k=int(row[QIDX]),
            mul=exact(row[QMUL]), off=exact(row[QOFF]), axis=_vec(row[AXIS:AXIS + 3], exact_unit),
            R0=Rp * R0, p0=pp + Rp * xyz, m=sp.expand(m), h=h.applyfunc(sp.expand),
            Io=Io.applyfunc(sp.expand))))
    bodies = [body for _, body in sorted(bodies, key=lambda t: t[0])]

    gravity = model.gravity
    g_named = [name for name, ls in locs.items() if any(l.element == "gravity" for l in ls)]
    if g_named:
        gnorm = float(np.linalg.norm(gravity))
        values[g_named[0]] = (gnorm, "gravity")
        g = sym[g_named[0]] * _vec(gravity / gnorm, exact_unit)
    else:
        g = _vec(gravity)
    unused = [n for n in locs if n not in values]
    if unused:
        raise ValueError("symbols %s name no parameter that enters the dynamics (a massless link, or the "
                         "origin of a joint that nothing with mass hangs from)" % ", ".join(unused))
    values = {sym[n]: values[n][0] for n in locs}
    _check_against_model(model, bodies, values)
    return bodies, g, values


def _check_against_model(model, bodies, values):
    """The rebuilt rows, with the symbols at their values, equal model._data."""
    subs = {s: exact(v) for s, v in values.items()}
    for b, body in enumerate(bodies):
        row = model._data[b]
        got = {"joint origin": (body.p0, row[POS0:POS0 + 3]), "joint rotation": (body.R0, row[ROT0:ROT0 + 9]),
               "mass": (sp.Matrix([body.m]), row[MASS:MASS + 1]), "first moment": (body.h, row[MCOM:MCOM + 3]),
               "inertia": (body.Io, row[INERTIA:INERTIA + 9])}
        for what, (expr, num) in got.items():
            val = np.array(expr.subs(subs).evalf(), dtype=float).ravel()
            scale = max(1.0, float(np.max(np.abs(num))))
            if not np.allclose(val, num, rtol=CHECK_RTOL, atol=1e-9 * scale):
                raise ValueError("the symbolic model does not match the numeric one at body %d (%s): %s vs %s; "
                                 "is urdf= the file this model was loaded from (without payloads)?"
                                 % (b, what, np.array2string(val, precision=6), np.array2string(num, precision=6)))


# ---------------------------------------------------------------------------
# Derivation
# ---------------------------------------------------------------------------

@dataclass
class Equations:
    """Closed-form ``tau = M(q) qdd + V(q, qd) + G(q)`` of a robot.

    Attributes (sympy objects, exact rational numbers):

    - ``q``, ``qd``, ``qdd``: tuples of the joint symbols ``q1..qn``,
      ``qd1..qdn``, ``qdd1..qddn`` (``q_i`` is ``joint_names[i-1]``).
    - ``M`` (n, n), ``V`` (n, 1), ``G`` (n, 1): sympy Matrices.
    - ``U``: potential energy (zero at the base origin, as
      :func:`robot_dynamics.potential_energy`); ``kinetic_energy`` is
      ``1/2 qd^T M qd``.
    - ``params``: ``{Symbol: value}`` of the inertial or geometric
      parameters kept as symbols (SI units), in the order given.
    - ``joint_names``, ``robot``, ``seconds`` (derivation time).
    """
    robot: str
    joint_names: Tuple[str, ...]
    q: Tuple[sp.Symbol, ...]
    qd: Tuple[sp.Symbol, ...]
    qdd: Tuple[sp.Symbol, ...]
    M: sp.Matrix
    V: sp.Matrix
    G: sp.Matrix
    U: sp.Expr = sp.Integer(0)
    params: Dict[sp.Symbol, float] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def n(self):
        return len(self.q)

    @property
    def kinetic_energy(self):
        """``T = 1/2 qd^T M(q) qd`` [J]."""
        qd = sp.Matrix(self.qd)
        return sp.expand((qd.T * self.M * qd)[0] / 2)

    @property
    def tau(self):
        """(n, 1) ``M qdd + V + G``."""
        return self.M * sp.Matrix(self.qdd) + self.V + self.G

    def christoffel(self):
        """c[i][j][k] = 1/2 (dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i), expanded and reduced."""
        n = self.n
        dM = [self.M.diff(qk) for qk in self.q]
        return [[[reduce_trig((dM[k][i, j] + dM[j][i, k] - dM[i][j, k]) / 2) for k in range(n)]
                 for j in range(n)] for i in range(n)]

    def coriolis_matrix(self):
        """(n, n) C(q, qd) with ``C qd = V`` and ``Mdot - 2 C`` skew (C_ij = sum_k c_ijk qd_k)."""
        c = self.christoffel()
        n = self.n
        return sp.Matrix(n, n, lambda i, j: tidy(sum(c[i][j][k] * self.qd[k] for k in range(n)), self.qd))

    def configuration_space(self):
        """Craig eq. 6.63: (M, B, C, G) with ``tau = M qdd + B [qd qd] + C [qd^2] + G``.

        B is (n, n(n-1)/2), its columns for the products ``qd_j qd_k``, j < k, in
        the order (1,2), (1,3), ..., (1,n), (2,3), ...; C is (n, n) for ``qd_j^2``:
        ``B_i,jk = dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i``,
        ``C_ij = dM_ij/dq_j - 1/2 dM_jj/dq_i``.
        """
        c = self.christoffel()
        n = self.n
        pairs = [(j, k) for j in range(n) for k in range(j + 1, n)]
        B = sp.Matrix(n, len(pairs), lambda i, p: tidy(2 * c[i][pairs[p][0]][pairs[p][1]]))
        C = sp.Matrix(n, n, lambda i, j: tidy(c[i][j][j]))
        return self.M, B, C, self.G

    # -- output -------------------------------------------------------------

    def legend(self):
        """Lines naming the joint symbols and the parameters."""
        lines = ["q%d = %s" % (i + 1, name) for i, name in enumerate(self.joint_names)]
        lines += ["%s = %.6g" % (s, v) for s, v in self.params.items()]
        return lines

    def text(self, short=True, digits=6):
        """Plain text: M, V, G entries and tau, with ``c12 = cos(q1 + q2)``
        shorthand (``short``) and numbers rounded to ``digits`` significant digits."""
        return _as_text(self, short=short, digits=digits)

    def latex(self, short=True, digits=6):
        """LaTeX (amsmath ``align*``) of tau, M, V and G."""
        return _as_latex(self, short=short, digits=digits)

    def python(self, name=None):
        """Source of a Python module (numpy) with ``mass_matrix(q)``,
        ``velocity_terms(q, qd)``, ``gravity(q)`` and ``inverse_dynamics(q, qd, qdd)``;
        the symbolic parameters become keyword arguments with their values as defaults."""
        return _as_python(self, name=name)

    def compile(self):
        """The generated Python code, executed: a namespace with its functions."""
        import types
        module = types.ModuleType("robot_dynamics_generated_%s" % re.sub(r"\W", "_", self.robot))
        exec(compile(self.python(), "<robot_dynamics.symbolic %s>" % self.robot, "exec"), module.__dict__)
        return module


def derive(model, symbols=None, *, urdf=None, max_dof=MAX_DOF):
    """Closed-form M(q), V(q, qd), G(q) of a robot by the Lagrange-Euler route.

    Args:
        model: :class:`~robot_dynamics.Model` (its gravity is used).
        symbols: optional ``{name: location}`` of parameters to keep as
            symbols instead of numbers. A location is ``(link, attr)`` with
            attr one of ``mass``, ``com_x/y/z`` (centre of mass in the link
            frame [m]), ``ixx, iyy, izz, ixy, ixz, iyz`` (inertia about the
            centre of mass in the link frame axes [kg m^2]); ``(joint, attr)``
            with attr ``x``, ``y``, ``z`` (the joint origin offset in its parent
            link frame [m], a link length); or ``"gravity"`` (the magnitude of
            ``model.gravity``). A third item, or ``"link.attr*0.5"`` in string
            form, is a factor: that parameter equals factor * symbol. A list
            of locations makes one symbol stand for several parameters (their
            values must agree). Example::

                derive(model, {"m2": ("tip", "mass"), "l1": [("joint2", "x"), ("link1", "com_x")],
                               "g": "gravity"})

        urdf: the URDF file or text the model was loaded from. Needed only
            for symbols on a link that shares its body (through fixed joints)
            with other links that have mass; otherwise each link's inertial
            is recovered from the model.
        max_dof: refuse robots with more joints than this (see the module
            docstring for timings).

    Returns:
        :class:`Equations`.

    Raises:
        ValueError: too many joints, an unknown link, joint or attribute, a
            symbol whose locations disagree, or a URDF that does not match
            the model.
    """
    if model.nq == 0:
        raise ValueError("%r has no moving joints: there are no equations of motion to derive" % model.name)
    if model.nq > max_dof:
        raise ValueError("symbolic derivation is limited to %d joints and %r has %d: the expressions grow "
                         "steeply with the number of joints (a 6-joint arm takes 5 s to a few minutes, "
                         "depending on its geometry); pass max_dof=%d (--max-dof on the command line) to try anyway"
                         % (max_dof, model.name, model.nq, model.nq))
    t0 = time.perf_counter()
    bodies, g, params = _symbolic_bodies(model, symbols, urdf)
    n = model.nq
    q = sp.symbols("q1:%d" % (n + 1))
    qd = sp.symbols("qd1:%d" % (n + 1))
    qdd = sp.symbols("qdd1:%d" % (n + 1))
    M, U = _energies(bodies, g, q, n)
    M, U = M.applyfunc(tidy), tidy(U)              # joint sums collected first: shorter derivatives
    G = sp.Matrix([sp.diff(U, qk) for qk in q])   # G_i = dU/dq_i
    eq = Equations(robot=model.name, joint_names=model.joint_names, q=q, qd=qd, qdd=qdd,
                   M=M, V=sp.zeros(n, 1), G=G.applyfunc(tidy), U=U, params=params)
    c = eq.christoffel()                           # Euler-Lagrange: V_i = sum_jk c_ijk qd_j qd_k
    V = sp.Matrix([sp.expand(sum(c[i][j][k] * qd[j] * qd[k] for j in range(n) for k in range(n)))
                   for i in range(n)])
    # M is collected already, so its derivatives are too: no TR10i pass (7x slower, no gain measured).
    eq.V = V.applyfunc(lambda e: tidy(e, qd, combine=False))
    eq.seconds = time.perf_counter() - t0
    return eq


def _energies(bodies, g, q, n):
    """Mass matrix (from T = 1/2 qd^T M qd) and potential energy U.

    Body-frame Jacobians by the outward recursion (Craig sec. 5.7, 6.5):
    ``w_i = R_i^T w_p + z_i qd_i``, ``v_i = R_i^T (v_p + w_p x p_i) (+ z_i d_i)``.
    """
    Jw, Jv, Rw, pw = {}, {}, {}, {}
    M = sp.zeros(n, n)
    U = sp.Integer(0)
    zero3n = sp.zeros(3, n)
    for i, b in enumerate(bodies):
        qi = b.mul * q[b.k] + b.off
        if b.prismatic:
            R, p = b.R0, b.p0 + b.R0 * b.axis * qi
        else:
            R, p = b.R0 * axis_rotation(b.axis, qi), b.p0
        R, p = R.applyfunc(reduce_trig), p.applyfunc(reduce_trig)
        par = b.parent
        Jw_p, Jv_p = (Jw[par], Jv[par]) if par >= 0 else (zero3n, zero3n)
        Rw_p, pw_p = (Rw[par], pw[par]) if par >= 0 else (sp.eye(3), sp.zeros(3, 1))
        Jw_i = R.T * Jw_p
        Jv_i = R.T * (Jv_p - skew(p) * Jw_p)
        if b.prismatic:
            Jv_i[:, b.k] += b.axis * b.mul
        else:
            Jw_i[:, b.k] += b.axis * b.mul
        Jw[i], Jv[i] = Jw_i.applyfunc(reduce_trig), Jv_i.applyfunc(reduce_trig)
        Rw[i], pw[i] = (Rw_p * R).applyfunc(reduce_trig), (pw_p + Rw_p * p).applyfunc(reduce_trig)
        A = Jw[i].T * skew(b.h) * Jv[i]                      # cross term 2 v.(w x h)
        M += b.m * Jv[i].T * Jv[i] + Jw[i].T * b.Io * Jw[i] + A + A.T
        U -= (g.T * (b.m * pw[i] + Rw[i] * b.h))[0]         # U = -g . (m p + R h)
    return M.applyfunc(reduce_trig), reduce_trig(U)


# ---------------------------------------------------------------------------
# Output: text, LaTeX, Python
# ---------------------------------------------------------------------------

class _TextPrinter(StrPrinter):
    def __init__(self, digits):
        super().__init__()
        self.digits = digits

    def _print_Float(self, e):
        return "%.*g" % (self.digits, float(e))


class _LatexPrinter(LatexPrinter):
    def __init__(self, digits, names):
        super().__init__({"symbol_names": names, "mul_symbol": None})
        self.digits = digits

    def _print_Float(self, e):
        text = "%.*g" % (self.digits, float(e))
        if "e" in text:
            m, x = text.split("e")
            return r"%s \cdot 10^{%d}" % (m, int(x))
        return text


def _shorthand(eq):
    """{cos(q1 + q2): c12, sin(q2): s2, ...} for every sine and cosine of a plain joint sum."""
    index = {qk: k + 1 for k, qk in enumerate(eq.q)}
    mapping = {}
    atoms = set()
    for mat in (eq.M, eq.V, eq.G):
        atoms |= mat.atoms(sp.sin, sp.cos)
    for a in atoms:
        terms = sp.Add.make_args(a.args[0])
        if all(t in index for t in terms):
            ids = sorted(index[t] for t in terms)
            sep = "" if all(i < 10 for i in ids) else "_"
            mapping[a] = sp.Symbol(("c" if isinstance(a, sp.cos) else "s") + sep.join(map(str, ids)))
    return mapping


def _display(expr, mapping):
    e = expr.xreplace(mapping) if mapping else expr
    floats = {r: sp.Float(float(r)) for r in e.atoms(sp.Rational) if not r.is_Integer}
    return e.xreplace(floats) if floats else e


def _tau_rows(eq):
    """tau_i = sum_j M_ij qdd_j + V_i + G_i, unevaluated so each part stays readable."""
    rows = []
    for i in range(eq.n):
        terms = [sp.Mul(eq.M[i, j], eq.qdd[j], evaluate=not eq.M[i, j].is_Add)
                 for j in range(eq.n) if eq.M[i, j] != 0]
        terms += [x for x in (eq.V[i], eq.G[i]) if x != 0]
        rows.append(sp.Add(*terms, evaluate=False) if terms else sp.Integer(0))
    return rows


def _shorthand_legend(mapping):
    items = sorted(mapping.items(), key=lambda kv: (str(kv[1])[0], len(str(kv[1])), str(kv[1])))
    return ["%s = %s" % (s, sp.sstr(a)) for a, s in items]


def _as_text(eq, short=True, digits=6):
    mapping = _shorthand(eq) if short else {}
    pr = _TextPrinter(digits)
    out = ["Closed-form dynamics of %r (Lagrange-Euler): tau = M(q) qdd + V(q, qd) + G(q)" % eq.robot,
           "Joint variables: " + ", ".join(eq.legend()[:eq.n])]
    if eq.params:
        out.append("Parameters: " + ", ".join(eq.legend()[eq.n:]))
    if mapping:
        out.append("Shorthand: " + ", ".join(_shorthand_legend(mapping)))
    out.append("(qd = dq/dt, qdd = d2q/dt2; SI units)")
    out.append("")
    for i in range(eq.n):
        out.append("tau%d = %s" % (i + 1, pr.doprint(_display(_tau_rows(eq)[i], mapping))))
    out.append("")
    for i in range(eq.n):
        for j in range(i, eq.n):
            name = "M%d%d" % (i + 1, j + 1) if i == j else "M%d%d = M%d%d" % (i + 1, j + 1, j + 1, i + 1)
            out.append("%s = %s" % (name, pr.doprint(_display(eq.M[i, j], mapping))))
    for i in range(eq.n):
        out.append("V%d = %s" % (i + 1, pr.doprint(_display(eq.V[i], mapping))))
    for i in range(eq.n):
        out.append("G%d = %s" % (i + 1, pr.doprint(_display(eq.G[i], mapping))))
    return "\n".join(out) + "\n"


def _latex_names(eq, mapping):
    names = {}
    for k in range(eq.n):
        names[eq.q[k]] = "q_{%d}" % (k + 1)
        names[eq.qd[k]] = r"\dot{q}_{%d}" % (k + 1)
        names[eq.qdd[k]] = r"\ddot{q}_{%d}" % (k + 1)
    for s in mapping.values():
        names[s] = "%s_{%s}" % (str(s)[0], str(s)[1:].replace("_", ""))
    return names


def _as_latex(eq, short=True, digits=6):
    mapping = _shorthand(eq) if short else {}
    pr = _LatexPrinter(digits, _latex_names(eq, mapping))
    lines = [r"% Closed-form dynamics of " + eq.robot + " (Lagrange-Euler), generated by robot_dynamics.symbolic",
             "% " + "; ".join(eq.legend())]
    if mapping:
        lines.append("% " + ", ".join(_shorthand_legend(mapping)))
    lines.append(r"\begin{align*}")
    rows = []
    for i, t in enumerate(_tau_rows(eq)):
        rows.append(r"\tau_{%d} &= %s" % (i + 1, pr.doprint(_display(t, mapping))))
    for i in range(eq.n):
        for j in range(i, eq.n):
            rows.append(r"M_{%d%d} &= %s" % (i + 1, j + 1, pr.doprint(_display(eq.M[i, j], mapping))))
    for name, mat in (("V", eq.V), ("G", eq.G)):
        for i in range(eq.n):
            rows.append(r"%s_{%d} &= %s" % (name, i + 1, pr.doprint(_display(mat[i], mapping))))
    lines.append(" \\\\\n".join(rows))
    lines.append(r"\end{align*}")
    return "\n".join(lines) + "\n"


class _NumpyPrinter(NumPyPrinter):
    """numpy code with floats printed in full (repr) and ``numpy.`` calls."""

    def _print_Rational(self, e):
        return repr(float(e)) if e.q != 1 else str(e.p)

    def _print_Float(self, e):
        return repr(float(e))


def _as_python(eq, name=None):
    n = eq.n
    pr = _NumpyPrinter({"fully_qualified_modules": True})
    params = list(eq.params.items())
    kw = "".join(", %s=%r" % (s, float(v)) for s, v in params)
    pass_kw = "".join(", %s=%s" % (s, s) for s, _ in params)
    qs = ", ".join(map(str, eq.q)) + ("," if n == 1 else "")
    qds = ", ".join(map(str, eq.qd)) + ("," if n == 1 else "")
    lines = [
        '"""Closed-form dynamics of %r, generated by robot_dynamics.symbolic (Lagrange-Euler).' % (name or eq.robot),
        "",
        "tau = mass_matrix(q) @ qdd + velocity_terms(q, qd) + gravity(q), SI units.",
        "Joint order: " + ", ".join(eq.legend()[:n]) + ".",
    ]
    if params:
        lines.append("Symbolic parameters (keyword arguments, defaults from the URDF): "
                     + ", ".join(eq.legend()[n:]) + ".")
    lines += [
        "Every function takes one state (n,) or a batch (..., n) and returns the matching shape.",
        '"""',
        "import numpy",
        "",
        "JOINT_NAMES = %r" % (tuple(eq.joint_names),),
        "PARAMETERS = {%s}" % ", ".join("%r: %r" % (str(s), float(v)) for s, v in params),
        "",
        "",
        "def _split(x, name):",
        "    x = numpy.asarray(x, dtype=float)",
        "    if x.ndim == 0 or x.shape[-1] != %d:" % n,
        "        raise ValueError('%%s must have %d values (one per joint), got shape %%s' %% (name, x.shape))" % n,
        "    return [x[..., i] for i in range(%d)], x.shape[:-1]" % n,
        "",
        "",
        "def _assemble(entries, shape, dims):",
        "    out = numpy.empty(shape + (len(entries),))",
        "    for i, e in enumerate(entries):",
        "        out[..., i] = e",
        "    return out.reshape(shape + dims)",
    ]

    def function(fname, args, doc, unpack, exprs, dims):
        subexprs, reduced = sp.cse(list(exprs), symbols=sp.numbered_symbols("x"))
        body = ["", "", "def %s(%s%s):" % (fname, args, kw), '    """%s"""' % doc]
        body += ["    " + u for u in unpack]
        body += ["    %s = %s" % (s, pr.doprint(e)) for s, e in subexprs]
        body.append("    return _assemble([%s], shape, %r)" % (", ".join(pr.doprint(e) for e in reduced), dims))
        return body

    lines += function("mass_matrix", "q", "(..., n, n) joint-space inertia matrix M(q).",
                      ["(%s), shape = _split(q, 'q')" % qs], list(eq.M), (n, n))
    lines += function("velocity_terms", "q, qd", "(..., n) Coriolis and centrifugal torques V(q, qd).",
                      ["(%s), shape = _split(q, 'q')" % qs, "(%s), _ = _split(qd, 'qd')" % qds,
                       "shape = numpy.broadcast_shapes(shape, numpy.shape(qd)[:-1])"], list(eq.V), (n,))
    lines += function("gravity", "q", "(..., n) gravity torques G(q) (hold the robot still).",
                      ["(%s), shape = _split(q, 'q')" % qs], list(eq.G), (n,))
    lines += [
        "", "",
        "def inverse_dynamics(q, qd, qdd%s):" % kw,
        '    """(..., n) tau = M(q) qdd + V(q, qd) + G(q)."""',
        "    M = mass_matrix(q%s)" % pass_kw,
        "    qdd = numpy.asarray(qdd, dtype=float)",
        "    return (numpy.einsum('...ij,...j->...i', M, qdd) + velocity_terms(q, qd%s)" % pass_kw,
        "            + gravity(q%s))" % pass_kw,
    ]
    return "\n".join(lines) + "\n"
