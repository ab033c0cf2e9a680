"""The friction laws of docs/ACTUATORS.md for identification: torque, parameter
derivatives, and the split of each law into linear and nonlinear parameters.

The formulas (written once, in :mod:`robot_dynamics.model.friction`), with
``v`` the joint velocity [rad/s or m/s] and ``sigma(x) = 1 / (1 + e^-x)``:

- viscous:  ``viscous v``
- coulomb:  ``coulomb tanh(v / smoothing) + viscous v`` (``sign(v)`` for smoothing 0)
- stribeck: ``(coulomb + (static - coulomb) e) sign(v) + viscous v``, ``e = exp(-(v / stribeck_velocity)^2)``
- sigmoid:  ``phi1 (sigma(phi2 (v + phi3)) - sigma(phi2 phi3))`` (Gaz et al., IEEE RA-L 2019)

Stribeck and sigmoid are linear in some parameters once the others are fixed
(:data:`LINEAR`, :data:`NONLINEAR`): stribeck is ``static e sign(v) +
coulomb (1 - e) sign(v) + viscous v`` for a given ``stribeck_velocity``,
sigmoid ``phi1`` times a column for given ``phi2``, ``phi3``. That is what
the variable projection of :mod:`.nonlinear` uses.
"""
import numpy as np

from ..errors import InputError
from ..model.actuators import LAWS, FrictionLaw
from ..model.friction import friction_law_gradient, friction_law_torque, sigma as sigmoid

NONLINEAR = {"stribeck": ("stribeck_velocity",), "sigmoid": ("phi2", "phi3")}
LINEAR = {"stribeck": ("static", "coulomb", "viscous"), "sigmoid": ("phi1",)}
COLUMNS = {"viscous": ("fv",), "coulomb": ("fv", "fc"), "stribeck": (), "sigmoid": ()}   # linear-regressor columns kept


def law_parameters(law):
    """The parameter names of ``law`` in :data:`LAWS` order (required, then optional)."""
    if law not in LAWS:
        raise InputError("unknown friction law %r (known: %s)" % (law, ", ".join(LAWS)))
    required, optional = LAWS[law]
    return required + tuple(optional)


def make_law(law, values):
    """A :class:`FrictionLaw` from ``{name: value}`` (optional parameters at their defaults)."""
    names = law_parameters(law)
    defaults = LAWS[law][1]
    return FrictionLaw(law, tuple((k, float(values.get(k, defaults.get(k, np.nan)))) for k in names))


def torque(law, v):
    """Friction torque (..., ) [N m or N] of a :class:`FrictionLaw` at velocities v (...,)
    (:func:`robot_dynamics.friction_law_torque`)."""
    return friction_law_torque(law, v)


def gradient(law, v):
    """(..., k) derivatives of :func:`torque` with respect to the law's k parameters, in
    ``law.parameters`` order (:func:`robot_dynamics.friction_law_gradient`). The coulomb law's
    smoothing derivative is 0 where smoothing is 0 (the sign function does not move)."""
    return friction_law_gradient(law, v)[1]


def linear_columns(law, nonlinear, v):
    """(n, len(LINEAR[law])) columns of a stribeck or sigmoid law's linear
    parameters at velocities v (n,), for its nonlinear ones ``nonlinear``
    (NONLINEAR[law] order): ``torque == columns @ linear``."""
    v = np.asarray(v, dtype=float)
    if law == "stribeck":
        sg, e = np.sign(v), np.exp(-(v / nonlinear[0]) ** 2)
        return np.column_stack([e * sg, (1.0 - e) * sg, v])
    if law == "sigmoid":
        phi2, phi3 = nonlinear
        return (sigmoid(phi2 * (v + phi3)) - sigmoid(phi2 * phi3))[:, None]
    raise InputError("law %r has no nonlinear parameters (those that do: %s)" % (law, ", ".join(NONLINEAR)))


def relative_torque_error(fit, true, v):
    """``max |torque(fit, v) - torque(true, v)| / max |torque(true, v)|`` over the velocities v."""
    t_true = torque(true, v)
    return float(np.max(np.abs(torque(fit, v) - t_true)) / np.max(np.abs(t_true)))
