"""Recursive Newton-Euler algorithm: inverse dynamics and its special cases.

Featherstone, *Rigid Body Dynamics Algorithms*, sec. 5.3 (Table 5.1);
Siciliano & Khatib (eds.), *Springer Handbook of Robotics*, sec. 3.5
(Algorithm 3.1). Gravity enters as a fictitious base acceleration
``a_0 = -g`` (Handbook eq. 3.39), so ``gravity_torques(q) == rnea(q, 0, 0)``
and ``nonlinear_effects(q, qd) == rnea(q, qd, 0)``.
"""
import numpy as np

from . import _checks
from ._jit import (all_finite, cross_force_add, force_to_parent_add, inertia_times,
                   jit, joint_coordinate, joint_pose, joint_position, motion_to_child)
from .model import AXIS, JTYPE, MASS, PARENT, PRISMATIC, QIDX, QMUL
from .wrench import body_wrenches


@jit
def _rnea(ints, reals, grav, q, qd, qdd, fext, tau, R, p, v, a, f, tmp):
    """One state. fext (nb, 6) body-frame [n; f] wrenches, or (0, 6) for none."""
    nb = ints.shape[0]
    a0 = np.zeros(6)
    a0[3], a0[4], a0[5] = -grav[0], -grav[1], -grav[2]
    for i in range(nb):                                   # forward pass
        par, jt = ints[i, PARENT], ints[i, JTYPE]
        qdi = joint_coordinate(ints, reals, i, qd)
        qddi = joint_coordinate(ints, reals, i, qdd)
        joint_pose(reals, i, jt, joint_position(ints, reals, i, q), R[i], p[i])
        if par < 0:
            v[i, :] = 0.0
            motion_to_child(R[i], p[i], a0, a[i])         # a_i = X_i a_0
        else:
            motion_to_child(R[i], p[i], v[par], v[i])     # v_i = X_i v_p + S qd_i
            motion_to_child(R[i], p[i], a[par], a[i])     # a_i = X_i a_p + S qdd_i + v_i x S qd_i
        ax, ay, az = reals[i, AXIS], reals[i, AXIS + 1], reals[i, AXIS + 2]
        s0, s1, s2 = ax * qdi, ay * qdi, az * qdi
        k = 0 if jt != PRISMATIC else 3
        v[i, k] += s0
        v[i, k + 1] += s1
        v[i, k + 2] += s2
        a[i, k] += ax * qddi
        a[i, k + 1] += ay * qddi
        a[i, k + 2] += az * qddi
        w0, w1, w2 = v[i, 0], v[i, 1], v[i, 2]
        if jt == PRISMATIC:                               # v x (0, s) = (0, w x s)
            a[i, 3] += w1 * s2 - w2 * s1
            a[i, 4] += w2 * s0 - w0 * s2
            a[i, 5] += w0 * s1 - w1 * s0
        else:                                             # v x (s, 0) = (w x s, v x s)
            a[i, 0] += w1 * s2 - w2 * s1
            a[i, 1] += w2 * s0 - w0 * s2
            a[i, 2] += w0 * s1 - w1 * s0
            a[i, 3] += v[i, 4] * s2 - v[i, 5] * s1
            a[i, 4] += v[i, 5] * s0 - v[i, 3] * s2
            a[i, 5] += v[i, 3] * s1 - v[i, 4] * s0
        inertia_times(reals[i, MASS:MASS + 13], a[i], f[i])               # f_i = I_i a_i + v_i x* I_i v_i - f_ext
        inertia_times(reals[i, MASS:MASS + 13], v[i], tmp)
        cross_force_add(v[i], tmp, f[i])
        if fext.shape[0]:
            for c in range(6):
                f[i, c] -= fext[i, c]
    tau[:] = 0.0
    for i in range(nb - 1, -1, -1):                       # backward pass
        k = 0 if ints[i, JTYPE] != PRISMATIC else 3
        tau_i = reals[i, AXIS] * f[i, k] + reals[i, AXIS + 1] * f[i, k + 1] + reals[i, AXIS + 2] * f[i, k + 2]
        tau[ints[i, QIDX]] += reals[i, QMUL] * tau_i      # tau = G^T tau_body (mimic joints)
        if ints[i, PARENT] >= 0:
            force_to_parent_add(R[i], p[i], f[i], f[ints[i, PARENT]])


@jit
def _gravity(ints, reals, grav, q, tau, R, p, a, f):
    """One state of rnea(q, 0, 0): only the base acceleration -g propagates."""
    nb = ints.shape[0]
    a0 = np.zeros(6)
    a0[3], a0[4], a0[5] = -grav[0], -grav[1], -grav[2]
    for i in range(nb):
        par = ints[i, PARENT]
        joint_pose(reals, i, ints[i, JTYPE], joint_position(ints, reals, i, q), R[i], p[i])
        motion_to_child(R[i], p[i], a0 if par < 0 else a[par], a[i])
        inertia_times(reals[i, MASS:MASS + 13], a[i], f[i])
    tau[:] = 0.0
    for i in range(nb - 1, -1, -1):
        k = 0 if ints[i, JTYPE] != PRISMATIC else 3
        tau_i = reals[i, AXIS] * f[i, k] + reals[i, AXIS + 1] * f[i, k + 1] + reals[i, AXIS + 2] * f[i, k + 2]
        tau[ints[i, QIDX]] += reals[i, QMUL] * tau_i
        if ints[i, PARENT] >= 0:
            force_to_parent_add(R[i], p[i], f[i], f[ints[i, PARENT]])


@jit
def rnea_kernel(ints, reals, grav, Q, QD, QDD, FEXT, TAU):
    """(B, nq) states -> TAU (B, nq); FEXT (B, nb, 6) or (B, 0, 6). False if not finite."""
    nb = ints.shape[0]
    R, p = np.empty((nb, 3, 3)), np.empty((nb, 3))
    v, a, f, tmp = np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 6)), np.empty(6)
    for b in range(Q.shape[0]):
        _rnea(ints, reals, grav, Q[b], QD[b], QDD[b], FEXT[b], TAU[b], R, p, v, a, f, tmp)
    return all_finite(TAU) and all_finite(Q) and all_finite(QD) and all_finite(QDD)


@jit
def rnea_one(ints, reals, grav, q, qd, qdd, tau):
    """Single-state entry point without external forces (the hot path)."""
    nb = ints.shape[0]
    R, p = np.empty((nb, 3, 3)), np.empty((nb, 3))
    v, a, f, tmp = np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 6)), np.empty(6)
    _rnea(ints, reals, grav, q, qd, qdd, np.empty((0, 6)), tau, R, p, v, a, f, tmp)
    return all_finite(tau) and all_finite(q) and all_finite(qd) and all_finite(qdd)


@jit
def gravity_kernel(ints, reals, grav, Q, TAU):
    nb = ints.shape[0]
    R, p, a, f = np.empty((nb, 3, 3)), np.empty((nb, 3)), np.empty((nb, 6)), np.empty((nb, 6))
    for b in range(Q.shape[0]):
        _gravity(ints, reals, grav, Q[b], TAU[b], R, p, a, f)
    return all_finite(TAU) and all_finite(Q)


@jit
def gravity_one(ints, reals, grav, q, tau):
    nb = ints.shape[0]
    R, p, a, f = np.empty((nb, 3, 3)), np.empty((nb, 3)), np.empty((nb, 6)), np.empty((nb, 6))
    _gravity(ints, reals, grav, q, tau, R, p, a, f)
    return all_finite(tau) and all_finite(q)


def rnea(model, q, qd, qdd, f_ext=None):
    """Inverse dynamics: the joint torques that produce ``qdd`` at ``(q, qd)``.

    ``tau = M(q) qdd + C(q, qd) qd + g(q) - sum_k J_k(q)^T f_ext_k``.

    Args:
        model: :class:`~robot_dynamics.Model`.
        q: (..., nq) joint positions [rad or m].
        qd: (..., nq) joint velocities [rad/s or m/s].
        qdd: (..., nq) joint accelerations [rad/s^2 or m/s^2].
        f_ext: optional external wrenches acting on links: a dict
            ``{link: (6,)}`` or an array (..., len(model.link_names), 6) in
            ``model.link_names`` order; each ``[fx, fy, fz, nx, ny, nz]`` in
            the link's frame, moment about the link origin [N, N m].

    Returns:
        (..., nq) joint torques [N m] or forces [N], in ``model.joint_names`` order.

    The states broadcast against each other; a batch (B, nq) is computed in
    one compiled loop. See Featherstone sec. 5.3, Handbook Algorithm 3.1.
    """
    if f_ext is None:
        x, xd, xdd = _checks.vector(model, q), _checks.vector(model, qd), _checks.vector(model, qdd)
        if x is not None and xd is not None and xdd is not None:
            tau = np.empty(model.nq)
            if not rnea_one(model._ints, model._reals, model._gravity, x, xd, xdd, tau):
                _checks.raise_not_finite(q=q, qd=qd, qdd=qdd)
            return tau
    shape, (Q, QD, QDD) = _checks.batch(model, q=q, qd=qd, qdd=qdd)
    FEXT = body_wrenches(model, f_ext, shape, Q.shape[0])
    TAU = np.empty_like(Q)
    if not rnea_kernel(model._ints, model._reals, model._gravity, Q, QD, QDD, FEXT, TAU):
        _checks.raise_not_finite(q=q, qd=qd, qdd=qdd, f_ext=None if f_ext is None else FEXT)
    return TAU.reshape(shape + (model.nq,))


def gravity_torques(model, q):
    """Generalized gravity ``g(q) = rnea(q, 0, 0)``: the torques that hold the
    robot still at ``q`` against ``model.gravity``.

    Args:
        q: (..., nq) joint positions.
    Returns:
        (..., nq) torques [N m] / forces [N].
    """
    x = _checks.vector(model, q)
    if x is not None:
        tau = np.empty(model.nq)
        if not gravity_one(model._ints, model._reals, model._gravity, x, tau):
            _checks.raise_not_finite(q=q)
        return tau
    shape, (Q,) = _checks.batch(model, q=q)
    TAU = np.empty_like(Q)
    if not gravity_kernel(model._ints, model._reals, model._gravity, Q, TAU):
        _checks.raise_not_finite(q=q)
    return TAU.reshape(shape + (model.nq,))


def nonlinear_effects(model, q, qd):
    """Coriolis, centrifugal and gravity torques ``h(q, qd) = C(q, qd) qd + g(q)
    = rnea(q, qd, 0)``.

    Args:
        q, qd: (..., nq) joint positions and velocities.
    Returns:
        (..., nq) torques [N m] / forces [N].
    """
    x, xd = _checks.vector(model, q), _checks.vector(model, qd)
    if x is not None and xd is not None:
        tau = np.empty(model.nq)
        if not rnea_one(model._ints, model._reals, model._gravity, x, xd, np.zeros(model.nq), tau):
            _checks.raise_not_finite(q=q, qd=qd)
        return tau
    shape, (Q, QD) = _checks.batch(model, q=q, qd=qd)
    TAU = np.empty_like(Q)
    if not rnea_kernel(model._ints, model._reals, model._gravity, Q, QD, np.zeros_like(Q),
                       np.empty((Q.shape[0], 0, 6)), TAU):
        _checks.raise_not_finite(q=q, qd=qd)
    return TAU.reshape(shape + (model.nq,))
