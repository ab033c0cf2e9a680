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
from ..errors import SingularityError
from .dispatch import Algorithm, run
from .kernels import (TABLE, entry, V, V_RO, chunks, work_buffer, parallel, work, work_size, S_add, crm_S_add, all_finite, bad_length,
                   crf_add, finite1, XT_force_add, I_matrix, I_times, jit,
                   joint_coordinate, ST_force, jcalc, joint_position, X_motion, nbodies,
                   parent_row, set_base_acceleration)
from .crba import _crba
from ..model.packed import AXIS, JTYPE, MASS, PARENT, PRISMATIC
from .rnea import _NO_FEXT, _rnea
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
def _aba(D, q, qd, tau, fext, qdd, w):
    """One state (Featherstone Table 7.1); w: the Work arrays (nb bodies +
    the base row). The base rows of pA and c hold pa and I v as scratch."""
    R, p, v, c, IA, pA, U, d, u, a, X, T = w.R, w.p, w.v, w.c, w.IA, w.pA, w.U, w.d, w.u, w.a, w.X, w.T
    n = nbodies(D)
    v[n, :] = 0.0
    for i in range(n):                                    # pass 1: v_i, c_i, IA_i, pA_i
        par = parent_row(D, i)
        qdi = joint_coordinate(D, i, qd)
        jcalc(D, i, joint_position(D, i, q), R, p)
        X_motion(R, p, i, v, par, v)               # v_i = X_i v_p + S_i qd_i
        S_add(D, i, qdi, v)
        c[i, :] = 0.0                                     # c_i = v_i x S_i qd_i
        crm_S_add(D, i, v, qdi, c)
        I_matrix(D, i, MASS, IA, i)                 # IA_i = I_i
        I_times(D, i, MASS, v, i, c, n)             # pA_i = v_i x* I_i v_i - f_ext_i
        pA[i, :] = 0.0
        crf_add(v, i, c, n, pA, i)
        if fext.shape[0]:
            for r in range(6):
                pA[i, r] -= fext[i, r]
    Ia = w.Ia
    for i in range(n - 1, -1, -1):                        # pass 2: articulated inertias
        k = 3 if D[i, JTYPE] == PRISMATIC else 0
        ax, ay, az = D[i, AXIS], D[i, AXIS + 1], D[i, AXIS + 2]
        for r in range(6):                                # U_i = IA_i S_i
            U[i, r] = IA[i, r, k] * ax + IA[i, r, k + 1] * ay + IA[i, r, k + 2] * az
        d[i] = ST_force(D, i, U, i)                    # D_i = S_i^T U_i
        u[i] = tau[i] - ST_force(D, i, pA, i)          # u_i = tau_i - S_i^T pA_i
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
        XT_force_add(R, p, i, pA, n, pA, par)
    set_base_acceleration(D, a)
    for i in range(n):                                    # pass 3: accelerations
        X_motion(R, p, i, a, parent_row(D, i), a)  # a' = X_i a_p + c_i
        for r in range(6):
            a[i, r] += c[i, r]
        s = 0.0
        for r in range(6):
            s += U[i, r] * a[i, r]
        qdd[i] = (u[i] - s) / d[i]                        # qdd_i = (u_i - U_i^T a') / D_i
        S_add(D, i, qdd[i], a)                 # a_i = a' + S_i qdd_i


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
def _fd_crb(D, q, qd, tau, fext, qdd, w):
    """qdd = M^-1 (tau - h): CRBA, RNEA with qdd = 0, Cholesky. False if singular."""
    _crba(D, q, w.M, w.R, w.p, w.IC, w.F)
    w.zero[:] = 0.0
    _rnea(D, q, qd, w.zero, fext, qdd, w.R, w.p, w.v, w.a, w.f)      # qdd <- h (with f_ext)
    for k in range(qdd.shape[0]):
        qdd[k] = tau[k] - qdd[k]
    return _cholesky_solve(w.M, qdd)


@jit
def forward_states(D, mimic, Q, QD, TAU, FEXT, QDD, W):
    """QDD[b] for every row of one chunk: ABA, or the CRBA route for coupled (mimic) trees."""
    w = work(W, nbodies(D) + 1, Q.shape[1])
    none = np.empty((0, 6))
    for b in range(Q.shape[0]):
        fext = FEXT[b] if FEXT.shape[0] > 0 else none
        if not mimic:
            _aba(D, Q[b], QD[b], TAU[b], fext, QDD[b], w)
        elif not _fd_crb(D, Q[b], QD[b], TAU[b], fext, QDD[b], w):
            QDD[b, :] = np.nan


@parallel
def aba_batch(D, Q, QD, TAU, FEXT, mimic, QDD):
    """(B, nq) forward dynamics on all threads; FEXT (B, nb, 6), or (0, 0, 6) for none."""
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), Q.shape[1])
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        forward_states(D, mimic, Q[lo:hi], QD[lo:hi], TAU[lo:hi], FEXT[lo:hi], QDD[lo:hi], np.empty(size))
    return all_finite(QDD) and all_finite(Q) and all_finite(QD) and all_finite(TAU)


@entry(TABLE, V_RO, V_RO, V_RO, V, V)
def aba_one(D, q, qd, tau, qdd, W):
    if bad_length(D, q) or bad_length(D, qd) or bad_length(D, tau) or bad_length(D, qdd):
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    _aba(D, q, qd, tau, np.empty((0, 6)), qdd, work(W, nbodies(D) + 1, q.shape[0]))
    return 0 if finite1(qdd) and finite1(q) and finite1(qd) and finite1(tau) else 2


@entry(TABLE, V_RO, V_RO, V_RO, V, V)
def fd_crb_one(D, q, qd, tau, qdd, W):
    if bad_length(D, q) or bad_length(D, qd) or bad_length(D, tau) or bad_length(D, qdd):
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    if not _fd_crb(D, q, qd, tau, np.empty((0, 6)), qdd, work(W, nbodies(D) + 1, q.shape[0])):
        return 2
    return 0 if finite1(qdd) and finite1(q) and finite1(qd) and finite1(tau) else 2


ABA = Algorithm(aba_one, aba_batch, ("q", "qd", "tau"))
FD_CRB = Algorithm(fd_crb_one, aba_batch, ("q", "qd", "tau"))
ABA_FEXT = Algorithm(None, aba_batch, ("q", "qd", "tau"))


def aba(model, q, qd, tau, f_ext=None, *, data=None, out=None):
    """Forward dynamics: the joint accelerations that ``tau`` produces at ``(q, qd)``.

    ``qdd = M(q)^-1 (tau - h(q, qd) + sum_k J_k^T f_ext_k)``, so
    ``aba(q, qd, rnea(q, qd, qdd)) == qdd``.

    Args:
        q, qd: (..., nq) joint positions and velocities.
        tau: (..., nq) applied joint torques [N m] / forces [N].
        f_ext: optional external wrenches on links, as in :func:`rnea`.
        data, out: as in :func:`rnea`.

    Returns:
        (..., nq) joint accelerations [rad/s^2 or m/s^2].

    Raises:
        ValueError: bad shapes or non-finite values; a singular mass matrix
            (a moving joint that carries no mass) is reported as such.
    """
    if f_ext is None:
        algorithm, fext = (FD_CRB if model.has_mimic else ABA), _NO_FEXT
    else:
        shape, _ = checks.batch(model, q=q, qd=qd, tau=tau)
        algorithm, fext = ABA_FEXT, body_wrenches(model, f_ext, shape, int(np.prod(shape, dtype=np.int64)))
    return run(algorithm, model, (q, qd, tau), data, out, extra=(fext, model.has_mimic),
                     on_error=_singular)


def _singular(model):
    raise SingularityError("forward dynamics is singular: a moving joint of %r carries no mass or inertia "
                           "(M(q) is not invertible)" % model.name)
