"""Torque laws of the dynamics node and their safety limits (no ROS needed).

Every law is a documented call of the library:

- gravity compensation ``g(q) = gravity_torques(q) = rnea(q, 0, 0)``;
- Coriolis/centrifugal torques ``C(q, qd) qd = nonlinear_effects(q, qd) - g(q)``;
- friction compensation ``tau_f(qd)``, each joint's friction law (the URDF
  ``<dynamics>`` or an actuators file: :func:`robot_dynamics.friction_torques`,
  with ``tanh(qd / smoothing)`` for the sign);
- feedforward ``tau_ff = M(q_d) qdd_d + C(q_d, qd_d) qd_d + g(q_d) = rnea(q_d, qd_d, qdd_d)``;
- computed torque ``tau = M(q) (qdd_d + Kd (qd_d - qd) + Kp (q_d - q)) + h(q, qd)
  = rnea(q, qd, qdd_d + Kd (qd_d - qd) + Kp (q_d - q))``;
- optionally (``friction_smoothing`` a number: the node's ``tracking_friction``)
  the friction law added to these two: ``tau_f(qd_d)`` at the desired
  velocity to the feedforward (a model of the motion planned), ``tau_f(qd)``
  at the measured one to the computed torque (the friction that acts now);
- joint and Cartesian impedance: :class:`robot_dynamics.JointImpedance` and
  :class:`robot_dynamics.CartesianImpedance` towards a target (:mod:`.impedance_target`).

:class:`TorqueLimiter` clamps any torque to the URDF effort limits times a
scale and refuses non-finite values, so nothing else can publish them.
"""
import math

import numpy as np

import robot_dynamics as rd
from ..algorithms.vectors import CLAMPED, NOT_FINITE, clamp
from ..errors import InputError

#: Compensation modes of the dynamics node (parameter ``mode``).
GRAVITY = 'gravity'
GRAVITY_CORIOLIS = 'gravity_coriolis'
GRAVITY_CORIOLIS_FRICTION = 'gravity_coriolis_friction'
FEEDFORWARD = 'feedforward'
COMPUTED_TORQUE = 'computed_torque'
JOINT_IMPEDANCE = 'joint_impedance'
CARTESIAN_IMPEDANCE = 'cartesian_impedance'
MODES = (GRAVITY, GRAVITY_CORIOLIS, GRAVITY_CORIOLIS_FRICTION, FEEDFORWARD, COMPUTED_TORQUE, JOINT_IMPEDANCE,
         CARTESIAN_IMPEDANCE)
#: The modes whose command is an impedance law (:mod:`.impedance_target`).
IMPEDANCE_MODES = (JOINT_IMPEDANCE, CARTESIAN_IMPEDANCE)


class Compensation:
    """The compensation torques at a measured state, in model order.

    Args:
        model: :class:`robot_dynamics.Model` (payloads included).
        mode: one of :data:`MODES`. ``feedforward``, ``computed_torque`` and
            the impedance modes compensate like ``gravity_coriolis`` here; their
            own law is :func:`feedforward` / :func:`computed_torque` /
            :mod:`.impedance_target`.
        friction_smoothing: velocity scale [rad/s] of the ``tanh`` that
            replaces ``sgn(qd)`` in friction compensation (0: plain sign).
        dynamics: the model's :class:`robot_dynamics.codegen.CompiledModel`
            to compute gravity and the nonlinear effects with (the compiled
            backend, :mod:`.backend`), or None: the library.

    After :meth:`compute`, ``gravity``, ``coriolis``, ``friction`` and
    ``total`` are (nq,) arrays [N m or N]; ``total`` is their sum (terms of
    the mode only; the others stay zero).
    """

    def __init__(self, model, mode, friction_smoothing=0.0, dynamics=None):
        if mode not in MODES:
            raise InputError('mode must be one of %s, got %r' % (', '.join(MODES), mode))
        self.model = model
        self.mode = mode
        self.smoothing = float(friction_smoothing)
        self.with_coriolis = mode != GRAVITY
        self.with_friction = mode == GRAVITY_CORIOLIS_FRICTION
        n = model.nq
        self.data = rd.Data(model)          # the work buffers: the calls below allocate nothing
        self.dynamics = dynamics
        self.gravity = np.zeros(n)
        self.coriolis = np.zeros(n)
        self.friction = np.zeros(n)
        self.total = np.zeros(n)

    def compute(self, q, qd):
        """Fill gravity, coriolis, friction and total at (q, qd); returns total."""
        model, data, fast = self.model, self.data, self.dynamics
        if fast is not None:
            g = fast.gravity_torques(q, out=self.gravity)
        else:
            g = rd.gravity_torques(model, q, data=data, out=self.gravity)
        if self.with_coriolis:
            if fast is not None:
                fast.coriolis(q, qd, out=self.coriolis)
                np.add(g, self.coriolis, out=self.total)
            else:
                h = rd.nonlinear_effects(model, q, qd, data=data, out=self.total)
                np.subtract(h, g, out=self.coriolis)
        else:
            self.total[:] = g
        if self.with_friction:
            self.friction[:] = rd.friction_torques(model, qd, smoothing=self.smoothing)
            self.total += self.friction
        return self.total


def feedforward(model, q_d, qd_d, qdd_d, friction_smoothing=None, dynamics=None):
    """``tau_ff = M(q_d) qdd_d + C(q_d, qd_d) qd_d + g(q_d)`` (= rnea at the desired state),
    plus the friction laws at the desired velocity, ``friction_torques(qd_d, friction_smoothing)``,
    when ``friction_smoothing`` [rad/s] is a number (None: no friction). ``dynamics``: a
    CompiledModel of ``model`` for the rnea, or None: the library."""
    tau = dynamics.rnea(q_d, qd_d, qdd_d) if dynamics is not None else rd.rnea(model, q_d, qd_d, qdd_d)
    if friction_smoothing is not None:
        tau = tau + rd.friction_torques(model, qd_d, smoothing=friction_smoothing)
    return tau


def computed_torque(model, q, qd, q_d, qd_d, qdd_d, kp, kd, friction_smoothing=None, dynamics=None):
    """Computed-torque law ``M(q) (qdd_d + Kd (qd_d - qd) + Kp (q_d - q)) + h(q, qd)``
    [+ ``friction_torques(qd, friction_smoothing)``, the friction at the measured velocity].

    Args:
        q, qd: (nq,) measured state.
        q_d, qd_d, qdd_d: (nq,) desired state.
        kp, kd: (nq,) diagonal gains [1/s^2], [1/s].
        friction_smoothing: None: no friction term; a number [rad/s]: the laws' sign smoothing.
        dynamics: a CompiledModel of ``model`` for the rnea, or None: the library.
    """
    a = qdd_d + kd * (qd_d - qd) + kp * (q_d - q)
    tau = dynamics.rnea(q, qd, a) if dynamics is not None else rd.rnea(model, q, qd, a)
    if friction_smoothing is not None:
        tau = tau + rd.friction_torques(model, qd, smoothing=friction_smoothing)
    return tau


class TorqueLimiter:
    """Clamp torques to ``scale * model.effort_limit`` and refuse non-finite ones.

    Args:
        effort_limit: (nq,) URDF effort limits [N m or N] (inf: no limit).
        scale: factor in (0, 1] applied to the limits.

    Attributes:
        limit: (nq,) the applied limits.
        bounded: False if some joint has no finite limit (it is only checked
            for finiteness).
        clamp_events: number of counted calls that clamped at least one value.
        clamped: True if the last counted call clamped.
    """

    def __init__(self, effort_limit, scale=1.0):
        if not (0.0 < scale <= 1.0):
            raise InputError('effort limit scale must be in (0, 1], got %r' % (scale,))
        self.limit = np.asarray(effort_limit, dtype=float) * scale
        self.bounded = bool(np.all(np.isfinite(self.limit)))
        self.clamp_events = 0
        self.clamped = False

    def apply(self, tau, count=True):
        """Clamp ``tau`` ((n,) float64) in place; False (tau untouched) if it is not finite.

        With ``count``, a clamp is counted in ``clamp_events`` and ``clamped``.
        """
        status = clamp(tau, self.limit)
        if status == NOT_FINITE:
            return False
        if count:
            self.clamped = status == CLAMPED
            self.clamp_events += self.clamped
        return True
