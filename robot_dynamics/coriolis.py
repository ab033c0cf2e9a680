"""The Coriolis matrix C(q, qd) with ``C qd = h - g`` and ``Mdot - 2C`` skew.

Built in the base frame from the body-level factorisation
``C = sum_k J_k^T (I_k Jdot_k + B_k(v_k) J_k)`` with
``B(v) = 1/2 [(v x*) I - I (v x) + (I v) xbar]`` and ``(f xbar) y = y x* f``
(Echeandia & Wensing 2021; the Christoffel-consistent C of Handbook
sec. 3.3 and of Craig eq. 6.62). In the base frame the column of J_k for an
ancestor joint j is its axis ``S_j`` and its derivative is ``v_j x S_j``;
summing over subtrees gives ``C_ij = S_i . (IC_j Sdot_j + BC_j S_j)`` for
i ancestor of (or equal to) j and ``C_ji = S_j . (IC_j Sdot_i + BC_j S_i)``.
"""
import numpy as np

from . import _checks
from ._jit import all_finite, inertia_matrix, inertia_to_parent_add, jit, joint_coordinate, world_poses
from .model import AXIS, JTYPE, MASS, PARENT, PRISMATIC, QIDX, QMUL


@jit
def _coriolis(ints, reals, q, qd, C, R, p, Rw, pw, S, Sd, v, IC, BC, P, tmp, A, B):
    nb = ints.shape[0]
    world_poses(ints, reals, q, R, p, Rw, pw)
    for i in range(nb):
        a = np.empty(3)
        for r in range(3):
            a[r] = Rw[i, r, 0] * reals[i, AXIS] + Rw[i, r, 1] * reals[i, AXIS + 1] + Rw[i, r, 2] * reals[i, AXIS + 2]
        if ints[i, JTYPE] == PRISMATIC:                  # S = (0, a)
            S[i, 0], S[i, 1], S[i, 2], S[i, 3], S[i, 4], S[i, 5] = 0.0, 0.0, 0.0, a[0], a[1], a[2]
        else:                                            # S = (a, p x a)
            S[i, 0], S[i, 1], S[i, 2] = a[0], a[1], a[2]
            S[i, 3] = pw[i, 1] * a[2] - pw[i, 2] * a[1]
            S[i, 4] = pw[i, 2] * a[0] - pw[i, 0] * a[2]
            S[i, 5] = pw[i, 0] * a[1] - pw[i, 1] * a[0]
        par = ints[i, PARENT]
        qdi = joint_coordinate(ints, reals, i, qd)
        for r in range(6):
            v[i, r] = (v[par, r] if par >= 0 else 0.0) + S[i, r] * qdi
        _cross_motion(v[i], S[i], Sd[i])                # Sdot_i = v_i x S_i
        P[:] = 0.0                                       # world inertia of body i
        inertia_to_parent_add(Rw[i], pw[i], reals[i, MASS:MASS + 13], P, tmp)
        inertia_matrix(P, IC[i])
        _body_coriolis(IC[i], v[i], BC[i], A, B)
    for i in range(nb - 1, -1, -1):                      # composites over subtrees
        par = ints[i, PARENT]
        if par >= 0:
            for r in range(6):
                for c in range(6):
                    IC[par, r, c] += IC[i, r, c]
                    BC[par, r, c] += BC[i, r, c]
    C[:, :] = 0.0
    F1, F2, F3 = np.empty(6), np.empty(6), np.empty(6)
    for j in range(nb):
        for r in range(6):
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            for k in range(6):
                s1 += IC[j, r, k] * Sd[j, k] + BC[j, r, k] * S[j, k]
                s2 += IC[j, r, k] * S[j, k]
                s3 += BC[j, k, r] * S[j, k]
            F1[r], F2[r], F3[r] = s1, s2, s3
        qj, mj = ints[j, QIDX], reals[j, QMUL]
        i = j
        while i >= 0:
            qi, mi = ints[i, QIDX], reals[i, QMUL]
            cij = 0.0
            for r in range(6):
                cij += S[i, r] * F1[r]
            C[qi, qj] += mi * mj * cij                   # C_ij, i ancestor of or equal to j
            if i != j:
                cji = 0.0
                for r in range(6):
                    cji += F2[r] * Sd[i, r] + F3[r] * S[i, r]
                C[qj, qi] += mi * mj * cji               # C_ji
            i = ints[i, PARENT]


@jit
def _cross_motion(v, m, out):
    """out = v x m = (w x mw, w x mv + v x mw)."""
    w0, w1, w2, v0, v1, v2 = v[0], v[1], v[2], v[3], v[4], v[5]
    out[0] = w1 * m[2] - w2 * m[1]
    out[1] = w2 * m[0] - w0 * m[2]
    out[2] = w0 * m[1] - w1 * m[0]
    out[3] = w1 * m[5] - w2 * m[4] + v1 * m[2] - v2 * m[1]
    out[4] = w2 * m[3] - w0 * m[5] + v2 * m[0] - v0 * m[2]
    out[5] = w0 * m[4] - w1 * m[3] + v0 * m[1] - v1 * m[0]


@jit
def _body_coriolis(I, v, out, A, B):
    """out = B(v) = 1/2 [(v x*) I - I (v x) + (I v) xbar] (all 6x6)."""
    A[:, :] = 0.0                                        # A = (v x) = [[w x, 0], [v x, w x]]
    w0, w1, w2, v0, v1, v2 = v[0], v[1], v[2], v[3], v[4], v[5]
    for o in (0, 3):
        A[o + 0, o + 1], A[o + 0, o + 2], A[o + 1, o + 0] = -w2, w1, w2
        A[o + 1, o + 2], A[o + 2, o + 0], A[o + 2, o + 1] = -w0, -w1, w0
    A[3, 1], A[3, 2], A[4, 0], A[4, 2], A[5, 0], A[5, 1] = -v2, v1, v2, -v0, -v1, v0
    h = np.empty(6)                                      # I v
    for r in range(6):
        s = 0.0
        for k in range(6):
            s += I[r, k] * v[k]
        h[r] = s
    B[:, :] = 0.0                                        # (I v) xbar = [[-(n x), -(f x)], [-(f x), 0]]
    n0, n1, n2, f0, f1, f2 = h[0], h[1], h[2], h[3], h[4], h[5]
    for (ro, co, x0, x1, x2) in ((0, 0, n0, n1, n2), (0, 3, f0, f1, f2), (3, 0, f0, f1, f2)):
        B[ro + 0, co + 1], B[ro + 0, co + 2], B[ro + 1, co + 0] = x2, -x1, -x2
        B[ro + 1, co + 2], B[ro + 2, co + 0], B[ro + 2, co + 1] = x0, x1, -x0
    for r in range(6):                                   # (v x*) = -(v x)^T
        for c in range(6):
            s = B[r, c]
            for k in range(6):
                s += -A[k, r] * I[k, c] - I[r, k] * A[k, c]
            out[r, c] = 0.5 * s


@jit
def coriolis_kernel(ints, reals, Q, QD, C):
    nb = ints.shape[0]
    R, p, Rw, pw = np.empty((nb, 3, 3)), np.empty((nb, 3)), np.empty((nb, 3, 3)), np.empty((nb, 3))
    S, Sd, v = np.empty((nb, 6)), np.empty((nb, 6)), np.empty((nb, 6))
    IC, BC = np.empty((nb, 6, 6)), np.empty((nb, 6, 6))
    P, tmp, A, B = np.empty(13), np.empty(12), np.empty((6, 6)), np.empty((6, 6))
    for b in range(Q.shape[0]):
        _coriolis(ints, reals, Q[b], QD[b], C[b], R, p, Rw, pw, S, Sd, v, IC, BC, P, tmp, A, B)
    return all_finite(C) and all_finite(Q) and all_finite(QD)


def coriolis_matrix(model, q, qd):
    """Coriolis/centrifugal matrix C(q, qd) [N m s/rad].

    ``C(q, qd) qd = nonlinear_effects(q, qd) - gravity_torques(q)`` and
    ``dM/dt - 2 C`` is skew-symmetric (the passivity property controllers
    rely on). C is built from the Christoffel-consistent body factorisation
    (module docstring).

    Args:
        q, qd: (..., nq) joint positions and velocities.
    Returns:
        (..., nq, nq).
    """
    shape, (Q, QD) = _checks.batch(model, q=q, qd=qd)
    C = np.empty((Q.shape[0], model.nq, model.nq))
    if not coriolis_kernel(model._ints, model._reals, Q, QD, C):
        _checks.raise_not_finite(q=q, qd=qd)
    return C.reshape(shape + (model.nq, model.nq))
