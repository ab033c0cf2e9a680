"""One joint's friction law evaluated (docs/ACTUATORS.md): its torque at
joint velocities and its derivatives with respect to its parameters. The
one place the four laws' formulas are written; the model's laws
(:mod:`robot_dynamics.analysis.friction`), identification and retiming
call it.

- ``viscous``:  ``viscous v``
- ``coulomb``:  ``coulomb sgn_s(v) + viscous v``
- ``stribeck``: ``(coulomb + (static - coulomb) exp(-(v / stribeck_velocity)^2)) sgn_s(v) + viscous v``
  (Armstrong-Helouvry, Dupont, Canudas de Wit, Automatica 30(7), 1994)
- ``sigmoid``:  ``phi1 / (1 + exp(-phi2 (v + phi3))) - phi1 / (1 + exp(-phi2 phi3))``
  (Gaz et al., IEEE RA-L 2019)

``sgn_s(v) = tanh(v / s)`` with ``s`` the law's own ``smoothing`` when it
gives one > 0, else the ``smoothing`` of the call; ``sign(v)`` when both
are 0.
"""
import numpy as np

from ..errors import InputError


def sigma(x):
    """The logistic function 1 / (1 + exp(-x)), without overflow."""
    return 0.5 + 0.5 * np.tanh(0.5 * x)


def friction_law_torque(law, qd, *, smoothing=0.0):
    """The friction torque of one joint's law at velocities ``qd``.

    Args:
        law: a :class:`~robot_dynamics.model.actuators.FrictionLaw` (e.g.
            ``model.friction_laws[i]``).
        qd: joint velocities [rad/s or m/s], any shape.
        smoothing: the call's sign smoothing [rad/s] (module docstring).

    Returns:
        torques [N m or N], the shape of ``qd``, along the motion.
    """
    v = _velocities(qd)
    if smoothing < 0 or not np.isfinite(smoothing):
        raise InputError("smoothing must be a finite velocity >= 0 [rad/s], got %r" % (smoothing,))
    return _law(law, law.params, v, smoothing)[0]


def friction_law_gradient(law, qd, *, smoothing=0.0):
    """The torque of one joint's law and its derivatives with respect to the
    law's parameters (the Jacobian of a nonlinear least-squares fit).

    Args:
        law, qd, smoothing: as :func:`friction_law_torque`.

    Returns:
        (tau, J): ``tau`` the shape of ``qd`` [N m]; ``J`` of shape
        ``qd.shape + (len(law.parameters),)``, column k the derivative
        ``d tau / d law.parameters[k][1]`` (in the order of
        ``law.parameters``: viscous: (viscous,); coulomb: (coulomb, viscous,
        smoothing); stribeck: (static, coulomb, stribeck_velocity, viscous);
        sigmoid: (phi1, phi2, phi3)). The coulomb law's ``smoothing``
        column is 0 where its smoothing is 0 (``sign`` is not differentiable
        in it).
    """
    v = _velocities(qd)
    if smoothing < 0 or not np.isfinite(smoothing):
        raise InputError("smoothing must be a finite velocity >= 0 [rad/s], got %r" % (smoothing,))
    tau, columns = _law(law, law.params, v, smoothing)
    return tau, np.stack([columns[name] for name, _ in law.parameters], axis=-1)


def _law(law, p, v, smoothing):
    """(tau, {parameter: d tau / d parameter}) of one law at velocities v."""
    if law.law == "viscous":
        return p["viscous"] * v, {"viscous": v.copy()}
    if law.law == "sigmoid":
        return _sigmoid(p["phi1"], p["phi2"], p["phi3"], v)
    own = p.get("smoothing", 0.0)
    s = own if own > 0 else smoothing
    sgn = np.tanh(v / s) if s > 0 else np.sign(v)
    if law.law == "coulomb":
        c = p["coulomb"]
        d_s = c * (1.0 - sgn * sgn) * (-v / own ** 2) if own > 0 else np.zeros_like(v)
        return c * sgn + p["viscous"] * v, {"coulomb": sgn, "viscous": v.copy(), "smoothing": d_s}
    if law.law == "stribeck":
        fs, fc, vs, b = p["static"], p["coulomb"], p["stribeck_velocity"], p["viscous"]
        g = np.exp(-np.square(v / vs))
        J = {"static": g * sgn, "coulomb": (1.0 - g) * sgn, "viscous": v.copy(),
             "stribeck_velocity": (fs - fc) * g * 2.0 * v * v / vs ** 3 * sgn}
        return (fc + (fs - fc) * g) * sgn + b * v, J
    raise InputError("unknown friction law %r (known: viscous, coulomb, stribeck, sigmoid)" % (law.law,))


def _sigmoid(phi1, phi2, phi3, v):
    a, b = sigma(phi2 * (v + phi3)), sigma(phi2 * phi3)
    da, db = a * (1.0 - a), b * (1.0 - b)                 # sigma' = sigma (1 - sigma)
    return phi1 * (a - b), {"phi1": a - b, "phi2": phi1 * (da * (v + phi3) - db * phi3),
                            "phi3": phi1 * phi2 * (da - db)}


def _velocities(qd):
    try:
        v = np.array(qd, dtype=float)
    except (TypeError, ValueError):
        raise InputError("qd must be joint velocities (numbers) [rad/s or m/s], got %r" % (qd,)) from None
    if not np.all(np.isfinite(v)):
        raise InputError("qd must be finite [rad/s or m/s], got %r" % (qd,))
    return v
