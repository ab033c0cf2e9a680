"""Articulated-body algorithm: forward dynamics qdd = FD(q, qd, tau).

Featherstone, *Rigid Body Dynamics Algorithms*, sec. 7.3 (Table 7.1);
Handbook of Robotics, sec. 3.7 (Algorithm 3.4). O(n) in three passes:
velocities and bias forces outward, articulated inertias ``IA`` and bias
forces ``pA`` inward, accelerations outward. Models with mimic joints are
coupled trees that the ABA does not cover; for them ``aba`` solves
``M(q) qdd = tau - h(q, qd)`` with the CRBA and a Cholesky factorisation.
"""
import numpy as np

from . import _checks
from ._jit import (all_finite, cross_force_add, force_to_parent_add, inertia_matrix, jit, joint_coordinate,
                   joint_pose, joint_position, motion_to_child)
from .model import AXIS, JTYPE, MASS, PARENT, PRISMATIC
from .wrench import body_wrenches, link_wrenches


@jit
def _congruence_to_parent_add(R, p, Ia, out, X, T):
    """out += X^T Ia X with X = [[R^T, 0], [-R^T (p x), R^T]] (parent -> child)."""
    X[:, :] = 0.0
    for r in range(3):
        for c in range(3):
            X[r, c] = R[c, r]
            X[3 + r, 3 + c] = R[c, r]
    for r in range(3):                                   # -R^T (p x)
        X[3 + r, 0] = R[2, r] * p[1] - R[1, r] * p[2]
        X[3 + r, 1] = R[0, r] * p[2] - R[2, r] * p[0]
        X[3 + r, 2] = R[1, r] * p[0] - R[0, r] * p[1]
    for r in range(6):
        for c in range(6):
            s = 0.0
            for k in range(6):
                s += Ia[r, k] * X[k, c]
            T[r, c] = s
    for r in range(6):
        for c in range(6):
            s = 0.0
            for k in range(6):
                s += X[k, r] * T[k, c]
            out[r, c] += s


@jit
def _aba(ints, reals, grav, q, qd, tau, fext, qdd, R, p, v, c, IA, pA, U, D, u, a, Ia, pa, X, T, tmp):
    nb = ints.shape[0]
    for i in range(nb):                                   # pass 1: v_i, c_i, IA_i, pA_i
        par, jt = ints[i, PARENT], ints[i, JTYPE]
        qdi = joint_coordinate(ints, reals, i, qd)
        joint_pose(reals, i, jt, joint_position(ints, reals, i, q), R[i], p[i])
        if par < 0:
            v[i, :] = 0.0
        else:
            motion_to_child(R[i], p[i], v[par], v[i])
        k = 0 if jt != PRISMATIC else 3
        s0, s1, s2 = reals[i, AXIS] * qdi, reals[i, AXIS + 1] * qdi, reals[i, AXIS + 2] * qdi
        v[i, k] += s0
        v[i, k + 1] += s1
        v[i, k + 2] += s2
        w0, w1, w2 = v[i, 0], v[i, 1], v[i, 2]
        c[i, :] = 0.0                                     # c_i = v_i x S qd_i
        if jt == PRISMATIC:
            c[i, 3], c[i, 4], c[i, 5] = w1 * s2 - w2 * s1, w2 * s0 - w0 * s2, w0 * s1 - w1 * s0
        else:
            c[i, 0], c[i, 1], c[i, 2] = w1 * s2 - w2 * s1, w2 * s0 - w0 * s2, w0 * s1 - w1 * s0
            c[i, 3] = v[i, 4] * s2 - v[i, 5] * s1
            c[i, 4] = v[i, 5] * s0 - v[i, 3] * s2
            c[i, 5] = v[i, 3] * s1 - v[i, 4] * s0
        inertia_matrix(reals[i, MASS:MASS + 13], IA[i])
        for r in range(6):                                # pA_i = v_i x* I_i v_i - f_ext_i
            s = 0.0
            for k2 in range(6):
                s += IA[i, r, k2] * v[i, k2]
            tmp[r] = s
        pA[i, :] = 0.0
        cross_force_add(v[i], tmp, pA[i])
        if fext.shape[0]:
            for r in range(6):
                pA[i, r] -= fext[i, r]
    for i in range(nb - 1, -1, -1):                       # pass 2: articulated inertias
        k = 0 if ints[i, JTYPE] != PRISMATIC else 3
        ax, ay, az = reals[i, AXIS], reals[i, AXIS + 1], reals[i, AXIS + 2]
        for r in range(6):                                # U_i = IA_i S_i
            U[i, r] = IA[i, r, k] * ax + IA[i, r, k + 1] * ay + IA[i, r, k + 2] * az
        D[i] = ax * U[i, k] + ay * U[i, k + 1] + az * U[i, k + 2]              # D_i = S^T U_i
        u[i] = tau[i] - (ax * pA[i, k] + ay * pA[i, k + 1] + az * pA[i, k + 2])  # u_i = tau_i - S^T pA_i
        par = ints[i, PARENT]
        if par < 0:
            continue
        for r in range(6):                                # Ia = IA - U U^T / D
            for cc in range(6):
                Ia[r, cc] = IA[i, r, cc] - U[i, r] * U[i, cc] / D[i]
        for r in range(6):                                # pa = pA + Ia c + U u / D
            s = pA[i, r] + U[i, r] * u[i] / D[i]
            for k2 in range(6):
                s += Ia[r, k2] * c[i, k2]
            pa[r] = s
        _congruence_to_parent_add(R[i], p[i], Ia, IA[par], X, T)
        force_to_parent_add(R[i], p[i], pa, pA[par])
    a0 = tmp
    a0[0], a0[1], a0[2], a0[3], a0[4], a0[5] = 0.0, 0.0, 0.0, -grav[0], -grav[1], -grav[2]
    for i in range(nb):                                   # pass 3: accelerations
        par = ints[i, PARENT]
        motion_to_child(R[i], p[i], a0 if par < 0 else a[par], a[i])
        for r in range(6):
            a[i, r] += c[i, r]
        s = 0.0
        for r in range(6):
            s += U[i, r] * a[i, r]
        qdd[i] = (u[i] - s) / D[i]                        # qdd_i = (u_i - U_i^T a') / D_i
        k = 0 if ints[i, JTYPE] != PRISMATIC else 3
        a[i, k] += reals[i, AXIS] * qdd[i]
        a[i, k + 1] += reals[i, AXIS + 1] * qdd[i]
        a[i, k + 2] += reals[i, AXIS + 2] * qdd[i]


@jit
def aba_kernel(ints, reals, grav, Q, QD, TAU, FEXT, QDD):
    nb = ints.shape[0]
    R, p = np.empty((nb, 3, 3)), np.empty((nb, 3))
    v, c, pA, U, a = np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 6))
    IA, D, u = np.empty((nb, 6, 6)), np.empty(nb), np.empty(nb)
    Ia, pa, X, T, tmp = np.empty((6, 6)), np.empty(6), np.empty((6, 6)), np.empty((6, 6)), np.empty(6)
    for b in range(Q.shape[0]):
        _aba(ints, reals, grav, Q[b], QD[b], TAU[b], FEXT[b], QDD[b],
             R, p, v, c, IA, pA, U, D, u, a, Ia, pa, X, T, tmp)
    return all_finite(QDD) and all_finite(Q) and all_finite(QD) and all_finite(TAU)


@jit
def aba_one(ints, reals, grav, q, qd, tau, qdd):
    nb = ints.shape[0]
    R, p = np.empty((nb, 3, 3)), np.empty((nb, 3))
    v, c, pA, U, a = np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 6))
    IA, D, u = np.empty((nb, 6, 6)), np.empty(nb), np.empty(nb)
    Ia, pa, X, T, tmp = np.empty((6, 6)), np.empty(6), np.empty((6, 6)), np.empty((6, 6)), np.empty(6)
    _aba(ints, reals, grav, q, qd, tau, np.empty((0, 6)), qdd,
         R, p, v, c, IA, pA, U, D, u, a, Ia, pa, X, T, tmp)
    return all_finite(qdd) and all_finite(q) and all_finite(qd) and all_finite(tau)


def aba(model, q, qd, tau, f_ext=None):
    """Forward dynamics: the joint accelerations that ``tau`` produces at ``(q, qd)``.

    ``qdd = M(q)^-1 (tau - h(q, qd) + sum_k J_k^T f_ext_k)``, so
    ``aba(q, qd, rnea(q, qd, qdd)) == qdd``.

    Args:
        q, qd: (..., nq) joint positions and velocities.
        tau: (..., nq) applied joint torques [N m] / forces [N].
        f_ext: optional external wrenches on links, as in :func:`rnea`.

    Returns:
        (..., nq) joint accelerations [rad/s^2 or m/s^2].

    Raises:
        ValueError: bad shapes or non-finite values; a singular mass matrix
            (a moving joint that carries no mass) is reported as such.
    """
    if model.has_mimic:
        return _aba_by_mass_matrix(model, q, qd, tau, f_ext)
    if f_ext is None:
        x, xd, t = _checks.vector(model, q), _checks.vector(model, qd), _checks.vector(model, tau)
        if x is not None and xd is not None and t is not None:
            qdd = np.empty(model.nq)
            if not aba_one(model._ints, model._reals, model._gravity, x, xd, t, qdd):
                _raise(model, q, qd, tau)
            return qdd
    shape, (Q, QD, TAU) = _checks.batch(model, q=q, qd=qd, tau=tau)
    FEXT = body_wrenches(model, f_ext, shape, Q.shape[0])
    QDD = np.empty_like(Q)
    if not aba_kernel(model._ints, model._reals, model._gravity, Q, QD, TAU, FEXT, QDD):
        _raise(model, q, qd, tau)
    return QDD.reshape(shape + (model.nq,))


def _raise(model, q, qd, tau):
    _checks.check_finite(q=q, qd=qd, tau=tau)
    raise ValueError("forward dynamics is singular: a moving joint of %r carries no mass or inertia "
                     "(M(q) is not invertible)" % model.name)


def _aba_by_mass_matrix(model, q, qd, tau, f_ext):
    from .crba import mass_matrix
    from .rnea import rnea
    shape, (Q, QD, TAU) = _checks.batch(model, q=q, qd=qd, tau=tau)
    h = rnea(model, Q, QD, np.zeros_like(Q), None if f_ext is None else link_wrenches(model, f_ext, shape))
    M = mass_matrix(model, Q)
    try:
        L = np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        _raise(model, q, qd, tau)
    rhs = (TAU - h)[..., None]
    y = np.linalg.solve(L, rhs)
    qdd = np.linalg.solve(np.swapaxes(L, -1, -2), y)[..., 0]
    return qdd.reshape(shape + (model.nq,))

