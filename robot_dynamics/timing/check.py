"""Feasibility of a timed joint trajectory: torques, velocities and
accelerations against the joints' limits.

The torque a motor must give along ``q(t)`` is the inverse dynamics
``tau = M(q) qdd + C(q, qd) qd + g(q)`` (Featherstone, *Rigid Body Dynamics
Algorithms*, sec. 5.3, :func:`~robot_dynamics.rnea`) plus the joint friction
the URDF declares (viscous and Coulomb, :func:`~robot_dynamics.friction_torques`).
"""
import numpy as np

from .. import checks
from ..algorithms.rnea import rnea
from ..analysis.friction import friction_torques
from ..errors import InputError

QUANTITIES = ("effort", "velocity", "acceleration")
#: The one tolerance of the timing package (docs/RETIMING.md): a ratio up to 1 + TOLERANCE counts as within
#: the limit here (the rounding of a value computed at its limit: toppra meets its constraints to about
#: 1e-7), and :func:`~robot_dynamics.retime` tightens its limits until every ratio it checks is at most
#: 1 - TOLERANCE, so that what it returns is feasible here, sampled anywhere.
TOLERANCE = 1e-6


def motor_torques(model, q, qd, qdd):
    """(..., nq) torques [N m | N] the motors give along (q, qd, qdd): the
    inverse dynamics (armature included) plus each joint's friction law, if any."""
    tau = rnea(model, q, qd, qdd)
    if has_friction(model):
        tau = tau + friction_torques(model, qd)
    return tau


def has_friction(model):
    """True when a joint has friction: URDF ``<dynamics damping>`` or ``friction`` > 0, or a stribeck or
    sigmoid law (docs/ACTUATORS.md), whose torque the viscous and Coulomb columns do not hold."""
    return bool(np.any(model.body_damping != 0.0) or np.any(model.body_friction != 0.0)
                or any(law.law in ("stribeck", "sigmoid") for law in model.friction_laws))


def fixed_base(model, what):
    if model.root_joint is not None:
        raise InputError("%s takes a fixed-base arm; this model has a %r root joint" % (what, model.root_joint))


def joint_limits(model, values, default, name):
    """(nq,) positive limits: ``values`` (one number or nq numbers) or ``default``."""
    if values is None:
        return np.asarray(default, dtype=float)
    lim = np.broadcast_to(checks.as_float_array(values, name), (model.nq,)) if np.ndim(values) == 0 \
        else checks.as_float_array(values, name)
    if lim.shape != (model.nq,):
        raise InputError("%s must be one number or %d (one per joint: %s), got shape %s"
                         % (name, model.nq, ", ".join(model.joint_names), lim.shape))
    if np.any(np.isnan(lim)) or np.any(lim <= 0):
        raise InputError("%s must be > 0 (inf: no limit), got %s" % (name, lim.tolist()))
    return np.array(lim, dtype=float)


def times_and_positions(model, t, q):
    """Checked (n,) times, strictly increasing, and (n, nq) positions, finite."""
    t = checks.as_float_array(t, "t")
    q = checks.as_float_array(q, "q")
    if t.ndim != 1 or t.size < 2:
        raise InputError("t must be (n,) times [s] with n >= 2, got shape %s" % (t.shape,))
    if q.shape != (t.size, model.nq):
        raise InputError("q must be (n, nq) = (%d, %d) positions, got shape %s" % (t.size, model.nq, q.shape))
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(q))):
        raise InputError("t and q must be finite")
    if np.any(np.diff(t) <= 0):
        k = int(np.flatnonzero(np.diff(t) <= 0)[0])
        raise InputError("t must be strictly increasing; t[%d] = %r, t[%d] = %r" % (k, t[k], k + 1, t[k + 1]))
    return t, q


class TrajectoryCheck:
    """How close a timed trajectory comes to each joint's limits.

    Attributes:
        joint_names: (nq,) in q order.
        t: (n,) times [s]; tau: (n, nq) motor torques [N m | N] (friction included).
        ratio: dict quantity -> (n, nq) |value| / limit for ``effort``,
            ``velocity`` and ``acceleration`` (0 where a joint has no limit).
        worst: dict quantity -> (nq,) the largest ratio of each joint;
        index, time: dict quantity -> (nq,) the sample and time [s] where it occurs.
    """

    def __init__(self, joint_names, t, tau, ratio):
        self.joint_names = tuple(joint_names)
        self.t, self.tau, self.ratio = t, tau, ratio
        self.index = {k: np.argmax(r, axis=0) for k, r in ratio.items()}
        self.worst = {k: r[self.index[k], np.arange(r.shape[1])] for k, r in ratio.items()}
        self.time = {k: t[i] for k, i in self.index.items()}

    def max_ratio(self, quantity=None):
        """The largest ratio over the joints, of one quantity or of all three."""
        keys = QUANTITIES if quantity is None else (quantity,)
        return float(max(self.worst[k].max() for k in keys))

    def violation(self):
        """(quantity, joint name, ratio, sample index, time [s]) of the largest ratio overall."""
        k = max(QUANTITIES, key=lambda q: self.worst[q].max())
        j = int(np.argmax(self.worst[k]))
        return k, self.joint_names[j], float(self.worst[k][j]), int(self.index[k][j]), float(self.time[k][j])

    @property
    def feasible(self):
        """True when no ratio exceeds 1 (+ TOLERANCE)."""
        return self.max_ratio() <= 1.0 + TOLERANCE

    def summary(self):
        """A text table: per joint, each worst ratio and the time it occurs."""
        w = max(len(n) for n in self.joint_names + ("joint",))
        head = "%-*s" % (w, "joint") + "".join("  %9s %8s" % (k[:5] + "/lim", "at t [s]") for k in QUANTITIES)
        rows = [head]
        for j, name in enumerate(self.joint_names):
            rows.append("%-*s" % (w, name) + "".join("  %9.4f %8.3f" % (self.worst[k][j], self.time[k][j])
                                                     for k in QUANTITIES))
        k, name, r, i, t = self.violation()
        rows.append("worst: %s of %s at %.4g x its limit (sample %d, t = %.4g s): %s"
                    % (k, name, r, i, t, "feasible" if r <= 1.0 + TOLERANCE else "NOT feasible"))
        return "\n".join(rows)

    def __repr__(self):
        k, name, r, i, t = self.violation()
        return "TrajectoryCheck(%d samples, %.4g s; worst %s ratio %.4g at %s, t = %.4g s)" % (
            self.t.size, self.t[-1] - self.t[0], k, r, name, t)


def check_trajectory(model, t, q, qd=None, qdd=None, *, acceleration_limits=None):
    """The worst ratio of each joint's torque, velocity and acceleration to its limit along a timed trajectory.

    Args:
        model: a fixed-base :class:`~robot_dynamics.Model`; its ``effort_limit``
            and ``velocity_limit`` (the URDF's) are the limits.
        t: (n,) strictly increasing times [s].
        q: (n, nq) joint positions [rad | m].
        qd, qdd: (n, nq) velocities and accelerations; when None, the
            derivatives of a cubic spline through (t, q) (not-a-knot ends;
            ``qdd`` of a spline through (t, qd) when only ``qd`` is given).
        acceleration_limits: one number or (nq,) [rad/s^2 | m/s^2]; the URDF
            has none, so without it every acceleration ratio is 0.

    Returns:
        :class:`TrajectoryCheck` (``.feasible``, ``.worst``, ``.time``, ``.summary()``).
    """
    fixed_base(model, "check_trajectory")
    t, q = times_and_positions(model, t, q)
    if qd is None or qdd is None:
        from scipy.interpolate import CubicSpline
        if qd is None:
            spline = CubicSpline(t, q, axis=0)
            qd = spline(t, 1)
            qdd = spline(t, 2) if qdd is None else qdd
        else:
            qdd = CubicSpline(t, checks.as_float_array(qd, "qd"), axis=0)(t, 1)
    qd, qdd = checks.as_float_array(qd, "qd"), checks.as_float_array(qdd, "qdd")
    for name, x in (("qd", qd), ("qdd", qdd)):
        if x.shape != q.shape:
            raise InputError("%s must have the shape of q %s, got %s" % (name, q.shape, x.shape))
    tau = motor_torques(model, q, qd, qdd)
    acc = joint_limits(model, acceleration_limits, np.full(model.nq, np.inf), "acceleration_limits")
    ratio = {k: np.abs(x) / lim for k, x, lim in (("effort", tau, model.effort_limit),
                                                  ("velocity", qd, model.velocity_limit),
                                                  ("acceleration", qdd, acc))}
    return TrajectoryCheck(model.joint_names, t, tau, ratio)
