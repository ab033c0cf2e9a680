"""Composite-rigid-body algorithm: the joint-space mass matrix M(q).

Featherstone, *Rigid Body Dynamics Algorithms*, sec. 6.2 (Table 6.2);
Handbook of Robotics, sec. 3.6 (Algorithm 3.3). Composite inertias are
kept as 13 parameters (m, h = m c, I_O) and moved to the parent frame with
the parallel-axis rule; each column is the composite inertia's force
``F = IC_i S_i`` carried down the chain of ancestors.
"""
import numpy as np

from . import _checks
from ._jit import all_finite, force_to_parent_add, inertia_times, jit, joint_pose, joint_position, inertia_to_parent_add
from .model import AXIS, JTYPE, MASS, PARENT, PRISMATIC, QIDX, QMUL


@jit
def _crba(ints, reals, q, M, R, p, IC, F, Fp, S, tmp):
    nb = ints.shape[0]
    for i in range(nb):
        joint_pose(reals, i, ints[i, JTYPE], joint_position(ints, reals, i, q), R[i], p[i])
        IC[i, :] = reals[i, MASS:MASS + 13]
    M[:, :] = 0.0
    for i in range(nb - 1, -1, -1):
        S[:] = 0.0
        k = 0 if ints[i, JTYPE] != PRISMATIC else 3
        S[k], S[k + 1], S[k + 2] = reals[i, AXIS], reals[i, AXIS + 1], reals[i, AXIS + 2]
        inertia_times(IC[i], S, F)                        # F = IC_i S_i
        qi, mi = ints[i, QIDX], reals[i, QMUL]
        M[qi, qi] += mi * mi * (S[k] * F[k] + S[k + 1] * F[k + 1] + S[k + 2] * F[k + 2])
        j = i
        while ints[j, PARENT] >= 0:                       # F = X_j^T F; M_ij = S_j^T F
            Fp[:] = 0.0
            force_to_parent_add(R[j], p[j], F, Fp)
            F[:] = Fp
            j = ints[j, PARENT]
            kj = 0 if ints[j, JTYPE] != PRISMATIC else 3
            Mij = mi * reals[j, QMUL] * (reals[j, AXIS] * F[kj] + reals[j, AXIS + 1] * F[kj + 1]
                                         + reals[j, AXIS + 2] * F[kj + 2])
            qj = ints[j, QIDX]
            M[qi, qj] += Mij
            M[qj, qi] += Mij
        if ints[i, PARENT] >= 0:                          # IC_parent += X^T IC_i X
            inertia_to_parent_add(R[i], p[i], IC[i], IC[ints[i, PARENT]], tmp)


@jit
def crba_kernel(ints, reals, Q, M):
    """(B, nq) -> M (B, nq, nq); False if not finite."""
    nb = ints.shape[0]
    R, p, IC = np.empty((nb, 3, 3)), np.empty((nb, 3)), np.empty((nb, 13))
    F, Fp, S, tmp = np.empty(6), np.empty(6), np.empty(6), np.empty(12)
    for b in range(Q.shape[0]):
        _crba(ints, reals, Q[b], M[b], R, p, IC, F, Fp, S, tmp)
    return all_finite(M) and all_finite(Q)


@jit
def crba_one(ints, reals, q, M):
    nb = ints.shape[0]
    R, p, IC = np.empty((nb, 3, 3)), np.empty((nb, 3)), np.empty((nb, 13))
    F, Fp, S, tmp = np.empty(6), np.empty(6), np.empty(6), np.empty(12)
    _crba(ints, reals, q, M, R, p, IC, F, Fp, S, tmp)
    return all_finite(M) and all_finite(q)


def mass_matrix(model, q):
    """Joint-space inertia matrix M(q) by the composite-rigid-body algorithm.

    Args:
        q: (..., nq) joint positions.
    Returns:
        (..., nq, nq) symmetric positive definite matrix [kg m^2, kg m, kg],
        rows and columns in ``model.joint_names`` order. Mimic joints are
        folded in: ``M = G^T M_bodies G``.
    """
    x = _checks.vector(model, q)
    if x is not None:
        M = np.empty((model.nq, model.nq))
        if not crba_one(model._ints, model._reals, x, M):
            _checks.raise_not_finite(q=q)
        return M
    shape, (Q,) = _checks.batch(model, q=q)
    M = np.empty((Q.shape[0], model.nq, model.nq))
    if not crba_kernel(model._ints, model._reals, Q, M):
        _checks.raise_not_finite(q=q)
    return M.reshape(shape + (model.nq, model.nq))
