"""Articulated-body algorithm: forward dynamics qdd = FD(q, qd, tau).

Featherstone, *Rigid Body Dynamics Algorithms*, sec. 7.3 (Table 7.1);
Handbook of Robotics, sec. 3.7 (Algorithm 3.4). O(n) in three passes:
velocities and bias forces outward, articulated inertias ``IA`` and bias
forces ``pA`` inward, accelerations outward. Models with mimic joints are
coupled trees that the ABA does not cover; for them ``aba`` solves
``M(q) qdd = tau - h(q, qd)`` with the CRBA, the RNEA and a Cholesky
factorisation (Featherstone sec. 6.1, "FDcrb"), compiled as well.
"""
import numba as nb
import numpy as np

from . import checks
from .kernels import (MAT, V, V_RO, add_joint_motion, add_velocity_product, all_finite, bad_length,
                   cross_force_add, finite1, force_to_parent_add, inertia_matrix, inertia_times, jit,
                   joint_coordinate, joint_force, joint_pose, joint_position, motion_to_child, nbodies,
                   parent_row, set_base_acceleration)
from .crba import _crba
from ..model.model import AXIS, JTYPE, MASS, PARENT, PRISMATIC
from .rnea import _rnea
from .wrench import body_wrenches


@jit
def _congruence_to_parent_add(R, p, i, Ia, IA, t, X, T):
    """IA[t] += X_i^T Ia X_i with X_i = [[R^T, 0], [-R^T (p x), R^T]] (parent -> child)."""
    for r in range(6):
        for c in range(6):
            X[r, c] = 0.0
    for r in range(3):
        for c in range(3):
            X[r, c] = R[i, c, r]
            X[3 + r, 3 + c] = R[i, c, r]
        X[3 + r, 0] = R[i, 2, r] * p[i, 1] - R[i, 1, r] * p[i, 2]
        X[3 + r, 1] = R[i, 0, r] * p[i, 2] - R[i, 2, r] * p[i, 0]
        X[3 + r, 2] = R[i, 1, r] * p[i, 0] - R[i, 0, r] * p[i, 1]
    for r in range(6):                                    # T = Ia X (X is block lower triangular)
        for c in range(3):
            T[r, c] = (Ia[r, 0] * X[0, c] + Ia[r, 1] * X[1, c] + Ia[r, 2] * X[2, c]
                       + Ia[r, 3] * X[3, c] + Ia[r, 4] * X[4, c] + Ia[r, 5] * X[5, c])
            T[r, 3 + c] = Ia[r, 3] * X[3, 3 + c] + Ia[r, 4] * X[4, 3 + c] + Ia[r, 5] * X[5, 3 + c]
    for r in range(6):                                    # IA[t] += X^T T
        for c in range(6):
            s = X[3, r] * T[3, c] + X[4, r] * T[4, c] + X[5, r] * T[5, c]
            if r < 3:
                s += X[0, r] * T[0, c] + X[1, r] * T[1, c] + X[2, r] * T[2, c]
            IA[t, r, c] += s


@jit
def _aba(D, q, qd, tau, fext, qdd, R, p, v, c, IA, pA, U, d, u, a, W, X, T):
    """One state (Featherstone Table 7.1). Work rows: nb bodies + base row.
    W (3, 6, 6): W[0] = Ia scratch; the base rows of pA, c hold pa and I v."""
    n = nbodies(D)
    v[n, :] = 0.0
    for i in range(n):                                    # pass 1: v_i, c_i, IA_i, pA_i
        par = parent_row(D, i)
        qdi = joint_coordinate(D, i, qd)
        joint_pose(D, i, joint_position(D, i, q), R, p)
        motion_to_child(R, p, i, v, par, v)               # v_i = X_i v_p + S_i qd_i
        add_joint_motion(D, i, qdi, v)
        c[i, :] = 0.0                                     # c_i = v_i x S_i qd_i
        add_velocity_product(D, i, v, qdi, c)
        inertia_matrix(D, i, MASS, IA, i)                 # IA_i = I_i
        inertia_times(D, i, MASS, v, i, c, n)             # pA_i = v_i x* I_i v_i - f_ext_i
        pA[i, :] = 0.0
        cross_force_add(v, i, c, n, pA, i)
        if fext.shape[0]:
            for r in range(6):
                pA[i, r] -= fext[i, r]
    Ia = W[0]
    for i in range(n - 1, -1, -1):                        # pass 2: articulated inertias
        k = 3 if D[i, JTYPE] == PRISMATIC else 0
        ax, ay, az = D[i, AXIS], D[i, AXIS + 1], D[i, AXIS + 2]
        for r in range(6):                                # U_i = IA_i S_i
            U[i, r] = IA[i, r, k] * ax + IA[i, r, k + 1] * ay + IA[i, r, k + 2] * az
        d[i] = joint_force(D, i, U, i)                    # D_i = S_i^T U_i
        u[i] = tau[i] - joint_force(D, i, pA, i)          # u_i = tau_i - S_i^T pA_i
        if D[i, PARENT] < 0:
            continue
        for r in range(6):                                # Ia = IA_i - U_i U_i^T / D_i
            for cc in range(6):
                Ia[r, cc] = IA[i, r, cc] - U[i, r] * U[i, cc] / d[i]
        for r in range(6):                                # pa = pA_i + Ia c_i + U_i u_i / D_i
            s = pA[i, r] + U[i, r] * u[i] / d[i]
            for kk in range(6):
                s += Ia[r, kk] * c[i, kk]
            pA[n, r] = s
        par = parent_row(D, i)
        _congruence_to_parent_add(R, p, i, Ia, IA, par, X, T)
        force_to_parent_add(R, p, i, pA, n, pA, par)
    set_base_acceleration(D, a)
    for i in range(n):                                    # pass 3: accelerations
        motion_to_child(R, p, i, a, parent_row(D, i), a)  # a' = X_i a_p + c_i
        for r in range(6):
            a[i, r] += c[i, r]
        s = 0.0
        for r in range(6):
            s += U[i, r] * a[i, r]
        qdd[i] = (u[i] - s) / d[i]                        # qdd_i = (u_i - U_i^T a') / D_i
        add_joint_motion(D, i, qdd[i], a)                 # a_i = a' + S_i qdd_i


@jit
def _workspace(D):
    n = nbodies(D) + 1
    return (np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6, 6)),
            np.empty((n, 6)), np.empty((n, 6)), np.empty(n), np.empty(n), np.empty((n, 6)),
            np.empty((1, 6, 6)), np.empty((6, 6)), np.empty((6, 6)))


@jit
def aba_kernel(D, Q, QD, TAU, FEXT, QDD):
    R, p, v, c, IA, pA, U, d, u, a, W, X, T = _workspace(D)
    for b in range(Q.shape[0]):
        _aba(D, Q[b], QD[b], TAU[b], FEXT[b], QDD[b], R, p, v, c, IA, pA, U, d, u, a, W, X, T)
    return all_finite(QDD) and all_finite(Q) and all_finite(QD) and all_finite(TAU)


@nb.njit(nb.int64(MAT, V_RO, V_RO, V_RO, V), cache=True, nogil=True)
def aba_one(D, q, qd, tau, qdd):
    if bad_length(D, q) or bad_length(D, qd) or bad_length(D, tau):
        return 1
    R, p, v, c, IA, pA, U, d, u, a, W, X, T = _workspace(D)
    _aba(D, q, qd, tau, np.empty((0, 6)), qdd, R, p, v, c, IA, pA, U, d, u, a, W, X, T)
    return 0 if finite1(qdd) and finite1(q) and finite1(qd) and finite1(tau) else 2


@jit
def _cholesky_solve(M, x):
    """Solve M y = x in place (x <- y) for symmetric positive definite M,
    overwriting M's lower triangle with its Cholesky factor. False if M is
    not positive definite."""
    n = M.shape[0]
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= M[j, k] * M[j, k]
        if not s > 0.0:
            return False
        M[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= M[i, k] * M[j, k]
            M[i, j] = s / M[j, j]
    for i in range(n):                                    # L y = x
        s = x[i]
        for k in range(i):
            s -= M[i, k] * x[k]
        x[i] = s / M[i, i]
    for i in range(n - 1, -1, -1):                        # L^T z = y
        s = x[i]
        for k in range(i + 1, n):
            s -= M[k, i] * x[k]
        x[i] = s / M[i, i]
    return True


@jit
def _fd_crb(D, q, qd, tau, fext, qdd, M, zero, R, p, v, a, f, IC, F):
    """qdd = M^-1 (tau - h): CRBA, RNEA with qdd = 0, Cholesky. False if singular."""
    _crba(D, q, M, R, p, IC, F)
    _rnea(D, q, qd, zero, fext, qdd, R, p, v, a, f)      # qdd <- h (with f_ext)
    for k in range(qdd.shape[0]):
        qdd[k] = tau[k] - qdd[k]
    return _cholesky_solve(M, qdd)


@jit
def fd_crb_kernel(D, Q, QD, TAU, FEXT, QDD):
    """(B, nq) forward dynamics of coupled (mimic) models by the CRBA route."""
    nq, n = Q.shape[1], nbodies(D) + 1
    M, zero = np.empty((nq, nq)), np.zeros(nq)
    R, p, v, a, f = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
    IC, F = np.empty((n, 13)), np.empty((2, 6))
    for b in range(Q.shape[0]):
        if not _fd_crb(D, Q[b], QD[b], TAU[b], FEXT[b], QDD[b], M, zero, R, p, v, a, f, IC, F):
            QDD[b, :] = np.nan
    return all_finite(QDD) and all_finite(Q) and all_finite(QD) and all_finite(TAU)


@nb.njit(nb.int64(MAT, V_RO, V_RO, V_RO, V), cache=True, nogil=True)
def fd_crb_one(D, q, qd, tau, qdd):
    if bad_length(D, q) or bad_length(D, qd) or bad_length(D, tau):
        return 1
    nq, n = q.shape[0], nbodies(D) + 1
    M, zero = np.empty((nq, nq)), np.zeros(nq)
    R, p, v, a, f = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
    IC, F = np.empty((n, 13)), np.empty((2, 6))
    if not _fd_crb(D, q, qd, tau, np.empty((0, 6)), qdd, M, zero, R, p, v, a, f, IC, F):
        return 2
    return 0 if finite1(qdd) and finite1(q) and finite1(qd) and finite1(tau) else 2


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
    if f_ext is None and checks.single(q):
        qdd = np.empty(model.nq)
        try:
            if (fd_crb_one if model.has_mimic else aba_one)(model._data, q, qd, tau, qdd) == 0:
                return qdd
        except TypeError:
            pass
    shape, (Q, QD, TAU) = checks.batch(model, q=q, qd=qd, tau=tau)
    FEXT = body_wrenches(model, f_ext, shape, Q.shape[0])
    QDD = np.empty_like(Q)
    kernel = fd_crb_kernel if model.has_mimic else aba_kernel
    if not kernel(model._data, Q, QD, TAU, FEXT, QDD):
        _raise(model, q, qd, tau)
    return QDD.reshape(shape + (model.nq,))


def _raise(model, q, qd, tau):
    checks.check_finite(q=q, qd=qd, tau=tau)
    raise ValueError("forward dynamics is singular: a moving joint of %r carries no mass or inertia "
                     "(M(q) is not invertible)" % model.name)

