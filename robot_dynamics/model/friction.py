"""Joint friction laws (docs/ACTUATORS.md), written once: one formula over a table of coefficients.

The four laws, with ``v`` the joint velocity and the torque along the motion:

- ``viscous``:  ``viscous v``
- ``coulomb``:  ``coulomb sgn_s(v) + viscous v``
- ``stribeck``: ``(coulomb + (static - coulomb) exp(-(v / stribeck_velocity)^2)) sgn_s(v) + viscous v``
  (Armstrong-Helouvry, Dupont, Canudas de Wit, Automatica 30(7), 1994)
- ``sigmoid``:  ``phi1 / (1 + exp(-phi2 (v + phi3))) - phi1 / (1 + exp(-phi2 phi3))``
  (Gaz et al., IEEE RA-L 2019)

``sgn_s(v) = tanh(v / s)`` with ``s`` the law's own ``smoothing`` when it
gives one > 0, else the ``smoothing`` of the call; ``sign(v)`` when both
are 0.

All four are one formula, :func:`law_torque`, over a column of the
coefficient table :func:`coefficients` (rows :data:`VISCOUS` ..
:data:`OFFSET`, one column per joint)::

    tau = viscous v + (coulomb + excess exp(-(v inv_vs)^2)) sgn_s(v)
          + phi1 sigma(phi2 (v + phi3)) - offset

with ``excess = static - coulomb`` and ``inv_vs = 1 / stribeck_velocity``
(stribeck; 0 otherwise), ``phi1 .. phi3`` (sigmoid; 0 otherwise) and
``offset = phi1 sigma(phi2 phi3)``. Every evaluator of the package uses it:
:func:`friction_law_torque` (one law; identification, retiming),
``rd.friction_torques`` (analysis/friction.py: every joint of a model), the
simulator's compiled step and stick-slip switch (simulation/stiction.py,
fused.py: the table with three rows of its own) and the C generator
(codegen/friction.py prints the same terms from the same table; its tests
compare the compiled C with this function). :func:`law_slope` is its
derivative in ``v``; :func:`friction_law_gradient` its derivatives in the
law's parameters (a nonlinear least-squares fit).
"""
import numba as nb
import numpy as np

from ..errors import InputError

jit = nb.njit(cache=True, nogil=True, error_model="numpy")

#: Rows of the coefficient table (:func:`coefficients`), one column per joint.
(VISCOUS, COULOMB, EXCESS, INV_VS, SMOOTH, PHI1, PHI2, PHI3, OFFSET) = range(9)
ROWS = 9


def sigma(x):
    """The logistic function 1 / (1 + exp(-x)), without overflow."""
    return 0.5 + 0.5 * np.tanh(0.5 * x)


def coefficients(laws):
    """The (ROWS, n) coefficient table of :func:`law_torque` of ``n`` laws
    (:class:`~robot_dynamics.model.actuators.FrictionLaw`), column k the k-th law's.

    Raises:
        InputError: a law other than viscous, coulomb, stribeck or sigmoid.
    """
    C = np.zeros((ROWS, len(laws)))
    for k, law in enumerate(laws):
        p = law.params
        if law.law not in ("viscous", "coulomb", "stribeck", "sigmoid"):
            raise InputError("unknown friction law %r (known: viscous, coulomb, stribeck, sigmoid)" % (law.law,))
        C[VISCOUS, k], C[COULOMB, k], C[SMOOTH, k] = p.get("viscous", 0.0), p.get("coulomb", 0.0), p.get("smoothing", 0.0)
        if law.law == "stribeck":
            C[EXCESS, k], C[INV_VS, k] = p["static"] - p["coulomb"], 1.0 / p["stribeck_velocity"]
        if law.law == "sigmoid":
            C[PHI1, k], C[PHI2, k], C[PHI3, k] = p["phi1"], p["phi2"], p["phi3"]
    C[OFFSET] = C[PHI1] * sigma(C[PHI2] * C[PHI3])
    return C


@jit
def law_torque(C, i, v, smoothing):
    """tau_f [N m | N] of column i's law at velocity v [rad/s | m/s], along the motion
    (the module's formula); ``smoothing`` the call's [rad/s | m/s]. ``C`` may have rows
    after :data:`OFFSET` (the simulator's stick band)."""
    s = C[SMOOTH, i] if C[SMOOTH, i] > 0.0 else smoothing
    sgn = np.tanh(v / s) if s > 0.0 else np.sign(v)
    level = C[COULOMB, i]
    if C[EXCESS, i] != 0.0:
        x = v * C[INV_VS, i]
        level += C[EXCESS, i] * np.exp(-x * x)
    tau = C[VISCOUS, i] * v + level * sgn
    if C[PHI1, i] != 0.0:
        tau += C[PHI1, i] * (0.5 + 0.5 * np.tanh(0.5 * C[PHI2, i] * (v + C[PHI3, i]))) - C[OFFSET, i]
    return tau


@jit
def law_slope(C, i, v, smoothing):
    """d tau_f / dv of column i's law at v (0 for the jump of an unsmoothed sign)."""
    s = C[SMOOTH, i] if C[SMOOTH, i] > 0.0 else smoothing
    sgn = np.tanh(v / s) if s > 0.0 else np.sign(v)
    dsgn = (1.0 - sgn * sgn) / s if s > 0.0 else 0.0
    level, dlevel = C[COULOMB, i], 0.0
    if C[EXCESS, i] != 0.0:
        x = v * C[INV_VS, i]
        g = C[EXCESS, i] * np.exp(-x * x)
        level += g
        dlevel = -2.0 * x * C[INV_VS, i] * g
    slope = C[VISCOUS, i] + level * dsgn + dlevel * sgn
    if C[PHI1, i] != 0.0:
        a = 0.5 + 0.5 * np.tanh(0.5 * C[PHI2, i] * (v + C[PHI3, i]))
        slope += C[PHI1, i] * C[PHI2, i] * a * (1.0 - a)
    return slope


@jit
def law_torques(C, V, smoothing, tau):
    """tau[b, i] = law_torque(C, i, V[b, i], smoothing) for a (B, n) block of velocities."""
    for b in range(V.shape[0]):
        for i in range(V.shape[1]):
            tau[b, i] = law_torque(C, i, V[b, i], smoothing)


def torques(C, v, smoothing):
    """(..., n) the laws of table ``C`` (ROWS, n) at velocities ``v`` (..., n) [rad/s | m/s]."""
    rows = int(np.prod(np.shape(v)[:-1], dtype=np.int64))
    V = np.ascontiguousarray(v, dtype=np.float64).reshape(rows, C.shape[1])
    tau = np.empty_like(V)
    law_torques(np.ascontiguousarray(C, dtype=np.float64), V, float(smoothing), tau)
    return tau.reshape(np.shape(v))


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
    _check_smoothing(smoothing)
    return torques(coefficients([law]), v[..., None], smoothing)[..., 0]


def friction_law_gradient(law, qd, *, smoothing=0.0):
    """The torque of one joint's law and its derivatives with respect to the
    law's parameters (the Jacobian of a nonlinear least-squares fit).

    Args:
        law, qd, smoothing: as :func:`friction_law_torque`.

    Returns:
        (tau, J): ``tau`` the shape of ``qd`` [N m] (:func:`friction_law_torque`);
        ``J`` of shape ``qd.shape + (len(law.parameters),)``, column k the derivative
        ``d tau / d law.parameters[k][1]`` (in the order of
        ``law.parameters``: viscous: (viscous,); coulomb: (coulomb, viscous,
        smoothing); stribeck: (static, coulomb, stribeck_velocity, viscous);
        sigmoid: (phi1, phi2, phi3)). The coulomb law's ``smoothing``
        column is 0 where its smoothing is 0 (``sign`` is not differentiable
        in it).
    """
    tau = friction_law_torque(law, qd, smoothing=smoothing)
    columns = _derivatives(law, law.params, _velocities(qd), smoothing)
    return tau, np.stack([columns[name] for name, _ in law.parameters], axis=-1)


def _derivatives(law, p, v, smoothing):
    """{parameter: d tau / d parameter} of one law at velocities v."""
    if law.law == "viscous":
        return {"viscous": v.copy()}
    if law.law == "sigmoid":
        phi1, phi2, phi3 = p["phi1"], p["phi2"], p["phi3"]
        a, b = sigma(phi2 * (v + phi3)), sigma(phi2 * phi3)
        da, db = a * (1.0 - a), b * (1.0 - b)                 # sigma' = sigma (1 - sigma)
        return {"phi1": a - b, "phi2": phi1 * (da * (v + phi3) - db * phi3), "phi3": phi1 * phi2 * (da - db)}
    own = p.get("smoothing", 0.0)
    s = own if own > 0 else smoothing
    sgn = np.tanh(v / s) if s > 0 else np.sign(v)
    if law.law == "coulomb":
        c = p["coulomb"]
        d_s = c * (1.0 - sgn * sgn) * (-v / own ** 2) if own > 0 else np.zeros_like(v)
        return {"coulomb": sgn, "viscous": v.copy(), "smoothing": d_s}
    if law.law == "stribeck":
        fs, fc, vs = p["static"], p["coulomb"], p["stribeck_velocity"]
        g = np.exp(-np.square(v / vs))
        return {"static": g * sgn, "coulomb": (1.0 - g) * sgn, "viscous": v.copy(),
                "stribeck_velocity": (fs - fc) * g * 2.0 * v * v / vs ** 3 * sgn}
    raise InputError("unknown friction law %r (known: viscous, coulomb, stribeck, sigmoid)" % (law.law,))


def _check_smoothing(smoothing):
    if smoothing < 0 or not np.isfinite(smoothing):
        raise InputError("smoothing must be a finite velocity >= 0 [rad/s], got %r" % (smoothing,))


def _velocities(qd):
    try:
        v = np.array(qd, dtype=float)
    except (TypeError, ValueError):
        raise InputError("qd must be joint velocities (numbers) [rad/s or m/s], got %r" % (qd,)) from None
    if not np.all(np.isfinite(v)):
        raise InputError("qd must be finite [rad/s or m/s], got %r" % (qd,))
    return v
