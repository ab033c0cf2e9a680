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

Where the force acts, within a step. One detection a step gives each
contact its point ``x0``, normal ``n`` and depth ``d0``; the integrator's
stages in between move the point with the geometry, the normal held. A
contact point is not a material point of either body: a rolling sphere's
moves with its centre, a box corner's with the corner. So each surface
carries its radius of curvature at the point (:class:`~.contacts.Contacts`'
``radius_a``, ``radius_b``: a sphere's or a capsule's ``r``, a corner's 0,
a face's inf) and the point is carried by the surfaces' centres of
curvature, which are material points: ``c_a = x0 + (r_a - d0/2) n`` in a
(its surface point ``x0 - (d0/2) n`` moved by ``r_a`` inside; a corner's
or a face's is the surface point itself), ``c_b`` likewise in b. At a
stage, the surface points ``y_a = c_a - (r_a - d0/2) n`` and ``y_b``
give the depth ``d0 - n . (y_a - y_b)`` (exact for a sphere on a plane:
its centre's height) and the point: midway along n, and across n
``w y_a + (1 - w) y_b`` with ``w = r_b / (r_a + r_b)``, the tangential
position of the contact of two spheres on the line of their centres (on a
flat face, ``w = 1``: the sphere's centre or the corner carries it; equal
radii, or a pair the detector cannot tell: midway). The normal force of a
sphere then passes through its centre at every stage, as on a rigid
sphere; held at a material point instead, the point would lag the centre
by ``v t`` within the step, and its normal force would be a forward
torque ``f_n v dt / 2`` (a negative rolling resistance ``v dt / (2 r)``:
a sphere launched sliding kept accelerating, 0.047 m/s^2 at 1 m/s). The
relative velocity ``v`` of the law is the bodies' at the round surface of
a round shape on a flat or cornered one (``x - (d/2) n`` for a round a:
its radius ``r`` is the rolling radius, the compliance is the other
side's), else midway at ``x``; the friction spring's stretch follows the
two material points anchored there at the step's start.

Stiffness (:mod:`.springs`): the effective mass ``m_c = 1 / (w_a + w_b)``
of the two bodies along ``n`` (``w = j M^-1 j^T``, ``j = n^T J`` for the
arm, eq. 3.55's ``Lambda^-1`` along n; ``1/m + (r x n) . I^-1 (r x n)``
for a free body; 0 for the static world), computed again whenever a contact
appears, gives ``k = m_c w^2``, ``c = 2 zeta m_c w``, and the tangential
``k_t``, ``c_t`` the same on the lightest tangential mass (``1 / max eig(P
W P)``, W the contact point's inverse mass matrix, ``P = 1 - n n^T``; an
arm's wrist makes it far lighter than the normal one): each contact is a
mass on a spring of natural frequency ``w`` and damping ratio ``zeta`` in
every direction, whatever it touches. The defaults ``w = 0.2 / dt`` (200
rad/s at 1 kHz), ``zeta = 1`` keep the stiffest mode explicit integrators
meet within semi-implicit Euler's bound ``zeta w dt < 1``, ``w^2 dt^2 < 4
(1 - zeta w dt)`` (and RK4's ``|lambda dt| < 2.78``) also when contacts
sharing bodies couple, up to ``2 w`` (a group whose coupling would go
beyond, a mesh's patch of many points, is softened to it:
:mod:`.springs`). At rest a contact sinks ``F / k``: the bundled Panda's
flange (a 2 cm sphere 10 cm out of panda_link8, pose Q0 of
test_contact_dynamics) pressing on a table with 97 N has ``m_n = 4.08 kg``,
``k = 1.63e5 N/m``, and sinks 0.59 mm (its tangential spring, on ``m_t =
0.80 kg``: ``k_t = 3.2e4 N/m``); a box at rest on its four corners sinks
``m g / (4 k)`` (a cube's corner has ``m_c = m / 4``: ``g / w^2`` = 0.25 mm; a flat box's
corner is lighter and sinks more, 0.41 mm for 0.2 x 0.2 x 0.05 m).

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

from ..algorithms.contact_kernels import body_motion, link_wrenches, match, remember, stage_forces  # noqa: F401
from ..errors import InputError


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
