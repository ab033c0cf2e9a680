"""Compiled single-state entry points of the algorithms on a floating or planar base.

The same arithmetic as :mod:`.floating` (read it first) in one compiled
call: the root's pose from q, the kernels' coordinates (the root chain at
zero, then the joints), the root's acceleration shift ``b(v) + g_root(q)``,
then the fixed-base kernel. Status as every entry point: 0 done, 1 a length
does not fit, 2 a value is not finite or the quaternion is not unit within
:data:`~robot_dynamics.model.configuration.QUATERNION_TOLERANCE` (the
Python path then says which). Forward dynamics with mimic joints and the
nonlinear effects have no entry of their own (the Python path's CRBA +
Cholesky; rnea with qdd = 0): every compiled entry costs set-up time.
"""
import numba as nb
import numpy as np

from .aba import _aba_accelerations, _aba_inertias, _aba_velocities
from .crba import _crba
from .kernels import (MAT, TABLE, V, V_RO, all_finite, chunks, entry, finite1, finite2, inline, jit, nbodies,
                      parallel, set_base_acceleration, work, work_buffer, work_crba, work_rnea, work_size)
from .rnea import _gravity_from_base, _rnea
from ..model.configuration import QUATERNION_TOLERANCE
from ..model.packed import FLOATING_ROOT, NQ, ROOT, ROOT_ROT, WORLD_GRAVITY

_NONE = np.empty((0, 6))


@inline
def root_sizes(D):
    """(nv, nv of the root, nq of the root)."""
    n = D.shape[0] - 1
    if int(D[n, ROOT]) == FLOATING_ROOT:
        return int(D[n, NQ]), 6, 7
    return int(D[n, NQ]), 3, 3


@inline
def bad_sizes(D, q):
    """q does not have the model's nq entries."""
    nv, nr, nrq = root_sizes(D)
    return q.shape[0] != nv - nr + nrq


@inline
def root_state(D, q, qd, qk, s, bias):
    """qk (nv,) <- the kernels' coordinates; s (6,) <- the root's shift g_root
    (+ b(v) when ``bias``). False if the quaternion is not unit within tolerance."""
    n = D.shape[0] - 1
    nv, nr, nrq = root_sizes(D)
    R = np.empty((3, 3))
    if nr == 6:
        x, y, z, w = q[3], q[4], q[5], q[6]
        norm = np.sqrt(x * x + y * y + z * z + w * w)
        if not abs(norm - 1.0) <= QUATERNION_TOLERANCE:
            return False
        x, y, z, w = x / norm, y / norm, z / norm, w / norm
        R[0, 0], R[0, 1], R[0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)
        R[1, 0], R[1, 1], R[1, 2] = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
        R[2, 0], R[2, 1], R[2, 2] = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)
    else:
        c, si = np.cos(q[2]), np.sin(q[2])
        R[0, 0], R[0, 1], R[0, 2] = c, -si, 0.0
        R[1, 0], R[1, 1], R[1, 2] = si, c, 0.0
        R[2, 0], R[2, 1], R[2, 2] = 0.0, 0.0, 1.0
    for k in range(3):                            # g_base = (Rp R)^T g = R^T (Rp^T g)
        s[k] = 0.0
        s[3 + k] = 0.0
    for r in range(3):
        gp = 0.0
        for c in range(3):
            gp += D[n, ROOT_ROT + 3 * c + r] * D[n, WORLD_GRAVITY + c]
        for k in range(3):
            s[k] += R[r, k] * gp
    if nr == 3:
        s[2] = 0.0                                # the normal part: the kernels' own gravity
    for k in range(nr):
        qk[k] = 0.0
    for k in range(nv - nr):
        qk[nr + k] = q[nrq + k]
    if bias:
        if nr == 6:
            u0, u1, u2, w0, w1, w2 = qd[0], qd[1], qd[2], qd[3], qd[4], qd[5]
            s[0] += u1 * w2 - u2 * w1
            s[1] += u2 * w0 - u0 * w2
            s[2] += u0 * w1 - u1 * w0
            s[3] += w1 * w2
            s[4] -= w0 * w2
            s[5] += w0 * w1
        else:
            s[0] += qd[1] * qd[2]
            s[1] -= qd[0] * qd[2]
    return True


@entry(TABLE, V_RO, V_RO, V_RO, V, V, data_table=False)
def rnea_root_one(D, q, qd, qdd, tau, W):
    nv = int(D[D.shape[0] - 1, NQ])
    if bad_sizes(D, q) or qd.shape[0] != nv or qdd.shape[0] != nv or tau.shape[0] != nv:
        return 1
    W = work_buffer(D, W, nv)
    if W.shape[0] == 0:
        return 1
    if not _rnea_root(D, q, qd, qdd, tau, W):
        return 2
    return 0 if finite1(tau) and finite1(q) and finite1(qd) and finite1(qdd) else 2


@inline
def _rnea_root(D, q, qd, qdd, tau, W):
    nv = qd.shape[0]
    R, p, v, a, f, _ = work_rnea(W, nbodies(D) + 1, nv)
    qk, ak, s = np.empty(nv), qdd.copy(), np.empty(6)
    if not root_state(D, q, qd, qk, s, True):
        return False
    for k in range(root_sizes(D)[1]):
        ak[k] -= s[k]
    _rnea(D, qk, qd, ak, _NONE, tau, R, p, v, a, f)
    return True


@entry(TABLE, V_RO, V, V, data_table=False)
def gravity_root_one(D, q, tau, W):
    nv = int(D[D.shape[0] - 1, NQ])
    if bad_sizes(D, q) or tau.shape[0] != nv:
        return 1
    W = work_buffer(D, W, nv)
    if W.shape[0] == 0:
        return 1
    if not _gravity_root(D, q, tau, W):
        return 2
    return 0 if finite1(tau) and finite1(q) else 2


@inline
def _gravity_root(D, q, tau, W):
    """rnea(q, 0, 0): the base acceleration -g in the base frame is the
    kernels' base row (the root chain at zero has identity transforms), so
    only it propagates, as in the fixed-base gravity kernel."""
    nv = tau.shape[0]
    R, p, _, a, f, qk = work_rnea(W, nbodies(D) + 1, nv)
    s = np.empty(6)
    if not root_state(D, q, q, qk, s, False):
        return False
    n = nbodies(D)
    for k in range(3):                               # a_0 = (0; -g_base) (Handbook eq. 3.39)
        a[n, k] = 0.0
        a[n, 3 + k] = -s[k]
    if root_sizes(D)[1] == 3:                        # planar: the normal part, as the kernels apply it
        a[n, 5] = -D[n, 2]
    _gravity_from_base(D, qk, tau, R, p, a, f)
    return True


@entry(TABLE, V_RO, MAT, V, data_table=False)
def crba_root_one(D, q, M, W):
    nv = int(D[D.shape[0] - 1, NQ])
    if bad_sizes(D, q) or M.shape[0] != nv or M.shape[1] != nv:
        return 1
    W = work_buffer(D, W, nv)
    if W.shape[0] == 0:
        return 1
    if not _mass_root(D, q, M, W):
        return 2
    return 0 if finite1(q) and finite2(M) else 2


@inline
def _mass_root(D, q, M, W):
    nv = M.shape[0]
    R, p, IC, _ = work_crba(W, nbodies(D) + 1, nv)
    qk, s = np.empty(nv), np.empty(6)
    if not root_state(D, q, q, qk, s, False):
        return False
    _crba(D, qk, M, R, p, IC, root_sizes(D)[1])
    return True


@entry(TABLE, V_RO, V_RO, V_RO, V, V, data_table=False)
def aba_root_one(D, q, qd, tau, qdd, W):
    nv = int(D[D.shape[0] - 1, NQ])
    if bad_sizes(D, q) or qd.shape[0] != nv or tau.shape[0] != nv or qdd.shape[0] != nv:
        return 1
    W = work_buffer(D, W, nv)
    if W.shape[0] == 0:
        return 1
    if not _aba_root(D, q, qd, tau, qdd, W):
        return 2
    return 0 if finite1(qdd) and finite1(q) and finite1(qd) and finite1(tau) else 2


@inline
def _aba_root(D, q, qd, tau, qdd, W):
    return _aba_root_w(D, q, qd, tau, qdd, work(W, nbodies(D) + 1, qd.shape[0]), np.empty(6))


@inline
def _aba_root_w(D, q, qd, tau, qdd, w, s):
    """With the work arrays w (the ABA leaves w.zero alone: it holds the
    kernels' coordinates) and s (6,) scratch: :func:`_aba_root_joint`, then
    the root's share of gravity g_root added."""
    nv = qd.shape[0]
    nr = root_sizes(D)[1]
    qk = w.zero
    if not root_state(D, q, qd, qk, s, False):
        return False
    if nbodies(D) != nv:            # mimic joints: the Python path (CRBA + Cholesky, aba.FD_CRB)
        return False
    if not _aba_root_joint(D, qk, qd, tau, qdd, w, nr):
        return False
    for k in range(nr):
        qdd[k] += s[k]
    return True


@inline
def _aba_root_joint(D, qk, qd, tau, qdd, w, nr):
    """The ABA with the root as one multi-DOF joint (Featherstone, *Rigid
    Body Dynamics Algorithms*, ch. 9 for the 6-DOF joint; the Handbook's
    joint models, sec. 2.3.4, 3.4.4, and its ABA, sec. 3.5.2), gravity-free
    in the root's plane. The base body b = nr - 1 (the last of the root
    chain, whose transforms are the identity) moves with a_b = a_0 + S qdd_r,
    S the root's nr columns of the identity (no velocity-product term: S is
    constant and the world does not move), so the inward pass stops at the
    joints and ``S^T IA_b S qdd_r = tau_r - S^T (pA_b + IA_b a_0)`` gives
    the root's accelerations (an nr x nr Cholesky solve). False if that
    matrix is not positive definite (the Python path says why)."""
    b, n = nr - 1, nbodies(D)
    _aba_velocities(D, qk, qd, _NONE, w)
    w.c[b, :] = 0.0
    _aba_inertias(D, tau, w, nr)
    IA, pA, a = w.IA, w.pA, w.a
    set_base_acceleration(D, a)
    for k in range(nr):                           # IA[n], pA[n] (scratch): S^T IA_b S and the right side
        ck = root_component(nr, k)
        r = tau[k] - pA[b, ck]
        for c in range(6):
            r -= IA[b, ck, c] * a[n, c]
        pA[n, k] = r
        for j in range(nr):
            IA[n, k, j] = IA[b, ck, root_component(nr, j)]
    if not cholesky_solve(IA, pA, n, nr):
        return False
    for c in range(6):
        a[b, c] = a[n, c]
    for k in range(nr):
        a[b, root_component(nr, k)] += pA[n, k]
        qdd[k] = pA[n, k]
    _aba_accelerations(D, qdd, w, nr)
    return True


@inline
def root_component(nr, k):
    """The spatial component (Featherstone's order: angular, then linear) of
    the root's coordinate k: floating (vx vy vz wx wy wz), planar (vx vy wz)."""
    if k < 2 or (nr == 6 and k == 2):
        return 3 + k
    return k - 3 if nr == 6 else 2


@inline
def cholesky_solve(A, x, i, m):
    """x[i, :m] <- A[i, :m, :m]^-1 x[i, :m] for a symmetric positive definite
    A[i, :m, :m], whose lower triangle becomes its Cholesky factor. False if
    it is not positive definite."""
    for j in range(m):
        s = A[i, j, j]
        for k in range(j):
            s -= A[i, j, k] * A[i, j, k]
        if not s > 0.0:
            return False
        A[i, j, j] = np.sqrt(s)
        for r in range(j + 1, m):
            t = A[i, r, j]
            for k in range(j):
                t -= A[i, r, k] * A[i, j, k]
            A[i, r, j] = t / A[i, j, j]
    for r in range(m):                            # L y = x
        t = x[i, r]
        for k in range(r):
            t -= A[i, r, k] * x[i, k]
        x[i, r] = t / A[i, r, r]
    for r in range(m - 1, -1, -1):                # L^T z = y
        t = x[i, r]
        for k in range(r + 1, m):
            t -= A[i, k, r] * x[i, k]
        x[i, r] = t / A[i, r, r]
    return True


# --- batches: (B, nq) configurations, (B, nv) the rest; on all threads ---------------------
# Each returns False when a state's quaternion is not unit or a value is not
# finite (the Python path then says which).
@jit
def rnea_root_states(D, Q, QD, QDD, TAU, W):
    ok = True
    for b in range(Q.shape[0]):
        ok &= _rnea_root(D, Q[b], QD[b], QDD[b], TAU[b], W)
    return ok


@parallel
def rnea_root_batch(D, Q, QD, QDD, TAU):
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), QD.shape[1])
    ok = np.ones(ranges.shape[0], dtype=np.bool_)
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        ok[k] = rnea_root_states(D, Q[lo:hi], QD[lo:hi], QDD[lo:hi], TAU[lo:hi], np.empty(size))
    return ok.all() and all_finite(TAU) and all_finite(Q) and all_finite(QD) and all_finite(QDD)


@jit
def gravity_root_states(D, Q, TAU, W):
    ok = True
    for b in range(Q.shape[0]):
        ok &= _gravity_root(D, Q[b], TAU[b], W)
    return ok


@parallel
def gravity_root_batch(D, Q, TAU):
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), TAU.shape[1])
    ok = np.ones(ranges.shape[0], dtype=np.bool_)
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        ok[k] = gravity_root_states(D, Q[lo:hi], TAU[lo:hi], np.empty(size))
    return ok.all() and all_finite(TAU) and all_finite(Q)


@jit
def mass_root_states(D, Q, M, W):
    ok = True
    for b in range(Q.shape[0]):
        ok &= _mass_root(D, Q[b], M[b], W)
    return ok


@parallel
def mass_root_batch(D, Q, M):
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), M.shape[1])
    ok = np.ones(ranges.shape[0], dtype=np.bool_)
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        ok[k] = mass_root_states(D, Q[lo:hi], M[lo:hi], np.empty(size))
    return ok.all() and all_finite(M) and all_finite(Q)


@jit
def aba_root_states(D, Q, QD, TAU, QDD, W):
    ok = True
    w, s = work(W, nbodies(D) + 1, QD.shape[1]), np.empty(6)
    for b in range(Q.shape[0]):
        ok &= _aba_root_w(D, Q[b], QD[b], TAU[b], QDD[b], w, s)
    return ok


@parallel
def aba_root_batch(D, Q, QD, TAU, QDD):
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), QD.shape[1])
    ok = np.ones(ranges.shape[0], dtype=np.bool_)
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        ok[k] = aba_root_states(D, Q[lo:hi], QD[lo:hi], TAU[lo:hi], QDD[lo:hi], np.empty(size))
    return ok.all() and all_finite(QDD) and all_finite(Q) and all_finite(QD) and all_finite(TAU)
