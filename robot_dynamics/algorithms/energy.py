"""Kinetic and potential energy of the whole robot.

Handbook of Robotics, sec. 3.4: ``T = 1/2 sum_i v_i^T I_i v_i = 1/2 qd^T M qd``,
``U = -sum_i m_i g . c_i`` with c_i the centre of mass in the base frame,
so that ``g(q) = dU/dq``. The zero of U is the base origin.
"""
import numpy as np

from . import checks
from .kernels import (add_joint_motion, all_finite, inertia_times, jit, joint_coordinate, motion_to_child,
                   nbodies, parent_row, world_poses)
from ..model.model import GRAVITY, MASS, MCOM


@jit
def kinetic_kernel(D, Q, QD, E):
    n = nbodies(D)
    R, p, Rw, pw = np.empty((n + 1, 3, 3)), np.empty((n + 1, 3)), np.empty((n + 1, 3, 3)), np.empty((n + 1, 3))
    v, Iv = np.empty((n + 1, 6)), np.empty((1, 6))
    for b in range(Q.shape[0]):
        world_poses(D, Q[b], R, p, Rw, pw)
        v[n, :] = 0.0
        e = 0.0
        for i in range(n):
            motion_to_child(R, p, i, v, parent_row(D, i), v)
            add_joint_motion(D, i, joint_coordinate(D, i, QD[b]), v)
            inertia_times(D, i, MASS, v, i, Iv, 0)
            for r in range(6):
                e += 0.5 * v[i, r] * Iv[0, r]
        E[b] = e
    return all_finite(E) and all_finite(Q) and all_finite(QD)


@jit
def potential_kernel(D, Q, E):
    n = nbodies(D)
    R, p, Rw, pw = np.empty((n + 1, 3, 3)), np.empty((n + 1, 3)), np.empty((n + 1, 3, 3)), np.empty((n + 1, 3))
    for b in range(Q.shape[0]):
        world_poses(D, Q[b], R, p, Rw, pw)
        e = 0.0
        for i in range(n):
            for r in range(3):                         # m c_world = m p + R h
                mc = D[i, MASS] * pw[i, r]
                for c in range(3):
                    mc += Rw[i, r, c] * D[i, MCOM + c]
                e -= D[n, GRAVITY + r] * mc
        E[b] = e
    return all_finite(E) and all_finite(Q)


def kinetic_energy(model, q, qd):
    """Kinetic energy [J] ``1/2 qd^T M(q) qd``; (..., nq) states -> (...)."""
    shape, (Q, QD) = checks.batch(model, q=q, qd=qd)
    E = np.empty(Q.shape[0])
    if not kinetic_kernel(model._data, Q, QD, E):
        checks.raise_not_finite(q=q, qd=qd)
    return E.reshape(shape) if shape else float(E[0])


def potential_energy(model, q):
    """Gravitational potential energy [J] ``-sum m_i g . c_i`` (zero at the
    base origin); (..., nq) -> (...). Its gradient is ``gravity_torques``."""
    shape, (Q,) = checks.batch(model, q=q)
    E = np.empty(Q.shape[0])
    if not potential_kernel(model._data, Q, E):
        checks.raise_not_finite(q=q)
    return E.reshape(shape) if shape else float(E[0])
