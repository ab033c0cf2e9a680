"""Joint friction: each joint's friction law (docs/ACTUATORS.md).

A joint's law (``model.friction_laws``, :mod:`robot_dynamics.model.actuators`)
gives the friction torque ``tau_f(v)`` that opposes the joint velocity
``v``; the result is what a controller adds to compensate it, and a
simulator subtracts it from the applied torque. The laws (viscous, coulomb, stribeck, sigmoid) and their
smoothed sign ``sgn_s`` are written once, in :mod:`robot_dynamics.model.friction` (one formula over a
table of coefficients, compiled); this module builds a model's table and maps mimic joints.

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
from ..model import friction as law
from ..model.friction import friction_law_gradient, friction_law_torque  # noqa: F401 (rd.*)

_TABLES = {}        # id(model) -> its per-body law table or None (a Model never changes; dropped with it)
_PLAIN = {}         # id(model) -> the coefficients of its packed viscous and Coulomb columns
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
    C = _plain_coefficients(model) if table is None else table.C
    tau_b = law.torques(C, qd_b, smoothing)
    return (tau_b @ G).reshape(shape + (model.nv,))


class LawTable:
    """Every law of a model's bodies as the coefficient table ``C`` (ROWS, nb) of the one
    formula, :func:`robot_dynamics.model.friction.law_torque` (its module doc);
    ``stribeck``, ``sigmoid``: whether any law has a Stribeck peak or is a sigmoid."""

    def __init__(self, laws):
        self.C = law.coefficients(laws)
        self.stribeck, self.sigmoid = bool(np.any(self.C[law.EXCESS])), bool(np.any(self.C[law.PHI1]))

    def torques(self, v, smoothing):
        """tau_f (..., nb) at body velocities v (..., nb)."""
        return law.torques(self.C, v, smoothing)


def _plain_coefficients(model):
    """The table of a model whose laws are viscous or unsmoothed coulomb: the packed
    DAMPING and FRICTION columns (``model.body_damping``, ``model.body_friction``)."""
    C = _PLAIN.get(id(model))
    if C is None:
        C = _PLAIN[id(model)] = np.zeros((law.ROWS, model.nb))
        C[law.VISCOUS], C[law.COULOMB] = model.body_damping, model.body_friction
        weakref.finalize(model, _PLAIN.pop, id(model), None)
    return C


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
