"""Joint friction: each joint's friction law (docs/ACTUATORS.md).

A joint's law (``model.friction_laws``, :mod:`robot_dynamics.model.actuators`)
gives the friction torque ``tau_f(v)`` that opposes the joint velocity
``v``; the result is what a controller adds to compensate it, and a
simulator subtracts it from the applied torque. The laws (viscous, coulomb, stribeck, sigmoid) and their
smoothed sign ``sgn_s`` are written once, in :mod:`robot_dynamics.model.friction`.

:func:`friction_law_torque` and :func:`friction_law_gradient` evaluate one
law (and its derivatives with respect to its parameters, for a nonlinear
least-squares fit);
:func:`friction_torques` evaluates every joint of a model, mimic joints
mapped onto the joint they follow.
"""
import weakref

import numpy as np

from .. import checks
from ..errors import InputError
from ..model.actuators import FrictionLaw
from ..model.friction import friction_law_gradient, friction_law_torque, sigma as _sigma  # noqa: F401 (rd.*)

_TABLES = {}        # id(model) -> its per-body law table or None (a Model never changes; dropped with it)
_MISSING = object()


def friction_torques(model, qd, *, smoothing=0.0):
    """Friction torques of the joints, each joint's law (``model.friction_laws``).

    Args:
        qd: (..., nq) joint velocities [rad/s or m/s].
        smoothing: velocity scale [rad/s] of ``tanh(qd / smoothing)`` used in
            place of ``sgn(qd)`` when > 0 (a continuous model for integrators)
            by the coulomb and stribeck laws that give no ``smoothing`` of
            their own.

    Returns:
        (..., nq) torques [N m] / forces [N] along the motion. Mimic joints'
        friction is mapped onto the joint they follow.
    """
    if smoothing < 0 or not np.isfinite(smoothing):
        raise InputError("smoothing must be a finite velocity >= 0 [rad/s], got %r" % (smoothing,))
    shape, (QD,) = checks.batch(model, qd=qd)
    if not np.all(np.isfinite(QD)):
        checks.raise_not_finite(qd=qd)
    G = model.coupling
    qd_b = QD @ G.T                                       # body joint velocities
    table = law_table(model)
    if table is None:                                     # viscous and unsmoothed Coulomb only
        sign = np.tanh(qd_b / smoothing) if smoothing > 0 else np.sign(qd_b)
        tau_b = model.body_damping * qd_b + model.body_friction * sign
    else:
        tau_b = table.torques(qd_b, smoothing)
    return (tau_b @ G).reshape(shape + (model.nv,))


class LawTable:
    """Every law of a model's bodies as (nb,) coefficient arrays, one formula:

    ``tau = viscous v + (coulomb + excess exp(-(v / vs)^2)) sgn_s(v)
    + phi1 (sigma(phi2 (v + phi3)) - sigma(phi2 phi3))``

    with ``excess = static - coulomb`` (stribeck, 0 otherwise), ``vs`` the
    stribeck velocity and ``phi1`` nonzero only for the sigmoid;
    ``smoothing`` (nb,) the laws' own smoothing (0: the call's)."""

    def __init__(self, laws):
        p = [law.params for law in laws]
        self.viscous = np.array([x.get("viscous", 0.0) for x in p])
        self.coulomb = np.array([x.get("coulomb", 0.0) for x in p])
        self.excess = np.array([x["static"] - x["coulomb"] if law.law == "stribeck" else 0.0
                                for law, x in zip(laws, p)])
        self.inv_vs = np.array([1.0 / x["stribeck_velocity"] if law.law == "stribeck" else 0.0
                                for law, x in zip(laws, p)])
        self.smoothing = np.array([x.get("smoothing", 0.0) for x in p])
        sig = [law.law == "sigmoid" for law in laws]
        self.phi1 = np.array([x["phi1"] if s else 0.0 for s, x in zip(sig, p)])
        self.phi2 = np.array([x["phi2"] if s else 0.0 for s, x in zip(sig, p)])
        self.phi3 = np.array([x["phi3"] if s else 0.0 for s, x in zip(sig, p)])
        self.offset = self.phi1 * _sigma(self.phi2 * self.phi3)
        self.stribeck, self.sigmoid = bool(np.any(self.excess)), bool(np.any(self.phi1))
        self.smoothed = bool(np.any(self.smoothing))

    def sign(self, v, smoothing):
        """sgn_s(v), (..., nb)."""
        if not self.smoothed:
            return np.tanh(v / smoothing) if smoothing > 0 else np.sign(v)
        s = np.where(self.smoothing > 0, self.smoothing, smoothing)
        return np.where(s > 0, np.tanh(v / np.where(s > 0, s, 1.0)), np.sign(v))

    def torques(self, v, smoothing):
        """tau_f (..., nb) at body velocities v (..., nb)."""
        level = self.coulomb
        if self.stribeck:
            level = level + self.excess * np.exp(-np.square(v * self.inv_vs))
        tau = self.viscous * v + level * self.sign(v, smoothing)
        if self.sigmoid:
            tau = tau + (self.phi1 * _sigma(self.phi2 * (v + self.phi3)) - self.offset)
        return tau


def law_table(model):
    """The :class:`LawTable` of ``model``'s bodies, or None when every law is
    viscous or unsmoothed coulomb (the packed DAMPING and FRICTION columns
    then say it all). Built once per model."""
    table = _TABLES.get(id(model), _MISSING)
    if table is _MISSING:
        none = FrictionLaw("viscous", (("viscous", 0.0),))          # a floating or planar root's bodies
        laws = [model.actuators[name].friction if name in model.actuators else none for name in model.body_joint]
        plain = all(law.law == "viscous" or (law.law == "coulomb" and law.params["smoothing"] == 0.0)
                    for law in laws)
        table = _TABLES[id(model)] = None if plain else LawTable(laws)
        weakref.finalize(model, _TABLES.pop, id(model), None)
    return table
