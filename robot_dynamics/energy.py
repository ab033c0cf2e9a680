"""Kinetic and potential energy of the whole robot.

Handbook of Robotics, sec. 3.4: ``T = 1/2 sum_i v_i^T I_i v_i = 1/2 qd^T M qd``,
``U = -sum_i m_i g . c_i`` with c_i the centre of mass in the base frame,
so that ``g(q) = dU/dq``. The zero of U is the base origin.
"""
import numpy as np

from . import _checks
from ._jit import all_finite, inertia_times, jit, joint_coordinate, motion_to_child, world_poses
from .model import AXIS, JTYPE, MASS, MCOM, PARENT, PRISMATIC


@jit
def kinetic_kernel(ints, reals, Q, QD, E):
    nb = ints.shape[0]
    R, p, Rw, pw = np.empty((nb, 3, 3)), np.empty((nb, 3)), np.empty((nb, 3, 3)), np.empty((nb, 3))
    v, tmp = np.empty((nb, 6)), np.empty(6)
    for b in range(Q.shape[0]):
        world_poses(ints, reals, Q[b], R, p, Rw, pw)
        e = 0.0
        for i in range(nb):
            par = ints[i, PARENT]
            if par < 0:
                v[i, :] = 0.0
            else:
                motion_to_child(R[i], p[i], v[par], v[i])
            k = 0 if ints[i, JTYPE] != PRISMATIC else 3
            qdi = joint_coordinate(ints, reals, i, QD[b])
            for r in range(3):
                v[i, k + r] += reals[i, AXIS + r] * qdi
            inertia_times(reals[i, MASS:MASS + 13], v[i], tmp)
            for r in range(6):
                e += 0.5 * v[i, r] * tmp[r]
        E[b] = e
    return all_finite(E) and all_finite(Q) and all_finite(QD)


@jit
def potential_kernel(ints, reals, grav, Q, E):
    nb = ints.shape[0]
    R, p, Rw, pw = np.empty((nb, 3, 3)), np.empty((nb, 3)), np.empty((nb, 3, 3)), np.empty((nb, 3))
    for b in range(Q.shape[0]):
        world_poses(ints, reals, Q[b], R, p, Rw, pw)
        e = 0.0
        for i in range(nb):
            for r in range(3):                         # m c_world = m p + R h
                mc = reals[i, MASS] * pw[i, r]
                for c in range(3):
                    mc += Rw[i, r, c] * reals[i, MCOM + c]
                e -= grav[r] * mc
        E[b] = e
    return all_finite(E) and all_finite(Q)


def kinetic_energy(model, q, qd):
    """Kinetic energy [J] ``1/2 qd^T M(q) qd``; (..., nq) states -> (...)."""
    shape, (Q, QD) = _checks.batch(model, q=q, qd=qd)
    E = np.empty(Q.shape[0])
    if not kinetic_kernel(model._ints, model._reals, Q, QD, E):
        _checks.raise_not_finite(q=q, qd=qd)
    return E.reshape(shape) if shape else float(E[0])


def potential_energy(model, q):
    """Gravitational potential energy [J] ``-sum m_i g . c_i`` (zero at the
    base origin); (..., nq) -> (...). Its gradient is ``gravity_torques``."""
    shape, (Q,) = _checks.batch(model, q=q)
    E = np.empty(Q.shape[0])
    if not potential_kernel(model._ints, model._reals, model._gravity, Q, E):
        _checks.raise_not_finite(q=q)
    return E.reshape(shape) if shape else float(E[0])

