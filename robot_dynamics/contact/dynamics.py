"""Contact dynamics: a compliant normal law, Coulomb friction that truly sticks, and
restitution by the impact law.

The model (one point contact, normal ``n`` from b to a, depth ``d >= 0``,
relative velocity ``v = v_a - v_b`` of the two material points at the
contact point, ``v_n = n . v``, ``v_t = v - v_n n``):

- **Normal: a spring-damper that only pushes** (Kelvin-Voigt, the law of
  the joint stops in :class:`robot_dynamics.simulation.PositionLimits`):
  ``f_n = max(0, k d - c v_n)``. At rest under a load ``F`` the contact
  sinks by ``d = F / k``: the penetration this model states.
- **Tangential: a spring anchored where the contact started, saturated by
  Coulomb's cone** (an elasto-plastic "bristle"): ``f_t = -k_t s - c_t
  v_t``, with ``s`` the tangential stretch since the contact began
  (carried from step to step, ``s' = v_t``), clipped to ``|f_t| <= mu f_n``.
  Below the cone the spring holds: the contact sticks (zero mean velocity,
  an elastic deflection ``|f_t| / k_t``), not the creep of a smoothed
  ``tanh`` law. On the cone it slides with ``|f_t| = mu f_n`` exactly, and
  after each step the anchor is moved so the spring sits on the cone
  (``s = -(mu f_n / k_t) f_t / |f_t|``): Coulomb's sliding force, no
  stored energy released when the load drops.
- **Restitution: the impact law** (Handbook of Robotics, 2nd ed., sec.
  3.3.4, eqs. 3.55-3.60, :func:`robot_dynamics.constraints.impact.impact`):
  a contact that appears during a step, approaching faster than
  ``bounce_velocity``, gets at the step's end the impulse ``p n``, ``p >= 0``,
  that makes ``v_n+ = -e v_n-`` (Newton's kinematic restitution; several new
  contacts at once: projected Gauss-Seidel sweeps on the impulses), and a
  free body is moved back out by the depth it reached in that step. From
  the next step on, the compliant law holds the contact (a new contact
  exerts no force in the step it appears: the impulse stands for it).

Stiffness: the effective mass ``m_c = 1 / (w_a + w_b)`` of the two bodies
along ``n`` at the contact's first step (``w = j M^-1 j^T``, ``j = n^T J``
for the arm, eq. 3.55's ``Lambda^-1`` along n; ``1/m + (r x n) . I^-1 (r
x n)`` for a free body; 0 for the static world) gives ``k = m_c w^2``,
``c = 2 zeta m_c w`` (and ``k_t = k``, ``c_t = c``): each contact is a mass
``m_c`` on a spring of natural frequency ``w`` and damping ratio ``zeta``,
whatever it touches. The defaults ``w = 0.2 / dt`` (200 rad/s at 1 kHz),
``zeta = 1`` keep the stiffest mode explicit integrators meet, up to twice
``w`` when several contacts of one body couple, within semi-implicit
Euler's bound ``zeta w dt < 1``, ``w^2 dt^2 < 4 (1 - zeta w dt)`` (and RK4's
``|lambda dt| < 2.78``); the arm pressing on a table with 100 N and
``m_c = 2 kg`` then sinks 1.25 mm, a box at rest sinks ``g / w^2`` = 0.25 mm
(each corner carries ``m g / 4`` on ``k = (m / 4) w^2``).

Why this model. The Handbook (sec. 3.7.9) names the two roads: a compliant
contact keeps the mechanism a tree (the simulator's ABA, joint limits,
friction, the fused step's structure unchanged; a contact is one more
external wrench, ``f_ext`` mapped through ``J^T``), but stiff contacts
strain explicit integration; hard contacts need a constraint solve with
changing topology. MuJoCo's soft constraints are the middle road: a
velocity-level solve whose reference acceleration ``a_ref = -b v - k r``
(``solref = (timeconst, dampratio)``) is also a spring-damper scaled by the
effective mass (its default time constant 0.02 s, about 50 rad/s). Here the
same mass-scaled spring-damper is applied as a force at every integrator
stage, so every integrator of the simulator (RK4, semi-implicit, explicit
and linearly implicit Euler) integrates it unchanged, and its stiffness is
tied to the step, as the joint stops' is. Coulomb's law needs no solve:
the anchored spring makes static friction a position-level force, so a
block on an incline sticks below ``tan theta = mu`` and slides with ``g
(sin theta - mu cos theta)`` above. What it does not do: a contact between
two stiff bodies cannot be stiffer than ``w`` allows (a 1 kg box under
100 N sinks 2.5 mm), and the impulse is frictionless, as eq. 3.55's is.

Arrays: ``nb`` arm bodies, ``nf`` free bodies, body index ``b`` as in
:class:`~.contacts.Contacts`; the arm's body poses ``Rw (nb+1, 3, 3)``,
``pw (nb+1, 3)`` and twists ``wa``, ``va`` (nb+1, 3) (angular velocity,
velocity of the body origin; world frame, last row the base: static, which
stands for ``b = -1``); the free bodies' ``Rf, pf, wf, vf`` (nf, ...) about
their centres of mass.
"""
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..algorithms.kernels import jcalc, jit, joint_coordinate, joint_position, parent_row  # noqa: F401
from ..algorithms.kernels import world_poses
from ..errors import InputError
from ..model.packed import AXIS, JTYPE, PRISMATIC


@dataclass(frozen=True)
class ContactParameters:
    """The contact law's constants (module docstring).

    Attributes:
        friction: Coulomb's mu >= 0 (one for every contact).
        restitution: Newton's e in [0, 1] of the impact law.
        frequency: w [rad/s] of each contact's spring on its effective mass;
            None: ``0.2 / dt``.
        damping_ratio: zeta >= 0.
        stiffness, damping: fixed k [N/m] and c [N s/m] for every contact
            instead of ``m_c w^2`` and ``2 zeta m_c w`` (None: mass-scaled).
        bounce_velocity: [m/s] a new contact approaching slower gets no impulse.
    """
    friction: float = 0.5
    restitution: float = 0.0
    frequency: Optional[float] = None
    damping_ratio: float = 1.0
    stiffness: Optional[float] = None
    damping: Optional[float] = None
    bounce_velocity: float = 0.05

    def __post_init__(self):
        for name, lo, hi in (("friction", 0.0, np.inf), ("restitution", 0.0, 1.0), ("damping_ratio", 0.0, np.inf),
                             ("bounce_velocity", 0.0, np.inf)):
            x = getattr(self, name)
            if not (np.isfinite(x) and lo <= x <= hi):
                raise InputError("contact %s must be in [%g, %g], got %r" % (name, lo, hi, x))
        for name in ("frequency", "stiffness", "damping"):
            x = getattr(self, name)
            if x is not None and not (np.isfinite(x) and x > 0 if name != "damping" else x >= 0):
                raise InputError("contact %s must be a finite number > 0 (or None), got %r" % (name, x))

    def spring(self, m_c, dt):
        """(k [N/m], c [N s/m]) of a contact of effective mass ``m_c`` [kg] at step ``dt`` [s]."""
        w = 0.2 / dt if self.frequency is None else self.frequency
        k = m_c * w * w if self.stiffness is None else self.stiffness
        c = 2.0 * self.damping_ratio * m_c * w if self.damping is None else self.damping
        return k, c


@jit
def body_motion(D, q, qd, R, p, Rw, pw, wa, va):
    """The arm's body poses (Rw, pw) and twists (wa: angular velocity, va: velocity
    of the body origin), world frame, (nb + 1, ...) with the base's last:
    ``w_i = w_par + Rw_i S_w qd_i``, ``v_i = v_par + w_par x (p_i - p_par) (+ Rw_i S_v qd_i)``."""
    world_poses(D, q, R, p, Rw, pw)
    n = D.shape[0] - 1
    for r in range(3):
        wa[n, r], va[n, r] = 0.0, 0.0
    for i in range(n):
        par = parent_row(D, i)
        qdi = joint_coordinate(D, i, qd)
        d0, d1, d2 = pw[i, 0] - pw[par, 0], pw[i, 1] - pw[par, 1], pw[i, 2] - pw[par, 2]
        w0, w1, w2 = wa[par, 0], wa[par, 1], wa[par, 2]
        va[i, 0] = va[par, 0] + w1 * d2 - w2 * d1
        va[i, 1] = va[par, 1] + w2 * d0 - w0 * d2
        va[i, 2] = va[par, 2] + w0 * d1 - w1 * d0
        for r in range(3):
            s = (Rw[i, r, 0] * D[i, AXIS] + Rw[i, r, 1] * D[i, AXIS + 1] + Rw[i, r, 2] * D[i, AXIS + 2]) * qdi
            wa[i, r] = wa[par, r] + (0.0 if D[i, JTYPE] == PRISMATIC else s)
            va[i, r] += s if D[i, JTYPE] == PRISMATIC else 0.0


@jit
def _frame(b, nb, Rw, pw, wa, va, Rf, pf, wf, vf):
    """(R, p, w, v) of body b (-1: the static world, the arm's base row)."""
    if b < 0:
        return Rw[nb], pw[nb], wa[nb], va[nb]
    if b < nb:
        return Rw[b], pw[b], wa[b], va[b]
    return Rf[b - nb], pf[b - nb], wf[b - nb], vf[b - nb]


@jit
def _material(R, p, w, v, x, r_local, xw, vx):
    """xw = R r_local + p (a body-fixed point) and vx = v + w x (x - p) (the velocity
    of the body's material point at x)."""
    for r in range(3):
        xw[r] = p[r] + R[r, 0] * r_local[0] + R[r, 1] * r_local[1] + R[r, 2] * r_local[2]
    d0, d1, d2 = x[0] - p[0], x[1] - p[1], x[2] - p[2]
    vx[0] = v[0] + w[1] * d2 - w[2] * d1
    vx[1] = v[1] + w[2] * d0 - w[0] * d2
    vx[2] = v[2] + w[0] * d1 - w[1] * d0


@jit
def match(pair, feature, n, mem_pair, mem_feature, m, found):
    """found[i] = the memory row of contact i (same (pair, feature)), -1 for a new one."""
    for i in range(n):
        found[i] = -1
        for j in range(m):
            if mem_pair[j] == pair[i] and mem_feature[j] == feature[i]:
                found[i] = j
                break


@jit
def _law(i, j, body_a, body_b, point, normal, depth, mem_s, mem_ra, mem_rb, mem_k, mem_c, mu, nb,
         Rw, pw, wa, va, Rf, pf, wf, vf, F, s_t):
    """Contact i with memory row j: its force on a, F[i] (3,) world, and the
    tangential stretch s_t (3,) of the spring (before the cone's clip). Returns f_n."""
    Ra, pa, wA, vA = _frame(body_a[i], nb, Rw, pw, wa, va, Rf, pf, wf, vf)
    Rb, pb, wB, vB = _frame(body_b[i], nb, Rw, pw, wa, va, Rf, pf, wf, vf)
    xa, xb, ua, ub = np.empty(3), np.empty(3), np.empty(3), np.empty(3)
    x, n = point[i], normal[i]
    _material(Ra, pa, wA, vA, x, mem_ra[j], xa, ua)
    _material(Rb, pb, wB, vB, x, mem_rb[j], xb, ub)
    sn, vn = 0.0, 0.0
    for r in range(3):
        s_t[r] = mem_s[j, r] + xa[r] - xb[r]                       # s = s0 + (anchor_a - anchor_b)
        ua[r] -= ub[r]                                             # v = v_a - v_b at x
        sn += s_t[r] * n[r]
        vn += ua[r] * n[r]
    k, c = mem_k[j], mem_c[j]
    f_n = k * depth[i] - c * vn                                    # f_n = k d - c v_n
    if f_n <= 0.0:
        for r in range(3):
            F[i, r] = 0.0
            s_t[r] -= sn * n[r]
        return 0.0
    ft2 = 0.0
    for r in range(3):
        s_t[r] -= sn * n[r]                                        # tangential parts
        F[i, r] = -k * s_t[r] - c * (ua[r] - vn * n[r])            # f_t = -k_t s - c_t v_t
        ft2 += F[i, r] * F[i, r]
    scale = 1.0
    if ft2 > (mu * f_n) ** 2:                                      # |f_t| <= mu f_n: slide on the cone
        scale = mu * f_n / np.sqrt(ft2)
    for r in range(3):
        F[i, r] = f_n * n[r] + scale * F[i, r]
    return f_n


@jit
def _add_wrench(W, row, F, i, x, p, sign):
    """W[row] += sign [F; (x - p) x F] (world, moment about p)."""
    f0, f1, f2 = sign * F[i, 0], sign * F[i, 1], sign * F[i, 2]
    d0, d1, d2 = x[0] - p[0], x[1] - p[1], x[2] - p[2]
    W[row, 0] += f0
    W[row, 1] += f1
    W[row, 2] += f2
    W[row, 3] += d1 * f2 - d2 * f1
    W[row, 4] += d2 * f0 - d0 * f2
    W[row, 5] += d0 * f1 - d1 * f0


@jit
def stage_forces(body_a, body_b, point, normal, depth, n, found, mem_s, mem_ra, mem_rb, mem_k, mem_c, mu,
                 Rw, pw, wa, va, Rf, pf, wf, vf, F, Warm, Wf):
    """The contact forces at one integrator stage: F[i] (3,) on a (world), and the
    wrenches they sum to: Warm (nb, 6) on the arm's bodies ([f; n] world, moment
    about the body origin), Wf (nf, 6) on the free bodies (moment about the
    COM). A new contact (found[i] < 0) exerts none. Returns the number of
    contacts that load the arm."""
    nb = Rw.shape[0] - 1
    Warm[:, :] = 0.0
    Wf[:, :] = 0.0
    s_t = np.empty(3)
    arm = 0
    for i in range(n):
        j = found[i]
        if j < 0:
            F[i, :] = 0.0
            continue
        f_n = _law(i, j, body_a, body_b, point, normal, depth, mem_s, mem_ra, mem_rb, mem_k, mem_c, mu, nb,
                   Rw, pw, wa, va, Rf, pf, wf, vf, F, s_t)
        if f_n == 0.0:
            continue
        for side in range(2):
            b, sign = (body_a[i], 1.0) if side == 0 else (body_b[i], -1.0)
            if 0 <= b < nb:
                _add_wrench(Warm, b, F, i, point[i], pw[b], sign)
                arm += 1
            elif b >= nb:
                _add_wrench(Wf, b - nb, F, i, point[i], pf[b - nb], sign)
    return arm


@jit
def link_wrenches(Warm, body_link, link_pose_rows, Rw, pw, W):
    """W (nl, 6) = the arm bodies' world wrenches Warm (nb, 6) as f_ext: on each
    body's own link (body_link), ``[R^T f; R^T (n - (p_l - p_i) x f)]`` in the link frame."""
    W[:, :] = 0.0
    for i in range(Warm.shape[0]):
        l = body_link[i]
        P = link_pose_rows[l]
        f, m = Warm[i, 0:3], Warm[i, 3:6]
        d = np.empty(3)
        for r in range(3):                                         # p_l - p_i = Rw_i p_place
            d[r] = Rw[i, r, 0] * P[3] + Rw[i, r, 1] * P[7] + Rw[i, r, 2] * P[11]
        mm0 = m[0] - (d[1] * f[2] - d[2] * f[1])
        mm1 = m[1] - (d[2] * f[0] - d[0] * f[2])
        mm2 = m[2] - (d[0] * f[1] - d[1] * f[0])
        for c in range(3):                                         # R_l = Rw_i R_place
            R0 = Rw[i, 0, 0] * P[c] + Rw[i, 0, 1] * P[4 + c] + Rw[i, 0, 2] * P[8 + c]
            R1 = Rw[i, 1, 0] * P[c] + Rw[i, 1, 1] * P[4 + c] + Rw[i, 1, 2] * P[8 + c]
            R2 = Rw[i, 2, 0] * P[c] + Rw[i, 2, 1] * P[4 + c] + Rw[i, 2, 2] * P[8 + c]
            W[l, c] += R0 * f[0] + R1 * f[1] + R2 * f[2]
            W[l, 3 + c] += R0 * mm0 + R1 * mm1 + R2 * mm2


@jit
def remember(body_a, body_b, point, normal, depth, pair, feature, n, found, new_k, new_c,
             mem_pair, mem_feature, mem_s, mem_ra, mem_rb, mem_k, mem_c, mu,
             Rw, pw, wa, va, Rf, pf, wf, vf, F,
             out_pair, out_feature, out_s, out_ra, out_rb, out_k, out_c):
    """The contacts' memory after a step (at the committed state): each contact's
    stretch ``s`` carried (new: 0, with new_k, new_c) and moved onto the cone
    when it slides, anchored at its current point in both bodies' frames; the
    force each exerts there in F. Writes the out_* rows 0..n-1, returns n
    (the stretch is kept in out_s, both anchors at the contact point)."""
    nb = Rw.shape[0] - 1
    s_t = np.empty(3)
    for i in range(n):
        j = found[i]
        out_pair[i], out_feature[i] = pair[i], feature[i]
        if j >= 0:
            out_k[i], out_c[i] = mem_k[j], mem_c[j]
            f_n = _law(i, j, body_a, body_b, point, normal, depth, mem_s, mem_ra, mem_rb, mem_k, mem_c, mu, nb,
                       Rw, pw, wa, va, Rf, pf, wf, vf, F, s_t)
        else:
            out_k[i], out_c[i] = new_k[i], new_c[i]
            f_n = 0.0
            F[i, :] = 0.0
            s_t[:] = 0.0
        k = out_k[i]
        if f_n == 0.0:
            s_t[:] = 0.0                                           # unloaded: the anchor follows the point
        else:
            ft2 = 0.0
            for r in range(3):
                ft = F[i, r] - f_n * normal[i, r]
                ft2 += ft * ft
            if ft2 >= (mu * f_n) ** 2 * (1.0 - 1e-12) and ft2 > 0.0:    # sliding: the spring onto the cone
                a = mu * f_n / (k * np.sqrt(ft2))
                for r in range(3):
                    s_t[r] = -a * (F[i, r] - f_n * normal[i, r])
        out_s[i] = s_t
        for side in range(2):
            b = body_a[i] if side == 0 else body_b[i]
            R, p, _, _ = _frame(b, nb, Rw, pw, wa, va, Rf, pf, wf, vf)
            out = out_ra if side == 0 else out_rb
            for c in range(3):                                     # r = R^T (x - p): both at x
                out[i, c] = R[0, c] * (point[i, 0] - p[0]) + R[1, c] * (point[i, 1] - p[1]) \
                    + R[2, c] * (point[i, 2] - p[2])
    return n
