"""Base parameters: the combinations of inertial (armature and friction) parameters
that the joint torques determine.

Many columns of the regressor are zero or combinations of others for every
motion (a body's mass on its joint axis moves with the parent body, the
inertia of the first body about anything but its axis never shows). The
base parameters ``beta = K pi`` are the independent combinations; with the
columns of the regressor they keep, ``Y pi == Y[..., independent] beta``
for every state (Gautier, *Numerical calculation of the base inertial
parameters of robots*, J. Robotic Systems 1991; Khalil and Dombre,
*Modeling, Identification and Control of Robots*, ch. 9, the base
inertial parameters).

Here they are found numerically: the regressor is stacked over random
states within the joint limits, its columns are scaled to unit norm, and
the rank is the number of diagonal entries of the column-pivoted QR
factor above ``tolerance`` times the largest. The kept columns are chosen
in the order of the parameter vector (a column is kept when it is not a
combination of the columns kept before it), so a child body's parameters
that move with its parent regroup into the parent's: for a revolute joint
about z, ``m``, ``mc_z`` and ``I_yy`` of the body are dropped and appear
in ``I_xx - I_yy`` and in the parent's combinations, as in Khalil and
Dombre's regrouping rules (checked by hand for a planar 2R arm in
test/test_identification.py).

With ``armature=True`` each joint's armature (docs/ACTUATORS.md) is a
parameter too, after the inertial ones: its column is ``qdd_j`` in joint
j's own row. It regroups like a body parameter: the first joint's armature
always joins ``I_zz`` of the first body about its axis (the same column),
and so does that of a joint whose axis is perpendicular to its parent's
(the Panda's joint 2), as Khalil and Dombre's rules for the rotor inertia
``Ia_j`` say.
"""
from dataclasses import dataclass, field
from typing import Tuple

import numpy as np

from ..algorithms.regressor import (friction_parameter_names, friction_regressor, parameter_names,
                                    regressor)
from ..errors import InputError
from ..algorithms.floating import require_fixed


@dataclass(frozen=True)
class BaseParameters:
    """The base parameters of a model: ``beta = K @ pi``, ``Y pi == Y_base beta``.

    Fields:
        count: number of base parameters (the rank of the regressor).
        independent: (count,) int, index in the full parameter vector of the
            parameter each base parameter is built on; the base regressor is
            the full one's columns ``independent``.
        K: (count, p) the map from the full parameters ``pi`` (p = 10 nb, plus
            nq armatures when ``armature``, plus 3 nq friction parameters when
            ``friction``, in that order) to the base ones.
        names: (p,) names of the full parameters, ``"I_zz(link3)"``,
            ``"armature(joint2)"``, ``"fv(joint2)"``
            (:func:`~robot_dynamics.parameter_names`, :func:`armature_names`,
            :func:`~robot_dynamics.friction_parameter_names`).
        descriptions: (count,) each base parameter as text, e.g.
            ``"I_zz(link3) + 0.0625 m(link4) + 0.25 mc_z(link4)"``.
        friction: True when the friction parameters are part of ``pi``.
        armature: True when the armatures are part of ``pi``.
        pivots: (p,) ``|R_kk|`` of the column-pivoted QR of the scaled stacked
            regressor, largest first (how far from the rank decision each
            column was).
        tolerance: relative rank threshold used on ``pivots``.
        nq, nb: sizes of the model they were computed for.
    """
    count: int
    independent: np.ndarray
    K: np.ndarray
    names: Tuple[str, ...]
    descriptions: Tuple[str, ...]
    friction: bool
    pivots: np.ndarray = field(repr=False)
    tolerance: float
    nq: int
    nb: int
    armature: bool = False

    def regressor(self, model, q, qd, qdd):
        """Base regressor ``(..., nq, count)``: the full regressor's columns
        ``independent`` (armature and friction columns included when asked)."""
        self.check_model(model)
        return full_regressor(model, q, qd, qdd, friction=self.friction,
                              armature=self.armature)[..., self.independent]

    def values(self, pi):
        """``K @ pi``: the base parameters of full parameters ``pi`` (p,) or (..., p)."""
        pi = np.asarray(pi, dtype=float)
        if pi.shape[-1:] != (self.K.shape[1],):
            raise InputError("parameters have shape %s, expected (..., %d)" % (pi.shape, self.K.shape[1]))
        return pi @ self.K.T

    def check_model(self, model):
        """InputError unless ``model`` has the sizes these base parameters were computed for."""
        if model.nq != self.nq or model.nb != self.nb:
            raise InputError("base parameters were computed for a model with nq=%d, nb=%d; this model has "
                             "nq=%d, nb=%d" % (self.nq, self.nb, model.nq, model.nb))

    def __str__(self):
        return "%d base parameters:\n%s" % (self.count, "\n".join(
            "  beta[%d] = %s" % (k, d) for k, d in enumerate(self.descriptions)))


def full_regressor(model, q, qd, qdd, *, friction=False, armature=False):
    """``[regressor | armature_regressor | friction_regressor]``: (..., nq, 10 nb [+ nq] [+ 3 nq])."""
    Y = regressor(model, q, qd, qdd)
    parts = [Y]
    if armature:
        parts.append(np.broadcast_to(armature_regressor(model, qdd), Y.shape[:-1] + (model.nq,)))
    if friction:
        parts.append(np.broadcast_to(friction_regressor(model, qd), Y.shape[:-1] + (3 * model.nq,)))
    return Y if len(parts) == 1 else np.concatenate(parts, axis=-1)


def armature_regressor(model, qdd):
    """(..., nq, nq): ``armature_regressor(model, qdd) @ model.armature == model.armature * qdd``:
    row j has ``qdd_j`` in column j (the armature acts on its joint's own coordinate)."""
    qdd = np.asarray(qdd, dtype=float)
    if qdd.shape[-1:] != (model.nq,):
        raise InputError("qdd has shape %s, expected (..., %d)" % (qdd.shape, model.nq))
    return qdd[..., None] * np.eye(model.nq)


def armature_names(model):
    """``(nq,)`` names ``"armature(joint1)", ...``."""
    return tuple("armature(%s)" % name for name in model.joint_names)


def full_parameter_names(model, friction=False, armature=False):
    return (parameter_names(model) + (armature_names(model) if armature else ())
            + (friction_parameter_names(model) if friction else ()))


def random_states(model, n, rng):
    """``n`` random states (q within the position limits, +-pi where there are
    none; qd and qdd uniform in +-2 [/s, /s^2]), each (n, nq)."""
    lo = np.where(np.isfinite(model.lower_limit), model.lower_limit, -np.pi)
    hi = np.where(np.isfinite(model.upper_limit), model.upper_limit, np.pi)
    q = rng.uniform(lo, hi, (n, model.nq))
    qd = rng.uniform(-2.0, 2.0, (n, model.nq))
    qdd = rng.uniform(-2.0, 2.0, (n, model.nq))
    return q, qd, qdd


def base_parameters(model, *, friction=False, armature=False, samples=None, seed=0, tolerance=1e-8):
    """The base parameters of ``model`` (numerical; see the module text).

    Args:
        model: :class:`~robot_dynamics.Model`; its gravity matters (a
            horizontal planar arm has fewer base parameters than a vertical one).
        friction: include the 3 nq friction parameters of
            :func:`~robot_dynamics.friction_regressor` after the 10 nb
            inertial ones (after the armatures).
        armature: include one armature per joint (:func:`armature_regressor`)
            after the inertial parameters.
        samples: number of random states (default ``max(100, 4 p / nq)``
            for p parameters).
        seed: seed of the random states.
        tolerance: relative threshold on the pivoted QR diagonal of the
            column-scaled regressor (the rank decision); combination
            coefficients below ``tolerance`` times the largest in their row
            are set to zero.

    Returns:
        :class:`BaseParameters`.
    """
    require_fixed(model, "base_parameters")
    p = 10 * model.nb + (model.nq if armature else 0) + (3 * model.nq if friction else 0)
    if model.nq == 0:
        raise InputError("the model has no moving joint: no parameter can be identified")
    n = int(samples) if samples is not None else max(100, -(-4 * p // model.nq))
    q, qd, qdd = random_states(model, n, np.random.default_rng(seed))
    W = full_regressor(model, q, qd, qdd, friction=friction, armature=armature).reshape(n * model.nq, p)
    # Unit-norm columns (the rank decision then does not depend on units);
    # a column that is zero up to rounding (norm below tolerance times the
    # largest) stays zero instead of being blown up to unit-norm noise.
    norms = np.linalg.norm(W, axis=0)
    zero = norms <= tolerance * norms.max(initial=0.0)
    scale = np.where(zero, 1.0, norms)
    Ws = np.where(zero, 0.0, W / scale)
    import scipy.linalg                    # here: scipy costs 0.2 s of import robot_dynamics
    _, R, piv = scipy.linalg.qr(Ws, mode="economic", pivoting=True)
    pivots = np.abs(np.diag(R))
    pivots = np.concatenate([pivots, np.zeros(p - pivots.size)])
    rank = int(np.sum(pivots > tolerance * pivots[0])) if pivots[0] > 0 else 0
    independent = _first_independent(Ws, rank, tolerance)
    if independent.size != rank:                     # borderline column: keep the pivoted choice
        independent = np.sort(piv[:rank])
    dependent = np.setdiff1d(np.arange(p), independent)
    # Y_d = Y_b C (least squares on the scaled columns, then unscaled): beta = pi_b + C pi_d
    Cs = np.linalg.lstsq(Ws[:, independent], Ws[:, dependent], rcond=None)[0]
    C = Cs * scale[dependent][None, :] / scale[independent][:, None]
    C[np.abs(C) < tolerance * np.maximum(1.0, np.abs(C).max(axis=1, initial=0.0))[:, None]] = 0.0
    K = np.zeros((rank, p))
    K[np.arange(rank), independent] = 1.0
    K[:, dependent] = C
    names = full_parameter_names(model, friction, armature)
    return BaseParameters(count=rank, independent=independent, K=K, names=names,
                          descriptions=tuple(describe(K[k], names) for k in range(rank)),
                          friction=bool(friction), pivots=pivots, tolerance=float(tolerance),
                          nq=model.nq, nb=model.nb, armature=bool(armature))


def _first_independent(Ws, rank, tolerance):
    """Indices of the columns of Ws that are not combinations of the columns
    before them (Gram-Schmidt with re-orthogonalisation), at most rank + 1."""
    basis = np.zeros((Ws.shape[0], 0))
    kept = []
    for j in range(Ws.shape[1]):
        w = Ws[:, j]
        nw = np.linalg.norm(w)
        if nw == 0.0:
            continue
        r = w - basis @ (basis.T @ w)
        r -= basis @ (basis.T @ r)
        nr = np.linalg.norm(r)
        if nr > tolerance * nw:
            kept.append(j)
            basis = np.column_stack([basis, r / nr])
            if len(kept) > rank:
                break
    return np.array(kept, dtype=np.int64)


def describe(row, names):
    """One base parameter as text: ``"I_xx(link2) - I_yy(link2) + 0.0625 m(link3)"``."""
    terms = []
    for k in np.flatnonzero(row):
        c = row[k]
        mag = "" if abs(abs(c) - 1.0) < 1e-12 else "%.6g " % abs(c)
        sign = "-" if c < 0 else "+"
        terms.append((sign, mag + names[k]))
    if not terms:
        return "0"
    first = ("-" if terms[0][0] == "-" else "") + terms[0][1]
    return " ".join([first] + ["%s %s" % t for t in terms[1:]])
