"""Composite-rigid-body algorithm: the joint-space mass matrix M(q).

Featherstone, *Rigid Body Dynamics Algorithms*, sec. 6.2 (Table 6.2);
Handbook of Robotics, sec. 3.6 (Algorithm 3.3). Composite inertias are
kept as 13 parameters (m, h = m c, I_O) and moved to the parent frame with
the parallel-axis rule; each column is the composite inertia's force
``F = IC_i S_i`` carried down the chain of ancestors.
"""
import numba as nb
import numpy as np

from . import checks
from .kernels import (MAT, V_RO, all_finite, bad_length, finite1, force_to_parent_add, inertia_times,
                   inertia_to_parent_add, jit, joint_force, joint_pose, joint_position, nbodies)
from ..model.model import AXIS, JTYPE, MASS, PARENT, PRISMATIC, QIDX, QMUL


@jit
def _crba(D, q, M, R, p, IC, F):
    """One state. IC (nb, 13) composite inertias; F (2, 6) scratch forces."""
    n = nbodies(D)
    for i in range(n):
        joint_pose(D, i, joint_position(D, i, q), R, p)
        for c in range(13):
            IC[i, c] = D[i, MASS + c]
    M[:, :] = 0.0
    for i in range(n - 1, -1, -1):
        for c in range(6):                                # F = IC_i S_i
            F[1, c] = 0.0
        k = 3 if D[i, JTYPE] == PRISMATIC else 0
        F[1, k], F[1, k + 1], F[1, k + 2] = D[i, AXIS], D[i, AXIS + 1], D[i, AXIS + 2]
        inertia_times(IC, i, 0, F, 1, F, 0)
        qi, mi = int(D[i, QIDX]), D[i, QMUL]
        M[qi, qi] += mi * mi * joint_force(D, i, F, 0)    # M_ii = S_i^T F
        j, s = i, 0
        while D[j, PARENT] >= 0:                          # F = X_j^T F; M_ij = S_j^T F
            for c in range(6):
                F[1 - s, c] = 0.0
            force_to_parent_add(R, p, j, F, s, F, 1 - s)  # ping-pong between the two rows
            s = 1 - s
            j = int(D[j, PARENT])
            Mij = mi * D[j, QMUL] * joint_force(D, j, F, s)
            qj = int(D[j, QIDX])
            M[qi, qj] += Mij
            M[qj, qi] += Mij
        if D[i, PARENT] >= 0:                             # IC_parent += X_i^T IC_i X_i
            inertia_to_parent_add(R, p, i, IC, i, 0, IC, int(D[i, PARENT]))


@jit
def crba_kernel(D, Q, M):
    """(B, nq) -> M (B, nq, nq); False if not finite."""
    n = nbodies(D)
    R, p, IC, F = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 13)), np.empty((2, 6))
    for b in range(Q.shape[0]):
        _crba(D, Q[b], M[b], R, p, IC, F)
    return all_finite(M) and all_finite(Q)


@nb.njit(nb.int64(MAT, V_RO, MAT), cache=True, nogil=True)
def crba_one(D, q, M):
    if bad_length(D, q):
        return 1
    n = nbodies(D)
    R, p, IC, F = np.empty((n, 3, 3)), np.empty((n, 3)), np.empty((n, 13)), np.empty((2, 6))
    _crba(D, q, M, R, p, IC, F)
    return 0 if finite1(q) and all_finite(M) else 2


def mass_matrix(model, q):
    """Joint-space inertia matrix M(q) by the composite-rigid-body algorithm.

    Args:
        q: (..., nq) joint positions.
    Returns:
        (..., nq, nq) symmetric positive definite matrix [kg m^2, kg m, kg],
        rows and columns in ``model.joint_names`` order. Mimic joints are
        folded in: ``M = G^T M_bodies G``.
    """
    if checks.single(q):
        M = np.empty((model.nq, model.nq))
        try:
            if crba_one(model._data, q, M) == 0:
                return M
        except TypeError:
            pass
    shape, (Q,) = checks.batch(model, q=q)
    M = np.empty((Q.shape[0], model.nq, model.nq))
    if not crba_kernel(model._data, Q, M):
        checks.raise_not_finite(q=q)
    return M.reshape(shape + (model.nq, model.nq))
