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
import numba as nb
import numpy as np

from . import floating
from .dispatch import Algorithm, route, run
from .kernels import (chunks, parallel, work, work_size, all_finite, I_matrix, XT_I_X_add, jit, joint_coordinate, nbodies,
                   world_poses)
from .crba import CRBA
from ..model.packed import AXIS, JTYPE, MASS, PARENT, PRISMATIC, QIDX, QMUL


@jit
def _coriolis(D, q, qd, C, R, p, Rw, pw, S, Sd, v, P, IC, BC, A, B, F):
    n = nbodies(D)
    world_poses(D, q, R, p, Rw, pw)
    for i in range(n):
        a0 = Rw[i, 0, 0] * D[i, AXIS] + Rw[i, 0, 1] * D[i, AXIS + 1] + Rw[i, 0, 2] * D[i, AXIS + 2]
        a1 = Rw[i, 1, 0] * D[i, AXIS] + Rw[i, 1, 1] * D[i, AXIS + 1] + Rw[i, 1, 2] * D[i, AXIS + 2]
        a2 = Rw[i, 2, 0] * D[i, AXIS] + Rw[i, 2, 1] * D[i, AXIS + 1] + Rw[i, 2, 2] * D[i, AXIS + 2]
        if D[i, JTYPE] == PRISMATIC:                     # S = (0, a)
            S[i, 0], S[i, 1], S[i, 2], S[i, 3], S[i, 4], S[i, 5] = 0.0, 0.0, 0.0, a0, a1, a2
        else:                                            # S = (a, p x a)
            S[i, 0], S[i, 1], S[i, 2] = a0, a1, a2
            S[i, 3] = pw[i, 1] * a2 - pw[i, 2] * a1
            S[i, 4] = pw[i, 2] * a0 - pw[i, 0] * a2
            S[i, 5] = pw[i, 0] * a1 - pw[i, 1] * a0
        par = int(D[i, PARENT])
        qdi = joint_coordinate(D, i, qd)
        for r in range(6):
            v[i, r] = (v[par, r] if par >= 0 else 0.0) + S[i, r] * qdi
        _cross_motion(v, i, S, Sd)                       # Sdot_i = v_i x S_i
        P[i, :] = 0.0                                    # inertia of body i in the base frame
        XT_I_X_add(Rw, pw, i, D, i, MASS, P, i)
        I_matrix(P, i, 0, IC, i)
        _body_coriolis(IC[i], v[i], BC[i], A, B)
    for i in range(n - 1, -1, -1):                       # composites over subtrees
        par = int(D[i, PARENT])
        if par >= 0:
            for r in range(6):
                for c in range(6):
                    IC[par, r, c] += IC[i, r, c]
                    BC[par, r, c] += BC[i, r, c]
    C[:, :] = 0.0
    for j in range(n):
        for r in range(6):
            s1 = 0.0
            s2 = 0.0
            s3 = 0.0
            for k in range(6):
                s1 += IC[j, r, k] * Sd[j, k] + BC[j, r, k] * S[j, k]
                s2 += IC[j, r, k] * S[j, k]
                s3 += BC[j, k, r] * S[j, k]
            F[0, r], F[1, r], F[2, r] = s1, s2, s3
        qj, mj = int(D[j, QIDX]), D[j, QMUL]
        i = j
        while i >= 0:
            qi, mi = int(D[i, QIDX]), D[i, QMUL]
            cij = 0.0
            for r in range(6):
                cij += S[i, r] * F[0, r]
            C[qi, qj] += mi * mj * cij                   # C_ij, i ancestor of or equal to j
            if i != j:
                cji = 0.0
                for r in range(6):
                    cji += F[1, r] * Sd[i, r] + F[2, r] * S[i, r]
                C[qj, qi] += mi * mj * cji               # C_ji
            i = int(D[i, PARENT])


@jit
def _cross_motion(v, i, m, out):
    """out[i] = v[i] x m[i] = (w x mw, w x mv + v x mw)."""
    w0, w1, w2, v0, v1, v2 = v[i, 0], v[i, 1], v[i, 2], v[i, 3], v[i, 4], v[i, 5]
    out[i, 0] = w1 * m[i, 2] - w2 * m[i, 1]
    out[i, 1] = w2 * m[i, 0] - w0 * m[i, 2]
    out[i, 2] = w0 * m[i, 1] - w1 * m[i, 0]
    out[i, 3] = w1 * m[i, 5] - w2 * m[i, 4] + v1 * m[i, 2] - v2 * m[i, 1]
    out[i, 4] = w2 * m[i, 3] - w0 * m[i, 5] + v2 * m[i, 0] - v0 * m[i, 2]
    out[i, 5] = w0 * m[i, 4] - w1 * m[i, 3] + v0 * m[i, 1] - v1 * m[i, 0]


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
def coriolis_states(D, Q, QD, C, W):
    w = work(W, nbodies(D) + 1, Q.shape[1])
    for b in range(Q.shape[0]):
        _coriolis(D, Q[b], QD[b], C[b], w.R, w.p, w.Rw, w.pw, w.S, w.Sd, w.v, w.IC, w.IA, w.BC, w.X, w.T, w.F)


@parallel
def coriolis_batch(D, Q, QD, C):
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), Q.shape[1])
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        coriolis_states(D, Q[lo:hi], QD[lo:hi], C[lo:hi], np.empty(size))
    return all_finite(C) and all_finite(Q) and all_finite(QD)


# --- the Python path on a floating or planar base (:mod:`.floating`) -----------------------

def _coriolis_on_root(model, x, f_ext, data, out, tail=None, extra=None):
    """The chain's C with its root columns corrected: the chain's Jacobians
    change with the root's virtual angles, a 6-DOF joint's do not. In the body
    factorisation ``C = sum_i J_i^T (I_i Jdot_i + (v_i x* I_i - I_i v_i x) J_i)``
    that changes only ``Jdot`` of the root columns, by the same matrix for
    every body: ``Jdot_chain - Jdot_joint = X_i<-base D(v)``, column k of D
    ``-v_after_k x S_k`` (v_after_k the root velocity of the chain's joints
    after k). So ``C = C_chain - M[:, :nr] D(v)``; ``D(v) v_root = b(v)``."""
    qk, _, _, (v,) = floating.states(model, x[0], qd=x[1])
    Cc = run(CORIOLIS, model, (qk, v), data, out)
    M = run(CRBA, model, (qk,), data)
    nr = model.root_nv
    Cc[..., :, :nr] -= M[..., :, :nr] @ floating.root_jdot(model, v)
    return Cc


CORIOLIS = Algorithm(None, coriolis_batch, ("q", "qd"), "matrix", serial=coriolis_states,
                     on_root=_coriolis_on_root)


def coriolis_matrix(model, q, qd, *, data=None, out=None):
    """Coriolis/centrifugal matrix C(q, qd) [N m s/rad].

    ``C(q, qd) qd = nonlinear_effects(q, qd) - gravity_torques(q)`` and
    ``dM/dt - 2 C`` is skew-symmetric (the passivity property controllers
    rely on). C is built from the Christoffel-consistent body factorisation
    (module docstring).

    Args:
        q, qd: (..., nq) joint positions and velocities.
        data, out: as in :func:`~robot_dynamics.rnea` (out: (..., nq, nq)).
    Returns:
        (..., nq, nq).
    """
    return route(CORIOLIS, model, (q, qd), data=data, out=out)
