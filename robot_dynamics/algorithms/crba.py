"""Composite-rigid-body algorithm: the joint-space mass matrix M(q).

Featherstone, *Rigid Body Dynamics Algorithms*, sec. 6.2 (Table 6.2);
Handbook of Robotics, sec. 3.6 (Algorithm 3.3). Composite inertias are
kept as 13 parameters (m, h = m c, I_O) and moved to the parent frame with
the parallel-axis rule; each column is the composite inertia's force
``F = IC_i S_i`` carried down the chain of ancestors.
"""
import numba as nb
import numpy as np

from . import floating
from .dispatch import Algorithm, chain, public
from .kernels import (MAT, TABLE, entry, V, V_RO, chunks, work_buffer, parallel, work, work_crba, work_size, all_finite,
                      bad_length, finite1, finite2, I_S, inline, jit, jcalc, joint_position, nbodies, ST_force6,
                      XT_force, XT_I_X_add)
from ..model.packed import ARMATURE, MASS, NQ, PARENT, QIDX, QMUL
from .root_kernels import bad_sizes, root_sizes, root_state


@inline
def _crba(D, q, M, R, p, IC, nr):
    """One state. IC (nb, 13) composite inertias. With nr > 0 the first nr
    bodies are a floating or planar root's chain at zero, whose transforms
    are the identity: forces and inertias cross them unchanged, and each of
    their columns is one component of the force (a 6-DOF joint's S is the
    identity, :mod:`.root_kernels`)."""
    n = nbodies(D)
    for i in range(n):
        jcalc(D, i, joint_position(D, i, q), R, p)
        for c in range(13):
            IC[i, c] = D[i, MASS + c]
    M[:, :] = 0.0
    for i in range(n - 1, nr - 1, -1):
        n0, n1, n2, f0, f1, f2 = I_S(D, i, IC, i)         # F = IC_i S_i
        qi, mi = int(D[i, QIDX]), D[i, QMUL]
        M[qi, qi] += mi * mi * (ST_force6(D, i, n0, n1, n2, f0, f1, f2) + D[i, ARMATURE])   # M_ii = S_i^T F + I_a
        j = i
        while D[j, PARENT] >= nr:                         # F = X_j^T F; M_ij = S_j^T F
            n0, n1, n2, f0, f1, f2 = XT_force(R, p, j, n0, n1, n2, f0, f1, f2)
            j = int(D[j, PARENT])
            Mij = mi * D[j, QMUL] * ST_force6(D, j, n0, n1, n2, f0, f1, f2)
            qj = int(D[j, QIDX])
            M[qi, qj] += Mij
            M[qj, qi] += Mij
        if nr > 0:                                        # into the base frame: the root's columns
            n0, n1, n2, f0, f1, f2 = XT_force(R, p, j, n0, n1, n2, f0, f1, f2)
            _root_columns(D, nr, qi, mi, n0, n1, n2, f0, f1, f2, M)
        if D[i, PARENT] >= 0:                             # IC_parent += X_i^T IC_i X_i
            XT_I_X_add(R, p, i, IC, i, 0, IC, int(D[i, PARENT]))
    for k in range(nr):                                   # the root block: S_l^T IC_base S_k
        n0, n1, n2, f0, f1, f2 = I_S(D, k, IC, nr - 1)
        for l in range(k, nr):
            M[k, l] = M[l, k] = ST_force6(D, l, n0, n1, n2, f0, f1, f2)


@inline
def _root_columns(D, nr, qi, mi, n0, n1, n2, f0, f1, f2, M):
    """M[qi, k] = M[k, qi] += mi S_k^T F for the root's joints k (F in the base frame)."""
    for k in range(nr):
        Mik = mi * ST_force6(D, k, n0, n1, n2, f0, f1, f2)
        M[qi, k] += Mik
        M[k, qi] += Mik


@jit
def crba_states(D, Q, M, W):
    w = work(W, nbodies(D) + 1, Q.shape[1])
    for b in range(Q.shape[0]):
        _crba(D, Q[b], M[b], w.R, w.p, w.IC, 0)


@parallel
def crba_batch(D, Q, M):
    """(B, nq) -> M (B, nq, nq) on all threads; False if not finite."""
    ranges, size = chunks(Q.shape[0]), work_size(nbodies(D), Q.shape[1])
    for k in nb.prange(ranges.shape[0]):
        lo, hi = ranges[k, 0], ranges[k, 1]
        crba_states(D, Q[lo:hi], M[lo:hi], np.empty(size))
    return all_finite(M) and all_finite(Q)


@entry(TABLE, V_RO, MAT, V)
def crba_one(D, q, M, W):
    if bad_length(D, q) or M.shape[0] != q.shape[0] or M.shape[1] != q.shape[0]:
        return 1
    W = work_buffer(D, W, q.shape[0])
    if W.shape[0] == 0:
        return 1
    R, p, IC, _ = work_crba(W, nbodies(D) + 1, q.shape[0])
    _crba(D, q, M, R, p, IC, 0)
    return 0 if finite1(q) and finite2(M) else 2


# --- on a floating or planar base (the root's compiled variants; robot_dynamics.algorithms.root_kernels) ---
# Batches return False when a state's quaternion is not unit or a value is
# not finite (the Python path then says which).
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


def _mass_on_root(model, x, f_ext, data, out, tail=None, extra=None):
    """The Python path on a floating or planar base (:mod:`.floating`): the chain's M."""
    qk, _, _, _ = floating.states(model, x[0])
    return chain(CRBA, model, (qk,), None, data, out)


CRBA = Algorithm(crba_one, crba_batch, ("q",), "matrix", root_one=crba_root_one, root_batch=mass_root_batch,
                 on_root=_mass_on_root)


@public(CRBA)
def mass_matrix(model, q, *, data=None, out=None):
    """Joint-space inertia matrix M(q) by the composite-rigid-body algorithm.

    Args:
        q: (..., nq) joint positions.
        data: optional :class:`~robot_dynamics.Data`; out: optional
            (..., nq, nq) float64 array for the result.
    Returns:
        (..., nq, nq) symmetric positive definite matrix [kg m^2, kg m, kg],
        rows and columns in ``model.joint_names`` order. Mimic joints are
        folded in: ``M = G^T M_bodies G``.
    """
