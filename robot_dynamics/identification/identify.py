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
"""
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..algorithms import checks
from ..algorithms.regressor import inertial_parameters
from ..errors import InputError
from .base import BaseParameters, base_parameters, full_regressor
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
            identified); None otherwise.
        inertial: ``"consistent"`` only: (10 nb,) the full body parameters
            of ``model`` (:func:`~robot_dynamics.inertial_parameters` order).
        friction: (nq, 3) identified (viscous, Coulomb, offset) per joint
            (``"consistent"``: the fitted ones; otherwise the base parameters
            that are friction parameters on their own, NaN for one that is
            not, e.g. the offset of a joint whose gravity torque is
            constant), or None.
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

    def predict(self, q, qd, qdd):
        """Torques of the identified model, friction included: (..., nq) [N m or N]."""
        return self.base.regressor(self.nominal, q, qd, qdd) @ self.parameters

    def to_yaml(self, path=None):
        """The corrected inertials as YAML text (written to ``path`` if given).

        One entry per body link: ``mass`` [kg], ``com`` [m] and ``inertia``
        about the centre of mass [kg m^2] (``ixx ixy ixz iyy iyz izz``, as a
        URDF ``<inertial>``), in the link's frame, everything fixed to the
        body lumped on that link; then per joint the friction coefficients
        when identified. ``"consistent"`` results only."""
        if self.inertial is None:
            raise InputError("only a method='consistent' result has full inertials; this one is %r "
                             "(base parameters only)" % self.method)
        lines = ["# robot_dynamics identified inertials (method %s, %d samples)" % (self.method, self.samples),
                 "robot: %s" % (self.nominal.name or "robot"), "links:"]
        for link, m, c, I in body_inertials(self.nominal, self.inertial):
            lines += ["  %s:" % link, "    mass: %.10g" % m, "    com: [%.10g, %.10g, %.10g]" % tuple(c),
                      "    inertia: {ixx: %.10g, ixy: %.10g, ixz: %.10g, iyy: %.10g, iyz: %.10g, izz: %.10g}"
                      % (I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2])]
        if self.friction is not None:
            lines.append("joints:")
            for name, (fv, fc, fo) in zip(self.nominal.joint_names, self.friction):
                lines.append("  %s: {viscous: %.10g, coulomb: %.10g, offset: %.10g}" % (name, fv, fc, fo))
        text = "\n".join(lines) + "\n"
        if path is not None:
            with open(path, "w") as f:
                f.write(text)
        return text

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


def identify(model, q, qd, qdd, tau, *, friction=False, method="ols", base=None, regularization=1e-2):
    """Identify the base parameters of ``model`` from measured motion and torques.

    Args:
        model: the nominal :class:`~robot_dynamics.Model` (its kinematics and
            gravity are taken as right; for ``"consistent"`` its inertials are
            the starting point).
        q, qd, qdd, tau: (N, nq) measured joint positions [rad or m],
            velocities, accelerations and torques [N m or N], in
            ``model.joint_names`` order; tau is what the motors apply.
        friction: also identify viscous, Coulomb and offset friction per
            joint (:func:`~robot_dynamics.friction_regressor`).
        method: "ols", "wls" or "consistent" (see the module text).
        base: optional :class:`~.base.BaseParameters` of the model (default:
            :func:`~.base.base_parameters` with ``friction``).
        regularization: ``"consistent"`` only: weight of ``|theta -
            theta_nominal|`` (log-Cholesky coordinates: logarithms and
            metres) next to residuals scaled to unit noise.

    Returns:
        :class:`IdentificationResult`.
    """
    require_fixed(model, "identify")
    if method not in METHODS:
        raise InputError("method must be one of %s, got %r" % (", ".join(METHODS), method))
    shape, (Q, QD, QDD, TAU) = checks.batch(model, q=q, qd=qd, qdd=qdd, tau=tau)
    checks.check_finite(q=Q, qd=QD, qdd=QDD, tau=TAU)
    if base is None:
        base = base_parameters(model, friction=friction)
    elif base.friction != bool(friction):
        raise InputError("base was computed with friction=%s, identify was called with friction=%s"
                         % (base.friction, bool(friction)))
    base.check_model(model)
    N, nq, p = Q.shape[0], model.nq, base.count
    if N * nq <= p:
        raise InputError("%d samples of %d joints give %d equations for %d base parameters: need more samples"
                         % (N, nq, N * nq, p))
    Yfull = full_regressor(model, Q, QD, QDD, friction=friction)           # (N, nq, P)
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
    fields = {}
    if method == "consistent":
        x = _consistent(model, base, Yfull.reshape(N * nq, -1), b, np.tile(sigma, N), friction, regularization)
        pi = x[:10 * model.nb]
        beta = base.values(x)
        fields["inertial"] = pi
        fric = x[10 * model.nb:].reshape(nq, 3) if friction else None
        fields["model"] = model_with_parameters(model, pi, damping=None if fric is None else fric[:, 0],
                                                friction=None if fric is None else fric[:, 1])
        fields["friction"] = fric
    elif friction:
        fields["friction"] = _friction_part(base, beta, nq)
    e = (b - A @ beta).reshape(N, nq)
    return IdentificationResult(base=base, parameters=beta, standard_errors=np.sqrt(np.diag(cov)),
                                covariance=cov, residual_rms=np.sqrt(np.mean(e ** 2, axis=0)),
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


def _friction_part(base, beta, nq):
    """(nq, 3) friction values from the base parameters built on a friction column with no
    other term (NaN where a friction column is combined with others)."""
    P = base.K.shape[1]
    fric = np.full(3 * nq, np.nan)
    for k, col in enumerate(base.independent):
        if col >= P - 3 * nq and np.count_nonzero(base.K[k]) == 1:
            fric[col - (P - 3 * nq)] = beta[k]
    return fric.reshape(nq, 3)


def _consistent(model, base, Y, b, sigma_rows, friction, regularization):
    """Full parameters x = [pi (10 nb); phi (3 nq)] minimising the weighted residual with
    every body consistent (log-Cholesky) and viscous, Coulomb friction >= 0."""
    nb_, nq = model.nb, model.nq
    Aw, bw = Y / sigma_rows[:, None], b / sigma_rows
    Qm, R = np.linalg.qr(Aw)                   # |Aw x - bw|^2 = |R x - c|^2 + rest^2
    c = Qm.T @ bw
    rest = np.sqrt(max(float(bw @ bw - c @ c), 0.0))
    theta0 = np.concatenate([log_cholesky(p) for p in inertial_parameters(model).reshape(nb_, 10)])
    nf = 3 * nq if friction else 0
    # start from the model's friction, offsets 0
    phi0 = np.column_stack([model.damping, model.friction, np.zeros(nq)]).ravel() if friction else np.zeros(0)
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
    if friction and (np.any(z[10 * nb_::3] < 0) or np.any(z[10 * nb_ + 1::3] < 0)):
        lower = np.concatenate([np.full(10 * nb_, -np.inf), np.tile([0.0, 0.0, -np.inf], nq)])
        z = np.maximum(z, lower)               # viscous and Coulomb >= 0: bounded trust region from there
        z = scipy.optimize.least_squares(residual, z, jac=jacobian, bounds=(lower, np.inf), method="trf",
                                         x_scale="jac", max_nfev=200 * (10 * nb_ + nf), **tol).x
    _, x = unpack(z)
    for i in range(nb_):
        problem = consistency_problem(x[10 * i:10 * i + 10])
        if problem:                            # only at the numerical edge (e^theta underflow)
            raise InputError("the consistent estimate of body %d is not physical (%s): the data may be "
                             "too poor, try a larger regularization" % (i, problem))
    return x
