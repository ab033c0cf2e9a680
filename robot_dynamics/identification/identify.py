"""Identification of the base inertial (and friction) parameters from measured motion.

With the base regressor stacked over N samples, ``tau = W beta + e``
(Khalil and Dombre, *Modeling, Identification and Control of Robots*,
ch. 12, identification of the dynamic parameters; Siciliano and Khatib
(eds.), *Springer Handbook of Robotics*, ch. 6, *Model identification*):

- ``"ols"``: ordinary least squares; covariance ``s^2 (W^T W)^-1`` with
  ``s^2 = |e|^2 / (N nq - p)``.
- ``"wls"``: weighted least squares with one weight per joint, the inverse
  of that joint's residual variance from a first OLS pass (two steps;
  Gautier and Poignet, *Extended Kalman filtering and weighted least
  squares dynamic identification of robot*, Control Eng. Practice 2001);
  covariance ``(W^T S^-1 W)^-1``.
- ``"consistent"``: every body physically consistent (positive mass,
  positive-definite inertia satisfying the triangle inequalities) through
  the log-Cholesky parametrisation of :mod:`.inertials` (Rucker and
  Wensing, *Smooth parameterization of rigid-body inertia*, IEEE RA-L
  2022), the same weighted residual minimised over the 10 nb parameters
  with :func:`scipy.optimize.least_squares` (Levenberg-Marquardt) from
  the nominal model, plus a small pull towards the nominal model's
  log-Cholesky coordinates that only settles what the data cannot
  (``regularization``); viscous and Coulomb friction are kept >= 0. The
  result carries the corrected model.

With ``armature=True`` each joint's armature is a parameter (a column
``qdd_j``; :mod:`.base`), and ``friction`` may name a law per joint
(docs/ACTUATORS.md): viscous and Coulomb as linear columns, Stribeck and
sigmoid by variable projection (:mod:`.nonlinear`); with ``"consistent"``
the nonlinear parameters are those of the variable projection (bodies not
constrained), then the consistent fit runs with the laws' linear columns at
those values (one alternation), armatures and the laws' linear parameters
>= 0.
"""
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .. import checks
from ..algorithms.regressor import inertial_parameters
from ..errors import InputError
from .base import BaseParameters, base_parameters, full_regressor
from .friction_laws import NONLINEAR, make_law, torque
from .nonlinear import (dropped_columns, kept_base_columns, law_columns, nonlinear_joints, resolve_laws, split,
                        variable_projection)
from .inertials import (body_inertials, consistency_problem, log_cholesky, log_cholesky_jacobian,
                        model_urdf, model_with_parameters, parameters_from_log_cholesky)
from ..algorithms.floating import require_fixed

METHODS = ("ols", "wls", "consistent")


@dataclass(frozen=True)
class IdentificationResult:
    """What :func:`identify` found.

    Fields:
        base: the :class:`~.base.BaseParameters` (descriptions, K, names).
        parameters: (count,) identified base parameters beta (friction ones
            last when ``base.friction``) [SI units of each combination].
        standard_errors: (count,) their standard deviations (for
            ``"consistent"``, those of the weighted least-squares estimate:
            the constraints are not accounted for).
        covariance: (count, count) covariance of ``parameters``.
        residual_rms: (nq,) root mean square of measured minus predicted
            torque per joint [N m or N] on the identification data.
        condition: 2-norm condition number of the stacked base regressor W
            (N nq, count), unweighted: how well the data excite the parameters.
        method: "ols", "wls" or "consistent".
        samples: N.
        nominal: the model the regressor came from.
        model: ``"consistent"`` only: the corrected :class:`~robot_dynamics.Model`
            (kinematics of ``nominal``, the identified inertials; viscous and
            Coulomb friction in its joints' ``damping`` and ``friction`` when
            identified, the armatures and the friction laws in
            ``model.armature``, ``model.friction_laws`` when identified, through
            :meth:`~robot_dynamics.Model.with_actuators`); None otherwise.
        inertial: ``"consistent"`` only: (10 nb,) the full body parameters
            of ``model`` (:func:`~robot_dynamics.inertial_parameters` order).
        friction: (nq, 3) identified (viscous, Coulomb, offset) per joint
            (``"consistent"``: the fitted ones; otherwise the base parameters
            that are friction parameters on their own, NaN for one that is
            not, e.g. the offset of a joint whose gravity torque is
            constant; viscous and Coulomb NaN on a stribeck or sigmoid
            joint), or None.
        armature: (nq,) identified armature per joint [kg m^2 or kg]
            (``"consistent"``: the fitted ones; otherwise NaN for one combined
            with a body's inertia in the base parameters), or None.
        friction_laws: one :class:`~robot_dynamics.model.actuators.FrictionLaw`
            per joint with the identified parameters (NaN where not
            identifiable on its own), or None.
    """
    base: BaseParameters
    parameters: np.ndarray
    standard_errors: np.ndarray
    covariance: np.ndarray = field(repr=False)
    residual_rms: np.ndarray
    condition: float
    method: str
    samples: int
    nominal: object = field(repr=False)
    model: Optional[object] = field(default=None, repr=False)
    inertial: Optional[np.ndarray] = field(default=None, repr=False)
    friction: Optional[np.ndarray] = None
    armature: Optional[np.ndarray] = None
    friction_laws: Optional[tuple] = None

    def predict(self, q, qd, qdd):
        """Torques of the identified model, armature and friction included: (..., nq) [N m or N]."""
        tau = self.base.regressor(self.nominal, q, qd, qdd) @ self.parameters
        for j, law in enumerate(self.friction_laws or ()):
            if law.law in NONLINEAR:
                tau[..., j] += torque(law, np.asarray(qd, dtype=float)[..., j])
        return tau

    def to_yaml(self, path=None):
        """The corrected inertials as YAML text (written to ``path`` if given).

        One entry per body link: ``mass`` [kg], ``com`` [m] and ``inertia``
        about the centre of mass [kg m^2] (``ixx ixy ixz iyy iyz izz``, as a
        URDF ``<inertial>``), in the link's frame, everything fixed to the
        body lumped on that link; then per joint the friction law and its
        parameters, the offset and the armature, when identified.
        ``"consistent"`` results only."""
        if self.inertial is None:
            raise InputError("only a method='consistent' result has full inertials; this one is %r "
                             "(base parameters only)" % self.method)
        lines = ["# robot_dynamics identified inertials (method %s, %d samples)" % (self.method, self.samples),
                 "robot: %s" % (self.nominal.name or "robot"), "links:"]
        for link, m, c, I in body_inertials(self.nominal, self.inertial):
            lines += ["  %s:" % link, "    mass: %.10g" % m, "    com: [%.10g, %.10g, %.10g]" % tuple(c),
                      "    inertia: {ixx: %.10g, ixy: %.10g, ixz: %.10g, iyy: %.10g, iyz: %.10g, izz: %.10g}"
                      % (I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2])]
        lines += self.joint_lines()
        text = "\n".join(lines) + "\n"
        if path is not None:
            with open(path, "w") as f:
                f.write(text)
        return text

    def joint_lines(self):
        """YAML lines ``joints:`` then per joint ``{law: coulomb, coulomb: .., viscous: .., smoothing: 0,
        offset: .., armature: ..}`` (the law's parameters, the offset, the armature; when identified)."""
        if self.friction is None and self.armature is None:
            return []
        lines = ["joints:"]
        for j, name in enumerate(self.nominal.joint_names):
            items = []
            if self.friction_laws is not None:
                law = self.friction_laws[j]
                items += ["law: %s" % law.law] + ["%s: %s" % (k, _number(v)) for k, v in law.parameters]
                items.append("offset: %s" % _number(self.friction[j, 2]))
            if self.armature is not None:
                items.append("armature: %s" % _number(self.armature[j]))
            lines.append("  %s: {%s}" % (name, ", ".join(items)))
        return lines

    def to_urdf(self, path=None):
        """URDF text of the corrected model (``"consistent"`` only); see
        :func:`~.inertials.model_urdf`. Written to ``path`` if given."""
        if self.model is None:
            raise InputError("only a method='consistent' result has a corrected model; this one is %r" % self.method)
        text = model_urdf(self.model)
        if path is not None:
            with open(path, "w") as f:
                f.write(text)
        return text


def _number(x):
    """A YAML float: ``%.10g``, ``.nan`` for NaN."""
    return ".nan" if np.isnan(x) else "%.10g" % x


def identify(model, q, qd, qdd, tau, *, friction=False, armature=False, method="ols", base=None,
             regularization=1e-2):
    """Identify the base parameters of ``model`` from measured motion and torques.

    Args:
        model: the nominal :class:`~robot_dynamics.Model` (its kinematics and
            gravity are taken as right; for ``"consistent"`` its inertials are
            the starting point).
        q, qd, qdd, tau: (N, nq) measured joint positions [rad or m],
            velocities, accelerations and torques [N m or N], in
            ``model.joint_names`` order; tau is what the motors apply.
        friction: also identify friction per joint: True for viscous,
            Coulomb and offset (:func:`~robot_dynamics.friction_regressor`),
            or a law of docs/ACTUATORS.md (``"viscous"``, ``"coulomb"``,
            ``"stribeck"``, ``"sigmoid"``) for every joint, or ``{joint:
            law}`` (the others ``"coulomb"``); an offset per joint always.
            Stribeck and sigmoid are fitted by variable projection
            (:mod:`.nonlinear`).
        armature: also identify each joint's armature (a column ``qdd_j``;
            :mod:`.base` says which regroup with a body's inertia).
        method: "ols", "wls" or "consistent" (see the module text).
        base: optional :class:`~.base.BaseParameters` of the model (default:
            :func:`~.base.base_parameters` with ``friction`` and ``armature``).
        regularization: ``"consistent"`` only: weight of ``|theta -
            theta_nominal|`` (log-Cholesky coordinates: logarithms and
            metres) next to residuals scaled to unit noise.

    Returns:
        :class:`IdentificationResult`.
    """
    require_fixed(model, "identify")
    if method not in METHODS:
        raise InputError("method must be one of %s, got %r" % (", ".join(METHODS), method))
    laws = resolve_laws(model, friction)
    fric, armature = laws is not None, bool(armature)
    shape, (Q, QD, QDD, TAU) = checks.batch(model, q=q, qd=qd, qdd=qdd, tau=tau)
    checks.check_finite(q=Q, qd=QD, qdd=QDD, tau=TAU)
    if base is None:
        base = base_parameters(model, friction=fric, armature=armature)
    elif base.friction != fric or base.armature != armature:
        raise InputError("base was computed with friction=%s, armature=%s; identify was called with friction=%s, "
                         "armature=%s" % (base.friction, base.armature, fric, armature))
    base.check_model(model)
    N, nq, p = Q.shape[0], model.nq, base.count
    if N * nq <= p:
        raise InputError("%d samples of %d joints give %d equations for %d base parameters: need more samples"
                         % (N, nq, N * nq, p))
    Yfull = full_regressor(model, Q, QD, QDD, friction=fric, armature=armature)      # (N, nq, P)
    W = Yfull[..., base.independent]
    A, b = W.reshape(N * nq, p), TAU.reshape(N * nq)
    sv = np.linalg.svd(A, compute_uv=False)
    condition = float(sv[0] / sv[-1]) if sv[-1] > 0 else np.inf
    if not np.isfinite(condition) or condition > 1e12:
        raise InputError("the data do not excite the %d base parameters (regressor condition number %.3g): "
                         "use a richer trajectory" % (p, condition))

    beta, cov = _least_squares(A, b, np.ones(nq), N)
    sigma = np.ones(nq)
    if method != "ols":
        e = (b - A @ beta).reshape(N, nq)
        sigma = np.sqrt(np.sum(e ** 2, axis=0) / max(N - p / nq, 1.0))
        sigma = np.maximum(sigma, 1e-12 * max(sigma.max(), 1e-300))
        beta, cov = _least_squares(A, b, sigma, N, known_variance=True)
    layout = _Layout(model, base, laws, armature)
    z, y, C = np.zeros(0), np.zeros(0), np.zeros((N * nq, 0))
    if layout.changes_columns:                 # a law other than coulomb: refit on its columns
        keep = layout.keep
        if layout.nonlinear:
            z = variable_projection(A[:, keep], b, np.tile(1.0 / sigma, N), QD, laws)
            C = law_columns(laws, z, QD)
        x, cx = _least_squares(np.hstack([A[:, keep], C]), b, sigma, N, known_variance=method != "ols")
        beta, y = np.zeros(p), x[keep.sum():]
        beta[keep] = x[:keep.sum()]
        cov = np.full((p, p), np.nan)
        cov[np.ix_(keep, keep)] = cx[:keep.sum(), :keep.sum()]
    fields = {}
    if method == "consistent":
        x, y = _consistent(model, Yfull.reshape(N * nq, -1), C, b, np.tile(sigma, N), layout, y, regularization)
        beta = base.values(x)
        fields["inertial"] = x[:10 * model.nb]
    else:
        x = None
    fields.update(layout.results(base, beta, x, z, y))
    if method == "consistent":
        fields["model"] = _corrected_model(model, fields)
    e = b - A @ beta - C @ y
    return IdentificationResult(base=base, parameters=beta, standard_errors=np.sqrt(np.diag(cov)),
                                covariance=cov, residual_rms=np.sqrt(np.mean(e.reshape(N, nq) ** 2, axis=0)),
                                condition=condition, method=method, samples=N, nominal=model, **fields)


def _least_squares(A, b, sigma, N, known_variance=False):
    """beta and its covariance for rows weighted by 1/sigma (per joint, repeated per sample)."""
    w = np.tile(1.0 / sigma, N)
    Aw, bw = A * w[:, None], b * w
    Qm, R = np.linalg.qr(Aw)
    beta = np.linalg.solve(R, Qm.T @ bw)
    Rinv = np.linalg.inv(R)
    cov = Rinv @ Rinv.T
    if not known_variance:
        dof = max(A.shape[0] - A.shape[1], 1)
        cov = cov * float(np.sum((bw - Aw @ beta) ** 2) / dof)
    return beta, cov


class _Layout:
    """Where the armature and friction parameters sit in the full parameter vector
    ``[inertial (10 nb) | armature (nq) | fv, fc, fo per joint (3 nq)]`` and what the laws keep."""

    def __init__(self, model, base, laws, armature):
        nb_, nq = model.nb, model.nq
        self.nq, self.laws = nq, laws
        self.arm0 = 10 * nb_ if armature else None
        self.fric0 = 10 * nb_ + (nq if armature else 0) if laws is not None else None
        self.P = base.K.shape[1]
        self.dropped = dropped_columns(laws, self.fric0) if laws is not None else []
        self.keep = kept_base_columns(base, self.dropped)
        self.nonlinear = laws is not None and bool(nonlinear_joints(laws))
        self.changes_columns = bool(self.dropped)
        self.full_keep = np.setdiff1d(np.arange(self.P), self.dropped)

    def extras(self, model, y0):
        """Start and lower bound of every kept parameter after the inertial ones, then of the laws'
        linear parameters: armature the model's, >= 0; fv, fc the model's damping and friction,
        >= 0; fo 0, free; the laws' from the variable projection (``y0``), >= 0."""
        start = np.zeros(self.P)
        lower = np.full(self.P, -np.inf)
        if self.arm0 is not None:
            start[self.arm0:self.arm0 + self.nq] = model.armature
            lower[self.arm0:self.arm0 + self.nq] = 0.0
        if self.fric0 is not None:
            start[self.fric0::3][:self.nq] = model.damping
            start[self.fric0 + 1::3][:self.nq] = model.friction
            lower[self.fric0::3][:self.nq] = 0.0
            lower[self.fric0 + 1::3][:self.nq] = 0.0
        tail = self.full_keep[self.full_keep >= 10 * model.nb]
        return (np.concatenate([start[tail], np.maximum(y0, 0.0)]),
                np.concatenate([lower[tail], np.zeros(len(y0))]))

    def results(self, base, beta, x, z, y):
        """``armature`` (nq,), ``friction`` (nq, 3) and ``friction_laws`` of the fit: from the full
        parameters x when given, else the base parameters that are one parameter on their own (NaN
        for one combined with others; viscous and Coulomb NaN on a stribeck or sigmoid joint)."""
        value = (lambda cols: x[cols]) if x is not None else (lambda cols: _standalone(base, beta, cols))
        out = dict(armature=None, friction=None, friction_laws=None)
        if self.arm0 is not None:
            out["armature"] = value(np.arange(self.arm0, self.arm0 + self.nq))
        if self.laws is None:
            return out
        fr = value(np.arange(self.fric0, self.fric0 + 3 * self.nq)).reshape(self.nq, 3)
        nonlinear = split(self.laws, z, y)
        made = []
        for j, law in enumerate(self.laws):
            if law in NONLINEAR:
                fr[j, :2] = np.nan
                made.append(make_law(law, nonlinear[j]))
            elif law == "viscous":
                made.append(make_law(law, {"viscous": fr[j, 0]}))
            else:
                made.append(make_law(law, {"coulomb": fr[j, 1], "viscous": fr[j, 0], "smoothing": 0.0}))
        out["friction"], out["friction_laws"] = fr, tuple(made)
        return out


def _standalone(base, beta, cols):
    """Values of the full parameters ``cols`` that are base parameters on their own (NaN otherwise)."""
    out = np.full(len(cols), np.nan)
    for k, col in enumerate(base.independent):
        if np.count_nonzero(base.K[k]) == 1:
            out[np.flatnonzero(np.asarray(cols) == col)] = beta[k]
    return out


def _corrected_model(model, fields):
    """``model``'s kinematics with the identified inertials, armatures and friction laws."""
    pi, laws, arm, fr = fields["inertial"], fields["friction_laws"], fields["armature"], fields["friction"]
    new = model_with_parameters(model, pi, damping=None if fr is None else np.nan_to_num(fr[:, 0]),
                                friction=None if fr is None else np.nan_to_num(fr[:, 1]))
    spec = {}
    for j, name in enumerate(model.joint_names):
        entry = {}
        if arm is not None:
            entry["armature"] = float(arm[j])
        if laws is not None and laws[j].law in NONLINEAR:
            entry["friction"] = dict(law=laws[j].law, **laws[j].params)
        if entry:
            spec[name] = entry
    return new.with_actuators(spec) if spec else new


def _consistent(model, Yall, C, b, sigma_rows, layout, y0, regularization):
    """Full parameters x (P,) and the laws' linear parameters y (k,) minimising the weighted
    residual of ``Yall x + C y`` with every body consistent (log-Cholesky), armatures, viscous and
    Coulomb friction and the laws' linear parameters >= 0 (the columns the laws drop stay 0)."""
    nb_ = model.nb
    Y = np.hstack([Yall[:, layout.full_keep], C])
    Aw, bw = Y / sigma_rows[:, None], b / sigma_rows
    Qm, R = np.linalg.qr(Aw)                   # |Aw x - bw|^2 = |R x - c|^2 + rest^2
    c = Qm.T @ bw
    rest = np.sqrt(max(float(bw @ bw - c @ c), 0.0))
    theta0 = np.concatenate([log_cholesky(p) for p in inertial_parameters(model).reshape(nb_, 10)])
    phi0, lower_phi = layout.extras(model, y0)
    nf = phi0.size
    gamma = float(regularization)

    def unpack(z):
        th = z[:10 * nb_].reshape(nb_, 10)
        return th, np.concatenate([np.concatenate([parameters_from_log_cholesky(t) for t in th]), z[10 * nb_:]])

    def residual(z):
        # the constant rest keeps the whole weighted sum of squares in the cost, so that
        # the relative tolerance below is relative to it (about N nq / 2 at the noise level)
        _, x = unpack(z)
        return np.concatenate([R @ x - c, gamma * (z[:10 * nb_] - theta0), [rest]])

    def jacobian(z):
        th, _ = unpack(z)
        D = np.zeros((10 * nb_ + nf, 10 * nb_ + nf))
        for i in range(nb_):
            D[10 * i:10 * i + 10, 10 * i:10 * i + 10] = log_cholesky_jacobian(th[i])
        D[10 * nb_:, 10 * nb_:] = np.eye(nf)
        reg = np.zeros((10 * nb_, 10 * nb_ + nf))
        reg[:, :10 * nb_] = gamma * np.eye(10 * nb_)
        return np.vstack([R @ D, reg, np.zeros((1, 10 * nb_ + nf))])

    # Levenberg-Marquardt; a body whose best fit lies on the edge of the consistent set
    # sends its theta slowly towards infinity (the edge of the log-Cholesky chart), so the
    # stop is a relative change of 1e-8 of the whole cost, not of theta.
    tol = dict(xtol=1e-8, ftol=1e-8, gtol=1e-8)
    import scipy.optimize                  # here: scipy costs 0.2 s of import robot_dynamics
    sol = scipy.optimize.least_squares(residual, np.concatenate([theta0, phi0]), jac=jacobian, method="lm",
                                       max_nfev=200 * (10 * nb_ + nf), **tol)
    z = sol.x
    if np.any(z[10 * nb_:] < lower_phi):
        lower = np.concatenate([np.full(10 * nb_, -np.inf), lower_phi])
        z = np.maximum(z, lower)               # armature, viscous, Coulomb >= 0: bounded trust region from there
        z = scipy.optimize.least_squares(residual, z, jac=jacobian, bounds=(lower, np.inf), method="trf",
                                         x_scale="jac", max_nfev=200 * (10 * nb_ + nf), **tol).x
    _, x = unpack(z)
    for i in range(nb_):
        problem = consistency_problem(x[10 * i:10 * i + 10])
        if problem:                            # only at the numerical edge (e^theta underflow)
            raise InputError("the consistent estimate of body %d is not physical (%s): the data may be "
                             "too poor, try a larger regularization" % (i, problem))
    full = np.zeros(layout.P)
    full[layout.full_keep] = x[:layout.full_keep.size]
    return full, x[layout.full_keep.size:]
