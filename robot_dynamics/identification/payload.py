"""Payload identification: mass, centre of mass and inertia of a load on one link.

A rigid payload on link l adds its ten parameters, moved from the link
frame into the frame of the link's body, to that body's (the move is
linear, :func:`robot_dynamics.model.inertia.transform_inertia`). So the
torque the payload needs is ``tau - rnea_model(q, qd, qdd) = Y_b T pi_p``,
with ``Y_b`` the body's ten regressor columns and ``T`` the move: linear
least squares in ``pi_p = (m, m c, I_O)`` about the link origin (Atkeson,
An and Hollerbach, *Estimation of inertial parameters of manipulator
loads and links*, IJRR 1986, load estimation; Khalil and Dombre,
*Modeling, Identification and Control of Robots*, ch. 12, identification
of the payload). At rest (qd = qdd = 0)
only gravity acts, so only ``m`` and ``m c`` are determined (static mode).
"""
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .. import checks
from ..algorithms.regressor import friction_regressor, regressor
from ..algorithms.rnea import rnea
from ..errors import InputError, old_argument_order
from ..model.inertia import transform_inertia
from ..algorithms.floating import require_fixed


@dataclass(frozen=True)
class PayloadEstimate:
    """A payload found by :func:`identify_payload`.

    Fields:
        link: the link that carries it.
        mass: [kg]; mass_std: its standard deviation.
        com: (3,) centre of mass in the link frame [m]; com_std: (3,).
        inertia: (3, 3) rotational inertia about the centre of mass, link
            axes [kg m^2]; inertia_std (3, 3); None in static mode.
        static: True when the data were at rest (mass and com only).
        parameters: (10,) or (4,) ``(m, m c, I_xx, I_xy, I_yy, I_xz, I_yz,
            I_zz)`` about the link origin (static: the first four);
            covariance: their covariance.
        friction: (nq, 3) (viscous, Coulomb, offset) identified with the
            payload when asked (:func:`~robot_dynamics.friction_regressor`
            order), else None.
        residual_rms: (nq,) of the torques left after the fit [N m or N].
    """
    link: str
    mass: float
    com: np.ndarray
    inertia: Optional[np.ndarray]
    mass_std: float
    com_std: np.ndarray
    inertia_std: Optional[np.ndarray]
    static: bool
    parameters: np.ndarray = field(repr=False)
    covariance: np.ndarray = field(repr=False)
    friction: Optional[np.ndarray]
    residual_rms: np.ndarray

    def apply(self, model):
        """``model.with_payload(link, mass, com, inertia)`` (a point mass in static mode)."""
        return model.with_payload(self.link, max(self.mass, 0.0), self.com,
                                  None if self.inertia is None else 0.5 * (self.inertia + self.inertia.T))


def payload_transform(model, link):
    """(10, 10) T: a payload's parameters in ``link``'s frame -> its share of
    the parameters of the link's body (body frame)."""
    l = model.link_index(link)
    T = model.link_placement[l]
    out = np.empty((10, 10))
    for k in range(10):
        e = np.zeros(10)
        e[k] = 1.0
        I = np.array([[e[4], e[5], e[7]], [e[5], e[6], e[8]], [e[7], e[8], e[9]]])
        m, h, Io = transform_inertia(T, e[0], e[1:4], I)
        out[:, k] = [m, h[0], h[1], h[2], Io[0, 0], Io[0, 1], Io[1, 1], Io[0, 2], Io[1, 2], Io[2, 2]]
    return out


def _old_order(args, kwargs):
    """(model, link, q, qd, qdd, tau) -> (model, q, qd, qdd, tau, link)."""
    kwargs["link"] = args[1]
    return (args[0],) + tuple(args[2:]), kwargs


@old_argument_order(1, _old_order, "identify_payload(model, q, qd, qdd, tau, link)")
def identify_payload(model, q, qd, qdd, tau, link, *, static=None, friction=False):
    """Identify a rigid payload on ``link`` from measured motion and torques.

    Args:
        model: the model without the payload (its inertials are taken as right).
        q, qd, qdd, tau: (N, nq) joint positions, velocities, accelerations
            and measured torques [SI], ``model.joint_names`` order.
        link: name of the link that carries the payload (its frame is the
            frame of the result, as in :meth:`Model.with_payload`).
        static: True for data at rest (only ``m`` and ``m c`` are fitted),
            False for a trajectory; None: True when qd and qdd are all zero.
        friction: also fit viscous, Coulomb and offset friction per joint
            (in static mode only the offset, which then competes with gravity).

    Returns:
        :class:`PayloadEstimate`; uncertainties from the least-squares
        covariance (residual variance pooled over joints) carried to com and
        inertia to first order.

    Raises:
        InputError: an unknown link, a link fixed to the base, bad shapes,
        or data that do not determine the payload (e.g. static poses that
        never tilt the link).
    """
    require_fixed(model, "identify_payload")
    l = model.link_index(link)
    b = int(model.link_body[l])
    if b < 0:
        raise InputError("link %r is fixed to the base: a payload on it exerts no joint torque" % link)
    _, (Q, QD, QDD, TAU) = checks.batch(model, q=q, qd=qd, qdd=qdd, tau=tau)
    checks.check_finite(q=Q, qd=QD, qdd=QDD, tau=TAU)
    if static is None:
        static = not (np.any(QD) or np.any(QDD))
    N, nq = Q.shape
    npar = 4 if static else 10
    Yb = regressor(model, Q, QD, QDD)[..., 10 * b:10 * b + 10] @ payload_transform(model, link)[:, :npar]
    cols = [Yb]
    if friction:
        F = friction_regressor(model, QD)
        cols.append(F[..., 2::3] if static else F)
    A = np.concatenate(cols, axis=-1).reshape(N * nq, -1)
    r = (TAU - rnea(model, Q, QD, QDD)).reshape(N * nq)
    keep = np.linalg.norm(A, axis=0) > 0             # friction columns of joints that never move
    sv = np.linalg.svd(A[:, keep], compute_uv=False)
    if A.shape[0] <= A.shape[1] or sv[-1] <= 1e-9 * sv[0] or not np.all(keep[:npar]):
        raise InputError("the data do not determine the payload on %r (%s mode): use more %s"
                         % (link, "static" if static else "dynamic",
                            "poses that tilt the link in different directions" if static else "varied motion"))
    x = np.zeros(A.shape[1])
    Qm, R = np.linalg.qr(A[:, keep])
    x[keep] = np.linalg.solve(R, Qm.T @ r)
    e = r - A @ x
    s2 = float(e @ e) / max(A.shape[0] - int(keep.sum()), 1)
    Rinv = np.linalg.inv(R)
    cov = np.zeros((A.shape[1], A.shape[1]))
    cov[np.ix_(keep, keep)] = s2 * Rinv @ Rinv.T
    p, C = x[:npar], cov[:npar, :npar]
    if not p[0] > 0:
        raise InputError("the identified payload mass on %r is %.6g kg (not positive): no payload, or data "
                         "too poor" % (link, p[0]))
    out, G = _physical(p)
    std = np.sqrt(np.maximum(np.diag(G @ C @ G.T), 0.0))
    fric = None
    if friction:
        f = x[npar:]
        fric = np.column_stack([np.zeros(nq), np.zeros(nq), f]) if static else f.reshape(nq, 3)
    return PayloadEstimate(link=model.link_names[l], mass=float(out[0]), com=out[1:4], mass_std=float(std[0]),
                           com_std=std[1:4], inertia=None if static else _sym(out[4:10]),
                           inertia_std=None if static else _sym(std[4:10]), static=bool(static),
                           parameters=p, covariance=C, friction=fric,
                           residual_rms=np.sqrt(np.mean(e.reshape(N, nq) ** 2, axis=0)))


def _physical(p):
    """(m, c, I_C unique entries) of parameters about the link origin, and its Jacobian."""
    def f(p):
        m, h = p[0], p[1:4]
        out = [m, *(h / m)]
        if p.size == 10:
            # I_C = I_O - (|h|^2 1 - h h^T) / m
            Io = _sym(p[4:10])
            Ic = Io - (h @ h * np.eye(3) - np.outer(h, h)) / m
            out += [Ic[0, 0], Ic[0, 1], Ic[1, 1], Ic[0, 2], Ic[1, 2], Ic[2, 2]]
        return np.array(out)

    y = f(p)
    G = np.empty((y.size, p.size))
    for k in range(p.size):                     # central differences (f is smooth for m > 0)
        d = 1e-6 * max(abs(p[k]), 1e-3)
        e = np.zeros(p.size)
        e[k] = d
        G[:, k] = (f(p + e) - f(p - e)) / (2 * d)
    return y, G


def _sym(v):
    xx, xy, yy, xz, yz, zz = v
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
